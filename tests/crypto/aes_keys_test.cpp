// Key sources of the aes app (issue 16 item 7, kernels/aes/key_source.hpp): key material is never echoed
// in an error, master key from a setting, a file or HPR_MASTER_KEY with a fixed precedence, conflicting
// settings refused, key files that hold no key refused, a malformed key epoch refused by name.
#include <unistd.h>

#include <catch2/catch.hpp>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>

#include "kernels/aes/key_derive.hpp"
#include "kernels/aes/key_source.hpp"
#include "kernels/registry.hpp"
#include "tests/common/env_var.hpp"
#include "tests/common/log_capture.hpp"

using namespace hpr;
using namespace hpr::kernels;
using namespace hpr::kernels::aes;

namespace {

constexpr uint32_t kCap = 64;
// A "secret" with a typo (31 hex digits + 'z', or one digit short): the text must never be printed.
const std::string kSecret = "5ec2e75ec2e75ec2e75ec2e75ec2e7a";          // 31 characters
const std::string kSecretBadChar = "5ec2e75ec2e75ec2e75ec2e75ec2e7az";  // 32, 'z' at 32
const std::string kGood = "000102030405060708090a0b0c0d0e0f";
const std::string kEpoch = "a0a1a2a3a4a5a6a7a8a9aaabacadaeaf";

std::string tmp_path(const std::string& name) {
  return std::filesystem::temp_directory_path() / ("hpr_aes_keys_" + std::to_string(getpid()) + "_" + name);
}
std::string write_tmp(const std::string& name, const std::string& text) {
  std::string p = tmp_path(name);
  std::ofstream(p, std::ios::binary) << text;
  return p;
}

// The fragments of a secret long enough to identify it.
void check_not_echoed(const std::string& message, const std::string& secret) {
  INFO(message);
  for (size_t i = 0; i + 8 <= secret.size(); ++i) CHECK(message.find(secret.substr(i, 8)) == std::string::npos);
}

// The key a source gives connection numbered_flow(f) in slot f.
Key key_of(const AesKeys& k, uint32_t f) {
  auto key = k.source->key_for(f, tuple_of(numbered_flow(f)));
  REQUIRE(key.has_value());
  return *key;
}
bool same_keys(const AesKeys& a, const AesKeys& b) {
  for (uint32_t f = 0; f < 16; ++f)
    if (key_of(a, f) != key_of(b, f)) return false;
  return true;
}

}  // namespace

TEST_CASE("aes keys: a malformed master key is described, never echoed") {
  for (const auto& secret : {kSecret, kSecretBadChar}) {
    AppOptions opt;
    opt.key_capacity = kCap;
    opt.master_key = secret;
    auto a = make_app("aes", opt);
    REQUIRE_FALSE(a);
    CHECK(a.status().code() == Code::kInvalidArgument);
    CHECK_THAT(a.status().message(), Catch::StartsWith("app.master_key (--master-key): want 32 hex digits"));
    check_not_echoed(a.status().message(), secret);
  }
  CHECK(parse_hex_key(kSecret).status().message() == "want 32 hex digits (AES-128), got 31 characters");
  CHECK(parse_hex_key(kSecretBadChar).status().message() == "want 32 hex digits (AES-128), character 32 is not one");
  CHECK(parse_hex_key("000102030405060708090A0B0C0D0E0F").value() == parse_hex_key(kGood).value());
}

TEST_CASE("aes keys: a malformed key-file line is described by file:line and field, never echoed") {
  const std::string key = "a1b2c3d4e5f60718293a4b5c6d7e8f90";
  const std::string lines[] = {
      "flow 1 " + kSecretBadChar,                      // bad key
      "tcp 10.0.0.1 80 " + key + " 443 10.0.0.2",      // shifted: the key where an address belongs
      "flow " + key + " 1",                            // the key where the flow id belongs
      key + " 10.0.0.1 80 10.0.0.2 443 " + key,        // the key where the protocol belongs
      "udp " + key + " 80 10.0.0.2 443 " + key,        // ... the source address
      "udp 10.0.0.1 " + key + " 10.0.0.2 443 " + key,  // ... the source port
      "udp 10.0.0.1 80 10.0.0.2 " + key + " " + key,   // ... the destination port
  };
  for (const auto& line : lines) {
    auto r = parse_key_text("# lab\n" + line + "\n", "k.txt");
    REQUIRE_FALSE(r);
    CHECK_THAT(r.status().message(), Catch::StartsWith("k.txt:2: "));
    check_not_echoed(r.status().message(), key);
    check_not_echoed(r.status().message(), kSecretBadChar);
  }
  // Through the app factory, from a file: the path and line, not the line.
  const std::string path = write_tmp("bad.keys", "flow 0 " + kGood + "\nflow 1 " + kSecretBadChar + "\n");
  AppOptions opt;
  opt.key_capacity = kCap;
  opt.keys = path;
  auto a = make_app("aes", opt);
  std::filesystem::remove(path);
  REQUIRE_FALSE(a);
  CHECK_THAT(a.status().message(), Catch::StartsWith("app.keys (--keys): " + path + ":2: key: want 32 hex digits"));
  check_not_echoed(a.status().message(), kSecretBadChar);
}

