// MD5 app: RFC 1321 vectors, OpenSSL equality on random packets, every multi-buffer impl == scalar (synthetic
// lengths, batch sizes, every packet of the nDPI captures), kAuto's choice, slices.
#include <catch2/catch.hpp>

#include "kernels/md5/md5_app.hpp"
#include "tests/crypto/crypto_util.hpp"

using namespace hpr;
using namespace hpr::kernels;
using hpr::test::hex;

namespace {
struct Md5Vector {
  std::vector<uint8_t> msg;
  std::string md;
};
std::vector<Md5Vector> load_rfc() {
  std::ifstream f(data_path("vectors/md5/rfc-1321.txt"));
  std::vector<Md5Vector> v;
  std::string line;
  size_t len_bits = 0;
  std::vector<uint8_t> msg;
  while (std::getline(f, line)) {
    if (line.rfind("Len = ", 0) == 0) len_bits = std::stoul(line.substr(6));
    else if (line.rfind("Msg = ", 0) == 0) { msg = test::unhex(line.substr(6)); msg.resize(len_bits / 8); }
    else if (line.rfind("MD = ", 0) == 0) v.push_back({msg, line.substr(5)});
  }
  return v;
}

// Every multi-buffer impl; those the CPU lacks are skipped with a warning naming them.
constexpr md5::Impl kMultiBuffer[] = {md5::Impl::kAvx2, md5::Impl::kAvx512X16};

bool supported_or_warn(md5::Impl impl) {
  if (md5::impl_supported(impl)) return true;
  WARN("md5 impl " << md5::impl_name(impl) << " skipped: this CPU lacks its features");
  return false;
}

// The batch's digests through `impl` and through scalar are equal, digest by digest.
void check_impl_equals_scalar(const md5::Md5App& app, std::span<const Packet> pkts, md5::Impl impl) {
  auto mb = kernels::gather(app, pkts);
  md5::md5_batch(mb.view(), impl);
  auto sc = kernels::gather(app, pkts);
  md5::md5_batch(sc.view(), md5::Impl::kScalar);
  size_t bad = 0, first = 0;
  for (size_t i = 0; i < pkts.size(); ++i)
    if (std::memcmp(mb.out.data() + 16 * i, sc.out.data() + 16 * i, 16) != 0 && bad++ == 0) first = i;
  INFO(md5::impl_name(impl) << ": " << bad << " of " << pkts.size() << " digests differ, first at " << first);
  CHECK(bad == 0);
}
}  // namespace

TEST_CASE("md5: RFC 1321 vectors, one-shot and every batch implementation") {
  auto vectors = load_rfc();
  REQUIRE(vectors.size() == 7);
  for (const auto& v : vectors) {
    uint8_t d[16];
    md5::md5(v.msg.data(), v.msg.size(), d);
    CHECK(hex(d, 16) == v.md);
  }
  // The seven vectors as one batch, through each implementation.
  test::Packets ps;
  for (size_t i = 0; i < vectors.size(); ++i) ps.add(vectors[i].msg, 0, 0);
  auto& pkts = ps.fix();
  md5::Md5App app;
  for (md5::Impl impl : {md5::Impl::kScalar, md5::Impl::kAvx2, md5::Impl::kAvx512X16, md5::Impl::kAuto}) {
    if (!md5::impl_supported(impl)) continue;
    auto b = kernels::gather(app, pkts);
    md5::md5_batch(b.view(), impl);
    for (size_t i = 0; i < vectors.size(); ++i) CHECK(hex(b.out.data() + 16 * i, 16) == vectors[i].md);
  }
}

TEST_CASE("md5: random packets 0..1514 bytes equal OpenSSL EVP_md5 for scalar and multi-buffer") {
  std::mt19937 rng(42);
  test::Packets ps;
  for (int len = 0; len <= 1514; ++len) ps.add(test::random_bytes(rng, len), 0, 0);
  for (int i = 0; i < 300; ++i) ps.add(test::random_bytes(rng, rng() % 9000), 0, 0);  // jumbo
  auto& pkts = ps.fix();
  md5::Md5App app;
  auto ref = kernels::gather(app, pkts);
  md5::md5_batch(ref.view(), md5::Impl::kScalar);
  for (size_t i = 0; i < pkts.size(); ++i) {
    auto e = test::evp_md5(pkts[i].payload(), pkts[i].payload_len);
    INFO("len " << pkts[i].payload_len);
    REQUIRE(std::memcmp(ref.out.data() + 16 * i, e.data(), 16) == 0);
  }
  for (md5::Impl impl : kMultiBuffer) {
    if (!supported_or_warn(impl)) continue;
    // Fewer packets than lanes, one more than the lanes (refill), and the whole set at once.
    for (size_t n : {size_t{1}, size_t{3}, size_t{7}, size_t{8}, size_t{9}, size_t{15}, size_t{16}, size_t{17},
                     size_t{33}, pkts.size()}) {
      std::span<const Packet> sub(pkts.data() + (pkts.size() - n) / 2, n);
      INFO("n " << n);
      check_impl_equals_scalar(app, sub, impl);
    }
  }
}

