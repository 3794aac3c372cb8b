// Packet parser and classifier: parse() (both checksum modes), flow_key, canonical_flow_key, the two CRC32C
// flow hashes and the FlowTable, on one frame of arbitrary bytes. Invariants checked (abort on violation):
// offsets stay inside the frame, the payload ends inside the frame, the symmetric hash is equal for both
// directions, the one-pass canonical key and hash equal the two-step ones, and a flow inserted is found again.
#include <cstdlib>
#include <cstring>
#include <memory>
#include <vector>

#include "runtime/flow.hpp"
#include "runtime/parser.hpp"
#include "tests/fuzz/fuzz_targets.hpp"

namespace hpr::fuzz {
namespace {

void check(bool ok) {
  if (!ok) std::abort();
}

void check_offsets(const Packet& p) {
  if (p.drop != DropReason::kNone) return;
  if (p.l3_off != kNoOffset) check(p.l3_off <= p.len);
  if (p.l4_off != kNoOffset) check(p.l4_off <= p.len);
  if (p.payload_off != kNoOffset) check(static_cast<uint32_t>(p.payload_off) + p.payload_len <= p.len);
}

}  // namespace

int parser(const uint8_t* data, size_t size) {
  if (size > 0xffff) size = 0xffff;
  // Exactly `size` bytes on the heap, so ASan sees any read past the frame.
  std::unique_ptr<uint8_t[]> buf(new uint8_t[size == 0 ? 1 : size]);
  if (size) std::memcpy(buf.get(), data, size);
  static std::unique_ptr<FlowTable> table = std::move(FlowTable::create(1024, 1'000'000).value());
  static uint64_t now_ns = 0;
  for (bool verify : {true, false}) {
    Packet p;
    p.data = buf.get();
    p.len = static_cast<uint16_t>(size);
    DropReason r = parse(p, ParseOptions{.verify_ipv4_checksum = verify});
    check(r == p.drop);
    check_offsets(p);
    FlowKey k = flow_key(p);
    check(flow_hash_symmetric(k) == flow_hash_symmetric(k.reversed()));
    check(k.canonical() == k.reversed().canonical());
    (void)flow_hash(k);
    FlowKey c = k.canonical();
    // The one-pass form the dispatcher and the worker path use: the same key, and its flow_hash.
    FlowKey one;
    const uint32_t one_hash = canonical_flow_key(p, one);
    check(one == c);
    check(one_hash == flow_hash(c));
    uint32_t h = flow_hash_symmetric(k);
    now_ns += 1000;
    uint32_t id = table->lookup_or_insert(c, h, now_ns);
    if (id != kNoFlow) check(table->find(c, h) == id);
    table->expire(now_ns, 8);
  }
  if (size >= 20) (void)ip_checksum(buf.get(), static_cast<uint32_t>(size < 60 ? size : 60));
  // Batch form over the same frame, twice.
  std::vector<Packet> batch(2);
  for (auto& p : batch) {
    p.data = buf.get();
    p.len = static_cast<uint16_t>(size);
  }
  (void)parse_batch(batch);
  return 0;
}

}  // namespace hpr::fuzz
