#include "kernels/runner.hpp"

#include <algorithm>
#include <cstring>

namespace hpr::kernels {

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

uint32_t gather_chain(const App& chain, std::span<const Packet> pkts, int32_t* shift, uint8_t* buf, size_t buf_bytes) {
  const uint32_t stages = chain.device_stages();
  uint32_t largest[kMaxAppSlots];
  uint8_t svc[kMaxAppSlots];
  for (uint32_t k = 0; k < stages; ++k) {
    largest[k] = chain.chain_app(k).max_slice_bytes();
    svc[k] = chain.stage_service(k);
  }
  uint32_t off = 0;
  for (size_t i = 0; i < pkts.size(); ++i) {
    const Packet& p = pkts[i];
    uint32_t lo = UINT32_MAX, hi = 0, at = UINT32_MAX, at_largest = 0;  // at: the slice to align (the largest app's)
    if (p.drop == DropReason::kNone) {
      for (uint32_t k = 0; k < stages; ++k) {
        if (!stage_takes(svc[k], p)) continue;
        const Slice s = chain.chain_app(k).slice(p);
        if (s.len == 0) continue;
        lo = std::min<uint32_t>(lo, s.offset);
        hi = std::max<uint32_t>(hi, s.offset + s.len);
        if (at == UINT32_MAX || largest[k] > at_largest) at = s.offset, at_largest = largest[k];
      }
    }
    const uint32_t base = hi == 0 ? off : off + (kSliceAlign - (at - lo) % kSliceAlign) % kSliceAlign;
    if (hi == 0 || base + (hi - lo) > buf_bytes) {  // nothing to gather (or, never with a buffer sized as above, no room)
      shift[i] = kNotGathered;
      continue;
    }
    std::memcpy(buf + base, p.data + lo, hi - lo);
    shift[i] = static_cast<int32_t>(base) - static_cast<int32_t>(lo);
    off = align_slice(base + (hi - lo));
  }
  return off;
}

void stage_descs(const App& app, std::span<const Packet> pkts, const int32_t* shift, const StageRows& rows) {
  for (uint32_t j = 0; j < rows.n; ++j) {
    const uint32_t i = rows.idx != nullptr ? rows.idx[j] : j;
    const Packet& p = pkts[i];
    Slice s = packet_slice(app, p);
    if (shift[i] == kNotGathered) s.len = 0;  // its slices were empty when gathered: they still are
    rows.desc[j] = Desc{s.len != 0 ? static_cast<uint32_t>(s.offset + shift[i]) : 0, s.len, s.flags, p.flow_id, p.seq};
  }
}

void scatter_chain(const App& chain, std::span<Packet> pkts, const uint8_t* buf, const int32_t* shift,
                   std::span<const StageRows> stages) {
  for (uint32_t k = 0; k < stages.size(); ++k) {
    if (!chain.chain_app(k).writes_back()) continue;
    const StageRows& r = stages[k];
    for (uint32_t j = 0; j < r.n; ++j) {
      const uint32_t i = r.idx != nullptr ? r.idx[j] : j;
      const Desc& d = r.desc[j];
      if (d.len != 0) std::memcpy(pkts[i].data + (static_cast<int64_t>(d.off) - shift[i]), buf + d.off, d.len);
    }
  }
}

LaunchSize launch_size(const cl::Device& dev, uint32_t n) {
  size_t wg = std::min<size_t>(kWorkGroup, dev.getInfo<CL_DEVICE_MAX_WORK_GROUP_SIZE>());
  size_t global = (static_cast<size_t>(n) + wg - 1) / wg * wg;
  return {cl::NDRange(global), cl::NDRange(wg)};
}

namespace {

// `app` built on an existing context and queue (a chain: each app's program, the parts).
Result<std::shared_ptr<AppProgram>> build_on(const App& app, const cl::Context& ctx, const cl::Device& dev,
                                             const cl::CommandQueue& queue) {
  auto p = std::make_shared<AppProgram>();
  p->context = ctx;
  p->device = dev;
  p->queue = queue;
  if (app.device_stages() > 1) {
    for (uint32_t k = 0; k < app.device_stages(); ++k) {
      const App& a = app.chain_app(k);
      // An app whose kernel an earlier part built (services: ipv4 in several chains) shares that program.
      uint32_t same = 0;
      while (same < k && (app.chain_app(same).kernel_source() != a.kernel_source() ||
                          app.chain_app(same).build_options() != a.build_options()))
        ++same;
      auto part = same < k ? p->parts[same]->with_tables_of(a) : build_on(a, ctx, dev, queue);
      if (!part) return error(part.status().code(), "{}: {}", a.name(), part.status().message());
      p->parts.push_back(std::move(*part));
    }
    return p;
  }
  auto prog = build_program(ctx, dev, app.kernel_source(), app.build_options());
  if (!prog) return prog.status();
  p->program = std::move(*prog);
  auto tables = app.make_device_tables(ctx, queue);
  if (!tables) return tables.status();
  p->tables = std::move(*tables);
  return p;
}

}  // namespace

Result<std::shared_ptr<AppProgram>> AppProgram::create(const App& app, const cl::Device& dev) {
  cl::Context ctx;
  cl::CommandQueue queue;
  try {
    ctx = cl::Context(dev);
    queue = cl::CommandQueue(ctx, dev);
  } catch (const cl::Error& e) {
    return error(Code::kUnavailable, "cannot create a context and queue on '{}': {}", dev.getInfo<CL_DEVICE_NAME>(),
                 cl_error_name(e.err()));
  }
  return build_on(app, ctx, dev, queue);
}

Result<std::shared_ptr<AppProgram>> AppProgram::with_parts(
    uint32_t n, const std::function<Result<std::shared_ptr<AppProgram>>(uint32_t)>& make) const {
  auto p = std::make_shared<AppProgram>();
  p->context = context;
  p->device = device;
  p->queue = queue;
  for (uint32_t k = 0; k < n; ++k) {
    auto part = make(k);
    if (!part) return part.status();
    p->parts.push_back(std::move(*part));
  }
  return p;
}

std::shared_ptr<AppProgram> AppProgram::part(uint32_t a, uint32_t b) const {
  if (b == a + 1) return parts[a];
  return *with_parts(b - a, [&](uint32_t k) -> Result<std::shared_ptr<AppProgram>> { return parts[a + k]; });
}

Result<std::shared_ptr<AppProgram>> AppProgram::with_tables_of(const App& app) const {
  if (!parts.empty())
    return with_parts(static_cast<uint32_t>(parts.size()),
                      [&](uint32_t k) { return parts[k]->with_tables_of(app.chain_app(k)); });
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

Result<std::shared_ptr<AppProgram>> AppProgram::for_next(const App& app, const App& next) const {
  if (!parts.empty()) {
    if (next.device_stages() != parts.size())
      return error(Code::kInvalidArgument, "the new {} has {} apps, the running one {}", next.name(),
                   next.device_stages(), parts.size());
    return with_parts(static_cast<uint32_t>(parts.size()),
                      [&](uint32_t k) { return parts[k]->for_next(app.chain_app(k), next.chain_app(k)); });
  }
  if (app.kernel_source() == next.kernel_source() && app.build_options() == next.build_options())
    return with_tables_of(next);
  return build_on(next, context, device, queue);
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

Result<std::vector<cl::Kernel>> AppProgram::make_kernels(const App& app) const {
  std::vector<cl::Kernel> ks;
  for (uint32_t k = 0; k < std::max<size_t>(parts.size(), 1); ++k) {
    const App& a = parts.empty() ? app : app.chain_app(k);
    auto kn = stage(k).make_kernel(a);
    if (!kn) return kn.status();
    ks.push_back(std::move(*kn));
  }
  return ks;
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
