#pragma once
// Fuzz entry points (issue 8). Each takes arbitrary bytes and drives one parser or loader of hpr the way
// hostile input would reach it; a crash, a sanitizer report or a broken invariant (abort) is a bug.
// The same functions run three ways:
//  * libFuzzer targets (scripts/fuzz.sh, clang, -DHPR_FUZZ=ON): fuzz_<name> executables;
//  * the ctest `fuzz_regression_test`: replays tests/fuzz/corpus/<name>/* and tests/fuzz/regressions/<name>/*;
//  * by hand: `build-fuzz/tests/fuzz/fuzz_<name> FILE...` runs single inputs.
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace hpr::fuzz {

int parser(const uint8_t* data, size_t size);        // parse + flow_key + hashes + FlowTable
int routes(const uint8_t* data, size_t size);        // route loaders: pyasn, text, gzip file
int run_config(const uint8_t* data, size_t size);    // TOML run configuration: load + validate
int pcap(const uint8_t* data, size_t size);          // pcap/pcapng through PcapReader and load_capture
int config_table(const uint8_t* data, size_t size);  // profiler configuration table: load_table + fill_store
#if HPR_FUZZ_HAVE_DPI
int dpi_rules(const uint8_t* data, size_t size);     // Snort/ET rule loader
#endif

struct Target {
  const char* name;
  int (*fn)(const uint8_t*, size_t);
};
std::vector<Target> targets();

// The bytes as a file that file-only loaders can open: a memfd, named /proc/self/fd/N (no disk I/O).
// One per process and per slot; rewritten on every call.
std::string as_file(const uint8_t* data, size_t size, int slot = 0);

}  // namespace hpr::fuzz
