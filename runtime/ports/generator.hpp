#pragma once
// Traffic generator port: synthetic (or capture-templated) Ethernet/IPv4/IPv6 TCP/UDP frames with
// chosen size distribution, flow popularity, DPI payload patterns and offered-rate profile.
// Deterministic: the same config, seed and sequence of rx_burst(now_ns) calls give the same bytes on
// every platform (own PRNGs, see generator_random.hpp; no std::*_distribution).
//
// Sizes. Every size is an Ethernet frame length WITHOUT the 4-byte FCS, as a frame sits in a
// buffer, a pcap file or a DPDK mbuf (so "64-byte packets" are size 60 here and 1518-byte full
// frames are 1514). Fixed and uniform sizes must lie in [60, 9000].
// IMIX is Table I of token-bucket-parallel-heaps.txt (the Agilent IMIX): IP datagram sizes
// 28/40/44/48/52/552/576/628/770/1420/1500 B with 1.2/35.5/2/2/3.5/0.8/11.5/1/29.5/3/10 %
// (mean 514.88 B, the paper's "average packet size 515B"). The IP total length is the table's size
// and the frame is 14 + that size, zero-padded to the 60-byte Ethernet minimum (so 28, 40 and 44 B
// datagrams travel in 60-byte frames). When a packet's own headers do not fit the drawn size
// (TCP in 28 B, IPv6, template headers with options or VLAN tags), the packet grows to its
// headers and the case is counted in GeneratorStats::size_raised; a UDP/IPv4-only configuration
// reproduces Table I exactly.
//
// Flows. `flows` flows (1..1,000,000) with rank r = flow index + 1. Popularity uniform or Zipf
// (P(r) ∝ r^-s, s >= 0), sampled in O(1) from a Walker/Vose alias table built once (8 bytes per
// flow: 8 MB for a million flows). Flow choices use their own PRNG stream, drawn 16 packets ahead
// so that the table entry is prefetched (a million-flow table lives in DRAM). Synthetic headers
// are derived from a hash of (seed, flow): no per-flow memory. IPv4 flows: src 10.0.0.0/8, dst uniform
// over 1.0.0.0-223.255.255.255; IPv6 flows (ipv6_share of the flows): src fd00::/8, dst 2000::/3; sport 1024-65535;
// dport from {80,443,22,25,8080} (TCP) or {53,123,443,4789,5060} (UDP); tcp_share of the flows are TCP. IPv4 headers:
// IHL 5, DF, id = packet counter, valid header checksum; TTL / hop limit `ttl`, or 1 for a `ttl_low_share` fraction of
// packets. MACs 02:00:00:00:00:02 -> 02:00:00:00:00:01. TCP: 20-byte header, ACK|PSH, seq/ack from the flow hash. L4
// checksums are computed only with l4_checksums = true (RFC 768/793 with the pseudo-header); otherwise they are 0
// (valid "no checksum" for UDP over IPv4, unchecked elsewhere).
//
// Template headers (template_capture set): the capture is read once (pcap_file.hpp), every frame
// that parses cleanly as an unfragmented IPv4/IPv6 TCP/UDP packet is a candidate, and the first
// frame of each distinct 5-tuple (direction-sensitive, at most 65536) gives a header template:
// its bytes up to the L4 payload (VLAN tags, IPv4 options and IPv6 extension headers kept). Flow f
// uses template f mod T; a generation g = f / T > 0 gives a new flow: templates that differ only
// in source port and the last two bytes of the source address form a group, v = (g - 1) × group
// size + index in group numbers the group's generated flows, the source port becomes
// 1024 + v mod 64512 and the address tail is XOR-ed with 0x5a5a + v / 64512 (never 0), so generated
// flows are distinct from each other and from the capture's connections. Lengths (IPv4 total length, IPv6 payload
// length, UDP length), TTL / hop limit and the IPv4 checksum are rewritten for every packet (L4 checksums as below).
//
// Payload. Pseudo-random bytes copied from a 256 KiB pool filled at start (from the seed) and
// scrubbed of every configured pattern (length >= 2), so a pattern appears only where planted.
// A `pattern_match_rate` fraction of packets gets one pattern (chosen uniformly from `patterns`)
// at a uniformly random payload offset, when it fits in the payload; GeneratorStats counts the
// planted ones and those that did not fit.
//
// Rate (generator_profile.hpp). The profile's t = 0 is the first rx_burst's now_ns. A paced port
// hands out in rx_burst only packets due by now_ns: packet k is handed out when the profile's
// cumulative offer reaches k packets (or, in bits/s, the bits of the packets up to k); debt is
// kept (token bucket without cap) unless rate.max_backlog bounds it. Unpaced: every call fills n.
// Holt-Winters profiles set Packet::service to the service i drawn in proportion to x_i(t), and
// each service draws from its own flows (flows f with f mod k = i, same popularity law within).
//
// Limits: max_packets (0: none) and duration_ns after the start (0: none); rx_done() turns true
// when one is reached (or when a non-looping steps profile is over and its packets are out).
//
// Ownership as every Port: buffers come from the port's PacketPool; callers give them back with
// release(). tx_burst counts and accepts everything (a sink), like a pcap port without output.
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "hpr/status.hpp"
#include "runtime/flow.hpp"
#include "runtime/port.hpp"
#include "runtime/ports/generator_profile.hpp"

