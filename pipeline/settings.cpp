#include "pipeline/settings.hpp"

#include <charconv>
#include <cmath>
#include <cstdlib>
#include <fmt/ranges.h>
#include <toml++/toml.h>

#include <algorithm>

#include "kernels/registry.hpp"

namespace hpr {
namespace {

using Arg = Setting::Arg;

Status bad(const std::string& name, const SettingValue& v, std::string_view what) {
  if (v.node != nullptr) return error(Code::kInvalidArgument, "{}: {} (line {})", name, what, v.line);
  return error(Code::kInvalidArgument, "{}: {}", name, what);
}

// One command-line argument (the last one when a non-repeatable flag was given twice).
const std::string& last_arg(const SettingValue& v) {
  static const std::string kEmpty;
  return v.args.empty() ? kEmpty : v.args.back();
}

Result<uint64_t> uint_of(const SettingValue& v, const std::string& name, uint64_t lo, uint64_t hi) {
  int64_t x = 0;
  if (v.node != nullptr) {
    const auto* i = v.node->as_integer();  // not value<int64_t>(): it converts (and truncates) floats
    if (i == nullptr) return bad(name, v, fmt::format("want an integer in {}..{}", lo, hi));
    x = i->get();
  } else {
    const std::string& s = last_arg(v);
    auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), x);
    if (ec != std::errc() || p != s.data() + s.size() || s.empty())
      return bad(name, v, fmt::format("'{}' is not an integer in {}..{}", s, lo, hi));
  }
  if (x < 0 || static_cast<uint64_t>(x) < lo || static_cast<uint64_t>(x) > hi)
    return bad(name, v, fmt::format("{} is not in {}..{}", x, lo, hi));
  return static_cast<uint64_t>(x);
}

// Finite numbers in [lo, hi] (NaN and infinities fail the comparison and are refused).
Result<double> num_of(const SettingValue& v, const std::string& name, double lo, double hi) {
  double x = 0;
  if (v.node != nullptr) {
    auto d = v.node->value<double>();  // integers and floats
    if (!d) return bad(name, v, fmt::format("want a number in {}..{}", lo, hi));
    x = *d;
  } else {
    const std::string& s = last_arg(v);
    char* end = nullptr;
    x = std::strtod(s.c_str(), &end);
    if (s.empty() || end != s.c_str() + s.size()) return bad(name, v, fmt::format("'{}' is not a number", s));
  }
  if (!(x >= lo && x <= hi)) return bad(name, v, fmt::format("{} is not in {}..{}", x, lo, hi));
  return x;
}

Result<std::string> str_of(const SettingValue& v, const std::string& name) {
  if (v.node == nullptr) return last_arg(v);
  auto s = v.node->value<std::string>();
  if (!s) return bad(name, v, "want a string");
  return *s;
}

Result<bool> bool_of(const SettingValue& v, const std::string& name) {
  if (v.node != nullptr) {
    auto b = v.node->value<bool>();
    if (!b) return bad(name, v, "want true or false");
    return *b;
  }
  const std::string& s = last_arg(v);
  if (s == "on" || s == "true" || s == "1" || s == "yes") return true;
  if (s == "off" || s == "false" || s == "0" || s == "no") return false;
  return bad(name, v, fmt::format("'{}' is not on or off", s));
}

template <typename T>
using Ref = std::function<T&(RunConfig&)>;

Setting uint_setting(std::string_view key, std::string_view flag, std::string_view help, uint64_t lo, uint64_t hi,
                     std::function<void(RunConfig&, uint64_t)> set) {
  Setting s{key, flag, help, Arg::kOne, nullptr};
  s.apply = [=, name = s.name()](RunConfig& c, const SettingValue& v) -> Status {
    auto x = uint_of(v, name, lo, hi);
    if (!x) return x.status();
    set(c, *x);
    return Status::ok();
  };
  return s;
}

// app.name; "ip" names the ipv4 app, which forwards IPv6 too where the routes hold IPv6 prefixes.
Setting app_setting() {
  Setting s{"app.name", "--app",
            "Application: ipv4 (or ip: IPv4 and IPv6 forwarding, one app), dpi, md5, aes; or a chain, the apps in order "
            "separated by commas (ipv4,aes: each packet through each app, native lanes)",
            Arg::kOne, nullptr};
  s.apply = [name = s.name()](RunConfig& c, const SettingValue& v) -> Status {
    auto x = str_of(v, name);
    if (!x) return x.status();
    auto apps = kernels::chain_apps(*x);  // validate() names what is wrong with it
    c.app = apps ? fmt::format("{}", fmt::join(*apps, ",")) : *x;
    return Status::ok();
  };
  return s;
}

