#include "profiler/power/power_meter.hpp"

#include <dlfcn.h>
#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <regex>

namespace hpr::prof {

namespace fs = std::filesystem;

// ---------------------------------------------------------------- RAPL

const char* rapl_kind_name(RaplKind k) {
  switch (k) {
    case RaplKind::kPackage: return "package";
    case RaplKind::kCore: return "core";
    case RaplKind::kUncore: return "uncore";
    case RaplKind::kDram: return "dram";
    case RaplKind::kPsys: return "psys";
    case RaplKind::kOther: return "other";
  }
  return "other";
}

namespace {

Result<std::string> read_line(const fs::path& p) {
  std::ifstream in(p);
  if (!in) return error(Code::kNotFound, "{}: cannot open", p.string());
  std::string s;
  std::getline(in, s);
  if (in.bad()) return error(Code::kIoError, "{}: read failed", p.string());
  return s;
}

Result<uint64_t> parse_u64(const std::string& s, const std::string& what) {
  char* end = nullptr;
  errno = 0;
  unsigned long long v = std::strtoull(s.c_str(), &end, 10);
  if (s.empty() || errno != 0 || (end != nullptr && *end != '\0' && *end != '\n'))
    return error(Code::kInvalidArgument, "{}: '{}' is not an unsigned integer", what, s);
  return static_cast<uint64_t>(v);
}

RaplKind kind_of(const std::string& name) {
  if (name.rfind("package", 0) == 0) return RaplKind::kPackage;
  if (name == "core") return RaplKind::kCore;
  if (name == "uncore") return RaplKind::kUncore;
  if (name == "dram") return RaplKind::kDram;
  if (name == "psys") return RaplKind::kPsys;
  return RaplKind::kOther;
}

class RaplMeter final : public PowerMeter {
 public:
  RaplMeter(RaplDomain d, int fd, uint64_t first_raw)
      : d_(std::move(d)), fd_(fd), name_("rapl:" + d_.name), last_raw_(first_raw) {}
  ~RaplMeter() override { ::close(fd_); }
  PowerSource source() const override { return PowerSource::kRapl; }
  const std::string& name() const override { return name_; }

  Result<PowerReading> read(uint64_t now_ns) override {
    auto raw = read_raw(fd_, d_.path + "/energy_uj");
    if (!raw) return raw.status();
    total_uj_ += rapl_delta_uj(last_raw_, *raw, d_.max_energy_range_uj);
    last_raw_ = *raw;
    PowerReading r;
    r.now_ns = now_ns;
    r.energy_uj = total_uj_;
    r.source = PowerSource::kRapl;
    if (have_prev_ && now_ns > prev_ns_)
      r.watts = static_cast<double>(total_uj_ - prev_uj_) / (static_cast<double>(now_ns - prev_ns_) / 1e3);
    have_prev_ = true;
    prev_ns_ = now_ns;
    prev_uj_ = total_uj_;
    return r;
  }

  static Result<uint64_t> read_raw(int fd, const std::string& path) {
    char buf[32];
    ssize_t n = ::pread(fd, buf, sizeof(buf) - 1, 0);
    if (n <= 0) return error(Code::kIoError, "{}: read failed: {}", path, n < 0 ? std::strerror(errno) : "empty");
    buf[n] = '\0';
    std::string s(buf);
    while (!s.empty() && (s.back() == '\n' || s.back() == ' ')) s.pop_back();
    return parse_u64(s, path);
  }

