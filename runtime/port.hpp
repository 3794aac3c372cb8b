#pragma once
// Port: burst receive and burst transmit, the one interface of DPDK ports, capture files, the
// traffic generator and the null sink.
//
// Ownership rule (the same for every port): rx_burst hands out packets whose buffers belong to the
// receiving port; whoever finishes with a packet returns it with that port's release(). tx_burst
// never takes ownership: it sends (or copies) the bytes and the caller releases afterwards. A DPDK
// port sending mbufs of its own mempool takes an extra reference so that release() stays uniform.
#include <array>
#include <atomic>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "hpr/status.hpp"
#include "runtime/packet.hpp"

namespace hpr {

struct PortStats {
  uint64_t rx_packets = 0, rx_bytes = 0;
  uint64_t tx_packets = 0, tx_bytes = 0;
  // DPDK: frames the port dropped for want of a buffer or ring room (imissed + rx_nombuf), before hpr
  // received them. Pool-backed ports (pcap, generator): times rx stalled on an empty pool (nothing lost).
  uint64_t rx_no_buffer = 0;
  // Generator as a line-rate port (GeneratorConfig rate.max_backlog): packets offered and never received because
  // hpr fell behind by more than the port holds (a NIC's imissed).
  uint64_t rx_missed = 0;
  uint64_t rx_too_long = 0;    // frames longer than ports.max_frame or than the port holds (counted drop)
  uint64_t rx_pool_empty = 0;  // frames dropped because the pool for their size was empty (large frames; pool_empty)
  uint64_t tx_failed = 0;     // packets the port refused on transmit (counted drop)
  uint64_t buffers_in_use = 0;// rx buffers handed out and not yet released (pool occupancy; 0 after a drain)
};

inline uint64_t frame_bytes(const Packet* pkts, uint16_t n) {
  uint64_t b = 0;
  for (uint16_t i = 0; i < n; ++i) b += pkts[i].len;
  return b;
}

// A port's own counters. Each is written by one thread (rx by the thread that receives, tx by the one that
// transmits) and read by any (the status line, telemetry): relaxed atomics, increments as load + store (a
// plain move on x86, no locked instruction), loaded into a PortStats by stats().
struct PortCounters {
  class Counter {
   public:
    void add(uint64_t n) { v_.store(v_.load(std::memory_order_relaxed) + n, std::memory_order_relaxed); }
    uint64_t get() const { return v_.load(std::memory_order_relaxed); }

   private:
    std::atomic<uint64_t> v_{0};
  };
  Counter rx_packets, rx_bytes, tx_packets, tx_bytes, rx_no_buffer, rx_missed, rx_too_long, rx_pool_empty, tx_failed;
  PortStats load() const {
    PortStats s;
    s.rx_packets = rx_packets.get();
    s.rx_bytes = rx_bytes.get();
    s.tx_packets = tx_packets.get();
    s.tx_bytes = tx_bytes.get();
    s.rx_no_buffer = rx_no_buffer.get();
    s.rx_missed = rx_missed.get();
    s.rx_too_long = rx_too_long.get();
    s.rx_pool_empty = rx_pool_empty.get();
    s.tx_failed = tx_failed.get();
    return s;
  }
};

class Port {
 public:
  virtual ~Port() = default;
  virtual std::string_view kind() const = 0;  // "dpdk", "pcap", "generator", "null"
  virtual std::string describe() const = 0;   // for logs: "pcap in:foo.pcap"

  // Receive up to n packets (data, len, buf, rx_ns, port set; nothing parsed). now_ns stamps them.
  virtual uint16_t rx_burst(Packet* pkts, uint16_t n, uint64_t now_ns) = 0;
  // True when every packet rx_burst hands out is a default Packet apart from data, len, buf, buf_kind, rx_ns and
  // port, whatever the caller's array held before: then parse<true>() may skip resetting what it fills.
  virtual bool fresh_rx() const { return false; }
  // Transmit up to n packets; returns how many were sent. Unsent ones stay the caller's to count.
  virtual uint16_t tx_burst(Packet* pkts, uint16_t n) = 0;
  // Return buffers of packets this port received. Reads only each Packet's `buf` and `buf_kind` (the buffer
  // reference), so a caller may hand over descriptors in which only those two are set (buffer_ref).
  virtual void release(Packet* pkts, uint16_t n) = 0;
  // Copies what release() reads of `from` into `to`: a burst's drops gathered for one release() call.
  static void buffer_ref(Packet& to, const Packet& from) {
    to.buf = from.buf;
    to.buf_kind = from.buf_kind;
  }
  // tx_burst, then every buffer back to `owner` (the port that received them), as one step: a DPDK
  // port hands the mbufs it sends to its driver instead of taking and dropping an extra reference per
  // packet, and frees the unsent ones in bulk. Returns how many were sent.
  virtual uint16_t tx_burst_release(Packet* pkts, uint16_t n, Port& owner) {
    uint16_t sent = tx_burst(pkts, n);
    owner.release(pkts, n);
    return sent;
  }
  // A finite source (capture file, generator with a packet count) has nothing more to give.
  virtual bool rx_done() const { return false; }
  // The run stops receiving. A port that holds frames it took from its source and has not handed out (a spreading
  // view, spread_port.hpp) takes no more from the source and returns true: the run then receives until rx_done(),
  // so that nothing taken in is lost. Others: false, nothing to do.
  virtual bool stop_rx() { return false; }
  // Flush buffered output (capture files).
  virtual void flush() {}
  // End of the run: finishes the output (a capture file is renamed into place). Errors: kIoError
  // naming the file when a write failed (those packets were counted under tx_error).
  virtual Status close() { return Status::ok(); }
  // Why the packets tx_burst did not take were not sent: the port refused them (ring or queue
  // full) or, once a write to an output file has failed, tx_error.
  virtual DropReason unsent_reason() const { return DropReason::kTxFailed; }
  virtual PortStats stats() const = 0;
  // The port's own MAC address (a DPDK ethdev's), for the IPv4 app's Ethernet rewrite; nullopt: it has none
  // (capture files, null, generator).
  virtual std::optional<std::array<uint8_t, 6>> mac() const { return std::nullopt; }
};

}  // namespace hpr
