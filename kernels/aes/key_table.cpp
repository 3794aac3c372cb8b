// KeyTable (see key_table.hpp).
#include "kernels/aes/key_table.hpp"

#include <algorithm>

#include "kernels/aes/aes_app.hpp"

namespace hpr::kernels::aes {
namespace {
void store(uint64_t& c, uint64_t v) { std::atomic_ref<uint64_t>(c).store(v, std::memory_order_relaxed); }
}  // namespace

KeyTable::KeyTable(uint32_t capacity, const KeyEpoch& epoch, uint64_t first_counter)
    : slots_(std::max<uint32_t>(capacity, 1)),
      valid_(std::max<uint32_t>(capacity, 1), 0),
      epoch_(epoch),
      next_counter_(first_counter) {}

Status KeyTable::set_key(uint32_t flow, const Key& key) {
  if (flow >= capacity()) return error(Code::kInvalidArgument, "flow id {} >= key table capacity {}", flow, capacity());
  slots_[flow].rk = expand_key(key);
  if (valid_[flow] == 0) ++count_;
  valid_[flow] = 1;
  restart(flow);
  return Status::ok();
}

void KeyTable::clear_key(uint32_t flow) {
  if (!has_key(flow)) return;
  valid_[flow] = 0;
  slots_[flow] = KeySlot{};
  --count_;
}

void KeyTable::restart(uint32_t flow) {
  enter_half(flow, 0);
  enter_half(flow, 1);
}

void KeyTable::enter_half(uint32_t flow, uint32_t half) {
  if (!has_key(flow)) return;
  store(slots_[flow].counter[half & 1], next_counter_++);
}

KeySlot KeyTable::copy(uint32_t flow) const {
  KeySlot s;
  s.rk = slots_[flow].rk;
  s.counter[0] = counter(slots_[flow], 0);
  s.counter[1] = counter(slots_[flow], 1u << 31);
  return s;
}

}  // namespace hpr::kernels::aes
