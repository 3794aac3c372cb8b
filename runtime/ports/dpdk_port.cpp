#include "runtime/ports/dpdk_port.hpp"

#include <rte_eal.h>
#include <rte_errno.h>
#include <rte_ethdev.h>
#include <rte_mbuf.h>
#include <rte_mbuf_pool_ops.h>
#include <spdlog/spdlog.h>

#include <sched.h>
#if defined(__SSE2__)
#include <emmintrin.h>
#endif

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <mutex>

#if defined(__SANITIZE_THREAD__)
extern "C" void __tsan_acquire(void* addr);
extern "C" void __tsan_release(void* addr);
#endif

namespace hpr {
namespace {

// An mbuf passes from the thread that frees or sends it to the one that next receives or allocates it through
// DPDK's mempool, whose lock-free ring and per-lcore caches TSan cannot see (DPDK is not instrumented): under TSan
// each hand-over is declared, so that a field written before the free (data_len, at tx) and read after the next rx
// is not reported as a race. Nothing in other builds.
#if defined(__SANITIZE_THREAD__)
inline void mbuf_leaves(rte_mbuf* const* m, uint16_t n) {
  for (uint16_t i = 0; i < n; ++i) __tsan_release(m[i]);
}
inline void mbuf_arrives(rte_mbuf* const* m, uint16_t n) {
  for (uint16_t i = 0; i < n; ++i) __tsan_acquire(m[i]);
}
#else
inline void mbuf_leaves(rte_mbuf* const*, uint16_t) {}
inline void mbuf_arrives(rte_mbuf* const*, uint16_t) {}
#endif
inline void chain_leaves(rte_mbuf* mb) {
  for (rte_mbuf* s = mb; s != nullptr; s = s->next) mbuf_leaves(&s, 1);
}

std::mutex g_eal_mu;
bool g_eal_ok = false;
std::vector<std::string> g_eal_args;

// One ethdev, configured and started once; its queue views (DpdkPort) share it and the last one stops it.
struct DpdkDevice {
  DpdkPortConfig cfg;
  uint16_t port_id = 0;
  rte_mempool* pool = nullptr;
  std::unique_ptr<FramePools> large;  // linearised chains (frames longer than one mbuf)
  bool started = false;
  ~DpdkDevice() {
    if (started) {
      rte_eth_dev_stop(port_id);
      rte_eth_dev_close(port_id);  // net_pcap flushes its tx capture here
    }
    if (pool != nullptr) rte_mempool_free(pool);
  }
};

// rte_pktmbuf_pool_create, except where the EAL has no hugepages and addresses the memory by virtual address (our
// vdev runs: --no-huge): there a pool whose objects must not span pages puts one 2.3 KB mbuf on each 4 KB page, so
// every frame starts at the same offset mod 4096. The 16 lanes of the AES engine then load where the others have just
// stored modulo 4 KB (4K aliasing): aes through net_pcap at 1,514 B ran at 0.26x its kernel alone, 0.76x packed
// (daemon_vs_kernel.py, docs/benchmarks.md); and 42 % of the pool's memory was padding. Such a pool may span pages, as a hugepage one is packed: mbufs 2,368 bytes apart. On
// failure nullptr, with rte_errno set (as rte_pktmbuf_pool_create).
rte_mempool* create_mbuf_pool(const char* name, uint32_t n, uint32_t cache, uint16_t data_room, int socket) {
  if (rte_eal_has_hugepages() != 0 || rte_eal_iova_mode() != RTE_IOVA_VA)
    return rte_pktmbuf_pool_create(name, n, cache, 0, data_room, socket);
  rte_mempool* mp = rte_mempool_create_empty(name, n, sizeof(rte_mbuf) + data_room, cache,
                                             sizeof(rte_pktmbuf_pool_private), socket, RTE_MEMPOOL_F_NO_IOVA_CONTIG);
  if (mp == nullptr) return nullptr;
  int rc = rte_mempool_set_ops_byname(mp, rte_mbuf_best_mempool_ops(), nullptr);
  if (rc == 0) {
    rte_pktmbuf_pool_private priv{};
    priv.mbuf_data_room_size = data_room;
    rte_pktmbuf_pool_init(mp, &priv);
    rc = rte_mempool_populate_default(mp);
  }
  if (rc < 0) {
    rte_mempool_free(mp);
    rte_errno = -rc;
    return nullptr;
  }
  rte_mempool_obj_iter(mp, rte_pktmbuf_init, nullptr);
  return mp;
}

Result<uint16_t> find_port(const std::string& name) {
  uint16_t pid = 0;
  if (rte_eth_dev_get_port_by_name(name.c_str(), &pid) == 0) return pid;
  std::string have;
  uint16_t p;
  RTE_ETH_FOREACH_DEV(p) {
    char n[RTE_ETH_NAME_MAX_LEN];
    if (rte_eth_dev_get_name_by_port(p, n) == 0) have += std::string(have.empty() ? "" : ", ") + n;
  }
  return error(Code::kNotFound, "no DPDK port named '{}' (ports: {}); add it with --vdev or -a", name,
               have.empty() ? "none" : have);
}

// Toeplitz key whose hash is the same with source and destination swapped (0x6d5a repeated: Woo and Park, "Scalable
// TCP Session Monitoring with Symmetric Receive-side Scaling"): both directions of a flow reach one queue.
constexpr uint8_t kSymmetricRssByte[2] = {0x6d, 0x5a};

class DpdkPort final : public Port {
 public:
  std::string_view kind() const override { return "dpdk"; }
  std::string describe() const override {
    return "dpdk " + cfg_.name + (cfg_.rx_queues > 1 ? fmt::format(" rx queue {} of {}{}", queue_, cfg_.rx_queues, rss_ ? " (RSS)" : "") : "");
  }
  std::optional<std::array<uint8_t, 6>> mac() const override {
    rte_ether_addr a{};
    if (rte_eth_macaddr_get(port_id_, &a) != 0) return std::nullopt;
    std::array<uint8_t, 6> m{};
    std::memcpy(m.data(), a.addr_bytes, 6);
    return m;
  }

