// The dpi app factory (make_app, kernels/registry.cpp) and rules that cannot be read (issue 16 item 6):
// one warning line with the count and the first five "file:line: reason" entries, never one line per bad
// rule; AppOptions::strict_rules refuses such a rule set.
#include <unistd.h>

#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>
#include <string>

#include "kernels/dpi/rules.hpp"
#include "kernels/registry.hpp"
#include "tests/common/log_capture.hpp"

using hpr::kernels::AppOptions;
using hpr::kernels::make_app;

namespace {

size_t count(const std::string& s, const std::string& what) {
  size_t n = 0;
  for (size_t at = s.find(what); at != std::string::npos; at = s.find(what, at + 1)) ++n;
  return n;
}

// One good rule, then `bad` rules with an unterminated content string (lines 2..bad+1).
std::string write_rules(int bad) {
  std::string path =
      std::filesystem::temp_directory_path() / ("hpr_dpi_factory_" + std::to_string(getpid()) + ".rules");
  std::ofstream f(path);
  f << "alert tcp any any -> any any (msg:\"good\"; content:\"hello\"; sid:1;)\n";
  for (int i = 0; i < bad; ++i)
    f << "alert tcp any any -> any any (msg:\"bad\"; content:\"open; sid:" << i + 2 << ";)\n";
  return path;
}

// Builds the dpi app over a rule file with `bad` broken rules; returns whether it built and what it logged.
std::pair<bool, std::string> build_logged(int bad, std::string& path) {
  path = write_rules(bad);
  hpr::test::LogCapture log;
  AppOptions opt;
  opt.rules = path;
  bool ok = make_app("dpi", opt).is_ok();
  std::filesystem::remove(path);
  return {ok, log.text()};
}

}  // namespace

TEST_CASE("dpi factory: a rule file with broken rules loads the rest and says so in one warning line") {
  std::string path;
  auto [ok, text] = build_logged(12, path);
  REQUIRE(ok);
  INFO(text);
  CHECK(count(text, "\n") == 1);  // one line, however many rules are bad
  CHECK_THAT(text, Catch::Contains("[warning]"));
  CHECK_THAT(text, Catch::Contains("app.rules (--rules): 12 rule(s) could not be read and were skipped: "));
  CHECK_THAT(text, Catch::Contains(path + ":2: "));
  CHECK_THAT(text, Catch::Contains(path + ":6: "));
  CHECK_THAT(text, !Catch::Contains(path + ":7: "));
  CHECK_THAT(text, Catch::Contains("(and 7 more)"));
  CHECK_THAT(text, Catch::Contains("--strict-rules"));
}

TEST_CASE("dpi factory: a clean rule file logs no warning") {
  std::string path;
  auto [ok, text] = build_logged(0, path);
  REQUIRE(ok);
  CHECK_THAT(text, !Catch::Contains("[warning]"));
}

TEST_CASE("dpi factory: strict_rules refuses a rule set with an unreadable rule, naming the first") {
  const std::string path = write_rules(3);
  AppOptions opt;
  opt.rules = path;
  opt.strict_rules = true;
  auto app = make_app("dpi", opt);
  std::filesystem::remove(path);
  REQUIRE_FALSE(app);
  CHECK(app.status().code() == hpr::Code::kInvalidArgument);
  CHECK_THAT(
      app.status().message(),
      Catch::StartsWith("app.rules (--rules): 3 rules could not be read (--strict-rules): first: " + path + ":2: "));
}

TEST_CASE("warnings_summary: count, the first few, how many more") {
  hpr::dpi::LoadStats st;
  CHECK(hpr::dpi::warnings_summary(st).empty());
  st.warnings = {"a:1: x", "a:2: y", "a:3: z"};
  CHECK(hpr::dpi::warnings_summary(st, 2) ==
        "3 rule(s) could not be read and were skipped: a:1: x; a:2: y (and 1 more)");
  CHECK(hpr::dpi::warnings_summary(st) == "3 rule(s) could not be read and were skipped: a:1: x; a:2: y; a:3: z");
}
