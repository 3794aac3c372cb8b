#pragma once
// Where the aes app's keys come from (issue 16 item 7; docs/crypto.md "Key sources").
//
// One source, chosen in this order:
//   1. app.keys (--keys): a key file (format: aes_app.hpp). When a flow starts, the key of a connection line
//      for its 5-tuple (either direction), else that of a "flow <id>" line for its slot, else none.
//   2. a master key, from which each connection's key is derived when it starts (key_derive.hpp):
//      app.master_key (--master-key, 32 hex digits) or app.master_key_file (--master-key-file, a file
//      holding 32 hex digits; whitespace and newlines around them allowed).
//   3. the environment variable HPR_MASTER_KEY (32 hex digits), read only when none of the three settings
//      is given; a setting always wins, and an HPR_MASTER_KEY that a setting overrides is logged (info).
//      An empty HPR_MASTER_KEY counts as unset.
// Refused with kInvalidArgument, naming the settings:
//   * app.keys together with app.master_key or app.master_key_file (one of them would be ignored);
//   * app.master_key together with app.master_key_file;
//   * no source at all;
//   * a key file that is a directory, cannot be read, or holds no key ("app.keys" and the path);
//   * a master key file that is a directory, missing or unreadable, empty, larger than kMaxKeyFileBytes, or
//     not 32 hex digits ("app.master_key_file" and the path);
//   * a master key that is not 32 hex digits (the setting named);
//   * an app.key_epoch (--key-epoch) that is not 32 hex digits (the setting named, never the text).
// The key epoch: app.key_epoch, or 16 random bytes per run; either way announced in the log (info).
// Key material never appears in a message or a log line: errors say what is wrong (length, position of the
// first non-hex character, file:line and field) and name the setting or the file, never the text.
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "kernels/aes/aes_app.hpp"

namespace hpr::kernels::aes {

inline constexpr const char* kMasterKeyEnv = "HPR_MASTER_KEY";
inline constexpr size_t kMaxKeyFileBytes = 4096;  // a master key file: 32 hex digits and whitespace

struct KeySources {
  std::string keys;             // app.keys: key file path
  std::string master_key;       // app.master_key: 32 hex digits
  std::string master_key_file;  // app.master_key_file: path of a file holding 32 hex digits
  std::string env_master_key;   // the value of HPR_MASTER_KEY ("" when unset), passed in by the caller
  std::string key_epoch;        // app.key_epoch: 32 hex digits; "" = random for this run
  std::optional<uint64_t> iv_counter_start;  // unset: random per run (tests fix it)
};

// What fills a key slot when a connection starts in it (AesApp::flow_started; one thread).
class FlowKeySource {
 public:
  virtual ~FlowKeySource() = default;
  // The key of connection `t` starting in slot `id`; nullopt: none (its packets drop as key_missing).
  virtual std::optional<Key> key_for(uint32_t id, const FlowTuple& t) = 0;
};

struct AesKeys {
  std::shared_ptr<KeyTable> table;
  std::shared_ptr<FlowKeySource> source;
};

// Reads a master key file (rules above). Errors name app.master_key_file and the path, never the content.
Result<Key> read_master_key_file(const std::string& path);

// The key table (`capacity` flow ids, the run's epoch, IV counters from a random start) and the source
// the rules above pick; logs one info line naming the source (never the key) and one with the epoch.
// "flow <id>" lines of a key file are set at once; every other key when its connection starts.
Result<AesKeys> make_keys(const KeySources& sources, uint32_t capacity);

}  // namespace hpr::kernels::aes
