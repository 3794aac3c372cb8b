// The OpenCL executor (see lane.hpp): batches on a device, several in flight; a chain's or services' apps in turn.
#include <algorithm>
#include <cstring>

#include "hpr/clock.hpp"
#include "pipeline/executor_common.hpp"
#include "pipeline/fault_injection.hpp"

namespace hpr {
namespace {

using namespace executor_detail;

// OpenCL: `in_flight` slots, each with its own in-order queue so that the copies of one batch
// overlap the kernel of another on devices with their own memory. Host-unified devices use one
// CL_MEM_ALLOC_HOST_PTR buffer per array, mapped for the host and unmapped for the kernel: nothing
// is copied. Discrete devices gather into pinned staging buffers and copy only the bytes used
// (descriptors and slices in; results, and slices when the app writes back, out).
//
// A chain or services (App::device_stages() > 1) run their apps' kernels in turn on one gathered copy of each batch
// (kernels::gather_chain): app k's results come back, its finish runs on the host (a packet it drops gets an empty
// slice in app k+1's descriptors), and app k+1's kernel runs on the bytes app k left on the device; only after the
// last app do the written slices go back to the frames. Each app has its own descriptors, results and staged tables
// (a Stage); the gathered packets are one buffer. Services: a stage runs the packets of its app's service only (its
// rows), and a stage without rows in a batch is skipped.
class ClExecutor final : public Executor {
 public:
  struct Stage {
    cl::Buffer desc_buf, out_buf;      // what the kernel sees
    cl::Buffer desc_stage, out_stage;  // discrete only: pinned host staging
    cl::Buffer app_stage;              // what DeviceTables::stage gave this batch (AES: key slots)
    Desc* desc_host = nullptr;
    uint8_t* out_host = nullptr;
    // This batch's rows: n packets, every packet of the batch (every) or those at idx (services).
    uint32_t n = 0;
    bool every = true;
    std::vector<uint32_t> idx;
  };
  struct ClSlot : Slot {
    cl::CommandQueue queue;
    cl::Buffer pkts_buf, pkts_stage;  // pkts_stage: discrete only
    uint8_t* pkts_host = nullptr;
    std::vector<Stage> st;  // one per app the batch runs
    uint32_t k = 0;         // the app whose kernel is in flight (the last of those launched)
    uint32_t first = 0, last = 0;  // the first and last app with rows in this batch
    uint32_t fin = 0;              // the first app whose finish has not run
    // Several stages: kernels::gather_chain's shifts; the batch's packets as the apps so far left them (cur); each
    // stage's rows as its finish left them (after[k], for on_batch). `pkts` stays as submitted (services: with the
    // service each packet matched), so that a failure hands the packets back untouched by the apps.
    std::vector<int32_t> shift;
    std::vector<Packet> cur;
    std::vector<std::vector<Packet>> after;
    cl::Event done;
    // Unified: pkts_buf and every desc_buf stay mapped (read and write) from the end of one batch to the start of the
    // next, so that submit does not wait for a blocking map to go round the device's queue.
    bool premapped = false;
  };

