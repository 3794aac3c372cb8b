#include "runtime/ports/spread_port.hpp"

#include <algorithm>
#include <array>
#include <atomic>
#include <mutex>

#include "runtime/flow.hpp"
#include "runtime/parser.hpp"
#include "runtime/pcap_file.hpp"
#include "runtime/ring.hpp"

namespace hpr {
namespace {

constexpr uint16_t kReadBurst = 256;

// What the views of one source share. The reader role (whoever holds `reader`) is the only producer of every
// queue; each view is the only consumer of its own.
struct Spread {
  std::unique_ptr<Port> source;
  bool backpressure = false;
  std::mutex reader;
  std::vector<std::unique_ptr<SpscRing<Packet>>> queues;
  std::vector<std::unique_ptr<PortCounters::Counter>> overflow;  // per view, written under `reader`
  // One burst from the source, under `reader` (a member: 256 descriptors constructed on the stack every fill cost
  // more than spreading them).
  std::array<Packet, kReadBurst> got;
  std::atomic<bool> source_done{false}, stopped{false};

  // Under `reader`: one burst from the source onto the views' queues.
  void fill(uint64_t now) {
    if (stopped.load(std::memory_order_relaxed)) return;
    const auto n = static_cast<uint16_t>(queues.size());
    if (backpressure)
      for (const auto& q : queues)
        if (q->capacity() - q->size() < kReadBurst) return;  // a worker is behind: wait for it
    const uint16_t k = source->rx_burst(got.data(), kReadBurst, now);
    if (k == 0) {
      if (source->rx_done()) source_done.store(true, std::memory_order_release);
      return;
    }
    for (uint16_t i = 0; i < k; ++i) {
      const uint16_t w = spread_worker(got[i], n);
      if (!queues[w]->push(got[i])) {
        overflow[w]->add(1);
        source->release(&got[i], 1);
      }
    }
  }
};

class SpreadView final : public Port {
 public:
  SpreadView(std::shared_ptr<Spread> s, uint16_t index) : s_(std::move(s)), i_(index), q_(*s_->queues[index]) {}
  std::string_view kind() const override { return s_->source->kind(); }
  std::string describe() const override {
    return s_->source->describe() + " (spread over " + std::to_string(s_->queues.size()) + " workers by flow hash)";
  }

  uint16_t rx_burst(Packet* pkts, uint16_t n, uint64_t now_ns) override {
    auto got = static_cast<uint16_t>(q_.pop_burst(pkts, n));
    if (got < n && s_->reader.try_lock()) {
      s_->fill(now_ns);
      s_->reader.unlock();
      got = static_cast<uint16_t>(got + q_.pop_burst(pkts + got, n - got));
    }
    stats_.rx_packets.add(got);
    stats_.rx_bytes.add(frame_bytes(pkts, got));
    return got;
  }
  std::optional<std::array<uint8_t, 6>> mac() const override { return s_->source->mac(); }
  uint16_t tx_burst(Packet*, uint16_t) override { return 0; }
  void release(Packet* pkts, uint16_t n) override { s_->source->release(pkts, n); }
  bool rx_done() const override {
    return (s_->stopped.load(std::memory_order_acquire) || s_->source_done.load(std::memory_order_acquire)) &&
           q_.empty();
  }
  bool stop_rx() override {
    s_->stopped.store(true, std::memory_order_release);
    std::lock_guard<std::mutex> g(s_->reader);  // a fill under way ends before this returns: nothing is added later
    return true;
  }
  PortStats stats() const override {
    PortStats s = stats_.load();
    const uint64_t over = s_->overflow[i_]->get();
    if (i_ == 0) {
      const PortStats src = s_->source->stats();
      s.rx_no_buffer = src.rx_no_buffer;
      s.rx_missed = src.rx_missed;
      s.rx_too_long = src.rx_too_long;
      s.rx_pool_empty = src.rx_pool_empty;
      s.buffers_in_use = src.buffers_in_use;
    }
    (kind() == "dpdk" ? s.rx_no_buffer : s.rx_missed) += over;
    return s;
  }
  Status close() override { return i_ == 0 ? s_->source->close() : Status::ok(); }

