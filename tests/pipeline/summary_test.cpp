// The status line (pipeline/summary.hpp): every figure over the interval between two snapshots, not since the start,
// so that a lane that went idle reads idle at once and the latency is that of the interval's packets.
#include "pipeline/summary.hpp"

#include <catch2/catch.hpp>

#include "hpr/histogram.hpp"

using namespace hpr;

namespace {

LaneSummary lane(const char* name, uint64_t packets, uint64_t batches, double utilisation) {
  LaneSummary l;
  l.name = name;
  l.packets = packets;
  l.batches = batches;
  l.mean_batch = batches ? static_cast<double>(packets) / static_cast<double>(batches) : 0;
  l.utilisation = utilisation;
  return l;
}

}  // namespace

TEST_CASE("status line: rates, latency and each lane's batch and busy share over the interval") {
  Summary prev, now;
  prev.seconds = 1;
  prev.rx_packets = prev.tx_packets = 1000;
  prev.latency_buckets.assign(LogLinear::kBuckets, 0);
  prev.latency_buckets[LogLinear::index_of(1'000'000)] = 1000;  // 1 ms each, in the first second
  // Lane a: 1000 packets in 10 batches, busy half of the first second; lane b: 500 in 2, busy 0.4 s.
  prev.lanes = {lane("a", 1000, 10, 0.5), lane("b", 500, 2, 0.4)};
  now = prev;
  now.seconds = 2;
  now.rx_packets = now.tx_packets = 1100;
  now.latency_buckets[LogLinear::index_of(10'000)] += 100;  // the second's 100 packets: 10 us each
  // Lane a: 100 more packets in 100 batches, busy 0.1 s of the second; lane b: nothing (its busy share since the start
  // falls from 40 % to 20 %, in the interval it is 0); lane c is new.
  now.lanes = {lane("a", 1100, 110, 0.3), lane("b", 500, 2, 0.2), lane("c", 30, 3, 0.05)};

  const LaneInterval a = lane_between(prev, now, 0), b = lane_between(prev, now, 1), c = lane_between(prev, now, 2);
  CHECK(a.packets == 100);
  CHECK(a.batches == 100);
  CHECK(a.util > 0.099);
  CHECK(a.util < 0.101);
  CHECK(b.packets == 0);
  CHECK(b.util == 0);
  CHECK(c.packets == 30);
  CHECK(c.batches == 3);

  const std::string line = status_line(prev, now);
  INFO(line);
  CHECK(line.find("in   0.000 Mpps") != std::string::npos);      // 100 packets in 1 s
  CHECK(line.find("p50 10 us p99 10 us") != std::string::npos);  // not the first second's 1 ms
  CHECK(line.find(" a:b1/u10%") != std::string::npos);           // not b10 (since the start) nor u30 %
  CHECK(line.find(" b:b-/u0%") != std::string::npos);            // no batch in the interval
  CHECK(line.find(" c:b10/u10%") != std::string::npos);          // new: from zero (0.05 of 2 s, all in this second)
}
