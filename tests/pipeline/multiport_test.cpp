// Several output ports (issue 12, "a router sends where the route says"): --out repeated, ports.map, per-port
// counters, and the ipv4 app's neighbour table with l3fwd's Ethernet rewrite; the bad-input cases.
#include <catch2/catch.hpp>
#include <fstream>

#include "pipeline/settings.hpp"
#include "tests/pipeline/pipeline_fixture.hpp"

using namespace hpr;
using namespace hpr::test;

namespace {

const char* kCapture = "pcap/ndpi/webex.pcap";

// small_routes(): next hops 0..3 (app.ports 4).
RunConfig two_port_config(const std::string& tag) {
  RunConfig c = pcap_config("ipv4", data_path(kCapture), tmp_path(tag + "_port0.pcap"));
  c.more_outputs = {{.kind = "pcap", .pcap = tmp_path(tag + "_port1.pcap")}};
  return c;
}

struct Expected {
  std::vector<std::vector<uint8_t>> port[2];
  Reference ref;
};

// The native reference's frames by the output port their out_port maps to (`map`: next hop → output port), with
// the neighbour rewrite when `macs` is given (dst, src MAC per next hop).
Expected expected(const RunConfig& c, const std::vector<uint16_t>& map,
                  const std::vector<std::pair<std::string, std::string>>& macs = {}) {
  auto cap = load_capture(data_path(kCapture));
  REQUIRE(cap.is_ok());
  auto o = c.app_opts;
  o.max_frame_bytes = c.max_frame;
  auto app = kernels::make_app("ipv4", o);
  REQUIRE(app.is_ok());
  Expected e;
  e.ref = native_reference(**app, *cap, c);
  for (size_t i = 0; i < e.ref.out.size(); ++i) {
    std::vector<uint8_t> f = e.ref.out[i];
    const uint16_t hop = e.ref.out_port[i];
    if (!macs.empty() && e.ref.out_ipv4[i]) {
      auto dst = kernels::ipv4::parse_mac(macs[hop].first);
      auto src = kernels::ipv4::parse_mac(macs[hop].second);
      REQUIRE((dst.is_ok() && src.is_ok()));
      std::copy(dst->begin(), dst->end(), f.begin());
      std::copy(src->begin(), src->end(), f.begin() + 6);
    }
    // With a neighbour table, packets that are not IPv4 keep their frame and out_port 0 (output 0 mod outputs).
    const size_t q = !macs.empty() && !e.ref.out_ipv4[i] ? hop % 2 : map[hop % map.size()];
    e.port[q].push_back(std::move(f));
  }
  return e;
}

void check_ports(const RunConfig& c, const Summary& s, const Expected& e) {
  INFO(s.to_text());
  check_books(s);
  CHECK(s.dropped == e.ref.dropped);
  REQUIRE(s.out_ports.size() == 2);
  CHECK(s.out_ports[0].packets + s.out_ports[1].packets == s.tx_packets);
  CHECK(s.out_ports[0].bytes + s.out_ports[1].bytes == s.tx_bytes);
  CHECK(s.out_ports[0].failed + s.out_ports[1].failed == 0);
  auto got0 = load_capture(c.output.pcap);
  auto got1 = load_capture(c.more_outputs[0].pcap);
  REQUIRE((got0.is_ok() && got1.is_ok()));
  CHECK(got0->size() == s.out_ports[0].packets + s.host_frames);  // ICMP answers leave by port 0
  CHECK(got1->size() == s.out_ports[1].packets);
  CHECK(!e.port[0].empty());
  CHECK(!e.port[1].empty());
  CHECK(sorted(got0->frames) == sorted(e.port[0]));
  CHECK(sorted(got1->frames) == sorted(e.port[1]));
}

}  // namespace

