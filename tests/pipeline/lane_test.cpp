// Lane (pipeline/lane.hpp) with an executor that holds its batches until told: what the lane reports while a
// batch is outstanding. And the packet store (pipeline/packet_store.hpp) whose references the lanes pass.
#include <catch2/catch.hpp>

#include <chrono>
#include <thread>

#include "kernels/registry.hpp"
#include "pipeline/lane.hpp"
#include "pipeline/packet_store.hpp"

using namespace hpr;

namespace {

// Batches stay outstanding until release() (a device that is always busy: saturated, batches in flight).
class HeldExecutor final : public Executor {
 public:
  std::string describe() const override { return "held"; }
  uint32_t slots() const override { return 2; }
  Status submit(Packet* const* refs, uint32_t n) override {
    batches_.emplace_back(refs, refs + n);
    sizes_.push_back(n);
    return Status::ok();
  }
  Result<bool> reap(bool wait, std::vector<Packet*>& done, const BatchFn&) override {
    if (!(released_ || (wait && wait_completes_)) || batches_.empty()) return false;
    done.insert(done.end(), batches_.front().begin(), batches_.front().end());
    batches_.erase(batches_.begin());
    return true;
  }
  uint32_t outstanding() const override { return static_cast<uint32_t>(batches_.size()); }
  Status adopt(std::shared_ptr<const AppVersion>, size_t) override { return Status::ok(); }
  void take_outstanding(std::vector<Packet*>& out) override {
    for (auto& b : batches_) out.insert(out.end(), b.begin(), b.end());
    batches_.clear();
  }
  bool released_ = false;
  bool wait_completes_ = false;  // reap(wait = true) returns the oldest, as a real device's does once it is done
  std::vector<uint32_t> sizes_;  // of every batch submitted

 private:
  std::vector<std::vector<Packet*>> batches_;
};

}  // namespace

TEST_CASE("a lane whose batches stay outstanding reports its busy time while they do, not only when it runs dry") {
  auto app = kernels::make_app("md5", {});
  REQUIRE(app.is_ok());
  auto exec = std::make_unique<HeldExecutor>();
  HeldExecutor* held = exec.get();
  Lane lane(LaneConfig{.name = "held", .batch_size = 1, .queue_size = 16}, **app, std::move(exec), 64);
  Packet pkt{};
  Packet* p = &pkt;
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

TEST_CASE("a batch that reaches its timeout while every slot is busy keeps filling until a slot frees") {
  // A device that is always busy (a GPU under load): the batch could not run sooner, so it grows to what arrives
  // meanwhile, up to its size, instead of waiting for a slot at the timeout's size.
  auto app = kernels::make_app("md5", {});
  REQUIRE(app.is_ok());
  auto exec = std::make_unique<HeldExecutor>();
  HeldExecutor* held = exec.get();
  held->wait_completes_ = true;
  Lane lane(LaneConfig{.name = "held", .batch_size = 8, .batch_timeout_ns = 1, .queue_size = 64}, **app,
            std::move(exec), 64);
  Packet pkt{};
  Packet* p = &pkt;  // the lane passes references; one packet stands for each
  for (int b = 0; b < 2; ++b) {  // two batches in flight: both slots busy
    REQUIRE(lane.input().push(p));
    std::this_thread::sleep_for(std::chrono::microseconds(10));
    lane.poll();
    lane.poll();
  }
  REQUIRE(held->outstanding() == 2);
  for (int i = 0; i < 5; ++i) REQUIRE(lane.input().push(p));
  lane.poll();
  std::this_thread::sleep_for(std::chrono::microseconds(10));  // past the timeout
  lane.poll();
  CHECK(held->sizes_.size() == 2);  // not submitted at 5 (before: waited for the oldest, then ran 5)
  CHECK(held->outstanding() == 2);
  for (int i = 0; i < 3; ++i) REQUIRE(lane.input().push(p));
  lane.poll();  // full: waits for the oldest and runs all 8
  REQUIRE(held->sizes_.size() == 3);
  CHECK(held->sizes_[2] == 8);
}

TEST_CASE("the packet store lends each descriptor once, holding a copy, and lends again what egress gives back") {
  PacketStore store(3);
  Packet p{};
  p.len = 60;
  Packet* a = store.take(p);
  p.len = 61;
  Packet* b = store.take(p);
  Packet* c = store.take(p);
  REQUIRE(a != nullptr);
  REQUIRE(b != nullptr);
  REQUIRE(c != nullptr);
  CHECK(a != b);
  CHECK(b != c);
  CHECK(a != c);
  CHECK(a->len == 60);  // a copy, taken when lent
  CHECK(b->len == 61);
  CHECK(store.take(p) == nullptr);  // all three are out: the caller waits or counts the packet dropped
  store.give_back(&b, 1);           // egress's side (a ring)
  Packet* again = store.take(p);
  CHECK(again == b);
  CHECK(store.take(p) == nullptr);
  store.give_back_here(c);  // the dispatcher's own (a packet it did not hand on)
  CHECK(store.take(p) == c);
  Packet* both[2] = {a, c};
  store.give_back(both, 2);
  Packet* x = store.take(p);
  Packet* y = store.take(p);
  CHECK(((x == a && y == c) || (x == c && y == a)));
  CHECK(store.take(p) == nullptr);
}
