#pragma once
// Spreading one receive queue over several workers (issue 12): for ports without RSS (capture files, the generator,
// DPDK vdevs such as net_pcap), one reader spreads the frames by their symmetric flow hash, so both directions of a
// flow reach the same worker and each flow keeps its order.
//
// There is no reader thread: a worker whose queue runs short takes the reader's lock (try-lock: if another worker
// holds it, it goes on with what it has), receives a burst from the source, and puts each frame on the queue of the
// worker its flow hash names. With backpressure (file input: every packet counts) the reader takes a burst only when
// every queue has room for it; without (a line-rate source), a frame whose worker's queue is full is released and
// counted as missed (port_missed: the loss a NIC counts when one RSS queue overflows).
//
// Books: each view counts the frames it handed out as its rx; view 0 also reports the source's own port-level
// counters (missed, too long, pool empty, buffers in use), so the workers' sums are the port's. When the run stops,
// stop_rx() ends reading from the source for every view; each worker then receives what its queue holds, so no
// frame the reader took in is lost.
#include <memory>
#include <vector>

#include "hpr/status.hpp"
#include "runtime/port.hpp"

namespace hpr {

// n views (n >= 1) of `source`; view i is worker i's rx port. The source lives as long as any view.
// backpressure: wait for room (see above) instead of counting overflow as missed. queue: frames per view's queue.
// Errors: kInvalidArgument for n == 0 or queue < 2 × 256.
Result<std::vector<std::unique_ptr<Port>>> make_spread_ports(std::unique_ptr<Port> source, uint16_t n,
                                                             bool backpressure, uint32_t queue = 4096);

// n transmit views of one port that is not per-queue (a capture file, the null sink): each view's transmit takes a
// lock around the port's. View 0 closes and flushes the port; the others' close() and flush() do nothing, so the
// worker on view 0 must finish last (the run does: it is the primary). Stats: view 0 reports the port's tx counters.
std::vector<std::unique_ptr<Port>> make_shared_tx_ports(std::unique_ptr<Port> port, uint16_t n);

// Which of n workers the symmetric flow hash h names (multiply-shift: uniform for any n).
inline uint16_t worker_of(uint32_t h, uint16_t n) {
  return static_cast<uint16_t>((static_cast<uint64_t>(h) * n) >> 32);
}
// The worker of n a frame goes to: its canonical flow hash (runtime/flow.hpp) parsed from a copy; frames that are not
// IP (or do not parse) go to worker 0.
uint16_t spread_worker(const Packet& p, uint16_t n);

// Writes the frames of capture `in` into out.size() captures, each frame to the one spread_worker names: what
// make_spread_ports would do, done beforehand (a DPDK net_pcap port with one capture per rx queue then stands for
// a NIC with RSS: --rx-spread queues). Errors: those of the files, naming them.
Status split_capture_by_flow(const std::string& in, const std::vector<std::string>& out);

}  // namespace hpr
