#pragma once
// --steps of ipv4_bench and ipv6_bench: the instructions per lookup of each implementation on one address set,
// counted by single-stepping (hpr/step_count.hpp) after a warm-up pass: a figure the machine's noise does not move,
// beside the timed rounds. One line per implementation on stdout and one CSV row.
#include <fmt/format.h>

#include <cstddef>
#include <functional>
#include <ostream>
#include <string>
#include <vector>

#include "hpr/step_count.hpp"

namespace hpr::bench {

struct LookupImpl {
  std::string name;
  std::function<void(size_t)> fn;  // looks up the first m addresses (m a multiple of the burst)
};

// CSV columns: addresses,impl,lookups,instructions,per_lookup. Returns false (said on stderr) if counting failed.
inline bool count_lookup_steps(const std::vector<LookupImpl>& impls, const std::string& set_name, size_t m,
                               std::ostream& csv) {
  for (const auto& im : impls) {
    im.fn(m);  // warm-up
    auto c = count_steps([&] { im.fn(m); });
    if (!c) {
      fmt::print(stderr, "--steps: {}\n", c.status().to_string());
      return false;
    }
    const double per = static_cast<double>(*c) / static_cast<double>(m);
    fmt::print("steps {:8} {:26} {} lookups, {} instructions, {:.2f} per lookup\n", set_name, im.name, m, *c, per);
    csv << fmt::format("{},{},{},{},{:.3f}\n", set_name, im.name, m, *c, per);
  }
  return true;
}

}  // namespace hpr::bench
