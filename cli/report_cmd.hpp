#pragma once
// `hpr report` (issue 13): runs the report script embedded in the binary (cli/report/hpr_report.py) with python3
// (/usr/bin/python3 where it exists, else python3 on PATH; HPR_PYTHON overrides),
// giving it this binary's path; the script measures with `hpr profile` / `hpr run` and plots with matplotlib.
#include <CLI/CLI.hpp>
#include <string>
#include <vector>

namespace hpr::cli {

// Adds the `report` subcommand (every argument goes to the script; `hpr report --help` is the script's).
CLI::App* add_report_command(CLI::App& app);
// Replaces this process with python3 running the script; returns only when that fails (exit code 3).
int run_report_command(const std::vector<std::string>& args);

}  // namespace hpr::cli
