#pragma once
// Capture-file ports (libpcap) and the null sink.
#include <memory>
#include <optional>
#include <string>

#include "runtime/pcap_file.hpp"
#include "runtime/pool.hpp"
#include "runtime/port.hpp"

namespace hpr {

struct PcapPortConfig {
  std::string rx_path;        // capture to read (pcap or pcapng); empty: no rx
  std::string tx_path;        // capture to write (pcap); empty: no tx
  uint32_t loops = 1;         // read the capture this many times (0: forever)
  uint32_t pool_slots = 16384;
  uint32_t slot_bytes = 2048; // longer frames are counted as rx_too_long (DropReason::kFrameTooLong)
};

// Errors: those of PcapReader::open / PcapWriter::open, pool allocation.
Result<std::unique_ptr<Port>> make_pcap_port(const PcapPortConfig& cfg);

// Accepts everything, sends nothing anywhere.
std::unique_ptr<Port> make_null_port();

}  // namespace hpr
