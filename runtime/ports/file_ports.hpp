#pragma once
// Capture-file ports (libpcap) and the null sink.
#include <memory>
#include <optional>
#include <string>

#include "runtime/frame_pools.hpp"
#include "runtime/pcap_file.hpp"
#include "runtime/port.hpp"

namespace hpr {

struct PcapPortConfig {
  std::string rx_path;        // capture to read (pcap or pcapng); empty: no rx
  std::string tx_path;        // capture to write (pcap); empty: no tx
  uint32_t loops = 1;         // read the capture this many times (0: forever)
  uint32_t pool_slots = 16384;                // small slots (kSmallSlotBytes): frames up to 2048 bytes
  uint32_t large_slots = kDefaultLargeSlots;  // slots of max_frame bytes for longer frames (none: 0)
  // Longer frames are counted as rx_too_long (frame_too_long); a large frame that finds the large pool empty
  // as rx_pool_empty (pool_empty). An empty small pool stalls rx instead (the frame is read again later).
  uint32_t max_frame = kDefaultMaxFrame;
};

// Errors: those of PcapReader::open / PcapWriter::open, pool allocation.
Result<std::unique_ptr<Port>> make_pcap_port(const PcapPortConfig& cfg);

// Accepts everything, sends nothing anywhere.
std::unique_ptr<Port> make_null_port();

}  // namespace hpr