// lanes.workers: auto (the default) or 1..kMaxWorkers.
Setting workers_setting() {
  Setting s{"lanes.workers", "--workers",
            "Workers: threads that each receive, classify, run the app and transmit, each pinned to a core of its own, "
            "each with a lane on every device (auto or 1..64; auto, the default: one per core where the input is a "
            "DPDK port with RSS, else 1). A DPDK port with RSS gives each worker an rx queue, other ports are spread "
            "over the workers by flow hash",
            Arg::kOne, nullptr};
  s.apply = [name = s.name()](RunConfig& c, const SettingValue& v) -> Status {
    if (v.node != nullptr ? v.node->value<std::string>() == "auto" : last_arg(v) == "auto") {
      c.workers_auto = true;
      c.workers = 1;
      return Status::ok();
    }
    const bool integer = v.node != nullptr ? v.node->is_integer()
                                           : !last_arg(v).empty() &&
                                                 last_arg(v).find_first_not_of("0123456789") == std::string::npos;
    if (!integer) return bad(name, v, fmt::format("want auto or a worker count in 1..{}", kMaxWorkers));
    auto x = uint_of(v, name, 1, kMaxWorkers);
    if (!x) return x.status();
    c.workers_auto = false;
    c.workers = static_cast<uint32_t>(*x);
    return Status::ok();
  };
  return s;
}

Setting num_setting(std::string_view key, std::string_view flag, std::string_view help, double lo, double hi,
                    Ref<double> ref) {
  Setting s{key, flag, help, Arg::kOne, nullptr};
  s.apply = [=, name = s.name()](RunConfig& c, const SettingValue& v) -> Status {
    auto x = num_of(v, name, lo, hi);
    if (!x) return x.status();
    ref(c) = *x;
    return Status::ok();
  };
  return s;
}

Setting str_setting(std::string_view key, std::string_view flag, std::string_view help, Ref<std::string> ref) {
  Setting s{key, flag, help, Arg::kOne, nullptr};
  s.apply = [=, name = s.name()](RunConfig& c, const SettingValue& v) -> Status {
    auto x = str_of(v, name);
    if (!x) return x.status();
    ref(c) = *x;
    return Status::ok();
  };
  return s;
}

// A string that must be one of `choices`.
Setting choice_setting(std::string_view key, std::string_view flag, std::string_view help,
                       std::vector<std::string> choices, Ref<std::string> ref) {
  Setting s{key, flag, help, Arg::kOne, nullptr};
  s.apply = [=, name = s.name()](RunConfig& c, const SettingValue& v) -> Status {
    auto x = str_of(v, name);
    if (!x) return x.status();
    if (std::find(choices.begin(), choices.end(), *x) == choices.end())
      return bad(name, v, fmt::format("'{}' is not one of {}", *x, fmt::join(choices, ", ")));
    ref(c) = *x;
    return Status::ok();
  };
  return s;
}

Setting bool_setting(std::string_view key, std::string_view flag, std::string_view help, Ref<bool> ref) {
  Setting s{key, flag, help, Arg::kOne, nullptr};
  s.apply = [=, name = s.name()](RunConfig& c, const SettingValue& v) -> Status {
    auto x = bool_of(v, name);
    if (!x) return x.status();
    ref(c) = *x;
    return Status::ok();
  };
  return s;
}

// A boolean key whose flag is a switch that sets `when_given` (e.g. --no-learn sets learn = false).
Setting switch_setting(std::string_view key, std::string_view flag, std::string_view help, bool when_given,
                       Ref<bool> ref) {
  Setting s = bool_setting(key, flag, help, ref);
  s.arg = Arg::kSwitch;
  auto file = s.apply;
  s.apply = [=](RunConfig& c, const SettingValue& v) -> Status {
    if (v.node != nullptr) return file(c, v);
    ref(c) = when_given;
    return Status::ok();
  };
  return s;
}

Setting list_setting(std::string_view key, std::string_view flag, std::string_view help, bool split,
                     Ref<std::vector<std::string>> ref) {
  Setting s{key, flag, help, Arg::kMany, nullptr};
  s.apply = [=, name = s.name()](RunConfig& c, const SettingValue& v) -> Status {
    auto x = strs_of(v, name, split);
    if (!x) return x.status();
    ref(c) = *x;
    return Status::ok();
  };
  return s;
}

// Also records that the user gave the setting (for defaults that depend on other settings).
Setting given_setting(Setting s, Ref<bool> given) {
  auto inner = s.apply;
  s.apply = [=](RunConfig& c, const SettingValue& v) -> Status {
    HPR_RETURN_IF_ERROR(inner(c, v));
    given(c) = true;
    return Status::ok();
  };
  return s;
}

// One endpoint spec, pcap:PATH | dpdk:ETHDEV | gen | null, into e's kind and path.
Status parse_endpoint(const std::string& name, const SettingValue& v, const std::string& spec, bool input,
                      EndpointConfig& e) {
  if (input && (spec == "gen" || spec == "generator")) {
    e.kind = "generator";
  } else if (!input && spec == "null") {
    e.kind = "null";
  } else if (spec.rfind("pcap:", 0) == 0 && spec.size() > 5) {
    e.kind = "pcap";
    e.pcap = spec.substr(5);
  } else if (spec.rfind("dpdk:", 0) == 0 && spec.size() > 5) {
    e.kind = "dpdk";
    e.dpdk_port = spec.substr(5);
  } else {
    return bad(name, v, fmt::format("'{}': use pcap:PATH, dpdk:ETHDEV or {}", spec, input ? "gen" : "null"));
  }
  return Status::ok();
}

