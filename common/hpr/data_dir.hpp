#pragma once
// Where the real data (../shared/data) lives: $HPR_DATA_DIR, else the path fixed at configure time.
#include <cstdlib>
#include <string>

namespace hpr {

inline std::string data_dir() {
  if (const char* env = std::getenv("HPR_DATA_DIR"); env != nullptr && *env != '\0') return env;
#ifdef HPR_DATA_DIR_DEFAULT
  return HPR_DATA_DIR_DEFAULT;
#else
  return "../shared/data";
#endif
}

inline std::string data_path(const std::string& rel) { return data_dir() + "/" + rel; }

}  // namespace hpr