  static Result<std::unique_ptr<Executor>> create(const App& app, std::shared_ptr<kernels::AppProgram> prog,
                                                  bool unified, const ExecutorConfig& cfg) {
    std::unique_ptr<ClExecutor> e(new ClExecutor(app, std::move(prog), unified, cfg));
    auto k = e->prog_->make_kernels(app);
    if (!k) return k.status();
    e->kernels_ = std::move(*k);
    e->stages_ = static_cast<uint32_t>(e->kernels_.size());
    e->fault_ = fault::cl_fault_from_env();
    if (!e->fault_.applies_to(e->prog_->device.getInfo<CL_DEVICE_NAME>()) ||
        (!cfg.call_faults && e->fault_.point != fault::ClPoint::kCorrupt))
      e->fault_ = {};
    const size_t desc_bytes = sizeof(Desc) * cfg.max_batch;
    // A chain's gather may shift each packet's span by up to kSliceAlign bytes (gather_chain).
    const size_t pkts_bytes = slice_buffer_bytes(app, cfg.max_batch) +
                              (e->stages_ > 1 ? size_t{cfg.max_batch} * kernels::kSliceAlign : 0);
    try {
      for (uint32_t i = 0; i < std::max<uint32_t>(cfg.in_flight, 1); ++i) {
        auto s = std::make_unique<ClSlot>();
        s->pkts.resize(cfg.max_batch);
        s->refs.resize(cfg.max_batch);
        auto& ctx = e->prog_->context;
        s->queue = cl::CommandQueue(ctx, e->prog_->device);
        e->inject(fault::ClPoint::kAlloc, CL_MEM_OBJECT_ALLOCATION_FAILURE, "clCreateBuffer");
        constexpr cl_mem_flags kHost = CL_MEM_ALLOC_HOST_PTR;
        s->pkts_buf = cl::Buffer(ctx, CL_MEM_READ_WRITE | (unified ? kHost : 0), pkts_bytes);
        if (!unified) {
          // Staging stays mapped for the executor's life (pinned host memory).
          s->pkts_stage = cl::Buffer(ctx, kHost, pkts_bytes);
          s->pkts_host = static_cast<uint8_t*>(
              s->queue.enqueueMapBuffer(s->pkts_stage, CL_TRUE, CL_MAP_READ | CL_MAP_WRITE, 0, pkts_bytes));
        }
        s->st.resize(e->stages_);
        for (uint32_t k = 0; k < e->stages_; ++k) {
          Stage& t = s->st[k];
          const size_t out_bytes = out_buffer_bytes(app.chain_app(k), cfg.max_batch);
          t.desc_buf = cl::Buffer(ctx, CL_MEM_READ_ONLY | (unified ? kHost : 0), desc_bytes);
          t.out_buf = cl::Buffer(ctx, CL_MEM_WRITE_ONLY | (unified ? kHost : 0), out_bytes);
          if (unified) continue;
          t.desc_stage = cl::Buffer(ctx, kHost, desc_bytes);
          t.out_stage = cl::Buffer(ctx, kHost, out_bytes);
          t.desc_host = static_cast<Desc*>(s->queue.enqueueMapBuffer(t.desc_stage, CL_TRUE, CL_MAP_WRITE, 0, desc_bytes));
          t.out_host = static_cast<uint8_t*>(s->queue.enqueueMapBuffer(t.out_stage, CL_TRUE, CL_MAP_READ, 0, out_bytes));
        }
        if (e->stages_ > 1) {
          s->shift.resize(cfg.max_batch);
          s->cur.reserve(cfg.max_batch);
          s->after.resize(e->stages_);
          for (auto& a : s->after) a.reserve(cfg.max_batch);
          for (Stage& t : s->st) t.idx.reserve(cfg.max_batch);
        }
        e->slots_.push_back(std::move(s));
      }
      e->widest_launch_first(cfg.max_batch);
    } catch (const cl::Error& err) {
      return error(Code::kUnavailable, "allocating batch buffers on '{}' failed: {}",
                   e->prog_->device.getInfo<CL_DEVICE_NAME>(), cl_error_name(err.err()));
    }
    e->desc_bytes_ = desc_bytes;
    e->pkts_bytes_ = pkts_bytes;
    return std::unique_ptr<Executor>(std::move(e));
  }

  std::string describe() const override {
    return fmt::format("opencl ({}{})", unified_ ? "mapped" : "copied",
                       stages_ > 1 ? fmt::format(", {} kernels on one gathered batch", stages_) : "");
  }

  // PoCL 3.1 keeps a compiled work-group function per kernel and grid width (one for the widest grid seen so far is
  // made when a launch is wider than every earlier one), but a finished launch releases the first one with the same
  // kernel and work-group size, whichever it ran: when a wider launch (a new entry, put first) finishes before an
  // older launch still running on another queue, that older launch's release then finds the new entry at 0 and PoCL
  // aborts (`pocl_release_dlhandle_cache: Assertion found->ref_count > 0`; seen with two workers' lanes on one
  // device, once in 5 runs). One launch at the widest grid this executor will use, before any other, and every later
  // launch takes that entry. n = 0: every kernel returns at once.
  void widest_launch_first(uint32_t max_batch) {
    ClSlot& s = *slots_.front();
    const kernels::LaunchSize ls = kernels::launch_size(prog_->device, max_batch);
    for (uint32_t k = 0; k < stages_; ++k) {
      set_args(s, k, 0);
      s.queue.enqueueNDRangeKernel(kernels_[k], cl::NullRange, ls.global, ls.local);
    }
    s.queue.finish();
  }

