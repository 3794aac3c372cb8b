// Lane (pipeline/lane.hpp) with an executor that holds its batches until told: what the lane reports while a
// batch is outstanding.
#include <catch2/catch.hpp>

#include <chrono>
#include <thread>

#include "kernels/registry.hpp"
#include "pipeline/lane.hpp"

using namespace hpr;

namespace {

// Batches stay outstanding until release() (a device that is always busy: saturated, batches in flight).
class HeldExecutor final : public Executor {
 public:
  std::string describe() const override { return "held"; }
  uint32_t slots() const override { return 2; }
  Status submit(const Packet* pkts, uint32_t n) override {
    batches_.emplace_back(pkts, pkts + n);
    return Status::ok();
  }
  Result<bool> reap(bool, std::vector<Packet>& done, const BatchFn&) override {
    if (!released_ || batches_.empty()) return false;
    done.insert(done.end(), batches_.front().begin(), batches_.front().end());
    batches_.erase(batches_.begin());
    return true;
  }
  uint32_t outstanding() const override { return static_cast<uint32_t>(batches_.size()); }
  Status adopt(std::shared_ptr<const AppVersion>, size_t) override { return Status::ok(); }
  void take_outstanding(std::vector<Packet>& out) override {
    for (auto& b : batches_) out.insert(out.end(), b.begin(), b.end());
    batches_.clear();
  }
  bool released_ = false;

 private:
  std::vector<std::vector<Packet>> batches_;
};

}  // namespace

TEST_CASE("a lane whose batches stay outstanding reports its busy time while they do, not only when it runs dry") {
  auto app = kernels::make_app("md5", {});
  REQUIRE(app.is_ok());
  auto exec = std::make_unique<HeldExecutor>();
  HeldExecutor* held = exec.get();
  Lane lane(LaneConfig{.name = "held", .batch_size = 1, .queue_size = 16}, **app, std::move(exec), 64);
  Packet p{};
  REQUIRE(lane.input().push(p));
  lane.poll();  // submits the batch: the lane is busy from now on
  REQUIRE(held->outstanding() == 1);
  std::this_thread::sleep_for(std::chrono::milliseconds(5));  // time passes (not a bound: any wait > 1 ms does)
  lane.poll();
  CHECK(held->outstanding() == 1);                       // still busy
  CHECK(lane.stats().busy_ns.load() >= 1'000'000);       // and it shows (before: 0 until the batch completed)
  held->released_ = true;
  lane.poll();
  CHECK(held->outstanding() == 0);
  CHECK(lane.stats().busy_ns.load() >= 5'000'000);
}
