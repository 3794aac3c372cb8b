// `hpr run -c FILE`: the TOML file read through the settings table (settings.hpp). Every key must be
// in the table or in one of the sub-tables read here ([lanes.weights], [devices.kinds], [faults.*],
// [shaper] with its classes): an unknown key is refused with its line and the keys of its section.
#include <spdlog/spdlog.h>

#include <algorithm>
#include <filesystem>
#include <limits>
#include <optional>
#include <set>
#include <toml++/toml.h>

#include "pipeline/run_config.hpp"
#include "pipeline/settings.hpp"
#include "pipeline/service_config.hpp"
#include "pipeline/toml_util.hpp"

namespace hpr {
namespace {


template <typename T>
Status get(const toml::table& t, const char* section, const char* key, T& out) {
  const toml::node* n = t.at_path(std::string(section) + "." + key).node();
  if (n == nullptr) return Status::ok();
  if constexpr (std::is_same_v<T, std::string>) {
    if (auto v = n->value<std::string>()) { out = *v; return Status::ok(); }
  } else if constexpr (std::is_same_v<T, bool>) {
    if (auto v = n->value<bool>()) { out = *v; return Status::ok(); }
  } else if constexpr (std::is_floating_point_v<T>) {
    if (auto v = n->value<double>()) { out = static_cast<T>(*v); return Status::ok(); }
  } else {
    if (auto v = integer_of(*n)) {
      constexpr auto kMax = static_cast<uint64_t>(std::numeric_limits<T>::max());
      if (*v < 0 || static_cast<uint64_t>(*v) > kMax)
        return error(Code::kInvalidArgument, "setting {}.{} = {} is out of range 0..{} (line {})", section, key, *v, kMax,
                     n->source().begin.line);
      out = static_cast<T>(*v);
      return Status::ok();
    }
  }
  return error(Code::kInvalidArgument, "setting {}.{} has the wrong type (line {})", section, key, n->source().begin.line);
}


// An integer or a list of integers in 0..max.
template <typename T>
Status get_int_list(const toml::table& t, const std::string& section, const char* key, int64_t max,
                    std::vector<T>& out) {
  const toml::node* n = t.at_path(section + "." + key).node();
  if (n == nullptr) return Status::ok();
  out.clear();
  auto one = [&](const toml::node& e) -> Status {
    auto v = integer_of(e);
    if (!v || *v < 0 || *v > max)
      return error(Code::kInvalidArgument, "setting {}.{} must be an integer 0..{} or a list of them (line {})",
                   section, key, max, e.source().begin.line);
    out.push_back(static_cast<T>(*v));
    return Status::ok();
  };
  if (const toml::array* a = n->as_array()) {
    for (const auto& e : *a) HPR_RETURN_IF_ERROR(one(e));
    return Status::ok();
  }
  return one(*n);
}

// A string or a list of strings.
Status get_str_list(const toml::table& t, const std::string& section, const char* key, std::vector<std::string>& out) {
  const toml::node* n = t.at_path(section + "." + key).node();
  if (n == nullptr) return Status::ok();
  out.clear();
  auto one = [&](const toml::node& e) -> Status {
    auto v = e.value<std::string>();
    if (!v || v->empty())
      return error(Code::kInvalidArgument, "setting {}.{} must be a name or a list of names (line {})", section, key,
                   e.source().begin.line);
    out.push_back(*v);
    return Status::ok();
  };
  if (const toml::array* a = n->as_array()) {
    for (const auto& e : *a) HPR_RETURN_IF_ERROR(one(e));
    return Status::ok();
  }
  return one(*n);
}

// A rate in bits/s (integer or float) → bytes/s; 0 .. 8e12 bits/s (the shaper's 1e12 bytes/s).
Status get_rate_bps(const toml::table& t, const std::string& section, uint64_t& bytes_per_s) {
  double bps = static_cast<double>(bytes_per_s) * 8;
  HPR_RETURN_IF_ERROR(get(t, section.c_str(), "rate_bps", bps));
  if (!(bps >= 0 && bps <= 8e12))
    return error(Code::kInvalidArgument, "setting {}.rate_bps = {} must be in 0..8e12 bits/s", section, bps);
  bytes_per_s = static_cast<uint64_t>(bps / 8);
  return Status::ok();
}

// [shaper], its [[shaper.class]] entries and [shaper.adaptive].
Status read_shaper(const toml::table& t, ShapingConfig& sc) {
  const toml::table* sh = t.at_path("shaper").as_table();
  if (sh == nullptr) return Status::ok();
  HPR_RETURN_IF_ERROR(check_keys(*sh, "shaper",
                                 {"enabled", "by", "rate_bps", "burst_bytes", "alpha_bytes", "queue_packets",
                                  "waiting_packets", "drain_timeout_s", "class", "adaptive"}));
  HPR_RETURN_IF_ERROR(get(t, "shaper", "enabled", sc.enabled));
  std::string by = sc.by == ShapeBy::kFlow ? "flow" : sc.by == ShapeBy::kPort ? "port" : "class";
  HPR_RETURN_IF_ERROR(get(t, "shaper", "by", by));
  if (by == "flow")
    sc.by = ShapeBy::kFlow;
  else if (by == "port")
    sc.by = ShapeBy::kPort;
  else if (by == "class")
    sc.by = ShapeBy::kClass;
  else
    return error(Code::kInvalidArgument, "shaper.by must be flow, port or class, not '{}'", by);
  HPR_RETURN_IF_ERROR(get_rate_bps(t, "shaper", sc.rate_bytes_per_s));
  double drain_s = static_cast<double>(sc.drain_timeout_ns) / 1e9;
  HPR_RETURN_IF_ERROR(get(t, "shaper", "drain_timeout_s", drain_s));
  if (!(drain_s >= 0 && drain_s <= 86400))
    return error(Code::kInvalidArgument, "setting shaper.drain_timeout_s = {} must be in 0..86400 seconds", drain_s);
  sc.drain_timeout_ns = static_cast<uint64_t>(drain_s * 1e9);
  HPR_RETURN_IF_ERROR(get(t, "shaper", "burst_bytes", sc.burst_bytes));
  HPR_RETURN_IF_ERROR(get(t, "shaper", "alpha_bytes", sc.alpha_bytes));
  HPR_RETURN_IF_ERROR(get(t, "shaper", "queue_packets", sc.queue_packets));
  HPR_RETURN_IF_ERROR(get(t, "shaper", "waiting_packets", sc.waiting_packets));
  auto classes = tables_of(*sh, "class", "shaper.class");
  if (!classes) return classes.status();
  if (const toml::array* a = *classes) {
    sc.classes.clear();
    for (size_t i = 0; i < a->size(); ++i) {
      const std::string sec = fmt::format("shaper.class[{}]", i);
      HPR_RETURN_IF_ERROR(check_keys(*a->get(i)->as_table(), sec,
                                     {"name", "dscp", "out_port", "service", "rate_bps", "burst_bytes", "alpha_bytes"}));
      ShapingClass k;
      HPR_RETURN_IF_ERROR(get(t, sec.c_str(), "name", k.name));
      HPR_RETURN_IF_ERROR(get_int_list(t, sec, "dscp", 63, k.dscp));
      HPR_RETURN_IF_ERROR(get_int_list(t, sec, "out_port", 65535, k.ports));
      HPR_RETURN_IF_ERROR(get_str_list(t, sec, "service", k.services));
      HPR_RETURN_IF_ERROR(get_rate_bps(t, sec, k.rate_bytes_per_s));
      HPR_RETURN_IF_ERROR(get(t, sec.c_str(), "burst_bytes", k.burst_bytes));
      HPR_RETURN_IF_ERROR(get(t, sec.c_str(), "alpha_bytes", k.alpha_bytes));
      sc.classes.push_back(std::move(k));
    }
  }
  if (const toml::node* n = sh->get("adaptive")) {
    const toml::table* ad = n->as_table();
    if (ad == nullptr)
      return error(Code::kInvalidArgument, "shaper.adaptive must be a table: [shaper.adaptive] (line {})",
                   n->source().begin.line);
    HPR_RETURN_IF_ERROR(check_keys(*ad, "shaper.adaptive", {"enabled", "gamma", "delta_th", "period_s"}));
    HPR_RETURN_IF_ERROR(get(t, "shaper.adaptive", "enabled", sc.adaptive.enabled));
    HPR_RETURN_IF_ERROR(get(t, "shaper.adaptive", "gamma", sc.adaptive.gamma));
    HPR_RETURN_IF_ERROR(get(t, "shaper.adaptive", "delta_th", sc.adaptive.delta_th));
    double period_s = static_cast<double>(sc.adaptive.period_ns) / 1e9;
    HPR_RETURN_IF_ERROR(get(t, "shaper.adaptive", "period_s", period_s));
    if (!(period_s >= 1e-6 && period_s <= 3600))
      return error(Code::kInvalidArgument, "setting shaper.adaptive.period_s = {} must be in 1e-6..3600 seconds",
                   period_s);
    sc.adaptive.period_ns = static_cast<uint64_t>(period_s * 1e9);
  }
  return Status::ok();
}

// [[neighbour]] entries: next_hop, port, mac (checked against the outputs and the app by validate()).
Status read_neighbours(const toml::table& t, std::vector<NeighbourConfig>& out) {
  auto list = tables_of(t, "neighbour");
  if (!list) return list.status();
  const toml::array* a = *list;
  if (a == nullptr) return Status::ok();
  out.clear();
  for (size_t i = 0; i < a->size(); ++i) {
    const toml::table& e = *a->get(i)->as_table();
    const std::string sec = fmt::format("neighbour[{}]", i);
    HPR_RETURN_IF_ERROR(check_keys(e, sec, {"next_hop", "port", "mac", "address"}));
    NeighbourConfig nb;
    if (const toml::node* v = e.get("address")) {
      auto a = v->value<std::string>();
      if (!a)
        return error(Code::kInvalidArgument, "{}.address: want a string a.b.c.d (line {})", sec,
                     v->source().begin.line);
      nb.address = *a;
    }
    for (const char* key : {"next_hop", "port", "mac"}) {
      const toml::node* v = e.get(key);
      if (v == nullptr)
        return error(Code::kInvalidArgument, "{}.{}: missing (line {}; an entry needs next_hop, port and mac)", sec,
                     key, e.source().begin.line);
      if (std::string_view(key) == "mac") {
        auto m = v->value<std::string>();
        if (!m)
          return error(Code::kInvalidArgument, "{}.mac: want a string aa:bb:cc:dd:ee:ff (line {})", sec,
                       v->source().begin.line);
        nb.mac = *m;
        continue;
      }
      auto x = integer_of(*v);
      if (!x || *x < 0 || *x > 65535)
        return error(Code::kInvalidArgument, "{}.{}: want an integer 0..65535 (line {})", sec, key,
                     v->source().begin.line);
      (std::string_view(key) == "port" ? nb.port : nb.next_hop) = static_cast<uint32_t>(*x);
    }
    out.push_back(std::move(nb));
  }
  return Status::ok();
}

// [section] key = ... through the settings table; sub-tables with names of the user's choosing apart.
Status read_section(const toml::table& t, const std::string& section, const toml::table& sec, RunConfig& c) {
  for (const auto& [k, v] : sec) {
    std::string key = section + "." + std::string(k.str());
    if (is_named_table(key)) continue;  // read below
    const Setting* s = find_setting(key);
    if (s == nullptr || s->key.empty()) {
      std::string known;
      for (const auto& x : run_settings())
        if (x.key.rfind(section + ".", 0) == 0) known += (known.empty() ? "" : ", ") + std::string(x.key.substr(section.size() + 1));
      for (const char* n :
           {"lanes.weights", "app.place", "devices.kinds", "faults.fail_after_batches", "faults.slow_lane_us"})
        if (std::string_view(n).rfind(section + ".", 0) == 0) known += (known.empty() ? "" : ", ") + std::string(n + section.size() + 1);
      return error(Code::kInvalidArgument, "unknown key {} (line {}; known in [{}]: {})", key, k.source().begin.line,
                   section, known.empty() ? "none" : known);
    }
    HPR_RETURN_IF_ERROR(s->apply(c, SettingValue{.node = &v, .line = static_cast<int>(v.source().begin.line)}));
  }
  (void)t;
  return Status::ok();
}

Status read_named_tables(const toml::table& t, RunConfig& c) {
  if (const toml::node* n = t.at_path("devices.kinds").node()) {
    const toml::table* kinds = n->as_table();
    if (kinds == nullptr) return error(Code::kInvalidArgument, "devices.kinds must be a table (line {})", n->source().begin.line);
    for (const auto& [name, v] : *kinds) {
      auto s = v.value<std::string>();
      if (!s) return error(Code::kInvalidArgument, "devices.kinds.\"{}\" must be a string", name.str());
      auto k = parse_device_kind(*s);
      if (!k) return error(Code::kInvalidArgument, "devices.kinds.\"{}\": {}", name.str(), k.status().message());
      c.kinds[std::string(name.str())] = *k;
    }
  }
  if (const toml::node* w = t.at_path("lanes.weights").node()) {
    const toml::table* wt = w->as_table();
    if (wt == nullptr)
      return error(Code::kInvalidArgument, "lanes.weights must be a table of lane name = weight (line {})",
                   w->source().begin.line);
    for (const auto& [name, v] : *wt) {
      auto x = v.value<double>();
      if (!x || !(*x >= 0 && *x <= 1e6))
        return error(Code::kInvalidArgument, "lanes.weights.\"{}\" must be a number 0..1e6 (line {})", name.str(),
                     v.source().begin.line);
      c.lane_weights[std::string(name.str())] = *x;
    }
  }
  if (const toml::node* w = t.at_path("app.place").node()) {
    const toml::table* pt = w->as_table();
    if (auto v = w->value<std::string>(); v && *v == "learned") {
      c.app_place_learned = true;
      pt = nullptr;
    } else if (pt == nullptr) {
      return error(Code::kInvalidArgument,
                   "app.place must be \"learned\" or a table of app = lane name or [lane names] (line {})",
                   w->source().begin.line);
    }
    static const toml::table kNone;
    for (const auto& [name, v] : pt ? *pt : kNone) {
      const std::string key = fmt::format("app.place.{}", name.str());
      auto l = strs_of(SettingValue{.node = &v, .line = static_cast<int>(v.source().begin.line)}, key, false);
      if (!l) return l.status();
      if (l->empty())
        return error(Code::kInvalidArgument, "{}: want a lane name or a list of them (line {})", key,
                     v.source().begin.line);
      c.app_place[std::string(name.str())] = std::move(*l);
    }
  }
  struct Faults {
    const char* key;
    int64_t max;
    std::map<std::string, uint64_t>& out;
  };
  for (auto& f : {Faults{"faults.fail_after_batches", std::numeric_limits<int64_t>::max(), c.fail_after},
                  Faults{"faults.slow_lane_us", 10'000'000, c.slow_lane_us}}) {
    const toml::node* n = t.at_path(f.key).node();
    if (n == nullptr) continue;
    const toml::table* ft = n->as_table();
    if (ft == nullptr) return error(Code::kInvalidArgument, "{} must be a table (line {})", f.key, n->source().begin.line);
    for (const auto& [name, v] : *ft) {
      auto x = integer_of(v);
      if (!x || *x < 0 || *x > f.max)
        return error(Code::kInvalidArgument, "{}.\"{}\" must be an integer 0..{}", f.key, name.str(), f.max);
      f.out[std::string(name.str())] = static_cast<uint64_t>(*x);
    }
  }
  return Status::ok();
}

}  // namespace

Result<RunConfig> load_run_config(const std::string& path) {
  std::error_code ec;
  auto st = std::filesystem::status(path, ec);
  if (st.type() == std::filesystem::file_type::not_found)
    return error(Code::kNotFound, "configuration file '{}' does not exist", path);
  if (ec) return error(Code::kNotFound, "configuration file '{}': {}", path, ec.message());
  if (!std::filesystem::is_regular_file(st))
    return error(Code::kInvalidArgument, "configuration file {}: not a regular file (a directory?)", path);
  toml::table t;
  try {
    t = toml::parse_file(path);
  } catch (const toml::parse_error& e) {
    std::string_view d = e.description();
    if (d.find("could not be opened") != std::string_view::npos || d.find("File could not") != std::string_view::npos)
      return error(Code::kNotFound, "configuration file {}: cannot be read (permissions?)", path);
    return error(Code::kInvalidArgument, "{}:{}:{}: {}", path, e.source().begin.line, e.source().begin.column, d);
  }
  static const std::set<std::string> kSections = {"input",  "output",  "ports", "dpdk",      "app",
                                                  "lanes",  "devices", "flows", "telemetry", "run",
                                                  "faults", "shaper",  "power", "adaptive", "neighbour",
                                                  "service"};
  RunConfig c;
  auto wrap = [&](Status s) { return s.is_ok() ? s : error(s.code(), "{}: {}", path, s.message()); };
  for (const auto& [k, v] : t) {
    std::string section(k.str());
    if (!kSections.count(section))
      return error(Code::kInvalidArgument, "{}: unknown section [{}] (line {})", path, section, k.source().begin.line);
    if (section == "neighbour" || section == "service") continue;  // [[neighbour]], [[service]]: read below
    const toml::table* sec = v.as_table();
    if (sec == nullptr)
      return error(Code::kInvalidArgument, "{}: {} must be a section [{}] (line {})", path, section, section,
                   k.source().begin.line);
    if (section == "shaper") continue;  // read_shaper checks its own keys
    HPR_RETURN_IF_ERROR(wrap(read_section(t, section, *sec, c)));
  }
  HPR_RETURN_IF_ERROR(wrap(read_named_tables(t, c)));
  HPR_RETURN_IF_ERROR(wrap(read_shaper(t, c.shaping)));
  HPR_RETURN_IF_ERROR(wrap(read_neighbours(t, c.neighbours)));
  HPR_RETURN_IF_ERROR(wrap(read_services(t, c.app_opts.services, c.service_lanes)));
  return c;
}

}  // namespace hpr
