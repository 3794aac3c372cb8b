// Native and OpenCL executors (see lane.hpp).
#include <algorithm>
#include <cstring>

#include "hpr/clock.hpp"
#include "kernels/batch_bytes.hpp"
#include "pipeline/fault_injection.hpp"
#include "pipeline/lane.hpp"

namespace hpr {
namespace {

using kernels::App;
using kernels::BatchView;
using kernels::Desc;

// One batch's packets, descriptors and host-side views, and the app (version) it was submitted with.
struct Slot {
  std::vector<Packet> pkts;
  uint32_t n = 0;
  uint32_t pkts_bytes = 0;  // gathered bytes
  uint64_t submit_ns = 0;
  const App* app = nullptr;
  std::shared_ptr<const AppVersion> version;  // keeps `app` (and an OpenCL lane's tables) alive until the reap
};

// A new version must keep the batch layout the executor's buffers were sized for.
Status same_layout(const App& a, const App& b) {
  if (a.name() != b.name() || a.max_slice_bytes() != b.max_slice_bytes() || a.result_bytes() != b.result_bytes() ||
      a.writes_back() != b.writes_back())
    return error(Code::kInvalidArgument, "the new {} app's batch layout differs from the running one's", b.name());
  return Status::ok();
}

size_t slice_buffer_bytes(const App& app, uint32_t max_batch) {
  return std::max<size_t>(kernels::slice_capacity(app, max_batch), kernels::kSliceAlign);
}
size_t out_buffer_bytes(const App& app, uint32_t max_batch) {
  return std::max<size_t>(size_t{max_batch} * app.result_bytes(), 16);
}

class NativeExecutor final : public Executor {
 public:
  NativeExecutor(const App& app, const ExecutorConfig& cfg)
      : app_(&app),
        desc_(size_t{cfg.max_batch} * app.desc_slots()),
        slices_(desc_.size()),
        out_(out_buffer_bytes(app, cfg.max_batch)) {
    slot_.pkts.resize(cfg.max_batch);
  }
  std::string describe() const override { return "native"; }
  uint32_t slots() const override { return 1; }
  uint32_t outstanding() const override { return full_ ? 1 : 0; }

  Status submit(const Packet* pkts, uint32_t n) override {
    std::copy(pkts, pkts + n, slot_.pkts.begin());
    slot_.n = n;
    slot_.app = app_;
    slot_.version = version_;
    full_ = true;
    return Status::ok();
  }

  Result<bool> reap(bool, std::vector<Packet>& done, const BatchFn& on_batch) override {
    if (!full_) return false;
    std::span<Packet> pk(slot_.pkts.data(), slot_.n);
    const App& app = *slot_.app;
    // In place: the app reads and rewrites each slice in its frame (no gather, no scatter back).
    app.run_in_place(pk, desc_.data(), slices_.data(), out_.data(),
                     [&](uint32_t k, const App& a, std::span<const Packet> p, const BatchView& v) { on_batch(p, v, a, k); });
    done.insert(done.end(), pk.begin(), pk.end());
    full_ = false;
    slot_.version.reset();
    return true;
  }
  Status adopt(std::shared_ptr<const AppVersion> v, size_t) override {
    HPR_RETURN_IF_ERROR(same_layout(*app_, *v->app));
    app_ = v->app.get();
    version_ = std::move(v);
    return Status::ok();
  }
  void take_outstanding(std::vector<Packet>& out) override {
    if (full_) out.insert(out.end(), slot_.pkts.begin(), slot_.pkts.begin() + slot_.n);
    full_ = false;
    slot_.version.reset();
  }

 private:
  const App* app_;
  std::shared_ptr<const AppVersion> version_;  // null until the first adopt: app_ lives as long as the executor
  Slot slot_;
  bool full_ = false;
  std::vector<Desc> desc_;
  std::vector<uint8_t*> slices_;
  std::vector<uint8_t> out_;
};

// OpenCL: `in_flight` slots, each with its own in-order queue so that the copies of one batch
// overlap the kernel of another on devices with their own memory. Host-unified devices use one
// CL_MEM_ALLOC_HOST_PTR buffer per array, mapped for the host and unmapped for the kernel: nothing
// is copied. Discrete devices gather into pinned staging buffers and copy only the bytes used
// (descriptors and slices in; results, and slices when the app writes back, out).
class ClExecutor final : public Executor {
 public:
  struct ClSlot : Slot {
    cl::CommandQueue queue;
    cl::Buffer desc_buf, pkts_buf, out_buf;      // what the kernel sees
    cl::Buffer desc_stage, pkts_stage, out_stage;// discrete only: pinned host staging
    cl::Buffer app_stage;                        // what DeviceTables::stage gave this batch (AES: key slots)
    Desc* desc_host = nullptr;
    uint8_t* pkts_host = nullptr;
    uint8_t* out_host = nullptr;
    cl::Event done;
    // Unified: desc_buf and pkts_buf stay mapped (read and write) from the end of one batch to the start of the next,
    // so that submit does not wait for a blocking map to go round the device's queue.
    bool premapped = false;
  };

