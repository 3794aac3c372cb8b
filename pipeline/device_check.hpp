#pragma once
// A device against the native reference, byte for byte, on a sample of real traffic (issue 14): what
// `hpr selftest` reports per device and app, and the check `hpr run` makes of each device before it gives it
// flows (a device that builds the program but computes wrong results is left out with the reason).
//
// Both sides run through the pipeline's own executors (make_native_executor, make_cl_executor) in batches, on
// their own copy of the sample's frames; the comparison covers each packet's frame bytes after the app (ipv4
// rewrites TTL and checksum, aes encrypts in place), its verdict (drop reason, output port) and its result bytes.
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "hpr/status.hpp"
#include "kernels/app.hpp"
#include "kernels/registry.hpp"
#include "kernels/runner.hpp"
#include "pipeline/lane.hpp"
#include "runtime/flow.hpp"

namespace hpr {

// Packets with the flow ids and sequence numbers a dispatcher would give them.
struct CheckSample {
  std::vector<std::vector<uint8_t>> frames;
  std::vector<Packet> pkts;                      // parsed; data points into `frames`
  std::vector<std::string> origin;               // per packet: "file.pcap #k" or "synthetic #k"
  std::vector<std::pair<uint32_t, FlowKey>> flows;  // flow id and canonical key, in the order the flows started
  std::string source;                            // "N packets of M captures under DIR" or "N synthetic packets"
  uint64_t frame_bytes = 0;
  // Tells the app about every flow of the sample (aes: derives their keys). Call once per app before running it.
  void start_flows(const kernels::App& app) const;
};

// The first frames of the captures under `dir` (files in name order, up to `per_file` frames from each so that
// many files are represented, until `max_packets`), frames longer than `max_frame` left out. Without a
// readable capture there: `max_packets` synthetic IPv4/IPv6 TCP/UDP frames of 60..1,514 bytes (`source` says
// which). `fill`: where the captures hold fewer frames than `max_packets`, the same frames again in order until
// `max_packets` (later packets of the same flows), for batches larger than the captures at hand. Never fails.
CheckSample load_check_sample(const std::string& dir, uint32_t max_packets, uint32_t per_file, uint32_t max_frame,
                              bool fill = false);

// What one engine made of the sample: frames after the app, packets with their verdicts, result bytes.
struct EngineOutput {
  std::vector<std::vector<uint8_t>> frames;
  std::vector<Packet> pkts;
  std::vector<uint8_t> out;  // result_row_bytes() per packet, in sample order
};

// Result bytes per packet in EngineOutput::out: each app's results that ran it, in turn, each rounded up to 16 (an
// upper bound: every app of a chain or of all services).
uint32_t result_row_bytes(const kernels::App& app);
// Runs the sample through `ex` in batches of `batch` (<= the executor's max_batch).
// Errors: the executor's (a device that fails a submit or a batch).
Result<EngineOutput> run_sample(const kernels::App& app, Executor& ex, const CheckSample& s, uint32_t batch);

// The first packet where `dev` differs from `ref`, described (packet, origin, what differs, the bytes at the
// first differing offset); empty when they are equal byte for byte.
std::string first_difference(const kernels::App& app, const CheckSample& s, const EngineOutput& ref,
                             const EngineOutput& dev);

// The device check of `hpr run`: the sample through the native executor and through the device, compared.
// Returns the reason the device fails ("computes wrong results: packet ..."), or an empty string when it
// passes. `app` must be an app whose flow state the check may change (aes: not the run's own app).
std::string check_device(const kernels::App& app, std::shared_ptr<kernels::AppProgram> prog, bool host_unified,
                         const CheckSample& s, uint32_t batch);

// `hpr run`'s check of one device before it gets flows: `prog` is the device's program for the run's app `run_app`
// (made by make_app(app_name, opts)). An app that keeps state per flow (aes: keys, IV counters) is checked as an
// app of its own with a fixed check key and its own device tables (on the run's built program), so the run's keys
// and counters are untouched. Returns what check_device returns.
std::string check_device_for_run(const std::string& app_name, kernels::AppOptions opts, const kernels::App& run_app,
                                 std::shared_ptr<kernels::AppProgram> prog, bool host_unified, const CheckSample& s);

}  // namespace hpr
