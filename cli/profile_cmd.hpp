#pragma once
// `hpr profile` (pipeline/profile.hpp), kept out of main.cpp.
#include <CLI/CLI.hpp>
#include <memory>
#include <string>

#include "pipeline/profile.hpp"
#include "pipeline/run_config.hpp"

namespace hpr::cli {

// Adds the `profile` subcommand; returns it (main checks parsed() and calls run_profile_command()).
CLI::App* add_profile_command(CLI::App& app);
int run_profile_command();

}  // namespace hpr::cli
