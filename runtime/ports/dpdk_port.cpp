#include "runtime/ports/dpdk_port.hpp"

#include <rte_eal.h>
#include <rte_errno.h>
#include <rte_ethdev.h>
#include <rte_mbuf.h>

#include <cstring>
#include <mutex>

namespace hpr {
namespace {

std::mutex g_eal_mu;
bool g_eal_ok = false;
std::vector<std::string> g_eal_args;

class DpdkPort final : public Port {
 public:
  ~DpdkPort() override {
    rte_eth_dev_stop(port_id_);
    rte_eth_dev_close(port_id_);  // net_pcap flushes its tx capture here
    rte_mempool_free(pool_);
  }
  std::string_view kind() const override { return "dpdk"; }
  std::string describe() const override { return "dpdk " + cfg_.name; }

  static Result<std::unique_ptr<Port>> create(const DpdkPortConfig& cfg) {
    if (!dpdk_initialised()) return error(Code::kUnavailable, "DPDK port '{}' needs the EAL: call dpdk_init first", cfg.name);
    uint16_t pid = 0;
    if (rte_eth_dev_get_port_by_name(cfg.name.c_str(), &pid) != 0) {
      std::string have;
      uint16_t p;
      RTE_ETH_FOREACH_DEV(p) {
        char n[RTE_ETH_NAME_MAX_LEN];
        if (rte_eth_dev_get_name_by_port(p, n) == 0) have += std::string(have.empty() ? "" : ", ") + n;
      }
      return error(Code::kNotFound, "no DPDK port named '{}' (ports: {}); add it with --vdev or -a", cfg.name,
                   have.empty() ? "none" : have);
    }
    std::unique_ptr<DpdkPort> port(new DpdkPort());
    port->cfg_ = cfg;
    port->port_id_ = pid;
    std::string pool_name = "hpr_" + std::to_string(pid);
    port->pool_ = rte_pktmbuf_pool_create(pool_name.c_str(), cfg.mbufs, 256, 0,
                                          static_cast<uint16_t>(cfg.mbuf_data_bytes + RTE_PKTMBUF_HEADROOM),
                                          static_cast<int>(rte_socket_id()));
    if (port->pool_ == nullptr) {
      return error(Code::kUnavailable, "cannot create the mbuf pool for '{}': {} (raise -m or lower mbufs)", cfg.name,
                   rte_strerror(rte_errno));
    }
    rte_eth_conf conf{};
    int rc = rte_eth_dev_configure(pid, 1, 1, &conf);
    if (rc == 0) rc = rte_eth_rx_queue_setup(pid, 0, cfg.rx_desc, rte_eth_dev_socket_id(pid), nullptr, port->pool_);
    if (rc == 0) rc = rte_eth_tx_queue_setup(pid, 0, cfg.tx_desc, rte_eth_dev_socket_id(pid), nullptr);
    if (rc == 0) rc = rte_eth_dev_start(pid);
    if (rc != 0) {
      rte_mempool_free(port->pool_);
      port->pool_ = nullptr;
      return error(Code::kUnavailable, "cannot start DPDK port '{}': {}", cfg.name, rte_strerror(-rc));
    }
    if (cfg.promiscuous) rte_eth_promiscuous_enable(pid);
    return std::unique_ptr<Port>(std::move(port));
  }

  uint16_t rx_burst(Packet* pkts, uint16_t n, uint64_t now_ns) override {
    rte_mbuf* m[kBurst];
    uint16_t want = n < kBurst ? n : kBurst;
    uint16_t got = rte_eth_rx_burst(port_id_, 0, m, want);
    uint16_t out = 0;
    for (uint16_t i = 0; i < got; ++i) {
      if (m[i]->nb_segs != 1) {  // a frame longer than one mbuf: counted, not processed
        stats_.rx_too_long.add(1);
        rte_pktmbuf_free(m[i]);
        continue;
      }
      Packet& p = pkts[out++];
      p = Packet{};
      p.data = rte_pktmbuf_mtod(m[i], uint8_t*);
      p.len = m[i]->data_len;
      p.buf = m[i];
      p.buf_kind = kBufMbuf;
      p.rx_ns = now_ns;
      p.port = port_id_;
    }
    stats_.rx_packets.add(out);
    stats_.rx_bytes.add(frame_bytes(pkts, out));
    return out;
  }

  uint16_t tx_burst_release(Packet* pkts, uint16_t n, Port& owner) override {
    for (uint16_t i = 0; i < n; ++i)
      if (pkts[i].buf_kind != kBufMbuf) return Port::tx_burst_release(pkts, n, owner);
    uint16_t done = 0;
    while (done < n) {
      rte_mbuf* m[kBurst];
      const uint16_t k = static_cast<uint16_t>(std::min<int>(n - done, kBurst));
      for (uint16_t i = 0; i < k; ++i) {
        auto* mb = static_cast<rte_mbuf*>(pkts[done + i].buf);
        mb->data_len = mb->pkt_len = pkts[done + i].len;
        m[i] = mb;
      }
      const uint16_t chunk_end = static_cast<uint16_t>(done + k);
      const uint16_t sent = send(m, k, pkts + done);  // the driver owns what it took; send() freed the rest
      done = static_cast<uint16_t>(done + sent);
      if (sent < k) {
        release(pkts + chunk_end, static_cast<uint16_t>(n - chunk_end));  // never tried: back now
        break;
      }
    }
    stats_.tx_failed.add(n - done);
    return done;
  }

