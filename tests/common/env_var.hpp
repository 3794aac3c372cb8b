#pragma once
// Sets one environment variable for a scope (or unsets it, value nullptr) and puts back what it was.
#include <cstdlib>
#include <optional>
#include <string>

namespace hpr::test {

struct EnvVar {
  std::string name;
  std::optional<std::string> old;
  EnvVar(const char* n, const char* value) : name(n) {
    if (const char* v = std::getenv(n)) old = v;
    if (value != nullptr) ::setenv(n, value, 1);
    else ::unsetenv(n);
  }
  EnvVar(const char* n, const std::string& value) : EnvVar(n, value.c_str()) {}
  ~EnvVar() {
    if (old) ::setenv(name.c_str(), old->c_str(), 1);
    else ::unsetenv(name.c_str());
  }
  EnvVar(const EnvVar&) = delete;
  EnvVar& operator=(const EnvVar&) = delete;
};

}  // namespace hpr::test
