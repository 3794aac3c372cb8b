#include "pipeline/device_check.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <random>

#include "runtime/checksum.hpp"
#include "runtime/parser.hpp"
#include "runtime/pcap_file.hpp"

namespace hpr {

namespace {

// Ethernet + IPv4 or IPv6 + TCP or UDP with a pseudo-random payload: the check's traffic where no capture is.
std::vector<uint8_t> synthetic_frame(std::mt19937& rng, uint32_t k) {
  static constexpr uint16_t kSizes[] = {60, 64, 128, 256, 512, 590, 1024, 1500, 1514};
  const bool v6 = k % 5 == 4, tcp = k % 3 != 0;
  const uint16_t len = std::max<uint16_t>(kSizes[k % std::size(kSizes)], v6 ? 86 : 66);
  std::vector<uint8_t> f(len);
  for (auto& b : f) b = static_cast<uint8_t>(rng());
  f[0] = 2, f[1] = f[2] = f[3] = f[4] = 0, f[5] = 1;
  f[6] = 2, f[7] = f[8] = f[9] = f[10] = 0, f[11] = 2;
  const uint32_t flow = k % 97;  // packets of one flow share its addresses and ports
  uint8_t* ip = f.data() + 14;
  uint8_t* l4;
  if (v6) {
    store_be16(f.data() + 12, 0x86dd);
    ip[0] = 0x60, ip[1] = ip[2] = ip[3] = 0;
    store_be16(ip + 4, static_cast<uint16_t>(len - 14 - 40));
    ip[6] = tcp ? 6 : 17;
    ip[7] = 64;
    for (int i = 0; i < 16; ++i) ip[8 + i] = static_cast<uint8_t>(0x20 + i), ip[24 + i] = static_cast<uint8_t>(0x30 + i);
    ip[23] = static_cast<uint8_t>(flow);
    l4 = ip + 40;
  } else {
    store_be16(f.data() + 12, 0x0800);
    ip[0] = 0x45, ip[1] = 0;
    store_be16(ip + 2, static_cast<uint16_t>(len - 14));
    store_be16(ip + 4, static_cast<uint16_t>(k));
    ip[6] = 0x40, ip[7] = 0, ip[8] = 64, ip[9] = tcp ? 6 : 17;
    ip[10] = ip[11] = 0;
    store_be32(ip + 12, 0x0a000000u | flow);
    store_be32(ip + 16, 0x01000000u + flow * 0x01010101u);  // spread over the address space: many routes
    store_be16(ip + 10, ip_checksum(ip, 20));
    l4 = ip + 20;
  }
  store_be16(l4, static_cast<uint16_t>(1024 + flow));
  store_be16(l4 + 2, tcp ? 80 : 53);
  if (tcp) {
    l4[12] = 0x50, l4[13] = 0x18;  // data offset 5 words, PSH ACK
  } else {
    store_be16(l4 + 4, static_cast<uint16_t>(f.data() + len - l4));
    l4[6] = l4[7] = 0;  // no checksum
  }
  return f;
}

std::string hex_at(const uint8_t* p, size_t n, size_t at) {
  std::string s;
  for (size_t i = at; i < std::min(n, at + 8); ++i) s += fmt::format("{:02x}", p[i]);
  return s.empty() ? "(none)" : s;
}

}  // namespace

void CheckSample::start_flows(const kernels::App& app) const {
  for (const auto& [id, key] : flows) app.flow_started(id, key);
}

CheckSample load_check_sample(const std::string& dir, uint32_t max_packets, uint32_t per_file, uint32_t max_frame,
                              bool fill) {
  CheckSample s;
  uint32_t files = 0;
  std::error_code ec;
  if (std::filesystem::is_directory(dir, ec)) {
    for (const auto& path : list_captures(dir)) {
      if (s.frames.size() >= max_packets) break;
      auto cap = load_capture(path);
      if (!cap) continue;
      uint32_t taken = 0;
      for (size_t i = 0; i < cap->frames.size() && taken < per_file && s.frames.size() < max_packets; ++i) {
        if (cap->frames[i].size() < 14 || cap->frames[i].size() > max_frame) continue;
        s.frames.push_back(std::move(cap->frames[i]));
        s.origin.push_back(fmt::format("{} #{}", std::filesystem::path(path).filename().string(), i + 1));
        ++taken;
      }
      files += taken > 0;
    }
  }
  if (s.frames.empty()) {
    std::mt19937 rng(14);
    for (uint32_t k = 0; k < max_packets; ++k) {
      s.frames.push_back(synthetic_frame(rng, k));
      s.origin.push_back(fmt::format("synthetic #{}", k + 1));
    }
    s.source = fmt::format("{} synthetic packets (no capture under {})", s.frames.size(), dir);
  } else {
    s.source = fmt::format("{} packets of {} captures under {}", s.frames.size(), files, dir);
    if (fill && s.frames.size() < max_packets) {  // the same frames again, in order: later packets of the same flows
      const size_t distinct = s.frames.size();
      for (size_t k = 0; s.frames.size() < max_packets; ++k) {
        s.frames.push_back(s.frames[k % distinct]);
        s.origin.push_back(fmt::format("{} (repeat {})", s.origin[k % distinct], k / distinct + 2));
      }
      s.source = fmt::format("{} packets ({} of {} captures under {}, repeated)", s.frames.size(), distinct, files, dir);
    }
  }
  // Flow ids and sequence numbers as the dispatcher gives them (one FlowTable, no expiry).
  auto table = FlowTable::create(1u << 16, ~uint64_t{0} / 2);
  for (auto& f : s.frames) {
    Packet p;
    p.data = f.data();
    p.len = static_cast<uint16_t>(f.size());
    s.frame_bytes += p.len;
    if (parse(p) == DropReason::kNone && table) {
      const FlowKey k = flow_key(p).canonical();
      bool inserted = false;
      p.flow_id = (*table)->lookup_or_insert(k, flow_hash_symmetric(k), 0, &inserted);
      if (inserted && p.flow_id != kNoFlow) s.flows.emplace_back(p.flow_id, k);
      if (p.flow_id != kNoFlow) p.seq = (*table)->state(p.flow_id).next_seq++;
    }
    s.pkts.push_back(p);
  }
  return s;
}

Result<EngineOutput> run_sample(const kernels::App& app, Executor& ex, const CheckSample& s, uint32_t batch) {
  EngineOutput o;
  o.frames = s.frames;
  o.pkts = s.pkts;
  for (size_t i = 0; i < o.pkts.size(); ++i) o.pkts[i].data = o.frames[i].data();
  const uint32_t rb = result_row_bytes(app);
  o.out.assign(o.pkts.size() * size_t{rb}, 0);
  std::vector<Packet*> refs, done;  // the executor writes each batch's verdicts back into o.pkts
  for (Packet& p : o.pkts) refs.push_back(&p);
  batch = std::max<uint32_t>(batch, 1);
  std::vector<std::pair<const uint8_t*, size_t>> by_frame;  // (frame, packet), sorted
  for (size_t i = 0; i < o.pkts.size(); ++i) by_frame.emplace_back(o.pkts[i].data, i);
  std::sort(by_frame.begin(), by_frame.end());
  std::vector<size_t> at(batch);  // per packet of the batch: its result bytes so far
  for (size_t first = 0; first < o.pkts.size(); first += batch) {
    const auto n = static_cast<uint32_t>(std::min<size_t>(batch, o.pkts.size() - first));
    HPR_RETURN_IF_ERROR(ex.submit(refs.data() + first, n));
    done.clear();
    // Each packet's rb bytes hold its results of the apps that ran it, in turn (result_row_bytes). The apps report
    // their rows (a service's: its packets), which are found by their frames.
    std::fill(at.begin(), at.end(), 0);
    auto r = ex.reap(true, done, [&](std::span<const Packet> pk, const kernels::BatchView& v, const kernels::App& a, uint32_t) {
      const uint32_t ab = a.result_bytes();
      for (size_t j = 0; j < pk.size(); ++j) {
        const std::pair<const uint8_t*, size_t> key{pk[j].data, 0};
        const auto i = static_cast<size_t>(std::lower_bound(by_frame.begin(), by_frame.end(), key) - by_frame.begin());
        if (i == by_frame.size() || by_frame[i].first != pk[j].data) continue;
        const size_t row = by_frame[i].second;
        if (at[row - first] + ab <= rb) std::memcpy(o.out.data() + row * rb + at[row - first], v.out + j * ab, ab);
        at[row - first] += (ab + 15) / 16 * 16;
      }
    });
    if (!r) return r.status();
    if (!*r || done.size() != n || done.front() != refs[first])
      return error(Code::kInternal, "a batch of {} packets did not come back whole", n);
  }
  return o;
}

uint32_t result_row_bytes(const kernels::App& app) {
  uint32_t rb = 0;
  for (uint32_t k = 0; k < app.chain_length(); ++k) rb += (app.chain_app(k).result_bytes() + 15) / 16 * 16;
  return rb;
}

std::string first_difference(const kernels::App& app, const CheckSample& s, const EngineOutput& ref,
                             const EngineOutput& dev) {
  const uint32_t rb = result_row_bytes(app);
  for (size_t i = 0; i < s.pkts.size(); ++i) {
    const Packet &a = ref.pkts[i], &b = dev.pkts[i];
    std::string what;
    if (a.drop != b.drop) {
      what = fmt::format("verdict {} (native: {})", drop_reason_name(b.drop), drop_reason_name(a.drop));
    } else if (a.out_port != b.out_port) {
      what = fmt::format("output port {} (native: {})", b.out_port, a.out_port);
    } else if (std::memcmp(ref.out.data() + i * rb, dev.out.data() + i * rb, rb) != 0) {
      size_t at = 0;
      while (ref.out[i * rb + at] == dev.out[i * rb + at]) ++at;
      what = fmt::format("result byte {} of {}: {} (native: {})", at, rb, hex_at(dev.out.data() + i * rb, rb, at),
                         hex_at(ref.out.data() + i * rb, rb, at));
    } else if (ref.frames[i] != dev.frames[i]) {
      const auto& fa = ref.frames[i];
      const auto& fb = dev.frames[i];
      size_t at = 0;
      while (at < fa.size() && at < fb.size() && fa[at] == fb[at]) ++at;
      what = fmt::format("frame byte {} of {}: {} (native: {})", at, fa.size(), hex_at(fb.data(), fb.size(), at),
                         hex_at(fa.data(), fa.size(), at));
    }
    if (!what.empty())
      return fmt::format("packet {} of {} ({}, {} bytes, flow {}): {}", i + 1, s.pkts.size(), s.origin[i],
                         s.pkts[i].len, s.pkts[i].flow_id, what);
  }
  return {};
}

std::string check_device(const kernels::App& app, std::shared_ptr<kernels::AppProgram> prog, bool host_unified,
                         const CheckSample& s, uint32_t batch) {
  const ExecutorConfig ec{.max_batch = batch, .in_flight = 1, .call_faults = false};
  s.start_flows(app);
  auto native = make_native_executor(app, ec);
  auto ref = run_sample(app, *native, s, batch);
  if (!ref) return "the native reference failed on the check sample: " + ref.status().message();
  auto ex = make_cl_executor(app, std::move(prog), host_unified, ec);
  if (!ex) return ex.status().message();
  auto got = run_sample(app, **ex, s, batch);
  if (!got) return got.status().message();
  std::string diff = first_difference(app, s, *ref, *got);
  return diff.empty() ? diff : "computes wrong results: " + diff;
}

std::string check_device_for_run(const std::string& app_name, kernels::AppOptions opts, const kernels::App& run_app,
                                 std::shared_ptr<kernels::AppProgram> prog, bool host_unified, const CheckSample& s) {
  constexpr uint32_t kBatch = 64;
  if (!run_app.keeps_flow_state()) return check_device(run_app, std::move(prog), host_unified, s, kBatch);
  opts.keys.clear();
  opts.master_key_file.clear();
  opts.master_key = "000102030405060708090a0b0c0d0e0f";  // a check key, never a user's
  opts.key_epoch = "0f0e0d0c0b0a09080706050403020100";
  opts.iv_counter_start = 0;
  auto app = kernels::make_app(app_name, opts);
  if (!app) return "the check's own app could not be made: " + app.status().message();
  // The same kernel and options (only the keys differ): the run's built program with the check app's tables.
  auto own = (*app)->kernel_source() == run_app.kernel_source() && (*app)->build_options() == run_app.build_options()
                 ? prog->with_tables_of(**app)
                 : kernels::AppProgram::create(**app, prog->device);
  if (!own) return own.status().message();
  return check_device(**app, std::move(*own), host_unified, s, kBatch);
}

}  // namespace hpr
