// Rule loader: hand-made rule text (hex escapes, nocase, escapes, comments, negation, bad rules with
// line numbers), missing file, and the whole ET Open 2017 set.
#include <catch2/catch.hpp>

#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>

#include "hpr/data_dir.hpp"
#include "kernels/dpi/ac.hpp"
#include "kernels/dpi/rules.hpp"
#include <set>

using namespace hpr::dpi;

namespace {
PatternSet parse(std::string_view text) {
  PatternSet s;
  parse_rules_text(text, "t.rules", s);
  return s;
}
}  // namespace

TEST_CASE("decode_content: hex blocks and escapes") {
  CHECK(*decode_content("abc") == "abc");
  CHECK(*decode_content("|41 42|C") == "ABC");
  CHECK(*decode_content("|4142|") == "AB");
  CHECK(*decode_content("a|00|b") == std::string("a\0b", 3));
  CHECK(*decode_content("x|0d 0a|") == "x\r\n");
  CHECK(*decode_content(R"(say \"hi\"\; ok\\ \:)") == R"(say "hi"; ok\ :)");
  CHECK(*decode_content("|ff FE|") == "\xff\xfe");
  CHECK(*decode_content("|3 a20|") == ": ");  // Snort skips spaces inside hex blocks
  CHECK(decode_content("").status().code() == hpr::Code::kInvalidArgument);
  CHECK(decode_content("|4|").status().code() == hpr::Code::kInvalidArgument);
  CHECK(decode_content("|4G|").status().code() == hpr::Code::kInvalidArgument);
  CHECK(decode_content("ab|41").status().code() == hpr::Code::kInvalidArgument);
  CHECK(decode_content("ab\\").status().code() == hpr::Code::kInvalidArgument);
}

TEST_CASE("parse: contents, nocase on the preceding content, comments, negation, dedup") {
  auto s = parse(
      "# a comment line\n"
      "alert tcp any any -> any 80 (msg:\"one; two\"; content:\"GET\"; content:\"|2f|admin\"; nocase; sid:1;)\n"
      "#alert tcp any any -> any any (msg:\"off\"; content:\"disabled\"; sid:2;)\n"
      "\n"
      "alert udp any any -> any any (msg:\"neg\"; content:!\"notme\"; content:\"yes\"; sid:3;)\n"
      "alert tcp any any -> any any (msg:\"dup\"; content:\"GET\"; content:\"get\"; nocase; sid:4;)\n"
      "alert tcp any any -> any any (msg:\"esc\"; content:\"a\\\"b\\;c\\\\d\"; sid:5;)\n"
      "alert tcp any any -> any any (msg:\"cont\"; \\\n"
      "   content:\"continued\"; sid:6;)\n");
  REQUIRE(s.stats.warnings.empty());
  std::vector<std::pair<std::string, bool>> got;
  for (auto& p : s.patterns) got.emplace_back(p.bytes, p.nocase);
  std::vector<std::pair<std::string, bool>> want = {
      {"GET", false}, {"/admin", true}, {"yes", false}, {"get", true}, {"a\"b;c\\d", false}, {"continued", false}};
  CHECK(got == want);
  CHECK(s.patterns[0].first_sid == 1);
  CHECK(s.patterns[2].first_sid == 3);
  CHECK(s.stats.rules_active == 5);
  CHECK(s.stats.rules_commented == 1);
  CHECK(s.stats.negated_contents == 1);
  CHECK(s.stats.duplicates == 1);
  CHECK(s.stats.contents == 8);
}

TEST_CASE("parse: unreadable rules are reported with file and line, the rest loads") {
  auto s = parse(
      "alert tcp any any -> any any (content:\"good\"; sid:1;)\n"
      "alert tcp any any -> any any content:\"noparen\"\n"
      "alert tcp any any -> any any (content:\"|4|\"; sid:3;)\n"
      "alert tcp any any -> any any (content:\"open; sid:4;)\n"
      "alert tcp any any -> any any (content:\"\"; sid:5;)\n"
      "alert tcp any any -> any any (content:unquoted; sid:6;)\n"
      "alert tcp any any -> any any (content:\"also good\"; sid:7;)\n");
  REQUIRE(s.patterns.size() == 2);
  CHECK(s.patterns[1].bytes == "also good");
  CHECK(s.stats.rules_bad == 5);
  REQUIRE(s.stats.warnings.size() == 5);
  CHECK(s.stats.warnings[0].rfind("t.rules:2: ", 0) == 0);
  CHECK(s.stats.warnings[1].rfind("t.rules:3: ", 0) == 0);
  CHECK(s.stats.warnings[1].find("hex") != std::string::npos);
  CHECK(s.stats.warnings[2].rfind("t.rules:4: ", 0) == 0);
  CHECK(s.stats.warnings[3].rfind("t.rules:5: ", 0) == 0);
  CHECK(s.stats.warnings[4].rfind("t.rules:6: ", 0) == 0);
}

TEST_CASE("load: missing file, empty file, directory") {
  auto missing = load_rule_files({"/nonexistent/x.rules"});
  REQUIRE_FALSE(missing.is_ok());
  CHECK(missing.status().code() == hpr::Code::kNotFound);
  CHECK(missing.status().message().find("/nonexistent/x.rules") != std::string::npos);

  std::string tmp =
      (std::filesystem::temp_directory_path() / ("hpr_dpi_rules_" + std::to_string(getpid()) + ".rules")).string();
  { std::ofstream(tmp) << "# only comments\nalert tcp any any -> any any (msg:\"x\"; sid:1;)\n"; }
  auto empty = load_rule_files({tmp});
  std::remove(tmp.c_str());
  REQUIRE_FALSE(empty.is_ok());
  CHECK(empty.status().code() == hpr::Code::kInvalidArgument);

  CHECK(load_rule_dir("/nonexistent-dir").status().code() == hpr::Code::kNotFound);
}

TEST_CASE("load: all of ET Open 2017") {
  auto r = load_rule_dir(hpr::data_path("rules/et-open-2017"));
  REQUIRE(r.is_ok());
  const auto& st = r->stats;
  WARN("files " << st.files << " active rules " << st.rules_active << " commented " << st.rules_commented << " bad "
                << st.rules_bad << " contents " << st.contents << " negated " << st.negated_contents << " duplicates "
                << st.duplicates << " unique patterns " << r->patterns.size());
  for (const auto& w : st.warnings) WARN(w);
  CHECK(r->patterns.size() > 19000);
  CHECK(r->patterns.size() < 20500);
  size_t nocase = 0, one_byte = 0, ge4 = 0;
  for (const auto& p : r->patterns) {
    nocase += p.nocase;
    one_byte += p.bytes.size() == 1;
    ge4 += p.bytes.size() >= 4;
  }
  {
    std::set<std::pair<std::string, bool>> folded;
    for (const auto& p : r->patterns) {
      std::string b = p.bytes;
      if (p.nocase) for (auto& c : b) c = static_cast<char>(fold_ascii(static_cast<uint8_t>(c)));
      folded.emplace(b, p.nocase);
    }
    std::set<std::string> bytes_only;
    for (const auto& p : r->patterns) bytes_only.insert(p.bytes);
    WARN("unique with nocase folded: " << folded.size() << "; unique bytes ignoring nocase: " << bytes_only.size());
  }
  WARN("nocase " << nocase << " one-byte " << one_byte << " >=4 bytes " << ge4);
  CHECK(one_byte > 50);
  CHECK(filter_min_length(*r, 4).patterns.size() == ge4);
}
