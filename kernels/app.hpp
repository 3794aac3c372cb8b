#pragma once
// A packet application (ipv4, dpi, md5, aes) as one unit: what bytes go to the device, the kernel,
// its tables, the native reference on the same layout, and the host-side finish
// (architecture.md, "One application, one unit"; NBA's offloadable elements).
//
// Flow of one batch through a lane (the executor in runtime/ drives this):
//   1. for each packet: s = app.slice(pkt); gather frame[s.offset, s.offset+s.len) into pkts at
//      desc[i].off (16-byte aligned), desc[i] = {off, len, flags=s.flags, flow=pkt.flow_id, seq=pkt.seq}
//   2. device: kernel(desc, n, pkts, out, tables...)  or  native: app.run_native(view)
//   3. if app.writes_back(): copy each slice back into its frame
//   4. app.finish(packets, view): apply per-packet results (verdicts, drops, out ports, logs)
#include <CL/opencl.hpp>

#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <vector>

#include "hpr/status.hpp"
#include "kernels/device_batch.hpp"
#include "runtime/flow.hpp"
#include "runtime/packet.hpp"

namespace hpr::kernels {

// Embedded .cl sources, by file stem ("hpr_desc", "ipv4", ...). Empty when unknown.
std::string_view embedded_source(std::string_view name);

struct Slice {
  uint16_t offset = 0;  // first byte in the frame
  uint16_t len = 0;     // 0: nothing to send; the packet still gets a result slot
  uint16_t flags = 0;   // copied into Desc::flags
};

// One gathered batch in host memory (mapped device memory or plain host memory).
struct BatchView {
  Desc* desc = nullptr;
  uint32_t n = 0;
  uint8_t* pkts = nullptr;
  uint8_t* out = nullptr;  // n * result_bytes()
  // Native lanes work in place: slice i is at slices[i], inside its frame, and desc[i].off is unused.
  // Null for a gathered batch (devices, tests): slice i is at pkts + desc[i].off.
  uint8_t* const* slices = nullptr;
  uint8_t* slice(uint32_t i) const { return slices != nullptr ? slices[i] : pkts + desc[i].off; }
};

// Device-side tables of one app on one OpenCL context, shared by every lane on that context.
class DeviceTables {
 public:
  virtual ~DeviceTables() = default;
  // Set the kernel arguments from index 4 on (0..3 are desc, n, pkts, out).
  virtual Status bind(cl::Kernel& kernel) = 0;
  // Per batch, after the gather and before the launch, on the lane's own thread and kernel: what this
  // batch needs beyond desc and pkts (AES: the key slots of its flows, in a buffer of its own that `keep`
  // holds until the batch is reaped). May rewrite desc[i].flow (nothing reads it after the kernel).
  // Several lanes call it at once. Errors: kUnavailable with the OpenCL error.
  virtual Status stage(cl::Kernel& /*kernel*/, const cl::Context& /*ctx*/, Desc* /*desc*/, uint32_t /*n*/,
                       cl::Buffer& /*keep*/) {
    return Status::ok();
  }
};

// The longest chain: each app once (registry.hpp's chain_apps); and the most apps that report in run_in_place
// (services: up to 8 chains, service_app.hpp).
inline constexpr uint32_t kMaxChainLength = 4;
inline constexpr uint32_t kMaxAppSlots = 8 * kMaxChainLength;

class App {
 public:
  virtual ~App() = default;
  virtual std::string_view name() const = 0;

  // Bytes of `p` the kernel needs. Called only for packets the classifier accepted.
  virtual Slice slice(const Packet& p) const = 0;
  // Upper bound of Slice::len, for sizing batch buffers.
  virtual uint32_t max_slice_bytes() const = 0;
  // Bytes of result per packet in `out`.
  virtual uint32_t result_bytes() const = 0;
  // True when the kernel modifies the slice in place and it must go back into the frame.
  virtual bool writes_back() const = 0;

  // Complete OpenCL C 1.2 source (descriptor header included) and kernel function name.
  virtual std::string kernel_source() const = 0;
  virtual std::string_view kernel_name() const = 0;
  // Build options passed to clBuildProgram (e.g. "-DK_MATCHES=8").
  virtual std::string build_options() const { return {}; }
  // Upload this app's tables to a context. Called once per context at start.
  virtual Result<std::unique_ptr<DeviceTables>> make_device_tables(const cl::Context& ctx,
                                                                   const cl::CommandQueue& queue) const = 0;

