#pragma once
// Why a packet left the data path without being transmitted: one list (VPP's foreach_ip4_error), from
// which the enum, the names in the summary / JSON / Prometheus and the descriptions are generated.
// Every packet that enters is either transmitted or counted under exactly one of these (the books
// must balance). Add a reason here and nowhere else; names are stable (scripts read them).
#include <array>
#include <cstdint>
#include <string_view>

namespace hpr {

#define HPR_FOREACH_DROP_REASON(_)                                                                    \
  _(kNone, "none", "not dropped")                                                                     \
  _(kTruncated, "truncated", "frame shorter than the headers it announces")                           \
  _(kBadVersion, "bad_version", "IP version field does not match the ethertype")                      \
  _(kBadIhl, "bad_ihl", "IPv4 IHL < 5 or header beyond the frame")                                    \
  _(kBadTotalLength, "bad_total_length", "IPv4/IPv6 length beyond the frame or below the header")     \
  _(kBadChecksum, "bad_checksum", "IPv4 header checksum wrong")                                       \
  _(kBadExtHeader, "bad_ext_header", "IPv6 extension header chain malformed or too long")             \
  _(kTtlExceeded, "ttl_exceeded", "IPv4 TTL or IPv6 hop limit <= 1 (ICMP Time Exceeded from the host)") \
  _(kNoRoute, "no_route", "IPv4 or IPv6 LPM miss and no default route")                                \
  _(kNotIPv4, "not_ipv4", "the ipv4 app was told to drop non-IPv4 traffic")                           \
  _(kFrameTooLong, "frame_too_long", "longer than ports.max_frame or than the port holds")            \
  _(kUnsupportedLink, "unsupported_link", "capture link type we cannot map to Ethernet")              \
  _(kQueueFull, "queue_full", "a lane queue (or the egress queue) was full")                          \
  _(kNoLane, "no_lane", "no lane available (all failed)")                                             \
  _(kKeyMissing, "key_missing", "AES: no key for this flow")                                          \
  _(kShaperQueueFull, "shaper_queue_full", "egress shaper queue full")                                \
  _(kTxFailed, "tx_failed", "the output port refused the packet (ring or queue full)")                \
  _(kPoolEmpty, "pool_empty", "no buffer for the frame (the large-frame pool was empty)")             \
  _(kShaperDrain, "shaper_drain", "still waiting in the egress shaper when the drain timeout ran out") \
  _(kTxError, "tx_error", "writing the packet failed (output file: disk full, I/O error)")             \
  _(kNoService, "no_service", "matched no [[service]] and there is no default service")

enum class DropReason : uint8_t {
#define HPR_DROP_ENUM(e, name, what) e,
  HPR_FOREACH_DROP_REASON(HPR_DROP_ENUM)
#undef HPR_DROP_ENUM
      kCount
};

inline constexpr size_t kDropReasonCount = static_cast<size_t>(DropReason::kCount);

inline constexpr std::array<std::string_view, kDropReasonCount> kDropReasonNames = {
#define HPR_DROP_NAME(e, name, what) name,
    HPR_FOREACH_DROP_REASON(HPR_DROP_NAME)
#undef HPR_DROP_NAME
};

inline constexpr std::array<std::string_view, kDropReasonCount> kDropReasonText = {
#define HPR_DROP_TEXT(e, name, what) what,
    HPR_FOREACH_DROP_REASON(HPR_DROP_TEXT)
#undef HPR_DROP_TEXT
};

inline std::string_view drop_reason_name(DropReason r) { return kDropReasonNames[static_cast<size_t>(r)]; }
inline std::string_view drop_reason_text(DropReason r) { return kDropReasonText[static_cast<size_t>(r)]; }

}  // namespace hpr
