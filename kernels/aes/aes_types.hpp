#pragma once
// The AES-128 types every part of the aes app shares: keys, key epochs, expanded schedules.
#include <array>
#include <cstdint>

namespace hpr::kernels::aes {

inline constexpr uint32_t kBlockBytes = 16;
inline constexpr uint32_t kKeyBytes = 16;
inline constexpr uint32_t kScheduleBytes = 176;  // 11 round keys of 16 bytes

using Key = std::array<uint8_t, kKeyBytes>;

// The FIPS-197 expanded encryption key: round key r at bytes[16*r, 16*r+16).
struct alignas(16) RoundKeys {
  uint8_t bytes[kScheduleBytes];
};
static_assert(sizeof(RoundKeys) == kScheduleBytes);

// The run's key epoch (key_derive.hpp): enters every derived key and every derived IV. Not secret.
inline constexpr uint32_t kEpochBytes = 16;
using KeyEpoch = std::array<uint8_t, kEpochBytes>;

}  // namespace hpr::kernels::aes