TEST_CASE("two pcap outputs with a port map: every packet lands in the file of the port its route says") {
  // Devices and a native lane; threaded native; in-place worker path; two workers (each with its views of both
  // outputs, the per-port counters summed).
  const int mode = GENERATE(0, 1, 2, 3);
  INFO("mode " << mode);
  RunConfig c = two_port_config("map" + std::to_string(mode));
  c.port_map = {0, 1, 1, 0};
  if (mode > 0) {
    c.devices = {"none"};
    c.native_lanes = 1;
    c.run_to_completion = mode >= 2;
  }
  if (mode == 3) {
    if (cores_here().size() < 2) return;
    c.workers = 2;
  }
  Summary s = run_to_end(c);
  check_ports(c, s, expected(c, {0, 1, 1, 0}));
  if (mode == 2) CHECK(s.lanes.at(0).executor == "native, in place on the rx burst");
}

TEST_CASE("two outputs without a map: out_port mod 2; one output: everything to it, as before") {
  RunConfig c = two_port_config("mod");
  c.devices = {"none"};
  Summary s = run_to_end(c);
  check_ports(c, s, expected(c, {0, 1}));

  RunConfig one = pcap_config("ipv4", data_path(kCapture), tmp_path("one.pcap"));
  one.devices = {"none"};
  Summary s1 = run_to_end(one);
  check_books(s1);
  REQUIRE(s1.out_ports.size() == 1);
  CHECK(s1.out_ports[0].packets == s1.tx_packets);
  CHECK(s1.out_ports[0].bytes == s1.tx_bytes);
  CHECK(s1.to_text().find("port 0") == std::string::npos);  // the text summary as before
}

TEST_CASE("neighbour table: l3fwd's Ethernet rewrite on native and device lanes alike, sent by the neighbour's port") {
  RunConfig c = two_port_config("nb");
  c.port_macs = {"02:00:00:00:00:a0", "02:00:00:00:00:a1"};
  const std::vector<uint16_t> port_of_hop = {1, 0, 1, 0};
  std::vector<std::pair<std::string, std::string>> macs;
  for (uint32_t h = 0; h < 4; ++h) {
    std::string dst = fmt::format("0a:0b:0c:0d:0e:{:02x}", h);
    c.neighbours.push_back({.next_hop = h, .port = port_of_hop[h], .mac = dst});
    macs.emplace_back(dst, c.port_macs[port_of_hop[h]]);
  }
  Summary s = run_to_end(c);  // both PoCL devices and a native lane
  Expected e = expected(c, port_of_hop, macs);
  check_ports(c, s, e);
}

TEST_CASE("output ports, port map and neighbours: bad input is refused naming the setting, nothing started") {
  auto refused = [](const RunConfig& c, const std::string& what) {
    auto ctx = prepare_run(c);
    REQUIRE_FALSE(ctx.is_ok());
    INFO(ctx.status().message());
    CHECK(ctx.status().code() == Code::kInvalidArgument);
    CHECK(ctx.status().message().find(what) != std::string::npos);
  };
  RunConfig c = base_config();
  c.devices = {"none"};
  c.output = {.kind = "pcap", .pcap = tmp_path("bad0.pcap")};
  c.more_outputs = {{.kind = "pcap", .pcap = tmp_path("bad1.pcap")}};
  SECTION("a port map naming an output that does not exist") {
    c.port_map = {0, 1, 2, 0};
    refused(c, "ports.map (--port-map): entry 2 names output port 2, but there are 2 output ports");
    CHECK_FALSE(std::filesystem::exists(c.output.pcap));
  }
  SECTION("two outputs writing one file") {
    c.more_outputs[0].pcap = c.output.pcap;
    refused(c, "output.ports (--out): output 1 writes");
  }
  auto neighbours = [&] {
    for (uint32_t h = 0; h < 4; ++h) c.neighbours.push_back({.next_hop = h, .port = h % 2, .mac = "02:00:00:00:00:01"});
    c.port_macs = {"02:00:00:00:01:00", "02:00:00:00:01:01"};
  };
  SECTION("a bad MAC") {
    neighbours();
    c.neighbours[2].mac = "02:00:00:00:00";
    refused(c, "neighbour[2].mac: '02:00:00:00:00' is not a MAC address");
  }
  SECTION("a neighbour on an output port that does not exist") {
    neighbours();
    c.neighbours[1].port = 5;
    refused(c, "neighbour[1].port: output port 5 does not exist");
  }
  SECTION("a next hop twice") {
    neighbours();
    c.neighbours[3].next_hop = 0;
    refused(c, "neighbour[3].next_hop: next hop 0 is already in neighbour[0]");
  }
  SECTION("a next hop without a neighbour") {
    neighbours();
    c.neighbours.pop_back();
    refused(c, "neighbour: next hop 3 has no [[neighbour]] entry");
  }
  SECTION("a bad port MAC") {
    neighbours();
    c.port_macs[1] = "zz:00:00:00:01:01";
    refused(c, "ports.macs (--port-mac): output port 1:");
  }
  SECTION("an output port without a MAC (a capture file has none)") {
    neighbours();
    c.port_macs.pop_back();
    refused(c, "ports.macs (--port-mac): output port 1 (");
  }
  SECTION("a neighbour table for another app") {
    neighbours();
    c.app = "md5";
    refused(c, "neighbour: the neighbour table is for the ipv4 app");
  }
  SECTION("a port map beside a neighbour table") {
    neighbours();
    c.port_map = {0, 1};
    refused(c, "ports.map (--port-map): not with [[neighbour]]");
  }
}

