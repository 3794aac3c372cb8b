#include "hpr/data_dir.hpp"

#include <catch2/catch.hpp>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>

#include "tests/common/env_var.hpp"

using namespace hpr;
namespace fs = std::filesystem;

namespace {
// A temporary folder standing in for the checkout's data/: with rules only (as in a bare clone), or filled.
fs::path fake_checkout(const char* name, bool filled) {
  fs::path d = fs::temp_directory_path() / name;
  fs::remove_all(d);
  fs::create_directories(d / "rules/et-open-2017");
  if (filled) {
    fs::create_directories((d / kDataMarker).parent_path());
    std::ofstream(d / kDataMarker) << "x";
  }
  return d;
}

}  // namespace

TEST_CASE("data dir: $HPR_DATA_DIR wins over a filled checkout and the default") {
  const fs::path co = fake_checkout("hpr_data_dir_env", true);
  CHECK(find_data_dir("/my/data", co.string(), "/fallback") == "/my/data");
  CHECK(find_data_dir("/my/data", "", "/fallback") == "/my/data");
  fs::remove_all(co);
}

TEST_CASE("data dir: the checkout's data/ is used when it holds the data, else the configured default") {
  const fs::path filled = fake_checkout("hpr_data_dir_filled", true);
  const fs::path bare = fake_checkout("hpr_data_dir_bare", false);
  CHECK(find_data_dir(nullptr, filled.string(), "/fallback") == filled.string());
  CHECK(find_data_dir("", filled.string(), "/fallback") == filled.string());  // empty counts as unset
  CHECK(find_data_dir(nullptr, bare.string(), "/fallback") == "/fallback");   // rules only: a bare clone
  CHECK(find_data_dir(nullptr, (filled / "nowhere").string(), "/fallback") == "/fallback");
  CHECK(find_data_dir(nullptr, "", "/fallback") == "/fallback");  // -DHPR_DATA_DIR=...: checkout not searched
  // A folder where the marker file should be does not count.
  fs::remove(bare / kDataMarker);
  fs::create_directories(bare / kDataMarker);
  CHECK(find_data_dir(nullptr, bare.string(), "/fallback") == "/fallback");
  fs::remove_all(filled);
  fs::remove_all(bare);
}

TEST_CASE("data dir: data_dir() and data_path() read $HPR_DATA_DIR at run time") {
  {
    test::EnvVar env("HPR_DATA_DIR", "/tmp/hpr-data-elsewhere");
    CHECK(data_dir() == "/tmp/hpr-data-elsewhere");
    CHECK(data_path("pcap/ndpi") == "/tmp/hpr-data-elsewhere/pcap/ndpi");
  }
  {
    test::EnvVar env("HPR_DATA_DIR", nullptr);
    CHECK(data_dir() == find_data_dir(nullptr, HPR_DATA_DIR_CHECKOUT, HPR_DATA_DIR_DEFAULT));  // no share/ beside build/
    CHECK_FALSE(data_dir().empty());
  }
}

TEST_CASE("data dir: an installed hpr finds ../share/hpr/data beside its bin/") {
  // The test binary lives in build/tests/common/, so its "installed" folder is build/tests/share/hpr/data: absent.
  const fs::path exe = fs::read_symlink("/proc/self/exe");
  CHECK(installed_data_dir() == (exe.parent_path().parent_path() / "share/hpr/data").string());
  CHECK_FALSE(fs::exists(installed_data_dir()));
  // Filled, it comes before the checkout and the default (the nesting data_dir() uses).
  const fs::path inst = fake_checkout("hpr_data_dir_installed", true);
  const fs::path co = fake_checkout("hpr_data_dir_co", true);
  CHECK(find_data_dir(nullptr, inst.string(), find_data_dir(nullptr, co.string(), "/fallback")) == inst.string());
  fs::remove_all(inst);
  CHECK(find_data_dir(nullptr, inst.string(), find_data_dir(nullptr, co.string(), "/fallback")) == co.string());
  fs::remove_all(co);
}
