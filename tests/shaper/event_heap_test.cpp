// EventHeap (paper §3.1.2): heap invariants after random insert/delete, node packing, rebase.
#include <catch2/catch.hpp>

#include <algorithm>
#include <queue>
#include <random>
#include <vector>

#include "scheduler/shaper/event_heap.hpp"

using hpr::shaper::CountingEventHeap;
using hpr::shaper::EventHeap;

TEST_CASE("heap node is 8 bytes: 40 bits of ns above a 24-bit queue id", "[shaper][heap]") {
  STATIC_REQUIRE(EventHeap::kIdBits + EventHeap::kTimeBits == 64);
  EventHeap h(4);
  REQUIRE(h.memory_bytes() == size_t{5} * 8);
  REQUIRE(h.push(123456789, 0xABCDEF));
  REQUIRE(h.top_time_ns() == 123456789);
  REQUIRE(h.top_id() == 0xABCDEF);
}

TEST_CASE("heap keeps its invariant and pops in (time, id) order under random insert/delete",
          "[shaper][heap]") {
  std::mt19937_64 rng(7);
  CountingEventHeap h(5000);
  using Node = std::pair<uint64_t, uint32_t>;
  std::priority_queue<Node, std::vector<Node>, std::greater<Node>> ref;
  uint64_t now = 1000;
  for (int step = 0; step < 200000; ++step) {
    bool ins = h.empty() || (h.size() < h.capacity() && (rng() % 100) < 55);
    if (ins) {
      uint64_t t = now + rng() % 1'000'000;
      uint32_t id = static_cast<uint32_t>(rng() % 5000);
      REQUIRE(h.push(t, id));
      ref.emplace(t, id);
    } else {
      REQUIRE(h.top_time_ns() == ref.top().first);
      REQUIRE(h.top_id() == ref.top().second);
      now = std::max(now, h.top_time_ns());
      h.pop();
      ref.pop();
    }
    if (step % 997 == 0) REQUIRE(h.valid());
    REQUIRE(h.size() == ref.size());
  }
  REQUIRE(h.valid());
  REQUIRE(h.touches_total() > 0);
  REQUIRE(h.touches_beyond(8192) <= h.touches_total());
  REQUIRE(h.touches_beyond(0) == h.touches_total());
}

TEST_CASE("heap refuses a push when full", "[shaper][heap]") {
  EventHeap h(2);
  REQUIRE(h.push(1, 1));
  REQUIRE(h.push(2, 2));
  REQUIRE_FALSE(h.push(3, 3));
  REQUIRE(h.size() == 2);
}

TEST_CASE("pop_expired pops exactly the nodes due by now, in time order", "[shaper][heap]") {
  EventHeap h(10);
  for (uint32_t i = 0; i < 10; ++i) REQUIRE(h.push(uint64_t{100} * (10 - i), i));
  std::vector<uint64_t> times;
  REQUIRE(h.pop_expired(500, [&](uint32_t, uint64_t t) { times.push_back(t); }) == 5);
  REQUIRE(times == std::vector<uint64_t>{100, 200, 300, 400, 500});
  REQUIRE(h.top_time_ns() == 600);
}

TEST_CASE("times far beyond the 40-bit span rebase the epoch and stay ordered", "[shaper][heap]") {
  EventHeap h(100);
  uint64_t now = 0;
  std::mt19937_64 rng(3);
  // Walk an hour of time in 10 s steps: three rebases at least.
  for (int round = 0; round < 360; ++round) {
    now += 10'000'000'000ull;
    for (int k = 0; k < 5; ++k) REQUIRE(h.push(now + rng() % 5'000'000'000ull, static_cast<uint32_t>(k)));
    uint64_t last = 0;
    h.pop_expired(now + 3'000'000'000ull, [&](uint32_t, uint64_t t) {
      REQUIRE(t >= last);
      last = t;
    });
    REQUIRE(h.valid());
  }
  REQUIRE(h.top_time_ns() > now);
}

TEST_CASE("a node overdue by more than the span is clamped, still popped first", "[shaper][heap]") {
  EventHeap h(8);
  REQUIRE(h.push(5, 1));
  REQUIRE(h.push(7, 2));
  const uint64_t later = 2000ull * 1'000'000'000ull;  // 2000 s: beyond the 1,099 s span
  REQUIRE(h.push(later, 3));
  REQUIRE(h.valid());
  std::vector<uint32_t> ids;
  h.pop_expired(later, [&](uint32_t id, uint64_t) { ids.push_back(id); });
  REQUIRE(ids == std::vector<uint32_t>{1, 2, 3});
}
