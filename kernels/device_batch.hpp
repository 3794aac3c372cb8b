#pragma once
// The layout every application kernel shares (architecture.md, "One application, one unit").
//
// The host gathers, for each packet of a batch, the bytes the application declared (its "slice":
// IPv4 → the IP header; DPI, MD5, AES → the L4 payload, or the whole frame for MD5 as an option)
// into one contiguous buffer `pkts`, each slice starting at a 16-byte aligned offset. Each packet
// has one 16-byte descriptor. The kernel is thread-per-packet, OpenCL C 1.2, and takes:
//
//   __kernel void <app>(__global const hpr_desc* desc, uint n, __global uchar* pkts,
//                       __global <app result>* out, <app tables...>)
//
// and the native reference takes the same three arrays in host memory, so device output and
// native output can be compared byte for byte. Slices that the app modifies (IPv4 header, AES
// ciphertext) are written back in place in `pkts`; results of fixed size per packet go to `out`.
#include <cstdint>

namespace hpr::kernels {

// Mirrors the OpenCL C struct in kernels/common/hpr_desc.cl, embedded as "hpr_desc" (keep the two identical).
struct alignas(16) Desc {
  uint32_t off;    // byte offset of this packet's slice in pkts (multiple of 16)
  uint16_t len;    // slice length in bytes
  uint16_t flags;  // app-defined (e.g. AES: payload was shorter than one block)
  uint32_t flow;   // flow id (AES: index into the key table)
  uint32_t seq;    // per-flow sequence number (AES: IV derivation)
};
static_assert(sizeof(Desc) == 16);

inline constexpr uint32_t kSliceAlign = 16;
inline constexpr uint32_t align_slice(uint32_t n) { return (n + kSliceAlign - 1) & ~(kSliceAlign - 1); }

}  // namespace hpr::kernels