TEST_CASE("config file and flags: output.ports, ports.map, ports.macs, [[neighbour]]; --out repeated") {
  std::string path = tmp_path("multiport.toml");
  {
    std::ofstream f(path);
    f << "[output]\nports = [\"pcap:a.pcap\", \"dpdk:net_null1\", \"null\"]\n"
         "[ports]\nmap = [0, 2, 1, 1]\nmacs = [\"02:00:00:00:00:01\", \"\", \"02:00:00:00:00:03\"]\n"
         "[[neighbour]]\nnext_hop = 1\nport = 2\nmac = \"0a:00:00:00:00:01\"\naddress = \"192.0.2.1\"\n"
         "[[neighbour]]\nnext_hop = 0\nport = 0\nmac = \"0a:00:00:00:00:00\"\n";
  }
  auto c = load_run_config(path);
  REQUIRE(c.is_ok());
  CHECK(c->output.kind == "pcap");
  CHECK(c->output.pcap == "a.pcap");
  REQUIRE(c->more_outputs.size() == 2);
  CHECK(c->more_outputs[0].dpdk_port == "net_null1");
  CHECK(c->more_outputs[1].kind == "null");
  CHECK(c->port_map == std::vector<uint32_t>{0, 2, 1, 1});
  CHECK(c->port_macs.size() == 3);
  REQUIRE(c->neighbours.size() == 2);
  CHECK(c->neighbours[0].next_hop == 1);
  CHECK(c->neighbours[0].port == 2);
  CHECK(c->neighbours[0].address == "192.0.2.1");
  CHECK(c->neighbours[1].mac == "0a:00:00:00:00:00");

  {
    std::ofstream f(path);
    f << "[[neighbour]]\nnext_hop = 1\nport = 0\nmac = \"0a:00:00:00:00:01\"\nvia = 3\n";
  }
  auto bad = load_run_config(path);
  REQUIRE_FALSE(bad.is_ok());
  CHECK(bad.status().message().find("neighbour[0]: unknown key 'via'") != std::string::npos);
  {
    std::ofstream f(path);
    f << "[[neighbour]]\nnext_hop = 1\nmac = \"0a:00:00:00:00:01\"\n";
  }
  bad = load_run_config(path);
  REQUIRE_FALSE(bad.is_ok());
  CHECK(bad.status().message().find("neighbour[0].port: missing") != std::string::npos);

  RunConfig f;
  const Setting* out = find_setting("--out");
  REQUIRE(out != nullptr);
  REQUIRE(out->apply(f, SettingValue{.args = {"pcap:x.pcap"}}).is_ok());
  CHECK(f.output.pcap == "x.pcap");
  CHECK(f.more_outputs.empty());
  REQUIRE(out->apply(f, SettingValue{.args = {"pcap:x.pcap", "pcap:y.pcap"}}).is_ok());
  REQUIRE(f.more_outputs.size() == 1);
  CHECK(f.more_outputs[0].pcap == "y.pcap");
  CHECK_FALSE(out->apply(f, SettingValue{.args = {"pcap:x.pcap", "udp:1"}}).is_ok());
  const Setting* map = find_setting("--port-map");
  REQUIRE(map != nullptr);
  REQUIRE(map->apply(f, SettingValue{.args = {"0,1,1,0"}}).is_ok());
  CHECK(f.port_map == std::vector<uint32_t>{0, 1, 1, 0});
  auto st = map->apply(f, SettingValue{.args = {"0,x"}});
  REQUIRE_FALSE(st.is_ok());
  CHECK(st.message().find("ports.map (--port-map): 'x' is not an output port index") != std::string::npos);
}

