// The `hpr run` TOML configuration: load_run_config (toml++ and every key reader) then validate(), on a file
// of arbitrary bytes. Errors are expected; crashes, sanitizer reports or uncaught exceptions are bugs.
#include "pipeline/run_config.hpp"
#include "tests/fuzz/fuzz_targets.hpp"

namespace hpr::fuzz {

int run_config(const uint8_t* data, size_t size) {
  auto c = load_run_config(as_file(data, size));
  if (c.is_ok()) (void)validate(c.value());
  return 0;
}

}  // namespace hpr::fuzz
