// Traffic generator port: size distributions (IMIX Table I), flow popularity, determinism, valid
// headers, planted patterns, rate pacing on a manual clock, Holt-Winters (LAPS eq. 1), templates,
// and configuration errors.
#include "runtime/ports/generator.hpp"

#include <algorithm>
#include <catch2/catch.hpp>
#include <cmath>
#include <cstring>
#include <functional>
#include <map>
#include <set>
#include <string>
#include <unordered_map>
#include <vector>

#include "hpr/clock.hpp"
#include "hpr/data_dir.hpp"
#include "runtime/flow.hpp"
#include "runtime/parser.hpp"
#include "runtime/pcap_file.hpp"

using namespace hpr;

namespace {

std::unique_ptr<GeneratorPort> make(const GeneratorConfig& cfg) {
  auto g = make_generator(cfg);
  INFO(g.status().to_string());
  REQUIRE(g.is_ok());
  return std::move(*g);
}

// Pulls `count` packets unpaced (or until rx_done), calls fn on each, releases them.
void pull(GeneratorPort& g, uint64_t count, const std::function<void(Packet&)>& fn, uint64_t now_ns = 0) {
  Packet pk[64];
  uint64_t seen = 0;
  while (seen < count && !g.rx_done()) {
    auto want = static_cast<uint16_t>(std::min<uint64_t>(64, count - seen));
    uint16_t got = g.rx_burst(pk, want, now_ns);
    for (uint16_t i = 0; i < got; ++i) fn(pk[i]);
    g.release(pk, got);
    seen += got;
    if (got == 0) break;
  }
}

struct FlowIndex {
  std::unordered_map<uint32_t, std::vector<std::pair<FlowKey, uint32_t>>> by_hash;
  explicit FlowIndex(const GeneratorPort& g, uint32_t flows) {
    for (uint32_t f = 0; f < flows; ++f) {
      FlowKey k = g.flow_key(f);
      by_hash[flow_hash(k)].push_back({k, f});
    }
  }
  int64_t find(const FlowKey& k) const {
    auto it = by_hash.find(flow_hash(k));
    if (it == by_hash.end()) return -1;
    for (const auto& [key, f] : it->second)
      if (key == k) return f;
    return -1;
  }
};

bool l4_checksum_ok(const Packet& p) {
  const uint8_t* ip = p.data + p.l3_off;
  uint32_t ip_len = p.l3 == L3::kIPv4 ? (ip[2] << 8 | ip[3]) : 40u + (ip[4] << 8 | ip[5]);
  uint32_t l4_len = p.l3_off + ip_len - p.l4_off;
  uint64_t sum = 0;
  auto add = [&](const uint8_t* b, uint32_t n) {
    for (uint32_t i = 0; i < n; i += 2) sum += (b[i] << 8) | (i + 1 < n ? b[i + 1] : 0);
  };
  if (p.l3 == L3::kIPv4)
    add(ip + 12, 8);
  else
    add(ip + 8, 32);
  sum += p.l4;
  sum += l4_len;
  add(p.data + p.l4_off, l4_len);
  while (sum >> 16) sum = (sum & 0xffff) + (sum >> 16);
  return sum == 0xffff;
}

}  // namespace

TEST_CASE("IMIX sizes follow Table I of the token-bucket paper", "[generator][imix]") {
  GeneratorConfig cfg;
  cfg.size_mode = SizeMode::kImix;
  cfg.tcp_share = 0.0;  // UDP/IPv4 headers fit the 28 B class: the table is reproduced exactly
  cfg.flows = 4096;
  cfg.seed = 42;
  auto g = make(cfg);
  constexpr uint64_t kN = 200000;
  std::map<uint32_t, uint64_t> ip_hist, frame_hist;
  double ip_sum = 0;
  pull(*g, kN, [&](Packet& p) {
    uint32_t ip_len = p.data[16] << 8 | p.data[17];
    ip_hist[ip_len]++;
    frame_hist[p.len]++;
    ip_sum += ip_len;
  });
  REQUIRE(g->generator_stats().generated == kN);
  CHECK(g->generator_stats().size_raised == 0);
  REQUIRE(ip_hist.size() == std::size(kImixTable));
  for (const auto& e : kImixTable) {
    double pct = 100.0 * static_cast<double>(ip_hist[e.ip_bytes]) / kN;
    INFO("IP size " << e.ip_bytes << ": " << pct << "% vs " << e.percent << "%");
    CHECK(std::abs(pct - e.percent) < 0.5);  // within 1 point (brief), 0.5 in fact (~3 sigma for 35.5 %)
    CHECK(std::abs(pct - e.percent) / e.percent < 0.10);
  }
  // Mean 514.88 B: the paper's "average packet size 515B".
  CHECK(ip_sum / kN == Approx(514.88).epsilon(0.01));
  // Frames: 14 + IP size, padded to the 60-byte minimum (no FCS).
  CHECK(frame_hist.size() == 9);
  CHECK(frame_hist.count(60) == 1);
  CHECK(frame_hist.count(1514) == 1);
  CHECK(frame_hist.count(784) == 1);
  for (auto& [len, c] : frame_hist) CHECK(len >= 60);
}

