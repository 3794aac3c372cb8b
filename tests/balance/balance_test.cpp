// Tests for the CPU balancers (scheduler/balance): hand-made traffic, known answers, bad input.
#include <algorithm>
#include <catch2/catch.hpp>
#include <cstring>
#include <map>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "scheduler/balance/afd.hpp"
#include "scheduler/balance/balancer.hpp"
#include "scheduler/balance/hash.hpp"
#include "scheduler/balance/linear_hash.hpp"
#include "scheduler/balance/selection.hpp"

using namespace hpr::balance;

namespace {

PacketMeta flow_packet(uint32_t i, uint8_t service = 0) {
  PacketMeta p;
  p.tuple = FiveTuple{0x0a000000u + i * 7919u, 0xc0a80001u + (i % 13), static_cast<uint16_t>(1024 + i % 50000),
                      static_cast<uint16_t>(80 + i % 3), static_cast<uint8_t>(i % 2 ? 6 : 17)};
  p.flow_hash = crc32(p.tuple);
  p.flow_id = i;
  p.bytes = 64;
  p.service = service;
  return p;
}

struct Lanes {
  explicit Lanes(uint32_t n, uint32_t cap = 32, uint32_t flow_slots = 1u << 16) : lanes(n), pending(flow_slots, 0) {
    for (auto& l : lanes) l.capacity = cap;
  }
  LaneTable table(uint64_t now = 0) { return LaneTable{lanes, pending, now}; }
  void clear() {
    for (auto& l : lanes) l.queued = 0;
    std::fill(pending.begin(), pending.end(), 0);
  }
  std::vector<LaneState> lanes;
  std::vector<uint32_t> pending;
};

std::unique_ptr<Balancer> make(std::string_view name, BalancerConfig cfg) {
  auto r = make_balancer(name, cfg);
  REQUIRE(r.is_ok());
  return std::move(r).value();
}

// Lane of each flow 0..n-1 (one packet each, queues cleared after each so nothing is pending).
std::vector<uint16_t> lanes_of(Balancer& b, Lanes& st, uint32_t flows) {
  std::vector<uint16_t> out(flows);
  for (uint32_t i = 0; i < flows; ++i) {
    PacketMeta p = flow_packet(i);
    uint16_t lane;
    auto t = st.table();
    b.assign({&p, 1}, t, {&lane, 1});
    out[i] = lane;
    st.clear();
  }
  return out;
}

}  // namespace

TEST_CASE("crc16 and crc32 known answers", "[hash]") {
  const char* s = "123456789";
  std::span<const uint8_t> bytes(reinterpret_cast<const uint8_t*>(s), 9);
  CHECK(crc16(bytes) == 0xBB3D);
  CHECK(crc32(bytes) == 0xCBF43926u);
  CHECK(crc32(std::span<const uint8_t>{}) == 0u);
  // eq. 2 by hand: A*((A*T+B) xor D)+B mod 2^31
  uint32_t T = 3, D = 0x1234567;
  uint32_t want = (kHrwA * ((kHrwA * T + kHrwB) ^ D) + kHrwB) % (1u << 31);
  CHECK(hrw_weight(T, D) == want);
  CHECK(hrw_weight(T, D | 0x80000000u) == want);  // digest is 31 bits
  CHECK(fast_ln(1.0f) == Approx(0.0).margin(1e-6));
  for (float x : {1e-6f, 0.01f, 0.3f, 0.5f, 0.70710f, 0.9f, 0.999f, 0.99999f})
    CHECK(fast_ln(x) == Approx(std::log(x)).epsilon(1e-4));
}

TEST_CASE("hash policies are stable: same flow, same lane, across bursts and instances", "[hash]") {
  for (auto name : {"crc16", "crc32", "hrw", "whrw"}) {
    BalancerConfig cfg;
    cfg.lanes = 8;
    auto a = make(name, cfg);
    auto b = make(name, cfg);
    Lanes sa(8), sb(8);
    auto la = lanes_of(*a, sa, 5000);
    auto la2 = lanes_of(*a, sa, 5000);
    auto lb = lanes_of(*b, sb, 5000);
    CHECK(la == la2);
    CHECK(la == lb);
    std::set<uint16_t> used(la.begin(), la.end());
    CHECK(used.size() == 8);  // every lane gets flows
  }
}

