#include "pipeline/shared_device.hpp"

#include <fmt/format.h>

#include <algorithm>

#include "kernels/batch_bytes.hpp"

namespace hpr {

// A worker lane's view of the shared device: its own parts, oldest first. Only its owner's thread adds or removes
// parts (under the device's lock); other workers' pumps mark them done.
class SharedClient final : public Executor {
 public:
  SharedClient(std::shared_ptr<SharedDevice> dev, uint32_t id) : dev_(std::move(dev)), id_(id) {}
  ~SharedClient() override {
    std::lock_guard<std::mutex> g(dev_->mu_);
    dev_->clients_[id_] = nullptr;
  }
  std::string describe() const override { return dev_->describe_; }
  uint32_t slots() const override { return dev_->real_->slots(); }
  uint32_t outstanding() const override { return static_cast<uint32_t>(parts_.size()); }
  void set_batch_fn(BatchFn fn) override { fn_ = std::move(fn); }

  // Never fails: a device that failed (before or in this pump) says so at the next reap, after this worker's parts
  // that were done (written back, counted) have been taken back; failing here would hand those back as untouched.
  Status submit(Packet* const* refs, uint32_t n) override {
    std::lock_guard<std::mutex> g(dev_->mu_);
    SharedDevice::Part& p = parts_.emplace_back();
    p.client = id_;
    if (!spare_.empty()) {  // a done part's vector: no allocation per batch
      p.refs = std::move(spare_.back());
      spare_.pop_back();
    }
    p.refs.assign(refs, refs + n);
    for (const Packet* r : p.refs) p.bytes += kernels::slice_bound(dev_->max_slice_, *r);
    if (!dev_->failed_.is_ok()) return Status::ok();
    dev_->pending_.push_back(&p);
    (void)dev_->pump(false);
    return Status::ok();
  }

  Result<bool> reap(bool wait, std::vector<Packet*>& done, const BatchFn&) override {
    if (parts_.empty()) return false;
    // A part another worker reaped is taken without the lock: nothing touches it once it is done.
    if (take_done(done)) return true;
    std::unique_lock<std::mutex> lk(dev_->mu_, std::defer_lock);
    if (wait) lk.lock();
    else if (!lk.try_lock()) return false;  // another worker is at the device: its pump serves this one too
    for (bool waited = false;; waited = true) {
      if (take_done(done)) return true;
      if (!dev_->failed_.is_ok()) return dev_->failed_;  // only once the parts done before the failure are taken
      if (waited && !wait) return false;
      (void)dev_->pump(waited);  // a failure is in failed_; what it reaped before it is done
    }
  }

  Status adopt(std::shared_ptr<const AppVersion> v, size_t lane) override {
    // Every worker's lane adopts each version; the device takes the first of a generation. A batch runs the
    // version the device has when it launches (a worker's part may run a reload's new tables a little before that
    // worker's lane took them).
    std::lock_guard<std::mutex> g(dev_->mu_);
    if (v->generation == dev_->generation_) return Status::ok();
    HPR_RETURN_IF_ERROR(dev_->real_->adopt(v, lane));
    dev_->generation_ = v->generation;
    return Status::ok();
  }

  // After a failure (the device's: nothing of this worker's is on it any more), every part not done, oldest first.
  void take_outstanding(std::vector<Packet*>& out) override {
    std::lock_guard<std::mutex> g(dev_->mu_);
    for (SharedDevice::Part& p : parts_) out.insert(out.end(), p.refs.begin(), p.refs.end());
    std::erase_if(dev_->pending_, [&](const SharedDevice::Part* p) { return p->client == id_; });
    parts_.clear();
  }

 private:
  bool take_done(std::vector<Packet*>& done) {
    SharedDevice::Part& p = parts_.front();
    if (!p.done.load(std::memory_order_acquire)) return false;
    done.insert(done.end(), p.refs.begin(), p.refs.end());
    spare_.push_back(std::move(p.refs));
    parts_.pop_front();
    return true;
  }