  // For a native run in place on the frames: desc[i] = {0, len, flags, flow, seq} and slices[i] = the
  // slice inside its frame; a packet that already carries a drop reason gets an empty slice. Apps
  // define it as [[gnu::flatten]] slices_in_place_of(*this, ...) beside their slice(), so that slice()
  // is inlined (a virtual call per packet was 9% of the worker path's time; -O2 alone kept the call).
  virtual void slices_in_place(std::span<const Packet> pkts, Desc* desc, uint8_t** slices) const = 0;

  // Native reference on the same layout: must produce byte-identical pkts (when writes_back) and out.
  // Reads and writes slice i through batch.slice(i) and within its desc[i].len bytes only, so that it
  // also runs in place on the frames (slices_in_place).
  virtual void run_native(const BatchView& batch) const = 0;

  // Flow life, from the one thread that classifies (dispatcher, worker path): the FlowTable has just
  // given slot `id` to the connection `canonical` (AES: its key), and the flow's sequence numbers have
  // entered `half` (0: seq 0 after a wrap, 1: seq 2^31) of their 32-bit space (AES: a fresh IV counter).
  // Both come before the flow's packets reach a lane. Default: nothing.
  virtual void flow_started(uint32_t /*id*/, const FlowKey& /*canonical*/) const {}
  virtual void flow_seq_half(uint32_t /*id*/, uint32_t /*half*/) const {}
  // Live reloads (pipeline/app_swap.hpp): this app replaces `running` (the same app with new tables); called on the
  // dispatcher's thread before flow_started() for each live flow. AES: IV counters go on from running's. Default:
  // nothing.
  virtual void take_over_from(const App& /*running*/) const {}
  // Whether the app keeps state per flow id (AES: the keys). Several workers, each with its flow table, then get an
  // app each (run_setup.cpp); the others share one.
  virtual bool keeps_flow_state() const { return false; }
  // Settings of this run that the summary shows under "app" (AES: the key epoch). Default: none.
  virtual std::vector<std::pair<std::string, std::string>> summary_info() const { return {}; }

  // Apply results to the packets after the batch returns (desc[i] belongs to pkts[i]).
  // Sets Packet::drop / out_port; never allocates.
  virtual void finish(std::span<Packet> pkts, const BatchView& batch) const = 0;
  // True when finish changes nothing (md5, dpi: their results stay results): on a device the chain's next app may run
  // right after this one's kernel, without a round trip to the host for this finish first (pipeline/cl_executor.cpp).
  virtual bool finish_changes_nothing() const { return false; }

  // What run_in_place reports after each app has finished its packets: its index k (one app: 0; a chain's apps in
  // order; services: chain_app), the app, the packets it ran (a service's: a copy of its packets) as its finish left
  // them (the apps after it have not run yet), and its view of them: for count_events and append_log.
  using AppDone = std::function<void(uint32_t k, const App& app, std::span<const Packet> pkts, const BatchView& v)>;
  // A native batch in place on its frames, in one call: slices_in_place, run_native, finish, then `done` (what native
  // lanes and the worker path run). `desc` and `slices` hold desc_slots() entries per packet, `out` n ×
  // result_bytes(). A chain runs its apps in turn here (kernels/chain/chain_app.hpp), services each service's
  // (kernels/service/service_app.hpp). The packets are as parse() left them on their frames' bytes (the pipeline
  // parses every packet before any app runs), so an app may skip what the parser checked (ipv4: version, IHL and
  // total length); a gathered batch keeps every check, for the devices and for hand-made packets.
  virtual void run_in_place(std::span<Packet> pkts, Desc* desc, uint8_t** slices, uint8_t* out,
                            const AppDone& done) const {
    slices_in_place(pkts, desc, slices);
    const BatchView v{desc, static_cast<uint32_t>(pkts.size()), nullptr, out, slices};
    run_native(v);
    finish(pkts, v);
    done(0, *this, pkts, v);
  }
  // The apps that report in run_in_place, by index: this app alone, a chain's apps in order, every service's apps.
  virtual uint32_t chain_length() const { return 1; }
  virtual const App& chain_app(uint32_t /*k*/) const { return *this; }
  // How the summary names app k: its name ("ipv4"), or "service:app" for services.
  virtual std::string chain_label(uint32_t k) const { return std::string(chain_app(k).name()); }
  // Descriptors (and slice pointers) per packet that run_in_place needs.
  virtual uint32_t desc_slots() const { return chain_length(); }
  // Why an OpenCL lane cannot run this app (a chain whose md5 reads what ipv4's finish rewrites), or empty: it can.
  virtual std::string device_refusal() const { return {}; }
  // The kernels an OpenCL lane runs on each batch, in turn, on one gathered copy of its packets: 1 (this app's own),
  // a chain's apps, or every service's apps (chain_app(k); pipeline/cl_executor.cpp).
  virtual uint32_t device_stages() const { return 1; }
  // Which packets device stage k runs: kNoSvc, every packet of the batch (one app, a chain); else only the packets of
  // that service (Packet::svc; services: the stages of a service's chain).
  virtual uint8_t stage_service(uint32_t /*k*/) const { return kNoSvc; }
  // Before a device gathers a batch: what run_in_place does first (services: each packet's service in Packet::svc, a
  // packet that matches none dropped as no_service). Default: nothing.
  virtual void classify_batch(std::span<Packet> /*pkts*/) const {}
  // Whether finish() rewrites frame bytes before the app's slice (ipv4 with neighbours: the Ethernet addresses), and
  // whether the slice begins at the frame's first byte (md5_whole_frame): a chain that has such an app after such a
  // finish runs on native lanes only (a device's later app would read the bytes as gathered, before the rewrite).
  virtual bool rewrites_l2() const { return false; }
  virtual bool reads_l2() const { return false; }
  // Traffic classes for the LAPS balancer (its service partitions, laps-hash-afd-load-balancing.txt §III-C): how many,
  // and a packet's. Default: one, or the generator's service number (Packet::service) for LAPS experiments;
  // services: the [[service]] the packet matches (service_app.hpp).
  virtual uint32_t service_count() const { return 1; }
  // The [[service]] names, by Packet::svc (services only: the pipeline keeps books per service; else none).
  virtual std::vector<std::string> service_names() const { return {}; }
  // The [[service]] a packet matches (its index), or kNoSvc: none, or a run without services.
  virtual uint8_t service_index(const Packet& /*p*/) const { return kNoSvc; }
  virtual uint8_t balance_service(const Packet& p) const { return p.service; }

