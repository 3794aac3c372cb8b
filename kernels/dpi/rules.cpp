// Snort/Suricata content extraction (see rules.hpp for the accepted syntax).
#include "kernels/dpi/rules.hpp"

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <unordered_map>

namespace hpr::dpi {
namespace {

std::string_view trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t' || s.front() == '\r' || s.front() == '\n')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t' || s.back() == '\r' || s.back() == '\n')) s.remove_suffix(1);
  return s;
}

int hex_val(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

bool looks_like_rule(std::string_view s) {
  for (std::string_view a : {"alert", "drop", "pass", "reject", "log", "sdrop", "activate", "dynamic"}) {
    if (s.substr(0, a.size()) == a && s.size() > a.size() && (s[a.size()] == ' ' || s[a.size()] == '\t'))
      return s.find('(') != std::string_view::npos;
  }
  return false;
}

// Dedup index: (bytes, nocase) -> id.
struct KeyHash {
  size_t operator()(const std::pair<std::string, bool>& k) const {
    return std::hash<std::string>{}(k.first) * 31u + (k.second ? 1u : 0u);
  }
};

struct Pending {
  std::string bytes;
  bool nocase = false;
};

// Returns an empty string on success, else the reason the rule cannot be read.
std::string parse_rule(std::string_view rule, std::vector<Pending>& out, uint32_t& sid, uint32_t& contents,
                       uint32_t& negated) {
  size_t open = rule.find('(');
  if (open == std::string_view::npos) return "no option list '(...)'";
  size_t close = rule.rfind(')');
  if (close == std::string_view::npos || close < open) return "option list not closed with ')'";
  std::string_view body = rule.substr(open + 1, close - open - 1);

  // Split on ';' outside quotes; a backslash escapes the next character everywhere.
  std::vector<std::string_view> opts;
  bool in_quote = false;
  size_t start = 0;
  for (size_t i = 0; i < body.size(); ++i) {
    char c = body[i];
    if (c == '\\') { ++i; continue; }
    if (c == '"') in_quote = !in_quote;
    else if (c == ';' && !in_quote) { opts.push_back(body.substr(start, i - start)); start = i + 1; }
  }
  if (in_quote) return "unterminated quoted string";
  if (!trim(body.substr(std::min(start, body.size()))).empty()) opts.push_back(body.substr(start));

  std::vector<Pending> local;
  bool last_is_pattern = false;
  for (std::string_view o : opts) {
    o = trim(o);
    size_t colon = o.find(':');
    std::string_view key = trim(o.substr(0, colon));
    std::string_view val = colon == std::string_view::npos ? std::string_view{} : trim(o.substr(colon + 1));
    if (key == "content") {
      ++contents;
      bool neg = false;
      if (!val.empty() && val.front() == '!') { neg = true; val = trim(val.substr(1)); }
      if (val.size() < 2 || val.front() != '"' || val.back() != '"')
        return fmt::format("content value is not a quoted string: {}", val.substr(0, 40));
      auto dec = decode_content(val.substr(1, val.size() - 2));
      if (!dec.is_ok()) return fmt::format("content \"{}\": {}", val.substr(1, std::min<size_t>(val.size() - 2, 40)),
                                           dec.status().message());
      if (neg) { ++negated; last_is_pattern = false; continue; }
      local.push_back({std::move(*dec), false});
      last_is_pattern = true;
    } else if (key == "nocase") {
      if (last_is_pattern) local.back().nocase = true;
    } else if (key == "sid") {
      sid = static_cast<uint32_t>(std::strtoul(std::string(val).c_str(), nullptr, 10));
    }
  }
  for (auto& p : local) out.push_back(std::move(p));
  return {};
}

using DedupIndex = std::unordered_map<std::pair<std::string, bool>, uint32_t, KeyHash>;

DedupIndex make_index(const PatternSet& set) {
  DedupIndex index;
  index.reserve(set.patterns.size() * 2 + 1024);
  for (uint32_t i = 0; i < set.patterns.size(); ++i) index.emplace(std::make_pair(set.patterns[i].bytes, set.patterns[i].nocase), i);
  return index;
}

void parse_with_index(std::string_view text, std::string_view file_name, PatternSet& set, DedupIndex& index);

}  // namespace

Result<std::string> decode_content(std::string_view s) {
  std::string out;
  bool hex = false;
  int hi = -1;  // pending high nibble in hex mode
  for (size_t i = 0; i < s.size(); ++i) {
    char c = s[i];
    if (hex) {
      if (c == '|') {
        if (hi >= 0) return error(Code::kInvalidArgument, "odd number of hex digits in |...| block");
        hex = false;
      } else if (c == ' ' || c == '\t') {
        // Spaces are skipped, also between the two digits of a byte ("|3 a20|"), as Snort 2.9 does.
      } else {
        int v = hex_val(c);
        if (v < 0) return error(Code::kInvalidArgument, "'{}' is not a hex digit in |...| block", c);
        if (hi < 0) hi = v;
        else { out.push_back(static_cast<char>(hi << 4 | v)); hi = -1; }
      }
      continue;
    }
    if (c == '|') { hex = true; continue; }
    if (c == '\\') {
      if (i + 1 >= s.size()) return error(Code::kInvalidArgument, "content ends with a lone backslash");
      out.push_back(s[++i]);
      continue;
    }
    if (c == '"') return error(Code::kInvalidArgument, "unescaped '\"' inside content");
    out.push_back(c);
  }
  if (hex) return error(Code::kInvalidArgument, "hex block '|' not closed");
  if (out.empty()) return error(Code::kInvalidArgument, "empty content");
  return out;
}

