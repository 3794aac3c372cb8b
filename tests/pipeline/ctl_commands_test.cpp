// hpr ctl's commands with arguments (cli/ctl_flows.cpp, cli/ctl_set.cpp) called as the control socket's thread calls
// them, on a pipeline built as `hpr run` builds it: every bad argument answered with an error naming it, flows top
// answered by the dispatchers of a running pipeline (one worker and two), lane weights set by name and index, a
// service placed on a lane and back.
#include <catch2/catch.hpp>
#include <chrono>
#include <thread>

#include "cli/ctl_cmd.hpp"
#include "tests/pipeline/pipeline_fixture.hpp"

using namespace hpr;
using namespace hpr::test;

namespace {

RunConfig generator_config(uint32_t workers) {
  RunConfig c = base_config();
  c.devices = {"none"};
  c.native_lanes = workers > 1 ? 1 : 2;
  c.workers = workers;
  c.input.gen_packets = 0;  // until stopped
  c.input.gen_rate_pps = 20000;
  c.input.gen_flows = 20;
  c.log_path.clear();
  return c;
}

std::string message(const Result<nlohmann::json>& r) { return r ? std::string() : r.status().message(); }

// Runs the pipeline on a thread until stop(); the books are checked at the end.
struct Running {
  Pipeline& p;
  Summary s;
  std::thread t;
  explicit Running(Pipeline& pl) : p(pl), t([this] { s = p.run(); }) {
    for (int i = 0; i < 500 && p.snapshot().tx_packets < 2000; ++i)
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  Summary stop() {
    p.request_stop();
    t.join();
    return s;
  }
};

// The handler's dispatch (cli/ctl_cmd.cpp) sends these two commands here, as the control socket's thread does.
struct Commands {
  Pipeline& p;
  cli::SchedulerHooks sched;
  Result<nlohmann::json> operator()(const std::string& cmd, const std::vector<std::string>& args) const {
    if (cmd == "flows") return cli::ctl_flows(p, args);
    if (cmd == "set") return cli::ctl_set(p, sched, args);
    return error(Code::kInvalidArgument, "not a command with arguments: {}", cmd);
  }
};

}  // namespace

TEST_CASE("hpr ctl: bad arguments get an error naming them") {
  auto ctx = prepare_run(generator_config(1));
  REQUIRE(ctx.is_ok());
  Pipeline& p = *(*ctx)->pipeline;
  const Commands h{p, {}};
  auto err = [&](const std::string& cmd, std::vector<std::string> args) { return message(h(cmd, args)); };
  CHECK_THAT(err("flows", {}), Catch::Contains("usage: flows top [N]"));
  CHECK_THAT(err("flows", {"bottom"}), Catch::Contains("usage: flows top [N]"));
  CHECK_THAT(err("flows", {"top", "3", "4"}), Catch::Contains("usage"));
  for (const char* n : {"0", "1001", "x", "-1", "3.5", ""})
    CHECK_THAT(err("flows", {"top", n}), Catch::Contains("N '"));
  CHECK_THAT(err("flows", {"top", "3"}), Catch::Contains("has not started"));
  CHECK_THAT(err("set", {}),
             Catch::Contains("usage: set weight LANE W | set place SERVICE LANE|any | set policy GOAL"));
  CHECK_THAT(err("set", {"place", "x", "native0"}), Catch::Contains("no [[service]] entries"));
  CHECK_THAT(err("set", {"weight", "native0"}), Catch::Contains("usage: set weight LANE W"));
  CHECK_THAT(err("set", {"weight", "bogus", "1"}),
             Catch::Contains("LANE 'bogus'") && Catch::Contains("native0, native1"));
  CHECK_THAT(err("set", {"weight", "2", "1"}), Catch::Contains("LANE '2'"));
  for (const char* w : {"-1", "x", "nan", "inf", "1e7", ""})
    CHECK_THAT(err("set", {"weight", "native0", w}), Catch::Contains("W '"));
  CHECK_THAT(err("set", {"policy", "energy"}), Catch::Contains("no scheduler"));
  SECTION("weights: by name and index; not every lane 0") {
    CHECK(h("set", {"weight", "native1", "0"}).is_ok());
    CHECK(p.lane_weights() == std::vector<float>{1, 0});
    CHECK_THAT(err("set", {"weight", "0", "0"}), Catch::Contains("every lane would have weight 0"));
    CHECK(p.lane_weights() == std::vector<float>{1, 0});
    auto r = h("set", {"weight", "1", "2.5"});
    REQUIRE(r.is_ok());
    CHECK((*r)["weights"]["native1"] == 2.5);
    CHECK(p.lane_weights() == std::vector<float>{1, 2.5f});
  }
  SECTION("a scheduler that owns the weights refuses set weight; set policy goes to it") {
    std::string asked;
    cli::SchedulerHooks sched{"learning", [&](const std::string& g, double t) -> Result<std::string> {
                                asked = g + "/" + std::to_string(static_cast<int>(t));
                                return std::string("ok\n");
                              }};
    const Commands hs{p, sched};
    CHECK_THAT(message(hs("set", {"weight", "native0", "1"})),
               Catch::Contains("learning scheduler sets the lane weights"));
    CHECK(hs("set", {"policy", "latency-target", "50"}).is_ok());
    CHECK(asked == "latency-target/50");
    CHECK_THAT(message(hs("set", {"policy", "latency-target", "-5"})), Catch::Contains("TARGET_US '-5'"));
    CHECK_THAT(message(hs("set", {"policy"})), Catch::Contains("usage: set policy"));
  }
}

TEST_CASE("hpr ctl flows top: the dispatchers of a running pipeline answer; after the stop, an error") {
  const uint32_t workers = GENERATE(1u, 2u);
  if (workers > cores_here().size()) return;
  INFO("workers " << workers);
  auto ctx = prepare_run(generator_config(workers));
  REQUIRE(ctx.is_ok());
  Pipeline& p = *(*ctx)->pipeline;
  const Commands h{p, {}};
  Running run(p);
  auto r = h("flows", {"top", "3"});
  REQUIRE(r.is_ok());
  const auto& j = *r;
  REQUIRE(j["flows"].size() == 3);
  CHECK(j["workers"] == workers);
  CHECK(j["live"].get<uint64_t>() >= 3);
  CHECK(j["flows"][0]["bytes"].get<uint64_t>() >= j["flows"][1]["bytes"].get<uint64_t>());
  CHECK(j["flows"][1]["bytes"].get<uint64_t>() >= j["flows"][2]["bytes"].get<uint64_t>());
  for (const auto& f : j["flows"]) {
    CHECK(f["packets"].get<uint64_t>() > 0);
    CHECK_THAT(f["lane"].get<std::string>(), Catch::Contains("native"));
    CHECK_THAT(f["flow"].get<std::string>(), Catch::Contains(" <-> "));
  }
  CHECK_THAT(j["text"].get<std::string>(), Catch::Contains("the 3 with the most bytes"));
  for (int i = 0; i < 20; ++i) REQUIRE(h("flows", {"top", "1000"}).is_ok());  // requests back to back
  if (workers == 2) {  // a name without "wN:" is that lane of every worker
    REQUIRE(h("set", {"weight", "native0", "3"}).is_ok());
    for (Pipeline* w : p.all_workers()) CHECK(w->lane_weights() == std::vector<float>{3});
  }
  Summary s = run.stop();
  check_books(s);
  CHECK_THAT(message(h("flows", {"top"})), Catch::Contains("stopping"));
}

TEST_CASE("hpr ctl set place: a service's flows on one lane of a running pipeline, and back; bad ones refused") {
  RunConfig c = generator_config(1);
  kernels::AppOptions::ServiceSpec udp{"udp", "ipv4", {}}, rest{"rest", "ipv4", {}};
  udp.match.proto = 17;
  c.app_opts.services = {udp, rest};
  c.service_lanes = {{}, {"native0"}};
  auto ctx = prepare_run(c);
  REQUIRE(ctx.is_ok());
  Pipeline& p = *(*ctx)->pipeline;
  const Commands h{p, {}};
  auto err = [&](std::vector<std::string> args) { return message(h("set", args)); };
  CHECK_THAT(err({"place", "udp"}), Catch::Contains("usage: set place SERVICE LANE|any"));
  CHECK_THAT(err({"place", "dns", "native1"}), Catch::Contains("SERVICE 'dns'") && Catch::Contains("udp, rest"));
  CHECK_THAT(err({"place", "udp", "native7"}), Catch::Contains("set place: LANE 'native7'"));
  CHECK_THAT(err({"place", "rest", "native1"}),
             Catch::Contains("service[1] is placed by the config (service[1].lanes)"));
  cli::SchedulerHooks learning{"learning", {}};
  CHECK_THAT(message(Commands{p, learning}("set", {"place", "udp", "native1"})),
             Catch::Contains("learning mode places the services"));
  Running r(p);
  auto placed_now = [&](const std::vector<std::string>& want) {  // the dispatcher adopts it at its next burst
    for (int i = 0; i < 500 && p.snapshot().services.at(0).lanes != want; ++i)
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    return p.snapshot().services.at(0).lanes == want;
  };
  auto a = h("set", {"place", "udp", "native1"});
  REQUIRE(a.is_ok());
  CHECK((*a)["lanes"] == nlohmann::json::array({"native1"}));
  CHECK_THAT((*a)["text"].get<std::string>(), Catch::StartsWith("place udp -> native1"));
  CHECK(p.service_lanes() == std::vector<int16_t>{1});
  CHECK(placed_now({"native1"}));
  auto b = h("set", {"place", "0", "any"});  // by index; back to the config's (every lane)
  REQUIRE(b.is_ok());
  CHECK_THAT((*b)["text"].get<std::string>(), Catch::StartsWith("place udp -> where the config puts it"));
  CHECK(p.service_lanes() == std::vector<int16_t>{-1});
  CHECK(placed_now({}));
  Summary s = r.stop();
  check_books(s);
}
