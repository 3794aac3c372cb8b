#include <sys/mman.h>
#include <unistd.h>

#include <array>
#include <cstdio>
#include <cstdlib>

#include "tests/fuzz/fuzz_targets.hpp"

namespace hpr::fuzz {

std::string as_file(const uint8_t* data, size_t size, int slot) {
  static std::array<int, 4> fds = {-1, -1, -1, -1};
  int& fd = fds.at(static_cast<size_t>(slot));
  if (fd < 0) {
    fd = memfd_create("hpr-fuzz", 0);
    if (fd < 0) {
      std::perror("memfd_create");
      std::abort();
    }
  }
  if (ftruncate(fd, 0) != 0) std::abort();
  size_t done = 0;
  while (done < size) {
    ssize_t n = pwrite(fd, data + done, size - done, static_cast<off_t>(done));
    if (n <= 0) std::abort();
    done += static_cast<size_t>(n);
  }
  return "/proc/self/fd/" + std::to_string(fd);
}

std::vector<Target> targets() {
  return {
      {"parser", parser},
      {"routes", routes},
      {"run_config", run_config},
      {"pcap", pcap},
      {"config_table", config_table},
#if HPR_FUZZ_HAVE_DPI
      {"dpi_rules", dpi_rules},
#endif
  };
}

}  // namespace hpr::fuzz
