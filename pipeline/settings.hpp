#pragma once
// The settings of `hpr run`: one table that ties each configuration key (section.key in the TOML
// file) to its command-line flag, its help text and how a value is checked and stored. The file
// loader (config_file.cpp) refuses every key that is not in the table, and the CLI registers its
// flags from it, so a setting exists in both places or neither, with the same range checks and the
// same error text: "lanes.batch (--batch): 0 is not in 1..65536".
//
// Numbers are range-checked as they are read: negative, NaN and infinite values are refused where
// they make no sense, and sizes have upper bounds that fit in memory.
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "hpr/status.hpp"
#include "pipeline/run_config.hpp"

namespace toml {
inline namespace v3 {
class node;
}
}  // namespace toml

namespace hpr {

// What the user gave for one setting: a node of the TOML file, or the command-line arguments of the
// flag (one per use of a repeatable flag; none for a switch).
struct SettingValue {
  const toml::node* node = nullptr;
  std::vector<std::string> args;
  int line = 0;  // file line of `node`, for messages
};

struct Setting {
  std::string_view key;   // "lanes.batch"; empty: command line only (a shortcut such as --in)
  std::string_view flag;  // "--batch"; empty: file only
  std::string_view help;  // for --help: what it is, its unit and accepted values
  enum class Arg { kOne, kMany, kSwitch } arg = Arg::kOne;  // CLI: one value, repeatable, or none
  std::function<Status(RunConfig&, const SettingValue&)> apply;
  // How messages name the setting: "lanes.batch (--batch)".
  std::string name() const;
};

// Every setting of `hpr run`, in the order --help lists them.
const std::vector<Setting>& run_settings();
// The setting with this key or flag; nullptr when there is none.
const Setting* find_setting(std::string_view key_or_flag);
// Sub-tables whose keys are names chosen by the user (lane names, device names), read by
// config_file.cpp: lanes.weights, devices.kinds, faults.fail_after_batches, faults.slow_lane_us.
bool is_named_table(std::string_view key);
// A string or a list of strings (file); every use of the flag, each split at commas when `split`. Errors name `name`.
Result<std::vector<std::string>> strs_of(const SettingValue& v, const std::string& name, bool split);

}  // namespace hpr
