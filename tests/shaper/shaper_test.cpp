// Token-bucket shapers (scheduler/shaper/shaper.hpp): conformance against an exact reference,
// event-driven vs periodic equivalence, adaptive alpha (eq. 14), a million queues in the stated
// memory, drops counted, bad input.
#include <catch2/catch.hpp>

#include <algorithm>
#include <array>
#include <cstdint>
#include <limits>
#include <random>
#include <vector>

#include "scheduler/shaper/shaper.hpp"

using namespace hpr::shaper;

namespace {

constexpr uint64_t kSec = 1'000'000'000ull;

struct Arrival {
  uint64_t t_ns;
  uint32_t bytes;
};

// Departure time of every packet (index = arrival index), one queue, driven event by event: the
// shaper is polled at every arrival and at every time it asks for (next_event_ns), plus at every
// multiple of extra_tick_ns when non-zero (the periodic shaper's sweeps).
template <typename S>
std::vector<uint64_t> run_one_queue(S& s, const std::vector<Arrival>& arr, uint64_t extra_tick_ns = 0) {
  std::vector<uint64_t> dep(arr.size(), std::numeric_limits<uint64_t>::max());
  std::array<uint64_t, 64> out{};
  size_t next = 0;
  uint64_t tick = extra_tick_ns;
  auto drain = [&](uint64_t now) {
    for (;;) {
      size_t n = s.poll(now, out);
      for (size_t i = 0; i < n; ++i) dep[out[i]] = now;
      if (n < out.size()) break;
    }
  };
  for (;;) {
    uint64_t t = std::numeric_limits<uint64_t>::max();
    if (next < arr.size()) t = arr[next].t_ns;
    uint64_t ev = s.next_event_ns();
    t = std::min(t, ev);
    if (extra_tick_ns != 0 && s.stats().waiting_pkts != 0) t = std::min(t, tick);
    if (t == std::numeric_limits<uint64_t>::max()) break;
    while (extra_tick_ns != 0 && tick <= t) tick += extra_tick_ns;
    drain(t);
    while (next < arr.size() && arr[next].t_ns == t) {
      Verdict v = s.enqueue(0, next, arr[next].bytes, t);
      REQUIRE((v == Verdict::kSend || v == Verdict::kQueued));
      if (v == Verdict::kSend) dep[next] = t;
      ++next;
    }
    drain(t);
  }
  return dep;
}

// Exact reference: the greedy (rate, burst) token-bucket shaper, FIFO, written independently of
// the library in plain bytes * ns arithmetic. A packet leaves at the earliest time >= its arrival
// and the previous departure at which the capped bucket holds its size.
std::vector<uint64_t> greedy_reference(const std::vector<Arrival>& arr, uint64_t rate, uint64_t burst) {
  std::vector<uint64_t> dep;
  // tokens scaled by 1e9 (byte-ns per s); exact.
  __int128 tok = static_cast<__int128>(burst) * 1'000'000'000;
  const __int128 cap = tok;
  uint64_t t_prev = 0, d_prev = 0;
  for (const Arrival& a : arr) {
    uint64_t t = std::max(a.t_ns, d_prev);
    tok = std::min<__int128>(cap, tok + static_cast<__int128>(t - t_prev) * rate);
    __int128 need = static_cast<__int128>(a.bytes) * 1'000'000'000 - tok;
    if (need > 0) {
      uint64_t wait = static_cast<uint64_t>((need + rate - 1) / rate);
      tok += static_cast<__int128>(wait) * rate;  // stays below the cap: tok + need <= size <= burst
      t += wait;
    }
    tok -= static_cast<__int128>(a.bytes) * 1'000'000'000;
    t_prev = t;
    d_prev = t;
    dep.push_back(t);
  }
  return dep;
}

// Largest excess of sent bytes over rate * interval, over all intervals [t_i, t_j] of departures
// (in 1e-9 bytes): the output conforms to (rate, burst) iff this is <= burst * 1e9.
__int128 max_burst_nb(const std::vector<uint64_t>& dep, const std::vector<Arrival>& arr, uint64_t rate) {
  std::vector<size_t> idx(dep.size());
  for (size_t i = 0; i < idx.size(); ++i) idx[i] = i;
  std::stable_sort(idx.begin(), idx.end(), [&](size_t a, size_t b) { return dep[a] < dep[b]; });
  __int128 best = 0, sum = 0;
  __int128 min_prefix = std::numeric_limits<__int128>::max();  // min over i of (S_{i-1} - r t_i)
  for (size_t k : idx) {
    __int128 v = sum * 1'000'000'000 - static_cast<__int128>(dep[k]) * rate;
    min_prefix = std::min(min_prefix, v);
    sum += arr[k].bytes;
    best = std::max(best, sum * 1'000'000'000 - static_cast<__int128>(dep[k]) * rate - min_prefix);
  }
  return best;
}

ShaperConfig one_queue_config(uint16_t limit = 4000) {
  ShaperConfig c;
  c.num_queues = 1;
  c.pool_slots = 4096;
  c.queue_limit_pkts = limit;
  c.max_packet_bytes = 1500;
  return c;
}

std::vector<Arrival> random_arrivals(uint64_t seed, size_t n, uint64_t mean_gap_ns) {
  std::mt19937_64 rng(seed);
  std::exponential_distribution<double> gap(1.0 / static_cast<double>(mean_gap_ns));
  std::uniform_int_distribution<uint32_t> size(40, 1500);
  std::vector<Arrival> a;
  uint64_t t = 1000;
  for (size_t i = 0; i < n; ++i) {
    t += static_cast<uint64_t>(gap(rng));
    a.push_back({t, size(rng)});
  }
  return a;
}

}  // namespace

TEST_CASE("hand-made schedule: known departure times", "[shaper]") {
  auto s = EventShaper::create(one_queue_config());
  REQUIRE(s.is_ok());
  // 1000 B/s, burst 1500 B, alpha 500 B; three 1000 B packets at t = 0.
  auto p = s->add_profile({1000, 1500, 500});
  REQUIRE(p.is_ok());
  REQUIRE(s->configure_queue(0, *p, 0).is_ok());
  std::vector<Arrival> arr = {{0, 1000}, {0, 1000}, {0, 1000}};
  auto dep = run_one_queue(*s, arr);
  // p1 leaves on the full bucket (500 left); p2 finds 500 < 1000: charged (-500), waits until
  // the bucket is back at alpha = 500 (1 s), leaves; p3 then finds 500 and waits one more second.
  REQUIRE(dep == std::vector<uint64_t>{0, 1 * kSec, 2 * kSec});
  auto st = s->stats();
  REQUIRE(st.reschedules == 2);
  REQUIRE(st.wakeups == 2);
  REQUIRE(st.sent_pkts == 3);
  REQUIRE(st.sent_bytes == 3000);
  REQUIRE(st.heap_size == 0);
}

TEST_CASE("hand-made schedule: idle time refills up to the burst, never beyond", "[shaper]") {
  auto s = EventShaper::create(one_queue_config());
  auto p = s->add_profile({1000, 2000, 0});
  REQUIRE(s->configure_queue(0, *p, 0).is_ok());
  // Drain the bucket, then idle 100 s: only 2000 B (the burst) may leave back to back.
  std::vector<Arrival> arr = {{0, 1000}, {0, 1000}, {100 * kSec, 1000}, {100 * kSec, 1000}, {100 * kSec, 1000}};
  auto dep = run_one_queue(*s, arr);
  REQUIRE(dep == std::vector<uint64_t>{0, 0, 100 * kSec, 100 * kSec, 101 * kSec});
}

TEST_CASE("with alpha = 0 the event-driven shaper is the exact greedy (rate, burst) shaper", "[shaper]") {
  for (uint64_t seed : {1u, 2u, 3u}) {
    for (uint64_t rate : {1000ull, 125'000ull, 12'500'000ull}) {
      const uint64_t burst = 3000 + seed * 1000;
      auto s = EventShaper::create(one_queue_config());
      auto p = s->add_profile({rate, static_cast<uint32_t>(burst), 0});
      REQUIRE(p.is_ok());
      REQUIRE(s->configure_queue(0, *p, 0).is_ok());
      // Offered at ~1.5x the rate: the queue alternates between idle and backlogged.
      auto arr = random_arrivals(seed, 2000, 770ull * kSec / rate * 2 / 3);
      auto dep = run_one_queue(*s, arr);
      auto ref = greedy_reference(arr, rate, burst);
      REQUIRE(dep == ref);
    }
  }
}

TEST_CASE("with alpha > 0 output never leads the greedy shaper and conforms to (rate, burst)", "[shaper]") {
  for (uint32_t alpha : {500u, 1500u, 3000u}) {
    const uint64_t rate = 125'000, burst = 4500;
    auto s = EventShaper::create(one_queue_config());
    auto p = s->add_profile({rate, static_cast<uint32_t>(burst), alpha});
    REQUIRE(s->configure_queue(0, *p, 0).is_ok());
    auto arr = random_arrivals(11 + alpha, 3000, 770ull * kSec / rate / 2);  // 2x overload
    auto dep = run_one_queue(*s, arr);
    auto ref = greedy_reference(arr, rate, burst);
    for (size_t i = 0; i < dep.size(); ++i) REQUIRE(dep[i] >= ref[i]);
    REQUIRE(max_burst_nb(dep, arr, rate) <= static_cast<__int128>(burst) * 1'000'000'000);
    // Saturated: long-run output rate equals the committed rate (within one burst).
    uint64_t bytes = 0;
    for (auto& a : arr) bytes += a.bytes;
    double secs = static_cast<double>(dep.back() - dep.front()) / 1e9;
    REQUIRE(static_cast<double>(bytes) <= burst + rate * secs + 1);
    REQUIRE(static_cast<double>(bytes) >= rate * secs);
  }
}

TEST_CASE("event-driven and periodic shapers send the same packets within one refill period", "[shaper]") {
  for (uint64_t period_ns : {100'000ull, 1'000'000ull, 10'000'000ull}) {
    // 10 Mbit/s; a periodic refill must fit in the bucket (add_profile refuses otherwise).
    const uint64_t rate = 1'250'000, burst = std::max<uint64_t>(6000, rate * period_ns / kSec + 1500);
    ShaperConfig c = one_queue_config();
    c.refill_period_ns = period_ns;
    auto ev = EventShaper::create(c);
    auto pe = PeriodicShaper::create(c);
    REQUIRE(ev.is_ok());
    REQUIRE(pe.is_ok());
    auto p1 = ev->add_profile({rate, static_cast<uint32_t>(burst), 0});
    auto p2 = pe->add_profile({rate, static_cast<uint32_t>(burst), 0});
    REQUIRE(ev->configure_queue(0, *p1, 0).is_ok());
    REQUIRE(pe->configure_queue(0, *p2, 0).is_ok());
    auto arr = random_arrivals(period_ns, 3000, 770ull * kSec / rate * 10 / 12);  // 1.2x overload
    auto de = run_one_queue(*ev, arr);
    auto dp = run_one_queue(*pe, arr, period_ns);
    REQUIRE(ev->stats().sent_pkts == arr.size());
    REQUIRE(pe->stats().sent_pkts == arr.size());
    uint64_t worst = 0;
    for (size_t i = 0; i < arr.size(); ++i) {
      uint64_t d = de[i] > dp[i] ? de[i] - dp[i] : dp[i] - de[i];
      worst = std::max(worst, d);
    }
    INFO("period " << period_ns << " ns, worst difference " << worst << " ns");
    REQUIRE(worst <= period_ns);
    // The periodic shaper touches every bucket every period; the event-driven one does not.
    REQUIRE(pe->stats().refill_sweeps > 0);
  }
}

TEST_CASE("adaptive alpha rises under overload and falls back to alpha_min, not below", "[shaper]") {
  auto make = [](bool adaptive) {
    ShaperConfig c = one_queue_config(1);  // paper regime: arrivals while disabled are dropped
    c.num_queues = 4;
    c.adaptive.enabled = adaptive;
    c.adaptive.gamma = 2.0;
    c.adaptive.delta_th = 3;
    c.adaptive.period_ns = kSec;
    auto s = EventShaper::create(c);
    auto p = s->add_profile({12'500, 48'000, 1500});  // 100 kbit/s, alpha_min 1500
    REQUIRE(s->configure_all(*p, 0).is_ok());
    return std::move(s.value());
  };
  EventShaper s = make(true);
  EventShaper fixed = make(false);
  std::array<uint64_t, 16> out{};
  uint64_t t = 0;
  uint32_t peak = 0, low = UINT32_MAX;
  auto drive = [&](uint64_t until, uint64_t gap_ns) {
    for (; t < until; t += gap_ns) {
      for (EventShaper* x : {&s, &fixed}) {
        x->poll(t, out);
        for (uint32_t q = 0; q < 4; ++q) (void)x->enqueue(q, t, 1000, t);
      }
      peak = std::max(peak, s.alpha_bytes(0));
      low = std::min(low, s.alpha_bytes(0));
      REQUIRE(fixed.alpha_bytes(0) == 1500);
    }
  };
  // 10 s at 4x the rate (1000 B every 20 ms = 50 kB/s on a 12.5 kB/s queue).
  drive(10 * kSec, 20'000'000);
  REQUIRE(peak > 1500);
  REQUIRE(peak <= 48'000);
  REQUIRE(low >= 1500);
  // Fewer reschedules than with a fixed alpha under the same overload.
  REQUIRE(s.stats().reschedules < fixed.stats().reschedules);
  // 20 s at a quarter of the rate: alpha decays back to alpha_min (applied at the next reschedule).
  drive(30 * kSec, 320'000'000);
  drive(32 * kSec, 20'000'000);
  REQUIRE(s.alpha_bytes(0) == 1500);
}

TEST_CASE("adaptive alpha never drops below alpha_min without overload", "[shaper]") {
  ShaperConfig c = one_queue_config(1);
  c.adaptive.enabled = true;
  auto s = EventShaper::create(c);
  auto p = s->add_profile({12'500, 9000, 2000});
  REQUIRE(s->configure_queue(0, *p, 0).is_ok());
  std::array<uint64_t, 4> out{};
  for (uint64_t t = 0; t < 20 * kSec; t += 90'000'000) {  // ~0.9x the rate
    s->poll(t, out);
    (void)s->enqueue(0, t, 1000, t);
    REQUIRE(s->alpha_bytes(0) >= 2000);
  }
  REQUIRE(s->alpha_bytes(0) == 2000);
}

TEST_CASE("a full queue drops and counts; a full pool too; oversize and unknown queues", "[shaper]") {
  ShaperConfig c = one_queue_config(2);
  c.num_queues = 3;
  c.pool_slots = 3;
  auto s = EventShaper::create(c);
  auto p = s->add_profile({1000, 1500, 0});
  REQUIRE(s->configure_queue(0, *p, 0).is_ok());
  REQUIRE(s->configure_queue(1, *p, 0).is_ok());
  REQUIRE(s->enqueue(0, 1, 1500, 0) == Verdict::kSend);           // empties the bucket
  REQUIRE(s->enqueue(0, 2, 100, 0) == Verdict::kQueued);          // prepaid head, queue disabled
  REQUIRE(s->throttled(0));
  REQUIRE(s->enqueue(0, 3, 100, 0) == Verdict::kQueued);          // 2 waiting = limit
  REQUIRE(s->enqueue(0, 4, 100, 0) == Verdict::kDropQueueFull);   // queue full
  REQUIRE(s->enqueue(1, 5, 1500, 0) == Verdict::kSend);
  REQUIRE(s->enqueue(1, 6, 100, 0) == Verdict::kQueued);          // third and last slot
  REQUIRE(s->enqueue(1, 7, 100, 0) == Verdict::kDropQueueFull);   // pool empty
  REQUIRE(s->enqueue(0, 8, 1501, 0) == Verdict::kDropTooLarge);
  REQUIRE(s->enqueue(2, 9, 100, 0) == Verdict::kDropUnknownQueue);  // not configured
  REQUIRE(s->enqueue(7, 9, 100, 0) == Verdict::kDropUnknownQueue);  // out of range
  auto st = s->stats();
  REQUIRE(st.drops_queue_full == 2);
  REQUIRE(st.drops_too_large == 1);
  REQUIRE(st.drops_unknown_queue == 2);
  REQUIRE(st.waiting_pkts == 3);
  // Everything accepted leaves eventually; books balance.
  std::array<uint64_t, 8> out{};
  size_t got = s->poll(10 * kSec, out);
  REQUIRE(got == 3);
  st = s->stats();
  REQUIRE(st.sent_pkts == 5);
  REQUIRE(st.enqueued == st.sent_pkts);
  REQUIRE(st.waiting_pkts == 0);
}

TEST_CASE("poll stops at the size of out and resumes next time", "[shaper]") {
  auto s = EventShaper::create(one_queue_config());
  auto p = s->add_profile({1'000'000, 3000, 0});
  REQUIRE(s->configure_queue(0, *p, 0).is_ok());
  size_t sent_now = 0, queued = 0;
  for (int i = 0; i < 70; ++i) {
    Verdict v = s->enqueue(0, static_cast<uint64_t>(i), 1500, 0);
    sent_now += v == Verdict::kSend;
    queued += v == Verdict::kQueued;
  }
  REQUIRE(sent_now == 2);  // the 3000 B bucket
  REQUIRE(queued == 68);
  std::array<uint64_t, 2> out{};
  size_t total = 0;
  uint64_t expect = 2;
  for (uint64_t t = 1 * kSec; s->stats().waiting_pkts != 0;) {  // 1 s: enough tokens for all
    size_t n = s->poll(t, out);
    REQUIRE(n <= 2);
    for (size_t i = 0; i < n; ++i) REQUIRE(out[i] == expect++);  // FIFO order kept across polls
    total += n;
    if (n == 0) t += kSec;
  }
  REQUIRE(total == queued);
}

TEST_CASE("one million queues are created and shaped within the stated memory", "[shaper][scale]") {
  STATIC_REQUIRE(sizeof(EventShaper::QueueState) == 40);
  STATIC_REQUIRE(EventShaper::kBytesPerQueue == 52);
  STATIC_REQUIRE(EventShaper::kBytesPerSlot == 16);
  ShaperConfig c;
  c.num_queues = 1'000'000;
  c.pool_slots = 1 << 20;
  c.queue_limit_pkts = 8;
  c.max_packet_bytes = 1500;
  auto s = EventShaper::create(c);
  REQUIRE(s.is_ok());
  auto p = s->add_profile({12'500, 3000, 3000});  // 100 kbit/s each: 100 Gbit/s in all
  REQUIRE(p.is_ok());
  REQUIRE(s->configure_all(*p, 0).is_ok());
  const size_t stated = EventShaper::kBytesPerQueue * c.num_queues + EventShaper::kBytesPerSlot * c.pool_slots + 4096;
  REQUIRE(s->memory_bytes() <= stated);
  // 3 M packets of 1000 B over 0.1 s at random queues: most queues go negative once.
  std::mt19937_64 rng(5);
  std::vector<uint64_t> out(4096);
  uint64_t offered = 0, sent_now = 0, dropped = 0;
  for (uint64_t i = 0; i < 3'000'000; ++i) {
    uint64_t t = i * 33;
    Verdict v = s->enqueue(static_cast<uint32_t>(rng() % c.num_queues), i, 1000, t);
    ++offered;
    if (v == Verdict::kSend) ++sent_now;
    if (v == Verdict::kDropQueueFull) ++dropped;
    if ((i & 1023) == 0) s->poll(t, out);
  }
  auto st = s->stats();
  REQUIRE(st.queues_configured == 1'000'000);
  REQUIRE(st.heap_size > 100'000);
  REQUIRE(st.heap_size == st.queues_throttled);
  REQUIRE(s->heap().valid());
  REQUIRE(offered == st.sent_pkts + st.waiting_pkts + st.drops_queue_full);
  REQUIRE(s->memory_bytes() <= stated);  // nothing grew while shaping
  // Drain: everything accepted leaves.
  for (uint64_t t = kSec; s->stats().waiting_pkts != 0; t += 10'000'000) s->poll(t, out);
  REQUIRE(s->stats().heap_size == 0);
}

TEST_CASE("bad configuration is refused with the field's name", "[shaper][errors]") {
  ShaperConfig c = one_queue_config();
  c.num_queues = 0;
  auto a = EventShaper::create(c);
  REQUIRE_FALSE(a.is_ok());
  REQUIRE(a.status().message().find("num_queues") != std::string::npos);
  c = one_queue_config();
  c.pool_slots = 0;
  REQUIRE(EventShaper::create(c).status().message().find("pool_slots") != std::string::npos);
  c = one_queue_config();
  c.queue_limit_pkts = 0;
  REQUIRE(EventShaper::create(c).status().message().find("queue_limit_pkts") != std::string::npos);
  c = one_queue_config();
  c.refill_period_ns = 0;
  REQUIRE(PeriodicShaper::create(c).status().message().find("refill_period_ns") != std::string::npos);
  c = one_queue_config();
  c.adaptive.enabled = true;
  c.adaptive.gamma = 1.0;
  REQUIRE(EventShaper::create(c).status().message().find("gamma") != std::string::npos);

  auto s = EventShaper::create(one_queue_config());
  REQUIRE(s->add_profile({0, 3000, 0}).status().message().find("rate_bytes_per_s") != std::string::npos);
  REQUIRE(s->add_profile({1000, 1000, 0}).status().message().find("burst_bytes") != std::string::npos);
  REQUIRE(s->add_profile({1000, 3000, 4000}).status().message().find("alpha_bytes") != std::string::npos);
  REQUIRE(s->add_profile({1, 3000, 0}).status().message().find("too low") != std::string::npos);
  REQUIRE(s->configure_queue(0, 3, 0).message().find("profile") != std::string::npos);
  auto p = s->add_profile({1000, 3000, 0});
  REQUIRE(s->configure_queue(5, *p, 0).message().find("num_queues") != std::string::npos);
}

TEST_CASE("queue partition maps global ids to owner cores and back", "[shaper]") {
  QueuePartition part{100};
  REQUIRE(part.owner(123456) == 56);
  REQUIRE(part.local(123456) == 1234);
  REQUIRE(part.global(56, 1234) == 123456);
  uint64_t total = 0;
  for (uint32_t c = 0; c < 100; ++c) total += part.local_count(c, 1'000'003);
  REQUIRE(total == 1'000'003);
}
