#include "runtime/pcap_file.hpp"

#include <pcap/pcap.h>

#include <algorithm>
#include <cstring>
#include <filesystem>

namespace hpr {
namespace {

constexpr int kLinktypeIpv4 = 228;
constexpr int kLinktypeIpv6 = 229;
constexpr int kLinktypeSll2 = 276;

uint16_t ethertype_for_ip_version(const uint8_t* p, uint32_t n) {
  if (n == 0) return 0;
  switch (p[0] >> 4) {
    case 4: return 0x0800;
    case 6: return 0x86dd;
    default: return 0;
  }
}

uint16_t ppp_to_ethertype(uint16_t proto) {
  switch (proto) {
    case 0x0021: return 0x0800;
    case 0x0057: return 0x86dd;
    default: return 0;
  }
}

bool supported(int dlt) {
  switch (dlt) {
    case DLT_EN10MB: case DLT_NULL: case DLT_LOOP: case DLT_RAW: case kLinktypeIpv4: case kLinktypeIpv6:
    case DLT_LINUX_SLL: case kLinktypeSll2: case DLT_PPP: case DLT_PPP_SERIAL: case DLT_C_HDLC:
      return true;
    default:
      return false;
  }
}

// Returns the link header length to strip and the EtherType to put in the synthetic header.
void link_to_ethernet(int dlt, const uint8_t* p, uint32_t n, uint32_t& strip, uint16_t& ethertype) {
  strip = 0;
  ethertype = 0;
  switch (dlt) {
    case DLT_NULL:
    case DLT_LOOP: {
      strip = std::min<uint32_t>(4, n);
      if (n < 4) return;
      uint32_t fam;
      std::memcpy(&fam, p, 4);
      // DLT_NULL is host order of the capturing machine; accept either order.
      uint32_t swapped = __builtin_bswap32(fam);
      auto is_v4 = [](uint32_t f) { return f == 2; };
      auto is_v6 = [](uint32_t f) { return f == 10 || f == 24 || f == 28 || f == 30; };
      if (is_v4(fam) || is_v4(swapped)) ethertype = 0x0800;
      else if (is_v6(fam) || is_v6(swapped)) ethertype = 0x86dd;
      return;
    }
    case DLT_RAW:
    case kLinktypeIpv4:
    case kLinktypeIpv6:
      ethertype = ethertype_for_ip_version(p, n);
      return;
    case DLT_LINUX_SLL:
      strip = std::min<uint32_t>(16, n);
      if (n >= 16) ethertype = static_cast<uint16_t>(p[14] << 8 | p[15]);
      return;
    case kLinktypeSll2:
      strip = std::min<uint32_t>(20, n);
      if (n >= 20) ethertype = static_cast<uint16_t>(p[0] << 8 | p[1]);
      return;
    case DLT_PPP:
    case DLT_PPP_SERIAL: {
      // Captures labelled PPP sometimes carry Cisco HDLC framing (address 0x0f unicast or 0x8f
      // broadcast, then an EtherType), as Wireshark also recognises.
      if (n >= 4 && (p[0] == 0x0f || p[0] == 0x8f) && p[1] == 0x00) {
        strip = 4;
        ethertype = static_cast<uint16_t>(p[2] << 8 | p[3]);
        return;
      }
      uint32_t o = 0;
      if (n >= 2 && p[0] == 0xff && p[1] == 0x03) o = 2;
      if (n < o + 2) { strip = n; return; }
      strip = o + 2;
      ethertype = ppp_to_ethertype(static_cast<uint16_t>(p[o] << 8 | p[o + 1]));
      return;
    }
    case DLT_C_HDLC:
      strip = std::min<uint32_t>(4, n);
      if (n >= 4) ethertype = static_cast<uint16_t>(p[2] << 8 | p[3]);
      return;
    default:
      return;
  }
}

}  // namespace

Result<PcapReader> PcapReader::open(const std::string& path) {
  std::error_code ec;
  auto st = std::filesystem::status(path, ec);
  if (st.type() == std::filesystem::file_type::not_found)
    return hpr::error(Code::kNotFound, "capture file '{}' does not exist", path);
  if (ec) return hpr::error(Code::kNotFound, "capture file '{}': {}", path, ec.message());
  if (std::filesystem::is_directory(st))
    return hpr::error(Code::kInvalidArgument, "capture file '{}' is a directory; name a capture file", path);
  char errbuf[PCAP_ERRBUF_SIZE] = {};
  pcap_t* h = pcap_open_offline_with_tstamp_precision(path.c_str(), PCAP_TSTAMP_PRECISION_NANO, errbuf);
  if (h == nullptr) return hpr::error(Code::kInvalidArgument, "cannot read capture '{}': {}", path, errbuf);
  int dlt = pcap_datalink(h);
  if (!supported(dlt)) {
    const char* n = pcap_datalink_val_to_name(dlt);
    pcap_close(h);
    return hpr::error(Code::kInvalidArgument,
                 "capture '{}' has link type {} ({}), which hpr cannot map to Ethernet; convert it first, "
                 "for example with editcap -T ether",
                 path, dlt, n != nullptr ? n : "unknown");
  }
  PcapReader r;
  r.handle_ = h;
  r.link_type_ = dlt;
  r.path_ = path;
  return r;
}

PcapReader::PcapReader(PcapReader&& o) noexcept { *this = std::move(o); }
PcapReader& PcapReader::operator=(PcapReader&& o) noexcept {
  if (this != &o) {
    if (handle_ != nullptr) pcap_close(handle_);
    handle_ = std::exchange(o.handle_, nullptr);
    link_type_ = o.link_type_;
    path_ = std::move(o.path_);
    error_ = std::move(o.error_);
    scratch_ = std::move(o.scratch_);
  }
  return *this;
}
PcapReader::~PcapReader() {
  if (handle_ != nullptr) pcap_close(handle_);
}

bool PcapReader::next(PcapRecord& rec) {
  if (handle_ == nullptr) return false;
  pcap_pkthdr* hdr = nullptr;
  const u_char* data = nullptr;
  int rc = pcap_next_ex(handle_, &hdr, &data);
  if (rc == PCAP_ERROR_BREAK) return false;
  if (rc != 1) {
    error_ = fmt::format("{}: {}", path_, pcap_geterr(handle_));
    return false;
  }
  // Nanosecond precision was requested, so tv_usec holds nanoseconds.
  rec.ts_ns = static_cast<uint64_t>(hdr->ts.tv_sec) * 1000000000ull + static_cast<uint64_t>(hdr->ts.tv_usec);
  if (link_type_ == DLT_EN10MB) {
    rec.frame = {data, hdr->caplen};
    rec.wire_len = hdr->len;
    return true;
  }
  uint32_t strip = 0;
  uint16_t et = 0;
  link_to_ethernet(link_type_, data, hdr->caplen, strip, et);
  uint32_t body = hdr->caplen - strip;
  scratch_.resize(kSyntheticEthHeader + body);
  static constexpr uint8_t kMacs[12] = {2, 0, 0, 0, 0, 1, 2, 0, 0, 0, 0, 2};
  std::memcpy(scratch_.data(), kMacs, 12);
  scratch_[12] = static_cast<uint8_t>(et >> 8);
  scratch_[13] = static_cast<uint8_t>(et);
  if (body != 0) std::memcpy(scratch_.data() + kSyntheticEthHeader, data + strip, body);
  rec.frame = {scratch_.data(), scratch_.size()};
  rec.wire_len = hdr->len - std::min(hdr->len, strip) + kSyntheticEthHeader;
  return true;
}

Result<Capture> load_capture(const std::string& path) {
  auto r = PcapReader::open(path);
  if (!r) return r.status();
  Capture c;
  c.path = path;
  PcapRecord rec;
  while (r->next(rec)) {
    c.ts_ns.push_back(rec.ts_ns);
    c.frames.emplace_back(rec.frame.begin(), rec.frame.end());
  }
  c.warning = r->read_error();
  return c;
}

std::vector<std::string> list_captures(const std::string& dir) {
  std::vector<std::string> out;
  std::error_code ec;
  for (const auto& e : std::filesystem::directory_iterator(dir, ec)) {
    auto ext = e.path().extension().string();
    if (e.is_regular_file() && (ext == ".pcap" || ext == ".pcapng" || ext == ".cap")) out.push_back(e.path().string());
  }
  std::sort(out.begin(), out.end());
  return out;
}

Result<PcapWriter> PcapWriter::open(const std::string& path, std::string_view what) {
  auto f = AtomicFile::open(path, what);
  if (!f) return f.status();
  PcapWriter w;
  w.dead_ = pcap_open_dead_with_tstamp_precision(DLT_EN10MB, 65535, PCAP_TSTAMP_PRECISION_NANO);
  if (w.dead_ == nullptr) return error(Code::kInternal, "pcap_open_dead failed");
  w.file_.emplace(std::move(*f));
  w.dumper_ = pcap_dump_fopen(w.dead_, w.file_->file());
  if (w.dumper_ == nullptr) return error(Code::kIoError, "{} {}: {}", what, path, pcap_geterr(w.dead_));
  return w;
}
PcapWriter::PcapWriter(PcapWriter&& o) noexcept { *this = std::move(o); }
PcapWriter& PcapWriter::operator=(PcapWriter&& o) noexcept {
  if (this != &o) {
    if (dead_ != nullptr) pcap_close(dead_);
    dead_ = std::exchange(o.dead_, nullptr);
    dumper_ = std::exchange(o.dumper_, nullptr);
    file_ = std::move(o.file_);
    o.file_.reset();
  }
  return *this;
}
// Not finished: file_ removes the temporary file. pcap_dump_close would fclose file_'s FILE.
PcapWriter::~PcapWriter() {
  if (dead_ != nullptr) pcap_close(dead_);
}
void PcapWriter::write(uint64_t ts_ns, std::span<const uint8_t> frame) {
  if (dumper_ == nullptr) return;
  pcap_pkthdr h{};
  h.ts.tv_sec = static_cast<time_t>(ts_ns / 1000000000ull);
  h.ts.tv_usec = static_cast<suseconds_t>(ts_ns % 1000000000ull);
  h.caplen = h.len = static_cast<bpf_u_int32>(frame.size());
  pcap_dump(reinterpret_cast<u_char*>(dumper_), &h, frame.data());
}
Status PcapWriter::flush() {
  if (!file_ || file_->file() == nullptr) return error(Code::kIoError, "capture writer is closed");
  return file_->flush();
}
Status PcapWriter::finish() {
  if (!file_ || file_->file() == nullptr) return error(Code::kIoError, "capture writer is closed");
  dumper_ = nullptr;
  return file_->commit();
}

}  // namespace hpr
