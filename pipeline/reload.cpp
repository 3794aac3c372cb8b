#include "pipeline/reload.hpp"

#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <filesystem>

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <spdlog/spdlog.h>

#include "hpr/clock.hpp"
#include "hpr/data_dir.hpp"
#include "hpr/resident.hpp"
#include "kernels/aes/key_source.hpp"
#include "kernels/ipv4/ipv4_app.hpp"

namespace hpr {
namespace {

// The bytes a reload would read: a file, or a rule folder's *.rules. Errors name the file.
Result<uint64_t> file_bytes(const std::string& path, bool folder_ok) {
  struct stat st {};
  if (stat(path.c_str(), &st) != 0)
    return error(errno == ENOENT ? Code::kNotFound : Code::kIoError, "{}: {}", path, std::strerror(errno));
  if (S_ISDIR(st.st_mode)) {
    if (!folder_ok) return error(Code::kInvalidArgument, "{}: is a folder, not a file", path);
    uint64_t total = 0;
    std::error_code ec;
    for (const auto& e : std::filesystem::directory_iterator(path, ec))
      if (e.path().extension() == ".rules") total += e.file_size(ec);
    if (ec) return error(Code::kIoError, "{}: {}", path, ec.message());
    return total;
  }
  if (access(path.c_str(), R_OK) != 0) return error(Code::kIoError, "{}: {}", path, std::strerror(errno));
  return static_cast<uint64_t>(st.st_size);
}

// The reload's thread at nice 19 while it builds: where it shares a core with the data path's threads, they get it
// first (a rebuild at normal priority that shared the dispatcher's core cost packets at a line-rate port). Not
// SCHED_IDLE: beside busy-polling lanes on every core a reload would never end.
class LowPriority {
 public:
  LowPriority() : tid_(static_cast<id_t>(gettid())) {
    errno = 0;
    old_ = getpriority(PRIO_PROCESS, tid_);
    changed_ = errno == 0 && setpriority(PRIO_PROCESS, tid_, 19) == 0;
  }
  ~LowPriority() {
    // Back where allowed (root, or RLIMIT_NICE); the threads that reload (the socket's, SIGHUP's) end after one anyway.
    if (changed_) (void)setpriority(PRIO_PROCESS, tid_, old_);
  }