  static Result<std::vector<std::unique_ptr<Port>>> create(const DpdkPortConfig& cfg) {
    if (!dpdk_initialised()) return error(Code::kUnavailable, "DPDK port '{}' needs the EAL: call dpdk_init first", cfg.name);
    auto pid = find_port(cfg.name);
    if (!pid) return pid.status();
    auto dev = std::make_shared<DpdkDevice>();
    dev->cfg = cfg;
    dev->port_id = *pid;
    std::string pool_name = "hpr_" + std::to_string(*pid);
    uint32_t n = cfg.mbufs;
    while ((dev->pool = create_mbuf_pool(pool_name.c_str(), n, 256,
                                         static_cast<uint16_t>(cfg.mbuf_data_bytes + RTE_PKTMBUF_HEADROOM),
                                         static_cast<int>(rte_socket_id()))) == nullptr &&
           (rte_errno == ENOMEM || rte_errno == ENOBUFS) && cfg.min_mbufs != 0 && n > cfg.min_mbufs)
      n = std::max(cfg.min_mbufs, n / 2);
    if (dev->pool == nullptr) {
      return error(Code::kUnavailable, "cannot create the mbuf pool of {} mbufs for '{}': {} (raise the EAL's -m, or lower ports.buffers)",
                   n, cfg.name, rte_strerror(rte_errno));
    }
    if (n < cfg.mbufs)
      spdlog::warn("DPDK port '{}': {} mbufs did not fit in the EAL's memory, so it has {}: a device lane's batches "
                   "may not fill (raise the EAL's -m, or give ports.buffers)", cfg.name, cfg.mbufs, n);
    if (cfg.max_frame > cfg.mbuf_data_bytes) {
      auto large = FramePools::create(0, cfg.large_slots, cfg.max_frame);
      if (!large) return large.status();
      dev->large = std::move(*large);
    }
    rte_eth_conf conf = port_conf(*pid, cfg);
    int rc = rte_eth_dev_configure(*pid, cfg.rx_queues, cfg.tx_queues, &conf);
    for (uint16_t q = 0; rc == 0 && q < cfg.rx_queues; ++q)
      rc = rte_eth_rx_queue_setup(*pid, q, cfg.rx_desc, rte_eth_dev_socket_id(*pid), nullptr, dev->pool);
    for (uint16_t q = 0; rc == 0 && q < cfg.tx_queues; ++q)
      rc = rte_eth_tx_queue_setup(*pid, q, cfg.tx_desc, rte_eth_dev_socket_id(*pid), nullptr);
    if (rc == 0) rc = rte_eth_dev_start(*pid);
    if (rc != 0) return error(Code::kUnavailable, "cannot start DPDK port '{}': {}", cfg.name, rte_strerror(-rc));
    dev->started = true;
    if (cfg.promiscuous) rte_eth_promiscuous_enable(*pid);
    std::vector<std::unique_ptr<Port>> views;
    for (uint16_t q = 0; q < std::max(cfg.rx_queues, cfg.tx_queues); ++q) {
      std::unique_ptr<DpdkPort> v(new DpdkPort());
      v->dev_ = dev;
      v->cfg_ = cfg;
      v->port_id_ = *pid;
      v->queue_ = q;
      v->rxq_ = q < cfg.rx_queues ? q : 0;
      v->txq_ = q < cfg.tx_queues ? q : 0;
      v->pool_ = dev->pool;
      v->large_ = dev->large.get();
      v->rss_ = conf.rxmode.mq_mode == RTE_ETH_MQ_RX_RSS;
      views.push_back(std::move(v));
    }
    return views;
  }