TEST_CASE("a text route file may name next-hop addresses of the neighbour table instead of numbers") {
  std::string routes = tmp_path("addr_routes.txt");
  std::ofstream(routes) << "0.0.0.0/0 192.0.2.11\n10.0.0.0/8 192.0.2.12\n192.168.0.0/16 3\n172.16.0.0/12 0\n";
  RunConfig c = two_port_config("addr");
  c.devices = {"none"};
  c.app_opts.routes = routes;
  c.port_macs = {"02:00:00:00:00:a0", "02:00:00:00:00:a1"};
  const std::vector<uint16_t> port_of_hop = {0, 1, 1, 0};
  std::vector<std::pair<std::string, std::string>> macs;
  for (uint32_t h = 0; h < 4; ++h) {
    std::string dst = fmt::format("0a:0b:0c:0d:0e:{:02x}", h);
    c.neighbours.push_back({.next_hop = h, .port = port_of_hop[h], .mac = dst});
    macs.emplace_back(dst, c.port_macs[port_of_hop[h]]);
  }
  c.neighbours[1].address = "192.0.2.11";
  c.neighbours[2].address = "192.0.2.12";
  Summary s = run_to_end(c);
  RunConfig numbered = c;
  numbered.app_opts.routes = small_routes();  // the same routes with numbers
  check_ports(c, s, expected(numbered, port_of_hop, macs));

  SECTION("an address no neighbour has") {
    c.neighbours[2].address = "192.0.2.13";
    auto ctx = prepare_run(c);
    REQUIRE_FALSE(ctx.is_ok());
    CHECK(ctx.status().message().find("app.routes (--routes): ") != std::string::npos);
    CHECK(ctx.status().message().find(":2: next hop 192.0.2.12 is not the address of any [[neighbour]]") !=
          std::string::npos);
  }
  SECTION("a bad or repeated address") {
    c.neighbours[2].address = "192.0.2";
    auto ctx = prepare_run(c);
    REQUIRE_FALSE(ctx.is_ok());
    CHECK(ctx.status().message().find("neighbour[2].address: '192.0.2' is not an IPv4 address") != std::string::npos);
    c.neighbours[2].address = "192.0.2.11";
    ctx = prepare_run(c);
    REQUIRE_FALSE(ctx.is_ok());
    CHECK(ctx.status().message().find("neighbour[2].address: 192.0.2.11 is already the address of neighbour[1]") !=
          std::string::npos);
  }
}

TEST_CASE("config/hpr.toml: its commented output ports, MACs and neighbour table are valid when switched on") {
  std::ifstream in(std::string(HPR_SOURCE_DIR) + "/config/hpr.toml");
  REQUIRE(in.good());
  std::string text, line;
  bool example = false;
  while (std::getline(in, line)) {
    if (line.rfind("# [[neighbour]]", 0) == 0) example = true;
    if (line.empty()) example = false;
    if (example || line.rfind("# ports = [", 0) == 0 || line.rfind("# macs = [", 0) == 0) line = line.substr(2);
    text += line + "\n";
  }
  std::string path = tmp_path("sample.toml");
  std::ofstream(path) << text;
  auto r = load_run_config(path);
  REQUIRE(r.is_ok());
  CHECK(validate(*r).is_ok());
  CHECK(r->output.pcap == "port0.pcap");
  REQUIRE(r->more_outputs.size() == 1);
  CHECK(r->port_macs.size() == 2);
  REQUIRE(r->neighbours.size() == 4);
  CHECK(r->neighbours[0].address == "192.0.2.11");
  CHECK(r->neighbours[2].port == 1);
}
