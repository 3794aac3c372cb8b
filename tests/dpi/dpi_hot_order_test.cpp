// Automaton in visit order (AcOrder, kernels/dpi/hot_order.cpp): the renumbered table gives the
// BFS table's matches (count and ids per payload) and the naive matcher's, on hand-made cases and
// on every capture payload with ET and ET >= 4, trained on half of the captures; the prefilter path
// and the app's native path with the order; the training setting's errors.
#include <catch2/catch.hpp>

#include <filesystem>
#include <fstream>

#include "hpr/data_dir.hpp"
#include "kernels/dpi/ac.hpp"
#include "kernels/dpi/dpi_app.hpp"
#include "kernels/dpi/hot_order.hpp"
#include "kernels/dpi/prefilter_matcher.hpp"
#include "kernels/runner.hpp"
#include "tests/dpi/dpi_captures.hpp"
#include "tests/dpi/dpi_payloads.hpp"

using namespace hpr::dpi;
using hpr::dpi::test::et;

namespace {

struct Scan {
  uint32_t count;
  std::vector<uint32_t> ids;
  bool operator==(const Scan&) const = default;
};

template <typename M>
Scan scan(const M& m, std::span<const uint8_t> s, uint32_t k = 8) {
  std::vector<uint32_t> ids(k, kNoId);
  const uint32_t n = m.scan(s.data(), static_cast<uint32_t>(s.size()), ids.data(), k);
  ids.resize(std::min(n, k));
  return {n, ids};
}

std::span<const uint8_t> bytes(std::string_view s) { return {reinterpret_cast<const uint8_t*>(s.data()), s.size()}; }

const std::vector<std::vector<uint8_t>>& captures() {
  static const auto v = [] {
    auto r = load_payloads(hpr::data_path("pcap/ndpi"), "test captures");
    INFO(r.status().to_string());
    REQUIRE(r.is_ok());
    return std::move(*r);
  }();
  return v;
}

AcDfa build(const std::vector<Pattern>& p, const AcOrder& o = {}) {
  auto r = AcDfa::build(p, o);
  INFO(r.status().to_string());
  REQUIRE(r.is_ok());
  return std::move(*r);
}

}  // namespace

TEST_CASE("Hot order: small sets, the root stays state 0, matches as in BFS order") {
  std::vector<Pattern> p{{"he", false, 0}, {"she", false, 0}, {"his", false, 0}, {"hers", false, 0},
                         {"Secret", false, 0}, {"xyzw", true, 0}, {"a", false, 0}};
  const std::string train = "ushers xyzw his hers shehe secret Secret aaaa";
  for (uint32_t keep : {1u, 2u, 4u, 9u}) {
    AcDfa bfs = build(p), hot = build(p, AcOrder{{bytes(train)}, keep});
    INFO("keep_depths " << keep);
    CHECK(hot.stats().states == bfs.stats().states);
    CHECK(hot.stats().train_bytes == train.size());
    CHECK(hot.stats().visit_share_1mb > 0);
    CHECK(hot.trans().size() == bfs.trans().size());
    CHECK(hot.depth_row(0) == 0);
    for (uint32_t d = 1; d <= std::min(keep, 4u); ++d) CHECK(hot.depth_row(d) == bfs.depth_row(d));
    NaiveMatcher naive(p);
    for (std::string_view s : {"ushers", "SHE sells his Secret secret", "xYzWxyzw", "", "aaaa hers", "zzz"}) {
      INFO(s);
      CHECK(scan(hot, bytes(s)) == scan(bfs, bytes(s)));
      CHECK(scan(hot, bytes(s)) == scan(naive, bytes(s)));
      CHECK(scan(hot, bytes(s), 1) == scan(bfs, bytes(s), 1));
    }
  }
}

