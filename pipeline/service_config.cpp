#include "pipeline/service_config.hpp"

#include <arpa/inet.h>

#include "pipeline/toml_util.hpp"

namespace hpr {
namespace {

Status bad(const std::string& sec, const char* key, const toml::node& v, std::string_view want) {
  return error(Code::kInvalidArgument, "{}.{}: want {} (line {})", sec, key, want, v.source().begin.line);
}

Result<int64_t> integer_in(const std::string& sec, const char* key, const toml::node& v, int64_t hi) {
  auto x = integer_of(v);
  if (!x || *x < 0 || *x > hi) return bad(sec, key, v, fmt::format("an integer in 0..{}", hi));
  return *x;
}

Status read_prefix(const std::string& sec, const char* key, const toml::node& v, std::optional<uint32_t>& addr,
                   uint8_t& len) {
  auto s = v.value<std::string>();
  const std::string want = "an IPv4 prefix a.b.c.d/len as a string";
  if (!s) return bad(sec, key, v, want);
  const size_t slash = s->find('/');
  in_addr a{};
  const std::string host = s->substr(0, slash);
  if (inet_pton(AF_INET, host.c_str(), &a) != 1) return bad(sec, key, v, want + fmt::format(", not '{}'", *s));
  int l = 32;
  if (slash != std::string::npos) {
    const std::string ls = s->substr(slash + 1);
    if (ls.empty() || ls.size() > 2 || ls.find_first_not_of("0123456789") != std::string::npos || std::stoi(ls) > 32)
      return bad(sec, key, v, want + fmt::format(" with len 0..32, not '{}'", *s));
    l = std::stoi(ls);
  }
  const uint32_t x = ntohl(a.s_addr);
  if (l < 32 && (x & (0xffffffffu >> l)) != 0)
    return bad(sec, key, v, fmt::format("a prefix without host bits beyond /{}, not '{}'", l, *s));
  addr = x;
  len = static_cast<uint8_t>(l);
  return Status::ok();
}

}  // namespace

Status read_services(const toml::table& t, std::vector<kernels::AppOptions::ServiceSpec>& out,
                     std::vector<std::vector<std::string>>& lanes) {
  auto list = tables_of(t, "service");
  if (!list) return list.status();
  const toml::array* a = *list;
  if (a == nullptr) return Status::ok();
  out.clear();
  lanes.clear();
  for (size_t i = 0; i < a->size(); ++i) {
    const toml::table& e = *a->get(i)->as_table();
    const std::string sec = fmt::format("service[{}]", i);
    HPR_RETURN_IF_ERROR(
        check_keys(e, sec, {"name", "chain", "default", "proto", "src", "dst", "port", "dscp", "gen_service", "lanes"}));
    kernels::AppOptions::ServiceSpec s;
    for (const char* key : {"name", "chain"}) {
      const toml::node* v = e.get(key);
      if (v == nullptr)
        return error(Code::kInvalidArgument, "{}.{}: missing (line {}; a service needs a name and a chain)", sec, key,
                     e.source().begin.line);
      auto x = v->value<std::string>();
      if (!x || x->empty()) return bad(sec, key, *v, "a non-empty string");
      (std::string_view(key) == "name" ? s.name : s.chain) = *x;
    }
    for (const auto& o : out)
      if (o.name == s.name) return bad(sec, "name", *e.get("name"), fmt::format("a name of its own ('{}' is taken)", s.name));
    if (auto c = kernels::chain_apps(s.chain); !c)
      return error(Code::kInvalidArgument, "{}.chain ({}): {} (line {})", sec, s.name, c.status().message(),
                   e.get("chain")->source().begin.line);
    if (const toml::node* v = e.get("default")) {
      auto b = v->value<bool>();
      if (!b) return bad(sec, "default", *v, "true or false");
      s.match.is_default = *b;
    }
    if (const toml::node* v = e.get("proto")) {
      static const std::pair<const char*, uint8_t> kNames[] = {{"tcp", 6}, {"udp", 17}, {"icmp", 1}, {"icmpv6", 58}, {"sctp", 132}};
      if (auto name = v->value<std::string>()) {
        for (const auto& [nm, num] : kNames)
          if (*name == nm) s.match.proto = num;
        if (!s.match.proto) return bad(sec, "proto", *v, "tcp, udp, icmp, icmpv6, sctp or a protocol number 0..255");
      } else {
        auto x = integer_in(sec, "proto", *v, 255);
        if (!x) return x.status();
        s.match.proto = static_cast<uint8_t>(*x);
      }
    }
    if (const toml::node* v = e.get("src")) HPR_RETURN_IF_ERROR(read_prefix(sec, "src", *v, s.match.src, s.match.src_len));
    if (const toml::node* v = e.get("dst")) HPR_RETURN_IF_ERROR(read_prefix(sec, "dst", *v, s.match.dst, s.match.dst_len));
    if (const toml::node* v = e.get("port")) {
      auto x = integer_in(sec, "port", *v, 65535);
      if (!x) return x.status();
      s.match.port = static_cast<uint16_t>(*x);
    }
    if (const toml::node* v = e.get("dscp")) {
      auto x = integer_in(sec, "dscp", *v, 63);
      if (!x) return x.status();
      s.match.dscp = static_cast<uint8_t>(*x);
    }
    if (const toml::node* v = e.get("gen_service")) {
      auto x = integer_in(sec, "gen_service", *v, 255);
      if (!x) return x.status();
      s.match.gen_service = static_cast<uint8_t>(*x);
    }
    std::vector<std::string> ls;
    if (const toml::node* v = e.get("lanes")) {
      const toml::array* names = v->as_array();
      const char* want = "a list of lane names or parts of them, e.g. [\"native\", \"pthread\"]";
      if (names == nullptr || names->empty()) return bad(sec, "lanes", *v, want);
      for (const auto& n : *names) {
        auto x = n.value<std::string>();
        if (!x || x->empty()) return bad(sec, "lanes", n, want);
        ls.push_back(*x);
      }
    }
    lanes.push_back(std::move(ls));
    out.push_back(std::move(s));
  }
  return Status::ok();
}

}  // namespace hpr
