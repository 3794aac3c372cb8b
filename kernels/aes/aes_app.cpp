// AesApp, KeyTable, key files and key derivation (see aes_app.hpp).
#include <arpa/inet.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>

#include <algorithm>
#include <charconv>
#include <fstream>
#include <sstream>

#include "kernels/aes/aes_app.hpp"
#include "kernels/aes/aes_tables.hpp"

namespace hpr::kernels::aes {

// ------------------------------------------------------------------ KeyTable
KeyTable::KeyTable(uint32_t capacity) : sched_(std::max<uint32_t>(capacity, 1)), valid_(std::max<uint32_t>(capacity, 1), 0) {}

Status KeyTable::set_key(uint32_t flow, const Key& key) {
  if (flow >= capacity())
    return error(Code::kInvalidArgument, "flow id {} >= key table capacity {}", flow, capacity());
  sched_[flow] = expand_key(key);
  if (valid_[flow] == 0) ++count_;
  valid_[flow] = 1;
  return Status::ok();
}

void KeyTable::clear_key(uint32_t flow) {
  if (flow >= capacity() || valid_[flow] == 0) return;
  valid_[flow] = 0;
  sched_[flow] = RoundKeys{};
  --count_;
}

// ------------------------------------------------------------------ key files
std::vector<uint8_t> canonical_bytes(const FlowTuple& t) {
  uint8_t a[18], b[18];
  std::memcpy(a, t.src.data(), 16);
  a[16] = static_cast<uint8_t>(t.sport >> 8); a[17] = static_cast<uint8_t>(t.sport);
  std::memcpy(b, t.dst.data(), 16);
  b[16] = static_cast<uint8_t>(t.dport >> 8); b[17] = static_cast<uint8_t>(t.dport);
  if (std::memcmp(a, b, 18) > 0) std::swap(a, b);
  std::vector<uint8_t> out{t.family, t.proto};
  out.insert(out.end(), a, a + 18);
  out.insert(out.end(), b, b + 18);
  return out;
}

namespace {

bool parse_hex_key(std::string_view s, Key& key) {
  if (s.size() != 32) return false;
  for (size_t i = 0; i < 16; ++i) {
    auto r = std::from_chars(s.data() + 2 * i, s.data() + 2 * i + 2, key[i], 16);
    if (r.ec != std::errc() || r.ptr != s.data() + 2 * i + 2) return false;
  }
  return true;
}

template <typename T>
bool parse_uint(std::string_view s, T max, T& v) {
  uint64_t x = 0;
  auto r = std::from_chars(s.data(), s.data() + s.size(), x, 10);
  if (r.ec != std::errc() || r.ptr != s.data() + s.size() || x > max) return false;
  v = static_cast<T>(x);
  return true;
}

bool parse_addr(std::string_view s, uint8_t& family, std::array<uint8_t, 16>& addr) {
  std::string z(s);
  addr.fill(0);
  if (inet_pton(AF_INET, z.c_str(), addr.data()) == 1) { family = 4; return true; }
  if (inet_pton(AF_INET6, z.c_str(), addr.data()) == 1) { family = 6; return true; }
  return false;
}

bool parse_proto(std::string_view s, uint8_t& proto) {
  if (s == "tcp") { proto = 6; return true; }
  if (s == "udp") { proto = 17; return true; }
  if (s == "sctp") { proto = 132; return true; }
  return parse_uint<uint8_t>(s, 255, proto);
}

}  // namespace

Result<std::vector<KeyFileEntry>> parse_key_text(std::string_view text, std::string_view file) {
  std::vector<KeyFileEntry> entries;
  uint32_t line_no = 0;
  size_t pos = 0;
  while (pos <= text.size()) {
    size_t eol = text.find('\n', pos);
    if (eol == std::string_view::npos) eol = text.size();
    std::string_view line = text.substr(pos, eol - pos);
    pos = eol + 1;
    ++line_no;
    if (auto h = line.find('#'); h != std::string_view::npos) line = line.substr(0, h);
    std::vector<std::string_view> tok;
    size_t i = 0;
    while (i < line.size()) {
      while (i < line.size() && (line[i] == ' ' || line[i] == '\t' || line[i] == '\r')) ++i;
      size_t j = i;
      while (j < line.size() && line[j] != ' ' && line[j] != '\t' && line[j] != '\r') ++j;
      if (j > i) tok.push_back(line.substr(i, j - i));
      i = j;
    }
    if (tok.empty()) {
      if (eol == text.size()) break;
      continue;
    }
    KeyFileEntry e;
    e.line = line_no;
    std::string_view key_tok;
    if (tok[0] == "flow") {
      if (tok.size() != 3)
        return error(Code::kInvalidArgument, "{}:{}: expected 'flow <flow-id> <32 hex digits>', got {} fields", file,
                     line_no, tok.size());
      e.by_flow_id = true;
      if (!parse_uint<uint32_t>(tok[1], 0xfffffffeu, e.flow_id))
        return error(Code::kInvalidArgument, "{}:{}: bad flow id '{}'", file, line_no, tok[1]);
      key_tok = tok[2];
    } else {
      if (tok.size() != 6)
        return error(Code::kInvalidArgument,
                     "{}:{}: expected '<proto> <src-addr> <src-port> <dst-addr> <dst-port> <32 hex digits>' or "
                     "'flow <id> <key>', got {} fields",
                     file, line_no, tok.size());
      if (!parse_proto(tok[0], e.tuple.proto))
        return error(Code::kInvalidArgument, "{}:{}: bad protocol '{}' (tcp, udp, sctp or 0..255)", file, line_no,
                     tok[0]);
      uint8_t fam_src = 0, fam_dst = 0;
      if (!parse_addr(tok[1], fam_src, e.tuple.src))
        return error(Code::kInvalidArgument, "{}:{}: bad source address '{}'", file, line_no, tok[1]);
      if (!parse_uint<uint16_t>(tok[2], 65535, e.tuple.sport))
        return error(Code::kInvalidArgument, "{}:{}: bad source port '{}'", file, line_no, tok[2]);
      if (!parse_addr(tok[3], fam_dst, e.tuple.dst))
        return error(Code::kInvalidArgument, "{}:{}: bad destination address '{}'", file, line_no, tok[3]);
      if (!parse_uint<uint16_t>(tok[4], 65535, e.tuple.dport))
        return error(Code::kInvalidArgument, "{}:{}: bad destination port '{}'", file, line_no, tok[4]);
      if (fam_src != fam_dst)
        return error(Code::kInvalidArgument, "{}:{}: source and destination address families differ", file,
                     line_no);
      e.tuple.family = fam_src;
      key_tok = tok[5];
    }
    if (!parse_hex_key(key_tok, e.key))
      return error(Code::kInvalidArgument, "{}:{}: key must be 32 hex digits (AES-128), got '{}'", file, line_no,
                   key_tok);
    entries.push_back(e);
    if (eol == text.size()) break;
  }
  return entries;
}

Result<std::vector<KeyFileEntry>> load_key_file(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  if (!f) return error(Code::kNotFound, "cannot open key file '{}'", path);
  std::ostringstream ss;
  ss << f.rdbuf();
  if (f.bad()) return error(Code::kIoError, "read error on key file '{}'", path);
  return parse_key_text(ss.str(), path);
}

Result<uint32_t> install(KeyTable& table, std::span<const KeyFileEntry> entries,
                         const std::function<uint32_t(const FlowTuple&)>& flow_of, std::string_view file) {
  uint32_t n = 0;
  for (const KeyFileEntry& e : entries) {
    uint32_t flow = e.by_flow_id ? e.flow_id : (flow_of ? flow_of(e.tuple) : kNoFlow);
    if (flow == kNoFlow) continue;
    if (flow >= table.capacity())
      return error(Code::kInvalidArgument, "{}:{}: flow id {} >= key table capacity {}", file, e.line, flow,
                   table.capacity());
    (void)table.set_key(flow, e.key);
    ++n;
  }
  return n;
}

// ------------------------------------------------------------------ key derivation
Key derive_key(const Key& master, std::span<const uint8_t> info) {
  static constexpr char kLabel[] = "hpr aes-128-cbc v1";
  std::vector<uint8_t> msg(kLabel, kLabel + sizeof(kLabel) - 1);
  msg.insert(msg.end(), info.begin(), info.end());
  uint8_t mac[EVP_MAX_MD_SIZE];
  unsigned int mac_len = 0;
  HMAC(EVP_sha256(), master.data(), static_cast<int>(master.size()), msg.data(), msg.size(), mac, &mac_len);
  Key k{};
  std::memcpy(k.data(), mac, k.size());
  return k;
}

Key derive_key(const Key& master, const FlowTuple& t) { return derive_key(master, canonical_bytes(t)); }

Key derive_key_for_flow(const Key& master, uint32_t flow) {
  uint8_t info[4];
  std::memcpy(info, &flow, 4);
  return derive_key(master, info);
}

void fill_derived(KeyTable& table, const Key& master, uint32_t first, uint32_t count) {
  for (uint64_t f = first; f < uint64_t{first} + count && f < table.capacity(); ++f)
    (void)table.set_key(static_cast<uint32_t>(f), derive_key_for_flow(master, static_cast<uint32_t>(f)));
}

// ------------------------------------------------------------------ the app
namespace {

class AesDeviceTables final : public DeviceTables {
 public:
  AesDeviceTables(cl::Buffer sched, cl::Buffer valid, uint32_t capacity)
      : sched_(std::move(sched)), valid_(std::move(valid)), capacity_(capacity) {}
  Status bind(cl::Kernel& kernel) override {
    try {
      kernel.setArg(4, sched_);
      kernel.setArg(5, valid_);
      kernel.setArg(6, capacity_);
    } catch (const cl::Error& e) {
      return error(Code::kUnavailable, "aes: setting key table arguments: {} ({})", e.what(), e.err());
    }
    return Status::ok();
  }

