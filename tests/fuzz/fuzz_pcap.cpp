// Capture files: the bytes as a pcap/pcapng file through PcapReader (libpcap plus hpr's link-type conversion
// to Ethernet) and load_capture; every frame handed out is then parsed, as the pcap port would.
#include <cstdlib>
#include <cstring>
#include <memory>

#include "runtime/parser.hpp"
#include "runtime/pcap_file.hpp"
#include "tests/fuzz/fuzz_targets.hpp"

namespace hpr::fuzz {

int pcap(const uint8_t* data, size_t size) {
  const std::string path = as_file(data, size);
  auto rd = PcapReader::open(path);
  if (rd.is_ok()) {
    PcapRecord rec;
    int n = 0;
    while (n++ < 4096 && rd.value().next(rec)) {
      if (rec.frame.size() > 0xffff) continue;  // the port counts these as frame_too_long
      std::unique_ptr<uint8_t[]> buf(new uint8_t[rec.frame.empty() ? 1 : rec.frame.size()]);
      if (!rec.frame.empty()) std::memcpy(buf.get(), rec.frame.data(), rec.frame.size());
      Packet p;
      p.data = buf.get();
      p.len = static_cast<uint16_t>(rec.frame.size());
      (void)parse(p);
    }
  }
  auto cap = load_capture(path);
  if (cap.is_ok() && cap.value().frames.size() != cap.value().ts_ns.size()) std::abort();
  return 0;
}

}  // namespace hpr::fuzz
