#include "runtime/ports/generator_profile.hpp"

#include <algorithm>
#include <cmath>

#include "runtime/ports/generator_random.hpp"

namespace hpr {

std::vector<HoltWintersService> laps_table4_set1() {
  return {{1.0, 0.03, 0.3, 40, 0.1},
          {1.8, -0.025, 0.1, 25, 0.05},
          {0.5, 0.01, 0.07, 60, 0.25},
          {0.3, 0.005, 0.09, 600, 0.3}};
}

std::vector<HoltWintersService> laps_table4_set2() {
  return {{1.5, 0.002, 0.3, 100, 0.3},
          {1.3, -0.02, 0.15, 25, 0.05},
          {1.0, 0.004, 0.25, 30, 0.25},
          {0.7, 0.01, 0.18, 200, 0.3}};
}

namespace {
bool bad_number(double x) { return !std::isfinite(x) || x < 0; }
}  // namespace

Result<RateProfile> RateProfile::create(const RateConfig& cfg, uint64_t seed) {
  RateProfile p;
  p.cfg_ = cfg;
  p.seed_ = seed;
  if (!std::isfinite(cfg.rate_scale) || cfg.rate_scale <= 0)
    return error(Code::kInvalidArgument, "generator rate.rate_scale = {}: must be > 0", cfg.rate_scale);
  if (bad_number(cfg.max_backlog))
    return error(Code::kInvalidArgument, "generator rate.max_backlog = {}: must be >= 0", cfg.max_backlog);
  switch (cfg.mode) {
    case RateMode::kUnpaced:
      break;
    case RateMode::kConstant:
      if (bad_number(cfg.rate))
        return error(Code::kInvalidArgument, "generator rate.rate = {}: a constant rate must be finite and >= 0",
                     cfg.rate);
      break;
    case RateMode::kSteps: {
      if (cfg.steps.empty())
        return error(Code::kInvalidArgument,
                     "generator rate.steps is empty: a steps profile needs at least one (duration_ns, rate)");
      double cum = 0;
      for (size_t i = 0; i < cfg.steps.size(); ++i) {
        const auto& s = cfg.steps[i];
        if (s.duration_ns == 0)
          return error(Code::kInvalidArgument, "generator rate.steps[{}].duration_ns = 0: every step needs a duration",
                       i);
        if (bad_number(s.rate))
          return error(Code::kInvalidArgument, "generator rate.steps[{}].rate = {}: must be finite and >= 0", i,
                       s.rate);
        p.step_cum_.push_back(cum);
        cum += s.rate * cfg.rate_scale * static_cast<double>(s.duration_ns) * 1e-9;
        p.steps_total_ns_ += s.duration_ns;
      }
      p.steps_cycle_units_ = cum;
      break;
    }
    case RateMode::kHoltWinters:
      if (cfg.services.empty())
        return error(
            Code::kInvalidArgument,
            "generator rate.services is empty: Holt-Winters needs at least one service (e.g. laps_table4_set1())");
      for (size_t i = 0; i < cfg.services.size(); ++i) {
        const auto& s = cfg.services[i];
        if (!std::isfinite(s.period_s) || s.period_s <= 0)
          return error(Code::kInvalidArgument,
                       "generator rate.services[{}].period_s = {}: the season period m must be > 0", i, s.period_s);
        if (bad_number(s.sigma_mpps))
          return error(Code::kInvalidArgument, "generator rate.services[{}].sigma_mpps = {}: must be >= 0", i,
                       s.sigma_mpps);
        if (!std::isfinite(s.a_mpps) || !std::isfinite(s.b_mpps_per_s) || !std::isfinite(s.c_mpps))
          return error(Code::kInvalidArgument, "generator rate.services[{}]: a, b and C must be finite", i);
      }
      if (cfg.services.size() > 255)
        return error(Code::kInvalidArgument,
                     "generator rate.services has {} entries: at most 255 (Packet::service is 8 bits)",
                     cfg.services.size());
      if (cfg.hw_step_ns == 0) return error(Code::kInvalidArgument, "generator rate.hw_step_ns = 0: must be > 0");
      if (!std::isfinite(cfg.hw_time_scale) || cfg.hw_time_scale <= 0)
        return error(Code::kInvalidArgument, "generator rate.hw_time_scale = {}: must be > 0", cfg.hw_time_scale);
      break;
  }
  return p;
}

uint32_t RateProfile::services() const {
  return cfg_.mode == RateMode::kHoltWinters ? static_cast<uint32_t>(cfg_.services.size()) : 1;
}

double RateProfile::hw_service_rate(uint32_t i, uint64_t step) const {
  const HoltWintersService& s = cfg_.services[i];
  // Model time (s) at the start of the grid step.
  double t = static_cast<double>(step) * static_cast<double>(cfg_.hw_step_ns) * 1e-9 * cfg_.hw_time_scale;
  double season = std::fmod(t, s.period_s);
  double x = s.a_mpps + s.b_mpps_per_s * t + s.c_mpps * std::sin(6.283185307179586 * season / s.period_s);
  if (s.sigma_mpps > 0) {
    uint64_t h = gen::mix64(seed_ ^ 0x486f6c7457696e74ull ^ (static_cast<uint64_t>(i) << 56) ^ gen::mix64(step));
    x += s.sigma_mpps * gen::gaussian_from(h);
  }
  return std::max(0.0, x) * 1e6 * cfg_.rate_scale;
}

double RateProfile::hw_step_rate(uint64_t step) const {
  double r = 0;
  for (uint32_t i = 0; i < cfg_.services.size(); ++i) r += hw_service_rate(i, step);
  return r;
}

double RateProfile::service_rate_at(uint32_t i, uint64_t t_ns) const {
  if (cfg_.mode == RateMode::kHoltWinters) return hw_service_rate(i, t_ns / cfg_.hw_step_ns);
  return i == 0 ? rate_at(t_ns) : 0.0;
}

double RateProfile::rate_at(uint64_t t_ns) const {
  switch (cfg_.mode) {
    case RateMode::kUnpaced:
      return 0;
    case RateMode::kConstant:
      return cfg_.rate * cfg_.rate_scale;
    case RateMode::kSteps: {
      if (t_ns >= steps_total_ns_) {
        if (!cfg_.loop_steps) return 0;
        t_ns %= steps_total_ns_;
      }
      for (const auto& s : cfg_.steps) {
        if (t_ns < s.duration_ns) return s.rate * cfg_.rate_scale;
        t_ns -= s.duration_ns;
      }
      return 0;
    }
    case RateMode::kHoltWinters:
      return hw_step_rate(t_ns / cfg_.hw_step_ns);
  }
  return 0;
}

bool RateProfile::finished(uint64_t t_ns) const {
  return cfg_.mode == RateMode::kSteps && !cfg_.loop_steps && t_ns >= steps_total_ns_;
}

double RateProfile::cumulative(uint64_t t_ns) {
  switch (cfg_.mode) {
    case RateMode::kUnpaced:
      return 0;
    case RateMode::kConstant:
      return cfg_.rate * cfg_.rate_scale * static_cast<double>(t_ns) * 1e-9;
    case RateMode::kSteps: {
      double base = 0;
      if (t_ns >= steps_total_ns_) {
        if (!cfg_.loop_steps) return steps_cycle_units_;
        base = static_cast<double>(t_ns / steps_total_ns_) * steps_cycle_units_;
        t_ns %= steps_total_ns_;
      }
      for (size_t i = 0; i < cfg_.steps.size(); ++i) {
        const auto& s = cfg_.steps[i];
        if (t_ns < s.duration_ns)
          return base + step_cum_[i] + s.rate * cfg_.rate_scale * static_cast<double>(t_ns) * 1e-9;
        t_ns -= s.duration_ns;
      }
      return base + steps_cycle_units_;
    }
    case RateMode::kHoltWinters: {
      const uint64_t k = t_ns / cfg_.hw_step_ns;
      if (k < hw_k_) {  // time went back: start over
        hw_k_ = 0;
        hw_cum_ = 0;
      }
      const double step_s = static_cast<double>(cfg_.hw_step_ns) * 1e-9;
      for (; hw_k_ < k; ++hw_k_) hw_cum_ += hw_step_rate(hw_k_) * step_s;
      return hw_cum_ + hw_step_rate(k) * static_cast<double>(t_ns - k * cfg_.hw_step_ns) * 1e-9;
    }
  }
  return 0;
}

}  // namespace hpr
