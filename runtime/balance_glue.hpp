#pragma once
// What the balancers (scheduler/balance) see of a packet: the 5-tuple of its flow key, IPv6
// addresses folded to 32 bits by XOR (as the LAPS and Subflow papers hash IPv4 5-tuples).
#include "runtime/flow.hpp"
#include "scheduler/balance/types.hpp"

namespace hpr {

inline balance::FiveTuple to_five_tuple(const FlowKey& k) {
  auto word = [](const uint8_t* b, int i) {
    return (uint32_t(b[i]) << 24) | (uint32_t(b[i + 1]) << 16) | (uint32_t(b[i + 2]) << 8) | b[i + 3];
  };
  balance::FiveTuple t;
  if (k.family == 6) {
    t.src_ip = word(k.src, 0) ^ word(k.src, 4) ^ word(k.src, 8) ^ word(k.src, 12);
    t.dst_ip = word(k.dst, 0) ^ word(k.dst, 4) ^ word(k.dst, 8) ^ word(k.dst, 12);
  } else {
    t.src_ip = word(k.src, 0);
    t.dst_ip = word(k.dst, 0);
  }
  t.src_port = k.sport;
  t.dst_port = k.dport;
  t.proto = k.proto;
  return t;
}

}  // namespace hpr
