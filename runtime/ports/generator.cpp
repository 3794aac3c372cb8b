#include "runtime/ports/generator.hpp"

#include "runtime/checksum.hpp"

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <unordered_map>
#include <unordered_set>

#include "runtime/parser.hpp"
#include "runtime/pcap_file.hpp"
#include "runtime/pool.hpp"
#include "runtime/ports/generator_random.hpp"

namespace hpr {
namespace {

constexpr uint32_t kPayloadPoolBytes = 256 * 1024;  // power of two: offsets by mask
constexpr uint32_t kMaxTemplates = 65536;
constexpr uint32_t kMaxPatternBytes = 8000;
constexpr uint16_t kTcpPorts[] = {80, 443, 22, 25, 8080};
constexpr uint16_t kUdpPorts[] = {53, 123, 443, 4789, 5060};

bool share_ok(double x) { return std::isfinite(x) && x >= 0 && x <= 1; }

struct Template {
  uint32_t off = 0;  // into template bytes
  uint16_t hdr_len = 0;
  uint16_t l3_off = 0, l4_off = 0;
  uint8_t family = 0, proto = 0;
  // Templates equal but for the L4 source port and the last two bytes of the source address form a
  // group; generations number their flows within the group so that they stay distinct.
  uint32_t group_idx = 0, group_size = 1;
};

// Hash chain of a synthetic flow: everything in its headers derives from it.
struct SynthFlow {
  uint64_t h2 = 0, h3 = 0, h4 = 0;
  bool v6 = false, tcp = false;
};

// Every random decision of one packet (drawn in this order from the packet stream; the bytes are
// then written without further draws).
struct Plan {
  uint32_t flow = 0;
  SynthFlow synth;
  uint8_t service = 0;
  bool ttl_low = false;
  bool raised = false;
  uint16_t frame_len = 0;
  uint16_t ip_len = 0;  // IP datagram bytes (total length)
  uint32_t payload_src = 0;
  int32_t pattern = -1;
  uint32_t pattern_off = 0;
  bool pattern_no_fit = false;
};

// Header geometry of one flow.
struct Geometry {
  uint16_t l3_off, hdr_len;
};

class Generator final : public GeneratorPort {
 public:
  std::string_view kind() const override { return "generator"; }
  std::string describe() const override { return describe_; }

  static Result<std::unique_ptr<GeneratorPort>> create(const GeneratorConfig& cfg);

  uint16_t rx_burst(Packet* pkts, uint16_t n, uint64_t now_ns) override;
  uint16_t tx_burst(Packet* pkts, uint16_t n) override {
    stats_.tx_packets.add(n);
    stats_.tx_bytes.add(frame_bytes(pkts, n));
    return n;
  }
  void release(Packet* pkts, uint16_t n) override { pool_->free(pkts, n); }
  bool rx_done() const override { return done_; }
  PortStats stats() const override {
    PortStats s = stats_.load();
    s.buffers_in_use = pool_ ? pool_->in_use() : 0;
    return s;
  }
  GeneratorStats generator_stats() const override { return gstats_; }
  FlowKey flow_key(uint32_t f) const override;
  const RateProfile& profile() const override { return profile_; }

 private:
  Generator(const GeneratorConfig& cfg, RateProfile profile)
      : cfg_(cfg), profile_(std::move(profile)), rng_(cfg.seed), rng_flow_(cfg.seed ^ 0x666c6f7773656c00ull) {}
  Status load_templates();
  void fill_payload_pool();
  SynthFlow synth(uint32_t flow) const {
    SynthFlow s;
    const uint64_t h0 = gen::mix64(flow_seed_ ^ flow);
    const uint64_t h1 = gen::mix64(h0);
    s.h2 = gen::mix64(h1);
    s.h3 = gen::mix64(s.h2);
    s.h4 = gen::mix64(s.h3);
    s.v6 = gen::unit_from(h0) < cfg_.ipv6_share;
    s.tcp = gen::unit_from(h1) < cfg_.tcp_share;
    return s;
  }
  // Header geometry of the flow; fills p.synth for synthetic flows.
  Geometry geometry(Plan& p) const {
    if (!templates_.empty()) {
      const Template& t = templates_[p.flow % templates_.size()];
      return {t.l3_off, t.hdr_len};
    }
    p.synth = synth(p.flow);
    return {14, static_cast<uint16_t>(14 + (p.synth.v6 ? 40 : 20) + (p.synth.tcp ? 20 : 8))};
  }
  void draw_plan(Plan& p);
  void select_traffic_step(uint64_t t_ns);  // cur_ from the traffic step in force at t
  uint32_t pick_flow(uint32_t service, uint64_t r) const;
  // Writes the frame of `p` (no random draws). Returns the L4 payload offset.
  void write(const Plan& p, uint8_t* d) const;
  void write_headers(const Plan& p, uint8_t* d, uint16_t& l3_off, uint16_t& l4_off, uint16_t& hdr_len, uint8_t& family,
                     uint8_t& proto) const;
  void update_service_shares(uint64_t t_ns);

