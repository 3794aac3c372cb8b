// Replays every seed (tests/fuzz/corpus/<target>/*) and every input a fuzzer once crashed on
// (tests/fuzz/regressions/<target>/*) through the fuzz entry points. In the asan preset this is where a
// regression shows up as a sanitizer report; in the default build, as a crash or an abort.
#include <catch2/catch.hpp>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <vector>

#include "tests/fuzz/fuzz_targets.hpp"

namespace fs = std::filesystem;

namespace {

std::vector<fs::path> files_under(const fs::path& dir) {
  std::vector<fs::path> out;
  if (!fs::is_directory(dir)) return out;
  for (const auto& e : fs::directory_iterator(dir))
    if (e.is_regular_file() && e.path().filename().string()[0] != '.') out.push_back(e.path());
  std::sort(out.begin(), out.end());
  return out;
}

std::vector<uint8_t> read_all(const fs::path& p) {
  std::ifstream f(p, std::ios::binary);
  return {std::istreambuf_iterator<char>(f), std::istreambuf_iterator<char>()};
}

}  // namespace

TEST_CASE("every fuzz target survives its seed corpus and its regressions") {
  const fs::path root = HPR_FUZZ_DIR;
  size_t total = 0;
  for (const auto& t : hpr::fuzz::targets()) {
    size_t n = 0;
    for (const char* kind : {"corpus", "regressions"}) {
      for (const auto& f : files_under(root / kind / t.name)) {
        INFO("target " << t.name << ", input " << f.string());
        auto bytes = read_all(f);
        CHECK(t.fn(bytes.data(), bytes.size()) == 0);
        ++n;
      }
    }
    INFO("target " << t.name);
    CHECK(n > 0);  // every target has seeds
    total += n;
  }
  CHECK(total >= hpr::fuzz::targets().size());
}

TEST_CASE("fuzz entry points accept the empty input and one byte") {
  const uint8_t one = 0x45;
  for (const auto& t : hpr::fuzz::targets()) {
    INFO("target " << t.name);
    CHECK(t.fn(nullptr, 0) == 0);
    CHECK(t.fn(&one, 1) == 0);
  }
}
