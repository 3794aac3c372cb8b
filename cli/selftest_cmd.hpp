#pragma once
// `hpr selftest` (issue 14): every app on every OpenCL device and the native lane, on a sample of real traffic,
// each device's output compared with the native reference byte for byte (pipeline/device_check.hpp), then timed.
#include <CLI/CLI.hpp>

namespace hpr::cli {

// Adds the `selftest` subcommand; returns it (main checks parsed() and calls run_selftest_command()).
CLI::App* add_selftest_command(CLI::App& app);
// Exit codes: 0 every device passed; 1 a device computed wrong results or failed; 3 an app could not be made
// (its data is missing) or the ICD loader failed.
int run_selftest_command();

}  // namespace hpr::cli
