#pragma once
// Selection-buffer schedulers of locality-aware-predictive-lap.txt (Wolf & Franklin): packets wait
// in a selection buffer of b slots; when processor u becomes idle the scheduler picks one of them.
//   FCFS: the oldest packet.
//   LA:   the oldest packet whose application is warm on u (a in W_t(u)); else the oldest.
//   LAP:  with a = u's warm application, the oldest packet of a if w_t(a) - 1/m < f_B(a), else the
//         oldest overall (§3), where f_B(a) = sum of t_e(p) over a's buffered packets / sum over all,
//         w_t(a) = (processors warm for a) / m.
// T-Opt (the bound) needs the whole future trace and lives in the simulator.
// §3.3 O(1) structures: one age-ordered list of all buffered packets and one per application
// (intrusive doubly linked lists over the b slots), the sums behind f_B(a) (integers, ns) and the
// warm counts behind w_t(a), all updated in O(1) when a packet enters or leaves.
// Hot path: push() and pick() do not allocate.
#include <cstdint>
#include <optional>
#include <string_view>
#include <vector>

#include "hpr/status.hpp"

namespace hpr::balance {

enum class SelectionPolicy : uint8_t { kFcfs, kLa, kLap };

struct SelectionConfig {
  uint32_t buffer = 64;      // b (>= 1)
  uint32_t apps = 3;         // k (1..255)
  uint32_t processors = 16;  // m (>= 1)
};

class SelectionScheduler {
 public:
  // Errors: kInvalidArgument for an unknown name ("fcfs", "la", "lap") or a zero/too large setting.
  static Result<SelectionScheduler> create(std::string_view name, const SelectionConfig& cfg);

  bool full() const { return size_ == cfg_.buffer; }
  uint32_t size() const { return size_; }
  // Adds a packet (caller's id, its application, estimated warm processing time t_e in ns).
  // Returns false when the buffer is full.
  bool push(uint32_t id, uint8_t app, uint64_t est_ns);
  // Processor u is idle: returns the chosen packet id (and its app), or nothing if the buffer is
  // empty. Updates u's warm application and w_t.
  struct Pick {
    uint32_t id;
    uint8_t app;
    bool cold;  // u's cache was not warm for the packet's application
  };
  std::optional<Pick> pick(uint32_t u);

  // f_B(a) and w_t(a) as defined above (tests, simulator).
  double f(uint8_t app) const {
    return total_est_ ? static_cast<double>(est_[app]) / static_cast<double>(total_est_) : 0;
  }
  double w(uint8_t app) const { return static_cast<double>(warm_count_[app]) / cfg_.processors; }
  uint8_t warm(uint32_t u) const { return warm_[u]; }
  SelectionPolicy policy() const { return policy_; }

 private:
  static constexpr uint32_t kNil = 0xffffffffu;
  static constexpr uint8_t kCold = 0xff;
  SelectionScheduler(SelectionPolicy p, const SelectionConfig& cfg);
  void unlink(uint32_t slot);

  struct Slot {
    uint32_t id = 0;
    uint64_t est_ns = 0;
    uint8_t app = 0;
    uint32_t prev = kNil, next = kNil;    // all-packets list
    uint32_t aprev = kNil, anext = kNil;  // per-application list
  };
  SelectionPolicy policy_;
  SelectionConfig cfg_;
  std::vector<Slot> slots_;
  std::vector<uint32_t> free_;
  uint32_t head_ = kNil, tail_ = kNil;
  std::vector<uint32_t> ahead_, atail_;
  std::vector<uint64_t> est_;
  uint64_t total_est_ = 0;
  std::vector<uint32_t> warm_count_;
  std::vector<uint8_t> warm_;
  uint32_t size_ = 0;
};

}  // namespace hpr::balance
