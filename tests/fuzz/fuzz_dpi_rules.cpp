// Snort/ET rule loader (kernels/dpi/rules.hpp): parse_rules_text on arbitrary text, then decode_content on
// the same bytes as one quoted content body, then filter_min_length. Built only when kernels/dpi/ exists.
#include <cstdlib>

#include "kernels/dpi/rules.hpp"
#include "tests/fuzz/fuzz_targets.hpp"

namespace hpr::fuzz {

int dpi_rules(const uint8_t* data, size_t size) {
  std::string_view text(reinterpret_cast<const char*>(data), size);
  dpi::PatternSet set;
  dpi::parse_rules_text(text, "fuzz.rules", set);
  for (const auto& p : set.patterns)
    if (p.bytes.empty()) std::abort();  // documented: never empty
  (void)dpi::decode_content(text);
  auto f = dpi::filter_min_length(set, 4);
  for (const auto& p : f.patterns)
    if (p.bytes.size() < 4) std::abort();
  return 0;
}

}  // namespace hpr::fuzz
