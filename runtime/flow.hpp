#pragma once
// Flows: the 5-tuple key, CRC32C flow hashes, and the FlowTable.
//
// FlowKey holds IPv4 addresses in the first 4 bytes of the 16-byte fields (rest zero). Ports are
// those of TCP, UDP and SCTP; for other protocols and for every IP fragment (first one included,
// so that all fragments of a datagram stay together) ports are 0.
//
// Hash: CRC32C (Castagnoli) over the key's significant bytes, with the SSE4.2 crc32 instruction where the CPU has
// it and a table otherwise (same values): an IPv4 key's 16 (its two addresses as one 64-bit word, then the ports,
// protocol and family word), any other key's 40. The symmetric hash orders the two endpoints first, so both
// directions of a connection hash alike (and share one FlowTable entry).
//
// FlowTable: open addressing on the symmetric hash (index of (id, hash) slots, backward-shift deletion),
// per-flow state in arrays indexed by a stable id in [0, capacity). Memory is fixed at creation:
// capacity × (sizeof(FlowKey) + state + 2 index slots). Idle flows (no packet in flight for
// `idle_ns`) are aged out incrementally by expire(); their ids are reused.
#include <atomic>
#include <bit>
#include <cstdint>
#include <cstring>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#if defined(__SSE4_2__) && defined(__x86_64__)
#include <nmmintrin.h>
#endif

#include "hpr/status.hpp"
#include "runtime/checksum.hpp"
#include "runtime/packet.hpp"

namespace hpr {

struct FlowKey {
  uint8_t src[16] = {};
  uint8_t dst[16] = {};
  uint16_t sport = 0;
  uint16_t dport = 0;
  uint8_t proto = 0;
  uint8_t family = 0;  // 4 or 6; 0 for non-IP
  uint8_t pad[2] = {};

  // 64-bit compares (inlined; libc memcmp was 12% of the classifier's profile), each word loaded on its own: two
  // 40-byte arrays copied first went through the stack. The addresses' first words and the tail first: where they
  // are equal, so are the families, and an IPv4 key's other two words are zero in both.
  bool operator==(const FlowKey& o) const {
    auto x = [this, &o](int i) {
      uint64_t a, b;
      std::memcpy(&a, reinterpret_cast<const uint8_t*>(this) + 8 * i, 8);
      std::memcpy(&b, reinterpret_cast<const uint8_t*>(&o) + 8 * i, 8);
      return a ^ b;
    };
    if ((x(0) | x(2) | x(4)) != 0) return false;
    return family == 4 || (x(1) | x(3)) == 0;
  }
  // The same connection seen from the other side.
  FlowKey reversed() const {
    FlowKey r = *this;
    std::memcpy(r.src, dst, 16);
    std::memcpy(r.dst, src, 16);
    r.sport = dport;
    r.dport = sport;
    return r;
  }
  // Endpoints ordered so that a key and its reverse give the same canonical key (inline: the
  // dispatcher calls it for every packet).
  FlowKey canonical() const { return endpoint_less(dst, dport, src, sport) ? reversed() : *this; }

