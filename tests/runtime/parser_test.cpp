#include <catch2/catch.hpp>

#include <filesystem>
#include <map>

#include "hpr/data_dir.hpp"
#include "runtime/pcap_file.hpp"
#include "runtime/parser.hpp"
#include "tests/runtime/test_frames.hpp"

using namespace hpr;
using namespace hpr::test;

#include "tests/runtime/ndpi_tshark_counts.inc"

namespace {
struct Counts {
  int v4 = 0, v6 = 0, tcp = 0, udp = 0, bad = 0;
};
Counts count(const Capture& c, std::map<DropReason, int>* reasons = nullptr) {
  Counts n;
  for (const auto& fr : c.frames) {
    std::vector<uint8_t> copy(fr);  // exact-size buffer: ASan catches any read past the frame
    Packet p = view(copy);
    ParseOptions o;
    o.verify_ipv4_checksum = false;  // tshark does not check either
    DropReason r = parse(p, o);
    if (r != DropReason::kNone) {
      ++n.bad;
      if (reasons) ++(*reasons)[r];
    }
    n.v4 += p.l3 == L3::kIPv4;
    n.v6 += p.l3 == L3::kIPv6;
    n.tcp += p.l4_off != kNoOffset && p.l4 == 6;
    n.udp += p.l4_off != kNoOffset && p.l4 == 17;
  }
  return n;
}
}  // namespace

TEST_CASE("every nDPI capture loads and parses like tshark reads it") {
  auto files = list_captures(data_path("pcap/ndpi"));
  REQUIRE(files.size() == 242);
  // Captures with deliberately malformed frames: tshark dissects the headers anyway, we drop
  // them with a reason. Pinned: our counts and the number of frames we drop.
  const std::map<std::string, Counts> kMalformed = {
      {"badpackets.pcap", {0, 0, 0, 0, 93}},              // snapped at 43-59 bytes: IP length beyond frame
      {"fuzz-2006-06-26-2594.pcap", {580, 0, 47, 502, 34}},
      {"fuzz-2006-09-29-28586.pcap", {121, 0, 113, 0, 7}},
      {"fuzz-2020-02-16-11740.pcap", {320, 0, 0, 292, 19}},
      {"fuzz-2021-06-07-c6c72a0a56.pcap", {0, 0, 0, 0, 1}},
      {"ip_fragmented_garbage.pcap", {9077, 0, 0, 0, 29}},  // TCP header cut by the IP length
      {"kerberos_fuzz.pcapng", {1, 0, 0, 0, 1}},
      {"ndpi_match_string_subprotocol__error.pcapng", {13, 0, 13, 0, 1}},
      {"reasm_crash_anon.pcapng", {200, 0, 199, 0, 10}},
      {"tls_invalid_reads.pcap", {11, 0, 8, 3, 1}},
  };
  std::map<std::string, NdpiCounts> expected;
  for (const auto& e : kTsharkCounts) expected[e.file] = e;
  Counts total;
  std::map<DropReason, int> reasons;
  for (const auto& f : files) {
    auto name = std::filesystem::path(f).filename().string();
    INFO(name);
    auto cap = load_capture(f);
    REQUIRE(cap.is_ok());
    Counts n = count(*cap, &reasons);
    total.v4 += n.v4;
    total.v6 += n.v6;
    total.tcp += n.tcp;
    total.udp += n.udp;
    total.bad += n.bad;
    if (auto m = kMalformed.find(name); m != kMalformed.end()) {
      CHECK(n.v4 == m->second.v4);
      CHECK(n.v6 == m->second.v6);
      CHECK(n.tcp == m->second.tcp);
      CHECK(n.udp == m->second.udp);
      CHECK(n.bad == m->second.bad);
      continue;
    }
    REQUIRE(expected.count(name) == 1);
    const auto& t = expected[name];
    CHECK(n.v4 == t.v4);
    CHECK(n.v6 == t.v6);
    CHECK(n.tcp == t.tcp);
    CHECK(n.udp == t.udp);
    CHECK(n.bad == 0);
  }
  CHECK(total.v4 == 95014);
  CHECK(total.v6 == 1809);
  CHECK(total.bad == 196);
  CHECK(reasons[DropReason::kBadTotalLength] == 141);
}