 private:
  RaplDomain d_;
  int fd_;
  std::string name_;
  uint64_t last_raw_;
  uint64_t total_uj_ = 0;
  bool have_prev_ = false;
  uint64_t prev_ns_ = 0, prev_uj_ = 0;
};

}  // namespace

uint64_t rapl_delta_uj(uint64_t prev_uj, uint64_t cur_uj, uint64_t max_range_uj) {
  if (cur_uj >= prev_uj) return cur_uj - prev_uj;
  // The counter passed max_energy_range_uj and restarted at 0 (one wrap per read interval at most:
  // read more often than max_range / max power — about 60 s for a 262 J range at 4 kW).
  return (max_range_uj >= prev_uj ? max_range_uj - prev_uj : 0) + cur_uj;
}

Result<std::vector<RaplDomain>> discover_rapl(const std::string& root) {
  static const std::regex kZone(R"(intel-rapl:\d+(:\d+)?)");
  std::error_code ec;
  if (!fs::is_directory(root, ec))
    return error(Code::kNotFound, "RAPL: {} is not a directory (no powercap sysfs); use the model power source",
                 root);
  std::vector<fs::path> zones;
  for (const auto& e : fs::directory_iterator(root, ec)) {
    if (!std::regex_match(e.path().filename().string(), kZone)) continue;
    zones.push_back(e.path());
    for (const auto& sub : fs::directory_iterator(e.path(), ec))
      if (std::regex_match(sub.path().filename().string(), kZone)) zones.push_back(sub.path());
  }
  std::vector<RaplDomain> out;
  for (const auto& z : zones) {
    std::string id = z.filename().string();
    if (std::any_of(out.begin(), out.end(), [&](const RaplDomain& d) { return d.id == id; })) continue;
    RaplDomain d;
    d.path = z.string();
    d.id = id;
    auto name = read_line(z / "name");
    if (!name) return error(Code::kInvalidArgument, "RAPL zone {}: {}", d.path, name.status().message());
    d.name = *name;
    d.kind = kind_of(d.name);
    auto range = read_line(z / "max_energy_range_uj");
    if (!range) return error(Code::kInvalidArgument, "RAPL zone {}: {}", d.path, range.status().message());
    auto r = parse_u64(*range, (z / "max_energy_range_uj").string());
    if (!r) return r.status();
    d.max_energy_range_uj = *r;
    out.push_back(std::move(d));
  }
  if (out.empty())
    return error(Code::kNotFound,
                 "RAPL: no intel-rapl:* zone under {} (intel_rapl driver not loaded or no RAPL on this CPU); "
                 "use the model power source",
                 root);
  std::sort(out.begin(), out.end(), [](const RaplDomain& a, const RaplDomain& b) { return a.id < b.id; });
  return out;
}

Result<std::unique_ptr<PowerMeter>> open_rapl(const RaplDomain& d) {
  std::string path = d.path + "/energy_uj";
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0)
    return error(Code::kUnavailable, "{}: {} (energy_uj is readable by root only since Linux 5.10: run as root or "
                 "grant read access)", path, std::strerror(errno));
  auto raw = RaplMeter::read_raw(fd, path);
  if (!raw) {
    ::close(fd);
    return raw.status().code() == Code::kIoError
               ? error(Code::kUnavailable, "{} (permission or driver problem)", raw.status().message())
               : raw.status();
  }
  return std::unique_ptr<PowerMeter>(std::make_unique<RaplMeter>(d, fd, *raw));
}

}  // namespace hpr::prof

// ---------------------------------------------------------------- A counter updated now and then

namespace hpr::prof {

uint64_t SteppedEnergy::update(uint64_t now_ns, uint64_t counter_uj) {
  if (changes_.empty() || counter_uj > changes_.back().uj) {
    // The update came between the previous read and this one: its middle is the best guess of when.
    const uint64_t when = changes_.empty() ? now_ns : prev_read_ns_ + (now_ns - std::min(now_ns, prev_read_ns_)) / 2;
    changes_.push_back({when, counter_uj});
    if (changes_.size() > kRateSpan + 1) changes_.erase(changes_.begin());
  }
  prev_read_ns_ = now_ns;
  const Point& last = changes_.back();
  double rate = seed_uj_per_ns_;
  if (changes_.size() >= 3) {  // the first change after the start may cover part of an update only
    const Point& first = changes_[1];
    if (last.ns > first.ns) rate = static_cast<double>(last.uj - first.uj) / static_cast<double>(last.ns - first.ns);
  }
  const uint64_t gap = std::min(now_ns - std::min(now_ns, last.ns), max_gap_ns_);
  out_uj_ = std::max(out_uj_, last.uj + static_cast<uint64_t>(rate * static_cast<double>(gap)));
  return out_uj_;
}

uint64_t SteppedEnergy::period_ns() const {
  if (changes_.size() < 4) return 0;  // the first change may cover part of an update only
  std::vector<uint64_t> gaps;
  for (size_t i = 2; i < changes_.size(); ++i) gaps.push_back(changes_[i].ns - changes_[i - 1].ns);
  std::nth_element(gaps.begin(), gaps.begin() + static_cast<std::ptrdiff_t>(gaps.size() / 2), gaps.end());
  return gaps[gaps.size() / 2];
}

}  // namespace hpr::prof