 private:
  cl::Buffer sched_, valid_;
  cl_uint capacity_;
};

std::string table_source() {
  std::string s = "__constant uint aes_te0[256] = {";
  for (int i = 0; i < 256; ++i) s += fmt::format("{}0x{:08x}u", i % 8 == 0 ? "\n  " : "", kTables.te0[i]) + ",";
  s += "\n};\n__constant uchar aes_sbox[256] = {";
  for (int i = 0; i < 256; ++i) s += fmt::format("{}0x{:02x}", i % 16 == 0 ? "\n  " : "", kTables.sbox[i]) + ",";
  s += "\n};\n";
  return s;
}

}  // namespace

AesApp::AesApp(std::shared_ptr<const KeyTable> keys, AesOptions options)
    : keys_(std::move(keys)), options_(options) {}

Slice AesApp::slice(const Packet& p) const {
  if (p.payload_off == kNoOffset) return Slice{0, 0, 0};
  return Slice{p.payload_off, p.payload_len, 0};
}

std::string AesApp::kernel_source() const {
  std::string src(embedded_source("hpr_desc"));
  src += "\n";
  src += table_source();
  src += embedded_source("aes");
  return src;
}

std::string AesApp::build_options() const {
  return options_.iv == IvMode::kCarried ? "-DHPR_AES_IV_CARRIED" : "";
}

Result<std::unique_ptr<DeviceTables>> AesApp::make_device_tables(const cl::Context& ctx,
                                                                 const cl::CommandQueue&) const {
  try {
    const uint32_t cap = keys_->capacity();
    cl::Buffer sched(ctx, CL_MEM_READ_ONLY | CL_MEM_COPY_HOST_PTR, size_t{cap} * kScheduleBytes,
                     const_cast<uint8_t*>(keys_->schedule_bytes()));
    cl::Buffer valid(ctx, CL_MEM_READ_ONLY | CL_MEM_COPY_HOST_PTR, cap, const_cast<uint8_t*>(keys_->valid_bytes()));
    return std::unique_ptr<DeviceTables>(std::make_unique<AesDeviceTables>(std::move(sched), std::move(valid), cap));
  } catch (const cl::Error& e) {
    return error(Code::kUnavailable, "aes: uploading the key table ({} flows): {} ({})", keys_->capacity(), e.what(),
                 e.err());
  }
}

void AesApp::finish(std::span<Packet> pkts, const BatchView& batch) const {
  uint64_t enc = 0, sh = 0, miss = 0, empty = 0;
  const uint32_t n = std::min<uint32_t>(batch.n, static_cast<uint32_t>(pkts.size()));
  for (uint32_t i = 0; i < n; ++i) {
    if (pkts[i].drop != DropReason::kNone) continue;  // dropped before the batch (parser): counted there
    uint32_t r;
    std::memcpy(&r, batch.out + 4 * size_t{i}, 4);
    switch (r) {
      case kEncrypted: ++enc; break;
      case kShort: ++sh; break;
      case kEmpty: ++empty; break;
      default:  // kKeyMissing (and anything unexpected: never forward a packet we did not encrypt)
        ++miss;
        pkts[i].drop = DropReason::kKeyMissing;
        break;
    }
  }
  encrypted_.fetch_add(enc, std::memory_order_relaxed);
  short_.fetch_add(sh, std::memory_order_relaxed);
  key_missing_.fetch_add(miss, std::memory_order_relaxed);
  empty_.fetch_add(empty, std::memory_order_relaxed);
}

uint64_t AesApp::count_events(const BatchView& batch) const {
  uint64_t n = 0;
  for (uint32_t i = 0; i < batch.n; ++i) {
    uint32_t r;
    std::memcpy(&r, batch.out + 4 * size_t{i}, 4);
    n += r == kEncrypted;
  }
  return n;
}

Counters AesApp::counters() const {
  return Counters{encrypted_.load(std::memory_order_relaxed), short_.load(std::memory_order_relaxed),
                  key_missing_.load(std::memory_order_relaxed), empty_.load(std::memory_order_relaxed)};
}

}  // namespace hpr::kernels::aes