// --in: pcap:PATH | dpdk:ETHDEV | gen, a shortcut for [input] kind and path.
Setting input_setting() {
  Setting s{"", "--in",
            "Input: pcap:PATH | dpdk:ETHDEV | gen (generator); sets input.kind and input.pcap / input.dpdk_port",
            Arg::kOne, nullptr};
  s.apply = [name = s.name()](RunConfig& c, const SettingValue& v) -> Status {
    return parse_endpoint(name, v, last_arg(v), true, c.input);
  };
  return s;
}

// --out (repeatable) / output.ports: the output ports in order, each pcap:PATH | dpdk:ETHDEV | null. The first is
// output port 0 ([output] kind and path); more make a router with several ports (ports.map).
Setting output_setting() {
  Setting s{"output.ports", "--out",
            "Output: pcap:PATH | dpdk:ETHDEV | null; repeat for several output ports (the first is port 0, its "
            "output.kind and output.pcap / output.dpdk_port; the app's out_port picks one, see ports.map)",
            Arg::kMany, nullptr};
  s.apply = [name = s.name()](RunConfig& c, const SettingValue& v) -> Status {
    auto specs = strs_of(v, name, false);
    if (!specs) return specs.status();
    if (specs->empty()) return bad(name, v, "want at least one output");
    if (specs->size() > 64) return bad(name, v, fmt::format("{} outputs: at most 64", specs->size()));
    HPR_RETURN_IF_ERROR(parse_endpoint(name, v, specs->front(), false, c.output));
    c.more_outputs.clear();
    for (size_t i = 1; i < specs->size(); ++i) {
      EndpointConfig e;
      HPR_RETURN_IF_ERROR(parse_endpoint(name, v, (*specs)[i], false, e));
      c.more_outputs.push_back(std::move(e));
    }
    return Status::ok();
  };
  return s;
}

// ports.map (--port-map 0,1,1,0): the app's out_port → output port index (checked against the outputs by
// validate()).
Setting port_map_setting() {
  Setting s{"ports.map", "--port-map",
            "Output port of each app out_port (ipv4: next hop) i: the list's entry i mod its length, e.g. 0,1,1,0; "
            "each entry an output index (order of --out). Default: out_port mod the number of outputs",
            Arg::kMany, nullptr};
  s.apply = [name = s.name()](RunConfig& c, const SettingValue& v) -> Status {
    c.port_map.clear();
    auto add = [&](int64_t x, std::string_view text) -> Status {
      if (x < 0 || x > 65535) return bad(name, v, fmt::format("'{}' is not an output port index 0..65535", text));
      c.port_map.push_back(static_cast<uint32_t>(x));
      return Status::ok();
    };
    if (v.node != nullptr) {
      const toml::array* a = v.node->as_array();
      if (a == nullptr || a->empty()) return bad(name, v, "want a list of output port indexes, e.g. [0, 1, 1, 0]");
      for (const auto& e : *a) {
        const auto* i = e.as_integer();
        if (i == nullptr) return bad(name, v, "want a list of integers");
        HPR_RETURN_IF_ERROR(add(i->get(), std::to_string(i->get())));
      }
      return Status::ok();
    }
    auto items = strs_of(v, name, true);
    if (!items) return items.status();
    if (items->empty()) return bad(name, v, "want output port indexes, e.g. 0,1,1,0");
    for (const auto& t : *items) {
      int64_t x = -1;
      auto [p, ec] = std::from_chars(t.data(), t.data() + t.size(), x);
      if (ec != std::errc() || p != t.data() + t.size()) x = -1;
      HPR_RETURN_IF_ERROR(add(x, t));
    }
    return Status::ok();
  };
  return s;
}

// NAME=VALUE arguments of a repeatable flag (--weight native=2, --kind basic=igpu).
Result<std::vector<std::pair<std::string, std::string>>> pairs_of(const SettingValue& v, const std::string& name,
                                                                  std::string_view example) {
  std::vector<std::pair<std::string, std::string>> out;
  for (const auto& a : v.args) {
    auto eq = a.find('=');
    if (eq == std::string::npos || eq == 0 || eq + 1 == a.size())
      return bad(name, v, fmt::format("want NAME=VALUE (e.g. {}), got '{}'", example, a));
    out.emplace_back(a.substr(0, eq), a.substr(eq + 1));
  }
  return out;
}

Setting weight_setting() {
  Setting s{"", "--weight",
            "Lane weight (share of new flows): LANE_NAME_SUBSTRING=W, W in 0..1e6, e.g. native=2 (repeatable; "
            "[lanes.weights] in the file; default: compute units per device, 1 per native lane)",
            Arg::kMany, nullptr};
  s.apply = [name = s.name()](RunConfig& c, const SettingValue& v) -> Status {
    auto p = pairs_of(v, name, "native=2");
    if (!p) return p.status();
    for (const auto& [lane, w] : *p) {
      SettingValue one{.args = {w}};
      auto x = num_of(one, name + " " + lane, 0, 1e6);
      if (!x) return x.status();
      c.lane_weights[lane] = *x;
    }
    return Status::ok();
  };
  return s;
}