// ---------------------------------------------------------------- NVML

// Types and prototypes: the CUDA toolkit's nvml.h where it is installed (CMake adds its include directory when
// find_path finds it; /usr/include/nvml.h of a distribution package works too), else the few declarations we
// need, copied from it (ABI-stable C API). Either way nothing links against NVML: the functions are looked up
// with dlsym in libnvidia-ml.so.1 at run time, through pointers of the prototypes' types.
#if __has_include(<nvml.h>)
#define NVML_NO_UNVERSIONED_FUNC_DEFS  // we name the versioned entry points (nvmlInit_v2, ...) ourselves
#include <nvml.h>
namespace hpr::prof {
namespace {
constexpr bool kNvmlToolkitHeader = true;
constexpr nvmlReturn_t kNvmlSuccess = NVML_SUCCESS;
constexpr unsigned kNvmlDeviceNameBufferSize = NVML_DEVICE_NAME_V2_BUFFER_SIZE;
using NvmlInitFn = decltype(&nvmlInit_v2);
using NvmlShutdownFn = decltype(&nvmlShutdown);
using NvmlCountFn = decltype(&nvmlDeviceGetCount_v2);
using NvmlByIndexFn = decltype(&nvmlDeviceGetHandleByIndex_v2);
using NvmlGetNameFn = decltype(&nvmlDeviceGetName);
using NvmlTotalEnergyFn = decltype(&nvmlDeviceGetTotalEnergyConsumption);
using NvmlPowerUsageFn = decltype(&nvmlDeviceGetPowerUsage);
using NvmlErrorStringFn = decltype(&nvmlErrorString);
}  // namespace
}  // namespace hpr::prof
#else
namespace hpr::prof {
namespace {
constexpr bool kNvmlToolkitHeader = false;
using nvmlReturn_t = int;  // enum nvmlReturn_enum; NVML_SUCCESS = 0
using nvmlDevice_t = struct nvmlDevice_st*;
constexpr nvmlReturn_t kNvmlSuccess = 0;
constexpr unsigned kNvmlDeviceNameBufferSize = 96;  // NVML_DEVICE_NAME_V2_BUFFER_SIZE
using NvmlInitFn = nvmlReturn_t (*)();              // nvmlInit_v2
using NvmlShutdownFn = nvmlReturn_t (*)();          // nvmlShutdown
using NvmlCountFn = nvmlReturn_t (*)(unsigned*);    // nvmlDeviceGetCount_v2
using NvmlByIndexFn = nvmlReturn_t (*)(unsigned, nvmlDevice_t*);                // nvmlDeviceGetHandleByIndex_v2
using NvmlGetNameFn = nvmlReturn_t (*)(nvmlDevice_t, char*, unsigned);          // nvmlDeviceGetName
using NvmlTotalEnergyFn = nvmlReturn_t (*)(nvmlDevice_t, unsigned long long*);  // ...TotalEnergyConsumption
using NvmlPowerUsageFn = nvmlReturn_t (*)(nvmlDevice_t, unsigned*);             // nvmlDeviceGetPowerUsage
using NvmlErrorStringFn = const char* (*)(nvmlReturn_t);                        // nvmlErrorString
}  // namespace
}  // namespace hpr::prof
#endif

namespace hpr::prof {

namespace {

struct NvmlApi {
  void* handle = nullptr;
  NvmlInitFn init = nullptr;
  NvmlShutdownFn shutdown = nullptr;
  NvmlCountFn count = nullptr;
  NvmlByIndexFn by_index = nullptr;
  NvmlGetNameFn get_name = nullptr;
  NvmlTotalEnergyFn total_energy = nullptr;  // mJ
  NvmlPowerUsageFn power_usage = nullptr;    // mW
  NvmlErrorStringFn error_string = nullptr;

