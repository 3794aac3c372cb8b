// The native executor (see lane.hpp): a batch in place on its frames, on the lane's thread.
#include <algorithm>

#include "pipeline/executor_common.hpp"

namespace hpr {
namespace {

using namespace executor_detail;

class NativeExecutor final : public Executor {
 public:
  NativeExecutor(const App& app, const ExecutorConfig& cfg)
      : app_(&app),
        desc_(size_t{cfg.max_batch} * app.desc_slots()),
        slices_(desc_.size()),
        out_(out_buffer_bytes(app, cfg.max_batch)) {
    slot_.pkts.resize(cfg.max_batch);
    slot_.refs.resize(cfg.max_batch);
  }
  std::string describe() const override { return "native"; }
  uint32_t slots() const override { return 1; }
  uint32_t outstanding() const override { return full_ ? 1 : 0; }

  Status submit(Packet* const* refs, uint32_t n) override {
    take_batch(slot_, refs, n);
    slot_.app = app_;
    slot_.version = version_;
    full_ = true;
    return Status::ok();
  }

  Result<bool> reap(bool, std::vector<Packet*>& done, const BatchFn& on_batch) override {
    if (!full_) return false;
    std::span<Packet> pk(slot_.pkts.data(), slot_.n);
    const App& app = *slot_.app;
    // In place: the app reads and rewrites each slice in its frame (no gather, no scatter back).
    app.run_in_place(pk, desc_.data(), slices_.data(), out_.data(),
                     [&](uint32_t k, const App& a, std::span<const Packet> p, const BatchView& v) { on_batch(p, v, a, k); });
    give_batch(slot_, done);
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
  void take_outstanding(std::vector<Packet*>& out) override {
    if (full_) out.insert(out.end(), slot_.refs.begin(), slot_.refs.begin() + slot_.n);
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

}  // namespace

std::unique_ptr<Executor> make_native_executor(const App& app, const ExecutorConfig& cfg) {
  return std::make_unique<NativeExecutor>(app, cfg);
}

}  // namespace hpr
