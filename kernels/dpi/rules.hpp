#pragma once
// Snort 2.9 / Suricata rule loader: the literal `content:` strings of a rule set, as the patterns the
// DPI automaton searches for (heterogeneous-scheduler paper §3.2.2: "the content patterns ... of the
// latest Snort distribution, compiled into the same state machine").
//
// What is read (Snort 2.9 manual §3.5.1 "content", §3.5.2 "nocase"):
//   - one rule per line; a line ending in '\' continues on the next line;
//   - lines whose first non-blank character is '#' are comments (commented-out rules are skipped);
//   - every `content:"..."` option; inside the quotes `|41 42|` hex blocks (spaces between hex pairs
//     optional), and the escapes `\"`, `\;`, `\\`, `\:` (a backslash before any other character keeps
//     that character);
//   - `nocase;` applies to the content that precedes it in the same rule;
//   - negated content (`content:!"..."`) is parsed but NOT a pattern: it says what must be absent,
//     so it never produces a match (counted in LoadStats::negated_contents);
//   - all other options (offset, depth, http_*, pcre, uricontent, fast_pattern, ...) are ignored:
//     every content is matched anywhere in the L4 payload.
// A rule that cannot be read (no option list, unterminated quote or hex block, bad hex digit, empty
// content) is skipped as a whole and listed in LoadStats::warnings as "file:line: reason"; loading
// goes on with the rest.
//
// Patterns are deduplicated on (bytes as written, nocase). Pattern ids are dense, 0..n-1, in order of
// first appearance (files in the order given, lines in order), so they are stable for a rule set.
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "hpr/status.hpp"

namespace hpr::dpi {

struct Pattern {
  std::string bytes;     // decoded content bytes (hex escapes resolved); never empty
  bool nocase = false;   // match ignoring ASCII case
  uint32_t first_sid = 0;// sid of the first rule that had it (0 when the rule has no sid)
};

struct LoadStats {
  uint32_t files = 0;
  uint32_t rules_active = 0;     // uncommented rule lines read
  uint32_t rules_commented = 0;  // '#'-commented lines that look like rules (skipped)
  uint32_t rules_bad = 0;        // rules skipped because they could not be read (see warnings)
  uint32_t contents = 0;         // content options read from active rules (negated included)
  uint32_t negated_contents = 0; // content:!"..." (not patterns)
  uint32_t duplicates = 0;       // contents equal to an earlier (bytes, nocase) pattern
  std::vector<std::string> warnings;  // "file:line: reason", one per skipped rule
};

struct PatternSet {
  std::vector<Pattern> patterns;
  LoadStats stats;
};

// Parses rule text. `file_name` only labels warnings. Never fails: unreadable rules become warnings.
// `set` accumulates (dedup across calls).
void parse_rules_text(std::string_view text, std::string_view file_name, PatternSet& set);

// Loads rule files in the order given.
// Errors: kNotFound (a file does not exist or cannot be opened; message names the file),
//         kInvalidArgument (no patterns at all in the files; message names them and the warning count).
Result<PatternSet> load_rule_files(const std::vector<std::string>& paths);

// Loads every *.rules file of a directory, sorted by name.
// Errors: kNotFound (directory missing or no *.rules in it), then as load_rule_files.
Result<PatternSet> load_rule_dir(const std::string& dir);

// Decodes one content string (the text between the quotes). Errors: kInvalidArgument with the reason.
Result<std::string> decode_content(std::string_view quoted_body);

// One line for a log or an error however many rules were bad: "N rule(s) could not be read and were
// skipped: <first `first_n` warnings, '; '-separated> (and K more)". Empty when there are no warnings.
std::string warnings_summary(const LoadStats& stats, size_t first_n = 5);

// Keeps only the patterns of at least `min_len` bytes (ids renumbered densely, order kept).
PatternSet filter_min_length(const PatternSet& set, size_t min_len);

}  // namespace hpr::dpi
