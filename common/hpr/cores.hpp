#pragma once
// The cores this process may run on (its affinity set): where the run's workers may be pinned (lanes.cores).
#include <sched.h>

#include <vector>

namespace hpr {

inline std::vector<int> allowed_cores() {
  cpu_set_t set;
  CPU_ZERO(&set);
  std::vector<int> out;
  if (sched_getaffinity(0, sizeof set, &set) == 0)
    for (int i = 0; i < CPU_SETSIZE; ++i)
      if (CPU_ISSET(i, &set)) out.push_back(i);
  return out;
}

}  // namespace hpr
