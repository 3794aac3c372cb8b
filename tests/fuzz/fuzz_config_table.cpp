// The configuration table written by `hpr profile` (profiler/table/config_table.hpp): load_table on a file of
// arbitrary bytes, against a machine fingerprint, with and without allow_mismatch; a table that loads is
// then put into a ConfigStore (fill_store), as the daemon does.
#include "profiler/table/config_table.hpp"
#include "tests/fuzz/fuzz_targets.hpp"

namespace hpr::fuzz {

int config_table(const uint8_t* data, size_t size) {
  const std::string path = as_file(data, size);
  prof::Fingerprint machine;
  machine.app = "ipv4";
  machine.devices = {{"pthread-AMD EPYC", "Portable Computing Language", "OpenCL 3.0 PoCL 3.1"}};
  (void)load_table(path, machine, false);
  auto t = load_table(path, machine, true);
  if (t.is_ok()) {
    sched::ConfigStore store;
    (void)fill_store(t.value(), store);
  }
  return 0;
}

}  // namespace hpr::fuzz