  std::string err(nvmlReturn_t r) const {
    return error_string != nullptr ? fmt::format("{} ({})", error_string(r), static_cast<int>(r))
                                   : fmt::format("NVML error {}", static_cast<int>(r));
  }
  ~NvmlApi() {
    if (shutdown != nullptr) shutdown();
    if (handle != nullptr) dlclose(handle);
  }
};

class NvmlMeter final : public PowerMeter {
 public:
  NvmlMeter(std::shared_ptr<NvmlApi> api, nvmlDevice_t dev, unsigned index, std::string gpu, bool energy_counter)
      : api_(std::move(api)), dev_(dev), name_(fmt::format("nvml:{}:{}", index, gpu)), energy_(energy_counter) {}
  PowerSource source() const override { return PowerSource::kNvml; }
  const std::string& name() const override { return name_; }
  uint64_t update_period_ns() const override { return energy_ ? stepped_.period_ns() : 0; }

  Result<PowerReading> read(uint64_t now_ns) override {
    PowerReading r;
    r.now_ns = now_ns;
    r.source = PowerSource::kNvml;
    if (energy_) {
      unsigned long long mj = 0;
      nvmlReturn_t rc = api_->total_energy(dev_, &mj);
      if (rc != kNvmlSuccess)
        return error(Code::kUnavailable, "{}: nvmlDeviceGetTotalEnergyConsumption: {}", name_, api_->err(rc));
      uint64_t uj = mj * 1000ULL;
      if (!started_) {
        base_uj_ = uj;
        unsigned mw = 0;  // the rate until the counter has moved twice
        if (api_->power_usage(dev_, &mw) == kNvmlSuccess) stepped_.seed_watts(mw / 1e3);
      }
      total_uj_ = stepped_.update(now_ns, uj - base_uj_);
    } else {
      unsigned mw = 0;
      nvmlReturn_t rc = api_->power_usage(dev_, &mw);
      if (rc != kNvmlSuccess)
        return error(Code::kUnavailable, "{}: nvmlDeviceGetPowerUsage: {}", name_, api_->err(rc));
      // Trapezoid between reads of the instantaneous power.
      if (started_ && now_ns > prev_ns_)
        acc_uj_ += (prev_mw_ + mw) / 2.0 / 1e3 * (static_cast<double>(now_ns - prev_ns_) / 1e3);
      prev_mw_ = mw;
      total_uj_ = static_cast<uint64_t>(acc_uj_);
    }
    r.energy_uj = total_uj_;
    if (started_ && now_ns > prev_ns_)
      r.watts = static_cast<double>(total_uj_ - prev_uj_) / (static_cast<double>(now_ns - prev_ns_) / 1e3);
    started_ = true;
    prev_ns_ = now_ns;
    prev_uj_ = total_uj_;
    return r;
  }