 private:
  std::shared_ptr<Spread> s_;
  const uint16_t i_;
  SpscRing<Packet>& q_;
  PortCounters stats_;
};

class SharedTx final : public Port {
 public:
  struct Shared {
    std::unique_ptr<Port> port;
    std::mutex mu;
  };
  SharedTx(std::shared_ptr<Shared> s, uint16_t index) : s_(std::move(s)), i_(index) {}
  std::string_view kind() const override { return s_->port->kind(); }
  std::string describe() const override { return s_->port->describe(); }
  std::optional<std::array<uint8_t, 6>> mac() const override { return s_->port->mac(); }
  uint16_t rx_burst(Packet*, uint16_t, uint64_t) override { return 0; }
  uint16_t tx_burst(Packet* pkts, uint16_t n) override {
    std::lock_guard<std::mutex> g(s_->mu);
    return s_->port->tx_burst(pkts, n);
  }
  void release(Packet*, uint16_t) override {}
  bool rx_done() const override { return true; }
  void flush() override {
    std::lock_guard<std::mutex> g(s_->mu);
    s_->port->flush();
  }
  Status close() override {
    if (i_ != 0) return Status::ok();
    std::lock_guard<std::mutex> g(s_->mu);
    return s_->port->close();
  }
  DropReason unsent_reason() const override {
    std::lock_guard<std::mutex> g(s_->mu);
    return s_->port->unsent_reason();
  }
  PortStats stats() const override {
    if (i_ != 0) return {};
    std::lock_guard<std::mutex> g(s_->mu);
    return s_->port->stats();
  }

 private:
  std::shared_ptr<Shared> s_;
  const uint16_t i_;
};

}  // namespace

uint16_t spread_worker(const Packet& p, uint16_t n) {
  Packet probe = p;  // the worker parses again: this copy only finds the flow
  if (parse(probe) != DropReason::kNone || (probe.l3 != L3::kIPv4 && probe.l3 != L3::kIPv6)) return 0;
  FlowKey key;
  return worker_of(canonical_flow_key(probe, key), n);
}

Status split_capture_by_flow(const std::string& in, const std::vector<std::string>& out) {
  if (out.empty() || out.size() > 0xffff) return error(Code::kInvalidArgument, "splitting {} into {} captures", in, out.size());
  auto r = PcapReader::open(in);
  if (!r) return r.status();
  std::vector<PcapWriter> w;
  for (const auto& path : out) {
    auto f = PcapWriter::open(path, "split capture");
    if (!f) return f.status();
    w.push_back(std::move(*f));
  }
  PcapRecord rec;
  std::vector<uint8_t> frame;
  while (r->next(rec)) {
    frame.assign(rec.frame.begin(), rec.frame.end());
    Packet p;
    p.data = frame.data();
    p.len = static_cast<uint16_t>(std::min<size_t>(frame.size(), 0xffff));
    w[spread_worker(p, static_cast<uint16_t>(out.size()))].write(rec.ts_ns, rec.frame);
  }
  if (!r->read_error().empty()) return error(Code::kIoError, "{}: {}", in, r->read_error());
  for (auto& f : w) HPR_RETURN_IF_ERROR(f.finish());
  return Status::ok();
}

Result<std::vector<std::unique_ptr<Port>>> make_spread_ports(std::unique_ptr<Port> source, uint16_t n,
                                                             bool backpressure, uint32_t queue) {
  if (n == 0) return error(Code::kInvalidArgument, "spreading a port over 0 workers");
  if (queue < 2u * kReadBurst) return error(Code::kInvalidArgument, "spread queue of {} frames: at least {}", queue, 2 * kReadBurst);
  auto s = std::make_shared<Spread>();
  s->source = std::move(source);
  s->backpressure = backpressure;
  for (uint16_t i = 0; i < n; ++i) {
    s->queues.push_back(std::make_unique<SpscRing<Packet>>(queue));
    s->overflow.push_back(std::make_unique<PortCounters::Counter>());
  }
  std::vector<std::unique_ptr<Port>> views;
  for (uint16_t i = 0; i < n; ++i) views.push_back(std::make_unique<SpreadView>(s, i));
  return views;
}

std::vector<std::unique_ptr<Port>> make_shared_tx_ports(std::unique_ptr<Port> port, uint16_t n) {
  auto s = std::make_shared<SharedTx::Shared>();
  s->port = std::move(port);
  std::vector<std::unique_ptr<Port>> views;
  for (uint16_t i = 0; i < std::max<uint16_t>(n, 1); ++i) views.push_back(std::make_unique<SharedTx>(s, i));
  return views;
}

}  // namespace hpr