// --place-app APP=LANE[,LANE...] (repeatable): [app.place] from the command line.
Setting place_app_setting() {
  Setting s{
      "", "--place-app",
      "A chain's app on lanes of its own: APP=LANE_NAME_SUBSTRING[,...], e.g. dpi=pthread (repeatable; [app.place] "
      "in the file; the apps not named run on the lanes no app names; runs to completion, static weights); or "
      "'learned': each app where its own learned state measured it fastest (app.place = \"learned\")",
      Arg::kMany, nullptr};
  s.apply = [name = s.name()](RunConfig& c, const SettingValue& v) -> Status {
    // 'learned' replaces the file's placement; APP=LANES entries replace the file's 'learned'.
    c.app_place_learned = std::find(v.args.begin(), v.args.end(), "learned") != v.args.end();
    if (c.app_place_learned) {
      if (v.args.size() > 1) return bad(name, v, "'learned' places every app: give it alone");
      c.app_place.clear();
      return Status::ok();
    }
    auto p = pairs_of(v, name, "dpi=pthread");
    if (!p) return p.status();
    for (const auto& [app, lanes] : *p) {
      auto l = strs_of(SettingValue{.args = {lanes}}, name + " " + app, true);
      if (!l) return l.status();
      c.app_place[app] = std::move(*l);
    }
    return Status::ok();
  };
  return s;
}

// --neighbour NEXT_HOP,PORT,MAC[,ADDRESS] (repeatable): the [[neighbour]] table from the command line; given, it
// replaces the file's entries (as --out replaces its outputs). The MAC and the indexes are checked by validate().
Setting neighbour_setting() {
  Setting s{"", "--neighbour",
            "Neighbour: NEXT_HOP,PORT,MAC[,ADDRESS]: a route's next hop leaves by output PORT with destination MAC "
            "(repeatable; replaces [[neighbour]] of the file; docs/pipeline.md)",
            Arg::kMany, nullptr};
  s.apply = [name = s.name()](RunConfig& c, const SettingValue& v) -> Status {
    std::vector<NeighbourConfig> out;
    for (const auto& a : v.args) {
      std::vector<std::string> f;
      for (size_t b = 0;;) {
        const size_t e = a.find(',', b);
        f.push_back(a.substr(b, e == std::string::npos ? std::string::npos : e - b));
        if (e == std::string::npos) break;
        b = e + 1;
      }
      if (f.size() < 3 || f.size() > 4)
        return bad(name, v, fmt::format("want NEXT_HOP,PORT,MAC[,ADDRESS] (e.g. 0,1,0a:00:00:00:00:01), got '{}'", a));
      NeighbourConfig nb;
      for (int k = 0; k < 2; ++k) {
        uint32_t x = 0;
        auto [p, ec] = std::from_chars(f[k].data(), f[k].data() + f[k].size(), x);
        if (ec != std::errc() || p != f[k].data() + f[k].size() || f[k].empty() || x > 65535)
          return bad(name, v, fmt::format("'{}': {} '{}' is not an integer 0..65535", a, k == 0 ? "NEXT_HOP" : "PORT",
                                          f[k]));
        (k == 0 ? nb.next_hop : nb.port) = x;
      }
      nb.mac = f[2];
      if (f.size() == 4) nb.address = f[3];
      out.push_back(std::move(nb));
    }
    c.neighbours = std::move(out);
    return Status::ok();
  };
  return s;
}

Setting kind_setting() {
  Setting s{"", "--kind",
            "Override a device's kind: NAME_SUBSTRING=cpu|igpu|dgpu|accelerator (repeatable; [devices.kinds] in "
            "the file)",
            Arg::kMany, nullptr};
  s.apply = [name = s.name()](RunConfig& c, const SettingValue& v) -> Status {
    auto p = pairs_of(v, name, "basic=igpu");
    if (!p) return p.status();
    for (const auto& [dev, kind] : *p) {
      auto k = parse_device_kind(kind);
      if (!k) return bad(name, v, k.status().message());
      c.kinds[dev] = *k;
    }
    return Status::ok();
  };
  return s;
}

