#include "kernels/runner.hpp"

#include <algorithm>
#include <cstring>

namespace hpr::kernels {
namespace {
// What of `p` the app works on; a packet that already carries a drop reason gets an empty slice.
Slice packet_slice(const App& app, const Packet& p) { return p.drop == DropReason::kNone ? app.slice(p) : Slice{}; }
}  // namespace

uint32_t gather_into(const App& app, std::span<const Packet> pkts, Desc* desc, uint8_t* buf, size_t buf_bytes) {
  uint32_t off = 0;
  for (size_t i = 0; i < pkts.size(); ++i) {
    const Packet& p = pkts[i];
    Slice s = packet_slice(app, p);
    if (off + s.len > buf_bytes) s.len = 0;  // cannot happen when buf is sized by max_slice_bytes
    desc[i] = Desc{off, s.len, s.flags, p.flow_id, p.seq};
    if (s.len != 0) std::memcpy(buf + off, p.data + s.offset, s.len);
    off += align_slice(s.len);
  }
  return off;
}

HostBatch gather(const App& app, std::span<const Packet> pkts) {
  HostBatch b;
  b.desc.resize(pkts.size());
  size_t cap = pkts.size() * align_slice(app.max_slice_bytes()) + kSliceAlign;
  b.pkts.assign(cap, 0);
  uint32_t used = gather_into(app, pkts, b.desc.data(), b.pkts.data(), cap);
  b.pkts.resize(std::max<uint32_t>(used, kSliceAlign));
  b.out.assign(pkts.size() * app.result_bytes(), 0);
  return b;
}

void scatter_back(const App& app, std::span<Packet> pkts, const BatchView& b) {
  if (!app.writes_back()) return;
  for (uint32_t i = 0; i < b.n; ++i) {
    if (b.desc[i].len == 0) continue;
    Slice s = app.slice(pkts[i]);
    std::memcpy(pkts[i].data + s.offset, b.pkts + b.desc[i].off, b.desc[i].len);
  }
}

LaunchSize launch_size(const cl::Device& dev, uint32_t n) {
  size_t wg = std::min<size_t>(kWorkGroup, dev.getInfo<CL_DEVICE_MAX_WORK_GROUP_SIZE>());
  size_t global = (static_cast<size_t>(n) + wg - 1) / wg * wg;
  return {cl::NDRange(global), cl::NDRange(wg)};
}

Result<std::shared_ptr<AppProgram>> AppProgram::create(const App& app, const cl::Device& dev) {
  auto p = std::make_shared<AppProgram>();
  p->device = dev;
  try {
    p->context = cl::Context(dev);
    p->queue = cl::CommandQueue(p->context, dev);
  } catch (const cl::Error& e) {
    return error(Code::kUnavailable, "cannot create a context and queue on '{}': {}", dev.getInfo<CL_DEVICE_NAME>(),
                 cl_error_name(e.err()));
  }
  auto prog = build_program(p->context, dev, app.kernel_source(), app.build_options());
  if (!prog) return prog.status();
  p->program = std::move(*prog);
  auto tables = app.make_device_tables(p->context, p->queue);
  if (!tables) return tables.status();
  p->tables = std::move(*tables);
  return p;
}

Result<std::shared_ptr<AppProgram>> AppProgram::with_tables_of(const App& app) const {
  auto p = std::make_shared<AppProgram>();
  p->context = context;
  p->device = device;
  p->queue = queue;
  p->program = program;
  auto tables = app.make_device_tables(p->context, p->queue);
  if (!tables) return tables.status();
  p->tables = std::move(*tables);
  return p;
}

Result<cl::Kernel> AppProgram::make_kernel(const App& app) const {
  try {
    cl::Kernel k(program, std::string(app.kernel_name()).c_str());
    HPR_RETURN_IF_ERROR(tables->bind(k));
    return k;
  } catch (const cl::Error& e) {
    return error(Code::kUnavailable, "cannot create kernel '{}': {}", app.kernel_name(), cl_error_name(e.err()));
  }
}

Result<DeviceRunner> DeviceRunner::create(const App& app, const cl::Device& dev) {
  auto prog = AppProgram::create(app, dev);
  if (!prog) return prog.status();
  DeviceRunner r;
  r.app_ = &app;
  r.prog_ = std::move(*prog);
  auto k = r.prog_->make_kernel(app);
  if (!k) return k.status();
  r.kernel_ = std::move(*k);
  return r;
}

Status DeviceRunner::run(BatchView& b) {
  if (b.n == 0) return Status::ok();
  const size_t pkts_bytes = std::max<size_t>(b.desc[b.n - 1].off + align_slice(b.desc[b.n - 1].len), kSliceAlign);
  const size_t out_bytes = std::max<size_t>(size_t{b.n} * app_->result_bytes(), 4);
  try {
    auto& ctx = prog_->context;
    auto& q = prog_->queue;
    std::vector<Desc> staged(b.desc, b.desc + b.n);  // stage() may rewrite flow ids: the caller's stay
    cl::Buffer keep;
    HPR_RETURN_IF_ERROR(prog_->tables->stage(kernel_, ctx, staged.data(), b.n, keep));
    cl::Buffer desc(ctx, CL_MEM_READ_ONLY | CL_MEM_COPY_HOST_PTR, sizeof(Desc) * b.n, staged.data());
    cl::Buffer pkts(ctx, CL_MEM_READ_WRITE | CL_MEM_COPY_HOST_PTR, pkts_bytes, b.pkts);
    cl::Buffer out(ctx, CL_MEM_WRITE_ONLY, out_bytes);
    kernel_.setArg(0, desc);
    kernel_.setArg(1, b.n);
    kernel_.setArg(2, pkts);
    kernel_.setArg(3, out);
    LaunchSize ls = launch_size(prog_->device, b.n);
    q.enqueueNDRangeKernel(kernel_, cl::NullRange, ls.global, ls.local);
    if (app_->result_bytes() != 0) q.enqueueReadBuffer(out, CL_FALSE, 0, size_t{b.n} * app_->result_bytes(), b.out);
    if (app_->writes_back()) q.enqueueReadBuffer(pkts, CL_FALSE, 0, pkts_bytes, b.pkts);
    q.finish();
  } catch (const cl::Error& e) {
    return error(Code::kUnavailable, "running '{}' failed: {} in {}", app_->kernel_name(), cl_error_name(e.err()),
                 e.what());
  }
  return Status::ok();
}

}  // namespace hpr::kernels