TEST_CASE("HRW and map tables move ~1/n of the flows when a lane is added or removed", "[hrw]") {
  const uint32_t flows = 20000;
  for (auto name : {"hrw", "whrw", "crc16", "crc32"}) {
    INFO(name);
    BalancerConfig cfg;
    cfg.lanes = 8;
    cfg.map_table_size = 1024;
    auto b = make(name, cfg);
    Lanes st8(8);
    auto before = lanes_of(*b, st8, flows);
    REQUIRE(b->set_lanes(9).is_ok());
    Lanes st9(9);
    auto after = lanes_of(*b, st9, flows);
    uint32_t moved = 0;
    for (uint32_t i = 0; i < flows; ++i)
      if (before[i] != after[i]) {
        ++moved;
        CHECK(after[i] == 8);  // only to the new lane
      }
    CHECK(static_cast<double>(moved) / flows == Approx(1.0 / 9).margin(0.02));
    REQUIRE(b->set_lanes(8).is_ok());
    auto back = lanes_of(*b, st8, flows);
    uint32_t moved_back = 0;
    for (uint32_t i = 0; i < flows; ++i) {
      if (back[i] != after[i]) {
        ++moved_back;
        CHECK(after[i] == 8);  // only the removed lane's flows move
      }
    }
    CHECK(moved_back == std::count(after.begin(), after.end(), 8));
  }
  // a disabled lane: only its flows move (HRW)
  BalancerConfig cfg;
  cfg.lanes = 8;
  auto b = make("hrw", cfg);
  Lanes st(8);
  auto before = lanes_of(*b, st, flows);
  st.lanes[3].enabled = false;
  auto after = lanes_of(*b, st, flows);
  for (uint32_t i = 0; i < flows; ++i) {
    CHECK(after[i] != 3);
    if (before[i] != 3) CHECK(after[i] == before[i]);
  }
}

TEST_CASE("weighted HRW shares are within a few percent of the weights", "[hrw]") {
  BalancerConfig cfg;
  cfg.lanes = 4;
  cfg.lane_weights = {1, 2, 3, 4};
  auto b = make("whrw", cfg);
  Lanes st(4);
  const uint32_t flows = 40000;
  auto l = lanes_of(*b, st, flows);
  for (uint16_t j = 0; j < 4; ++j) {
    double share = static_cast<double>(std::count(l.begin(), l.end(), j)) / flows;
    CHECK(share == Approx((j + 1) / 10.0).margin(0.02));
  }
  // plain HRW: equal shares
  cfg.lane_weights.clear();
  auto h = make("hrw", cfg);
  auto lh = lanes_of(*h, st, flows);
  for (uint16_t j = 0; j < 4; ++j)
    CHECK(static_cast<double>(std::count(lh.begin(), lh.end(), j)) / flows == Approx(0.25).margin(0.03));
}

