#include <catch2/catch.hpp>

#include "scheduler/model/model_device.hpp"

using namespace hpr::sched;
using namespace hpr::sched::model;

constexpr double G = 1e9;

TEST_CASE("model devices reproduce the numbers read from the paper's text") {
  TrafficFeatures f;
  CHECK(f.mean_packet_bytes == Approx(1150.5));  // §5 traffic: 25 % 60 B + 75 % 1514 B
  auto md5 = ModelPlatform::paper(App::kMd5);
  CHECK(md5.devices()[0].throughput_bps(65536, f) == Approx(36 * G).epsilon(0.01));  // §3.3.2
  CHECK(md5.devices()[1].throughput_bps(65536, f) == Approx(28 * G).epsilon(0.01));
  auto pair = md5.evaluate(md5.balanced(0b011, 65536, f), 1e12, f);
  CHECK(pair.capacity_bps == Approx(54 * G).epsilon(0.02));  // "paired together they achieve only 54 Gbit/s"

  auto dpi = ModelPlatform::paper(App::kDpi);
  TrafficFeatures match = f;
  match.match_rate = 1;
  CHECK(dpi.devices()[0].throughput_bps(512, f) == Approx(28 * G).epsilon(0.05));  // §4: 28 without matches
  CHECK(dpi.devices()[0].throughput_bps(512, match) == Approx(6 * G).epsilon(0.05));
  CHECK(dpi.devices()[2].throughput_bps(65536, match) == Approx(12 * G).epsilon(0.05));  // CPU's 6 is half of it
  // §3.3.2: a working set above 512 packets lowers the CPU's DPI throughput.
  CHECK(dpi.devices()[0].throughput_bps(8192, f) < dpi.devices()[0].throughput_bps(512, f));
  for (uint32_t b = 64; b <= 65536; b *= 2) CHECK(dpi.devices()[1].throughput_bps(b, f) <= 5 * G);

  auto aes = ModelPlatform::paper(App::kAes);
  auto all = aes.evaluate(aes.balanced(0b111, 65536, f), 1e12, f);
  CHECK(all.capacity_bps == Approx(15.5 * G).epsilon(0.02));  // §5: all three handle up to 15.5 Gbit/s
}

TEST_CASE("throughput rises and latency grows linearly with the batch once saturated") {
  auto ipv4 = ModelPlatform::paper(App::kIpv4);
  const auto& gtx = ipv4.devices()[2];
  double prev = 0;
  for (uint32_t b = 64; b <= 65536; b *= 2) {
    CHECK(gtx.throughput_bps(b, {}) > prev);
    prev = gtx.throughput_bps(b, {});
  }
  double l1 = gtx.latency_ns(32768, {}), l2 = gtx.latency_ns(65536, {});
  CHECK(l2 - gtx.params().launch_ns == Approx(2 * (l1 - gtx.params().launch_ns)).epsilon(0.2));
  // CPU: below 0.1 ms at small batches for every app (§3.3.2).
  for (auto app : {App::kIpv4, App::kDpi, App::kMd5, App::kAes})
    CHECK(ModelPlatform::paper(app).devices()[0].latency_ns(64, {}) < 100e3);
}

TEST_CASE("model power: idle + dynamic x utilisation, GTX off when unused, source model") {
  auto ipv4 = ModelPlatform::paper(App::kIpv4);
  TrafficFeatures f;
  auto igpu = ipv4.balanced(0b010, 65536, f);
  auto lo = ipv4.evaluate(igpu, 1 * G, f), hi = ipv4.evaluate(igpu, 40 * G, f);
  CHECK(hi.power_w > lo.power_w);
  CHECK(hi.power_w == Approx(50).margin(5));  // §5: IPv4 on the HD Graphics ≈ 50 W
  auto cpu = ipv4.evaluate(ipv4.balanced(0b001, 65536, f), 40 * G, f);
  CHECK(cpu.power_w / hi.power_w == Approx(2).margin(0.4));  // "two times better over the CPU-only"
  auto gtx = ipv4.evaluate(ipv4.balanced(0b100, 65536, f), 12 * G, f);
  CHECK(gtx.power_w / hi.power_w > 3);  // "more than three times over the discrete GPU only"
  for (const auto& c : ipv4.profile(f)) CHECK(c.power_source == PowerSource::kModel);
  CHECK(ipv4.devices()[2].power_w(0.5, false) == 0);
  CHECK(ipv4.devices()[2].params().name.find("(model)") != std::string::npos);
  CHECK(ipv4.profile(f).size() == 7 * 11);
  CHECK(parse_app("aes").is_ok());
  CHECK_FALSE(parse_app("ssl").is_ok());
}

TEST_CASE("a model device serves as a simulated lane: batch service time") {
  auto md5 = ModelPlatform::paper(App::kMd5);
  const auto& cpu = md5.devices()[0];
  TrafficFeatures f;
  double bytes = 1024 * f.mean_packet_bytes;
  CHECK(cpu.service_ns(1024, bytes, f) == Approx(cpu.latency_ns(1024, f)));
  CHECK(cpu.service_ns(0, 0, f) == 0);
  // Twice the bytes in the same batch: twice the transfer/compute part.
  double launch = cpu.params().launch_ns;
  CHECK(cpu.service_ns(1024, 2 * bytes, f) - launch == Approx(2 * (cpu.service_ns(1024, bytes, f) - launch)));
}