 private:
  std::shared_ptr<NvmlApi> api_;
  nvmlDevice_t dev_;
  std::string name_;
  bool energy_;
  SteppedEnergy stepped_;  // the counter moves about every 100 ms (H200), reads come every 40 ms
  bool started_ = false;
  uint64_t base_uj_ = 0, total_uj_ = 0, prev_uj_ = 0, prev_ns_ = 0;
  double acc_uj_ = 0, prev_mw_ = 0;
};

template <typename F>
bool load_sym(void* h, const char* name, F& out) {
  out = reinterpret_cast<F>(dlsym(h, name));
  return out != nullptr;
}

}  // namespace

bool nvml_toolkit_header() { return kNvmlToolkitHeader; }

NvmlProbe probe_nvml(const char* library) {
  NvmlProbe p;
  void* h = dlopen(library, RTLD_NOW | RTLD_LOCAL);
  if (h == nullptr) {
    const char* e = dlerror();
    p.reason = fmt::format("NVML not available: {}", e != nullptr ? e : library);
    return p;
  }
  auto api = std::make_shared<NvmlApi>();
  api->handle = h;
  NvmlInitFn init = nullptr;
  if (!load_sym(h, "nvmlInit_v2", init) || !load_sym(h, "nvmlDeviceGetCount_v2", api->count) ||
      !load_sym(h, "nvmlDeviceGetHandleByIndex_v2", api->by_index) ||
      !load_sym(h, "nvmlDeviceGetName", api->get_name) || !load_sym(h, "nvmlDeviceGetPowerUsage", api->power_usage)) {
    p.reason = fmt::format("NVML not available: {} lacks a required symbol (nvmlInit_v2, nvmlDeviceGetCount_v2, "
                           "nvmlDeviceGetHandleByIndex_v2, nvmlDeviceGetName, nvmlDeviceGetPowerUsage)", library);
    return p;
  }
  load_sym(h, "nvmlShutdown", api->shutdown);
  load_sym(h, "nvmlErrorString", api->error_string);
  load_sym(h, "nvmlDeviceGetTotalEnergyConsumption", api->total_energy);  // Volta and later
  auto shutdown = api->shutdown;
  api->shutdown = nullptr;  // only after a successful init
  if (nvmlReturn_t rc = init(); rc != kNvmlSuccess) {
    p.reason = fmt::format("NVML not available: nvmlInit_v2 failed: {}", api->err(rc));
    return p;
  }
  api->shutdown = shutdown;
  unsigned n = 0;
  if (nvmlReturn_t rc = api->count(&n); rc != kNvmlSuccess) {
    p.reason = fmt::format("NVML: nvmlDeviceGetCount_v2 failed: {}", api->err(rc));
    return p;
  }
  for (unsigned i = 0; i < n; ++i) {
    nvmlDevice_t dev = nullptr;
    if (api->by_index(i, &dev) != kNvmlSuccess) continue;
    char name[kNvmlDeviceNameBufferSize] = {};
    if (api->get_name(dev, name, sizeof(name)) != kNvmlSuccess) std::snprintf(name, sizeof(name), "gpu%u", i);
    bool energy = false;
    if (api->total_energy != nullptr) {
      unsigned long long mj = 0;
      energy = api->total_energy(dev, &mj) == kNvmlSuccess;
    }
    p.meters.push_back(std::make_unique<NvmlMeter>(api, dev, i, name, energy));
  }
  p.available = !p.meters.empty();
  if (!p.available) p.reason = "NVML: no NVIDIA GPU found";
  return p;
}

// ---------------------------------------------------------------- Model

ModelPowerParams default_model_power(std::string_view kind, std::string name) {
  if (name.empty()) name = std::string(kind);
  if (kind == "igpu") return {std::move(name), 2, 12};
  if (kind == "dgpu") return {std::move(name), 40, 174};
  return {std::move(name), 6, 52};
}

ModelPowerMeter::ModelPowerMeter(ModelPowerParams p, uint64_t start_ns)
    : p_(std::move(p)), name_("model:" + p_.name), last_ns_(start_ns) {}

double ModelPowerMeter::watts_at(double u) const { return p_.idle_w + p_.dynamic_w * std::clamp(u, 0.0, 1.0); }

void ModelPowerMeter::integrate(uint64_t now_ns) {
  if (now_ns > last_ns_) energy_uj_ += watts_at(util_) * (static_cast<double>(now_ns - last_ns_) / 1e3);
  last_ns_ = std::max(last_ns_, now_ns);
}

void ModelPowerMeter::set_utilisation(double u, uint64_t now_ns) {
  integrate(now_ns);
  util_ = std::clamp(u, 0.0, 1.0);
}

Result<PowerReading> ModelPowerMeter::read(uint64_t now_ns) {
  integrate(now_ns);
  PowerReading r;
  r.now_ns = now_ns;
  r.source = PowerSource::kModel;
  r.energy_uj = static_cast<uint64_t>(energy_uj_);
  if (read_once_ && now_ns > last_read_ns_)
    r.watts = (energy_uj_ - last_read_uj_) / (static_cast<double>(now_ns - last_read_ns_) / 1e3);
  read_once_ = true;
  last_read_ns_ = now_ns;
  last_read_uj_ = energy_uj_;
  return r;
}

}  // namespace hpr::prof