  // Fault injection (fault_injection.hpp): throws the error a driver would at the n-th call at `p`.
  void inject(fault::ClPoint p, cl_int code, const char* call) {
    if (fault_.point != p || ++fault_calls_ != fault_.nth) return;
    spdlog::warn("fault injected: {} fails with {} on '{}' (HPR_FAULT_CL)", call, cl_error_name(code),
                 prog_->device.getInfo<CL_DEVICE_NAME>());
    throw cl::Error(code, call);
  }
  uint32_t slots() const override { return static_cast<uint32_t>(slots_.size()); }
  uint32_t outstanding() const override { return count_; }

  Status submit(Packet* const* refs, uint32_t n) override {
    ClSlot& s = *slots_[(head_ + count_) % slots_.size()];
    take_batch(s, refs, n);
    s.submit_ns = monotonic_ns();
    s.app = app_;
    s.version = version_;
    s.k = 0;
    ++count_;  // outstanding from here on, so a failure hands these packets back
    try {
      if (unified_) {
        inject(fault::ClPoint::kMap, CL_MAP_FAILURE, "clEnqueueMapBuffer");
        if (s.premapped) {
          s.premapped = false;  // mapped since the last batch of this slot completed
        } else {
          for (Stage& t : s.st)
            t.desc_host = static_cast<Desc*>(s.queue.enqueueMapBuffer(t.desc_buf, CL_TRUE, CL_MAP_WRITE_INVALIDATE_REGION, 0, desc_bytes_));
          s.pkts_host = static_cast<uint8_t*>(s.queue.enqueueMapBuffer(s.pkts_buf, CL_TRUE, CL_MAP_WRITE_INVALIDATE_REGION, 0, pkts_bytes_));
        }
      }
      const std::span<const Packet> pk(s.pkts.data(), n);
      if (stages_ == 1) {
        s.st[0].n = n;
        s.last = 0;
        s.first = 0;
        s.pkts_bytes = kernels::gather_into(*s.app, pk, s.st[0].desc_host, s.pkts_host, pkts_bytes_);
      } else {
        s.app->classify_batch({s.pkts.data(), n});
        s.pkts_bytes = kernels::gather_chain(*s.app, pk, s.shift.data(), s.pkts_host, pkts_bytes_);
        plan(s);
        kernels::stage_descs(s.app->chain_app(s.k), s.cur, s.shift.data(), rows(s, s.k));
        return launch_run(s, older_than(count_ - 1));
      }
      return launch(s);
    } catch (const cl::Error& err) {
      return cl_failed(err);
    }
  }

  Result<bool> reap(bool wait, std::vector<Packet*>& done, const BatchFn& on_batch) override {
    if (count_ == 0) return false;
    ClSlot& s = *slots_[head_];
    const App& app = *s.app;
    try {
      if (stages_ > 1) HPR_RETURN_IF_ERROR(advance_later());
      for (;;) {
        cl_int st = s.done.getInfo<CL_EVENT_COMMAND_EXECUTION_STATUS>();
        if (st < 0) return error(Code::kUnavailable, "batch failed on '{}': {}", prog_->device.getInfo<CL_DEVICE_NAME>(), cl_error_name(st));
        if (st != CL_COMPLETE) {
          if (!wait) return false;
          s.done.wait();
        }
        if (s.k == s.last) break;
        HPR_RETURN_IF_ERROR(next_app(s, stages_));
        HPR_RETURN_IF_ERROR(advance_later());
      }
      std::span<Packet> pk(s.pkts.data(), s.n);
      if (fault_.point == fault::ClPoint::kCorrupt && ++fault_calls_ >= fault_.nth && s.n > 0) {
        if (fault_calls_ == fault_.nth)
          spdlog::warn("fault injected: '{}' computes wrong results from this batch on (HPR_FAULT_CL)",
                       prog_->device.getInfo<CL_DEVICE_NAME>());
        s.st[s.last].out_host[0] ^= 0x5a;
      }
      if (stages_ == 1) {
        kernels::scatter_back(app, pk, view(s, 0));
        app.finish(pk, view(s, 0));
        on_batch(pk, view(s, 0), app, 0);
      } else {
        kernels::StageRows r[kernels::kMaxAppSlots];
        for (uint32_t k = 0; k < stages_; ++k) r[k] = rows(s, k);
        kernels::scatter_chain(app, s.cur, s.pkts_host, s.shift.data(), {r, stages_});
        finish_through(s, s.last);
        std::copy(s.cur.begin(), s.cur.end(), pk.begin());
        for (uint32_t k = 0; k < stages_; ++k)  // (an app that ran on no rows reports nothing, as run_in_place)
          if (s.st[k].n > 0) on_batch(s.after[k], view(s, k), app.chain_app(k), k);
      }
      give_batch(s, done);
      if (unified_) {
        for (uint32_t k = 0; k <= s.last; ++k)
          if (runs(s, k)) s.queue.enqueueUnmapMemObject(s.st[k].out_buf, s.st[k].out_host);
        s.premapped = true;  // desc and pkts stay mapped for the slot's next batch
      }
    } catch (const cl::Error& err) {
      return cl_failed(err);
    }
    s.version.reset();
    head_ = (head_ + 1) % slots_.size();
    --count_;
    return true;
  }