  GeneratorConfig cfg_;
  RateProfile profile_;
  gen::Xoshiro256 rng_;
  // Flow choices come from their own stream, drawn kFlowAhead packets early so that the popularity
  // table entry is prefetched by the time it is read.
  static constexpr uint32_t kFlowAhead = 16;
  gen::Xoshiro256 rng_flow_;
  uint64_t flow_ahead_[kFlowAhead] = {};
  uint32_t ahead_pos_ = 0;
  std::string describe_;
  std::unique_ptr<PacketPool> pool_;
  uint64_t flow_seed_ = 0;
  uint32_t services_ = 1;
  uint32_t ranks_ = 0;  // popularity ranks per service
  gen::AliasTable zipf_;
  gen::AliasTable imix_;
  std::vector<uint8_t> payload_pool_;
  std::vector<uint8_t> tmpl_bytes_;
  std::vector<Template> templates_;
  std::vector<double> service_cum_;  // cumulative shares of the services at the current call
  uint16_t l2_max_ = 14, hdr_max_ = 74;
  uint16_t ip_id_ = 0;

  bool started_ = false;
  bool done_ = false;
  uint64_t start_ns_ = 0;
  double consumed_ = 0;  // profile units handed out or skipped
  bool have_plan_ = false;
  Plan plan_;
  TrafficStep cur_;              // the size mix and match rate in force (the traffic step's, or the config's)
  uint64_t steps_total_ns_ = 0;  // one cycle of cfg_.traffic_steps
  size_t step_ = SIZE_MAX;       // the traffic step in force (SIZE_MAX: none yet)
  PortCounters stats_;
  GeneratorStats gstats_;
};

Status Generator::load_templates() {
  const std::string& path = cfg_.template_capture;
  std::error_code ec;
  if (!std::filesystem::exists(path, ec))
    return error(Code::kNotFound, "generator template_capture '{}': no such file (captures live in {}/pcap/ndpi/)",
                 path, "$HPR_DATA_DIR");
  auto cap = load_capture(path);
  if (!cap) return cap.status();
  std::unordered_set<uint64_t> seen;
  std::vector<uint64_t> group_keys;  // per template
  for (const auto& frame : cap->frames) {
    if (templates_.size() >= kMaxTemplates) break;
    if (frame.size() > 0xffff) continue;
    Packet p;
    p.data = const_cast<uint8_t*>(frame.data());
    p.len = static_cast<uint16_t>(frame.size());
    if (parse(p) != DropReason::kNone) continue;
    if (p.l3 != L3::kIPv4 && p.l3 != L3::kIPv6) continue;
    if (p.l4 != 6 && p.l4 != 17) continue;
    if ((p.flags & kFlagFragment) != 0 || p.l4_off == kNoOffset || p.payload_off == kNoOffset) continue;
    FlowKey k = hpr::flow_key(p);
    uint64_t h = static_cast<uint64_t>(flow_hash(k)) << 32 | crc32c(&k, sizeof k, 0x12345678u);
    if (!seen.insert(h).second) continue;
    Template t;
    t.off = static_cast<uint32_t>(tmpl_bytes_.size());
    t.hdr_len = p.payload_off;
    t.l3_off = p.l3_off;
    t.l4_off = p.l4_off;
    t.family = p.l3 == L3::kIPv4 ? 4 : 6;
    t.proto = p.l4;
    tmpl_bytes_.insert(tmpl_bytes_.end(), frame.begin(), frame.begin() + t.hdr_len);
    templates_.push_back(t);
    k.sport = 0;
    const int tail = k.family == 4 ? 2 : 14;
    k.src[tail] = k.src[tail + 1] = 0;
    group_keys.push_back(static_cast<uint64_t>(flow_hash(k)) << 32 | crc32c(&k, sizeof k, 0x9abcdefu));
  }
  // Number each template within its group (the same flow key but for the L4 source port and the source address
  // tail), from the key of the whole frame.
  std::unordered_map<uint64_t, uint32_t> group_count;
  for (size_t i = 0; i < templates_.size(); ++i) templates_[i].group_idx = group_count[group_keys[i]]++;
  for (size_t i = 0; i < templates_.size(); ++i) templates_[i].group_size = group_count[group_keys[i]];
  if (templates_.empty())
    return error(Code::kInvalidArgument,
                 "generator template_capture '{}': no IPv4/IPv6 TCP/UDP packet that parses cleanly ({} frames read)",
                 path, cap->frames.size());
  l2_max_ = 0;
  hdr_max_ = 0;
  for (const auto& t : templates_) {
    l2_max_ = std::max(l2_max_, t.l3_off);
    hdr_max_ = std::max(hdr_max_, t.hdr_len);
  }
  gstats_.templates = static_cast<uint32_t>(templates_.size());
  return Status::ok();
}

void Generator::fill_payload_pool() {
  payload_pool_.resize(kPayloadPoolBytes + kGenMaxFrameBytes);
  gen::Xoshiro256 r(cfg_.seed ^ 0x7061796c6f616400ull);
  for (size_t i = 0; i < payload_pool_.size(); i += 8) {
    uint64_t v = r.next();
    std::memcpy(&payload_pool_[i], &v, std::min<size_t>(8, payload_pool_.size() - i));
  }
  // Scrub: no configured pattern may occur by chance, so a pattern appears only where planted.
  for (int pass = 0; pass < 32; ++pass) {
    bool changed = false;
    for (const auto& pat : cfg_.patterns) {
      if (pat.size() < 2) continue;
      auto it = payload_pool_.begin();
      while (true) {
        it = std::search(it, payload_pool_.end(), pat.begin(), pat.end());
        if (it == payload_pool_.end()) break;
        *it = static_cast<uint8_t>(*it + 1);
        changed = true;
      }
    }
    if (!changed) break;
  }
}

// A size mix's bounds (frame size without FCS in [60, 9000], min <= max), errors prefixed by `what`.
Status check_sizes(SizeMode mode, uint32_t bytes, uint32_t min_bytes, uint32_t max_bytes, std::string_view what) {
  auto size_ok = [](uint32_t s) { return s >= kGenMinFrameBytes && s <= kGenMaxFrameBytes; };
  if (mode == SizeMode::kFixed && !size_ok(bytes))
    return error(Code::kInvalidArgument, "{}size_bytes = {}: frame size (without FCS) must be in [{}, {}]", what, bytes,
                 kGenMinFrameBytes, kGenMaxFrameBytes);
  if (mode == SizeMode::kUniform) {
    if (!size_ok(min_bytes) || !size_ok(max_bytes))
      return error(Code::kInvalidArgument,
                   "{}size_min_bytes = {} / size_max_bytes = {}: frame sizes (without FCS) must be in [{}, {}]", what,
                   min_bytes, max_bytes, kGenMinFrameBytes, kGenMaxFrameBytes);
    if (min_bytes > max_bytes)
      return error(Code::kInvalidArgument, "{}size_min_bytes = {} > size_max_bytes = {}", what, min_bytes, max_bytes);
  }
  return Status::ok();
}

Result<std::unique_ptr<GeneratorPort>> Generator::create(const GeneratorConfig& cfg) {
  if (cfg.flows == 0) return error(Code::kInvalidArgument, "generator flows = 0: need at least 1 flow");
  if (cfg.flows > kGenMaxFlows)
    return error(Code::kInvalidArgument, "generator flows = {}: at most {}", cfg.flows, kGenMaxFlows);
  if (cfg.popularity == Popularity::kZipf && (!std::isfinite(cfg.zipf_s) || cfg.zipf_s < 0))
    return error(Code::kInvalidArgument, "generator zipf_s = {}: the Zipf exponent must be >= 0", cfg.zipf_s);
  HPR_RETURN_IF_ERROR(check_sizes(cfg.size_mode, cfg.size_bytes, cfg.size_min_bytes, cfg.size_max_bytes, "generator "));
  for (size_t i = 0; i < cfg.traffic_steps.size(); ++i) {
    const TrafficStep& st = cfg.traffic_steps[i];
    const std::string what = fmt::format("generator traffic step {}: ", i + 1);
    if (st.duration_ns == 0) return error(Code::kInvalidArgument, "{}duration must be > 0", what);
    HPR_RETURN_IF_ERROR(check_sizes(st.size_mode, st.size_bytes, st.size_min_bytes, st.size_max_bytes, what));
    if (!share_ok(st.match_rate))
      return error(Code::kInvalidArgument, "{}match rate {} must be in [0, 1]", what, st.match_rate);
    if (st.match_rate > 0 && cfg.patterns.empty())
      return error(Code::kInvalidArgument, "{}match rate {} but patterns is empty: give the byte strings to plant",
                   what, st.match_rate);
  }
  if (!share_ok(cfg.tcp_share))
    return error(Code::kInvalidArgument, "generator tcp_share = {}: must be in [0, 1]", cfg.tcp_share);
  if (!share_ok(cfg.ipv6_share))
    return error(Code::kInvalidArgument, "generator ipv6_share = {}: must be in [0, 1]", cfg.ipv6_share);
  if (!share_ok(cfg.ttl_low_share))
    return error(Code::kInvalidArgument, "generator ttl_low_share = {}: must be in [0, 1]", cfg.ttl_low_share);
  if (cfg.ttl == 0)
    return error(Code::kInvalidArgument, "generator ttl = 0: must be >= 1 (use ttl_low_share for TTL-1 packets)");
  if (!share_ok(cfg.pattern_match_rate))
    return error(Code::kInvalidArgument, "generator pattern_match_rate = {}: must be in [0, 1]",
                 cfg.pattern_match_rate);
  if (cfg.pattern_match_rate > 0 && cfg.patterns.empty())
    return error(Code::kInvalidArgument,
                 "generator pattern_match_rate = {} but patterns is empty: give the byte strings to plant",
                 cfg.pattern_match_rate);
  for (size_t i = 0; i < cfg.patterns.size(); ++i) {
    if (cfg.patterns[i].empty()) return error(Code::kInvalidArgument, "generator patterns[{}] is empty", i);
    if (cfg.patterns[i].size() > kMaxPatternBytes)
      return error(Code::kInvalidArgument, "generator patterns[{}] is {} bytes: at most {}", i, cfg.patterns[i].size(),
                   kMaxPatternBytes);
  }
  if (cfg.pool_slots == 0) return error(Code::kInvalidArgument, "generator pool_slots = 0: need at least 1 buffer");
  auto prof = RateProfile::create(cfg.rate, cfg.seed);
  if (!prof) return prof.status();

  std::unique_ptr<Generator> g(new Generator(cfg, std::move(*prof)));
  g->flow_seed_ = gen::mix64(cfg.seed ^ 0x666c6f7773000000ull);
  g->services_ = g->profile_.services();
  if (cfg.flows < g->services_)
    return error(Code::kInvalidArgument,
                 "generator flows = {}: the Holt-Winters profile has {} services, need flows >= services", cfg.flows,
                 g->services_);
  g->service_cum_.assign(g->services_, 0.0);
  g->ranks_ = (cfg.flows + g->services_ - 1) / g->services_;
  if (cfg.popularity == Popularity::kZipf && cfg.zipf_s > 0) {
    std::vector<double> w(g->ranks_);
    for (uint32_t r = 0; r < g->ranks_; ++r) w[r] = std::pow(static_cast<double>(r + 1), -cfg.zipf_s);
    g->zipf_.build(w);
  }
  {
    std::vector<double> w;
    for (const auto& e : kImixTable) w.push_back(e.percent);
    g->imix_.build(w);
  }
  for (auto& r : g->flow_ahead_) r = g->rng_flow_.next();
  if (!cfg.template_capture.empty()) HPR_RETURN_IF_ERROR(g->load_templates());
  g->fill_payload_pool();

  g->cur_ = {0, cfg.size_mode, cfg.size_bytes, cfg.size_min_bytes, cfg.size_max_bytes, cfg.pattern_match_rate};
  const uint32_t imix_max = g->l2_max_ + 1500u;
  uint32_t max_frame = largest_frame(g->cur_, imix_max);
  for (const TrafficStep& st : cfg.traffic_steps) {
    max_frame = std::max(max_frame, largest_frame(st, imix_max));
    g->steps_total_ns_ += st.duration_ns;
  }
  max_frame = std::max<uint32_t>(max_frame, g->hdr_max_);
  auto pool = PacketPool::create(cfg.pool_slots, max_frame);
  if (!pool) return pool.status();
  g->pool_ = std::move(*pool);

  static constexpr const char* kSizeNames[] = {"fixed", "uniform", "imix"};
  static constexpr const char* kRateNames[] = {"unpaced", "constant", "steps", "holt-winters"};
  g->describe_ = fmt::format("generator seed:{} size:{} flows:{} {}{} rate:{} packets:{}{}", cfg.seed,
                             kSizeNames[static_cast<int>(cfg.size_mode)], cfg.flows,
                             cfg.popularity == Popularity::kZipf ? "zipf:" : "uniform",
                             cfg.popularity == Popularity::kZipf ? fmt::format("{}", cfg.zipf_s) : std::string(),
                             kRateNames[static_cast<int>(cfg.rate.mode)],
                             cfg.max_packets == 0 ? std::string("unlimited") : std::to_string(cfg.max_packets),
                             cfg.template_capture.empty() ? std::string() : " templates:" + cfg.template_capture);
  return std::unique_ptr<GeneratorPort>(std::move(g));
}

uint32_t Generator::pick_flow(uint32_t service, uint64_t r) const {
  uint32_t rank;
  if (zipf_.size() != 0) {
    rank = zipf_.sample(r);
  } else {
    rank = static_cast<uint32_t>(((r >> 32) * ranks_) >> 32);
  }
  uint32_t f = rank * services_ + service;
  if (f >= cfg_.flows) f -= services_;  // last rank of a service that has one flow fewer
  return f;
}

void Generator::update_service_shares(uint64_t t_ns) {
  if (services_ == 1) return;
  double total = 0;
  for (uint32_t i = 0; i < services_; ++i) {
    total += profile_.service_rate_at(i, t_ns);
    service_cum_[i] = total;
  }
  if (total <= 0) {  // nothing offered: shares do not matter, keep them equal
    for (uint32_t i = 0; i < services_; ++i) service_cum_[i] = (i + 1.0) / services_;
    return;
  }
  for (uint32_t i = 0; i < services_; ++i) service_cum_[i] /= total;
}

void Generator::draw_plan(Plan& p) {
  p = Plan{};
  if (services_ > 1) {
    double u = rng_.unit();
    uint32_t s = 0;
    while (s + 1 < services_ && u >= service_cum_[s]) ++s;
    p.service = static_cast<uint8_t>(s);
  }
  const uint64_t r_flow = flow_ahead_[ahead_pos_];
  flow_ahead_[ahead_pos_] = rng_flow_.next();
  if (zipf_.size() != 0) zipf_.prefetch(flow_ahead_[ahead_pos_]);
  ahead_pos_ = (ahead_pos_ + 1) % kFlowAhead;
  p.flow = pick_flow(p.service, r_flow);
  const Geometry geo = geometry(p);
  const uint32_t l3_hdr = geo.hdr_len - geo.l3_off;  // IP + L4 header bytes
  uint32_t frame = 0, ip = 0;
  switch (cur_.size_mode) {
    case SizeMode::kFixed:
    case SizeMode::kUniform:
      frame = cur_.size_mode == SizeMode::kFixed
                  ? cur_.size_bytes
                  : cur_.size_min_bytes + rng_.below(cur_.size_max_bytes - cur_.size_min_bytes + 1);
      if (frame < geo.hdr_len) {
        frame = geo.hdr_len;
        p.raised = true;
      }
      ip = frame - geo.l3_off;
      break;
    case SizeMode::kImix:
      ip = kImixTable[imix_.sample(rng_.next())].ip_bytes;
      if (ip < l3_hdr) {
        ip = l3_hdr;
        p.raised = true;
      }
      frame = std::max<uint32_t>(kGenMinFrameBytes, geo.l3_off + ip);
      break;
  }
  p.frame_len = static_cast<uint16_t>(frame);
  p.ip_len = static_cast<uint16_t>(ip);
  if (cfg_.ttl_low_share > 0) p.ttl_low = rng_.unit() < cfg_.ttl_low_share;
  p.payload_src = static_cast<uint32_t>(rng_.next()) & (kPayloadPoolBytes - 1);
  if (cur_.match_rate > 0 && rng_.unit() < cur_.match_rate) {
    auto idx = rng_.below(static_cast<uint32_t>(cfg_.patterns.size()));
    uint64_t r = rng_.next();
    const uint32_t payload_len = ip - l3_hdr;
    const auto plen = static_cast<uint32_t>(cfg_.patterns[idx].size());
    if (plen <= payload_len) {
      p.pattern = static_cast<int32_t>(idx);
      p.pattern_off = static_cast<uint32_t>(((r >> 32) * (payload_len - plen + 1)) >> 32);
    } else {
      p.pattern_no_fit = true;
    }
  }
}

void Generator::write_headers(const Plan& pl, uint8_t* d, uint16_t& l3_off, uint16_t& l4_off, uint16_t& hdr_len,
                              uint8_t& family, uint8_t& proto) const {
  const uint32_t flow = pl.flow;
  if (!templates_.empty()) {
    const uint32_t T = static_cast<uint32_t>(templates_.size());
    const Template& t = templates_[flow % T];
    std::memcpy(d, tmpl_bytes_.data() + t.off, t.hdr_len);
    l3_off = t.l3_off;
    l4_off = t.l4_off;
    hdr_len = t.hdr_len;
    family = t.family;
    proto = t.proto;
    const uint32_t g = flow / T;
    if (g != 0) {
      // v is unique per (generation, template) within the template's group; it sets the source
      // port and a never-zero XOR of the source address tail, so a generated flow neither repeats
      // another one nor lands on a connection of the capture (neighbouring ports are common there).
      const uint64_t v = static_cast<uint64_t>(g - 1) * t.group_size + t.group_idx;
      const auto addr_xor = static_cast<uint16_t>(0x5a5a + v / 64512);
      store_be16(d + l4_off, static_cast<uint16_t>(1024 + v % 64512));
      uint8_t* src_tail = d + l3_off + (family == 4 ? 14 : 22);
      store_be16(src_tail, static_cast<uint16_t>(load_be16(src_tail) ^ addr_xor));
    }
    return;
  }
  const uint64_t h2 = pl.synth.h2, h3 = pl.synth.h3, h4 = pl.synth.h4;
  const bool v6 = pl.synth.v6;
  const bool tcp = pl.synth.tcp;
  static constexpr uint8_t kEth[14] = {0x02, 0, 0, 0, 0, 0x01, 0x02, 0, 0, 0, 0, 0x02, 0x08, 0x00};
  std::memcpy(d, kEth, 14);
  l3_off = 14;
  family = v6 ? 6 : 4;
  proto = tcp ? 6 : 17;
  uint8_t* ip = d + 14;
  if (!v6) {
    ip[0] = 0x45;
    ip[1] = 0;
    store_be16(ip + 4, 0);       // id: set per packet
    store_be16(ip + 6, 0x4000);  // DF
    ip[8] = cfg_.ttl;
    ip[9] = proto;
    store_be16(ip + 10, 0);
    store_be32(ip + 12, 0x0a000000u | static_cast<uint32_t>(h2 & 0xffffff));
    store_be32(ip + 16, 0x01000000u + static_cast<uint32_t>(((h2 >> 32) * 0xDF000000ull) >> 32));
    l4_off = 34;
  } else {
    d[12] = 0x86;
    d[13] = 0xdd;
    store_be32(ip, 0x60000000u);
    ip[6] = proto;
    ip[7] = cfg_.ttl;
    ip[8] = 0xfd;
    uint64_t a = h2, b = h3;
    std::memcpy(ip + 9, &a, 8);
    std::memcpy(ip + 17, &b, 7);
    uint64_t c = gen::mix64(h4 ^ 0x76360000ull), e = gen::mix64(c);
    std::memcpy(ip + 24, &c, 8);
    std::memcpy(ip + 32, &e, 8);
    ip[24] = static_cast<uint8_t>(0x20 | (ip[24] & 0x1f));
    l4_off = 54;
  }
  uint8_t* l4 = d + l4_off;
  const uint16_t sport = static_cast<uint16_t>(1024 + (h4 & 0xffff) % 64512);
  store_be16(l4, sport);
  if (tcp) {
    store_be16(l4 + 2, kTcpPorts[(h4 >> 16) % 5]);
    store_be32(l4 + 4, static_cast<uint32_t>(h4 >> 32));
    store_be32(l4 + 8, static_cast<uint32_t>(h3 >> 32));
    l4[12] = 0x50;  // data offset 5
    l4[13] = 0x18;  // ACK|PSH
    store_be16(l4 + 14, 65535);
    store_be16(l4 + 16, 0);
    store_be16(l4 + 18, 0);
    hdr_len = static_cast<uint16_t>(l4_off + 20);
  } else {
    store_be16(l4 + 2, kUdpPorts[(h4 >> 16) % 5]);
    store_be16(l4 + 4, 0);
    store_be16(l4 + 6, 0);
    hdr_len = static_cast<uint16_t>(l4_off + 8);
  }
}

void Generator::write(const Plan& p, uint8_t* d) const {
  uint16_t l3_off, l4_off, hdr_len;
  uint8_t family, proto;
  write_headers(p, d, l3_off, l4_off, hdr_len, family, proto);
  uint8_t* ip = d + l3_off;
  const uint32_t ip_end = l3_off + p.ip_len;
  const uint32_t payload_len = ip_end - hdr_len;
  std::memcpy(d + hdr_len, payload_pool_.data() + p.payload_src, payload_len);
  if (p.pattern >= 0) {
    const std::string& pat = cfg_.patterns[static_cast<size_t>(p.pattern)];
    std::memcpy(d + hdr_len + p.pattern_off, pat.data(), pat.size());
  }
  if (p.frame_len > ip_end) std::memset(d + ip_end, 0, p.frame_len - ip_end);  // Ethernet padding
  const uint8_t ttl = p.ttl_low ? 1 : cfg_.ttl;
  const uint32_t l4_len = ip_end - l4_off;
  if (proto == 17) store_be16(d + l4_off + 4, static_cast<uint16_t>(l4_len));
  if (family == 4) {
    store_be16(ip + 2, p.ip_len);
    store_be16(ip + 4, ip_id_);
    ip[8] = ttl;
    store_be16(ip + 10, 0);
    store_be16(ip + 10, ip_checksum(ip, (ip[0] & 0x0fu) * 4u));
  } else {
    store_be16(ip + 4, static_cast<uint16_t>(p.ip_len - 40));
    ip[7] = ttl;
  }
  uint8_t* l4 = d + l4_off;
  uint8_t* ck = l4 + (proto == 6 ? 16 : 6);
  store_be16(ck, 0);
  if (cfg_.l4_checksums) {
    uint32_t sum = family == 4 ? ones_sum(ip + 12, 8) : ones_sum(ip + 8, 32);  // pseudo header
    sum += proto;
    sum += l4_len;
    auto c = static_cast<uint16_t>(~ones_sum(l4, l4_len, sum));
    if (proto == 17 && c == 0) c = 0xffff;
    store_be16(ck, c);
  }
}

FlowKey Generator::flow_key(uint32_t f) const {
  if (f >= cfg_.flows) return FlowKey{};
  std::vector<uint8_t> buf(kGenMaxFrameBytes + 256);
  Plan p;
  p.flow = f;
  Geometry geo = geometry(p);
  p.ip_len = static_cast<uint16_t>(geo.hdr_len - geo.l3_off);
  p.frame_len = std::max<uint16_t>(kGenMinFrameBytes, geo.hdr_len);
  write(p, buf.data());
  Packet pk;
  pk.data = buf.data();
  pk.len = p.frame_len;
  parse(pk);
  return hpr::flow_key(pk);
}

void Generator::select_traffic_step(uint64_t t_ns) {
  uint64_t in_cycle = t_ns % steps_total_ns_;
  size_t i = 0;
  while (in_cycle >= cfg_.traffic_steps[i].duration_ns) in_cycle -= cfg_.traffic_steps[i++].duration_ns;
  if (i == step_) return;
  step_ = i;
  cur_ = cfg_.traffic_steps[i];
  have_plan_ = false;  // the next packet follows the new step (the drawn plan goes unused)
}

uint16_t Generator::rx_burst(Packet* pkts, uint16_t n, uint64_t now_ns) {
  if (done_) return 0;
  if (!started_) {
    started_ = true;
    start_ns_ = now_ns;
  }
  const uint64_t t = now_ns >= start_ns_ ? now_ns - start_ns_ : 0;
  if (cfg_.duration_ns != 0 && t >= cfg_.duration_ns) {
    done_ = true;
    return 0;
  }
  if (steps_total_ns_ != 0) select_traffic_step(t);
  uint64_t budget = n;
  if (cfg_.max_packets != 0) budget = std::min<uint64_t>(budget, cfg_.max_packets - gstats_.generated);
  const bool paced = profile_.paced();
  double due = 0;
  if (paced) {
    due = profile_.cumulative(t);
    const double backlog = due - consumed_;
    if (cfg_.rate.max_backlog > 0 && backlog > cfg_.rate.max_backlog) {
      // Skip whole units so that packet boundaries stay on integers in packets/s mode.
      double skip = std::floor(backlog - cfg_.rate.max_backlog);
      gstats_.skipped_units += skip;
      if (!profile_.counts_bits()) stats_.rx_missed.add(static_cast<uint64_t>(skip));
      consumed_ += skip;
    }
    update_service_shares(t);
  }
  const bool bits = profile_.counts_bits();
  // One pool call per burst (the pool's ring costs an atomic per call); leftovers go back below.
  uint64_t want = budget;
  if (paced && !bits)
    want = std::min<uint64_t>(want, static_cast<uint64_t>(std::max(0.0, std::floor(due - consumed_))));
  if (want == 0) {
    if (profile_.finished(t) && due - consumed_ < 1.0 && !bits) done_ = true;
    return 0;
  }
  const uint32_t have = pool_->alloc(pkts, static_cast<uint32_t>(want));
  if (have < want) stats_.rx_no_buffer.add(1);  // back-pressure: the rest waits for the next call
  uint16_t got = 0;
  while (got < have) {
    if (!have_plan_) {
      draw_plan(plan_);
      have_plan_ = true;
    }
    const double cost = bits ? (plan_.frame_len + cfg_.rate.wire_overhead_bytes) * 8.0 : 1.0;
    if (paced && consumed_ + cost > due) break;
    Packet& p = pkts[got];
    write(plan_, p.data);
    p.len = plan_.frame_len;
    p.rx_ns = now_ns;
    p.port = cfg_.port_index;
    p.service = plan_.service;
    p.drop = DropReason::kNone;
    p.flow_id = kNoFlow;
    p.l3_off = p.l4_off = p.payload_off = kNoOffset;
    p.payload_len = 0;
    p.l3 = L3::kNone;
    p.l4 = 0;
    p.flags = 0;
    p.lane = 0xff;
    ++ip_id_;
    consumed_ += cost;
    have_plan_ = false;
    ++got;
    stats_.rx_packets.add(1);
    stats_.rx_bytes.add(p.len);
    gstats_.generated++;
    gstats_.size_raised += plan_.raised;
    gstats_.ttl_low += plan_.ttl_low;
    gstats_.planted += plan_.pattern >= 0;
    gstats_.pattern_no_fit += plan_.pattern_no_fit;
  }
  if (got < have) pool_->free(pkts + got, have - got);
  if (cfg_.max_packets != 0 && gstats_.generated >= cfg_.max_packets) done_ = true;
  if (profile_.finished(t)) {
    // Steps are over: done once what they offered is out (in bits/s: the next packet no longer fits).
    if (bits ? (have_plan_ && consumed_ + (plan_.frame_len + cfg_.rate.wire_overhead_bytes) * 8.0 > due)
             : due - consumed_ < 1.0)
      done_ = true;
  }
  return got;
}

}  // namespace

Result<std::unique_ptr<GeneratorPort>> make_generator(const GeneratorConfig& cfg) { return Generator::create(cfg); }

Result<std::unique_ptr<Port>> make_generator_port(const GeneratorConfig& cfg) {
  auto g = Generator::create(cfg);
  if (!g) return g.status();
  return std::unique_ptr<Port>(std::move(*g));
}

}  // namespace hpr