  uint16_t tx_burst(Packet* pkts, uint16_t n) override {
    uint16_t done = 0;
    while (done < n) {
      rte_mbuf* m[kBurst];
      uint16_t k = static_cast<uint16_t>(std::min<int>(n - done, kBurst));
      uint16_t ready = 0;
      for (uint16_t i = 0; i < k; ++i) {
        Packet& p = pkts[done + i];
        if (p.buf_kind == kBufMbuf) {
          auto* mb = static_cast<rte_mbuf*>(p.buf);
          mb->data_len = mb->pkt_len = p.len;
          rte_mbuf_refcnt_update(mb, 1);  // the caller still releases it (Port ownership rule)
          m[ready++] = mb;
        } else {
          rte_mbuf* mb = rte_pktmbuf_alloc(pool_);
          if (mb == nullptr || rte_pktmbuf_tailroom(mb) < p.len) {
            if (mb != nullptr) rte_pktmbuf_free(mb);
            break;
          }
          std::memcpy(rte_pktmbuf_mtod(mb, void*), p.data, p.len);
          mb->data_len = mb->pkt_len = p.len;
          m[ready++] = mb;
        }
      }
      const uint16_t sent = send(m, ready, pkts + done);  // freeing the unsent undoes the extra ref / the copy
      done = static_cast<uint16_t>(done + sent);
      if (sent < k) break;
    }
    stats_.tx_failed.add(n - done);
    return done;
  }

  void release(Packet* pkts, uint16_t n) override {
    rte_mbuf* m[kBurst];
    for (uint16_t i = 0; i < n;) {
      uint16_t k = 0;
      for (; k < kBurst && i < n; ++k, ++i) m[k] = static_cast<rte_mbuf*>(pkts[i].buf);
      rte_pktmbuf_free_bulk(m, k);
    }
  }

  PortStats stats() const override {
    PortStats s = stats_.load();
    rte_eth_stats es{};
    if (rte_eth_stats_get(port_id_, &es) == 0) s.rx_no_buffer = es.imissed + es.rx_nombuf;
    // mbufs out of the pool (the PMD keeps its rx ring filled, so this is not 0 at rest: compare start and end).
    if (pool_ != nullptr) s.buffers_in_use = rte_mempool_in_use_count(pool_);
    return s;
  }

 private:
  static constexpr uint16_t kBurst = 64;
  static constexpr int kTxRetries = 64;

  // Sends m[0, k), the mbufs of pkts[0, k), retrying a full ring up to kTxRetries times; counts what left
  // and frees what the driver refused. Returns how many were sent.
  uint16_t send(rte_mbuf** m, uint16_t k, const Packet* pkts) {
    uint16_t sent = 0;
    for (int tries = 0; sent < k && tries < kTxRetries; ++tries)
      sent += rte_eth_tx_burst(port_id_, 0, m + sent, static_cast<uint16_t>(k - sent));
    if (sent < k) rte_pktmbuf_free_bulk(m + sent, k - sent);
    stats_.tx_bytes.add(frame_bytes(pkts, sent));
    stats_.tx_packets.add(sent);
    return sent;
  }
  DpdkPortConfig cfg_;
  uint16_t port_id_ = 0;
  rte_mempool* pool_ = nullptr;
  PortCounters stats_;
};

}  // namespace

Result<std::unique_ptr<Port>> make_dpdk_port(const DpdkPortConfig& cfg) { return DpdkPort::create(cfg); }

std::vector<std::string> dpdk_default_args(const std::vector<std::string>& vdevs) {
  std::vector<std::string> a = {"--no-huge", "--no-shconf", "--no-pci", "-m", "512", "--log-level=error",
                                "--no-telemetry", "-l", "0"};
  for (const auto& v : vdevs) a.push_back("--vdev=" + v);
  return a;
}

bool dpdk_initialised() {
  std::lock_guard<std::mutex> g(g_eal_mu);
  return g_eal_ok;
}

Status dpdk_init(const std::vector<std::string>& args) {
  std::lock_guard<std::mutex> g(g_eal_mu);
  if (g_eal_ok) {
    if (args == g_eal_args) return Status::ok();
    return error(Code::kInvalidArgument, "the DPDK EAL is already initialised with other arguments; it can be "
                                         "initialised once per process");
  }
  std::vector<std::string> storage = {"hpr"};
  storage.insert(storage.end(), args.begin(), args.end());
  std::vector<char*> argv;
  for (auto& s : storage) argv.push_back(s.data());
  int rc = rte_eal_init(static_cast<int>(argv.size()), argv.data());
  if (rc < 0) {
    std::string joined;
    for (const auto& a : args) joined += " " + a;
    return error(Code::kUnavailable, "DPDK EAL initialisation failed: {} (arguments:{})", rte_strerror(rte_errno),
                 joined);
  }
  g_eal_ok = true;
  g_eal_args = args;
  return Status::ok();
}

}  // namespace hpr