TEST_CASE("AFD finds planted elephants and ignores mice", "[afd]") {
  auto r = AggressiveFlowDetector::create(AfdConfig{16, 512, 4, 1, 0});
  REQUIRE(r.is_ok());
  auto afd = std::move(r).value();
  std::mt19937 rng(7);
  // 16 elephants (ids 1..16) each 2.5% of the packets; 40% of packets are mice from 50,000 flows.
  std::uniform_real_distribution<double> u(0, 1);
  std::uniform_int_distribution<uint32_t> mouse(1000, 51000);
  std::uniform_int_distribution<uint32_t> elephant(1, 16);
  for (int i = 0; i < 200000; ++i) afd.observe(u(rng) < 0.6 ? elephant(rng) : mouse(rng));
  auto top = afd.aggressive_flows();
  REQUIRE(top.size() == 16);
  for (auto k : top) CHECK((k >= 1 && k <= 16));
  CHECK_FALSE(afd.is_aggressive(1000));
  // a mouse seen twice never enters the AFC once it is full of elephants
  afd.observe(999999);
  afd.observe(999999);
  CHECK_FALSE(afd.is_aggressive(999999));
  // sampling: still finds them
  auto s = std::move(AggressiveFlowDetector::create(AfdConfig{16, 512, 4, 8, 0})).value();
  for (int i = 0; i < 200000; ++i) s.observe(u(rng) < 0.6 ? elephant(rng) : mouse(rng));
  auto st = s.aggressive_flows();
  CHECK(std::count_if(st.begin(), st.end(), [](uint32_t k) { return k >= 1 && k <= 16; }) >= 15);
  // bad settings
  CHECK_FALSE(AggressiveFlowDetector::create(AfdConfig{0, 512, 4, 1, 0}).is_ok());
  CHECK_FALSE(AggressiveFlowDetector::create(AfdConfig{16, 510, 4, 1, 0}).is_ok());
  CHECK_FALSE(AggressiveFlowDetector::create(AfdConfig{16, 512, 4, 0, 0}).is_ok());
}

TEST_CASE("linear hashing moves only the split bucket's flows", "[linear]") {
  auto r = LinearHashTable::create({10, 11, 12, 13});
  REQUIRE(r.is_ok());
  auto t = std::move(r).value();
  std::vector<uint32_t> keys(20000);
  for (uint32_t i = 0; i < keys.size(); ++i) keys[i] = crc16(flow_packet(i).tuple);
  for (int step = 0; step < 6; ++step) {
    std::vector<uint32_t> before;
    for (auto k : keys) before.push_back(t.bucket(k));
    uint32_t p = t.split_pointer();
    uint32_t new_bucket = t.size();
    t.grow(static_cast<uint16_t>(20 + step));
    uint32_t moved = 0;
    for (size_t i = 0; i < keys.size(); ++i) {
      uint32_t b = t.bucket(keys[i]);
      if (b != before[i]) {
        ++moved;
        CHECK(before[i] == p);
        CHECK(b == new_bucket);
      }
    }
    CHECK(moved > 0);
  }
  CHECK(t.size() == 10);
  CHECK(t.round() == 1);
  CHECK(t.split_pointer() == 2);
  // Fig. 6 by hand: m = 4, one split: h0 = k%4, bucket 0 split with h1 = k%8
  auto f = std::move(LinearHashTable::create({0, 1, 2, 3})).value();
  f.grow(4);
  CHECK(f.bucket(8) == 0);
  CHECK(f.bucket(12) == 4);
  CHECK(f.bucket(5) == 1);
  CHECK(f.bucket(13) == 1);
  // remove: only the removed lane's buckets and the last bucket's flows change lane
  std::vector<uint16_t> lane_before;
  for (auto k : keys) lane_before.push_back(t.lane(k));
  uint16_t last_lane = t.lanes().back();
  REQUIRE(t.remove(11).is_ok());
  for (size_t i = 0; i < keys.size(); ++i) {
    uint16_t l = t.lane(keys[i]);
    if (l != lane_before[i]) CHECK((lane_before[i] == 11 || lane_before[i] == last_lane));
  }
  CHECK(t.remove(99).code() == hpr::Code::kNotFound);
  auto one = std::move(LinearHashTable::create({5})).value();
  CHECK(one.remove(5).code() == hpr::Code::kInvalidArgument);
  CHECK_FALSE(LinearHashTable::create({}).is_ok());
}