namespace hpr {

enum class SizeMode : uint8_t { kFixed, kUniform, kImix };
enum class Popularity : uint8_t { kUniform, kZipf };

inline constexpr uint32_t kGenMinFrameBytes = 60;    // Ethernet minimum without FCS
inline constexpr uint32_t kGenMaxFrameBytes = 9000;  // jumbo
inline constexpr uint32_t kGenMaxFlows = 1'000'000;

struct ImixEntry {
  uint16_t ip_bytes;
  double percent;
};
// token-bucket-parallel-heaps.txt Table I.
inline constexpr ImixEntry kImixTable[] = {{28, 1.20},   {40, 35.50},  {44, 2.00},   {48, 2.00},
                                           {52, 3.50},   {552, 0.80},  {576, 11.50}, {628, 1.00},
                                           {770, 29.50}, {1420, 3.00}, {1500, 10.00}};

// A traffic step (issue 13, "traffic changes"): for `duration_ns` the frames follow this size mix and this share
// of packets carries a planted pattern; the steps repeat for as long as the generator runs.
struct TrafficStep {
  uint64_t duration_ns = 0;
  SizeMode size_mode = SizeMode::kImix;
  uint32_t size_bytes = 60;                             // kFixed
  uint32_t size_min_bytes = 60, size_max_bytes = 1514;  // kUniform, inclusive
  double match_rate = 0.0;                              // pattern_match_rate during the step
};

// The longest frame a size mix asks for: the fixed size, the uniform maximum, or `imix_bytes` for IMIX (whose
// largest frame depends on the headers).
inline uint32_t largest_frame(const TrafficStep& s, uint32_t imix_bytes) {
  switch (s.size_mode) {
    case SizeMode::kFixed:
      return s.size_bytes;
    case SizeMode::kUniform:
      return s.size_max_bytes;
    case SizeMode::kImix:
      return imix_bytes;
  }
  return 0;
}

struct GeneratorConfig {
  uint64_t seed = 1;

  SizeMode size_mode = SizeMode::kFixed;
  uint32_t size_bytes = 60;                             // kFixed
  uint32_t size_min_bytes = 60, size_max_bytes = 1514;  // kUniform, inclusive

  uint32_t flows = 1024;
  Popularity popularity = Popularity::kUniform;
  double zipf_s = 1.0;
  double tcp_share = 0.5;   // of synthetic flows
  double ipv6_share = 0.0;  // of synthetic flows

  uint8_t ttl = 64;            // IPv4 TTL / IPv6 hop limit; >= 1
  double ttl_low_share = 0.0;  // fraction of packets sent with TTL 1 (ipv4 app's TTL-exceeded path)

  std::string template_capture;  // path of a pcap/pcapng whose headers become flow headers; "" = synthetic

  std::vector<std::string> patterns;  // byte strings planted in payloads
  double pattern_match_rate = 0.0;    // fraction of packets carrying one planted pattern

  // Size mix and match rate over time, cycled (the sizes and pattern_match_rate above apply when empty).
  std::vector<TrafficStep> traffic_steps;

  bool l4_checksums = false;

  RateConfig rate;

  uint64_t max_packets = 0;  // 0: unlimited
  uint64_t duration_ns = 0;  // 0: unlimited

  uint32_t pool_slots = 8192;
  uint16_t port_index = 0;  // Packet::port of generated packets
};

struct GeneratorStats {
  uint64_t generated = 0;       // packets handed out
  uint64_t planted = 0;         // packets with a planted pattern
  uint64_t pattern_no_fit = 0;  // packets picked for a pattern whose payload was too short
  uint64_t size_raised = 0;     // packets grown to hold their headers (see Sizes above)
  uint64_t ttl_low = 0;         // packets sent with TTL 1
  double skipped_units = 0;     // offered units dropped by rate.max_backlog
  uint32_t templates = 0;       // header templates in use (0: synthetic)
};

class GeneratorPort : public Port {
 public:
  virtual GeneratorStats generator_stats() const = 0;
  // The 5-tuple flow f's packets carry (for tests and reports; f < flows).
  virtual FlowKey flow_key(uint32_t f) const = 0;
  virtual const RateProfile& profile() const = 0;
};

// Errors (kInvalidArgument unless said, each naming the setting): flows = 0 or > 1,000,000; zipf_s
// < 0 or not finite; a size outside [60, 9000] or size_min_bytes > size_max_bytes; tcp_share,
// ipv6_share, ttl_low_share or pattern_match_rate outside [0, 1]; ttl = 0; pattern_match_rate > 0
// with no patterns, an empty pattern or one longer than 8000 bytes; pool_slots = 0; every error of
// RateProfile::create; template_capture: kNotFound when the file does not exist, the reader's
// errors, and kInvalidArgument when it holds no usable IPv4/IPv6 TCP/UDP packet.
Result<std::unique_ptr<GeneratorPort>> make_generator(const GeneratorConfig& cfg);
Result<std::unique_ptr<Port>> make_generator_port(const GeneratorConfig& cfg);

}  // namespace hpr