 private:
  // Any total order works for canonical(): the addresses as two native 64-bit words, then the port.
  static bool endpoint_less(const uint8_t* a, uint16_t ap, const uint8_t* b, uint16_t bp) {
    uint64_t x[2], y[2];
    std::memcpy(x, a, 16);
    std::memcpy(y, b, 16);
    if (x[0] != y[0]) return x[0] < y[0];
    if (x[1] != y[1]) return x[1] < y[1];
    return ap < bp;
  }
};
static_assert(sizeof(FlowKey) == 40);

// Extracts the key of a parsed packet (parse() must have run). Non-IP packets give family 0.
FlowKey flow_key(const Packet& p);
// flow_key(p).canonical() in one pass, written straight into `out` as five 64-bit words (a key built
// on the stack and copied out cost the dispatcher a store-forwarding stall per packet).
// Returns flow_hash(out), computed from the words on their way out.
// kParsedIp: the caller has seen parse() pass p with an IPv4 or IPv6 header (the classifier's loops test that
// first), so the function does not test it again.
template <bool kParsedIp = false>
uint32_t canonical_flow_key(const Packet& p, FlowKey& out);  // below, beside flow_hash_words
// "src:sport > dst:dport proto N" for an IP packet, "non-ip" otherwise (result logs).
std::string flow_text(const Packet& p);

uint32_t crc32c(const void* data, size_t len, uint32_t seed = 0xffffffffu);
// crc32c over an IPv4 key given as its two significant words: the addresses (src | dst << 32, each as FlowKey holds
// its 4 bytes) and the tail (native byte order, as it lies in memory).
inline uint32_t flow_hash_words(uint64_t addrs, uint64_t tail) {
#if defined(__SSE4_2__) && defined(__x86_64__)
  return static_cast<uint32_t>(_mm_crc32_u64(_mm_crc32_u64(0xffffffffu, addrs), tail));
#else
  const uint64_t w[2] = {addrs, tail};
  return crc32c(w, sizeof w);
#endif
}
// crc32c over any other key given as its five 64-bit words (native byte order, as they lie in memory).
inline uint32_t flow_hash_words(uint64_t w0, uint64_t w1, uint64_t w2, uint64_t w3, uint64_t w4) {
#if defined(__SSE4_2__) && defined(__x86_64__)
  // Spelled out: a loop over the words put them on the stack first.
  uint64_t c = _mm_crc32_u64(0xffffffffu, w0);
  c = _mm_crc32_u64(c, w1);
  c = _mm_crc32_u64(c, w2);
  c = _mm_crc32_u64(c, w3);
  return static_cast<uint32_t>(_mm_crc32_u64(c, w4));
#else
  const uint64_t w[5] = {w0, w1, w2, w3, w4};
  return crc32c(w, sizeof w);
#endif
}
// Direction-sensitive: crc32c over the key's significant bytes (above). Inline, two CRC32 instructions for an IPv4
// key and five for any other where SSE4.2 is built in. Reads the key word by word (a 16-byte read of a key just
// written in 8-byte words stalls).
inline uint32_t flow_hash(const FlowKey& k) {
  const auto* b = reinterpret_cast<const uint8_t*>(&k);
  uint64_t w[5];
  for (int i = 0; i < 5; ++i) std::memcpy(&w[i], b + 8 * i, 8);
  if (k.family == 4) return flow_hash_words(w[0] | w[2] << 32, w[4]);
  return flow_hash_words(w[0], w[1], w[2], w[3], w[4]);
}
// TCP and UDP carry ports, except in a fragment: what parse() found (kFlagPorts; it gives SCTP and the other
// protocols no L4 header). One bit test: the five tests on the packet's fields it replaces were 16 instructions a
// packet on the worker path.
inline bool has_ports(const Packet& p) { return (p.flags & kFlagPorts) != 0; }

// Inline: the classifier calls it for every packet.
template <bool kParsedIp>
[[gnu::always_inline]] inline uint32_t canonical_flow_key(const Packet& p, FlowKey& out) {
  static_assert(std::endian::native == std::endian::little, "the packed tail word assumes little endian");
  // Word by word: an array built first and copied out is merged into 16-byte moves that read back
  // 8-byte stores, a store-forwarding stall each.
  auto* o = reinterpret_cast<uint8_t*>(&out);
  auto put = [o](uint64_t a0, uint64_t a1, uint64_t b0, uint64_t b1, uint64_t tail) {
    std::memcpy(o, &a0, 8);
    std::memcpy(o + 8, &a1, 8);
    std::memcpy(o + 16, &b0, 8);
    std::memcpy(o + 24, &b1, 8);
    std::memcpy(o + 32, &tail, 8);
  };
  if (!kParsedIp &&
      !(p.drop == DropReason::kNone && p.l3_off != kNoOffset && (p.l3 == L3::kIPv4 || p.l3 == L3::kIPv6))) {
    put(0, 0, 0, 0, 0);
    return flow_hash_words(0, 0, 0, 0, 0);
  }
  const uint8_t* h = p.data + p.l3_off;
  uint64_t sport = 0, dport = 0;
  if (has_ports(p)) {
    sport = load_be16(p.data + p.l4_off);
    dport = load_be16(p.data + p.l4_off + 2);
  }
  // The tail: sport | dport << 16 | proto << 32 | family << 40. The family byte is L3's value (4, 6); l4 and l3 sit
  // side by side in Packet, one 16-bit load.
  static_assert(static_cast<uint8_t>(L3::kIPv4) == 4 && static_cast<uint8_t>(L3::kIPv6) == 6);
  const uint64_t proto_family = uint64_t{p.l4} << 32 | uint64_t{static_cast<uint8_t>(p.l3)} << 40;
  // FlowKey::canonical(): the reverse when (dst, dport) orders before (src, sport).
  if (p.l3 == L3::kIPv4) {
    uint32_t s, d;
    std::memcpy(&s, h + 12, 4);
    std::memcpy(&d, h + 16, 4);
    if (d != s ? d < s : dport < sport) {
      std::swap(s, d);
      std::swap(sport, dport);
    }
    const uint64_t tail = sport | dport << 16 | proto_family;
    put(s, 0, d, 0, tail);
    return flow_hash_words(uint64_t{s} | uint64_t{d} << 32, tail);
  }
  uint64_t a[2], b[2];  // src, dst as FlowKey holds them
  std::memcpy(a, h + 8, 16);
  std::memcpy(b, h + 24, 16);
  if (b[0] != a[0] ? b[0] < a[0] : b[1] != a[1] ? b[1] < a[1] : dport < sport) {
    std::swap(a, b);
    std::swap(sport, dport);
  }
  const uint64_t tail = sport | dport << 16 | proto_family;
  put(a[0], a[1], b[0], b[1], tail);
  return flow_hash_words(a[0], a[1], b[0], b[1], tail);
}

uint32_t flow_hash_symmetric(const FlowKey& k);  // equal for k and k.reversed()
bool cpu_has_crc32c();

struct FlowState {
  uint64_t last_seen_ns = 0;
  uint64_t packets = 0;
  uint64_t bytes = 0;
  uint32_t next_seq = 0;  // sequence number for the next packet of this flow (dispatcher)
  uint8_t lane = 0xff;    // lane the flow is bound to; 0xff = none yet
};

class FlowTable {
 public:
  // capacity: max flows alive at once (rounded up to a power of two). Errors: kInvalidArgument for 0.
  static Result<std::unique_ptr<FlowTable>> create(uint32_t capacity, uint64_t idle_ns);

