#pragma once
// Where the real data lives (data/README.md), in this order: $HPR_DATA_DIR; ../share/hpr/data beside the binary's
// folder once filled (an installed hpr: /usr/bin/hpr and /usr/share/hpr/data, cmake/install.cmake; a bundle's
// bin/hpr); data/ in the checkout once scripts/get-data.sh has filled it; the directory fixed at configure time
// (../shared/data beside the checkout, or what -DHPR_DATA_DIR=... names, which also turns the checkout's data/ off).
#include <cstdlib>
#include <filesystem>
#include <string>
#include <system_error>

#ifndef HPR_DATA_DIR_CHECKOUT  // data/ in the source tree (common/CMakeLists.txt); empty: not searched
#define HPR_DATA_DIR_CHECKOUT ""
#endif
#ifndef HPR_DATA_DIR_DEFAULT
#define HPR_DATA_DIR_DEFAULT "../shared/data"
#endif

namespace hpr {

// The file that marks a data directory as filled: scripts/get-data.sh moves it in last.
inline constexpr const char* kDataMarker = "routes/ipasn_20140513.dat.gz";

// The search, its candidates as parameters: env is $HPR_DATA_DIR (null or empty: unset), checkout the checkout's
// data/ (used when it holds kDataMarker; empty: skipped), fallback the configured default.
inline std::string find_data_dir(const char* env, const std::string& checkout, const std::string& fallback) {
  if (env != nullptr && *env != '\0') return env;
  std::error_code ec;
  if (!checkout.empty() && std::filesystem::is_regular_file(std::filesystem::path(checkout) / kDataMarker, ec)) {
    return checkout;
  }
  return fallback;
}

// <the running binary's folder>/../share/hpr/data; empty when /proc/self/exe cannot be read.
inline std::string installed_data_dir() {
  std::error_code ec;
  const std::filesystem::path exe = std::filesystem::read_symlink("/proc/self/exe", ec);
  return ec ? std::string() : (exe.parent_path().parent_path() / "share/hpr/data").string();
}

inline std::string data_dir() {
  return find_data_dir(std::getenv("HPR_DATA_DIR"), installed_data_dir(),
                       find_data_dir(nullptr, HPR_DATA_DIR_CHECKOUT, HPR_DATA_DIR_DEFAULT));
}

inline std::string data_path(const std::string& rel) { return data_dir() + "/" + rel; }

}  // namespace hpr
