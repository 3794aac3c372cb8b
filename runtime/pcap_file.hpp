#pragma once
// Capture files through libpcap: pcap and pcapng in, pcap out.
//
// Every frame handed out is Ethernet II: captures of other link types are converted on read by
// prepending a synthetic Ethernet header (dst 02:00:00:00:00:01, src 02:00:00:00:00:02) whose
// EtherType comes from the link header. Supported: Ethernet, NULL/LOOP (BSD loopback), raw IP
// (DLT_RAW, LINKTYPE_IPV4/IPV6), Linux cooked v1 and v2, PPP (with or without HDLC framing),
// Cisco HDLC. Frames of other protocols inside those links keep EtherType 0 and parse as non-IP.
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "hpr/atomic_file.hpp"
#include "hpr/status.hpp"

struct pcap;
struct pcap_dumper;

namespace hpr {

inline constexpr uint32_t kSyntheticEthHeader = 14;

struct PcapRecord {
  uint64_t ts_ns = 0;            // capture time stamp, ns since the epoch
  std::span<const uint8_t> frame;// Ethernet frame; valid until the next call to next()
  uint32_t wire_len = 0;         // original length on the wire (>= frame.size() when snapped)
};

class PcapReader {
 public:
  // Errors: kNotFound (no such file), kInvalidArgument (not a capture, or a link type that cannot be
  // mapped to Ethernet: the message names the file and the link type).
  static Result<PcapReader> open(const std::string& path);
  PcapReader(PcapReader&&) noexcept;
  PcapReader& operator=(PcapReader&&) noexcept;
  ~PcapReader();

  // False at the end of the file. A read error mid-file ends the file and sets read_error().
  bool next(PcapRecord& rec);
  const std::string& read_error() const { return error_; }
  int link_type() const { return link_type_; }
  const std::string& path() const { return path_; }

 private:
  PcapReader() = default;
  pcap* handle_ = nullptr;
  int link_type_ = 0;
  std::string path_;
  std::string error_;
  std::vector<uint8_t> scratch_;  // converted frame
};

// A whole capture in memory (tests, simulators, the generator's header templates).
struct Capture {
  std::string path;
  std::vector<uint64_t> ts_ns;
  std::vector<std::vector<uint8_t>> frames;  // Ethernet frames
  // Set when the file ends in the middle of a record (a capture cut short): the whole records
  // before it are kept, as tcpdump and tshark do.
  std::string warning;
  size_t size() const { return frames.size(); }
};

// Errors: those of PcapReader::open. A file cut short is not an error (see Capture::warning).
Result<Capture> load_capture(const std::string& path);

// Every capture file (.pcap, .pcapng, .cap) in a directory, sorted by name.
std::vector<std::string> list_captures(const std::string& dir);

// Writes a capture through an AtomicFile: the file appears under its name only when finish()
// succeeds; every write is checked at flush().
class PcapWriter {
 public:
  // Ethernet link type, nanosecond time stamps, snaplen 65535. Errors: those of AtomicFile::open
  // (a target that is not a regular file, a directory that cannot be written), naming `what`.
  static Result<PcapWriter> open(const std::string& path, std::string_view what = "output.pcap");
  PcapWriter(PcapWriter&&) noexcept;
  PcapWriter& operator=(PcapWriter&&) noexcept;
  ~PcapWriter();

  void write(uint64_t ts_ns, std::span<const uint8_t> frame);
  // Pushes what was written to the file. Errors: kIoError (disk full, I/O error): the records
  // written since the last good flush may be lost.
  Status flush();
  // Flushes and renames the file into place. Errors: kIoError.
  Status finish();

 private:
  PcapWriter() = default;
  pcap* dead_ = nullptr;
  std::optional<AtomicFile> file_;
  pcap_dumper* dumper_ = nullptr;  // libpcap's writer over file_ (never pcap_dump_close'd: file_ owns the FILE)
};

}  // namespace hpr