TEST_CASE("IMIX with TCP and IPv6 raises too-small sizes to the headers and counts them", "[generator][imix]") {
  GeneratorConfig cfg;
  cfg.size_mode = SizeMode::kImix;
  cfg.tcp_share = 1.0;
  cfg.flows = 1000;
  auto g = make(cfg);
  uint64_t n40 = 0;
  pull(*g, 50000, [&](Packet& p) {
    uint32_t ip_len = p.data[16] << 8 | p.data[17];
    CHECK(ip_len >= 40);
    n40 += ip_len == 40;
  });
  // 28 B datagrams cannot hold IPv4+TCP: they become 40 B (1.2 % of packets).
  double raised = static_cast<double>(g->generator_stats().size_raised) / 50000;
  CHECK(raised == Approx(0.012).margin(0.003));
  CHECK(static_cast<double>(n40) / 50000 == Approx(0.355 + 0.012).margin(0.01));
}

TEST_CASE("fixed and uniform sizes are frame lengths without FCS", "[generator][sizes]") {
  GeneratorConfig cfg;
  cfg.size_bytes = 1514;
  auto g = make(cfg);
  pull(*g, 1000, [&](Packet& p) { CHECK(p.len == 1514); });

  cfg.size_mode = SizeMode::kUniform;
  cfg.size_min_bytes = 60;
  cfg.size_max_bytes = 9000;
  cfg.ipv6_share = 0.5;
  cfg.tcp_share = 0.5;
  auto u = make(cfg);
  uint32_t lo = 99999, hi = 0;
  double sum = 0;
  pull(*u, 20000, [&](Packet& p) {
    lo = std::min<uint32_t>(lo, p.len);
    hi = std::max<uint32_t>(hi, p.len);
    sum += p.len;
  });
  CHECK(lo >= 60);
  CHECK(hi <= 9000);
  CHECK(hi > 8900);
  CHECK(sum / 20000 == Approx(4530).epsilon(0.02));
}

