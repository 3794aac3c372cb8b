// dpdk_port.hpp in a build without DPDK (HPR_WITH_DPDK=OFF, or AUTO where libdpdk-dev was not found at configure
// time): every call that would need the EAL or a port fails with one message naming the setting; the pcap files and
// the generator work as ever. Built instead of dpdk_port.cpp (runtime/CMakeLists.txt).
#include <string>
#include <vector>

#include "runtime/ports/dpdk_port.hpp"

namespace hpr {
namespace {

Status no_dpdk() {
  return error(Code::kUnavailable,
               "dpdk: ports (--in/--out dpdk:ETHDEV, input.kind/output.kind = \"dpdk\"): this hpr was built without "
               "DPDK (HPR_WITH_DPDK=OFF, or libdpdk-dev not found at configure time); use pcap:FILE or gen, or "
               "rebuild with -DHPR_WITH_DPDK=ON");
}

}  // namespace

Status dpdk_init(const std::vector<std::string>&) { return no_dpdk(); }
bool dpdk_initialised() { return false; }
DpdkThread::DpdkThread() = default;
DpdkThread::~DpdkThread() = default;
std::vector<std::string> dpdk_default_args(const std::vector<std::string>& vdevs) {
  std::vector<std::string> a;
  for (const auto& v : vdevs) a.push_back("--vdev=" + v);
  return a;
}
Result<DpdkQueues> dpdk_queues(const std::string&) { return no_dpdk(); }
Result<std::unique_ptr<Port>> make_dpdk_port(const DpdkPortConfig&) { return no_dpdk(); }
Result<std::vector<std::unique_ptr<Port>>> make_dpdk_ports(const DpdkPortConfig&) { return no_dpdk(); }

}  // namespace hpr