// --shape-rate / --shape-burst / --shape-by: the command-line face of [shaper] (read by config_file.cpp).
std::vector<Setting> shaper_settings() {
  Setting rate{"", "--shape-rate",
               "Egress shaping on: each bucket's rate in bits/s, 8..8e12 (token bucket, event-driven refill; "
               "shaper.rate_bps)",
               Arg::kOne, nullptr};
  rate.apply = [name = rate.name()](RunConfig& c, const SettingValue& v) -> Status {
    auto x = num_of(v, name, 8, 8e12);
    if (!x) return x.status();
    c.shaping.enabled = true;
    c.shaping.rate_bytes_per_s = static_cast<uint64_t>(*x / 8);
    if (c.shaping.burst_bytes == 0) c.shaping.burst_bytes = 16384;
    return Status::ok();
  };
  Setting burst{"", "--shape-burst",
                "Egress shaping: bucket size in bytes, 64..1073741824 and at least ports.max_frame "
                "(shaper.burst_bytes)",
                Arg::kOne, nullptr};
  burst.apply = [name = burst.name()](RunConfig& c, const SettingValue& v) -> Status {
    auto x = uint_of(v, name, 64, 1u << 30);
    if (!x) return x.status();
    c.shaping.burst_bytes = static_cast<uint32_t>(*x);
    return Status::ok();
  };
  Setting by{"", "--shape-by",
             "Egress shaping: one bucket per flow (default), per output port, or per class ([[shaper.class]] in the "
             "file): flow|port|class (shaper.by)",
             Arg::kOne, nullptr};
  by.apply = [name = by.name()](RunConfig& c, const SettingValue& v) -> Status {
    const std::string& x = last_arg(v);
    if (x == "flow") c.shaping.by = ShapeBy::kFlow;
    else if (x == "port") c.shaping.by = ShapeBy::kPort;
    else if (x == "class") c.shaping.by = ShapeBy::kClass;
    else return bad(name, v, fmt::format("'{}' is not flow, port or class", x));
    return Status::ok();
  };
  return {rate, burst, by};
}

#define HPR_REF(type, expr) [](RunConfig& c) -> type& { return c.expr; }
#define HPR_SET(type, expr) [](RunConfig& c, uint64_t x) { c.expr = static_cast<type>(x); }

