#include "kernels/ipv4/routes.hpp"

#include <arpa/inet.h>
#include <zlib.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cstring>
#include <filesystem>

namespace hpr::kernels::ipv4 {
namespace {

bool parse_u32(std::string_view s, uint32_t& v) {
  if (s.empty()) return false;
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  return ec == std::errc() && p == s.data() + s.size();
}

std::string_view trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t' || s.front() == '\r')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t' || s.back() == '\r')) s.remove_suffix(1);
  return s;
}

// Splits on runs of spaces/tabs.
std::vector<std::string_view> fields(std::string_view s) {
  std::vector<std::string_view> out;
  size_t i = 0;
  while (i < s.size()) {
    while (i < s.size() && (s[i] == ' ' || s[i] == '\t')) ++i;
    size_t j = i;
    while (j < s.size() && s[j] != ' ' && s[j] != '\t') ++j;
    if (j > i) out.push_back(s.substr(i, j - i));
    i = j;
  }
  return out;
}

// "a.b.c.d/len" → prefix, len; error text empty on success.
std::string parse_prefix(std::string_view s, uint32_t& prefix, uint8_t& len) {
  size_t slash = s.find('/');
  if (slash == std::string_view::npos) return fmt::format("'{}' is not a prefix (expected a.b.c.d/len)", s);
  if (!parse_ipv4(s.substr(0, slash), prefix)) return fmt::format("bad IPv4 address '{}'", s.substr(0, slash));
  uint32_t l = 0;
  if (!parse_u32(s.substr(slash + 1), l) || l > 32) return fmt::format("bad prefix length '{}' (0..32)", s.substr(slash + 1));
  len = static_cast<uint8_t>(l);
  uint32_t mask = len == 0 ? 0 : ~0u << (32 - len);
  if ((prefix & ~mask) != 0) return fmt::format("host bits set in '{}' (did you mean {}/{}?)", s, format_ipv4(prefix & mask), l);
  return {};
}

// An IPv6 prefix "x:y::/len" (len 0..128, host bits zero), for the lines a mixed table carries. Error
// text empty when it is one; only called on fields holding a ':', which no IPv4 prefix has.
std::string parse_prefix6(std::string_view s, Route6& r) {
  size_t slash = s.find('/');
  if (slash == std::string_view::npos) return fmt::format("'{}' is not a prefix (expected a.b.c.d/len)", s);
  if (!parse_ipv6(s.substr(0, slash), r.prefix)) return fmt::format("bad IPv6 address '{}'", s.substr(0, slash));
  uint32_t l = 0;
  if (!parse_u32(s.substr(slash + 1), l) || l > 128)
    return fmt::format("bad IPv6 prefix length '{}' (0..128)", s.substr(slash + 1));
  r.len = static_cast<uint8_t>(l);
  Ipv6Addr masked = r.prefix;
  for (uint32_t b = 0; b < 16; ++b) {
    const uint32_t keep = l >= 8 * (b + 1) ? 8 : (l > 8 * b ? l - 8 * b : 0);
    masked[b] &= static_cast<uint8_t>(keep == 0 ? 0 : 0xffu << (8 - keep));
  }
  if (masked != r.prefix) return fmt::format("host bits set in '{}' (did you mean {}/{}?)", s, format_ipv6(masked), l);
  return {};
}

// Later lines win; count the prefixes an earlier line already had (sort a copy of the keys: ~30 ms for
// a full table, no per-route hashing during the parse).
uint64_t count_duplicates(const std::vector<Route>& routes) {
  std::vector<uint64_t> keys(routes.size());
  for (size_t i = 0; i < routes.size(); ++i) keys[i] = uint64_t{routes[i].prefix} << 8 | routes[i].len;
  std::sort(keys.begin(), keys.end());
  uint64_t dups = 0;
  for (size_t i = 1; i < keys.size(); ++i) dups += keys[i] == keys[i - 1];
  return dups;
}

