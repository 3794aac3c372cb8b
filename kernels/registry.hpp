#pragma once
// Applications by name, with explicit registration (static registrars in static libraries are
// silently dropped by the linker: architecture.md).
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "kernels/app.hpp"
#include "kernels/service/service_app.hpp"
#include "runtime/frame_pools.hpp"

namespace hpr::kernels {

struct AppOptions {
  std::string routes;        // ipv4: route file (.dat/.dat.gz pyasn, or "prefix/len nexthop" text)
  uint32_t ports = 4;        // ipv4: output ports (next hop = origin AS mod ports for BGP tables)
  bool drop_non_ipv4 = false;// ipv4: drop non-IPv4 (kNotIPv4) instead of passing to port 0
  // ipv4: next-hop addresses (a.b.c.d, host byte order) a text route file may name, each → a next hop number
  // ([[neighbour]] address = ...).
  std::vector<std::pair<uint32_t, uint32_t>> next_hop_addrs;
  std::string rules;         // dpi: rule file or directory of *.rules
  bool strict_rules = false;  // dpi: a rule that cannot be read refuses the rule set (else: skipped, logged)
  // aes key sources (precedence and refusals: kernels/aes/key_source.hpp). Give one: a key file, or a
  // master key as 32 hex digits or in a file; with none, the HPR_MASTER_KEY environment variable is read.
  std::string keys;                  // aes: key file ("flow <id> <key>" lines)
  std::string master_key;            // aes: master key, 32 hex digits; keys derived per connection
  std::string master_key_file;       // aes: file holding the master key (32 hex digits, whitespace around allowed)
  std::string key_epoch;             // aes: key epoch, 32 hex digits ("" = random per run, announced)
  // aes: where the IV counters start; unset (always, outside tests): random per run, so that runs sharing a
  // given key epoch do not share counter values (docs/crypto.md). Tests fix it to compare runs byte for byte.
  std::optional<uint64_t> iv_counter_start;
  uint32_t key_capacity = 65536;     // aes: key table slots (= flow table capacity; keys indexed by flow id)
  bool md5_whole_frame = false;      // md5: digest the whole frame instead of the L4 payload
  uint32_t max_frame_bytes = kDefaultMaxFrame;  // largest frame the input port hands out (ports.max_frame)
  // [[service]] entries (kernels/service/service_app.hpp): when given, make_app makes the services, each with its
  // chain, and the app name is not used.
  struct ServiceSpec {
    std::string name, chain;
    ServiceMatch match;
  };
  std::vector<ServiceSpec> services;
};

std::vector<std::string> app_names();
// The apps of `name`: one app ("ipv4") or a chain, the apps in order separated by commas ("ipv4,aes"); "ip" names
// ipv4. Errors (kInvalidArgument): an empty name or an empty app in the chain, an unknown app (listing the known
// ones), an app named twice.
Result<std::vector<std::string>> chain_apps(std::string_view name);
// Whether the app or chain `name` (as chain_apps accepts it, "ip" already ipv4) runs `app`.
bool chain_has(std::string_view name, std::string_view app);
// Whether the run's app (the app or chain `name`, or with opt.services the services' chains) runs `app`: in any
// service's chain, or (`every`) in each.
bool runs_app(const std::string& name, const AppOptions& opt, std::string_view app, bool every = false);
// One app, or a chain of apps (kernels/chain/chain_app.hpp) for a name with commas; with opt.services, the services
// (`name` unused). Errors: those of chain_apps, and those of each app; for services, naming service[N].
Result<std::shared_ptr<App>> make_app(const std::string& name, const AppOptions& opt);

}  // namespace hpr::kernels
