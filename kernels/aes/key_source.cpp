// Key sources of the aes app and their precedence (see key_source.hpp). No message here holds key text.
#include "kernels/aes/key_source.hpp"

#include <spdlog/spdlog.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>

namespace hpr::kernels::aes {
namespace {

constexpr const char* kKeysSetting = "app.keys (--keys)";
constexpr const char* kMasterSetting = "app.master_key (--master-key)";
constexpr const char* kMasterFileSetting = "app.master_key_file (--master-key-file)";

std::string_view trim_space(std::string_view s) {
  auto space = [](char c) { return c == ' ' || c == '\t' || c == '\r' || c == '\n'; };
  while (!s.empty() && space(s.front())) s.remove_prefix(1);
  while (!s.empty() && space(s.back())) s.remove_suffix(1);
  return s;
}

Result<std::shared_ptr<KeyTable>> from_key_file(const std::string& path, uint32_t capacity) {
  auto entries = load_key_file(path);
  if (!entries) return error(entries.status().code(), "{}: {}", kKeysSetting, entries.status().message());
  auto table = std::make_shared<KeyTable>(capacity);
  // Lines naming a connection need the flow table: only "flow <id> <key>" lines apply at start.
  auto n = install(
      *table, *entries, [](const FlowTuple&) { return kNoFlow; }, path);
  if (!n) return error(n.status().code(), "{}: {}", kKeysSetting, n.status().message());
  const size_t connections = entries->size() - *n;
  if (*n == 0) {
    // Accepting it would drop every packet as key_missing.
    if (entries->empty())
      return error(Code::kInvalidArgument, "{}: key file '{}' holds no key (empty, or comments only)", kKeysSetting,
                   path);
    return error(Code::kInvalidArgument,
                 "{}: key file '{}' yields no key at start: its {} connection line(s) need the flow table; give "
                 "'flow <id> <key>' lines",
                 kKeysSetting, path, connections);
  }
  if (connections > 0)
    spdlog::warn(
        "{}: {} connection line(s) of '{}' not applied (they need the flow table; 'flow <id> <key>' lines "
        "apply at start)",
        kKeysSetting, connections, path);
  spdlog::info("aes: {} key(s) from key file '{}'", *n, path);
  return table;
}

}  // namespace

Result<Key> read_master_key_file(const std::string& path) {
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec))
    return error(Code::kInvalidArgument, "{}: '{}': is a directory (want a file holding 32 hex digits)",
                 kMasterFileSetting, path);
  errno = 0;
  std::ifstream f(path, std::ios::binary);
  if (!f)
    return error(errno == ENOENT ? Code::kNotFound : Code::kIoError, "{}: '{}': cannot open: {}", kMasterFileSetting,
                 path, std::strerror(errno));
  std::string text(kMaxKeyFileBytes + 1, '\0');
  f.read(text.data(), static_cast<std::streamsize>(text.size()));
  if (f.bad())
    return error(Code::kIoError, "{}: '{}': cannot read: {}", kMasterFileSetting, path, std::strerror(errno));
  text.resize(static_cast<size_t>(f.gcount()));
  if (text.size() > kMaxKeyFileBytes)
    return error(Code::kInvalidArgument, "{}: '{}': is larger than {} bytes (want 32 hex digits)", kMasterFileSetting,
                 path, kMaxKeyFileBytes);
  std::string_view hex = trim_space(text);
  if (hex.empty())
    return error(Code::kInvalidArgument, "{}: '{}': is empty (want 32 hex digits)", kMasterFileSetting, path);
  auto key = parse_hex_key(hex);
  if (!key) return error(Code::kInvalidArgument, "{}: '{}': {}", kMasterFileSetting, path, key.status().message());
  return key;
}

Result<std::shared_ptr<KeyTable>> make_key_table(const KeySources& s, uint32_t capacity) {
  const char* master_setting = !s.master_key.empty()        ? kMasterSetting
                               : !s.master_key_file.empty() ? kMasterFileSetting
                                                            : nullptr;
  if (!s.keys.empty() && master_setting != nullptr)
    return error(Code::kInvalidArgument,
                 "{} and {} are both given: choose one (a key file, or a master key to derive per-flow keys from)",
                 kKeysSetting, master_setting);
  if (!s.master_key.empty() && !s.master_key_file.empty())
    return error(Code::kInvalidArgument, "{} and {} are both given: choose one", kMasterSetting, kMasterFileSetting);
  const char* setting = !s.keys.empty() ? kKeysSetting : master_setting;
  if (!s.env_master_key.empty() && setting != nullptr)
    spdlog::info("aes: {} is set and not used: {} is given", kMasterKeyEnv, setting);

  if (!s.keys.empty()) return from_key_file(s.keys, capacity);
  Result<Key> master = error(Code::kInvalidArgument, "unset");
  std::string from;
  if (!s.master_key.empty()) {
    master = parse_hex_key(s.master_key);
    if (!master) return error(Code::kInvalidArgument, "{}: {}", kMasterSetting, master.status().message());
    from = kMasterSetting;
  } else if (!s.master_key_file.empty()) {
    master = read_master_key_file(s.master_key_file);
    if (!master) return master.status();
    from = fmt::format("{} '{}'", kMasterFileSetting, s.master_key_file);
  } else if (!s.env_master_key.empty()) {
    master = parse_hex_key(s.env_master_key);
    if (!master) return error(Code::kInvalidArgument, "{} (environment): {}", kMasterKeyEnv, master.status().message());
    from = fmt::format("the environment ({})", kMasterKeyEnv);
  } else {
    return error(Code::kInvalidArgument,
                 "app aes needs keys: {} (a key file), {} (32 hex digits), {} (a file holding them) or the "
                 "environment variable {}; keys are derived per flow from a master key",
                 kKeysSetting, kMasterSetting, kMasterFileSetting, kMasterKeyEnv);
  }
  auto table = std::make_shared<KeyTable>(capacity);
  fill_derived(*table, *master, 0, capacity);
  spdlog::info("aes: {} per-flow keys derived from the master key of {}", table->capacity(), from);
  return table;
}

}  // namespace hpr::kernels::aes
