// split_by_flow IN.pcap OUT0.pcap OUT1.pcap ...: each frame of IN into the capture of the worker its flow hash names,
// as hpr's spreading reader would (runtime/ports/spread_port.hpp). One capture per rx queue of a DPDK net_pcap port
// then stands for a NIC with symmetric RSS (hpr run --workers N --rx-spread queues; bench/runtime/workers_scaling.py).
#include <cstdio>
#include <string>
#include <vector>

#include "runtime/ports/spread_port.hpp"

int main(int argc, char** argv) {
  if (argc < 3) {
    std::fprintf(stderr, "usage: %s IN.pcap OUT0.pcap [OUT1.pcap ...]\n", argv[0]);
    return 2;
  }
  std::vector<std::string> out(argv + 2, argv + argc);
  if (hpr::Status s = hpr::split_capture_by_flow(argv[1], out); !s.is_ok()) {
    std::fprintf(stderr, "split_by_flow: %s\n", s.message().c_str());
    return 1;
  }
  return 0;
}
