#include "runtime/flow.hpp"

#include <arpa/inet.h>
#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <bit>

#if defined(__x86_64__)
#include <cpuid.h>
#include <nmmintrin.h>

#include "runtime/checksum.hpp"
#endif

namespace hpr {
namespace {

constexpr std::array<uint32_t, 256> make_crc32c_table() {
  std::array<uint32_t, 256> t{};
  for (uint32_t i = 0; i < 256; ++i) {
    uint32_t c = i;
    for (int k = 0; k < 8; ++k) c = (c & 1) ? (c >> 1) ^ 0x82f63b78u : c >> 1;
    t[i] = c;
  }
  return t;
}
constexpr auto kCrcTable = make_crc32c_table();

uint32_t crc32c_sw(const uint8_t* p, size_t n, uint32_t crc) {
  for (size_t i = 0; i < n; ++i) crc = kCrcTable[(crc ^ p[i]) & 0xff] ^ (crc >> 8);
  return crc;
}

#if defined(__x86_64__)
__attribute__((target("sse4.2"))) uint32_t crc32c_hw(const uint8_t* p, size_t n, uint32_t crc) {
  uint64_t c = crc;
  while (n >= 8) {
    uint64_t v;
    std::memcpy(&v, p, 8);
    c = _mm_crc32_u64(c, v);
    p += 8;
    n -= 8;
  }
  auto c32 = static_cast<uint32_t>(c);
  while (n-- > 0) c32 = _mm_crc32_u8(c32, *p++);
  return c32;
}
#endif

const bool kHasCrc = [] {
#if defined(__x86_64__)
  unsigned a, b, c, d;
  return __get_cpuid(1, &a, &b, &c, &d) && (c & bit_SSE4_2) != 0;
#else
  return false;
#endif
}();

}  // namespace

bool cpu_has_crc32c() { return kHasCrc; }

uint32_t crc32c(const void* data, size_t len, uint32_t seed) {
  auto p = static_cast<const uint8_t*>(data);
#if defined(__x86_64__)
  if (kHasCrc) return crc32c_hw(p, len, seed);
#endif
  return crc32c_sw(p, len, seed);
}

FlowKey flow_key(const Packet& p) {
  FlowKey k;
  if (p.drop != DropReason::kNone || p.l3_off == kNoOffset) return k;
  const uint8_t* h = p.data + p.l3_off;
  if (p.l3 == L3::kIPv4) {
    k.family = 4;
    std::memcpy(k.src, h + 12, 4);
    std::memcpy(k.dst, h + 16, 4);
  } else if (p.l3 == L3::kIPv6) {
    k.family = 6;
    std::memcpy(k.src, h + 8, 16);
    std::memcpy(k.dst, h + 24, 16);
  } else {
    return k;
  }
  k.proto = p.l4;
  if (has_ports(p)) {
    k.sport = load_be16(p.data + p.l4_off);
    k.dport = load_be16(p.data + p.l4_off + 2);
  }
  return k;
}

std::string flow_text(const Packet& p) {
  if (p.l3_off == kNoOffset || (p.l3 != L3::kIPv4 && p.l3 != L3::kIPv6)) return "non-ip";
  FlowKey k = flow_key(p);
  char a[INET6_ADDRSTRLEN], b[INET6_ADDRSTRLEN];
  int af = k.family == 4 ? AF_INET : AF_INET6;
  inet_ntop(af, k.src, a, sizeof a);
  inet_ntop(af, k.dst, b, sizeof b);
  return fmt::format("{}:{} > {}:{} proto {}", a, k.sport, b, k.dport, k.proto);
}

uint32_t flow_hash_symmetric(const FlowKey& k) {
  return flow_hash(k.canonical());
}

Result<std::unique_ptr<FlowTable>> FlowTable::create(uint32_t capacity, uint64_t idle_ns) {
  if (capacity == 0) return error(Code::kInvalidArgument, "flow table capacity must be at least 1");
  if (capacity > (1u << 30)) return error(Code::kInvalidArgument, "flow table capacity {} exceeds 2^30", capacity);
  std::unique_ptr<FlowTable> t(new FlowTable());
  t->capacity_ = std::bit_ceil(capacity);
  t->index_mask_ = t->capacity_ * 2 - 1;
  t->idle_ns_ = idle_ns;
  t->index_.assign(static_cast<size_t>(t->capacity_) * 2, Slot{});
  t->hashes_.assign(t->capacity_, 0);
  t->keys_.resize(t->capacity_);
  t->state_.resize(t->capacity_);
  t->in_flight_ = std::make_unique<std::atomic<uint32_t>[]>(t->capacity_);
  t->used_.assign(t->capacity_, 0);
  t->free_ids_.resize(t->capacity_);
  for (uint32_t i = 0; i < t->capacity_; ++i) t->free_ids_[i] = t->capacity_ - 1 - i;
  return t;
}

size_t FlowTable::bytes_per_flow() {
  return sizeof(FlowKey) + sizeof(FlowState) + sizeof(uint32_t) /*hash*/ + 2 * sizeof(Slot) /*index*/ +
         sizeof(std::atomic<uint32_t>) + 1 /*used*/ + sizeof(uint32_t) /*free list*/;
}

uint32_t FlowTable::find(const FlowKey& key, uint32_t hash) const {
  for (uint32_t i = hash & index_mask_;; i = (i + 1) & index_mask_) {
    Slot sl = index_[i];
    if (sl.id == kNoFlow) return kNoFlow;
    if (sl.hash == hash && keys_[sl.id] == key) return sl.id;
  }
}

uint32_t FlowTable::insert(const FlowKey& key, uint32_t hash, uint64_t now_ns, bool* inserted, uint32_t empty) {
  if (free_ids_.empty()) {
    // Full: try to make room by ageing a slice of the table, then look for the slot again (expiring moves slots).
    if (expire(now_ns, std::min<uint32_t>(capacity_, 1024)) == 0) {
      full_events_.store(full_events_.load(std::memory_order_relaxed) + 1, std::memory_order_relaxed);
      return kNoFlow;
    }
    return lookup_or_insert(key, hash, now_ns, inserted);
  }
  uint32_t id = free_ids_.back();
  free_ids_.pop_back();
  index_[empty] = {id, hash};
  hashes_[id] = hash;
  keys_[id] = key;
  state_[id] = FlowState{};
  state_[id].last_seen_ns = now_ns;
  in_flight_[id].store(0, std::memory_order_relaxed);
  used_[id] = 1;
  ++size_;
  if (inserted != nullptr) *inserted = true;
  return id;
}

void FlowTable::erase(uint32_t id) {
  // Find the index slot, then backward-shift the probe run so lookups never cross a hole.
  uint32_t i = hashes_[id] & index_mask_;
  while (index_[i].id != id) i = (i + 1) & index_mask_;
  uint32_t hole = i;
  for (uint32_t j = (hole + 1) & index_mask_; index_[j].id != kNoFlow; j = (j + 1) & index_mask_) {
    uint32_t home = index_[j].hash & index_mask_;
    // Move j into the hole when its home is not in (hole, j] cyclically.
    bool between = hole <= j ? (home > hole && home <= j) : (home > hole || home <= j);
    if (!between) {
      index_[hole] = index_[j];
      hole = j;
    }
  }
  index_[hole] = Slot{};
  used_[id] = 0;
  free_ids_.push_back(id);
  --size_;
}

uint32_t FlowTable::expire(uint64_t now_ns, uint32_t max_scan) {
  uint32_t removed = 0;
  for (uint32_t n = 0; n < max_scan && size_ > 0; ++n) {
    uint32_t id = hand_;
    hand_ = (hand_ + 1) & (capacity_ - 1);
    if (used_[id] == 0) continue;
    if (in_flight_[id].load(std::memory_order_acquire) != 0) continue;
    if (now_ns - state_[id].last_seen_ns < idle_ns_) continue;
    erase(id);
    ++removed;
  }
  expired_total_ += removed;
  return removed;
}

}  // namespace hpr
