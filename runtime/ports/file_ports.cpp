#include "runtime/ports/file_ports.hpp"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <cstring>

#include "hpr/clock.hpp"

namespace hpr {
namespace {

class PcapPort final : public Port {
 public:
  std::string_view kind() const override { return "pcap"; }
  std::string describe() const override {
    std::string s = "pcap";
    if (!cfg_.rx_path.empty()) s += " in:" + cfg_.rx_path;
    if (!cfg_.tx_path.empty()) s += " out:" + cfg_.tx_path;
    return s;
  }

  static Result<std::unique_ptr<Port>> create(const PcapPortConfig& cfg) {
    std::unique_ptr<PcapPort> p(new PcapPort());
    p->cfg_ = cfg;
    if (!cfg.rx_path.empty()) {
      auto r = PcapReader::open(cfg.rx_path);
      if (!r) return r.status();
      p->reader_.emplace(std::move(*r));
      auto pool = FramePools::create(cfg.pool_slots, cfg.large_slots, cfg.max_frame);
      if (!pool) return pool.status();
      p->pool_ = std::move(*pool);
    } else {
      p->rx_done_ = true;
    }
    if (!cfg.tx_path.empty()) {
      auto w = PcapWriter::open(cfg.tx_path, "output.pcap (--out pcap:)");
      if (!w) return w.status();
      p->writer_.emplace(std::move(*w));
    }
    return std::unique_ptr<Port>(std::move(p));
  }

  uint16_t rx_burst(Packet* pkts, uint16_t n, uint64_t now_ns) override {
    uint16_t got = 0;
    while (got < n && !rx_done_) {
      if (!pending_) {
        if (!reader_->next(rec_)) {
          if (!reader_->read_error().empty() && !warned_cut_) {
            warned_cut_ = true;  // once per run, not once per pass
            spdlog::warn("capture cut short, whole records before the cut were read: {}", reader_->read_error());
          }
          if (cfg_.loops != 0 && ++loop_ >= cfg_.loops) {
            rx_done_ = true;
            break;
          }
          if (pass_packets_ == 0) {
            // Reading it again would give nothing again: with loops = 0 this would spin forever.
            spdlog::warn("capture {}: a whole pass gave no frame hpr can use; not reading it again", cfg_.rx_path);
            rx_done_ = true;
            break;
          }
          pass_packets_ = 0;
          auto r = PcapReader::open(cfg_.rx_path);  // rewind
          if (!r) {
            rx_done_ = true;
            break;
          }
          *reader_ = std::move(*r);
          continue;
        }
        pending_ = true;
      }
      Packet& p = pkts[got];
      const FrameAlloc a = pool_->alloc(p, static_cast<uint32_t>(std::min<size_t>(rec_.frame.size(), 0x10000)));
      if (a == FrameAlloc::kNoSmall) {
        stats_.rx_no_buffer.add(1);  // back-pressure: retry this frame on the next call
        break;
      }
      if (a != FrameAlloc::kOk) {  // counted, never silently lost
        (a == FrameAlloc::kTooLong ? stats_.rx_too_long : stats_.rx_pool_empty).add(1);
        pending_ = false;
        continue;
      }
      std::memcpy(p.data, rec_.frame.data(), rec_.frame.size());
      p.len = static_cast<uint16_t>(rec_.frame.size());
      p.rx_ns = now_ns;
      p.port = 0;
      p.drop = DropReason::kNone;
      p.flow_id = kNoFlow;
      stats_.rx_packets.add(1);
      stats_.rx_bytes.add(p.len);
      ++pass_packets_;
      pending_ = false;
      ++got;
    }
    // A pool slot ran out: the frame stays pending (not lost) and rx_no_buffer is only a stall count.
    return got;
  }

  uint16_t tx_burst(Packet* pkts, uint16_t n) override {
    if (!writer_) {
      stats_.tx_packets.add(n);
      stats_.tx_bytes.add(frame_bytes(pkts, n));
      return n;
    }
    if (write_failed_) return 0;  // counted as tx_error by the caller (unsent_reason)
    uint64_t ts = wall_ns();
    for (uint16_t i = 0; i < n; ++i) writer_->write(ts, {pkts[i].data, pkts[i].len});
    // Flushed per burst so that a packet counted as sent is in the file: a full disk shows here.
    if (Status st = writer_->flush(); !st.is_ok()) {
      write_failed_ = true;
      spdlog::error("{}; this and every later packet is counted as tx_error, the file is not written", st.message());
      return 0;
    }
    stats_.tx_bytes.add(frame_bytes(pkts, n));
    stats_.tx_packets.add(n);
    return n;
  }
  DropReason unsent_reason() const override { return write_failed_ ? DropReason::kTxError : DropReason::kTxFailed; }
  Status close() override {
    if (!writer_) return Status::ok();
    if (write_failed_) return error(Code::kIoError, "output.pcap {}: writing failed, the file was not written", cfg_.tx_path);
    Status st = writer_->finish();
    writer_.reset();
    return st;
  }

  void release(Packet* pkts, uint16_t n) override {
    if (pool_) pool_->free(pkts, n);
  }
  bool rx_done() const override { return rx_done_; }
  PortStats stats() const override {
    PortStats s = stats_.load();
    s.buffers_in_use = pool_ ? pool_->in_use() : 0;
    return s;
  }

 private:
  static uint64_t wall_ns() {
    return static_cast<uint64_t>(std::chrono::duration_cast<std::chrono::nanoseconds>(
                                     std::chrono::system_clock::now().time_since_epoch())
                                     .count());
  }
  PcapPortConfig cfg_;
  std::optional<PcapReader> reader_;
  std::optional<PcapWriter> writer_;
  std::unique_ptr<FramePools> pool_;
  PcapRecord rec_;
  bool pending_ = false;
  bool rx_done_ = false;
  bool write_failed_ = false;
  bool warned_cut_ = false;
  uint64_t pass_packets_ = 0;  // frames delivered in this pass over the file
  uint32_t loop_ = 0;
  PortCounters stats_;
};

class NullPort final : public Port {
 public:
  std::string_view kind() const override { return "null"; }
  std::string describe() const override { return "null"; }
  uint16_t rx_burst(Packet*, uint16_t, uint64_t) override { return 0; }
  uint16_t tx_burst(Packet* pkts, uint16_t n) override {
    stats_.tx_packets.add(n);
    stats_.tx_bytes.add(frame_bytes(pkts, n));
    return n;
  }
  void release(Packet*, uint16_t) override {}
  bool rx_done() const override { return true; }
  PortStats stats() const override { return stats_.load(); }

 private:
  PortCounters stats_;
};

}  // namespace

Result<std::unique_ptr<Port>> make_pcap_port(const PcapPortConfig& cfg) { return PcapPort::create(cfg); }
std::unique_ptr<Port> make_null_port() { return std::make_unique<NullPort>(); }

}  // namespace hpr