  static Result<std::unique_ptr<Executor>> create(const App& app, std::shared_ptr<kernels::AppProgram> prog,
                                                  bool unified, const ExecutorConfig& cfg) {
    std::unique_ptr<ClExecutor> e(new ClExecutor(app, std::move(prog), unified, cfg));
    auto k = e->prog_->make_kernel(app);
    if (!k) return k.status();
    e->kernel_ = std::move(*k);
    e->fault_ = fault::cl_fault_from_env();
    if (!e->fault_.applies_to(e->prog_->device.getInfo<CL_DEVICE_NAME>()) ||
        (!cfg.call_faults && e->fault_.point != fault::ClPoint::kCorrupt))
      e->fault_ = {};
    const size_t desc_bytes = sizeof(Desc) * cfg.max_batch;
    const size_t pkts_bytes = slice_buffer_bytes(app, cfg.max_batch);
    const size_t out_bytes = out_buffer_bytes(app, cfg.max_batch);
    try {
      for (uint32_t i = 0; i < std::max<uint32_t>(cfg.in_flight, 1); ++i) {
        auto s = std::make_unique<ClSlot>();
        s->pkts.resize(cfg.max_batch);
        auto& ctx = e->prog_->context;
        s->queue = cl::CommandQueue(ctx, e->prog_->device);
        e->inject(fault::ClPoint::kAlloc, CL_MEM_OBJECT_ALLOCATION_FAILURE, "clCreateBuffer");
        if (unified) {
          s->desc_buf = cl::Buffer(ctx, CL_MEM_READ_ONLY | CL_MEM_ALLOC_HOST_PTR, desc_bytes);
          s->pkts_buf = cl::Buffer(ctx, CL_MEM_READ_WRITE | CL_MEM_ALLOC_HOST_PTR, pkts_bytes);
          s->out_buf = cl::Buffer(ctx, CL_MEM_WRITE_ONLY | CL_MEM_ALLOC_HOST_PTR, out_bytes);
        } else {
          s->desc_buf = cl::Buffer(ctx, CL_MEM_READ_ONLY, desc_bytes);
          s->pkts_buf = cl::Buffer(ctx, CL_MEM_READ_WRITE, pkts_bytes);
          s->out_buf = cl::Buffer(ctx, CL_MEM_WRITE_ONLY, out_bytes);
          s->desc_stage = cl::Buffer(ctx, CL_MEM_ALLOC_HOST_PTR, desc_bytes);
          s->pkts_stage = cl::Buffer(ctx, CL_MEM_ALLOC_HOST_PTR, pkts_bytes);
          s->out_stage = cl::Buffer(ctx, CL_MEM_ALLOC_HOST_PTR, out_bytes);
          // Staging stays mapped for the executor's life (pinned host memory).
          s->desc_host = static_cast<Desc*>(s->queue.enqueueMapBuffer(s->desc_stage, CL_TRUE, CL_MAP_WRITE, 0, desc_bytes));
          s->pkts_host = static_cast<uint8_t*>(
              s->queue.enqueueMapBuffer(s->pkts_stage, CL_TRUE, CL_MAP_READ | CL_MAP_WRITE, 0, pkts_bytes));
          s->out_host = static_cast<uint8_t*>(s->queue.enqueueMapBuffer(s->out_stage, CL_TRUE, CL_MAP_READ, 0, out_bytes));
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
    e->out_bytes_ = out_bytes;
    return std::unique_ptr<Executor>(std::move(e));
  }

  std::string describe() const override { return fmt::format("opencl ({})", unified_ ? "mapped" : "copied"); }

  // PoCL 3.1 keeps a compiled work-group function per kernel and grid width (one for the widest grid seen so far is
  // made when a launch is wider than every earlier one), but a finished launch releases the first one with the same
  // kernel and work-group size, whichever it ran: when a wider launch (a new entry, put first) finishes before an
  // older launch still running on another queue, that older launch's release then finds the new entry at 0 and PoCL
  // aborts (`pocl_release_dlhandle_cache: Assertion found->ref_count > 0`; seen with two workers' lanes on one
  // device, once in 5 runs). One launch at the widest grid this executor will use, before any other, and every later
  // launch takes that entry. n = 0: every kernel returns at once.
  void widest_launch_first(uint32_t max_batch) {
    ClSlot& s = *slots_.front();
    kernel_.setArg(0, s.desc_buf);
    kernel_.setArg(1, 0u);
    kernel_.setArg(2, s.pkts_buf);
    kernel_.setArg(3, s.out_buf);
    const kernels::LaunchSize ls = kernels::launch_size(prog_->device, max_batch);
    s.queue.enqueueNDRangeKernel(kernel_, cl::NullRange, ls.global, ls.local);
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

  Status submit(const Packet* pkts, uint32_t n) override {
    ClSlot& s = *slots_[(head_ + count_) % slots_.size()];
    std::copy(pkts, pkts + n, s.pkts.begin());
    s.n = n;
    s.submit_ns = monotonic_ns();
    s.app = app_;
    s.version = version_;
    const App& app = *s.app;
    ++count_;  // outstanding from here on, so a failure hands these packets back
    try {
      if (unified_) {
        inject(fault::ClPoint::kMap, CL_MAP_FAILURE, "clEnqueueMapBuffer");
        if (s.premapped) {
          s.premapped = false;  // mapped since the last batch of this slot completed
        } else {
          s.desc_host = static_cast<Desc*>(s.queue.enqueueMapBuffer(s.desc_buf, CL_TRUE, CL_MAP_WRITE_INVALIDATE_REGION, 0, desc_bytes_));
          s.pkts_host = static_cast<uint8_t*>(s.queue.enqueueMapBuffer(s.pkts_buf, CL_TRUE, CL_MAP_WRITE_INVALIDATE_REGION, 0, pkts_bytes_));
        }
      }
      s.pkts_bytes = kernels::gather_into(app, {s.pkts.data(), n}, s.desc_host, s.pkts_host, pkts_bytes_);
      if (Status st = prog_->tables->stage(kernel_, prog_->context, s.desc_host, n, s.app_stage); !st.is_ok()) {
        if (unified_) {
          s.queue.enqueueUnmapMemObject(s.desc_buf, s.desc_host);
          s.queue.enqueueUnmapMemObject(s.pkts_buf, s.pkts_host);
        }
        return st;
      }
      const size_t used = std::max<size_t>(s.pkts_bytes, kernels::kSliceAlign);
      if (unified_) {
        s.queue.enqueueUnmapMemObject(s.desc_buf, s.desc_host);
        s.queue.enqueueUnmapMemObject(s.pkts_buf, s.pkts_host);
      } else {
        s.queue.enqueueWriteBuffer(s.desc_buf, CL_FALSE, 0, sizeof(Desc) * n, s.desc_host);
        s.queue.enqueueWriteBuffer(s.pkts_buf, CL_FALSE, 0, used, s.pkts_host);
      }
      kernel_.setArg(0, s.desc_buf);
      kernel_.setArg(1, n);
      kernel_.setArg(2, s.pkts_buf);
      kernel_.setArg(3, s.out_buf);
      inject(fault::ClPoint::kEnqueue, CL_OUT_OF_RESOURCES, "clEnqueueNDRangeKernel");
      kernels::LaunchSize ls = kernels::launch_size(prog_->device, n);
      s.queue.enqueueNDRangeKernel(kernel_, cl::NullRange, ls.global, ls.local);
      const size_t out_used = std::max<size_t>(size_t{n} * app.result_bytes(), 16);
      if (unified_) {
        // Whole and for writing too: the next batch of this slot writes its descriptors and slices into these maps.
        constexpr cl_map_flags kRw = CL_MAP_READ | CL_MAP_WRITE;
        s.out_host = static_cast<uint8_t*>(s.queue.enqueueMapBuffer(s.out_buf, CL_FALSE, CL_MAP_READ, 0, out_used));
        s.pkts_host = static_cast<uint8_t*>(s.queue.enqueueMapBuffer(s.pkts_buf, CL_FALSE, kRw, 0, pkts_bytes_));
        s.desc_host = static_cast<Desc*>(s.queue.enqueueMapBuffer(s.desc_buf, CL_FALSE, kRw, 0, desc_bytes_, nullptr, &s.done));
      } else {
        if (app.writes_back()) s.queue.enqueueReadBuffer(s.pkts_buf, CL_FALSE, 0, used, s.pkts_host);
        s.queue.enqueueReadBuffer(s.out_buf, CL_FALSE, 0, out_used, s.out_host, nullptr, &s.done);
      }
      s.queue.flush();
    } catch (const cl::Error& err) {
      return error(Code::kUnavailable, "{} failed on '{}': {}", err.what(), prog_->device.getInfo<CL_DEVICE_NAME>(),
                   cl_error_name(err.err()));
    }
    return Status::ok();
  }

  Result<bool> reap(bool wait, std::vector<Packet>& done, const BatchFn& on_batch) override {
    if (count_ == 0) return false;
    ClSlot& s = *slots_[head_];
    const App& app = *s.app;
    try {
      cl_int st = s.done.getInfo<CL_EVENT_COMMAND_EXECUTION_STATUS>();
      if (st < 0) return error(Code::kUnavailable, "batch failed on '{}': {}", prog_->device.getInfo<CL_DEVICE_NAME>(), cl_error_name(st));
      if (st != CL_COMPLETE) {
        if (!wait) return false;
        s.done.wait();
      }
      std::span<Packet> pk(s.pkts.data(), s.n);
      BatchView v{s.desc_host, s.n, s.pkts_host, s.out_host};
      if (fault_.point == fault::ClPoint::kCorrupt && ++fault_calls_ >= fault_.nth && s.n > 0) {
        if (fault_calls_ == fault_.nth)
          spdlog::warn("fault injected: '{}' computes wrong results from this batch on (HPR_FAULT_CL)",
                       prog_->device.getInfo<CL_DEVICE_NAME>());
        s.out_host[0] ^= 0x5a;
      }
      kernels::scatter_back(app, pk, v);
      app.finish(pk, v);
      on_batch(pk, v, app, 0);
      done.insert(done.end(), pk.begin(), pk.end());
      if (unified_) {
        s.queue.enqueueUnmapMemObject(s.out_buf, s.out_host);
        s.premapped = true;  // desc and pkts stay mapped for the slot's next batch
      }
    } catch (const cl::Error& err) {
      return error(Code::kUnavailable, "{} failed on '{}': {}", err.what(), prog_->device.getInfo<CL_DEVICE_NAME>(),
                   cl_error_name(err.err()));
    }
    s.version.reset();
    head_ = (head_ + 1) % slots_.size();
    --count_;
    return true;
  }

  void take_outstanding(std::vector<Packet>& out) override {
    for (; count_ > 0; --count_) {
      ClSlot& s = *slots_[head_];
      out.insert(out.end(), s.pkts.begin(), s.pkts.begin() + s.n);
      s.version.reset();
      head_ = (head_ + 1) % slots_.size();
    }
  }

  // The new tables are bound to a kernel of their own; batches in flight keep the old kernel's arguments (fixed at
  // their enqueue) and, through their slot's version, the old tables.
  Status adopt(std::shared_ptr<const AppVersion> v, size_t lane) override {
    HPR_RETURN_IF_ERROR(same_layout(*app_, *v->app));
    if (lane >= v->programs.size() || !v->programs[lane])
      return error(Code::kInvalidArgument, "the new version has no program for this OpenCL lane");
    if (lane < v->kernels.size() && v->kernels[lane]() != nullptr) {
      kernel_ = v->kernels[lane];
    } else {
      auto k = v->programs[lane]->make_kernel(*v->app);
      if (!k) return k.status();
      kernel_ = std::move(*k);
    }
    prog_ = v->programs[lane];
    app_ = v->app.get();
    version_ = std::move(v);
    return Status::ok();
  }

 private:
  ClExecutor(const App& app, std::shared_ptr<kernels::AppProgram> prog, bool unified, const ExecutorConfig& cfg)
      : app_(&app), prog_(std::move(prog)), unified_(unified), cfg_(cfg) {}
  const App* app_;
  std::shared_ptr<const AppVersion> version_;  // null until the first adopt: app_ lives as long as the executor
  std::shared_ptr<kernels::AppProgram> prog_;
  bool unified_;
  ExecutorConfig cfg_;
  cl::Kernel kernel_;
  std::vector<std::unique_ptr<ClSlot>> slots_;
  size_t head_ = 0;
  uint32_t count_ = 0;
  size_t desc_bytes_ = 0, pkts_bytes_ = 0, out_bytes_ = 0;
  fault::ClFault fault_;
  uint64_t fault_calls_ = 0;
};

}  // namespace

std::unique_ptr<Executor> make_native_executor(const App& app, const ExecutorConfig& cfg) {
  return std::make_unique<NativeExecutor>(app, cfg);
}

Result<std::unique_ptr<Executor>> make_cl_executor(const App& app, std::shared_ptr<kernels::AppProgram> prog,
                                                   bool host_unified, const ExecutorConfig& cfg) {
  return ClExecutor::create(app, std::move(prog), host_unified, cfg);
}

}  // namespace hpr
