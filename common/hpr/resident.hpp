#pragma once
// Resident memory of this process (VmRSS in /proc/self/status), KiB; 0 when /proc cannot be read.
#include <cstdint>
#include <cstdlib>
#include <fstream>
#include <string>

namespace hpr {

inline uint64_t resident_kib() {
  std::ifstream f("/proc/self/status");
  for (std::string line; std::getline(f, line);)
    if (line.rfind("VmRSS:", 0) == 0) return std::strtoull(line.c_str() + 6, nullptr, 10);
  return 0;
}

}  // namespace hpr