TEST_CASE("aes keys: master_key_file gives the same keys as master_key; bad files refused by name") {
  auto direct = make_keys({.master_key = kGood, .key_epoch = kEpoch}, kCap);
  REQUIRE(direct);
  const std::string path = write_tmp("master.key", "\n  " + kGood + "\r\n\n");
  auto from_file = make_keys({.master_key_file = path, .key_epoch = kEpoch}, kCap);
  std::filesystem::remove(path);
  REQUIRE(from_file);
  CHECK(same_keys(*direct, *from_file));
  CHECK(direct->table->key_count() == 0);  // keys are set when their connections start

  const std::string dir = tmp_path("keydir");
  std::filesystem::create_directory(dir);
  const std::string empty = write_tmp("empty.key", " \n\n");
  const std::string bad = write_tmp("bad.key", kSecretBadChar + "\n");
  const std::string two = write_tmp("two.key", kGood + "\n" + kSecret + "\n");
  const std::string big = write_tmp("big.key", std::string(kMaxKeyFileBytes + 1, ' '));
  struct Case {
    std::string path, want;
    Code code;
  };
  for (const Case& c :
       {Case{dir, "is a directory", Code::kInvalidArgument},
        Case{tmp_path("missing.key"), "cannot open", Code::kNotFound}, Case{empty, "is empty", Code::kInvalidArgument},
        Case{bad, "want 32 hex digits (AES-128), character 32 is not one", Code::kInvalidArgument},
        Case{two, "want 32 hex digits (AES-128), got", Code::kInvalidArgument},
        Case{big, "is larger than 4096 bytes", Code::kInvalidArgument}}) {
    AppOptions opt;
    opt.key_capacity = kCap;
    opt.master_key_file = c.path;
    auto a = make_app("aes", opt);
    REQUIRE_FALSE(a);
    INFO(a.status().message());
    CHECK(a.status().code() == c.code);
    CHECK_THAT(a.status().message(), Catch::StartsWith("app.master_key_file (--master-key-file): '" + c.path + "'"));
    CHECK_THAT(a.status().message(), Catch::Contains(c.want));
    check_not_echoed(a.status().message(), kSecret);
    check_not_echoed(a.status().message(), kSecretBadChar);
    check_not_echoed(a.status().message(), kGood);
  }
  for (const auto& p : {empty, bad, two, big}) std::filesystem::remove(p);
  std::filesystem::remove(dir);
}

TEST_CASE("aes keys: HPR_MASTER_KEY is read only when no setting is given") {
  auto direct = make_keys({.master_key = kGood, .key_epoch = kEpoch}, kCap);
  REQUIRE(direct);
  {
    test::EnvVar env(kMasterKeyEnv, kGood);
    hpr::test::LogCapture log;
    AppOptions opt;
    opt.key_capacity = kCap;
    opt.key_epoch = kEpoch;
    auto a = make_app("aes", opt);
    REQUIRE(a);
    const auto& app = dynamic_cast<const AesApp&>(**a);
    app.flow_started(5, numbered_flow(5));
    REQUIRE(app.keys().has_key(5));
    CHECK(std::memcmp(app.keys().slot(5)->rk.bytes, expand_key(key_of(*direct, 5)).bytes, kScheduleBytes) == 0);
    CHECK_THAT(log.text(), Catch::Contains("HPR_MASTER_KEY"));
    check_not_echoed(log.text(), kGood);
  }
  {
    // A setting wins; the environment is then not used, and that is logged.
    const std::string other = "ffeeddccbbaa99887766554433221100";
    test::EnvVar env(kMasterKeyEnv, other);
    hpr::test::LogCapture log;
    auto t = make_keys({.master_key = kGood, .env_master_key = other, .key_epoch = kEpoch}, kCap);
    REQUIRE(t);
    CHECK(same_keys(*t, *direct));
    CHECK_THAT(log.text(),
               Catch::Contains("HPR_MASTER_KEY is set and not used: app.master_key (--master-key) is given"));
    check_not_echoed(log.text(), other);
  }
  {
    test::EnvVar env(kMasterKeyEnv, kSecret);
    AppOptions opt;
    opt.key_capacity = kCap;
    auto a = make_app("aes", opt);
    REQUIRE_FALSE(a);
    CHECK_THAT(a.status().message(), Catch::StartsWith("HPR_MASTER_KEY (environment): want 32 hex digits"));
    check_not_echoed(a.status().message(), kSecret);
  }
  auto none = make_keys({}, kCap);
  REQUIRE_FALSE(none);
  CHECK_THAT(none.status().message(), Catch::Contains("app.master_key") && Catch::Contains("app.keys") &&
                                          Catch::Contains("app.master_key_file") && Catch::Contains("HPR_MASTER_KEY"));
}

