#pragma once
// DPDK ethdev ports. The EAL is initialised once per process (rte_eal_init cannot run twice);
// every DPDK port of the process shares it. On a machine without NICs or hugepages:
//   --no-huge --no-shconf --no-pci -m 512 --vdev=net_pcap0,rx_pcap=IN.pcap,tx_pcap=OUT.pcap
// (also net_ring, net_null, net_af_packet,iface=veth0). Real NICs: pass their EAL arguments
// (-a 0000:03:00.0, hugepages) instead. Privileges: vdevs with --no-huge need none beyond file
// access (net_af_packet needs CAP_NET_RAW); PCI devices need root or VFIO permissions.
#include <memory>
#include <string>
#include <vector>

#include "hpr/status.hpp"
#include "runtime/frame_pools.hpp"
#include "runtime/port.hpp"

namespace hpr {

// Initialises the EAL with `args` (argv[0] is added). A second call with the same arguments is a
// no-op; with different ones it is an error (the EAL cannot be re-initialised).
// Errors: kUnavailable with DPDK's reason (rte_strerror(rte_errno)) and the arguments used.
Status dpdk_init(const std::vector<std::string>& args);
bool dpdk_initialised();
// A thread that receives or sends on DPDK ports, registered with the EAL for its run: it gets an lcore id, so mbuf
// allocations and frees go through a per-thread mempool cache instead of the pool's shared ring (measured under
// callgrind: 53 + 16 instructions a packet without). Without the EAL, or with every lcore id taken: does nothing.
class DpdkThread {
 public:
  DpdkThread();
  ~DpdkThread();
  DpdkThread(const DpdkThread&) = delete;
  DpdkThread& operator=(const DpdkThread&) = delete;

 private:
  bool registered_ = false;
};
// Arguments for a machine without hugepages or NICs, plus the given vdevs.
std::vector<std::string> dpdk_default_args(const std::vector<std::string>& vdevs);

struct DpdkPortConfig {
  std::string name;           // ethdev name, e.g. "net_pcap0" (the vdev name) or a PCI address
  uint16_t rx_desc = 1024;
  uint16_t tx_desc = 1024;
  uint32_t mbufs = 8191;      // mempool size (mbufs) for rx and for copies on tx
  // Where the EAL's memory does not hold `mbufs`, halve it down to this and warn (0: fail instead): sizes chosen
  // by hpr, not by the user (ports.buffers).
  uint32_t min_mbufs = 0;
  uint16_t mbuf_data_bytes = 2048;
  // Frames longer than one mbuf arrive as chains (the port's MTU is set for max_frame, scatter on where the
  // driver has it) and are copied whole into a slot of a separate pool of large_slots buffers of max_frame
  // bytes; longer frames are rx_too_long (frame_too_long), a chain that finds the large pool empty
  // rx_pool_empty (pool_empty). On transmit, a frame longer than one mbuf is sent as a chain.
  uint32_t max_frame = kDefaultMaxFrame;
  uint32_t large_slots = kDefaultLargeSlots;
  bool promiscuous = true;
  // Queues (make_dpdk_ports): rx queues > 1 turn RSS on with a symmetric Toeplitz key where the driver has RSS.
  uint16_t rx_queues = 1, tx_queues = 1;
};

// What a port offers for several workers (before it is configured).
struct DpdkQueues {
  uint16_t max_rx = 1, max_tx = 1;
  bool rss = false;  // the driver hashes flows over its rx queues (flow_type_rss_offloads)
};
// Errors: kNotFound for an unknown port name (listing the ports), kUnavailable without the EAL.
Result<DpdkQueues> dpdk_queues(const std::string& name);

// Errors: kNotFound for an unknown port name (the message lists the ports there are),
// kUnavailable when configuring or starting the port fails.
Result<std::unique_ptr<Port>> make_dpdk_port(const DpdkPortConfig& cfg);  // one queue each way
// One Port per queue, views of one device: view i receives on rx queue i and sends on tx queue i (queue 0 where the
// port has fewer); the device's own counters (misses, pool) are reported by view 0, and the last view stops the port.
// Each view is used by one thread. Errors: those of make_dpdk_port, and the driver's for too many queues.
Result<std::vector<std::unique_ptr<Port>>> make_dpdk_ports(const DpdkPortConfig& cfg);

}  // namespace hpr
