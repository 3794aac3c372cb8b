#pragma once
// Numbers read from JSON files (the configuration table) without undefined conversions: nlohmann's get<int>()
// casts whatever number it finds, and a floating-point value out of the target's range (a fuzzed "version":
// 3.3e30) is undefined behaviour. These throw nlohmann's type_error / out_of_range instead, which the readers
// already turn into an error naming the file and the field.
#include <nlohmann/json.hpp>

#include <cmath>
#include <cstdint>
#include <limits>
#include <string>
#include <utility>

namespace hpr::sched {

// A JSON integer within T's range.
template <class T>
T json_integer(const nlohmann::json& v) {
  if (!v.is_number_integer())
    throw nlohmann::json::type_error::create(302, "expected an integer, got " + std::string(v.type_name()), &v);
  if (v.is_number_unsigned() ? std::in_range<T>(v.get<uint64_t>()) : std::in_range<T>(v.get<int64_t>()))
    return v.is_number_unsigned() ? static_cast<T>(v.get<uint64_t>()) : static_cast<T>(v.get<int64_t>());
  throw nlohmann::json::out_of_range::create(406, "integer " + v.dump() + " out of range", &v);
}

// A JSON number that fits a float (finite).
inline float json_float(const nlohmann::json& v) {
  const double d = v.get<double>();  // type_error for a non-number
  if (!std::isfinite(d) || std::fabs(d) > static_cast<double>(std::numeric_limits<float>::max()))
    throw nlohmann::json::out_of_range::create(406, "number " + v.dump() + " out of range", &v);
  return static_cast<float>(d);
}

}  // namespace hpr::sched