std::vector<Setting> make_settings() {
  constexpr uint64_t kU32 = 0xffffffffu;
  constexpr double kDay = 86400;
  std::vector<Setting> t = {
      input_setting(),
      output_setting(),
      choice_setting("input.kind", "", "pcap | dpdk | generator", {"pcap", "dpdk", "generator"},
                     HPR_REF(std::string, input.kind)),
      str_setting("input.pcap", "", "Input capture file (pcap or pcapng)", HPR_REF(std::string, input.pcap)),
      uint_setting("input.loops", "--loops", "Input pcap: read the file this many times (0: forever)", 0, kU32,
                   HPR_SET(uint32_t, input.loops)),
      str_setting("input.dpdk_port", "", "Input ethdev name (e.g. net_pcap0)", HPR_REF(std::string, input.dpdk_port)),
      given_setting(uint_setting("input.packets", "--packets",
                                 "Generator: packets to send (0: unlimited; default 1000000, or unlimited when "
                                 "--duration is given)",
                                 0, UINT64_MAX, HPR_SET(uint64_t, input.gen_packets)),
                    HPR_REF(bool, input.gen_packets_given)),
      num_setting("input.rate_pps", "--rate-pps", "Generator: offered rate in packets/s (0: as fast as possible)", 0,
                  1e10, HPR_REF(double, input.gen_rate_pps)),
      str_setting("input.rate_steps", "--rate-steps",
                  "Generator: offered-rate steps DUR_S:PPS,DUR_S:PPS,... (run ends after the last)",
                  HPR_REF(std::string, input.gen_rate_steps)),
      choice_setting("input.rate_model", "--rate-model",
                     "Generator: Holt-Winters offered rate of LAPS eq. 1 with Table IV's four services: laps-set1 | "
                     "laps-set2",
                     {"", "laps-set1", "laps-set2"}, HPR_REF(std::string, input.gen_rate_model)),
      num_setting("input.rate_scale", "--rate-scale", "Generator: multiplies the --rate-model rates (Mpps), > 0", 1e-9,
                  1e6, HPR_REF(double, input.gen_rate_scale)),
      uint_setting("input.flows", "--flows", "Generator: number of flows (1..1000000)", 1, 1'000'000,
                   HPR_SET(uint32_t, input.gen_flows)),
      num_setting("input.zipf", "--zipf", "Generator: Zipf exponent of flow popularity (0: uniform; 0..10)", 0, 10,
                  HPR_REF(double, input.gen_zipf)),
      str_setting("input.sizes", "--sizes", "Generator: imix | fixed:N | uniform:A-B (frame bytes)",
                  HPR_REF(std::string, input.gen_sizes)),
      uint_setting("input.seed", "--seed", "Generator: random seed", 0, UINT64_MAX, HPR_SET(uint64_t, input.gen_seed)),
      str_setting("input.template", "", "Generator: capture whose flows' headers the generator reuses",
                  HPR_REF(std::string, input.gen_template)),
      list_setting("input.patterns", "", "Generator: byte strings planted in payloads", false,
                   HPR_REF(std::vector<std::string>, input.gen_patterns)),
      num_setting("input.match_rate", "", "Generator: share of packets carrying a planted pattern (0..1)", 0, 1,
                  HPR_REF(double, input.gen_match_rate)),
      str_setting("input.traffic_steps", "--traffic-steps",
                  "Generator: size mix and match rate over time, DUR_S:SIZES[@MATCH],... cycled (e.g. "
                  "5:imix,5:fixed:1500@0.3; without @MATCH: input.match_rate)",
                  HPR_REF(std::string, input.gen_traffic_steps)),
      num_setting("input.ttl_low_share", "", "Generator: share of packets sent with TTL 1 (0..1)", 0, 1,
                  HPR_REF(double, input.gen_ttl_low_share)),
      num_setting("input.ipv6_share", "", "Generator: share of synthetic flows that are IPv6 (0..1)", 0, 1,
                  HPR_REF(double, input.gen_ipv6_share)),
      choice_setting("output.kind", "", "pcap | dpdk | null", {"pcap", "dpdk", "null"},
                     HPR_REF(std::string, output.kind)),
      str_setting("output.pcap", "", "Output capture file", HPR_REF(std::string, output.pcap)),
      str_setting("output.dpdk_port", "", "Output ethdev name (e.g. net_null0)",
                  HPR_REF(std::string, output.dpdk_port)),
      list_setting("dpdk.vdevs", "--vdev", "DPDK virtual device, e.g. net_pcap0,rx_pcap=in.pcap (repeatable)", false,
                   HPR_REF(std::vector<std::string>, vdevs)),
      list_setting("dpdk.eal", "--eal", "DPDK EAL argument (repeatable; replaces the defaults --no-huge --no-pci ...)",
                   false, HPR_REF(std::vector<std::string>, eal_args)),
      uint_setting("ports.max_frame", "--max-frame",
                   "Largest frame in bytes that a port takes and every app handles, 64..65535 (default 9216: a "
                   "9,000-byte MTU); longer frames are dropped as frame_too_long",
                   kMinMaxFrame, kMaxMaxFrame, HPR_SET(uint32_t, max_frame)),
      port_map_setting(),
      list_setting("ports.macs", "--port-mac",
                   "MAC of each output port (aa:bb:cc:dd:ee:ff, in the order of --out; repeatable), the source MAC of "
                   "the [[neighbour]] rewrite; default: a DPDK port's own MAC",
                   true, HPR_REF(std::vector<std::string>, port_macs)),
      uint_setting("ports.large_buffers", "--large-buffers",
                   "Buffers of max_frame bytes for frames longer than 2048, 0..262144 (default 4096; frames up to "
                   "2048 keep their own small buffers); a large frame that finds them all in use is dropped as "
                   "pool_empty",
                   0, 262144, HPR_SET(uint32_t, large_buffers)),
      uint_setting("ports.buffers", "--buffers",
                   "Buffers of the input port: DPDK mbufs, pcap or generator slots, 0..4194304 (default 0: what "
                   "the lanes' batches can hold at once, so that a device's batches fill; at least 8191 for DPDK, "
                   "16384 for pcap, 8192 for the generator); DPDK needs the memory for them (EAL -m)",
                   0, 1u << 22, HPR_SET(uint32_t, buffers)),
      choice_setting("ports.rx_spread", "--rx-spread",
                     "How packets reach several workers: auto (default: a DPDK port's own rx queues where it has "
                     "RSS, else hash) | hash (one reader spreads by flow hash) | queues (worker i takes rx queue i of "
                     "the DPDK input as it is: the source keeps each flow on one queue, e.g. net_pcap with one capture "
                     "per queue split by flow)",
                     {"auto", "hash", "queues"}, HPR_REF(std::string, rx_spread)),
      app_setting(),
      str_setting("app.routes", "--routes", "ipv4: route table (pyasn .dat[.gz] or 'prefix/len nexthop' text)",
                  HPR_REF(std::string, app_opts.routes)),
      uint_setting("app.ports", "--ports",
                   "ipv4: number of next hops, the router's ports (pyasn: next hop = origin AS mod ports; "
                   "1..65535); ports.map maps them to outputs",
                   1, 65535, HPR_SET(uint32_t, app_opts.ports)),
      bool_setting("app.drop_non_ipv4", "", "ipv4: drop non-IPv4 traffic (not_ipv4) instead of passing it to port 0",
                   HPR_REF(bool, app_opts.drop_non_ipv4)),
      bool_setting("app.icmp_time_exceeded", "", "ipv4: answer TTL <= 1 with ICMP Time Exceeded from the host",
                   HPR_REF(bool, icmp_time_exceeded)),
      str_setting("app.router_addr", "", "ipv4: source address of ICMP messages", HPR_REF(std::string, router_addr)),
      str_setting("app.router_addr6", "", "ipv4 with IPv6 routes: source address of ICMPv6 messages",
                  HPR_REF(std::string, router_addr6)),
      str_setting("app.rules", "--rules", "dpi: Snort/Suricata rule file or directory",
                  HPR_REF(std::string, app_opts.rules)),
      switch_setting("app.strict_rules", "--strict-rules",
                     "dpi: refuse a rule set in which any rule cannot be read (default: load the rest and warn)", true,
                     HPR_REF(bool, app_opts.strict_rules)),
      str_setting("app.keys", "--keys", "aes: key file (default: keys derived from --master-key)",
                  HPR_REF(std::string, app_opts.keys)),
      str_setting("app.master_key", "--master-key",
                  "aes: master key, 32 hex digits (visible to every user in the process list: prefer "
                  "--master-key-file or HPR_MASTER_KEY; not with --keys)",
                  HPR_REF(std::string, app_opts.master_key)),
      str_setting("app.master_key_file", "--master-key-file",
                  "aes: file holding the master key (32 hex digits); without any key setting the environment "
                  "variable HPR_MASTER_KEY is read",
                  HPR_REF(std::string, app_opts.master_key_file)),
      str_setting("app.key_epoch", "--key-epoch",
                  "aes: key epoch, 32 hex digits, part of every derived key and IV (default: random per run, "
                  "shown in the log and the summary; give it to keep the keys across restarts)",
                  HPR_REF(std::string, app_opts.key_epoch)),
      bool_setting("app.md5_whole_frame", "", "md5: digest the whole frame instead of the L4 payload",
                   HPR_REF(bool, app_opts.md5_whole_frame)),
      str_setting("app.log", "--log", "Result log: DPI alerts / MD5 digests, one line per packet",
                  HPR_REF(std::string, log_path)),
      list_setting("lanes.devices", "--devices", "OpenCL devices: all | none | comma-separated name substrings", true,
                   HPR_REF(std::vector<std::string>, devices)),
      kind_setting(),
      uint_setting("lanes.native", "--native", "Native CPU lanes (0..64)", 0, 64, HPR_SET(uint32_t, native_lanes)),
      workers_setting(),
      list_setting("lanes.cores", "--cores",
                   "Cores of the workers, in order (comma-separated; default: the cores this process may run on)", true,
                   HPR_REF(std::vector<std::string>, cores)),
      choice_setting(
          "lanes.share_devices", "--share-devices",
          "Workers' lanes on one OpenCL device: on: share its executor, so one launch carries what every "
          "worker sent while the device was busy (IPv4, DPI, MD5, chains of them); off: an executor per worker "
          "lane; auto (default): on for GPUs and accelerators, off for CPU devices",
          {"auto", "on", "off"}, HPR_REF(std::string, share_devices)),
      uint_setting("lanes.batch", "--batch", "Batch size per lane (packets, 1..65536)", 1, 65536,
                   HPR_SET(uint32_t, batch)),
      uint_setting("lanes.timeout_us", "--timeout-us",
                   "Close a partial batch after this many microseconds (0..10000000)", 0, 10'000'000,
                   HPR_SET(uint64_t, batch_timeout_us)),
      uint_setting("lanes.queue", "--queue",
                   "Lane queue size (packets, 1..1048576; hpr run raises it to twice the largest batch)", 1, 1u << 20,
                   HPR_SET(uint32_t, queue)),
      uint_setting("lanes.in_flight", "--in-flight", "OpenCL batches in flight per lane (1..64)", 1, 64,
                   HPR_SET(uint32_t, in_flight)),
      uint_setting("lanes.max_batch", "", "Largest batch the adaptive scheduler may set (0: batch; up to 65536)", 0,
                   65536, HPR_SET(uint32_t, max_batch)),
      weight_setting(),
      place_app_setting(),
      neighbour_setting(),
      str_setting("lanes.balancer", "--balancer",
                  "Flow-to-lane policy: rr crc16 crc32 hrw whrw (default) ahrw subflow fcfs afs laps",
                  HPR_REF(std::string, balancer)),
      bool_setting("lanes.backpressure", "--backpressure",
                   "on (default): wait when a lane queue is full (the input port's ring fills); off: drop as "
                   "queue_full",
                   HPR_REF(bool, backpressure)),
      given_setting(bool_setting("lanes.run_to_completion", "--run-to-completion",
                                 "on: one thread does rx, classification, every lane and tx (for few cores); off: a "
                                 "thread per lane and one for egress. Default: on for one native lane and no "
                                 "device or on a host of 2 cores or fewer, else off",
                                 HPR_REF(bool, run_to_completion)),
                    HPR_REF(bool, run_to_completion_given)),
      bool_setting("lanes.run_what_arrived", "",
                   "Native lanes run what has arrived as soon as their queue is empty (default true); false: they "
                   "wait for a full batch or timeout_us like device lanes",
                   HPR_REF(bool, native_run_what_arrived)),
      uint_setting("flows.capacity", "", "Flows alive at once (also the AES key table size; 1..16777216)", 1, 1u << 24,
                   HPR_SET(uint32_t, flow_capacity)),
      num_setting("faults.slow_from_s", "",
                  "Fault injection: the lanes of [faults.slow_lane_us] are slow from this many seconds into the run "
                  "(0..86400; default 0)",
                  0, kDay, HPR_REF(double, slow_from_s)),
      num_setting("faults.slow_until_s", "",
                  "Fault injection: ... and until this many seconds into the run (0..86400; 0, the default: to the "
                  "end)",
                  0, kDay, HPR_REF(double, slow_until_s)),
      num_setting("flows.idle_s", "", "Age flows idle this long (seconds, 0.001..86400)", 0.001, kDay,
                  HPR_REF(double, flow_idle_s)),
      str_setting("telemetry.prometheus", "--prometheus",
                  "Serve Prometheus metrics on ADDR:PORT (e.g. 127.0.0.1:9464; a bare PORT means 127.0.0.1)",
                  HPR_REF(std::string, prometheus)),
      str_setting(
          "control.socket", "--ctl",
          "Control socket for `hpr ctl` (default /run/hpr/hpr.sock as root, else $XDG_RUNTIME_DIR/hpr/hpr.sock; "
          "none: no socket)",
          HPR_REF(std::string, ctl_path)),
      num_setting("telemetry.status_interval_s", "", "Status line period (seconds, 0..3600; 0: none)", 0, 3600,
                  HPR_REF(double, status_interval_s)),
      str_setting("telemetry.summary_json", "--summary-json", "Write the run summary as JSON to this file",
                  HPR_REF(std::string, summary_json)),
      num_setting("run.duration_s", "--duration",
                  "Stop after this many seconds (0: when the input ends or on SIGINT; up to 31536000)", 0,
                  kMaxRunSeconds, HPR_REF(double, duration_s)),
      str_setting("power.rapl_root", "--rapl-root", "Power: powercap sysfs root for RAPL (default /sys/class/powercap)",
                  HPR_REF(std::string, power.rapl_root)),
      bool_setting("power.rapl", "", "Power: read RAPL counters when present", HPR_REF(bool, power.use_rapl)),
      bool_setting("power.nvml", "", "Power: read NVML when present", HPR_REF(bool, power.use_nvml)),
      str_setting("adaptive.table", "--table",
                  "Adaptive mode from a configuration table written by `hpr profile` (default: learn online)",
                  HPR_REF(std::string, adapt_table)),
      switch_setting("adaptive.static", "--static",
                     "Fixed lane weights ([lanes.weights] or the defaults) instead of learning them online", true,
                     HPR_REF(bool, adapt_static)),
      str_setting("adaptive.state_dir", "--state-dir",
                  "Learning mode: where what was learned is kept (learned-APP.json; default $HPR_STATE_DIR, else "
                  "/var/lib/hpr as root, $XDG_STATE_HOME/hpr or ~/.local/state/hpr; none: not kept)",
                  HPR_REF(std::string, adapt_state_dir)),
      choice_setting("adaptive.policy", "--policy",
                     "Goal of learning / adaptive mode: throughput (default) | energy | latency | latency-target",
                     {"energy", "latency", "throughput", "latency-target"}, HPR_REF(std::string, adapt_policy)),
      num_setting("adaptive.latency_target_us", "--latency-target-us",
                  "p99 latency target for --policy latency-target (microseconds)", 0, 1e9,
                  HPR_REF(double, adapt_latency_target_us)),
      switch_setting("adaptive.allow_table_mismatch", "--allow-table-mismatch",
                     "Adaptive mode: use a table profiled on another machine/setup", true,
                     HPR_REF(bool, adapt_allow_mismatch)),
      num_setting("adaptive.quantum_ms", "--quantum-ms",
                  "Learning / adaptive mode: decision quantum (ms, 1..60000; default 40)", 1, 60000,
                  HPR_REF(double, adapt_quantum_ms)),
      str_setting("adaptive.csv", "--adapt-csv",
                  "Per-quantum CSV (rates, power and its source, latency; in learning / adaptive mode also lanes, "
                  "batches, decisions)",
                  HPR_REF(std::string, adapt_csv)),
      switch_setting("adaptive.learn", "--no-learn",
                     "Adaptive mode: --no-learn: table lookups only (no batch search, no table updates)", false,
                     HPR_REF(bool, adapt_learn)),
  };
  for (auto& x : shaper_settings()) t.push_back(std::move(x));
  return t;
}