TEST_CASE("aes keys: two sources given at once are refused, naming both settings") {
  const std::string keys = write_tmp("ok.keys", "flow 3 " + kGood + "\n");
  const std::string mfile = write_tmp("ok.key", kGood);
  struct Case {
    KeySources s;
    std::string a, b;
  };
  for (const Case& c :
       {Case{{.keys = keys, .master_key = kGood}, "app.keys (--keys)", "app.master_key (--master-key)"},
        Case{{.keys = keys, .master_key_file = mfile}, "app.keys (--keys)", "app.master_key_file (--master-key-file)"},
        Case{{.master_key = kGood, .master_key_file = mfile},
             "app.master_key (--master-key)",
             "app.master_key_file (--master-key-file)"}}) {
    auto t = make_keys(c.s, kCap);
    REQUIRE_FALSE(t);
    CHECK(t.status().code() == Code::kInvalidArgument);
    CHECK_THAT(t.status().message(), Catch::Contains(c.a + " and " + c.b + " are both given"));
    check_not_echoed(t.status().message(), kGood);
  }
  auto only_keys = make_keys({.keys = keys}, kCap);
  REQUIRE(only_keys);
  CHECK(only_keys->table->key_count() == 1);
  CHECK(only_keys->table->has_key(3));
  std::filesystem::remove(keys);
  std::filesystem::remove(mfile);
}

TEST_CASE("aes keys: a key file that holds no key, or a directory, is refused naming app.keys and the path") {
  const std::string dir = tmp_path("keys.d");
  std::filesystem::create_directory(dir);
  const std::string empty = write_tmp("empty.keys", "");
  const std::string comments = write_tmp("comments.keys", "# nothing yet\n\n");
  for (const auto& p : {dir, empty, comments}) {
    AppOptions opt;
    opt.key_capacity = kCap;
    opt.keys = p;
    auto a = make_app("aes", opt);
    REQUIRE_FALSE(a);
    INFO(a.status().message());
    CHECK(a.status().code() == Code::kInvalidArgument);
    CHECK_THAT(a.status().message(), Catch::StartsWith("app.keys (--keys): ") && Catch::Contains("'" + p + "'"));
    check_not_echoed(a.status().message(), kGood);
  }
  for (const auto& p : {empty, comments}) std::filesystem::remove(p);
  std::filesystem::remove(dir);

  // Connection lines beside flow lines: the flow lines are set at once, connection lines when their
  // connection starts (both said in the log). A file of connection lines only is a file of keys too.
  const std::string mixed =
      write_tmp("mixed.keys", "flow 2 " + kGood + "\nudp 10.0.0.1 53 10.0.0.2 53 " + kGood + "\n");
  const std::string conns = write_tmp("conns.keys", "tcp 10.0.0.1 1234 10.0.0.2 80 " + kGood + "\n");
  hpr::test::LogCapture log;
  auto t = make_keys({.keys = mixed}, kCap);
  auto c = make_keys({.keys = conns}, kCap);
  std::filesystem::remove(mixed);
  std::filesystem::remove(conns);
  REQUIRE(t);
  REQUIRE(c);
  CHECK(t->table->key_count() == 1);
  CHECK(c->table->key_count() == 0);
  CHECK_THAT(log.text(), Catch::Contains("key file '" + mixed + "': 1 flow-id key(s) set, 1 connection key(s)"));
  check_not_echoed(log.text(), kGood);
}

TEST_CASE("aes keys: a malformed key epoch is refused naming app.key_epoch, never echoed; a good one is used") {
  for (const auto& secret : {kSecret, kSecretBadChar}) {
    AppOptions opt;
    opt.key_capacity = kCap;
    opt.master_key = kGood;
    opt.key_epoch = secret;
    hpr::test::LogCapture log;
    auto a = make_app("aes", opt);
    REQUIRE_FALSE(a);
    INFO(a.status().message());
    CHECK(a.status().code() == Code::kInvalidArgument);
    CHECK_THAT(a.status().message(), Catch::StartsWith("app.key_epoch (--key-epoch): want 32 hex digits"));
    check_not_echoed(a.status().message(), secret);
    check_not_echoed(a.status().message(), kGood);
    check_not_echoed(log.text(), kGood);
  }
  // Given: announced in the log and the summary as it was given; not given: random, announced too.
  hpr::test::LogCapture log;
  AppOptions opt;
  opt.key_capacity = kCap;
  opt.master_key = kGood;
  opt.key_epoch = kEpoch;
  auto given = make_app("aes", opt);
  REQUIRE(given);
  CHECK((*given)->summary_info() == std::vector<std::pair<std::string, std::string>>{{"key_epoch", kEpoch}});
  CHECK_THAT(log.text(), Catch::Contains("key epoch " + kEpoch + " (from app.key_epoch)"));
  opt.key_epoch.clear();
  auto r1 = make_app("aes", opt), r2 = make_app("aes", opt);
  REQUIRE(r1);
  REQUIRE(r2);
  const std::string e1 = (*r1)->summary_info().at(0).second;
  CHECK(e1.size() == 32);
  CHECK(e1 != (*r2)->summary_info().at(0).second);
  CHECK_THAT(log.text(), Catch::Contains("key epoch " + e1 + " (random for this run"));
  check_not_echoed(log.text(), kGood);
}
