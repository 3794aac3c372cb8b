#pragma once
// The aes app's key slots, one per FlowTable flow id (docs/crypto.md "Keys and IVs").
//
// A slot holds the connection's expanded key and two IV counters, one for each half of the flow's 32-bit
// sequence space (seq >> 31). IV = AES_K(epoch xor (le64(counter) || le64(seq))). Every counter value is
// taken once from the table's 64-bit counter (`next_counter`, starting at a random value per run):
//   * set_key (a connection starts in the slot) takes fresh counters for both halves;
//   * enter_half (the flow's sequence number reaches 2^31 or wraps to 0) takes a fresh one for that half.
// So no (key, IV input) pair repeats: within a half seq is unique, and a counter value is never handed out
// twice. The half being entered is not in use: a flow never has 2^31 packets in flight.
//
// Threads: one writer (the dispatcher, or a test) sets keys and counters; lanes read slots at the same time.
// A slot's key changes only when a new connection takes the slot, which the FlowTable allows only when the
// old one has nothing in flight; enter_half writes the counter of the half no packet in flight uses, with a
// relaxed atomic store (counter(), the lanes' read, is a relaxed atomic load). The packets that follow reach
// the lanes through the lane rings (release/acquire), so the lanes see the new values.
#include <algorithm>
#include <atomic>
#include <cstdint>
#include <vector>

#include "hpr/status.hpp"
#include "kernels/aes/aes_types.hpp"

namespace hpr::kernels::aes {

// What the device kernel gets per flow (aes.cl): 176 bytes of schedule, then le64 counter[2]. 192 bytes.
struct alignas(16) KeySlot {
  RoundKeys rk;
  uint64_t counter[2];
};
static_assert(sizeof(KeySlot) == 192);
inline constexpr uint32_t kKeySlotBytes = sizeof(KeySlot);

class KeyTable {
 public:
  // `epoch` and `first_counter` are the run's (key_source.cpp draws both at random unless the epoch is given).
  explicit KeyTable(uint32_t capacity, const KeyEpoch& epoch = {}, uint64_t first_counter = 0);
  uint32_t capacity() const { return static_cast<uint32_t>(valid_.size()); }
  const KeyEpoch& epoch() const { return epoch_; }

  // A connection starts in slot `flow` with `key`: the schedule and fresh counters for both halves.
  // kInvalidArgument when flow >= capacity.
  Status set_key(uint32_t flow, const Key& key);
  void clear_key(uint32_t flow);
  // The slot's flow keeps its key and starts a new run of IV counters for both halves (a new connection
  // with a fixed key, e.g. a "flow <id> <key>" line). No-op for an unkeyed slot.
  void restart(uint32_t flow);
  // The flow's sequence numbers enter `half` (0 or 1): a fresh counter for it. No-op for an unkeyed slot.
  void enter_half(uint32_t flow, uint32_t half);

  bool has_key(uint32_t flow) const { return flow < capacity() && valid_[flow] != 0; }
  // nullptr when the flow has no key (hot path).
  const KeySlot* slot(uint32_t flow) const { return has_key(flow) ? &slots_[flow] : nullptr; }
  // The IV counter of packet `seq` of the slot's flow.
  static uint64_t counter(const KeySlot& s, uint32_t seq) {
    // atomic_ref<const T> is C++26: the load writes nothing.
    return std::atomic_ref<uint64_t>(const_cast<uint64_t&>(s.counter[seq >> 31])).load(std::memory_order_relaxed);
  }
  // A copy of the slot for the device (the counters read as counter() does).
  KeySlot copy(uint32_t flow) const;
  uint32_t key_count() const { return count_; }
  uint64_t next_counter() const { return next_counter_; }
  // Live reloads: this table replaces `running` and hands out counter values from where it stopped (the writer's
  // thread), so that no value is handed out twice in a run.
  void continue_counters_of(const KeyTable& running) { next_counter_ = std::max(next_counter_, running.next_counter_); }

 private:
  std::vector<KeySlot> slots_;
  std::vector<uint8_t> valid_;
  KeyEpoch epoch_;
  uint64_t next_counter_;
  uint32_t count_ = 0;
};

}  // namespace hpr::kernels::aes
