#pragma once
// Test helpers: the ET rule set, loaded once per test binary, and synthetic payloads with patterns planted in them.
#include <catch2/catch.hpp>

#include <random>
#include <string>
#include <vector>

#include "hpr/data_dir.hpp"
#include "kernels/dpi/rules.hpp"

namespace hpr::dpi::test {

// The ET open 2017 rules (their content: patterns), loaded once.
inline const PatternSet& et() {
  static PatternSet s = [] {
    auto r = load_rule_dir(hpr::data_path("rules/et-open-2017"));
    REQUIRE(r.is_ok());
    return std::move(*r);
  }();
  return s;
}

// Random bytes with ET patterns planted (nocase ones with random case flips).
inline std::vector<std::string> planted_payloads(const std::vector<Pattern>& p, size_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::vector<std::string> out;
  for (size_t i = 0; i < n; ++i) {
    size_t len = rng() % 1500;
    std::string s(len, '\0');
    int kind = static_cast<int>(rng() % 3);  // random bytes, ASCII text, mostly zeros
    for (auto& c : s) c = static_cast<char>(kind == 0 ? rng() % 256 : kind == 1 ? 32 + rng() % 95 : (rng() % 8 ? 0 : rng()));
    for (int j = 0, plant = static_cast<int>(rng() % 8); j < plant && len > 0; ++j) {
      const Pattern& pat = p[rng() % p.size()];
      if (pat.bytes.size() > len) continue;
      size_t at = rng() % (len - pat.bytes.size() + 1);
      for (size_t m = 0; m < pat.bytes.size(); ++m) {
        char c = pat.bytes[m];
        if (pat.nocase && (rng() & 1) && ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z'))) c ^= 0x20;
        s[at + m] = c;
      }
    }
    out.push_back(std::move(s));
  }
  return out;
}

}  // namespace hpr::dpi::test