TEST_CASE("parse<true> on a fresh descriptor fills it as parse does a stale one, on every capture frame") {
  // The worker path parses DPDK's descriptors with parse<true> (Port::fresh_rx), skipping the resets: every path
  // through the parser must then leave the same fields as the full parse of a descriptor full of stale bytes.
  uint64_t frames = 0;
  for (const auto& f : list_captures(data_path("pcap/ndpi"))) {
    auto cap = load_capture(f);
    REQUIRE(cap.is_ok());
    for (const auto& fr : cap->frames) {
      if (fr.size() > 0xffff) continue;
      std::vector<uint8_t> copy(fr);
      for (bool verify : {true, false}) {
        const ParseOptions o{.verify_ipv4_checksum = verify};
        Packet stale = stale_packet();
        stale.data = copy.data();
        stale.len = static_cast<uint16_t>(copy.size());
        stale.hash = 0;            // what the worker path sets itself when the port's descriptors are not fresh
        stale.flow_id = kNoFlow;
        Packet fresh = view(copy);  // a default Packet with data and len
        const DropReason a = parse(stale, o);
        const DropReason b = parse<true>(fresh, o);
        stale.data = fresh.data;  // the fields rx sets, which parse does not touch: as the fresh one's
        stale.buf = fresh.buf;
        stale.rx_ns = fresh.rx_ns;
        stale.seq = fresh.seq;
        stale.out_port = fresh.out_port;
        stale.lane = fresh.lane;
        stale.service = fresh.service;
        stale.port = fresh.port;
        stale.buf_kind = fresh.buf_kind;
        INFO(f << " frame " << frames);
        CHECK(a == b);
        CHECK(same_fields(stale, fresh));
      }
      ++frames;
    }
  }
  CHECK(frames > 90'000);
}

TEST_CASE("a missing or unreadable capture gives an actionable error") {
  auto r = load_capture("/nonexistent/x.pcap");
  REQUIRE_FALSE(r.is_ok());
  CHECK(r.status().code() == Code::kNotFound);
  auto tmp = std::filesystem::temp_directory_path() / "hpr_not_a_capture.pcap";
  { FILE* f = std::fopen(tmp.c_str(), "w"); std::fputs("hello", f); std::fclose(f); }
  auto r2 = load_capture(tmp.string());
  REQUIRE_FALSE(r2.is_ok());
  CHECK(r2.status().message().find(tmp.string()) != std::string::npos);
}

TEST_CASE("a capture cut short keeps its whole records and says so") {
  auto cap = load_capture(data_path("pcap/ndpi/fuzz-2021-10-13.pcap"));
  REQUIRE(cap.is_ok());
  CHECK(cap->size() == 1);
  CHECK(cap->warning.find("truncated") != std::string::npos);
}

TEST_CASE("well-formed frames get their offsets") {
  SECTION("IPv4 UDP") {
    auto f = ipv4_frame(17, 10);
    Packet p = view(f);
    REQUIRE(parse(p) == DropReason::kNone);
    CHECK(p.l3 == L3::kIPv4);
    CHECK(p.l3_off == 14);
    CHECK(p.l4_off == 34);
    CHECK(p.payload_off == 42);
    CHECK(p.payload_len == 10);
  }
  SECTION("IPv4 with options and TCP; Ethernet padding is not payload") {
    auto f = ipv4_frame(6, 3, 64, 1, 2, 1, 2, /*options_words=*/2);
    f.resize(f.size() + 7, 0);  // padding
    Packet p = view(f);
    REQUIRE(parse(p) == DropReason::kNone);
    CHECK((p.flags & kFlagIpOptions) != 0);
    CHECK(p.l4_off == 14 + 28);
    CHECK(p.payload_len == 3);
  }
  SECTION("802.1Q then 802.1ad tags") {
    auto f = ipv4_frame(17, 4);
    std::vector<uint8_t> tagged(f.begin(), f.begin() + 12);
    for (uint16_t tpid : {0x88a8, 0x8100}) {
      tagged.push_back(static_cast<uint8_t>(tpid >> 8));
      tagged.push_back(static_cast<uint8_t>(tpid));
      tagged.push_back(0);
      tagged.push_back(5);
    }
    tagged.insert(tagged.end(), f.begin() + 12, f.end());
    Packet p = view(tagged);
    REQUIRE(parse(p) == DropReason::kNone);
    CHECK((p.flags & kFlagVlan) != 0);
    CHECK(p.l3_off == 22);
    CHECK(p.payload_len == 4);
  }
  SECTION("IPv6 with hop-by-hop and fragment headers") {
    std::vector<uint8_t> f(14 + 40 + 8 + 8 + 8 + 5, 0);
    f[12] = 0x86;
    f[13] = 0xdd;
    uint8_t* h = f.data() + 14;
    h[0] = 0x60;
    uint16_t plen = 8 + 8 + 8 + 5;
    h[4] = static_cast<uint8_t>(plen >> 8);
    h[5] = static_cast<uint8_t>(plen);
    h[6] = 0;        // hop-by-hop
    h[40] = 44;      // next: fragment
    h[41] = 0;       // 8 bytes
    h[48] = 17;      // next: UDP; offset 0, M=1
    h[51] = 1;
    Packet p = view(f);
    REQUIRE(parse(p) == DropReason::kNone);
    CHECK(p.l3 == L3::kIPv6);
    CHECK(p.l4 == 17);
    CHECK(p.l4_off == 14 + 56);
    CHECK(p.payload_len == 5);
    CHECK((p.flags & kFlagFragment) != 0);
    CHECK((p.flags & kFlagPorts) == 0);  // a first fragment: the flow key leaves its ports out
  }
  SECTION("the flow key's ports (kFlagPorts): TCP and UDP, not ICMP, not a fragment") {
    for (uint8_t proto : {6, 17, 1}) {
      auto f = ipv4_frame(proto, 8);
      Packet p = view(f);
      REQUIRE(parse(p) == DropReason::kNone);
      CHECK(((p.flags & kFlagPorts) != 0) == (proto != 1));
      f[14 + 6] = 0x20;  // MF: the first fragment of a datagram, with its L4 header
      p = view(f);
      REQUIRE(parse(p, {.verify_ipv4_checksum = false}) == DropReason::kNone);
      CHECK(p.l4_off != kNoOffset);
      CHECK((p.flags & kFlagPorts) == 0);
    }
  }
  SECTION("non-IP frames pass as L3 other") {
    std::vector<uint8_t> arp(60, 0);
    arp[12] = 0x08;
    arp[13] = 0x06;
    Packet p = view(arp);
    CHECK(parse(p) == DropReason::kNone);
    CHECK(p.l3 == L3::kOther);
  }
  SECTION("a non-first IPv4 fragment has no L4 header") {
    auto f = ipv4_frame(6, 30);
    f[14 + 6] = 0x00;
    f[14 + 7] = 0x10;  // fragment offset 16 × 8 bytes
    fix_ipv4_checksum(f);
    Packet p = view(f);
    REQUIRE(parse(p) == DropReason::kNone);
    CHECK(p.l4_off == kNoOffset);
    CHECK(p.payload_off == 34);
    CHECK(p.payload_len == 50);
  }
}

TEST_CASE("every malformed case gets its drop reason and never reads out of bounds") {
  auto check = [](std::vector<uint8_t> f, DropReason want) {
    std::vector<uint8_t> exact(f);  // exact size so ASan sees overreads
    Packet p = view(exact);
    CHECK(parse(p) == want);
    CHECK(p.drop == want);
  };
  auto good = ipv4_frame(6, 20);
  SECTION("frame shorter than Ethernet") { check(std::vector<uint8_t>(good.begin(), good.begin() + 13), DropReason::kTruncated); }
  SECTION("IPv4 header cut") { check(std::vector<uint8_t>(good.begin(), good.begin() + 30), DropReason::kTruncated); }
  SECTION("bad version") {
    auto f = good;
    f[14] = 0x55;
    check(f, DropReason::kBadVersion);
  }
  SECTION("IHL below 5") {
    auto f = good;
    f[14] = 0x44;
    check(f, DropReason::kBadIhl);
  }
  SECTION("IHL beyond the frame") {
    auto f = ipv4_frame(17, 0);
    f[14] = 0x4f;  // 60 bytes of header, frame has 28 after L2
    check(f, DropReason::kBadIhl);
  }
  SECTION("total length beyond the frame") {
    auto f = good;
    f[16] = 0x05;
    fix_ipv4_checksum(f);
    check(f, DropReason::kBadTotalLength);
  }
  SECTION("total length below the header") {
    auto f = good;
    f[16] = 0;
    f[17] = 10;
    fix_ipv4_checksum(f);
    check(f, DropReason::kBadTotalLength);
  }
  SECTION("header checksum wrong") {
    auto f = good;
    f[14 + 10] ^= 0xff;
    check(f, DropReason::kBadChecksum);
  }
  SECTION("TCP data offset beyond IP payload") {
    auto f = good;
    f[14 + 20 + 12] = 0xf0;  // 60-byte TCP header, only 40 bytes there
    check(f, DropReason::kTruncated);
  }
  SECTION("UDP header cut by the IP length") {
    auto f = ipv4_frame(17, 0);
    f[17] = 24;  // total 24: 4 bytes of UDP
    fix_ipv4_checksum(f);
    check(f, DropReason::kTruncated);
  }
  SECTION("IPv6 payload length beyond the frame") {
    std::vector<uint8_t> f(14 + 40, 0);
    f[12] = 0x86;
    f[13] = 0xdd;
    f[14] = 0x60;
    f[14 + 5] = 8;
    check(f, DropReason::kBadTotalLength);
  }
  SECTION("IPv6 extension header beyond the payload") {
    std::vector<uint8_t> f(14 + 40 + 8, 0);
    f[12] = 0x86;
    f[13] = 0xdd;
    f[14] = 0x60;
    f[14 + 5] = 8;
    f[14 + 6] = 0;        // hop-by-hop
    f[14 + 41] = 3;       // 32 bytes long
    check(f, DropReason::kBadExtHeader);
  }
  SECTION("IPv6 endless extension chain") {
    std::vector<uint8_t> f(14 + 40 + 8 * 12, 0);
    f[12] = 0x86;
    f[13] = 0xdd;
    f[14] = 0x60;
    f[14 + 5] = 8 * 12;
    f[14 + 6] = 60;
    for (int i = 0; i < 12; ++i) f[14 + 40 + 8 * i] = 60;  // destination options forever
    check(f, DropReason::kBadExtHeader);
  }
  SECTION("VLAN tag cut") {
    std::vector<uint8_t> f(15, 0);
    f[12] = 0x81;
    f[13] = 0x00;
    check(f, DropReason::kTruncated);
  }
}