  void take_outstanding(std::vector<Packet*>& out) override {
    for (; count_ > 0; --count_) {
      ClSlot& s = *slots_[head_];
      out.insert(out.end(), s.refs.begin(), s.refs.begin() + s.n);
      s.version.reset();
      head_ = (head_ + 1) % slots_.size();
    }
  }

  // The new tables are bound to kernels of their own; batches in flight keep the old kernels' arguments (fixed at
  // their enqueue) and, through their slot's version, the old tables.
  Status adopt(std::shared_ptr<const AppVersion> v, size_t lane) override {
    HPR_RETURN_IF_ERROR(same_layout(*app_, *v->app));
    if (lane >= v->programs.size() || !v->programs[lane])
      return error(Code::kInvalidArgument, "the new version has no program for this OpenCL lane");
    if (lane < v->kernels.size() && v->kernels[lane].size() == stages_) {
      kernels_ = v->kernels[lane];
    } else {
      auto k = v->programs[lane]->make_kernels(*v->app);
      if (!k) return k.status();
      if (k->size() != stages_) return error(Code::kInvalidArgument, "the new {} runs {} kernels, the running one {}",
                                             v->app->name(), k->size(), stages_);
      kernels_ = std::move(*k);
    }
    prog_ = v->programs[lane];
    app_ = v->app.get();
    version_ = std::move(v);
    return Status::ok();
  }

 private:
  ClExecutor(const App& app, std::shared_ptr<kernels::AppProgram> prog, bool unified, const ExecutorConfig& cfg)
      : app_(&app), prog_(std::move(prog)), unified_(unified), cfg_(cfg) {}

  // App k's view of slot s: its descriptors and results (the gathered bytes are mapped only after the last app).
  static BatchView view(const ClSlot& s, uint32_t k) {
    return {s.st[k].desc_host, s.st[k].n, s.pkts_host, s.st[k].out_host};
  }
  static kernels::StageRows rows(ClSlot& s, uint32_t k) {
    Stage& t = s.st[k];
    return {t.desc_host, t.every ? nullptr : t.idx.data(), t.n};
  }

  // Several stages, at submit: each stage's rows (services: its service's packets), the first stage with rows and the
  // last. A batch without any (services: every packet matched none) runs stage 0 on no rows.
  void plan(ClSlot& s) {
    s.cur.assign(s.pkts.begin(), s.pkts.begin() + s.n);
    s.k = stages_;
    s.last = 0;
    for (uint32_t k = 0; k < stages_; ++k) {
      Stage& t = s.st[k];
      const uint8_t svc = s.app->stage_service(k);
      t.every = svc == kNoSvc;
      t.idx.clear();
      if (!t.every)
        for (uint32_t i = 0; i < s.n; ++i)
          if (kernels::stage_takes(svc, s.cur[i])) t.idx.push_back(i);
      t.n = t.every ? s.n : static_cast<uint32_t>(t.idx.size());
      if (t.n == 0) continue;
      s.k = std::min(s.k, k);
      s.last = k;
    }
    if (s.k == stages_) s.k = 0;
    s.first = s.k;
    s.fin = s.k;
  }

  // Whether stage k's kernel runs in slot s's batch: it has rows, or it is the first (a batch without rows runs it on
  // none). Mapped: its descriptors are unmapped for the kernel and its results mapped until the batch is reaped.
  static bool runs(const ClSlot& s, uint32_t k) { return k == s.first || s.st[k].n > 0; }

  // The stage after k with rows in slot s's batch (stages_: none).
  uint32_t next_stage(const ClSlot& s, uint32_t k) const {
    while (++k < stages_ && s.st[k].n == 0) {}
    return k;
  }