TEST_CASE("LAP keeps w_t(a) close to f_B(a); LA and FCFS pick as defined", "[lap]") {
  SelectionConfig cfg{64, 3, 16};
  auto lap = std::move(SelectionScheduler::create("lap", cfg)).value();
  std::mt19937 rng(3);
  std::uniform_real_distribution<double> u(0, 1);
  uint32_t id = 0;
  auto draw_app = [&]() -> uint8_t {
    double x = u(rng);
    return x < 0.8 ? 0 : (x < 0.9 ? 1 : 2);
  };
  while (!lap.full()) lap.push(id++, draw_app(), 1000);
  double err = 0;
  int samples = 0;
  for (int step = 0; step < 20000; ++step) {
    auto p = lap.pick(static_cast<uint32_t>(step % 16));
    REQUIRE(p.has_value());
    lap.push(id++, draw_app(), 1000);
    if (step > 2000) {
      for (uint8_t a = 0; a < 3; ++a) err += std::abs(lap.w(a) - lap.f(a));
      ++samples;
    }
  }
  CHECK(err / samples / 3 < 0.08);
  CHECK(lap.w(0) == Approx(0.8).margin(0.15));

  // LA: oldest packet of the warm app; FCFS: oldest overall
  auto la = std::move(SelectionScheduler::create("la", SelectionConfig{8, 3, 2})).value();
  auto fc = std::move(SelectionScheduler::create("fcfs", SelectionConfig{8, 3, 2})).value();
  for (auto* s : {&la, &fc}) {
    s->push(1, 0, 10);
    s->push(2, 1, 10);
    s->push(3, 0, 10);
    s->push(4, 1, 10);
    auto a = s->pick(0);  // cold: oldest
    REQUIRE(a);
    CHECK(a->id == 1);
    CHECK(a->cold);
  }
  auto b = la.pick(0);
  CHECK(b->id == 3);  // warm for app 0
  CHECK_FALSE(b->cold);
  CHECK(fc.pick(0)->id == 2);
  CHECK_FALSE(SelectionScheduler::create("xyz", cfg).is_ok());
  CHECK_FALSE(SelectionScheduler::create("lap", SelectionConfig{0, 3, 16}).is_ok());
}

TEST_CASE("Subflow adjusts only when nothing is staged for the target and tau > threshold", "[subflow]") {
  BalancerConfig cfg;
  cfg.lanes = 4;
  cfg.burst_max = 32;
  cfg.no_reorder = false;
  auto sf = make("subflow", cfg);
  auto hrw = make("hrw", cfg);
  Lanes st(4, 8);
  // find two flows (different decision-array index) whose HRW target is the same lane
  auto base = lanes_of(*hrw, st, 200);
  uint32_t x = 0, y = 1;
  while (base[y] != base[x] || flow_packet(y).flow_hash % 32 == flow_packet(x).flow_hash % 32) ++y;
  uint16_t c = base[x];
  PacketMeta burst[2] = {flow_packet(x), flow_packet(y)};
  uint16_t out[2];
  SECTION("below the threshold: no adjustment") {
    st.lanes[c].queued = 2;  // tau = 0.25, not over
    auto t = st.table();
    sf->assign(burst, t, out);
    CHECK(out[0] == c);
    CHECK(out[1] == c);  // staged > 0 for c although tau is now 0.375
    CHECK(sf->stats().adjustments == 0);
    // next burst: nothing staged yet and tau > 0.25 -> y's subflow is moved away from c
    PacketMeta b2[1] = {flow_packet(y)};
    sf->assign(b2, t, {out, 1});
    CHECK(out[0] != c);
    CHECK(sf->stats().adjustments == 1);
  }
  SECTION("over the threshold: the first subflow is adjusted, by eq. 3 to a lane with room") {
    st.lanes[c].queued = 4;
    for (uint16_t j = 0; j < 4; ++j)
      if (j != c) st.lanes[j].queued = 8;  // full: mu = 0
    uint16_t free_lane = static_cast<uint16_t>((c + 1) % 4);
    st.lanes[free_lane].queued = 0;
    auto t = st.table();
    sf->assign(burst, t, out);
    CHECK(out[0] == free_lane);  // mu = 1 for the empty lane, 0 for the full ones
    CHECK(sf->stats().adjustments >= 1);
  }
}

