// AesApp and KeyTable (see aes_app.hpp). Key files: key_file.cpp; key derivation: key_derive.cpp.
#include <algorithm>
#include <cstring>
#include <system_error>
#include <thread>

#include "kernels/aes/aes_app.hpp"
#include "kernels/aes/aes_tables.hpp"

namespace hpr::kernels::aes {

// ------------------------------------------------------------------ KeyTable
KeyTable::KeyTable(uint32_t capacity) : sched_(std::max<uint32_t>(capacity, 1)), valid_(std::max<uint32_t>(capacity, 1), 0) {}

Status KeyTable::set_key(uint32_t flow, const Key& key) {
  if (flow >= capacity())
    return error(Code::kInvalidArgument, "flow id {} >= key table capacity {}", flow, capacity());
  sched_[flow] = expand_key(key);
  if (valid_[flow] == 0) ++count_;
  valid_[flow] = 1;
  return Status::ok();
}

void KeyTable::set_keys(uint32_t first, uint32_t n, unsigned threads, const std::function<KeyFn()>& make_key_of) {
  const uint64_t end = std::min<uint64_t>(uint64_t{first} + n, capacity());
  if (first >= end) return;
  const uint64_t total = end - first;
  constexpr uint64_t kMinPerPart = 16384;  // below this a thread costs more than it saves
  const auto parts = static_cast<unsigned>(std::clamp<uint64_t>(threads, 1, (total + kMinPerPart - 1) / kMinPerPart));
  std::vector<uint32_t> fresh(parts, 0);
  auto run_part = [&](unsigned p) {
    const uint64_t lo = first + total * p / parts, hi = first + total * (p + 1) / parts;
    KeyFn key_of = make_key_of();
    uint32_t added = 0;
    for (uint64_t f = lo; f < hi; ++f) {
      sched_[f] = expand_key(key_of(static_cast<uint32_t>(f)));
      added += valid_[f] == 0;
      valid_[f] = 1;
    }
    fresh[p] = added;
  };
  std::vector<std::thread> pool;
  for (unsigned p = 1; p < parts; ++p) {
    try {
      pool.emplace_back(run_part, p);
    } catch (const std::system_error&) {
      run_part(p);  // no thread to be had: this part on the calling thread
    }
  }
  run_part(0);
  for (auto& t : pool) t.join();
  for (uint32_t a : fresh) count_ += a;
}

void KeyTable::clear_key(uint32_t flow) {
  if (flow >= capacity() || valid_[flow] == 0) return;
  valid_[flow] = 0;
  sched_[flow] = RoundKeys{};
  --count_;
}

// ------------------------------------------------------------------ the app
namespace {

class AesDeviceTables final : public DeviceTables {
 public:
  AesDeviceTables(cl::Buffer sched, cl::Buffer valid, uint32_t capacity)
      : sched_(std::move(sched)), valid_(std::move(valid)), capacity_(capacity) {}
  Status bind(cl::Kernel& kernel) override {
    try {
      kernel.setArg(4, sched_);
      kernel.setArg(5, valid_);
      kernel.setArg(6, capacity_);
    } catch (const cl::Error& e) {
      return error(Code::kUnavailable, "aes: setting key table arguments: {} ({})", e.what(), e.err());
    }
    return Status::ok();
  }

 private:
  cl::Buffer sched_, valid_;
  cl_uint capacity_;
};

std::string table_source() {
  std::string s = "__constant uint aes_te0[256] = {";
  for (int i = 0; i < 256; ++i) s += fmt::format("{}0x{:08x}u", i % 8 == 0 ? "\n  " : "", kTables.te0[i]) + ",";
  s += "\n};\n__constant uchar aes_sbox[256] = {";
  for (int i = 0; i < 256; ++i) s += fmt::format("{}0x{:02x}", i % 16 == 0 ? "\n  " : "", kTables.sbox[i]) + ",";
  s += "\n};\n";
  return s;
}

}  // namespace

AesApp::AesApp(std::shared_ptr<const KeyTable> keys, AesOptions options)
    : keys_(std::move(keys)), options_(options) {}

Slice AesApp::slice(const Packet& p) const {
  if (p.payload_off == kNoOffset) return Slice{0, 0, 0};
  return Slice{p.payload_off, p.payload_len, 0};
}

[[gnu::flatten]] void AesApp::slices_in_place(std::span<const Packet> pkts, Desc* desc, uint8_t** slices) const {
  slices_in_place_of(*this, pkts, desc, slices);
}

std::string AesApp::kernel_source() const {
  std::string src(embedded_source("hpr_desc"));
  src += "\n";
  src += table_source();
  src += embedded_source("aes");
  return src;
}

std::string AesApp::build_options() const {
  return options_.iv == IvMode::kCarried ? "-DHPR_AES_IV_CARRIED" : "";
}

Result<std::unique_ptr<DeviceTables>> AesApp::make_device_tables(const cl::Context& ctx,
                                                                 const cl::CommandQueue&) const {
  try {
    const uint32_t cap = keys_->capacity();
    cl::Buffer sched(ctx, CL_MEM_READ_ONLY | CL_MEM_COPY_HOST_PTR, size_t{cap} * kScheduleBytes,
                     const_cast<uint8_t*>(keys_->schedule_bytes()));
    cl::Buffer valid(ctx, CL_MEM_READ_ONLY | CL_MEM_COPY_HOST_PTR, cap, const_cast<uint8_t*>(keys_->valid_bytes()));
    return std::unique_ptr<DeviceTables>(std::make_unique<AesDeviceTables>(std::move(sched), std::move(valid), cap));
  } catch (const cl::Error& e) {
    return error(Code::kUnavailable, "aes: uploading the key table ({} flows): {} ({})", keys_->capacity(), e.what(),
                 e.err());
  }
}

void AesApp::finish(std::span<Packet> pkts, const BatchView& batch) const {
  uint64_t enc = 0, sh = 0, miss = 0, empty = 0;
  const uint32_t n = std::min<uint32_t>(batch.n, static_cast<uint32_t>(pkts.size()));
  for (uint32_t i = 0; i < n; ++i) {
    if (pkts[i].drop != DropReason::kNone) continue;  // dropped before the batch (parser): counted there
    uint32_t r;
    std::memcpy(&r, batch.out + 4 * size_t{i}, 4);
    switch (r) {
      case kEncrypted: ++enc; break;
      case kShort: ++sh; break;
      case kEmpty: ++empty; break;
      default:  // kKeyMissing (and anything unexpected: never forward a packet we did not encrypt)
        ++miss;
        pkts[i].drop = DropReason::kKeyMissing;
        break;
    }
  }
  encrypted_.fetch_add(enc, std::memory_order_relaxed);
  short_.fetch_add(sh, std::memory_order_relaxed);
  key_missing_.fetch_add(miss, std::memory_order_relaxed);
  empty_.fetch_add(empty, std::memory_order_relaxed);
}

uint64_t AesApp::count_events(const BatchView& batch) const {
  uint64_t n = 0;
  for (uint32_t i = 0; i < batch.n; ++i) {
    uint32_t r;
    std::memcpy(&r, batch.out + 4 * size_t{i}, 4);
    n += r == kEncrypted;
  }
  return n;
}

Counters AesApp::counters() const {
  return Counters{encrypted_.load(std::memory_order_relaxed), short_.load(std::memory_order_relaxed),
                  key_missing_.load(std::memory_order_relaxed), empty_.load(std::memory_order_relaxed)};
}

}  // namespace hpr::kernels::aes
