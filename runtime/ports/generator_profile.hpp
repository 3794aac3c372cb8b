#pragma once
// Offered-rate profiles of the traffic generator: unpaced, constant, steps, and the Holt-Winters
// traffic model of LAPS (Iqbal et al., laps-hash-afd-load-balancing.txt §V.C, eq. 1):
//
//     x_i(t) = a + b·t + C·S(t mod m) + n(σ)                      (rate of service i, Mpps)
//
// with a the baseline, b the trend (Mpps per second), C the seasonal magnitude, m the season period
// (s) and n(σ) Gaussian noise of standard deviation σ (Mpps). The paper leaves the seasonal shape S
// unspecified; we use S(u) = sin(2π·u/m) (unit amplitude). The total offered rate is Σ_i x_i(t).
// Table IV gives two parameter sets of four services: set 1 (under-load) and set 2 (overload),
// see laps_table4_set1() / laps_table4_set2().
//
// Time origin t = 0 is the profile's start (the generator's first rx_burst). The Holt-Winters rate
// is evaluated on a fixed grid of `hw_step_ns` (rate and noise held constant within a step, noise
// drawn from a counter-based hash of (seed, service, step)), so the number of packets due by a
// time does not depend on how often the caller looks. Each service's rate is clamped at 0.
#include <cstdint>
#include <string>
#include <vector>

#include "hpr/status.hpp"

namespace hpr {

enum class RateMode : uint8_t {
  kUnpaced,      // as fast as the caller asks (every rx_burst fills its n)
  kConstant,     // `rate` in `unit`
  kSteps,        // piecewise constant: list of (duration_ns, rate in `unit`)
  kHoltWinters,  // LAPS eq. 1, rates in Mpps (× rate_scale)
};

enum class RateUnit : uint8_t {
  kPacketsPerSecond,
  // Frame bits per second: (frame length without FCS + wire_overhead_bytes) × 8 per packet.
  // wire_overhead_bytes = 24 counts FCS (4) + preamble/SFD (8) + inter-frame gap (12): L1 line rate.
  kBitsPerSecond,
};

struct RateStep {
  uint64_t duration_ns = 0;
  double rate = 0;  // in RateConfig::unit
};

// One service of eq. 1 (one row of Table IV).
struct HoltWintersService {
  double a_mpps = 0;        // baseline
  double b_mpps_per_s = 0;  // trend
  double c_mpps = 0;        // seasonal magnitude
  double period_s = 1;      // m
  double sigma_mpps = 0;    // noise standard deviation
};

// Table IV, set 1 (aggregate rate below the capacity of 16 cores) and set 2 (above it).
std::vector<HoltWintersService> laps_table4_set1();
std::vector<HoltWintersService> laps_table4_set2();

struct RateConfig {
  RateMode mode = RateMode::kUnpaced;
  RateUnit unit = RateUnit::kPacketsPerSecond;  // constant and steps (Holt-Winters is always packets)
  double rate = 0;                              // constant
  std::vector<RateStep> steps;
  bool loop_steps = false;                   // after the last step: start over (true) or offer nothing more (false)
  std::vector<HoltWintersService> services;  // Holt-Winters
  uint64_t hw_step_ns = 1'000'000;           // Holt-Winters evaluation grid (and noise period)
  double hw_time_scale = 1.0;                // model time = real time × scale (compress a season)
  double rate_scale = 1.0;                   // multiplies every rate (all modes but unpaced)
  uint32_t wire_overhead_bytes = 0;          // bits/s accounting, see RateUnit
  // Most units (packets, or bits for bits/s) owed at once; older debt is skipped and counted, as a
  // real generator that fell behind would. 0: no limit (every packet due is eventually handed out).
  double max_backlog = 0;
};

class RateProfile {
 public:
  // Errors (kInvalidArgument, naming the setting): negative or non-finite rate; steps mode with no
  // steps or a zero-length step; Holt-Winters with no services, period_s <= 0, sigma < 0,
  // hw_step_ns == 0, hw_time_scale <= 0; rate_scale <= 0; max_backlog < 0.
  static Result<RateProfile> create(const RateConfig& cfg, uint64_t seed);

  bool paced() const { return cfg_.mode != RateMode::kUnpaced; }
  bool counts_bits() const {
    return paced() && cfg_.mode != RateMode::kHoltWinters && cfg_.unit == RateUnit::kBitsPerSecond;
  }
  const RateConfig& config() const { return cfg_; }

  // Offered rate at t (units per second: packets/s, or bits/s when counts_bits()).
  double rate_at(uint64_t t_ns) const;
  // Holt-Winters: rate of service i at t in packets/s (after clamping and rate_scale). Other modes:
  // the whole rate for i = 0.
  double service_rate_at(uint32_t i, uint64_t t_ns) const;
  uint32_t services() const;
  // Units offered in [0, t_ns]. Monotone in t. Cheap for increasing t (incremental for
  // Holt-Winters); a t below the previous call's recomputes from 0.
  double cumulative(uint64_t t_ns);
  // Steps without looping: t is past the last step (nothing more will be offered).
  bool finished(uint64_t t_ns) const;

 private:
  double hw_step_rate(uint64_t step) const;  // total packets/s during grid step `step`
  double hw_service_rate(uint32_t i, uint64_t step) const;
  RateConfig cfg_;
  uint64_t seed_ = 0;
  uint64_t steps_total_ns_ = 0;
  std::vector<double> step_cum_;  // units offered at the start of each step
  double steps_cycle_units_ = 0;
  // Holt-Winters incremental integral: units offered at the start of grid step hw_k_.
  uint64_t hw_k_ = 0;
  double hw_cum_ = 0;
};

}  // namespace hpr
