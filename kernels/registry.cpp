#include "kernels/registry.hpp"

#include "hpr/data_dir.hpp"
#include "kernels/ipv4/ipv4_app.hpp"

namespace hpr::kernels {

std::vector<std::string> app_names() { return {"ipv4"}; }

Result<std::shared_ptr<App>> make_app(const std::string& name, const AppOptions& opt) {
  if (name == "ipv4") {
    ipv4::Ipv4Config c;
    c.num_ports = opt.ports;
    if (!opt.drop_non_ipv4) c.non_ipv4_port = 0;
    std::string routes = opt.routes.empty() ? data_path("routes/ipasn_20140513.dat.gz") : opt.routes;
    auto a = ipv4::Ipv4App::from_file(routes, c);
    if (!a) return error(a.status().code(), "app ipv4: {}", a.status().message());
    return std::shared_ptr<App>(std::move(*a));
  }
  std::string known;
  for (const auto& n : app_names()) known += (known.empty() ? "" : ", ") + n;
  return error(Code::kInvalidArgument, "unknown app '{}' (known: {})", name, known);
}

}  // namespace hpr::kernels