  bool fresh_rx() const override { return true; }  // every packet starts from `fresh` below
  uint16_t rx_burst(Packet* pkts, uint16_t n, uint64_t now_ns) override {
    rte_mbuf* m[kBurst];
    uint16_t want = n < kBurst ? n : kBurst;
    uint16_t got = rte_eth_rx_burst(port_id_, rxq_, m, want);
    mbuf_arrives(m, got);
    // What every packet of the burst starts as, held in four 16-byte registers and stored whole (a Packet{} per
    // packet was a store per field; a local Packet copied by assignment took 17 instructions): then three fields each.
    Packet fresh;
    fresh.rx_ns = now_ns;
    fresh.port = port_id_;
    fresh.buf_kind = kBufMbuf;
#if defined(__SSE2__)
    __m128i f[4];
    for (int j = 0; j < 4; ++j) f[j] = _mm_loadu_si128(reinterpret_cast<const __m128i*>(&fresh) + j);
    auto start = [&f](Packet* q) {
      for (int j = 0; j < 4; ++j) _mm_storeu_si128(reinterpret_cast<__m128i*>(q) + j, f[j]);
    };
#else
    auto start = [&fresh](Packet* q) { *q = fresh; };
#endif
    const uint32_t max_frame = cfg_.max_frame;
    Packet* p = pkts;
    uint64_t bytes = 0;
    for (uint16_t i = 0; i < got; ++i) {
      rte_mbuf* mb = m[i];
      start(p);
      if (mb->nb_segs == 1 && mb->data_len <= max_frame) {
        p->data = rte_pktmbuf_mtod(mb, uint8_t*);
        p->len = mb->data_len;
        p->buf = mb;
      } else if (!linearise(mb, *p)) {
        continue;  // counted there
      }
      bytes += p->len;
      ++p;
    }
    const auto out = static_cast<uint16_t>(p - pkts);
    stats_.rx_packets.add(out);
    stats_.rx_bytes.add(bytes);
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
          rte_mbuf* mb = copy_out(p);
          if (mb == nullptr) break;
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

  // rte_pktmbuf_free for each, inline and in one pass for what rx gives (one segment from this port's pool): the
  // refcount step here, then one put per kBurst into the pool's per-lcore cache. The library's bulk free costs 41
  // instructions an mbuf (callgrind, worker path, mostly no-route drops) and reaches the lcore id through
  // __tls_get_addr from its shared object; gathering the mbufs first and freeing them in a second pass cost 7 more.
  // Anything else (a chain, another pool) goes through rte_pktmbuf_free, a linearised large frame back to its pool.
  void release(Packet* pkts, uint16_t n) override {
    void* mine[kBurst];
    unsigned k = 0;
    for (uint16_t i = 0; i < n; ++i) {
      if (pkts[i].buf_kind != kBufMbuf) {
        large_->free_one(pkts[i].buf);
        continue;
      }
      rte_mbuf* s = static_cast<rte_mbuf*>(pkts[i].buf);
      mbuf_leaves(&s, 1);
      if (s->nb_segs != 1 || s->pool != pool_) {
        rte_pktmbuf_free(s);
        continue;
      }
      if ((s = rte_pktmbuf_prefree_seg(s)) == nullptr) continue;  // another reference holds it
      mine[k++] = s;
      if (k == kBurst) {
        rte_mempool_put_bulk(pool_, mine, k);
        k = 0;
      }
    }
    if (k != 0) rte_mempool_put_bulk(pool_, mine, k);
  }

  PortStats stats() const override {
    PortStats s = stats_.load();
    if (queue_ != 0) return s;  // the device's own counters once, on view 0
    rte_eth_stats es{};
    if (rte_eth_stats_get(port_id_, &es) == 0) s.rx_no_buffer = es.imissed + es.rx_nombuf;
    // mbufs out of the pool (the PMD keeps its rx ring filled, so this is not 0 at rest: compare start and end).
    if (pool_ != nullptr) s.buffers_in_use = rte_mempool_in_use_count(pool_);
    if (large_ != nullptr) s.buffers_in_use += large_->in_use();
    return s;
  }

 private:
  static constexpr uint16_t kBurst = 64;
  static constexpr int kTxRetries = 64;

  // MTU for the largest frame (as far as the driver goes); when that is longer than one mbuf, scatter on receive
  // and chains on transmit where the driver offers them (a NIC may pick a slower rx function with scatter on:
  // --max-frame 2048 or less keeps it off).
  static rte_eth_conf port_conf(uint16_t pid, const DpdkPortConfig& cfg) {
    rte_eth_conf conf{};
    rte_eth_dev_info info{};
    if (rte_eth_dev_info_get(pid, &info) != 0) return conf;
    constexpr uint32_t kOverhead = RTE_ETHER_HDR_LEN + RTE_ETHER_CRC_LEN;
    uint32_t mtu = std::max<uint32_t>(cfg.max_frame, kOverhead + RTE_ETHER_MIN_MTU) - kOverhead;
    mtu = std::min<uint32_t>({mtu, info.max_mtu, info.max_rx_pktlen - kOverhead});
    conf.rxmode.mtu = std::max<uint32_t>(mtu, info.min_mtu);
    if (conf.rxmode.mtu + kOverhead < cfg.max_frame)
      spdlog::warn("DPDK port '{}' receives frames up to {} bytes (its largest MTU), below ports.max_frame = {}",
                   cfg.name, conf.rxmode.mtu + kOverhead, cfg.max_frame);
    if (cfg.rx_queues > 1 && info.flow_type_rss_offloads != 0) {
      static uint8_t key[64];
      const auto len = static_cast<uint8_t>(std::min<uint32_t>(info.hash_key_size != 0 ? info.hash_key_size : 40, sizeof key));
      for (uint8_t i = 0; i < len; ++i) key[i] = kSymmetricRssByte[i % 2];
      conf.rxmode.mq_mode = RTE_ETH_MQ_RX_RSS;
      conf.rx_adv_conf.rss_conf.rss_key = key;
      conf.rx_adv_conf.rss_conf.rss_key_len = len;
      conf.rx_adv_conf.rss_conf.rss_hf = (RTE_ETH_RSS_IP | RTE_ETH_RSS_TCP | RTE_ETH_RSS_UDP) & info.flow_type_rss_offloads;
    }
    if (cfg.max_frame <= cfg.mbuf_data_bytes) return conf;
    if ((info.rx_offload_capa & RTE_ETH_RX_OFFLOAD_SCATTER) != 0) conf.rxmode.offloads |= RTE_ETH_RX_OFFLOAD_SCATTER;
    if ((info.tx_offload_capa & RTE_ETH_TX_OFFLOAD_MULTI_SEGS) != 0)
      conf.txmode.offloads |= RTE_ETH_TX_OFFLOAD_MULTI_SEGS;
    return conf;
  }

  // A frame longer than one mbuf (a chain) copied whole into a large slot; the chain goes back to the mempool.
  // False when it was counted instead: longer than max_frame, or the large pool empty.
  bool linearise(rte_mbuf* mb, Packet& p) {
    for (rte_mbuf* s = mb->next; s != nullptr; s = s->next) mbuf_arrives(&s, 1);  // the head arrived in rx_burst
    const FrameAlloc a = large_ ? large_->alloc(p, mb->pkt_len)
                                : (mb->pkt_len > cfg_.max_frame ? FrameAlloc::kTooLong : FrameAlloc::kNoLarge);
    if (a != FrameAlloc::kOk) {
      (a == FrameAlloc::kTooLong ? stats_.rx_too_long : stats_.rx_pool_empty).add(1);
      chain_leaves(mb);
      rte_pktmbuf_free(mb);
      return false;
    }
    uint32_t off = 0;
    for (const rte_mbuf* s = mb; s != nullptr && off + s->data_len <= mb->pkt_len; s = s->next) {
      std::memcpy(p.data + off, rte_pktmbuf_mtod(s, const uint8_t*), s->data_len);
      off += s->data_len;
    }
    p.len = static_cast<uint16_t>(off);
    p.buf_kind = kBufPool;
    chain_leaves(mb);
    rte_pktmbuf_free(mb);
    return true;
  }

  // A copy of p's frame in mbufs of this port's pool: one, or a chain when it is longer than one mbuf.
  // Null when the pool ran dry (the packet is then not sent: tx_failed).
  rte_mbuf* copy_out(const Packet& p) {
    rte_mbuf* head = nullptr;
    rte_mbuf* last = nullptr;
    uint32_t off = 0;
    do {
      rte_mbuf* s = rte_pktmbuf_alloc(pool_);
      if (s != nullptr) mbuf_arrives(&s, 1);
      const uint32_t k = s == nullptr ? 0 : std::min<uint32_t>(p.len - off, rte_pktmbuf_tailroom(s));
      if (k == 0 && p.len != 0) {  // no mbuf (or one without room): give up on this frame
        if (s != nullptr) rte_pktmbuf_free(s);
        if (head != nullptr) rte_pktmbuf_free(head);
        return nullptr;
      }
      std::memcpy(rte_pktmbuf_mtod(s, uint8_t*), p.data + off, k);
      s->data_len = static_cast<uint16_t>(k);
      off += k;
      if (head == nullptr) {
        head = s;
      } else {
        last->next = s;
        ++head->nb_segs;
      }
      last = s;
    } while (off < p.len);
    head->pkt_len = p.len;
    return head;
  }

  // Sends m[0, k), the mbufs of pkts[0, k), retrying a full ring up to kTxRetries times; counts what left
  // and frees what the driver refused. Returns how many were sent.
  uint16_t send(rte_mbuf** m, uint16_t k, const Packet* pkts) {
    uint16_t sent = 0;
    mbuf_leaves(m, k);
    for (int tries = 0; sent < k && tries < kTxRetries; ++tries)
      sent += rte_eth_tx_burst(port_id_, txq_, m + sent, static_cast<uint16_t>(k - sent));
    if (sent < k) rte_pktmbuf_free_bulk(m + sent, k - sent);
    stats_.tx_bytes.add(frame_bytes(pkts, sent));
    stats_.tx_packets.add(sent);
    return sent;
  }
  std::shared_ptr<DpdkDevice> dev_;
  DpdkPortConfig cfg_;
  uint16_t port_id_ = 0, queue_ = 0, rxq_ = 0, txq_ = 0;
  bool rss_ = false;
  rte_mempool* pool_ = nullptr;
  FramePools* large_ = nullptr;  // the device's
  PortCounters stats_;
};

}  // namespace

Result<std::unique_ptr<Port>> make_dpdk_port(const DpdkPortConfig& cfg) {
  DpdkPortConfig one = cfg;
  one.rx_queues = one.tx_queues = 1;
  auto v = DpdkPort::create(one);
  if (!v) return v.status();
  return std::move(v->front());
}

Result<std::vector<std::unique_ptr<Port>>> make_dpdk_ports(const DpdkPortConfig& cfg) {
  if (cfg.rx_queues == 0 || cfg.tx_queues == 0)
    return error(Code::kInvalidArgument, "DPDK port '{}': at least one rx and one tx queue", cfg.name);
  return DpdkPort::create(cfg);
}

Result<DpdkQueues> dpdk_queues(const std::string& name) {
  if (!dpdk_initialised()) return error(Code::kUnavailable, "DPDK port '{}' needs the EAL: call dpdk_init first", name);
  auto pid = find_port(name);
  if (!pid) return pid.status();
  rte_eth_dev_info info{};
  if (int rc = rte_eth_dev_info_get(*pid, &info); rc != 0)
    return error(Code::kUnavailable, "DPDK port '{}': no device info: {}", name, rte_strerror(-rc));
  return DpdkQueues{.max_rx = info.max_rx_queues, .max_tx = info.max_tx_queues, .rss = info.flow_type_rss_offloads != 0};
}

std::vector<std::string> dpdk_default_args(const std::vector<std::string>& vdevs) {
  std::vector<std::string> a = {"--no-huge", "--no-shconf", "--no-pci", "-m", "512", "--log-level=error",
                                "--no-telemetry", "-l", "0"};
  for (const auto& v : vdevs) a.push_back("--vdev=" + v);
  return a;
}

DpdkThread::DpdkThread() {
  if (dpdk_initialised() && rte_lcore_id() == LCORE_ID_ANY) registered_ = rte_thread_register() == 0;
}

DpdkThread::~DpdkThread() {
  if (registered_) rte_thread_unregister();
}

bool dpdk_initialised() {
  std::lock_guard<std::mutex> g(g_eal_mu);
  return g_eal_ok;
}

namespace {
// A relocatable bundle (scripts/bundle.sh) carries the drivers it needs; its launcher names their folder in
// HPR_DPDK_DRIVER_DIR, given to the EAL as -d DIR only where this DPDK's own driver folder (RTE_EAL_PMD_PATH, loaded
// by the EAL itself) is absent: a driver loaded from both would register twice. Arguments with a -d of their own
// are left as they are.
Result<std::vector<std::string>> with_driver_dir(std::vector<std::string> args) {
  const char* dir = std::getenv("HPR_DPDK_DRIVER_DIR");
  if (dir == nullptr || *dir == '\0' || std::find(args.begin(), args.end(), "-d") != args.end()) return args;
  std::error_code ec;
  if (!std::filesystem::is_directory(dir, ec))
    return error(Code::kNotFound, "HPR_DPDK_DRIVER_DIR={}: not a directory (the DPDK drivers of an hpr bundle)", dir);
  if (std::filesystem::is_directory(RTE_EAL_PMD_PATH, ec)) return args;
  args.insert(args.begin(), {"-d", dir});
  return args;
}
}  // namespace

Status dpdk_init(const std::vector<std::string>& args) {
  std::lock_guard<std::mutex> g(g_eal_mu);
  if (g_eal_ok) {
    if (args == g_eal_args) return Status::ok();
    return error(Code::kInvalidArgument, "the DPDK EAL is already initialised with other arguments; it can be "
                                         "initialised once per process");
  }
  auto eal_args = with_driver_dir(args);
  if (!eal_args) return eal_args.status();
  std::vector<std::string> storage = {"hpr"};
  storage.insert(storage.end(), eal_args->begin(), eal_args->end());
  std::vector<char*> argv;
  for (auto& s : storage) argv.push_back(s.data());
  // The EAL pins the calling thread to its main lcore (-l 0: core 0), and every thread started later would inherit
  // that: hpr places its threads itself (the workers' cores), so the thread's own set comes back afterwards.
  cpu_set_t before;
  const bool have_before = sched_getaffinity(0, sizeof before, &before) == 0;
  int rc = rte_eal_init(static_cast<int>(argv.size()), argv.data());
  if (have_before && sched_setaffinity(0, sizeof before, &before) != 0)
    spdlog::warn("DPDK EAL: could not give the main thread back its cores: {}", std::strerror(errno));
  if (rc < 0) {
    std::string joined;
    for (const auto& a : *eal_args) joined += " " + a;
    return error(Code::kUnavailable, "DPDK EAL initialisation failed: {} (arguments:{})", rte_strerror(rte_errno),
                 joined);
  }
  g_eal_ok = true;
  g_eal_args = args;
  return Status::ok();
}

}  // namespace hpr
