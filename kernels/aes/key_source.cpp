// Key sources of the aes app and their precedence (see key_source.hpp). No message here holds key text.
#include "kernels/aes/key_source.hpp"

#include <openssl/rand.h>
#include <spdlog/spdlog.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>

#include "kernels/aes/key_derive.hpp"

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

constexpr const char* kEpochSetting = "app.key_epoch (--key-epoch)";

class MasterKeySource final : public FlowKeySource {
 public:
  MasterKeySource(const Key& master, const KeyEpoch& epoch) : deriver_(master, epoch) {}
  std::optional<Key> key_for(uint32_t, const FlowTuple& t) override { return deriver_.derive(t); }

 private:
  ConnKeyDeriver deriver_;
};

// Connection lines by their canonical bytes (either direction), "flow <id>" lines by slot.
class KeyFileSource final : public FlowKeySource {
 public:
  explicit KeyFileSource(const std::vector<KeyFileEntry>& entries) {
    for (const KeyFileEntry& e : entries) {  // a later line for the same connection or id wins
      if (e.by_flow_id)
        by_id_[e.flow_id] = e.key;
      else
        by_conn_[canonical_bytes(e.tuple)] = e.key;
    }
  }
  std::optional<Key> key_for(uint32_t id, const FlowTuple& t) override {
    if (auto c = by_conn_.find(canonical_bytes(t)); c != by_conn_.end()) return c->second;
    if (auto f = by_id_.find(id); f != by_id_.end()) return f->second;
    return std::nullopt;
  }
  size_t connections() const { return by_conn_.size(); }

 private:
  std::map<std::array<uint8_t, kCanonicalBytes>, Key> by_conn_;
  std::map<uint32_t, Key> by_id_;
};

Result<AesKeys> from_key_file(const std::string& path, AesKeys keys) {
  auto entries = load_key_file(path);
  if (!entries) return error(entries.status().code(), "{}: {}", kKeysSetting, entries.status().message());
  // Accepting a file without keys would drop every packet as key_missing.
  if (entries->empty())
    return error(Code::kInvalidArgument, "{}: key file '{}' holds no key (empty, or comments only)", kKeysSetting,
                 path);
  auto n = install(*keys.table, *entries, nullptr, path);  // "flow <id>" lines now, checked against the capacity
  if (!n) return error(n.status().code(), "{}: {}", kKeysSetting, n.status().message());
  auto source = std::make_shared<KeyFileSource>(*entries);
  spdlog::info("aes: key file '{}': {} flow-id key(s) set, {} connection key(s) applied when their connection starts",
               path, *n, source->connections());
  keys.source = std::move(source);
  return keys;
}

// The run's epoch (given, or random) and a table whose IV counters start at a random value.
Result<std::shared_ptr<KeyTable>> make_table(const KeySources& s, uint32_t capacity) {
  const std::string& epoch_hex_text = s.key_epoch;
  KeyEpoch epoch{};
  if (!epoch_hex_text.empty()) {
    auto e = parse_key_epoch(epoch_hex_text);
    if (!e) return error(Code::kInvalidArgument, "{}: {}", kEpochSetting, e.status().message());
    epoch = *e;
  } else {
    auto e = random_key_epoch();
    if (!e) return e.status();
    epoch = *e;
  }
  uint64_t first_counter = s.iv_counter_start.value_or(0);
  if (!s.iv_counter_start && RAND_bytes(reinterpret_cast<uint8_t*>(&first_counter), sizeof first_counter) != 1)
    return error(Code::kUnavailable, "aes: the OpenSSL random generator failed to give an IV counter start");
  spdlog::info("aes: key epoch {} ({})", epoch_hex(epoch),
               epoch_hex_text.empty() ? "random for this run; give it as app.key_epoch (--key-epoch) to keep keys "
                                        "across restarts"
                                      : "from app.key_epoch");
  return std::make_shared<KeyTable>(capacity, epoch, first_counter);
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

Result<AesKeys> make_keys(const KeySources& s, uint32_t capacity) {
  const char* master_setting = !s.master_key.empty()        ? kMasterSetting
                               : !s.master_key_file.empty() ? kMasterFileSetting
                                                            : nullptr;
  if (!s.keys.empty() && master_setting != nullptr)
    return error(
        Code::kInvalidArgument,
        "{} and {} are both given: choose one (a key file, or a master key to derive per-connection keys from)",
        kKeysSetting, master_setting);
  if (!s.master_key.empty() && !s.master_key_file.empty())
    return error(Code::kInvalidArgument, "{} and {} are both given: choose one", kMasterSetting, kMasterFileSetting);
  const char* setting = !s.keys.empty() ? kKeysSetting : master_setting;
  if (!s.env_master_key.empty() && setting != nullptr)
    spdlog::info("aes: {} is set and not used: {} is given", kMasterKeyEnv, setting);

  if (!s.keys.empty()) {
    auto table = make_table(s, capacity);
    if (!table) return table.status();
    return from_key_file(s.keys, AesKeys{*table, nullptr});
  }
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
                 "environment variable {}; keys are derived per connection from a master key",
                 kKeysSetting, kMasterSetting, kMasterFileSetting, kMasterKeyEnv);
  }
  auto table = make_table(s, capacity);
  if (!table) return table.status();
  spdlog::info("aes: per-connection keys derived from the master key of {} when each connection starts", from);
  return AesKeys{*table, std::make_shared<MasterKeySource>(*master, (*table)->epoch())};
}

}  // namespace hpr::kernels::aes
