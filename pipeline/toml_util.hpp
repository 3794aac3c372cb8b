#pragma once
// Small helpers for reading TOML tables (config_file.cpp, service_config.cpp).
#include <algorithm>
#include <cstdint>
#include <initializer_list>
#include <optional>
#include <string>
#include <string_view>
#include <toml++/toml.h>

#include "hpr/status.hpp"

namespace hpr {

// Integer nodes only. toml++'s value<int64_t>() also converts a float, and casts it before checking
// its range (undefined for 1e19: found by fuzz_run_config).
inline std::optional<int64_t> integer_of(const toml::node& n) {
  if (const auto* i = n.as_integer()) return i->get();
  return std::nullopt;
}

// Keys of a table must be among `known` (a misspelt shaper key must not pass silently).
inline Status check_keys(const toml::table& t, const std::string& where, std::initializer_list<std::string_view> known) {
  for (const auto& [k, v] : t) {
    if (std::find(known.begin(), known.end(), k.str()) != known.end()) continue;
    std::string list;
    for (auto n : known) list += (list.empty() ? "" : ", ") + std::string(n);
    return error(Code::kInvalidArgument, "{}: unknown key '{}' (line {}; known: {})", where, k.str(),
                 k.source().begin.line, list);
  }
  return Status::ok();
}

// The `[[name]]` list at `key` of `t` (name: its full name, "shaper.class"; default the key): nullptr when the key is
// absent, an error naming it when it is not a list of tables.
inline Result<const toml::array*> tables_of(const toml::table& t, std::string_view key, std::string_view name = {}) {
  if (name.empty()) name = key;
  const toml::node* n = t.get(key);
  if (n == nullptr) return static_cast<const toml::array*>(nullptr);
  const toml::array* a = n->as_array();
  if (a == nullptr || !a->is_array_of_tables())
    return error(Code::kInvalidArgument, "{} must be a list of tables: [[{}]] (line {})", name, name,
                 n->source().begin.line);
  return a;
}

}  // namespace hpr
