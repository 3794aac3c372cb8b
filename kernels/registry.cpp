#include "kernels/registry.hpp"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>

#include "hpr/data_dir.hpp"
#include "kernels/aes/aes_app.hpp"
#include "kernels/aes/key_source.hpp"
#include "kernels/chain/chain_app.hpp"
#include "kernels/dpi/dpi_app.hpp"
#include "kernels/dpi/rules.hpp"
#include "kernels/ipv4/ipv4_app.hpp"
#include "kernels/md5/md5_app.hpp"

namespace hpr::kernels {

std::vector<std::string> app_names() { return {"ipv4", "dpi", "md5", "aes"}; }

namespace {

std::string known_apps() {
  std::string known;
  for (const auto& n : app_names()) known += (known.empty() ? "" : ", ") + n;
  return known;
}

Result<std::shared_ptr<App>> make_one(const std::string& name, const AppOptions& opt);

}  // namespace

Result<std::vector<std::string>> chain_apps(std::string_view name) {
  std::vector<std::string> apps;
  const auto known = app_names();
  size_t from = 0;
  while (true) {
    const size_t comma = std::min(name.find(',', from), name.size());
    std::string a(name.substr(from, comma - from));
    if (a == "ip") a = "ipv4";
    if (a.empty() && name.find(',') == std::string_view::npos)
      return error(Code::kInvalidArgument, "no app named (known: {})", known_apps());
    if (a.empty())
      return error(Code::kInvalidArgument, "the chain '{}' has an empty app: apps are separated by single commas", name);
    if (std::find(known.begin(), known.end(), a) == known.end())
      return error(Code::kInvalidArgument, "unknown app '{}'{} (known: {})", a,
                   apps.empty() && comma == name.size() ? "" : fmt::format(" in the chain '{}'", name), known_apps());
    if (std::find(apps.begin(), apps.end(), a) != apps.end())
      return error(Code::kInvalidArgument, "the chain '{}' names {} twice: each app once", name, a);
    apps.push_back(std::move(a));
    if (comma == name.size()) return apps;
    from = comma + 1;
  }
}

bool chain_has(std::string_view name, std::string_view app) {
  for (size_t from = 0; from <= name.size();) {
    const size_t comma = std::min(name.find(',', from), name.size());
    if (name.substr(from, comma - from) == app) return true;
    from = comma + 1;
  }
  return false;
}

bool runs_app(const std::string& name, const AppOptions& opt, std::string_view app, bool every) {
  if (opt.services.empty()) return chain_has(name, app);
  auto in = [&](const AppOptions::ServiceSpec& s) { return chain_has(s.chain, app); };
  return every ? std::all_of(opt.services.begin(), opt.services.end(), in)
               : std::any_of(opt.services.begin(), opt.services.end(), in);
}

namespace {

// [[service]] entries: each service's chain, then the services (service/service_app.hpp).
Result<std::shared_ptr<App>> make_services(AppOptions opt) {
  std::vector<Service> services;
  const auto specs = std::move(opt.services);
  opt.services.clear();
  for (size_t i = 0; i < specs.size(); ++i) {
    auto a = make_app(specs[i].chain, opt);
    if (!a) return error(a.status().code(), "service[{}].chain ({}): {}", i, specs[i].name, a.status().message());
    // aes in several services: one key epoch for the run (the first aes's, random unless given).
    if (opt.key_epoch.empty())
      for (const auto& [k, v] : (*a)->summary_info())
        if (k == "key_epoch") opt.key_epoch = v;
    services.push_back({specs[i].name, specs[i].match, std::move(*a)});
  }
  auto s = ServiceApp::create(std::move(services));
  if (!s) return s.status();
  return std::shared_ptr<App>(std::move(*s));
}

}  // namespace

Result<std::shared_ptr<App>> make_app(const std::string& name, const AppOptions& opt) {
  if (!opt.services.empty()) return make_services(opt);
  auto names = chain_apps(name);
  if (!names) return names.status();
  if (names->size() == 1) return make_one(names->front(), opt);
  std::vector<std::shared_ptr<App>> apps;
  for (const auto& n : *names) {
    auto a = make_one(n, opt);
    if (!a) return a.status();
    apps.push_back(std::move(*a));
  }
  auto chain = ChainApp::create(std::move(apps), opt.max_frame_bytes);
  if (!chain) return chain.status();
  return std::shared_ptr<App>(std::move(*chain));
}

namespace {

Result<std::shared_ptr<App>> make_one(const std::string& name, const AppOptions& opt) {
  if (name == "ipv4") {
    ipv4::Ipv4Config c;
    c.num_ports = opt.ports;
    if (!opt.drop_non_ipv4) c.non_ipv4_port = 0;
    std::string routes = opt.routes.empty() ? data_path("routes/ipasn_20140513.dat.gz") : opt.routes;
    std::vector<ipv4::NextHopAddr> addrs;
    for (const auto& [a, h] : opt.next_hop_addrs) addrs.push_back({.addr = a, .next_hop = h});
    auto load = ipv4::load_routes(routes, ipv4::RouteFormat::kAuto, c.num_ports, addrs);
    if (!load) return error(load.status().code(), "app.routes (--routes): {}", load.status().message());
    spdlog::info("routes: {} IPv4 prefixes from {} ({} IPv6 lines skipped, {} duplicates, later line wins)",
                 load->routes.size(), routes, load->ipv6_skipped, load->duplicates);
    if (!load->routes6.empty())
      spdlog::info("routes: {} IPv6 prefixes from {} routed by the IPv6 path (LPM6)", load->routes6.size(), routes);
    auto a = ipv4::Ipv4App::create(load->routes, c, load->routes6);
    if (!a) return error(a.status().code(), "app.routes (--routes): {}", a.status().message());
    return std::shared_ptr<App>(std::move(*a));
  }
  if (name == "dpi") {
    std::string rules = opt.rules.empty() ? data_path("rules/et-open-2017") : opt.rules;
    std::error_code ec;  // an unreadable parent is an error of the loaders below, never an exception
    auto set = std::filesystem::is_directory(rules, ec) ? dpi::load_rule_dir(rules) : dpi::load_rule_files({rules});
    if (!set) return error(set.status().code(), "app.rules (--rules): {}", set.status().message());
    if (const auto& w = set->stats.warnings; !w.empty()) {
      if (opt.strict_rules)
        return error(Code::kInvalidArgument,
                     "app.rules (--rules): {} rules could not be read (--strict-rules): first: {}", w.size(),
                     w.front());
      spdlog::warn("app.rules (--rules): {} (--strict-rules refuses such a rule set)",
                   dpi::warnings_summary(set->stats));
    }
    dpi::DpiConfig c;
    c.max_slice_bytes = opt.max_frame_bytes;
    auto a = dpi::DpiApp::create(std::move(*set), c);
    if (!a) return error(a.status().code(), "app dpi: {}", a.status().message());
    return std::shared_ptr<App>(std::move(*a));
  }
  if (name == "md5") {
    md5::Md5Options o;
    o.whole_frame = opt.md5_whole_frame;
    o.max_frame_bytes = opt.max_frame_bytes;
    return std::shared_ptr<App>(std::make_shared<md5::Md5App>(o));
  }
  if (name == "aes") {
    const char* env = std::getenv(aes::kMasterKeyEnv);
    auto keys = aes::make_keys(
        {opt.keys, opt.master_key, opt.master_key_file, env ? env : "", opt.key_epoch, opt.iv_counter_start},
        opt.key_capacity);
    if (!keys) return keys.status();
    aes::AesOptions o;
    o.max_payload_bytes = opt.max_frame_bytes;
    return std::shared_ptr<App>(std::make_shared<aes::AesApp>(std::move(keys->table), o, std::move(keys->source)));
  }
  return error(Code::kInvalidArgument, "unknown app '{}' (known: {})", name, known_apps());
}

}  // namespace

}  // namespace hpr::kernels
