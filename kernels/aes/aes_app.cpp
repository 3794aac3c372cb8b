// AesApp (see aes_app.hpp). Key slots: key_table.cpp; key files: key_file.cpp; derivation: key_derive.cpp.
#include "kernels/aes/aes_app.hpp"

#include <algorithm>
#include <bit>
#include <cstring>

#include "kernels/aes/aes_tables.hpp"
#include "kernels/aes/key_derive.hpp"
#include "kernels/aes/key_source.hpp"

namespace hpr::kernels::aes {

// ------------------------------------------------------------------ the app
namespace {

// The key slots reach the device per batch: stage() copies the slots of the batch's flows (each once)
// into a buffer of the batch's own and points desc[i].flow at them. Nothing on the device is shared
// between batches or rewritten while a batch reads it, so lanes on several queues need no fences; a slot
// that the host changes (a new connection, a new IV counter) is read by the next batch that stages it.
class AesDeviceTables final : public DeviceTables {
 public:
  AesDeviceTables(const KeyTable& keys, cl::Buffer none) : keys_(keys), none_(std::move(none)) {
    for (int w = 0; w < 4; ++w) {
      const uint8_t* e = keys.epoch().data() + 4 * w;
      epoch_.s[w] = (cl_uint{e[0]} << 24) | (cl_uint{e[1]} << 16) | (cl_uint{e[2]} << 8) | cl_uint{e[3]};
    }
  }
  Status bind(cl::Kernel& kernel) override {
    try {
      kernel.setArg(4, none_);
      kernel.setArg(5, cl_uint{0});
      kernel.setArg(6, epoch_);
    } catch (const cl::Error& e) {
      return error(Code::kUnavailable, "aes: setting key arguments: {} ({})", e.what(), e.err());
    }
    return Status::ok();
  }
  Status stage(cl::Kernel& kernel, const cl::Context& ctx, Desc* desc, uint32_t n, cl::Buffer& keep) override {
    thread_local std::vector<KeySlot> slots;
    thread_local std::vector<uint32_t> flow_at, index_at;  // open addressing: flow id -> staged index
    const uint32_t size = std::bit_ceil(std::max<uint32_t>(2 * n, 16));
    slots.clear();
    flow_at.assign(size, kNoFlow);
    index_at.resize(size);
    for (uint32_t i = 0; i < n; ++i) {
      const uint32_t f = desc[i].flow;
      if (!keys_.has_key(f)) {
        desc[i].flow = kNoFlow;  // >= any count: kKeyMissing
        continue;
      }
      uint32_t h = (f * 0x9e3779b1u) & (size - 1);
      while (flow_at[h] != kNoFlow && flow_at[h] != f) h = (h + 1) & (size - 1);
      if (flow_at[h] == kNoFlow) {
        flow_at[h] = f;
        index_at[h] = static_cast<uint32_t>(slots.size());
        slots.push_back(keys_.copy(f));
      }
      desc[i].flow = index_at[h];
    }
    try {
      const auto count = static_cast<cl_uint>(slots.size());
      keep = count == 0 ? none_
                        : cl::Buffer(ctx, CL_MEM_READ_ONLY | CL_MEM_COPY_HOST_PTR, size_t{count} * kKeySlotBytes,
                                     slots.data());
      kernel.setArg(4, keep);
      kernel.setArg(5, count);
    } catch (const cl::Error& e) {
      return error(Code::kUnavailable, "aes: staging {} key slots: {} ({})", slots.size(), e.what(), e.err());
    }
    return Status::ok();
  }

 private:
  const KeyTable& keys_;
  cl::Buffer none_;  // one zero slot, for a batch without keys
  cl_uint4 epoch_{};
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

AesApp::AesApp(std::shared_ptr<KeyTable> keys, AesOptions options, std::shared_ptr<FlowKeySource> source)
    : keys_(std::move(keys)), options_(options), source_(std::move(source)) {}

void AesApp::flow_started(uint32_t id, const FlowKey& canonical) const {
  if (source_ == nullptr) {
    keys_->restart(id);  // a fixed table (tests): the slot's key, fresh IV counters
    return;
  }
  if (auto key = source_->key_for(id, tuple_of(canonical))) {
    (void)keys_->set_key(id, *key);  // id < capacity: the FlowTable and the key table have the same size
  } else {
    keys_->clear_key(id);  // never the previous connection's key
  }
}

void AesApp::flow_seq_half(uint32_t id, uint32_t half) const { keys_->enter_half(id, half); }

void AesApp::take_over_from(const App& running) const {
  if (const auto* old = dynamic_cast<const AesApp*>(&running)) keys_->continue_counters_of(*old->keys_);
}

std::vector<std::pair<std::string, std::string>> AesApp::summary_info() const {
  return {{"key_epoch", epoch_hex(keys_->epoch())}};
}

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
    KeySlot zero{};
    cl::Buffer none(ctx, CL_MEM_READ_ONLY | CL_MEM_COPY_HOST_PTR, kKeySlotBytes, &zero);
    return std::unique_ptr<DeviceTables>(std::make_unique<AesDeviceTables>(*keys_, std::move(none)));
  } catch (const cl::Error& e) {
    return error(Code::kUnavailable, "aes: device key buffer: {} ({})", e.what(), e.err());
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

uint64_t AesApp::count_events(std::span<const Packet>, const BatchView& batch) const {
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
