#pragma once
// [[service]] entries of the config file (kernels/service/service_app.hpp; docs/chains.md "Services").
#include <toml++/toml.h>

#include <vector>

#include "kernels/registry.hpp"

namespace hpr {

// Reads every [[service]] table: name and chain (required), default, and the match conditions proto (tcp, udp, icmp,
// icmpv6, sctp or 0..255), src and dst (IPv4 a.b.c.d/len), port (0..65535), dscp (0..63), gen_service (0..255), and
// lanes: the lanes its flows may take (names or parts of names, as [lanes.weights]; `lanes` gets one list per service,
// empty where none was given). Errors name service[N].key and its line.
Status read_services(const toml::table& t, std::vector<kernels::AppOptions::ServiceSpec>& out,
                     std::vector<std::vector<std::string>>& lanes);

}  // namespace hpr