  // Stage k's finish on its rows of s.cur, and its rows as they are now in s.after[k].
  void finish_stage(ClSlot& s, uint32_t k) {
    Stage& t = s.st[k];
    std::vector<Packet>& sub = s.after[k];
    const App& a = s.app->chain_app(k);
    if (t.every) {
      a.finish(s.cur, view(s, k));
      sub.assign(s.cur.begin(), s.cur.end());
      return;
    }
    sub.clear();
    for (uint32_t j = 0; j < t.n; ++j) sub.push_back(s.cur[t.idx[j]]);
    a.finish(sub, view(s, k));
    for (uint32_t j = 0; j < t.n; ++j) s.cur[t.idx[j]] = sub[j];
  }

  void set_args(ClSlot& s, uint32_t k, uint32_t n) {
    cl::Kernel& kn = kernels_[k];
    kn.setArg(0, s.st[k].desc_buf);
    kn.setArg(1, n);
    kn.setArg(2, s.pkts_buf);
    kn.setArg(3, s.st[k].out_buf);
  }

  // Runs app s.k's kernel on the slot's batch: its descriptors (and, for the first app, the gathered packets) are in
  // their host memory. After the last app, the results (and the packets, where an app writes back) come back and,
  // when mapped, every descriptor buffer and the packets stay mapped for the slot's next batch. Errors: the app's
  // stage(); cl::Error is thrown.
  Status launch(ClSlot& s) {
    const uint32_t k = s.k;
    Stage& t = s.st[k];
    const uint32_t n = t.n;
    const App& app = s.app->chain_app(k);
    const kernels::AppProgram& part = prog_->stage(k);
    if (Status st = part.tables->stage(kernels_[k], prog_->context, t.desc_host, n, t.app_stage); !st.is_ok()) {
      if (unified_) {
        s.queue.enqueueUnmapMemObject(t.desc_buf, t.desc_host);
        if (k == s.first) s.queue.enqueueUnmapMemObject(s.pkts_buf, s.pkts_host);
      }
      return st;
    }
    const size_t used = std::max<size_t>(s.pkts_bytes, kernels::kSliceAlign);
    if (unified_) {
      s.queue.enqueueUnmapMemObject(t.desc_buf, t.desc_host);
      if (k == s.first) s.queue.enqueueUnmapMemObject(s.pkts_buf, s.pkts_host);
    } else {
      if (n > 0) s.queue.enqueueWriteBuffer(t.desc_buf, CL_FALSE, 0, sizeof(Desc) * n, t.desc_host);
      if (k == s.first) s.queue.enqueueWriteBuffer(s.pkts_buf, CL_FALSE, 0, used, s.pkts_host);
    }
    set_args(s, k, n);
    inject(fault::ClPoint::kEnqueue, CL_OUT_OF_RESOURCES, "clEnqueueNDRangeKernel");
    const kernels::LaunchSize ls = kernels::launch_size(prog_->device, std::max<uint32_t>(n, 1));
    s.queue.enqueueNDRangeKernel(kernels_[k], cl::NullRange, ls.global, ls.local);
    const size_t out_used = std::max<size_t>(size_t{n} * app.result_bytes(), 16);
    const bool last = k == s.last;
    if (unified_) {
      t.out_host = static_cast<uint8_t*>(
          s.queue.enqueueMapBuffer(t.out_buf, CL_FALSE, CL_MAP_READ, 0, out_used, nullptr, last ? nullptr : &s.done));
      if (last) {
        // Whole and for writing too: the next batch of this slot writes its descriptors and slices into these maps.
        constexpr cl_map_flags kRw = CL_MAP_READ | CL_MAP_WRITE;
        s.pkts_host = static_cast<uint8_t*>(s.queue.enqueueMapBuffer(s.pkts_buf, CL_FALSE, kRw, 0, pkts_bytes_));
        for (uint32_t j = 0; j <= k; ++j)  // the stages skipped in this batch stayed mapped
          if (runs(s, j))
            s.st[j].desc_host = static_cast<Desc*>(s.queue.enqueueMapBuffer(
                s.st[j].desc_buf, CL_FALSE, kRw, 0, desc_bytes_, nullptr, j == k ? &s.done : nullptr));
      }
    } else {
      if (last && s.app->writes_back()) s.queue.enqueueReadBuffer(s.pkts_buf, CL_FALSE, 0, used, s.pkts_host);
      s.queue.enqueueReadBuffer(t.out_buf, CL_FALSE, 0, out_used, t.out_host, nullptr, &s.done);
    }
    s.queue.flush();
    return Status::ok();
  }