TEST_CASE("md5: every multi-buffer impl == scalar on lengths 0..2000, in order, reversed and shuffled") {
  std::mt19937 rng(18);
  test::Packets ps;
  for (int len = 0; len <= 2000; ++len) ps.add(test::random_bytes(rng, len), 0, 0);
  auto& pkts = ps.fix();
  std::vector<Packet> reversed(pkts.rbegin(), pkts.rend()), shuffled = pkts;
  std::shuffle(shuffled.begin(), shuffled.end(), rng);
  md5::Md5App app;
  for (md5::Impl impl : kMultiBuffer) {
    if (!supported_or_warn(impl)) continue;
    check_impl_equals_scalar(app, pkts, impl);     // lanes in step, lengths growing
    check_impl_equals_scalar(app, reversed, impl); // long packets first
    check_impl_equals_scalar(app, shuffled, impl); // lanes refilled at every step
  }
}

TEST_CASE("md5: every impl == scalar on every packet of the nDPI captures (payload and whole frame)") {
  const std::vector<std::string> files = test::ndpi_capture_files();
  REQUIRE(files.size() > 200);
  md5::Md5App payload_app, frame_app({.whole_frame = true});
  auto table = FlowTable::create(1u << 16, 1'000'000'000'000ull);
  REQUIRE(table.is_ok());
  std::vector<std::vector<uint8_t>> frames;
  std::vector<Packet> pkts;
  std::string error;
  const size_t files_read = test::load_capture_packets(files, **table, payload_app, frames, pkts, &error);
  INFO(error);
  CHECK(files_read == files.size());
  CHECK(pkts.size() > 90000);
  for (const md5::Md5App* app : {&payload_app, &frame_app}) {
    INFO("whole frame " << app->options().whole_frame);
    for (md5::Impl impl : {md5::Impl::kAvx2, md5::Impl::kAvx512X16, md5::Impl::kAuto}) {
      if (!supported_or_warn(impl)) continue;
      check_impl_equals_scalar(*app, pkts, impl);
    }
  }
  // One packet against OpenSSL, so scalar itself is anchored on capture bytes too.
  auto b = kernels::gather(frame_app, std::span<const Packet>(pkts.data(), 1));
  md5::md5_batch(b.view(), md5::Impl::kScalar);
  CHECK(std::memcmp(b.out.data(), test::evp_md5(pkts[0].data, pkts[0].len).data(), 16) == 0);
}

TEST_CASE("md5: kAuto picks a supported multi-buffer impl where the CPU has one") {
  const md5::Impl a = md5::auto_impl();
  CHECK(a != md5::Impl::kAuto);
  CHECK(md5::impl_supported(a));
  if (md5::impl_supported(md5::Impl::kAvx512X16)) CHECK(a == md5::Impl::kAvx512X16);
  else if (md5::impl_supported(md5::Impl::kAvx2)) CHECK(a == md5::Impl::kAvx2);
  else CHECK(a == md5::Impl::kScalar);
  CHECK(md5::impl_name(md5::Impl::kAvx512X16) == "avx512x16");
}

TEST_CASE("md5: slices: L4 payload, whole frame option, no payload hashes the empty string") {
  test::Packets ps;
  ps.add({'a', 'b', 'c'}, 0, 0);
  ps.add({}, 0, 0);
  auto& pkts = ps.fix();
  pkts[1].payload_off = kNoOffset;  // e.g. a non-first fragment
  md5::Md5App app;
  CHECK_FALSE(app.writes_back());
  CHECK(app.result_bytes() == 16);
  auto s = app.slice(pkts[0]);
  CHECK(s.offset == 42);
  CHECK(s.len == 3);
  CHECK(app.slice(pkts[1]).len == 0);
  auto b = kernels::gather(app, pkts);
  app.run_native(b.view());
  CHECK(hex(b.out.data(), 16) == "900150983cd24fb0d6963f7d28e17f72");
  CHECK(hex(b.out.data() + 16, 16) == "d41d8cd98f00b204e9800998ecf8427e");
  app.finish(pkts, b.view());
  CHECK(pkts[0].drop == DropReason::kNone);
  std::string log;
  app.append_log(pkts, b.view(), [](uint32_t i) { return "p" + std::to_string(i); }, log);
  CHECK(log == "p0 md5 900150983cd24fb0d6963f7d28e17f72\np1 md5 d41d8cd98f00b204e9800998ecf8427e\n");
  CHECK(app.count_events(pkts, b.view()) == 2);
  CHECK(app.event_name() == "digests");

  md5::Md5App whole({.whole_frame = true});
  auto w = whole.slice(pkts[0]);
  CHECK(w.offset == 0);
  CHECK(w.len == 45);
  auto bw = kernels::gather(whole, pkts);
  whole.run_native(bw.view());
  CHECK(std::memcmp(bw.out.data(), test::evp_md5(pkts[0].data, 45).data(), 16) == 0);
}

TEST_CASE("md5: kernel source has the descriptor and the kernel") {
  md5::Md5App app;
  auto src = app.kernel_source();
  CHECK(src.find("hpr_desc;") != std::string::npos);
  CHECK(src.find("__kernel void md5(") != std::string::npos);
}