  // Appends one line per packet whose result is worth logging (DPI: an alert with the pattern ids;
  // MD5: the digest), each prefixed by `prefix(i)`, the caller's "time flow" text. Default: none.
  virtual void append_log(std::span<const Packet> /*pkts*/, const BatchView& /*batch*/,
                          const std::function<std::string(uint32_t)>& /*prefix*/, std::string& /*out*/) const {}
  // Application events in a finished batch for the summary (DPI: matches; MD5: digests; AES:
  // packets encrypted; IPv4: packets forwarded).
  // `pkts`: the batch's packets as this app's finish left them (a packet dropped before the app has its reason, and
  // an empty slice).
  virtual uint64_t count_events(std::span<const Packet> /*pkts*/, const BatchView& /*batch*/) const { return 0; }
  // Name of what count_events counts ("matches", "digests", ...).
  virtual std::string_view event_name() const { return "events"; }
};

// The flow's next sequence number, as the dispatcher assigns it (before fs.packets counts the packet).
// When it enters a half of the 32-bit space (2^31, or 0 again after a wrap; not the flow's first packet,
// whose start the app heard of in flow_started) the app hears of it first (AES: a fresh IV counter).
inline uint32_t take_seq(FlowState& fs, uint32_t id, const App& app) {
  const uint32_t seq = fs.next_seq++;
  if ((seq & 0x7fffffffu) == 0 && fs.packets != 0) app.flow_seq_half(id, seq >> 31);
  return seq;
}

// What of `p` the app works on: slice(p), or an empty slice for a packet that already carries a drop reason (gathers,
// slices_in_place, ipv4's one pass). A = App calls slice() virtually; an app's own (final) type calls it directly, so
// that it can be inlined.
template <class A>
Slice packet_slice(const A& app, const Packet& p) {
  return p.drop == DropReason::kNone ? app.slice(p) : Slice{};
}

// App::slices_in_place for app type A (final: A::slice is called directly and can be inlined).
template <class A>
void slices_in_place_of(const A& app, std::span<const Packet> pkts, Desc* desc, uint8_t** slices) {
  static_assert(std::is_final_v<A>, "slices_in_place_of: the app's final type, so that slice() is not virtual");
  for (size_t i = 0; i < pkts.size(); ++i) {
    const Packet& p = pkts[i];
    const Slice s = packet_slice(app, p);
    desc[i] = Desc{0, s.len, s.flags, p.flow_id, p.seq};
    slices[i] = p.data + s.offset;
  }
}

}  // namespace hpr::kernels
