// Route files as they come (issue 16 item 9): pyasn tables with IPv6 prefixes mixed in (newer RouteViews
// conversions), duplicate prefixes counted, the decompressed size capped (gzip bomb), and the one log line
// of the ipv4 app factory.
#include <unistd.h>
#include <zlib.h>

#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "hpr/data_dir.hpp"
#include "kernels/ipv4/routes.hpp"
#include "kernels/registry.hpp"
#include "tests/common/log_capture.hpp"

using namespace hpr::kernels::ipv4;

namespace {

std::string tmp_path(const std::string& name) {
  return std::filesystem::temp_directory_path() / ("hpr_ipv4_rf_" + std::to_string(getpid()) + "_" + name);
}

void write_gzip(const std::string& path, const std::string& text) {
  gzFile f = gzopen(path.c_str(), "wb9");
  REQUIRE(f != nullptr);
  REQUIRE(gzwrite(f, text.data(), static_cast<unsigned>(text.size())) == static_cast<int>(text.size()));
  REQUIRE(gzclose(f) == Z_OK);
}

// The header and the first `n` route lines of the real RouteViews table, as text.
struct Slice {
  std::string header;
  std::vector<std::string> lines;
};
Slice real_slice(size_t n) {
  auto text = read_maybe_gzip(hpr::data_path("routes/ipasn_20140513.dat.gz"));
  REQUIRE(text);
  Slice s;
  size_t pos = 0;
  while (pos < text->size() && s.lines.size() < n) {
    size_t nl = text->find('\n', pos);
    std::string line = text->substr(pos, nl - pos);
    pos = nl + 1;
    if (line.empty() || line[0] == ';')
      s.header += line + "\n";
    else
      s.lines.push_back(line);
  }
  return s;
}

}  // namespace

TEST_CASE("a real table with IPv6 lines among and after the IPv4 ones loads its IPv4 routes") {
  const Slice s = real_slice(3000);
  REQUIRE(s.lines.size() == 3000);
  const std::vector<std::string> v6 = {"2001:db8::/32\t64496", "2001:200::/23\t2500", "2a00:1450::/29\t15169",
                                       "::/0\t64497", "2001:db8:1::/48\t64498"};
  std::string mixed = s.header;
  std::string v4_only = s.header;
  size_t v6_lines = 0;
  for (size_t i = 0; i < s.lines.size(); ++i) {
    mixed += s.lines[i] + "\n";
    v4_only += s.lines[i] + "\n";
    if (i % 700 == 0) mixed += v6[v6_lines++ % v6.size()] + "\n";  // among the IPv4 lines
  }
  for (const auto& l : v6) {  // after them, as newer conversions do
    mixed += l + "\n";
    ++v6_lines;
  }
  mixed += s.lines[10].substr(0, s.lines[10].find('\t')) + "\t7\n";  // a duplicate prefix: the later line wins
  v4_only += s.lines[10].substr(0, s.lines[10].find('\t')) + "\t7\n";

  const std::string path = tmp_path("mixed.dat.gz");
  write_gzip(path, mixed);
  auto got = load_ipasn(path, 16);
  auto want = parse_ipasn(v4_only, "v4", 16);
  std::filesystem::remove(path);
  REQUIRE(got);
  REQUIRE(want);
  CHECK(got->routes == want->routes);
  CHECK(got->routes.size() == 3001);
  CHECK(got->ipv6_skipped == v6_lines);
  CHECK(got->duplicates == 1);
  CHECK(got->routes.back().next_hop == 7);
}

TEST_CASE("IPv6 lines in plain route text are skipped and counted; a bad IPv6 prefix is still an error") {
  auto r = parse_route_text("10.0.0.0/8 1\nfe80::/10 2\n10.0.0.0/8 3\n2001:db8::/32 1\n", "t.txt");
  REQUIRE(r);
  CHECK(r->routes.size() == 2);
  CHECK(r->ipv6_skipped == 2);
  CHECK(r->duplicates == 1);

  for (const char* bad : {"2001:db8::/129\t1\n", "2001:zz8::/32\t1\n", "2001:db8::\t1\n"}) {
    INFO(bad);
    auto e = parse_ipasn(std::string("1.0.0.0/24\t1\n") + bad, "x.dat", 4);
    REQUIRE_FALSE(e);
    CHECK(e.status().code() == hpr::Code::kInvalidArgument);
    CHECK_THAT(e.status().message(), Catch::StartsWith("x.dat:2: "));
  }
  auto only6 = parse_ipasn("2001:db8::/32\t64496\n", "six.dat", 4);
  REQUIRE_FALSE(only6);
  CHECK_THAT(only6.status().message(), Catch::Contains("six.dat: no IPv4 routes") && Catch::Contains("1 IPv6"));
}

TEST_CASE("the decompressed size is capped: a gzip of newlines is refused at the cap") {
  const std::string path = tmp_path("bomb.dat.gz");
  write_gzip(path, std::string(size_t{5} << 20, '\n'));  // 5 MiB of newlines, ~5 KB of gzip
  CHECK(std::filesystem::file_size(path) < 64 * 1024);
  auto r = read_maybe_gzip(path, size_t{1} << 20);
  REQUIRE_FALSE(r);
  CHECK(r.status().code() == hpr::Code::kInvalidArgument);
  CHECK_THAT(r.status().message(), Catch::StartsWith(path + ": more than 1 MiB after decompression"));
  auto whole = read_maybe_gzip(path, size_t{8} << 20);  // under the cap: read as before
  std::filesystem::remove(path);
  REQUIRE(whole);
  CHECK(whole->size() == size_t{5} << 20);
  CHECK(kMaxRouteFileBytes == size_t{256} << 20);
}

TEST_CASE("a directory as the route file is refused by name") {
  const std::string dir = tmp_path("dir.dat");
  std::filesystem::create_directory(dir);
  auto r = load_ipasn(dir, 4);
  std::filesystem::remove(dir);
  REQUIRE_FALSE(r);
  CHECK(r.status().code() == hpr::Code::kInvalidArgument);
  CHECK_THAT(r.status().message(), Catch::Contains(dir) && Catch::Contains("directory"));
}

TEST_CASE("the ipv4 app factory logs one line: prefixes, IPv6 lines skipped, duplicates") {
  const std::string path = tmp_path("log.txt");
  std::ofstream(path) << "10.0.0.0/8 1\n2001:db8::/32 2\n10.1.0.0/16 2\n10.0.0.0/8 3\n";
  hpr::test::LogCapture log;
  hpr::kernels::AppOptions opt;
  opt.routes = path;
  auto app = hpr::kernels::make_app("ipv4", opt);
  std::filesystem::remove(path);
  REQUIRE(app);
  CHECK_THAT(log.text(), Catch::Contains("routes: 3 IPv4 prefixes from " + path +
                                         " (1 IPv6 lines skipped, 1 duplicates, later line wins)"));
}