TEST_CASE("migration never reorders with the rule on; counts what it would have reordered", "[reorder]") {
  // Mini discrete simulation: 4 lanes, lane 0 slow; a few elephants and mice; every tick a burst of 8
  // arrives and lane j completes one packet every (j == 0 ? 4 : 1) ticks. Egress checks per-flow order.
  for (auto name : {"afs", "laps", "subflow", "ahrw", "fcfs", "rr"}) {
    for (bool rule : {true, false}) {
      INFO(name << " no_reorder=" << rule);
      BalancerConfig cfg;
      cfg.lanes = 4;
      cfg.burst_max = 8;
      cfg.imbalance_queue = 6;
      cfg.no_reorder = rule;
      cfg.flow_slots = 1024;
      cfg.services = 1;
      auto b = make(name, cfg);
      Lanes st(4, 16, 1024);
      std::vector<std::vector<std::pair<uint32_t, uint32_t>>> q(4);  // (flow, seq)
      std::vector<uint32_t> next_seq(1024, 0), last_done(1024, 0), seen(1024, 0);
      uint64_t ooo = 0, drops = 0;
      std::mt19937 rng(11);
      std::uniform_int_distribution<uint32_t> mouse(10, 500);
      for (int tick = 0; tick < 4000; ++tick) {
        PacketMeta burst[8];
        uint16_t out[8];
        for (auto& p : burst) p = flow_packet(rng() % 10 < 6 ? rng() % 4 : mouse(rng));
        auto t = st.table(static_cast<uint64_t>(tick) * 1000);
        b->assign(burst, t, out);
        for (int i = 0; i < 8; ++i) {
          uint32_t f = burst[i].flow_id;
          if (q[out[i]].size() >= 16) {  // queue full: drop, undo the booking
            --st.lanes[out[i]].queued;
            --st.pending[f];
            ++drops;
            continue;
          }
          q[out[i]].push_back({f, ++next_seq[f]});
        }
        for (int j = 0; j < 4; ++j) {
          if (q[j].empty() || (j == 0 && tick % 4 != 0)) continue;
          auto [f, s] = q[j].front();
          q[j].erase(q[j].begin());
          --st.lanes[j].queued;
          --st.pending[f];
          if (seen[f] && s < last_done[f]) ++ooo;
          last_done[f] = std::max(last_done[f], s);
          seen[f] = 1;
        }
      }
      if (rule) {
        CHECK(ooo == 0);
        CHECK(b->stats().moves + b->stats().blocked_moves > 0);
      } else if (std::string(name) == "afs" || std::string(name) == "fcfs" || std::string(name) == "rr") {
        CHECK(b->stats().would_reorder > 0);
      }
    }
  }
}

