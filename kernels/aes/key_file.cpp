// Key files: parsing, loading and installing into a KeyTable (declared in aes_app.hpp).
#include <arpa/inet.h>

#include <cerrno>
#include <charconv>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "kernels/aes/aes_app.hpp"

namespace hpr::kernels::aes {

std::array<uint8_t, kCanonicalBytes> canonical_bytes(const FlowTuple& t) {
  uint8_t a[18], b[18];
  std::memcpy(a, t.src.data(), 16);
  a[16] = static_cast<uint8_t>(t.sport >> 8); a[17] = static_cast<uint8_t>(t.sport);
  std::memcpy(b, t.dst.data(), 16);
  b[16] = static_cast<uint8_t>(t.dport >> 8); b[17] = static_cast<uint8_t>(t.dport);
  if (std::memcmp(a, b, 18) > 0) std::swap(a, b);
  std::array<uint8_t, kCanonicalBytes> out;
  out[0] = t.family;
  out[1] = t.proto;
  std::memcpy(out.data() + 2, a, 18);
  std::memcpy(out.data() + 20, b, 18);
  return out;
}

namespace {

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

Result<Key> parse_hex_key(std::string_view hex) {
  // Never echo `hex`: it is key material (or a key with a typo, which is as secret).
  if (hex.size() != 2 * kKeyBytes)
    return error(Code::kInvalidArgument, "want 32 hex digits (AES-128), got {} characters", hex.size());
  auto nibble = [](char c) -> int {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
  };
  Key key{};
  for (size_t i = 0; i < hex.size(); ++i) {
    int v = nibble(hex[i]);
    if (v < 0) return error(Code::kInvalidArgument, "want 32 hex digits (AES-128), character {} is not one", i + 1);
    key[i / 2] = static_cast<uint8_t>(key[i / 2] << 4 | v);
  }
  return key;
}

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
        return error(Code::kInvalidArgument, "{}:{}: bad flow id in field 2 (a decimal number below 4294967295)", file,
                     line_no);
      key_tok = tok[2];
    } else {
      if (tok.size() != 6)
        return error(Code::kInvalidArgument,
                     "{}:{}: expected '<proto> <src-addr> <src-port> <dst-addr> <dst-port> <32 hex digits>' or "
                     "'flow <id> <key>', got {} fields",
                     file, line_no, tok.size());
      if (!parse_proto(tok[0], e.tuple.proto))
        return error(Code::kInvalidArgument, "{}:{}: bad protocol in field 1 (tcp, udp, sctp or 0..255)", file,
                     line_no);
      uint8_t fam_src = 0, fam_dst = 0;
      if (!parse_addr(tok[1], fam_src, e.tuple.src))
        return error(Code::kInvalidArgument, "{}:{}: bad source address in field 2 (IPv4 or IPv6)", file, line_no);
      if (!parse_uint<uint16_t>(tok[2], 65535, e.tuple.sport))
        return error(Code::kInvalidArgument, "{}:{}: bad source port in field 3 (0..65535)", file, line_no);
      if (!parse_addr(tok[3], fam_dst, e.tuple.dst))
        return error(Code::kInvalidArgument, "{}:{}: bad destination address in field 4 (IPv4 or IPv6)", file, line_no);
      if (!parse_uint<uint16_t>(tok[4], 65535, e.tuple.dport))
        return error(Code::kInvalidArgument, "{}:{}: bad destination port in field 5 (0..65535)", file, line_no);
      if (fam_src != fam_dst)
        return error(Code::kInvalidArgument, "{}:{}: source and destination address families differ", file,
                     line_no);
      e.tuple.family = fam_src;
      key_tok = tok[5];
    }
    auto key = parse_hex_key(key_tok);
    if (!key) return error(Code::kInvalidArgument, "{}:{}: key: {}", file, line_no, key.status().message());
    e.key = *key;
    entries.push_back(e);
    if (eol == text.size()) break;
  }
  return entries;
}

Result<std::vector<KeyFileEntry>> load_key_file(const std::string& path) {
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec))
    return error(Code::kInvalidArgument, "key file '{}' is a directory (want a file of key lines)", path);
  errno = 0;
  std::ifstream f(path, std::ios::binary);
  if (!f)
    return error(errno == ENOENT ? Code::kNotFound : Code::kIoError, "cannot open key file '{}': {}", path,
                 std::strerror(errno));
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

}  // namespace hpr::kernels::aes