TEST_CASE("traffic steps change the size mix and the match rate at their times, cycled", "[generator][steps]") {
  GeneratorConfig cfg;
  cfg.patterns = {"GET /"};
  cfg.traffic_steps = {{1'000'000'000, SizeMode::kFixed, 100, 60, 1514, 0.0},
                       {1'000'000'000, SizeMode::kFixed, 1500, 60, 1514, 1.0},
                       {1'000'000'000, SizeMode::kUniform, 60, 200, 300, 0.0}};
  auto g = make(cfg);
  auto sizes_at = [&](uint64_t t_ns, uint64_t planted_before) {
    std::set<uint32_t> seen;
    pull(*g, 500, [&](Packet& p) { seen.insert(p.len); }, t_ns);
    return std::make_pair(seen, g->generator_stats().planted - planted_before);
  };
  auto [a, pa] = sizes_at(0, 0);  // the first call is t = 0
  CHECK(a == std::set<uint32_t>{100});
  CHECK(pa == 0);
  auto [b, pb] = sizes_at(1'500'000'000, g->generator_stats().planted);
  CHECK(b == std::set<uint32_t>{1500});
  CHECK(pb == 500);  // every packet of the second step carries the pattern
  auto [c, pc] = sizes_at(2'999'999'999, g->generator_stats().planted);
  CHECK(*c.begin() >= 200);
  CHECK(*c.rbegin() <= 300);
  CHECK(pc == 0);
  auto [d, pd] = sizes_at(3'000'000'000, g->generator_stats().planted);  // the cycle starts again
  CHECK(d == std::set<uint32_t>{100});

  GeneratorConfig bad = cfg;
  bad.traffic_steps[1].size_bytes = 9001;
  auto e = make_generator(bad);
  REQUIRE_FALSE(e.is_ok());
  CHECK_THAT(e.status().message(), Catch::Contains("traffic step 2"));
  bad = cfg;
  bad.patterns.clear();
  CHECK_THAT(make_generator(bad).status().message(), Catch::Contains("patterns is empty"));
}

TEST_CASE("Zipf popularity fits the rank-frequency law", "[generator][zipf]") {
  for (double s : {0.8, 1.2}) {
    GeneratorConfig cfg;
    cfg.flows = 2000;
    cfg.popularity = Popularity::kZipf;
    cfg.zipf_s = s;
    cfg.ipv6_share = 0.2;
    cfg.seed = 7;
    auto g = make(cfg);
    FlowIndex idx(*g, cfg.flows);
    std::vector<uint64_t> count(cfg.flows, 0);
    constexpr uint64_t kN = 200000;
    uint64_t unknown = 0;
    pull(*g, kN, [&](Packet& p) {
      REQUIRE(parse(p) == DropReason::kNone);
      int64_t f = idx.find(flow_key(p));
      if (f < 0)
        ++unknown;
      else
        count[static_cast<size_t>(f)]++;
    });
    REQUIRE(unknown == 0);
    double hn = 0;
    for (uint32_t r = 1; r <= cfg.flows; ++r) hn += std::pow(r, -s);
    // Chi-square over the 20 top ranks plus the rest (20 degrees of freedom): 99.9th percentile 45.3.
    double chi2 = 0, rest_exp = kN, rest_obs = kN;
    for (uint32_t r = 1; r <= 20; ++r) {
      double e = kN * std::pow(r, -s) / hn;
      double o = static_cast<double>(count[r - 1]);
      chi2 += (o - e) * (o - e) / e;
      rest_exp -= e;
      rest_obs -= o;
    }
    chi2 += (rest_obs - rest_exp) * (rest_obs - rest_exp) / rest_exp;
    INFO("s = " << s << " chi2 = " << chi2);
    CHECK(chi2 < 45.3);
    // Least-squares slope of log(count) on log(rank) over ranks 1..100 is -s.
    double sx = 0, sy = 0, sxx = 0, sxy = 0;
    for (uint32_t r = 1; r <= 100; ++r) {
      double x = std::log(r), y = std::log(static_cast<double>(count[r - 1]));
      sx += x;
      sy += y;
      sxx += x * x;
      sxy += x * y;
    }
    double slope = (100 * sxy - sx * sy) / (100 * sxx - sx * sx);
    CHECK(slope == Approx(-s).margin(0.06));
  }
}

TEST_CASE("uniform popularity spreads over every flow", "[generator][uniform]") {
  GeneratorConfig cfg;
  cfg.flows = 1000;
  cfg.tcp_share = 0.3;
  auto g = make(cfg);
  FlowIndex idx(*g, cfg.flows);
  std::vector<uint64_t> count(cfg.flows, 0);
  constexpr uint64_t kN = 100000;
  pull(*g, kN, [&](Packet& p) {
    parse(p);
    int64_t f = idx.find(flow_key(p));
    REQUIRE(f >= 0);
    count[static_cast<size_t>(f)]++;
  });
  double chi2 = 0, e = static_cast<double>(kN) / cfg.flows;
  for (auto c : count) chi2 += (c - e) * (c - e) / e;
  // 999 degrees of freedom: mean 999, sd 44.7.
  CHECK(chi2 < 999 + 5 * 44.7);
  CHECK(*std::min_element(count.begin(), count.end()) > 50);
  CHECK(*std::max_element(count.begin(), count.end()) < 160);
  // The TCP share is a share of flows.
  uint32_t tcp = 0;
  for (uint32_t f = 0; f < cfg.flows; ++f) tcp += g->flow_key(f).proto == 6;
  CHECK(tcp / 1000.0 == Approx(0.3).margin(0.05));
}

TEST_CASE("a million Zipf flows: the most popular flow gets its share", "[generator][zipf]") {
  GeneratorConfig cfg;
  cfg.flows = 1'000'000;
  cfg.popularity = Popularity::kZipf;
  cfg.zipf_s = 1.0;
  auto g = make(cfg);
  FlowKey top = g->flow_key(0);
  uint64_t hits = 0;
  constexpr uint64_t kN = 100000;
  pull(*g, kN, [&](Packet& p) {
    parse(p);
    hits += flow_key(p) == top;
  });
  double hn = 0;
  for (uint32_t r = 1; r <= cfg.flows; ++r) hn += 1.0 / r;
  double e = kN / hn;  // ~6,950
  CHECK(hits == Approx(e).margin(4 * std::sqrt(e)));
}

TEST_CASE("same seed gives the same bytes, another seed other bytes", "[generator][determinism]") {
  GeneratorConfig cfg;
  cfg.size_mode = SizeMode::kImix;
  cfg.flows = 5000;
  cfg.popularity = Popularity::kZipf;
  cfg.ipv6_share = 0.3;
  cfg.ttl_low_share = 0.1;
  cfg.patterns = {"GET /", "cmd.exe"};
  cfg.pattern_match_rate = 0.3;
  cfg.l4_checksums = true;
  cfg.rate.mode = RateMode::kConstant;
  cfg.rate.rate = 2e6;
  auto run = [&](uint64_t seed, uint64_t step_ns) {
    GeneratorConfig c = cfg;
    c.seed = seed;
    auto g = make(c);
    std::vector<uint8_t> bytes;
    Packet pk[32];
    for (uint64_t t = 0; t <= 5'000'000; t += step_ns) {
      uint16_t got = g->rx_burst(pk, 32, t);
      for (uint16_t i = 0; i < got; ++i) bytes.insert(bytes.end(), pk[i].data, pk[i].data + pk[i].len);
      g->release(pk, got);
    }
    return bytes;
  };
  auto a = run(1, 3000);
  auto b = run(1, 3000);
  auto c = run(2, 3000);
  REQUIRE(a.size() > 1'000'000);
  CHECK(a == b);
  CHECK(a != c);
  // Packet content does not depend on how the clock was sampled, only on the packet sequence.
  auto d = run(1, 1000);
  size_t common = std::min(a.size(), d.size());
  CHECK(common > 1'000'000);
  CHECK(std::equal(a.begin(), a.begin() + static_cast<long>(common), d.begin()));
}

TEST_CASE("every generated packet parses cleanly with valid checksums", "[generator][headers]") {
  GeneratorConfig cfg;
  cfg.size_mode = SizeMode::kUniform;
  cfg.size_min_bytes = 60;
  cfg.size_max_bytes = 1514;
  cfg.flows = 10000;
  cfg.ipv6_share = 0.25;
  cfg.tcp_share = 0.5;
  cfg.ttl = 17;
  cfg.ttl_low_share = 0.05;
  cfg.l4_checksums = true;
  auto g = make(cfg);
  uint64_t v4 = 0, v6 = 0, tcp = 0, udp = 0, ttl1 = 0, n = 0;
  pull(*g, 30000, [&](Packet& p) {
    ++n;
    REQUIRE(parse(p) == DropReason::kNone);
    REQUIRE((p.l3 == L3::kIPv4 || p.l3 == L3::kIPv6));
    REQUIRE((p.l4 == 6 || p.l4 == 17));
    const uint8_t* ip = p.data + p.l3_off;
    uint8_t ttl = p.l3 == L3::kIPv4 ? ip[8] : ip[7];
    CHECK((ttl == 17 || ttl == 1));
    ttl1 += ttl == 1;
    if (p.l3 == L3::kIPv4) {
      ++v4;
      CHECK(ip_checksum(ip, 20) == 0);
      CHECK((ip[2] << 8 | ip[3]) == p.len - 14);
    } else {
      ++v6;
      CHECK((ip[4] << 8 | ip[5]) == p.len - 54);
    }
    if (p.l4 == 17) {
      ++udp;
      const uint8_t* u = p.data + p.l4_off;
      CHECK((u[4] << 8 | u[5]) == p.payload_len + 8);
    } else {
      ++tcp;
    }
    CHECK(p.payload_off + p.payload_len == p.len);
    CHECK(l4_checksum_ok(p));
  });
  CHECK(v6 / double(n) == Approx(0.25).margin(0.05));
  CHECK(tcp / double(n) == Approx(0.5).margin(0.05));
  CHECK(ttl1 / double(n) == Approx(0.05).margin(0.006));
  CHECK(ttl1 == g->generator_stats().ttl_low);
  PortStats st = g->stats();
  CHECK(st.rx_packets == n);
}

TEST_CASE("planted DPI patterns appear at the chosen match rate", "[generator][patterns]") {
  GeneratorConfig cfg;
  cfg.size_bytes = 1514;
  cfg.patterns = {"GET /index.html", "SELECT * FROM users", std::string("\x90\x90\x90\x90\xcc", 5), "xx"};
  cfg.pattern_match_rate = 0.25;
  auto g = make(cfg);
  constexpr uint64_t kN = 40000;
  uint64_t with = 0;
  std::vector<uint64_t> per(cfg.patterns.size(), 0);
  pull(*g, kN, [&](Packet& p) {
    REQUIRE(parse(p) == DropReason::kNone);
    std::string_view pay(reinterpret_cast<const char*>(p.payload()), p.payload_len);
    int found = 0;
    for (size_t i = 0; i < cfg.patterns.size(); ++i) {
      if (pay.find(cfg.patterns[i]) != std::string_view::npos) {
        ++found;
        per[i]++;
      }
    }
    CHECK(found <= 1);
    with += found > 0;
  });
  // The payload pool is scrubbed of the patterns: every match is a planted one.
  CHECK(with == g->generator_stats().planted);
  CHECK(with / double(kN) == Approx(0.25).margin(0.01));
  for (auto c : per) CHECK(c / double(with) == Approx(0.25).margin(0.03));

  // Patterns that do not fit the payload are counted, not planted.
  GeneratorConfig small;
  small.size_bytes = 60;
  small.tcp_share = 0;
  small.patterns = {std::string(100, 'A')};
  small.pattern_match_rate = 0.5;
  auto s = make(small);
  pull(*s, 1000, [](Packet&) {});
  CHECK(s->generator_stats().planted == 0);
  CHECK(s->generator_stats().pattern_no_fit == Approx(500).margin(80));
}

TEST_CASE("constant rate pacing on a manual clock", "[generator][rate]") {
  GeneratorConfig cfg;
  cfg.rate.mode = RateMode::kConstant;
  cfg.rate.rate = 1e6;  // 1 Mpps
  auto g = make(cfg);
  ManualClock clk(5'000'000'000ull);  // origin is the first call's now_ns
  Packet pk[64];
  uint64_t total = 0;
  for (int i = 0; i <= 1500; ++i) {  // 7 us steps: 7 packets due per step
    uint16_t got = g->rx_burst(pk, 64, clk.now_ns());
    g->release(pk, got);
    total += got;
    uint64_t t = clk.now_ns() - 5'000'000'000ull;
    REQUIRE(total == t / 1000);  // floor(1e6 pps × t)
    clk.advance_ns(7000);
  }
  CHECK(total == 10500);

  SECTION("a late caller catches up, a burst at a time") {
    clk.advance_ns(1'000'000);  // 1 ms silence: 1000 due
    uint64_t got_total = 0;
    for (int i = 0; i < 100; ++i) {
      uint16_t got = g->rx_burst(pk, 64, clk.now_ns());
      g->release(pk, got);
      got_total += got;
    }
    CHECK(total + got_total == (clk.now_ns() - 5'000'000'000ull) / 1000);
  }
}

TEST_CASE("bits per second pacing counts frame bytes plus the wire overhead", "[generator][rate]") {
  for (uint32_t ovh : {0u, 24u}) {
    GeneratorConfig cfg;
    cfg.size_bytes = 1000;
    cfg.rate.mode = RateMode::kConstant;
    cfg.rate.unit = RateUnit::kBitsPerSecond;
    cfg.rate.rate = 1e9;
    cfg.rate.wire_overhead_bytes = ovh;
    auto g = make(cfg);
    Packet pk[64];
    uint64_t total = 0;
    for (uint64_t t = 0; t <= 8'000'000; t += 10'000) {
      uint16_t got = g->rx_burst(pk, 64, t);
      g->release(pk, got);
      total += got;
    }
    // 1 Gb/s for 8 ms = 8e6 bits: 1000 frames of 8000 bits, or 976 of 8192 bits with overhead.
    CHECK(total == (ovh == 0 ? 1000u : 976u));
  }
}

TEST_CASE("steps profile: counts per step, end, loop, backlog cap", "[generator][rate]") {
  GeneratorConfig cfg;
  cfg.rate.mode = RateMode::kSteps;
  cfg.rate.steps = {{1'000'000, 1e6}, {2'000'000, 0.5e6}};  // 1 ms at 1 Mpps, 2 ms at 0.5 Mpps
  auto count_until = [](GeneratorPort& g, uint64_t from, uint64_t to, uint64_t step) {
    Packet pk[256];
    uint64_t total = 0;
    for (uint64_t t = from; t <= to; t += step) {
      uint16_t got = g.rx_burst(pk, 256, t);
      g.release(pk, got);
      total += got;
    }
    return total;
  };
  SECTION("no loop: 1000 + 1000 packets, then done") {
    auto g = make(cfg);
    CHECK(count_until(*g, 0, 1'000'000, 10'000) == 1000);
    CHECK(!g->rx_done());
    CHECK(count_until(*g, 1'010'000, 2'990'000, 10'000) == 995);
    CHECK(!g->rx_done());
    CHECK(count_until(*g, 3'000'000, 4'000'000, 10'000) == 5);
    CHECK(g->rx_done());  // the steps are over and their packets are out
  }
  SECTION("loop") {
    cfg.rate.loop_steps = true;
    auto g = make(cfg);
    CHECK(count_until(*g, 0, 6'000'000, 10'000) == 4000);
    CHECK(count_until(*g, 6'010'000, 7'000'000, 10'000) == 1000);
  }
  SECTION("max_backlog skips old debt and counts it") {
    cfg.rate.max_backlog = 10;
    auto g = make(cfg);
    Packet pk[256];
    CHECK(g->rx_burst(pk, 256, 0) == 0);
    uint16_t got = g->rx_burst(pk, 256, 1'000'000);  // 1000 due, 10 allowed
    g->release(pk, got);
    CHECK(got == 10);
    CHECK(g->generator_stats().skipped_units == Approx(990));
    CHECK(g->stats().rx_missed == 990);  // a line-rate port's misses (the summary's port_missed)
  }
}

TEST_CASE("unpaced mode, packet limit, duration limit, pool back-pressure", "[generator][limits]") {
  GeneratorConfig cfg;
  cfg.max_packets = 1000;
  auto g = make(cfg);
  Packet pk[64];
  uint64_t total = 0;
  while (!g->rx_done()) {
    uint16_t got = g->rx_burst(pk, 64, 0);
    if (total + 64 <= 1000) CHECK(got == 64);  // unpaced: every call fills n
    g->release(pk, got);
    total += got;
  }
  CHECK(total == 1000);
  CHECK(g->rx_burst(pk, 64, 0) == 0);

  GeneratorConfig d;
  d.duration_ns = 1'000'000;
  d.rate.mode = RateMode::kConstant;
  d.rate.rate = 1e6;
  auto h = make(d);
  total = 0;
  for (uint64_t t = 100; t < 3'000'000; t += 1000) {
    uint16_t got = h->rx_burst(pk, 64, t);
    h->release(pk, got);
    total += got;
  }
  CHECK(total == 999);  // due strictly before t = duration
  CHECK(h->rx_done());

  GeneratorConfig p;
  p.pool_slots = 16;
  auto q = make(p);
  CHECK(q->rx_burst(pk, 32, 0) == 16);
  CHECK(q->stats().rx_no_buffer == 1);
  q->release(pk, 16);
  CHECK(q->rx_burst(pk, 32, 0) == 16);
  q->release(pk, 16);
}

TEST_CASE("Table IV parameter sets are the paper's", "[generator][holt-winters]") {
  auto s1 = laps_table4_set1();
  auto s2 = laps_table4_set2();
  REQUIRE(s1.size() == 4);
  REQUIRE(s2.size() == 4);
  CHECK(s1[0].a_mpps == 1.0);
  CHECK(s1[1].b_mpps_per_s == -0.025);
  CHECK(s1[2].c_mpps == 0.07);
  CHECK(s1[3].period_s == 600);
  CHECK(s1[3].sigma_mpps == 0.3);
  CHECK(s2[0].a_mpps == 1.5);
  CHECK(s2[0].period_s == 100);
  CHECK(s2[1].b_mpps_per_s == -0.02);
  CHECK(s2[2].c_mpps == 0.25);
  CHECK(s2[3].b_mpps_per_s == 0.01);
  CHECK(s2[3].period_s == 200);
  double base1 = 0, base2 = 0;
  for (auto& s : s1) base1 += s.a_mpps;
  for (auto& s : s2) base2 += s.a_mpps;
  CHECK(base1 == Approx(3.6));  // under-load
  CHECK(base2 == Approx(4.5));  // overload
}

TEST_CASE("Holt-Winters rate follows eq. 1", "[generator][holt-winters]") {
  for (auto set : {laps_table4_set1(), laps_table4_set2()}) {
    RateConfig rc;
    rc.mode = RateMode::kHoltWinters;
    rc.services = set;
    for (auto& s : rc.services) s.sigma_mpps = 0;  // deterministic part
    auto prof = RateProfile::create(rc, 1);
    REQUIRE(prof.is_ok());
    for (double t_s : {0.0, 3.25, 17.0, 40.0, 61.5, 123.0, 599.0}) {
      auto t_ns = static_cast<uint64_t>(t_s * 1e9);
      double expect = 0;
      for (uint32_t i = 0; i < set.size(); ++i) {
        const auto& s = set[i];
        double x =
            s.a_mpps + s.b_mpps_per_s * t_s + s.c_mpps * std::sin(2 * M_PI * std::fmod(t_s, s.period_s) / s.period_s);
        CHECK(prof->service_rate_at(i, t_ns) == Approx(std::max(0.0, x) * 1e6).epsilon(1e-9));
        expect += std::max(0.0, x) * 1e6;
      }
      CHECK(prof->rate_at(t_ns) == Approx(expect).epsilon(1e-9));
    }
    // The integral over a whole season of S1 (40 s in set 1): a·m + b·m²/2 (sine integrates to ~0).
    const auto& s0 = set[0];
    RateConfig one = rc;
    one.services = {s0};
    one.services[0].sigma_mpps = 0;
    auto p1 = RateProfile::create(one, 1);
    REQUIRE(p1.is_ok());
    double m = s0.period_s;
    double expect = (s0.a_mpps * m + s0.b_mpps_per_s * m * m / 2) * 1e6;
    CHECK(p1->cumulative(static_cast<uint64_t>(m * 1e9)) == Approx(expect).epsilon(1e-4));
  }
  // Noise: residuals have standard deviation sigma (service 2 of set 1: a = 1.8, sigma = 0.05, no clamping).
  RateConfig rc;
  rc.mode = RateMode::kHoltWinters;
  rc.services = laps_table4_set1();
  auto prof = RateProfile::create(rc, 99);
  REQUIRE(prof.is_ok());
  const auto& s = rc.services[1];
  double sum = 0, sum2 = 0;
  constexpr int kSteps = 20000;
  for (int k = 0; k < kSteps; ++k) {
    uint64_t t_ns = static_cast<uint64_t>(k) * rc.hw_step_ns;
    double t_s = t_ns * 1e-9;
    double det =
        s.a_mpps + s.b_mpps_per_s * t_s + s.c_mpps * std::sin(2 * M_PI * std::fmod(t_s, s.period_s) / s.period_s);
    double r = prof->service_rate_at(1, t_ns) / 1e6 - det;
    sum += r;
    sum2 += r * r;
  }
  double mean = sum / kSteps, sd = std::sqrt(sum2 / kSteps - mean * mean);
  CHECK(std::abs(mean) < 0.002);
  CHECK(sd == Approx(0.05).epsilon(0.05));
  // Time scale compresses the model: real 1 s at scale 40 is model 40 s.
  RateConfig sc = rc;
  sc.hw_time_scale = 40;
  for (auto& x : sc.services) x.sigma_mpps = 0;
  RateConfig plain = sc;
  plain.hw_time_scale = 1;
  auto a = RateProfile::create(sc, 1);
  auto b = RateProfile::create(plain, 1);
  CHECK(a->rate_at(250'000'000) == Approx(b->rate_at(10'000'000'000ull)));
}

TEST_CASE("Holt-Winters generator hands out the profile's packets and services", "[generator][holt-winters]") {
  GeneratorConfig cfg;
  cfg.flows = 1000;
  cfg.rate.mode = RateMode::kHoltWinters;
  cfg.rate.services = laps_table4_set2();
  cfg.rate.rate_scale = 1e-3;    // Mpps -> kpps: a few thousand packets per second
  cfg.rate.hw_time_scale = 100;  // a 100 s season in 1 s
  auto g = make(cfg);
  auto ref = RateProfile::create(cfg.rate, cfg.seed);
  REQUIRE(ref.is_ok());
  Packet pk[256];
  uint64_t total = 0;
  std::vector<uint64_t> per_service(4, 0);
  std::vector<double> expect_service(4, 0);
  const uint64_t step = 100'000;  // 100 us
  for (uint64_t t = 0; t <= 2'000'000'000ull; t += step) {
    uint16_t got = g->rx_burst(pk, 256, t);
    for (uint16_t i = 0; i < got; ++i) {
      per_service[pk[i].service]++;
      // Each service draws from its own flows: flow index mod 4 == service.
    }
    g->release(pk, got);
    total += got;
    REQUIRE(total == static_cast<uint64_t>(std::floor(ref->cumulative(t))));
    for (uint32_t i = 0; i < 4; ++i) expect_service[i] += ref->service_rate_at(i, t) * step * 1e-9;
  }
  CHECK(total > 5000);
  for (uint32_t i = 0; i < 4; ++i) {
    INFO("service " << i);
    CHECK(per_service[i] == Approx(expect_service[i]).epsilon(0.08));
  }
}

TEST_CASE("headers from a real capture", "[generator][templates]") {
  const std::string path = data_path("pcap/ndpi/1kxun.pcap");
  auto cap = load_capture(path);
  REQUIRE(cap.is_ok());
  std::set<std::pair<uint32_t, std::string>> capture_keys;
  for (auto& fr : cap->frames) {
    Packet p;
    p.data = fr.data();
    p.len = static_cast<uint16_t>(fr.size());
    if (parse(p) != DropReason::kNone) continue;
    FlowKey k = flow_key(p);
    capture_keys.insert({flow_hash(k), std::string(reinterpret_cast<char*>(&k), sizeof k)});
  }
  GeneratorConfig cfg;
  cfg.template_capture = path;
  cfg.size_mode = SizeMode::kImix;
  cfg.flows = 1'000'000;
  auto probe = make(cfg);
  const uint32_t T = probe->generator_stats().templates;
  REQUIRE(T > 10);
  cfg.flows = 3 * T;
  cfg.l4_checksums = true;
  auto g = make(cfg);
  std::set<std::string> all;
  for (uint32_t f = 0; f < cfg.flows; ++f) {
    FlowKey k = g->flow_key(f);
    std::string ks(reinterpret_cast<char*>(&k), sizeof k);
    all.insert(ks);
    bool in_capture = capture_keys.count({flow_hash(k), ks}) != 0;
    if (f < T)
      CHECK(in_capture);
    else
      CHECK(!in_capture);
  }
  CHECK(all.size() == cfg.flows);  // generations make distinct flows
  uint64_t v4 = 0, v6 = 0;
  pull(*g, 20000, [&](Packet& p) {
    REQUIRE(parse(p) == DropReason::kNone);
    if (p.l3 == L3::kIPv4) {
      ++v4;
      const uint8_t* ip = p.data + p.l3_off;
      CHECK(ip_checksum(ip, (ip[0] & 15u) * 4) == 0);
    } else {
      ++v6;
    }
    CHECK(l4_checksum_ok(p));
  });
  CHECK(v4 + v6 == 20000);
}

TEST_CASE("a template's later generations number their ports within its group", "[generator][templates]") {
  // A group: templates equal but for the L4 source port and the source address tail. Generation 1 of the
  // group's templates takes source ports 1024, 1025, ... (one each), so each group starts at 1024.
  GeneratorConfig cfg;
  cfg.template_capture = data_path("pcap/ndpi/1kxun.pcap");
  cfg.flows = 1'000'000;
  const uint32_t T = make(cfg)->generator_stats().templates;
  REQUIRE(T > 10);
  cfg.flows = 2 * T;
  auto g = make(cfg);
  auto group_of = [](FlowKey k) {
    k.sport = 0;
    const int tail = k.family == 4 ? 2 : 14;
    k.src[tail] = k.src[tail + 1] = 0;
    return std::string(reinterpret_cast<char*>(&k), sizeof k);
  };
  std::map<std::string, std::set<uint16_t>> ports;  // group -> generation 1's source ports
  std::map<std::string, uint32_t> size;
  for (uint32_t f = 0; f < T; ++f) {
    const std::string grp = group_of(g->flow_key(f));
    ++size[grp];
    ports[grp].insert(g->flow_key(T + f).sport);
  }
  REQUIRE(size.size() > 1);
  for (const auto& [grp, n] : size) {
    CAPTURE(n);
    REQUIRE(ports[grp].size() == n);
    CHECK(*ports[grp].begin() == 1024);
    CHECK(*ports[grp].rbegin() == 1024 + n - 1);
  }
}

TEST_CASE("bad configurations name the setting", "[generator][errors]") {
  auto expect_error = [](GeneratorConfig cfg, const std::string& needle, Code code = Code::kInvalidArgument) {
    auto g = make_generator_port(cfg);
    REQUIRE_FALSE(g.is_ok());
    INFO(g.status().to_string());
    CHECK(g.status().code() == code);
    CHECK(g.status().message().find(needle) != std::string::npos);
  };
  GeneratorConfig c;
  {
    auto x = c;
    x.flows = 0;
    expect_error(x, "flows = 0");
  }
  {
    auto x = c;
    x.flows = 1'000'001;
    expect_error(x, "flows = 1000001");
  }
  {
    auto x = c;
    x.popularity = Popularity::kZipf;
    x.zipf_s = -0.5;
    expect_error(x, "zipf_s");
  }
  {
    auto x = c;
    x.size_bytes = 59;
    expect_error(x, "size_bytes = 59");
  }
  {
    auto x = c;
    x.size_bytes = 9001;
    expect_error(x, "size_bytes = 9001");
  }
  {
    auto x = c;
    x.size_mode = SizeMode::kUniform;
    x.size_min_bytes = 100;
    x.size_max_bytes = 70;
    expect_error(x, "size_min_bytes");
  }
  {
    auto x = c;
    x.size_mode = SizeMode::kUniform;
    x.size_max_bytes = 10000;
    expect_error(x, "size_max_bytes = 10000");
  }
  {
    auto x = c;
    x.pattern_match_rate = 0.1;
    expect_error(x, "patterns is empty");
  }
  {
    auto x = c;
    x.patterns = {""};
    expect_error(x, "patterns[0] is empty");
  }
  {
    auto x = c;
    x.pattern_match_rate = 1.5;
    x.patterns = {"a"};
    expect_error(x, "pattern_match_rate");
  }
  {
    auto x = c;
    x.ipv6_share = -0.1;
    expect_error(x, "ipv6_share");
  }
  {
    auto x = c;
    x.tcp_share = 2;
    expect_error(x, "tcp_share");
  }
  {
    auto x = c;
    x.ttl = 0;
    expect_error(x, "ttl = 0");
  }
  {
    auto x = c;
    x.template_capture = "/nonexistent/x.pcap";
    expect_error(x, "template_capture", Code::kNotFound);
  }
  {
    auto x = c;
    x.rate.mode = RateMode::kConstant;
    x.rate.rate = -1;
    expect_error(x, "rate.rate");
  }
  {
    auto x = c;
    x.rate.mode = RateMode::kSteps;
    expect_error(x, "rate.steps is empty");
  }
  {
    auto x = c;
    x.rate.mode = RateMode::kSteps;
    x.rate.steps = {{0, 1}};
    expect_error(x, "steps[0].duration_ns");
  }
  {
    auto x = c;
    x.rate.mode = RateMode::kHoltWinters;
    expect_error(x, "rate.services is empty");
  }
  {
    auto x = c;
    x.rate.mode = RateMode::kHoltWinters;
    x.rate.services = laps_table4_set1();
    x.rate.services[2].period_s = 0;
    expect_error(x, "services[2].period_s");
  }
  {
    auto x = c;
    x.rate.mode = RateMode::kHoltWinters;
    x.rate.services = laps_table4_set1();
    x.flows = 3;
    expect_error(x, "flows = 3");
  }
  {
    auto x = c;
    x.pool_slots = 0;
    expect_error(x, "pool_slots");
  }
  // A good config gives a port of kind "generator".
  auto ok = make_generator_port(c);
  REQUIRE(ok.is_ok());
  CHECK((*ok)->kind() == "generator");
}