template <typename LineFn>
Status for_each_line(std::string_view text, LineFn&& fn) {
  size_t line_no = 0;
  size_t pos = 0;
  while (pos < text.size()) {
    size_t nl = text.find('\n', pos);
    if (nl == std::string_view::npos) nl = text.size();
    ++line_no;
    HPR_RETURN_IF_ERROR(fn(text.substr(pos, nl - pos), line_no));
    pos = nl + 1;
  }
  return Status::ok();
}

Result<RouteLoad> finish(RouteLoad load, std::string_view name) {
  if (load.routes.empty()) {
    if (load.ipv6_skipped > 0)
      return error(Code::kInvalidArgument, "{}: no IPv4 routes (empty route table; {} IPv6 lines skipped)", name,
                   load.ipv6_skipped);
    return error(Code::kInvalidArgument, "{}: no routes (empty route table)", name);
  }
  load.duplicates = count_duplicates(load.routes);
  return load;
}

}  // namespace

bool parse_ipv4(std::string_view s, uint32_t& addr) {
  uint32_t a = 0;
  for (int i = 0; i < 4; ++i) {
    size_t dot = i < 3 ? s.find('.') : s.size();
    if (dot == std::string_view::npos || dot == 0 || dot > 3) return false;
    uint32_t octet = 0;
    if (!parse_u32(s.substr(0, dot), octet) || octet > 255) return false;
    a = (a << 8) | octet;
    s.remove_prefix(i < 3 ? dot + 1 : dot);
  }
  if (!s.empty()) return false;
  addr = a;
  return true;
}

bool parse_ipv6(std::string_view s, Ipv6Addr& addr) {
  if (s.size() > 45) return false;
  std::string z(s);
  return inet_pton(AF_INET6, z.c_str(), addr.data()) == 1;
}

std::string format_ipv6(const Ipv6Addr& addr) {
  char buf[INET6_ADDRSTRLEN] = {};
  inet_ntop(AF_INET6, addr.data(), buf, sizeof buf);
  return buf;
}

std::string format_ipv4(uint32_t a) {
  return fmt::format("{}.{}.{}.{}", a >> 24, (a >> 16) & 255, (a >> 8) & 255, a & 255);
}

Result<std::string> read_maybe_gzip(const std::string& path, size_t max_bytes) {
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec))
    return error(Code::kInvalidArgument, "{}: is a directory, not a route file", path);
  // gzread reads plain files transparently as well.
  gzFile f = gzopen(path.c_str(), "rb");
  if (f == nullptr) {
    return error(errno == ENOENT ? Code::kNotFound : Code::kIoError, "{}: cannot open: {}", path, std::strerror(errno));
  }
  gzbuffer(f, 1 << 17);
  std::string out;
  char buf[1 << 16];
  for (;;) {
    int n = gzread(f, buf, sizeof buf);
    if (n < 0) {
      int err = 0;
      std::string msg = gzerror(f, &err);
      gzclose(f);
      return error(Code::kIoError, "{}: read failed: {}", path, msg);
    }
    if (n == 0) break;
    if (out.size() + static_cast<size_t>(n) > max_bytes) {
      gzclose(f);
      return error(Code::kInvalidArgument, "{}: more than {} MiB after decompression (a full BGP table is ~ 25 MB)",
                   path, max_bytes >> 20);
    }
    out.append(buf, static_cast<size_t>(n));
  }
  gzclose(f);
  return out;
}

