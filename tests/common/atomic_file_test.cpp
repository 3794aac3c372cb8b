#include <catch2/catch.hpp>

#include <sys/resource.h>
#include <sys/stat.h>

#include <csignal>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "hpr/atomic_file.hpp"

using namespace hpr;
namespace fs = std::filesystem;

namespace {
fs::path fresh_dir(const char* name) {
  fs::path d = fs::temp_directory_path() / name;
  fs::remove_all(d);
  fs::create_directories(d);
  return d;
}
std::string slurp(const fs::path& p) {
  std::ifstream in(p);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}
}  // namespace

TEST_CASE("write_file_atomic writes the whole file and leaves no temporary") {
  fs::path d = fresh_dir("hpr_atomic_ok");
  std::string p = (d / "t.json").string();
  REQUIRE(write_file_atomic(p, "one\n", "test").is_ok());
  REQUIRE(write_file_atomic(p, "two\n", "test").is_ok());
  CHECK(slurp(p) == "two\n");
  CHECK(std::distance(fs::directory_iterator(d), fs::directory_iterator()) == 1);
  fs::remove_all(d);
}

TEST_CASE("an AtomicFile not committed leaves nothing behind") {
  fs::path d = fresh_dir("hpr_atomic_abort");
  {
    auto f = AtomicFile::open((d / "x").string(), "test");
    REQUIRE(f.is_ok());
    std::fputs("partial", f->file());
  }
  CHECK(fs::is_empty(d));
  fs::remove_all(d);
}

TEST_CASE("a target that is not a regular file is refused and left alone") {
  struct stat before {};
  REQUIRE(stat("/dev/null", &before) == 0);
  Status s = write_file_atomic("/dev/null", "x", "hpr profile -o");
  CHECK(s.code() == Code::kInvalidArgument);
  CHECK(s.message().find("hpr profile -o /dev/null") != std::string::npos);
  struct stat after {};
  REQUIRE(stat("/dev/null", &after) == 0);
  CHECK(S_ISCHR(after.st_mode));
  fs::path d = fresh_dir("hpr_atomic_dir");
  CHECK(write_file_atomic(d.string(), "x", "test").code() == Code::kInvalidArgument);
  CHECK(write_file_atomic(d.string() + "/", "x", "test").code() == Code::kInvalidArgument);
  CHECK(write_file_atomic((d / "missing" / "f").string(), "x", "test").code() == Code::kIoError);
  fs::remove_all(d);
}

TEST_CASE("a failed write reports the error and keeps the old file") {
  fs::path d = fresh_dir("hpr_atomic_full");
  std::string p = (d / "keep").string();
  REQUIRE(write_file_atomic(p, "old\n", "test").is_ok());
  rlimit old{};
  getrlimit(RLIMIT_FSIZE, &old);
  auto prev = std::signal(SIGXFSZ, SIG_IGN);
  rlimit small = old;
  small.rlim_cur = 1024;  // stands in for a full disk
  REQUIRE(setrlimit(RLIMIT_FSIZE, &small) == 0);
  Status s = write_file_atomic(p, std::string(64 * 1024, 'x'), "--summary-json");
  setrlimit(RLIMIT_FSIZE, &old);
  std::signal(SIGXFSZ, prev);
  CHECK(s.code() == Code::kIoError);
  CHECK(s.message().find("--summary-json") != std::string::npos);
  CHECK(slurp(p) == "old\n");
  CHECK(std::distance(fs::directory_iterator(d), fs::directory_iterator()) == 1);
  fs::remove_all(d);
}
