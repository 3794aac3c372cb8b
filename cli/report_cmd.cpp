#include "cli/report_cmd.hpp"

#include <fmt/format.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <string_view>

namespace hpr::cli {

std::string_view embedded_script(std::string_view name);  // report_source.cpp, generated (cli/CMakeLists.txt)

CLI::App* add_report_command(CLI::App& app) {
  auto* r = app.add_subcommand(
      "report",
      "Measure this machine and write its energy-vs-throughput report (plots, CSVs, report.md): hpr report --help");
  r->allow_extras();
  r->prefix_command();
  r->set_help_flag();  // --help goes to the script
  return r;
}

int run_report_command(const std::vector<std::string>& args) {
  std::error_code ec;
  std::string self = std::filesystem::read_symlink("/proc/self/exe", ec).string();
  if (ec) {
    fmt::print(stderr, "hpr report: cannot find this binary's path (/proc/self/exe): {}\n", ec.message());
    return 3;
  }
  // Debian's python3 first (python3-matplotlib is installed for it), whatever else comes first on PATH;
  // HPR_PYTHON overrides.
  const char* env = std::getenv("HPR_PYTHON");
  std::string py = env != nullptr && *env != '\0'                 ? env
                   : ::access("/usr/bin/python3", X_OK) == 0 ? "/usr/bin/python3"
                                                               : "python3";
  std::string src(embedded_script("hpr_report"));
  std::vector<std::string> a = {py, "-c", src, "--hpr", self};
  a.insert(a.end(), args.begin(), args.end());
  std::vector<char*> argv;
  for (auto& s : a) argv.push_back(s.data());
  argv.push_back(nullptr);
  std::fflush(stdout);
  execvp(py.c_str(), argv.data());
  fmt::print(stderr,
             "hpr report: cannot run {}: {} (Debian: apt install python3 python3-matplotlib; or set HPR_PYTHON)\n", py,
             std::strerror(errno));
  return 3;
}

}  // namespace hpr::cli