  // Id of the flow of `key` (inserted when new). kNoFlow when the table is full even after
  // expiring; the caller counts that (the packet still goes through, bound to no flow state).
  // The probe is inline (the classifier calls it for every packet); a new flow's insert is not.
  uint32_t lookup_or_insert(const FlowKey& canonical_key, uint32_t hash, uint64_t now_ns, bool* inserted = nullptr) {
    if (inserted != nullptr) *inserted = false;
    for (uint32_t i = hash & index_mask_;; i = (i + 1) & index_mask_) {
      const Slot sl = index_[i];
      if (sl.id == kNoFlow) return insert(canonical_key, hash, now_ns, inserted, i);
      if (sl.hash == hash && keys_[sl.id] == canonical_key) {
        state_[sl.id].last_seen_ns = now_ns;
        return sl.id;
      }
    }
  }
  uint32_t find(const FlowKey& canonical_key, uint32_t hash) const;
  // Starts loading the index slot a lookup of `hash` probes first, so that a burst's lookups wait for
  // memory once, together, instead of one after the other (rte_hash's bulk lookup does the same).
  void prefetch(uint32_t hash) const { __builtin_prefetch(&index_[hash & index_mask_]); }

  FlowState& state(uint32_t id) { return state_[id]; }
  const FlowState& state(uint32_t id) const { return state_[id]; }
  bool live(uint32_t id) const { return used_[id] != 0; }  // id in [0, capacity) holds a flow now
  const FlowKey& key(uint32_t id) const { return keys_[id]; }
  // Packets of this flow queued or in flight on a lane. Written by the dispatcher (+) and by the
  // egress thread (−), hence atomic.
  std::atomic<uint32_t>& in_flight(uint32_t id) { return in_flight_[id]; }

  // Examine up to `max_scan` ids (round robin) and remove flows idle for idle_ns with nothing in
  // flight. Returns how many were removed.
  uint32_t expire(uint64_t now_ns, uint32_t max_scan);

  // f(id, canonical key) for every flow alive, in id order (the owner's thread).
  template <class F>
  void for_each_live(F&& f) const {
    for (uint32_t id = 0; id < capacity_; ++id)
      if (live(id)) f(id, keys_[id]);
  }

  uint32_t capacity() const { return capacity_; }
  uint32_t size() const { return size_; }
  uint64_t full_events() const { return full_events_.load(std::memory_order_relaxed); }  // any thread
  uint64_t expired_total() const { return expired_total_; }
  static size_t bytes_per_flow();

 private:
  FlowTable() = default;
  // lookup_or_insert's miss: the key is not in the table, and index slot `empty` ends its probe run.
  uint32_t insert(const FlowKey& key, uint32_t hash, uint64_t now_ns, bool* inserted, uint32_t empty);
  void erase(uint32_t id);

  uint32_t capacity_ = 0;
  uint32_t index_mask_ = 0;   // index has 2 × capacity slots
  uint64_t idle_ns_ = 0;
  uint32_t size_ = 0;
  uint32_t hand_ = 0;
  std::atomic<uint64_t> full_events_{0};  // written by the owner, read by the status line
  uint64_t expired_total_ = 0;
  // An index slot holds the flow's hash beside its id: a probe compares hashes without touching
  // the per-id arrays, and reads the key only on a hash match.
  struct Slot {
    uint32_t id = kNoFlow;
    uint32_t hash = 0;
  };
  std::vector<Slot> index_;
  std::vector<uint32_t> hashes_; // per id
  std::vector<FlowKey> keys_;
  std::vector<FlowState> state_;
  std::unique_ptr<std::atomic<uint32_t>[]> in_flight_;
  std::vector<uint8_t> used_;
  std::vector<uint32_t> free_ids_;
};

}  // namespace hpr