TEST_CASE("LAPS partitions lanes by service and reallocates idle cores", "[laps]") {
  BalancerConfig cfg;
  cfg.lanes = 8;
  cfg.services = 2;
  cfg.imbalance_queue = 4;
  cfg.idle_th_ns = 10'000;
  auto b = make("laps", cfg);
  Lanes st(8, 32);
  // service 0 -> lanes 0..3, service 1 -> lanes 4..7
  for (uint32_t i = 0; i < 200; ++i) {
    PacketMeta p = flow_packet(i, static_cast<uint8_t>(i % 2));
    uint16_t lane;
    auto t = st.table();
    b->assign({&p, 1}, t, {&lane, 1});
    CHECK(lane / 4 == i % 2);
    st.clear();
  }
  // service 1 idle for 20 us (idle noticed at t=0, surplus after idle_th), service 0 overloaded
  for (uint64_t now : {0ull, 20'000ull}) {
    auto t = st.table(now);
    PacketMeta none[1];
    b->assign({none, 0}, t, {});
  }
  for (int l = 0; l < 4; ++l) st.lanes[l].queued = 10;
  PacketMeta p = flow_packet(1, 0);
  uint16_t lane;
  auto t = st.table(21'000);
  b->assign({&p, 1}, t, {&lane, 1});
  CHECK(b->stats().core_reallocations == 1);
  // bad service count
  cfg.services = 9;
  CHECK_FALSE(make_balancer("laps", cfg).is_ok());
}

TEST_CASE("unknown policy names and bad settings give clear errors", "[factory]") {
  auto r = make_balancer("hrw2", BalancerConfig{});
  REQUIRE_FALSE(r.is_ok());
  CHECK(r.status().code() == hpr::Code::kInvalidArgument);
  CHECK(r.status().message().find("unknown balancer policy 'hrw2'") != std::string::npos);
  CHECK(r.status().message().find("subflow") != std::string::npos);
  for (auto n : balancer_names()) CHECK(make_balancer(n, BalancerConfig{}).is_ok());
  BalancerConfig c;
  c.lanes = 0;
  CHECK(make_balancer("rr", c).status().message().find("'lanes'") != std::string::npos);
  c = {};
  c.flow_slots = 1000;
  CHECK(make_balancer("rr", c).status().message().find("'flow_slots'") != std::string::npos);
  c = {};
  c.lane_weights = {1, 2};
  CHECK(make_balancer("whrw", c).status().message().find("'lane_weights'") != std::string::npos);
  c = {};
  c.load_threshold = 0;
  CHECK_FALSE(make_balancer("subflow", c).is_ok());
}

TEST_CASE("5-tuple CRCs equal the byte-wise CRCs of the canonical bytes", "[hash]") {
  for (uint32_t i = 0; i < 1000; ++i) {
    auto t = flow_packet(i).tuple;
    CHECK(crc16(t) == crc16(five_tuple_bytes(t).span()));
    CHECK(crc32(t) == crc32(five_tuple_bytes(t).span()));
  }
  FiveTuple t{0x01020304u, 0x05060708u, 0x090a, 0x0b0c, 0x0d};
  auto b = five_tuple_bytes(t);
  for (int i = 0; i < 13; ++i) CHECK(b.b[i] == i + 1);
}

TEST_CASE("the per-flow decision cache never changes a decision, also after a lane is disabled", "[cache]") {
  for (auto name : {"crc16", "crc32", "hrw", "whrw", "subflow", "afs", "laps"}) {
    INFO(name);
    BalancerConfig on, off;
    on.lanes = off.lanes = 8;
    on.services = off.services = 2;
    off.flow_cache = false;
    auto a = make(name, on);
    auto b = make(name, off);
    Lanes sa(8), sb(8);
    for (int round = 0; round < 3; ++round) {
      if (round == 1) sa.lanes[5].enabled = sb.lanes[5].enabled = false;
      if (round == 2) sa.lanes[5].enabled = sb.lanes[5].enabled = true;
      for (uint32_t i = 0; i < 3000; ++i) {
        PacketMeta p = flow_packet(i, static_cast<uint8_t>(i % 2));
        uint16_t la, lb;
        auto ta = sa.table(), tb = sb.table();
        a->assign({&p, 1}, ta, {&la, 1});
        b->assign({&p, 1}, tb, {&lb, 1});
        REQUIRE(la == lb);
        if (round == 1 && std::string(name) != "laps") CHECK(la != 5);
        sa.clear();
        sb.clear();
      }
    }
  }
}

TEST_CASE("LAPS set_lanes adds lanes to the smallest service and removes lanes", "[laps]") {
  BalancerConfig cfg;
  cfg.lanes = 4;
  cfg.services = 2;
  auto b = make("laps", cfg);
  REQUIRE(b->set_lanes(5).is_ok());
  Lanes st(5);
  std::set<uint16_t> used;
  for (uint32_t i = 0; i < 2000; ++i) {
    PacketMeta p = flow_packet(i, static_cast<uint8_t>(i % 2));
    uint16_t lane;
    auto t = st.table();
    b->assign({&p, 1}, t, {&lane, 1});
    used.insert(lane);
    st.clear();
  }
  CHECK(used.size() == 5);
  REQUIRE(b->set_lanes(4).is_ok());
  CHECK(b->set_lanes(1).code() == hpr::Code::kInvalidArgument);  // fewer lanes than services
  CHECK(b->set_lanes(0).code() == hpr::Code::kInvalidArgument);
}