Result<RouteLoad> parse_ipasn(std::string_view text, std::string_view name, uint32_t num_ports) {
  if (num_ports == 0) return error(Code::kInvalidArgument, "num_ports must be at least 1 (next hop = AS mod num_ports)");
  RouteLoad load;
  std::vector<Route>& routes = load.routes;
  routes.reserve(text.size() / 20);
  Status st = for_each_line(text, [&](std::string_view line, size_t no) -> Status {
    line = trim(line);
    if (line.empty() || line.front() == ';') return Status::ok();
    auto f = fields(line);
    if (f.size() != 2) return error(Code::kInvalidArgument, "{}:{}: expected 'prefix/len<TAB>AS', got {} field(s)", name, no, f.size());
    if (f[0].find(':') != std::string_view::npos) {
      Route6 r6;
      if (auto e = parse_prefix6(f[0], r6); !e.empty()) return error(Code::kInvalidArgument, "{}:{}: {}", name, no, e);
      uint32_t as = 0;
      if (!parse_u32(f[1], as)) return error(Code::kInvalidArgument, "{}:{}: bad origin AS '{}' (expected a decimal number)", name, no, f[1]);
      r6.next_hop = as % num_ports;
      load.routes6.push_back(r6);
      ++load.ipv6_skipped;
      return Status::ok();
    }
    Route r;
    if (auto e = parse_prefix(f[0], r.prefix, r.len); !e.empty()) return error(Code::kInvalidArgument, "{}:{}: {}", name, no, e);
    uint32_t as = 0;
    if (!parse_u32(f[1], as)) return error(Code::kInvalidArgument, "{}:{}: bad origin AS '{}' (expected a decimal number)", name, no, f[1]);
    r.next_hop = as % num_ports;
    if (r.next_hop >= kMaxNextHop) return error(Code::kInvalidArgument, "num_ports {} too large (next hops must be < {})", num_ports, kMaxNextHop);
    routes.push_back(r);
    return Status::ok();
  });
  if (!st) return st;
  return finish(std::move(load), name);
}

Result<RouteLoad> parse_route_text(std::string_view text, std::string_view name, std::span<const NextHopAddr> addrs) {
  RouteLoad load;
  std::vector<Route>& routes = load.routes;
  Status st = for_each_line(text, [&](std::string_view line, size_t no) -> Status {
    line = trim(line);
    if (line.empty() || line.front() == ';' || line.front() == '#') return Status::ok();
    auto f = fields(line);
    if (f.size() != 2) return error(Code::kInvalidArgument, "{}:{}: expected 'prefix/len nexthop', got {} field(s)", name, no, f.size());
    if (f[0].find(':') != std::string_view::npos) {
      Route6 r6;
      if (auto e = parse_prefix6(f[0], r6); !e.empty()) return error(Code::kInvalidArgument, "{}:{}: {}", name, no, e);
      if (!parse_u32(f[1], r6.next_hop))
        return error(Code::kInvalidArgument, "{}:{}: bad next hop '{}' of an IPv6 route (expected a decimal port number)",
                     name, no, f[1]);
      if (r6.next_hop >= kMaxNextHop)
        return error(Code::kInvalidArgument, "{}:{}: next hop {} too large (must be < {})", name, no, r6.next_hop, kMaxNextHop);
      load.routes6.push_back(r6);
      ++load.ipv6_skipped;
      return Status::ok();
    }
    Route r;
    if (auto e = parse_prefix(f[0], r.prefix, r.len); !e.empty()) return error(Code::kInvalidArgument, "{}:{}: {}", name, no, e);
    uint32_t nh = 0, addr = 0;
    if (f[1].find('.') != std::string_view::npos && parse_ipv4(f[1], addr)) {
      auto it = std::find_if(addrs.begin(), addrs.end(), [&](const NextHopAddr& a) { return a.addr == addr; });
      if (it == addrs.end())
        return error(Code::kInvalidArgument, "{}:{}: next hop {} is not the address of any [[neighbour]]", name, no,
                     f[1]);
      nh = it->next_hop;
    } else if (!parse_u32(f[1], nh))
      return error(Code::kInvalidArgument, "{}:{}: bad next hop '{}' (expected a decimal port number)", name, no, f[1]);
    if (nh >= kMaxNextHop) return error(Code::kInvalidArgument, "{}:{}: next hop {} too large (must be < {})", name, no, nh, kMaxNextHop);
    r.next_hop = nh;
    routes.push_back(r);
    return Status::ok();
  });
  if (!st) return st;
  return finish(std::move(load), name);
}

Result<RouteLoad> load_ipasn(const std::string& path, uint32_t num_ports) {
  auto text = read_maybe_gzip(path);
  if (!text) return text.status();
  return parse_ipasn(*text, path, num_ports);
}

Result<RouteLoad> load_route_text(const std::string& path, std::span<const NextHopAddr> addrs) {
  auto text = read_maybe_gzip(path);
  if (!text) return text.status();
  return parse_route_text(*text, path, addrs);
}

}  // namespace hpr::kernels::ipv4
