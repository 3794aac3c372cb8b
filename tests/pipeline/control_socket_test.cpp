// The control socket (pipeline/control_socket.hpp, issue 17): requests and replies, and every bad client or file
// answered with an error while the server goes on: not JSON, wrong types, an oversized request, one that sends
// nothing, too many clients, a stale socket file, a second server on the same path, a path that is not a socket.
#include <catch2/catch.hpp>

#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <condition_variable>
#include <cstring>
#include <mutex>
#include <filesystem>
#include <fstream>
#include <thread>

#include "pipeline/control_socket.hpp"

using namespace hpr;
namespace fs = std::filesystem;

namespace {

std::string temp_socket() {
  static int n = 0;
  const fs::path d = fs::temp_directory_path() / ("hpr-ctl-test-" + std::to_string(getpid()));
  return (d / ("s" + std::to_string(++n) + ".sock")).string();
}

ControlServer::Handler echo_handler() {
  return [](const std::string& cmd, const std::vector<std::string>& args) -> Result<nlohmann::json> {
    if (cmd == "fail") return error(Code::kInvalidArgument, "fail: as asked");
    return nlohmann::json{{"cmd", cmd}, {"args", args}};
  };
}

int connect_raw(const std::string& path) {
  int fd = socket(AF_UNIX, SOCK_STREAM, 0);
  sockaddr_un a{};
  a.sun_family = AF_UNIX;
  std::strcpy(a.sun_path, path.c_str());
  REQUIRE(connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0);
  return fd;
}

// Everything the server sends until it closes the connection.
std::string read_to_end(int fd) {
  std::string s;
  char buf[4096];
  for (ssize_t n; (n = recv(fd, buf, sizeof buf, 0)) > 0;) s.append(buf, static_cast<size_t>(n));
  close(fd);
  return s;
}

}  // namespace

TEST_CASE("control socket: a request gets its reply; errors are replies; the file is 0660 and removed at the end") {
  const std::string path = temp_socket();
  {
    auto s = ControlServer::start(path, echo_handler(), "control.socket");
    REQUIRE(s);
    struct stat st{};
    REQUIRE(stat(path.c_str(), &st) == 0);
    CHECK(S_ISSOCK(st.st_mode));
    CHECK((st.st_mode & 0777) == 0660);
    auto r = control_request(path, "status", {"a", "b"});
    REQUIRE(r);
    CHECK((*r)["ok"] == true);
    CHECK((*r)["cmd"] == "status");
    CHECK((*r)["args"] == nlohmann::json::array({"a", "b"}));
    auto f = control_request(path, "fail", {});
    REQUIRE(f);
    CHECK((*f)["ok"] == false);
    CHECK((*f)["error"] == "fail: as asked");
    CHECK((*s)->requests() == 2);
  }
  CHECK_FALSE(fs::exists(path));
  auto gone = control_request(path, "status", {});
  REQUIRE_FALSE(gone);
  CHECK_THAT(gone.status().message(), Catch::StartsWith("no hpr answers on " + path));
}

TEST_CASE("control socket: bad requests get error replies and the server goes on") {
  const std::string path = temp_socket();
  auto s = ControlServer::start(path, echo_handler(), "control.socket", 300);
  REQUIRE(s);
  for (const char* bad : {"not json\n", "[1,2]\n", "{\"cmd\": 5}\n", "{\"cmd\": \"x\", \"args\": [1]}\n"}) {
    INFO(bad);
    int fd = connect_raw(path);
    REQUIRE(send(fd, bad, std::strlen(bad), 0) > 0);
    shutdown(fd, SHUT_WR);
    const std::string reply = read_to_end(fd);  // closed after the idle time: the client sends nothing more
    CHECK_THAT(reply, Catch::StartsWith("{\"error\":") && Catch::Contains("\"ok\":false"));
  }
  {  // 1 MiB without a newline: an error reply, then the connection is closed
    int fd = connect_raw(path);
    const std::string big(1 << 20, 'x');
    size_t sent = 0;
    while (sent < big.size()) {
      ssize_t n = send(fd, big.data() + sent, big.size() - sent, MSG_NOSIGNAL);
      if (n <= 0) break;
      sent += static_cast<size_t>(n);
    }
    CHECK(sent < big.size());  // the server stopped reading and closed
    CHECK_THAT(read_to_end(fd), Catch::Contains("request longer than 65536 bytes"));
  }
  {  // a client that sends nothing is closed
    int fd = connect_raw(path);
    CHECK(read_to_end(fd).empty());
  }
  CHECK((*s)->refused() == 5);
  auto r = control_request(path, "status", {});
  REQUIRE(r);
  CHECK((*r)["ok"] == true);
}