TEST_CASE("Hot order on ET and ET >= 4: every capture payload, BFS counts and ids, the naive matcher's on a sample") {
  const auto& all = captures();
  const AcOrder order{payload_spans(all, all.size() / 2), 1};
  for (size_t min_len : {size_t{1}, size_t{4}}) {
    PatternSet ps = filter_min_length(et(), min_len);
    AcDfa bfs = build(ps.patterns), hot = build(ps.patterns, order);
    NaiveMatcher naive(ps.patterns);
    const AcStats& st = hot.stats();
    // Structural (not timing): the most visited states first hold at least BFS's share of visits.
    CHECK(st.visit_share_1mb >= st.visit_share_1mb_bfs);
    uint64_t matches = 0, naive_checked = 0;
    for (size_t i = 0; i < all.size(); ++i) {
      INFO("ET >= " << min_len << " payload " << i);
      const Scan a = scan(hot, all[i]);
      REQUIRE(a == scan(bfs, all[i]));
      if (i % 97 == 0) {  // the naive matcher is slow
        REQUIRE(a == scan(naive, all[i]));
        ++naive_checked;
      }
      matches += a.count;
    }
    WARN("ET >= " << min_len << ": " << all.size() << " payloads, " << matches << " matches (naive-checked "
                  << naive_checked << "); visits on the first 1 MB of rows: BFS " << 100 * st.visit_share_1mb_bfs
                  << "%, hot " << 100 * st.visit_share_1mb << "%");
  }
}

TEST_CASE("Hot order: the prefilter path and the app's native path give the BFS automaton's bytes") {
  const auto& all = captures();
  const AcOrder order{payload_spans(all, 0, all.size() / 4), 1};
  const auto& pc = hpr::dpi::test::all_captures();
  for (size_t min_len : {size_t{1}, size_t{4}}) {
    PatternSet ps = filter_min_length(et(), min_len);
    auto ref = DpiApp::create(ps, {.native_engine = DpiConfig::Engine::kAutomaton});
    auto pf = PrefilterMatcher::build(ps.patterns, SimdPath::kAuto, 2ull << 30, order);
    REQUIRE(ref.is_ok());
    REQUIRE(pf.is_ok());
    REQUIRE((*pf)->long_automaton() != nullptr);
    CHECK((*pf)->long_automaton()->stats().train_bytes > 0);
    const uint32_t k = (*ref)->config().max_ids;
    for (size_t c = 0; c < pc.size(); c += 3) {
      if (pc[c].pkts.empty()) continue;
      hpr::kernels::HostBatch b = hpr::kernels::gather(**ref, pc[c].pkts), x = b;
      (*ref)->run_native(b.view());
      std::fill(x.out.begin(), x.out.end(), 0xEE);
      run_native_batch(**pf, k, x.view());
      INFO("ET >= " << min_len << " " << pc[c].cap.path);
      REQUIRE(x.out == b.out);
    }
  }
  // The setting: a capture file trains both automata of the app; same bytes as BFS order.
  const std::string file = hpr::data_path("pcap/ndpi/1kxun.pcap");
  for (auto engine : {DpiConfig::Engine::kAutomaton, DpiConfig::Engine::kPrefilter}) {
    PatternSet ps = filter_min_length(et(), 4);
    auto a = DpiApp::create(ps, {.native_engine = DpiConfig::Engine::kAutomaton});
    auto h = DpiApp::create(ps, {.native_engine = engine, .automaton_train = file});
    REQUIRE(a.is_ok());
    INFO(h.status().to_string());
    REQUIRE(h.is_ok());
    CHECK((*h)->dfa().stats().train_bytes > 0);
    hpr::kernels::HostBatch x = hpr::kernels::gather(**a, pc.front().pkts), y = x;
    (*a)->run_native(x.view());
    (*h)->run_native(y.view());
    CHECK(x.out == y.out);
  }
}

TEST_CASE("Hot order: a training set that is missing or not a capture is refused, naming the setting") {
  PatternSet ps;
  ps.patterns.push_back({"abcd", false, 0});
  auto missing = DpiApp::create(ps, {.automaton_train = "/nonexistent/train.pcap"});
  REQUIRE_FALSE(missing.is_ok());
  CHECK(missing.status().code() == hpr::Code::kNotFound);
  CHECK_THAT(missing.status().message(), Catch::Contains("automaton_train") && Catch::Contains("/nonexistent/train.pcap"));
  const auto junk = std::filesystem::temp_directory_path() / "hpr_dpi_hot_order_junk.pcap";
  std::ofstream(junk) << "not a capture";
  auto bad = DpiApp::create(ps, {.native_engine = DpiConfig::Engine::kAutomaton, .automaton_train = junk.string()});
  std::filesystem::remove(junk);
  REQUIRE_FALSE(bad.is_ok());
  CHECK(bad.status().code() == hpr::Code::kInvalidArgument);
  CHECK_THAT(bad.status().message(), Catch::Contains("automaton_train"));
}