  // The finishes not run yet of the apps up to k that ran in slot s, in order.
  void finish_through(ClSlot& s, uint32_t k) {
    for (; s.fin <= k; ++s.fin)
      if (runs(s, s.fin)) finish_stage(s, s.fin);
  }

  // App s.k's kernel, then, while the app that was launched last changes nothing in its finish (App::
  // finish_changes_nothing: md5, dpi) and every older batch has started the next app (`older`, as advance_later), the
  // next app's kernel at once, behind it on the slot's in-order queue: its descriptors do not wait for a finish, so
  // the device runs the two without a round trip to the host between them. The finishes run later, in order
  // (finish_through). cl::Error is thrown.
  Status launch_run(ClSlot& s, uint32_t older) {
    for (;;) {
      HPR_RETURN_IF_ERROR(launch(s));
      if (s.k == s.last || !s.app->chain_app(s.k).finish_changes_nothing()) return Status::ok();
      const uint32_t next = next_stage(s, s.k);
      if (older < next) return Status::ok();
      s.k = next;
      kernels::stage_descs(s.app->chain_app(s.k), s.cur, s.shift.data(), rows(s, s.k));
    }
  }

  // App s.k has run on slot s (not its last): the finishes so far, then the next stage's kernel on the bytes the apps
  // before it left on the device. cl::Error is thrown.
  Status next_app(ClSlot& s, uint32_t older) {
    finish_through(s, s.k);
    s.k = next_stage(s, s.k);
    kernels::stage_descs(s.app->chain_app(s.k), s.cur, s.shift.data(), rows(s, s.k));
    return launch_run(s, older);
  }

  // The earliest app batch s has yet to pass (one at its last app: none, stages_).
  uint32_t pending(const ClSlot& s) const { return s.k == s.last ? stages_ : s.k; }
  // The earliest app that one of the i oldest batches has yet to pass.
  uint32_t older_than(uint32_t i) const {
    uint32_t older = stages_;
    for (uint32_t j = 0; j < i; ++j) older = std::min(older, pending(*slots_[(head_ + j) % slots_.size()]));
    return older;
  }

  // The batches after the oldest move on to their next app as soon as their kernel is done, so that the device does
  // not wait for the host to reap the oldest batch first. Each app still sees the batches in order: a batch's app k+1
  // starts only after every older batch's has. cl::Error is thrown.
  Status advance_later() {
    uint32_t older = pending(*slots_[head_]);
    for (uint32_t i = 1; i < count_; ++i) {
      ClSlot& s = *slots_[(head_ + i) % slots_.size()];
      if (s.k < s.last && older >= next_stage(s, s.k) &&
          s.done.getInfo<CL_EVENT_COMMAND_EXECUTION_STATUS>() == CL_COMPLETE)
        HPR_RETURN_IF_ERROR(next_app(s, older));
      older = std::min(older, pending(s));
    }
    return Status::ok();
  }

  Status cl_failed(const cl::Error& err) const {
    return error(Code::kUnavailable, "{} failed on '{}': {}", err.what(), prog_->device.getInfo<CL_DEVICE_NAME>(),
                 cl_error_name(err.err()));
  }

  const App* app_;
  std::shared_ptr<const AppVersion> version_;  // null until the first adopt: app_ lives as long as the executor
  std::shared_ptr<kernels::AppProgram> prog_;
  bool unified_;
  ExecutorConfig cfg_;
  std::vector<cl::Kernel> kernels_;  // one per app the batch runs (AppProgram::make_kernels)
  uint32_t stages_ = 1;
  std::vector<std::unique_ptr<ClSlot>> slots_;
  size_t head_ = 0;
  uint32_t count_ = 0;
  size_t desc_bytes_ = 0, pkts_bytes_ = 0;
  fault::ClFault fault_;
  uint64_t fault_calls_ = 0;
};

}  // namespace

Result<std::unique_ptr<Executor>> make_cl_executor(const App& app, std::shared_ptr<kernels::AppProgram> prog,
                                                   bool host_unified, const ExecutorConfig& cfg) {
  return ClExecutor::create(app, std::move(prog), host_unified, cfg);
}

}  // namespace hpr