#undef HPR_REF
#undef HPR_SET

}  // namespace

// A string or a list of strings (file); every use of the flag, each split at commas when `split`.
Result<std::vector<std::string>> strs_of(const SettingValue& v, const std::string& name, bool split) {
  std::vector<std::string> out;
  if (v.node != nullptr) {
    if (auto s = v.node->value<std::string>()) return std::vector<std::string>{*s};
    const toml::array* a = v.node->as_array();
    if (a == nullptr) return bad(name, v, "want a string or a list of strings");
    for (const auto& e : *a) {
      auto s = e.value<std::string>();
      if (!s) return bad(name, v, "want a list of strings");
      out.push_back(*s);
    }
    return out;
  }
  for (const auto& a : v.args) {
    if (!split) {
      out.push_back(a);
      continue;
    }
    for (size_t b = 0, e; b <= a.size(); b = e + 1) {
      e = a.find(',', b);
      if (e == std::string::npos) e = a.size();
      if (e > b) out.push_back(a.substr(b, e - b));
    }
  }
  return out;
}

std::string Setting::name() const {
  if (key.empty()) return std::string(flag);
  if (flag.empty()) return std::string(key);
  return fmt::format("{} ({})", key, flag);
}

const std::vector<Setting>& run_settings() {
  static const std::vector<Setting> kSettings = make_settings();
  return kSettings;
}

const Setting* find_setting(std::string_view key_or_flag) {
  for (const auto& s : run_settings())
    if ((!s.key.empty() && s.key == key_or_flag) || (!s.flag.empty() && s.flag == key_or_flag)) return &s;
  return nullptr;
}

bool is_named_table(std::string_view key) {
  return key == "lanes.weights" || key == "app.place" || key == "devices.kinds" || key == "faults.fail_after_batches" ||
         key == "faults.slow_lane_us";
}

}  // namespace hpr