TEST_CASE("control socket: more clients than the bound are told so") {
  const std::string path = temp_socket();
  auto s = ControlServer::start(path, echo_handler(), "control.socket");
  REQUIRE(s);
  std::vector<int> held;
  for (int i = 0; i < ControlServer::kMaxClients; ++i) held.push_back(connect_raw(path));
  // The server accepts them in its own time: a request through every held connection shows they are in.
  for (int fd : held) {
    const std::string req = "{\"cmd\": \"ping\"}\n";
    REQUIRE(send(fd, req.data(), req.size(), 0) > 0);
    char buf[256];
    REQUIRE(recv(fd, buf, sizeof buf, 0) > 0);
  }
  int extra = connect_raw(path);
  CHECK_THAT(read_to_end(extra), Catch::Contains("busy: 16 clients already connected"));
  for (int fd : held) close(fd);
}

TEST_CASE("control socket: a stale file is replaced; a live one, or a file that is not a socket, is refused") {
  const std::string path = temp_socket();
  fs::create_directories(fs::path(path).parent_path());
  {  // a socket bound and never listened on: what a killed daemon leaves
    int fd = socket(AF_UNIX, SOCK_STREAM, 0);
    sockaddr_un a{};
    a.sun_family = AF_UNIX;
    std::strcpy(a.sun_path, path.c_str());
    REQUIRE(bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0);
    close(fd);
  }
  auto s = ControlServer::start(path, echo_handler(), "control.socket");
  REQUIRE(s);
  auto second = ControlServer::start(path, echo_handler(), "control.socket (--ctl)");
  REQUIRE_FALSE(second);
  CHECK(second.status().message() ==
        "control.socket (--ctl) " + path + ": another hpr answers on it (stop it, or give this one another --ctl)");
  CHECK(control_request(path, "status", {}));  // the first goes on
  const std::string plain = temp_socket();
  { std::ofstream(plain) << "x"; }
  auto p = ControlServer::start(plain, echo_handler(), "control.socket");
  REQUIRE_FALSE(p);
  CHECK_THAT(p.status().message(), Catch::EndsWith("exists and is not a socket"));
  auto longp = ControlServer::start(std::string(200, 'a'), echo_handler(), "control.socket");
  REQUIRE_FALSE(longp);
  CHECK_THAT(longp.status().message(), Catch::Contains("a UNIX socket path is 1..107 bytes"));
}

TEST_CASE("control socket: a slow command runs apart, one at a time; the others are answered meanwhile") {
  const std::string path = temp_socket();
  std::mutex mu;
  std::condition_variable cv;
  bool release = false, started = false;
  auto handler = [&](const std::string& cmd, const std::vector<std::string>& args) -> Result<nlohmann::json> {
    if (cmd == "reload") {
      std::unique_lock<std::mutex> l(mu);
      started = true;
      cv.notify_all();
      cv.wait(l, [&] { return release; });
      return nlohmann::json{{"reloaded", args.at(0)}};
    }
    return nlohmann::json{{"cmd", cmd}};
  };
  auto s = ControlServer::start(path, handler, "control.socket", ControlServer::kIdleMs, {"reload"});
  REQUIRE(s);
  nlohmann::json first_reply;  // Catch's checks only on this thread
  std::thread first([&] {
    auto r = control_request(path, "reload", {"routes"}, 10000);
    if (r) first_reply = *r;
  });
  {
    std::unique_lock<std::mutex> l(mu);
    cv.wait(l, [&] { return started; });
  }
  // While it runs: another one is refused, a quick command is answered.
  auto busy = control_request(path, "reload", {"rules"});
  REQUIRE(busy);
  CHECK((*busy)["ok"] == false);
  CHECK((*busy)["error"].get<std::string>().find("busy: a reload is under way") != std::string::npos);
  auto quick = control_request(path, "status", {});
  REQUIRE(quick);
  CHECK((*quick)["cmd"] == "status");
  {
    std::lock_guard<std::mutex> l(mu);
    release = true;
  }
  cv.notify_all();
  first.join();
  CHECK(first_reply.value("ok", false));
  CHECK(first_reply.value("reloaded", std::string()) == "routes");
  // Free again: the next one runs.
  {
    std::lock_guard<std::mutex> l(mu);
    started = false;
  }
  auto again = control_request(path, "reload", {"keys"});
  REQUIRE(again);
  CHECK((*again)["reloaded"] == "keys");
}