  friend class SharedDevice;
  std::shared_ptr<SharedDevice> dev_;
  const uint32_t id_;
  std::deque<SharedDevice::Part> parts_;  // a deque: the device holds pointers to its parts
  std::vector<std::vector<Packet*>> spare_;  // done parts' reference vectors, for the next submits (owner's thread)
  BatchFn fn_;
};

SharedDevice::~SharedDevice() = default;

bool SharedDevice::can_share(const kernels::App& app) {
  return !app.keeps_flow_state() && app.service_count() == 1;
}

Result<std::unique_ptr<Executor>> SharedDevice::client(const kernels::App& app,
                                                       std::shared_ptr<kernels::AppProgram> prog, bool host_unified,
                                                       const ExecutorConfig& cfg) {
  std::lock_guard<std::mutex> g(mu_);
  if (!real_) {
    // The device's batch holds what every worker's lane may close, up to kMaxMerged packets (a lane's own largest
    // batch if that is more): with a lane's size two lanes' full batches could not go in one launch, and the W lanes'
    // batches would take the device's `in_flight` slots one by one.
    ExecutorConfig dc = cfg;
    dc.max_batch = std::max(cfg.max_batch, std::min(cfg.max_batch * workers_, kMaxMerged));
    auto e = make_cl_executor(app, std::move(prog), host_unified, dc);
    if (!e) return e.status();
    real_ = std::move(*e);
    describe_ = fmt::format("{}, shared by {} workers", real_->describe(), workers_);
    max_batch_ = dc.max_batch;
    max_slice_ = app.max_slice_bytes();
    capacity_ = kernels::slice_capacity(app, max_batch_);
    refs_.reserve(max_batch_);
    reaped_.reserve(max_batch_);
  }
  auto c = std::make_unique<SharedClient>(shared_from_this(), static_cast<uint32_t>(clients_.size()));
  clients_.push_back(c.get());
  return std::unique_ptr<Executor>(std::move(c));
}

Status SharedDevice::pump(bool wait) {
  for (bool first = true;; first = false) {
    reaped_.clear();
    auto r = real_->reap(wait && first, reaped_,
                         [this](std::span<const Packet> pk, const kernels::BatchView& v, const kernels::App& app,
                                uint32_t k) { account(pk, v, app, k); });
    if (!r) {
      fail(r.status());
      return failed_;
    }
    if (!*r) break;
    for (Part* p : launched_.front()) p->done.store(true, std::memory_order_release);
    spare_launches_.push_back(std::move(launched_.front()));
    launched_.pop_front();
  }
  while (!pending_.empty() && real_->outstanding() < real_->slots()) HPR_RETURN_IF_ERROR(launch());
  return Status::ok();
}

// The oldest waiting parts that fit the device's batch (always the first: it fits a lane's batch, the same size).
Status SharedDevice::launch() {
  std::vector<Part*> parts;
  if (!spare_launches_.empty()) {
    parts = std::move(spare_launches_.back());
    spare_launches_.pop_back();
    parts.clear();
  }
  refs_.clear();
  size_t bytes = 0;
  while (!pending_.empty()) {
    Part* p = pending_.front();
    if (!parts.empty() && (refs_.size() + p->refs.size() > max_batch_ || bytes + p->bytes > capacity_)) break;
    refs_.insert(refs_.end(), p->refs.begin(), p->refs.end());
    bytes += p->bytes;
    parts.push_back(p);
    pending_.pop_front();
  }
  launched_.push_back(std::move(parts));  // outstanding on the device even if the submit fails (Executor::submit)
  Status st = real_->submit(refs_.data(), static_cast<uint32_t>(refs_.size()));
  if (!st.is_ok()) fail(st);
  return st;
}

// The device failed: nothing on it will complete. Each worker takes back its parts not done (take_outstanding).
void SharedDevice::fail(const Status& st) {
  failed_ = st;
  std::vector<Packet*> dropped;
  real_->take_outstanding(dropped);  // the clients hold these references in their parts
  launched_.clear();
  pending_.clear();
}

// A device batch's accounting, split by the workers' parts: each part's packets and rows go to its lane.
void SharedDevice::account(std::span<const Packet> pk, const kernels::BatchView& v, const kernels::App& app,
                           uint32_t k) {
  uint32_t off = 0;
  for (const Part* p : launched_.front()) {
    const auto n = static_cast<uint32_t>(p->refs.size());
    SharedClient* c = clients_[p->client];
    if (c != nullptr && c->fn_) {
      kernels::BatchView sub = v;
      sub.desc = v.desc + off;
      sub.n = n;
      sub.out = v.out + size_t{off} * app.result_bytes();  // app: the chain's app k
      if (v.slices != nullptr) sub.slices = v.slices + off;
      c->fn_(pk.subspan(off, n), sub, app, k);
    }
    off += n;
  }
}

}  // namespace hpr