void parse_rules_text(std::string_view text, std::string_view file_name, PatternSet& set) {
  DedupIndex index = make_index(set);
  parse_with_index(text, file_name, set, index);
}

namespace {
void parse_with_index(std::string_view text, std::string_view file_name, PatternSet& set, DedupIndex& index) {
  LoadStats& st = set.stats;
  size_t pos = 0;
  uint32_t line_no = 0;
  std::string joined;
  std::vector<Pending> pend;
  while (pos < text.size()) {
    size_t nl = text.find('\n', pos);
    std::string_view line = text.substr(pos, nl == std::string_view::npos ? std::string_view::npos : nl - pos);
    pos = nl == std::string_view::npos ? text.size() : nl + 1;
    ++line_no;
    uint32_t first_line = line_no;
    joined.assign(trim(line));
    // Continuation: a rule line ending in '\' goes on with the next line.
    while (!joined.empty() && joined.back() == '\\' && pos < text.size()) {
      joined.pop_back();
      nl = text.find('\n', pos);
      line = text.substr(pos, nl == std::string_view::npos ? std::string_view::npos : nl - pos);
      pos = nl == std::string_view::npos ? text.size() : nl + 1;
      ++line_no;
      joined.append(trim(line));
    }
    std::string_view r = joined;
    if (r.empty()) continue;
    if (r.front() == '#') {
      if (looks_like_rule(trim(r.substr(1)))) ++st.rules_commented;
      continue;
    }
    ++st.rules_active;
    pend.clear();
    uint32_t sid = 0, contents = 0, negated = 0;
    std::string why = parse_rule(r, pend, sid, contents, negated);
    if (!why.empty()) {
      ++st.rules_bad;
      st.warnings.push_back(fmt::format("{}:{}: {}", file_name, first_line, why));
      continue;
    }
    st.contents += contents;
    st.negated_contents += negated;
    for (auto& p : pend) {
      auto [it, fresh] = index.emplace(std::make_pair(p.bytes, p.nocase), static_cast<uint32_t>(set.patterns.size()));
      if (!fresh) { ++st.duplicates; continue; }
      set.patterns.push_back({std::move(p.bytes), p.nocase, sid});
    }
  }
}
}  // namespace

Result<PatternSet> load_rule_files(const std::vector<std::string>& paths) {
  PatternSet set;
  DedupIndex index;
  for (const auto& path : paths) {
    std::ifstream in(path, std::ios::binary);
    if (!in) return error(Code::kNotFound, "rule file '{}' does not exist or cannot be opened", path);
    std::stringstream ss;
    ss << in.rdbuf();
    if (in.bad()) return error(Code::kIoError, "reading rule file '{}' failed", path);
    parse_with_index(ss.str(), path, set, index);
    ++set.stats.files;
  }
  if (set.patterns.empty()) {
    return error(Code::kInvalidArgument, "no content patterns in {} rule file(s) ({}{}); {} rule(s) could not be read",
                 paths.size(), paths.empty() ? "none given" : paths.front(), paths.size() > 1 ? ", ..." : "",
                 set.stats.rules_bad);
  }
  return set;
}

Result<PatternSet> load_rule_dir(const std::string& dir) {
  std::error_code ec;
  if (!std::filesystem::is_directory(dir, ec)) return error(Code::kNotFound, "rule directory '{}' does not exist", dir);
  std::vector<std::string> files;
  std::filesystem::directory_iterator it(dir, ec);
  if (ec) return error(Code::kNotFound, "rule directory '{}': {}", dir, ec.message());
  for (const auto& e : it) {
    std::error_code fe;
    if (e.is_regular_file(fe) && e.path().extension() == ".rules") files.push_back(e.path().string());
  }
  if (files.empty()) return error(Code::kNotFound, "no *.rules files in '{}'", dir);
  std::sort(files.begin(), files.end());
  return load_rule_files(files);
}

std::string warnings_summary(const LoadStats& stats, size_t first_n) {
  const auto& w = stats.warnings;
  if (w.empty()) return {};
  std::string out = fmt::format("{} rule(s) could not be read and were skipped: ", w.size());
  for (size_t i = 0; i < w.size() && i < first_n; ++i) out += (i ? "; " : "") + w[i];
  if (w.size() > first_n) out += fmt::format(" (and {} more)", w.size() - first_n);
  return out;
}

PatternSet filter_min_length(const PatternSet& set, size_t min_len) {
  PatternSet out;
  out.stats = set.stats;
  for (const auto& p : set.patterns)
    if (p.bytes.size() >= min_len) out.patterns.push_back(p);
  return out;
}

}  // namespace hpr::dpi