 private:
  id_t tid_;
  int old_ = 0;
  bool changed_ = false;
};

// `file` in the app options as the file of `what`; keys: the key file where the run has one, else the master key file.
void use_file(kernels::AppOptions& o, const std::string& what, const std::string& file) {
  if (what == "routes") o.routes = file;
  if (what == "rules") o.rules = file;
  if (what != "keys") return;
  if (!o.keys.empty()) {
    o.keys = file;
  } else {
    o.master_key.clear();
    o.master_key_file = file;
  }
}

}  // namespace

std::string ReloadReport::text() const {
  const auto mib = [](uint64_t kib) { return static_cast<double>(kib) / 1024.0; };
  return fmt::format(
      "reloaded {} from {}: generation {}, built in {:.3f} s, on the devices in {:.3f} s, swapped in {:.3f} s "
      "(total {:.3f} s); resident memory {:.0f} MiB before, {:.0f} MiB with both, {:.0f} MiB after{}",
      what, file, replaced.generation, replaced.build_s, replaced.upload_s, replaced.swap_s, total_s,
      mib(rss_before_kib), mib(replaced.rss_both_kib), mib(rss_after_kib),
      replaced.old_freed ? "" : " (a lane still held the old tables when the reload returned)");
}

std::vector<std::string> Reloader::kinds() const {
  if (app_ == "ipv4") return {"routes"};
  if (app_ == "dpi") return {"rules"};
  if (app_ == "aes") return {"keys"};
  return {};
}

Result<ReloadReport> Reloader::reload(std::string_view what_in, const std::string& file_in) {
  std::unique_lock<std::mutex> busy(busy_, std::try_to_lock);
  if (!busy.owns_lock()) return error(Code::kUnavailable, "a reload is already running; try again when it has ended");
  const std::vector<std::string> kinds = this->kinds();
  if (kinds.empty()) return error(Code::kInvalidArgument, "the {} app has no tables or files to reload", app_);
  const std::string what = what_in.empty() ? kinds[0] : std::string(what_in);
  if (std::find(kinds.begin(), kinds.end(), what) == kinds.end())
    return error(Code::kInvalidArgument, "the {} app has no {} to reload (it reloads: {})", app_, what,
                 fmt::join(kinds, ", "));
  std::string file = file_in;
  if (file.empty()) {
    if (what == "routes") file = opts_.routes.empty() ? data_path("routes/ipasn_20140513.dat.gz") : opts_.routes;
    if (what == "rules") file = opts_.rules.empty() ? data_path("rules/et-open-2017") : opts_.rules;
    if (what == "keys") file = !opts_.keys.empty() ? opts_.keys : opts_.master_key_file;
    if (file.empty())
      return error(Code::kInvalidArgument,
                   "reload keys: the run's master key was given as a value (app.master_key or {}), so there is no "
                   "file to read again; name one: reload keys FILE (a master key file)",
                   kernels::aes::kMasterKeyEnv);
  }
  auto bytes = file_bytes(file, what == "rules");
  if (!bytes) return error(bytes.status().code(), "reload {}: {}", what, bytes.status().message());
  if (*bytes > kMaxReloadBytes)
    return error(Code::kInvalidArgument, "reload {}: {}: {} bytes, more than the {} MiB a reload reads", what, file,
                 *bytes, kMaxReloadBytes >> 20);
  ReloadReport rep;
  rep.what = what;
  rep.file = file;
  rep.rss_before_kib = resident_kib();
  const uint64_t t0 = monotonic_ns();
  const LowPriority low;
  auto r = pipeline_.replace_app([&](const kernels::App& running) { return make(what, file, running); });
  if (!r) return error(r.status().code(), "reload {}: {}", what, r.status().message());
  rep.replaced = *r;
  rep.total_s = static_cast<double>(monotonic_ns() - t0) / 1e9;
  rep.rss_after_kib = resident_kib();
  use_file(opts_, what, file);  // the next reload without a file (SIGHUP) reads this one again
  spdlog::info("{}", rep.text());
  return rep;
}

Result<std::shared_ptr<const kernels::App>> Reloader::make(const std::string& what, const std::string& file,
                                                           const kernels::App& running) const {
  // Rules as at the start: with app.strict_rules a rule that cannot be read refuses the new set (the old one stays);
  // without, it is skipped and named in the log.
  kernels::AppOptions ao = opts_;
  use_file(ao, what, file);
  if (what == "keys") {
    for (const auto& [k, v] : running.summary_info())  // the run's key epoch stays
      if (k == "key_epoch") ao.key_epoch = v;
    ao.iv_counter_start = 0;  // the counters go on from the running table's (AesApp::take_over_from)
  }
  auto a = kernels::make_app(app_, ao);
  if (!a) {
    // Without make_app's "app.routes (--routes): " in front: the run's setting is not what failed.
    std::string m = a.status().message();
    for (const char* setting : {"app.routes (--routes): ", "app.rules (--rules): "})
      if (m.rfind(setting, 0) == 0) m.erase(0, std::strlen(setting));
    return error(a.status().code(), "{}", m);
  }
  if (const auto* old = dynamic_cast<const kernels::ipv4::Ipv4App*>(&running); old && !old->neighbours().empty())
    HPR_RETURN_IF_ERROR(static_cast<kernels::ipv4::Ipv4App&>(**a).set_neighbours(old->neighbours()));
  return std::shared_ptr<const kernels::App>(std::move(*a));
}

}  // namespace hpr
