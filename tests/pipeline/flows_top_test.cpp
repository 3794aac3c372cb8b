// hpr ctl flows top's scan (pipeline/flows_top.cpp) on a real FlowTable: known byte counts, order, contents, the
// flows the table no longer holds, the key as text.
#include <arpa/inet.h>

#include <catch2/catch.hpp>

#include "pipeline/pipeline.hpp"

using namespace hpr;

namespace {

FlowKey v4(const char* a, uint16_t ap, const char* b, uint16_t bp, uint8_t proto) {
  FlowKey k;
  k.family = 4;
  k.proto = proto;
  inet_pton(AF_INET, a, k.src);
  inet_pton(AF_INET, b, k.dst);
  k.sport = ap;
  k.dport = bp;
  return k.canonical();
}

uint32_t add(FlowTable& t, const FlowKey& k, uint64_t bytes, uint64_t packets, uint64_t now, uint8_t lane) {
  const uint32_t id = t.lookup_or_insert(k, flow_hash(k), now);
  REQUIRE(id != kNoFlow);
  t.state(id).bytes = bytes;
  t.state(id).packets = packets;
  t.state(id).lane = lane;
  return id;
}

}  // namespace

TEST_CASE("top_flows: the n flows with the most bytes, most first, with packets, lane and idle time") {
  auto t = FlowTable::create(64, 1'000'000'000);
  REQUIRE(t.is_ok());
  FlowTable& ft = **t;
  // 20 flows: flow i has (i * 7 % 20 + 1) × 1000 bytes, so the byte counts are a permutation of 1000..20000.
  for (uint16_t i = 0; i < 20; ++i)
    add(ft, v4("10.0.0.1", static_cast<uint16_t>(1000 + i), "10.0.0.2", 80, 6), (i * 7 % 20 + 1) * 1000ull, i + 1ull,
        100 + i, static_cast<uint8_t>(i % 3));
  SECTION("the 3 largest") {
    auto top = top_flows(ft, 3, 1000);
    REQUIRE(top.size() == 3);
    CHECK(top[0].bytes == 20000);
    CHECK(top[1].bytes == 19000);
    CHECK(top[2].bytes == 18000);
    // 20000 bytes: i * 7 % 20 == 19, i = 17 (119 % 20 == 19).
    CHECK(top[0].packets == 18);
    CHECK(top[0].lane == 17 % 3);
    CHECK(top[0].idle_ns == 1000 - (100 + 17));
    CHECK(top[0].key == v4("10.0.0.1", 1017, "10.0.0.2", 80, 6));
  }
  SECTION("more asked than there are: every live flow, in order") {
    auto top = top_flows(ft, 1000, 1000);
    REQUIRE(top.size() == 20);
    for (size_t i = 0; i < top.size(); ++i) CHECK(top[i].bytes == (20 - i) * 1000);
  }
  SECTION("none asked, or an empty table") {
    CHECK(top_flows(ft, 0, 1000).empty());
    auto e = FlowTable::create(16, 1);
    REQUIRE(e.is_ok());
    CHECK(top_flows(**e, 10, 0).empty());
  }
  SECTION("equal bytes: fewer packets first; expired flows are not listed") {
    auto e = FlowTable::create(16, 100);
    REQUIRE(e.is_ok());
    add(**e, v4("10.0.0.1", 1, "10.0.0.2", 2, 17), 500, 5, 0, 0);
    add(**e, v4("10.0.0.1", 3, "10.0.0.2", 4, 17), 500, 2, 0, 1);
    add(**e, v4("10.0.0.1", 5, "10.0.0.2", 6, 17), 900, 9, 100, 1);
    CHECK((*e)->expire(150, 16) == 2);  // the two flows last seen at 0 are idle for 150 >= 100 ns
    auto top = top_flows(**e, 5, 100);
    REQUIRE(top.size() == 1);
    CHECK(top[0].bytes == 900);
    add(**e, v4("10.0.0.1", 1, "10.0.0.2", 2, 17), 500, 5, 100, 0);
    add(**e, v4("10.0.0.1", 3, "10.0.0.2", 4, 17), 500, 2, 100, 1);
    top = top_flows(**e, 5, 100);
    REQUIRE(top.size() == 3);
    CHECK(top[1].packets == 2);
    CHECK(top[2].packets == 5);
  }
}

TEST_CASE("flow_key_text: protocol, endpoints, ports where the protocol has them") {
  CHECK(flow_key_text(v4("10.0.0.2", 5555, "10.0.0.1", 80, 6)) == "tcp 10.0.0.1:80 <-> 10.0.0.2:5555");
  CHECK(flow_key_text(v4("192.168.1.1", 53, "8.8.8.8", 53, 17)).starts_with("udp "));
  CHECK(flow_key_text(v4("10.0.0.1", 0, "10.0.0.2", 0, 47)) == "proto 47 10.0.0.1 <-> 10.0.0.2");
  FlowKey k6;
  k6.family = 6;
  k6.proto = 17;
  inet_pton(AF_INET6, "2001:db8::1", k6.src);
  inet_pton(AF_INET6, "2001:db8::2", k6.dst);
  k6.sport = 4000;
  k6.dport = 53;
  CHECK(flow_key_text(k6) == "udp [2001:db8::1]:4000 <-> [2001:db8::2]:53");
  CHECK(flow_key_text(FlowKey{}) == "non-ip");
}

TEST_CASE("top_flows_scan in slices (as the dispatcher runs it) gives what one scan gives") {
  auto t = FlowTable::create(4096, 1'000'000'000);
  REQUIRE(t.is_ok());
  for (uint16_t i = 0; i < 3000; ++i)
    add(**t, v4("10.1.0.1", static_cast<uint16_t>(i + 1), "10.2.0.1", 443, 6), (i * 2654435761u) % 5000, i % 7 + 1ull,
        10, 0);
  for (size_t n : {1, 10, 1000}) {
    const auto whole = top_flows(**t, n, 20);
    std::vector<TopFlow> heap;
    for (uint32_t from = 0; from < (*t)->capacity(); from += 300) top_flows_scan(**t, n, 20, from, from + 300, heap);
    top_flows_sort(heap);
    REQUIRE(heap.size() == whole.size());
    for (size_t i = 0; i < whole.size(); ++i) {
      CHECK(heap[i].key == whole[i].key);
      CHECK(heap[i].bytes == whole[i].bytes);
    }
  }
}
