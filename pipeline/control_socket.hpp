#pragma once
// The daemon's control socket (issue 17; DPDK's telemetry socket and VPP's cli.sock are the models): a UNIX stream
// socket, one JSON request per line ({"cmd": "status", "args": [...]}), one JSON reply per line ({"ok": true, ...}
// or {"ok": false, "error": "..."}). `hpr ctl` is its client (cli/ctl_cmd.cpp).
//
// Bounds, so that no client can hurt the data path: requests of at most kMaxRequest bytes (a longer one gets an error
// reply and the connection is closed), at most kMaxClients connections at once, a client that sends nothing for
// kIdleMs is closed, at most kMaxRate requests a second over all clients (the rest get a "busy" reply). One thread
// serves every client (poll); the handler runs on it, so it must not block for long. Commands named `slow` at start
// (reloads, which take seconds) run on a thread of their own, one at a time (another meanwhile gets a "busy" reply),
// while the server goes on answering the others; such a request's connection is closed after its reply.
//
// The socket file: mode 0660 (only the owner and its group may connect), its folder made if missing (0750). A stale
// file (left by a daemon that was killed: nothing answers on it) is replaced; one where another daemon answers is
// refused. The file is removed when the server stops.
#include <atomic>
#include <functional>
#include <memory>
#include <string>
#include <thread>
#include <variant>
#include <vector>

#include <nlohmann/json.hpp>

#include "hpr/status.hpp"

namespace hpr {

class ControlServer {
 public:
  static constexpr size_t kMaxRequest = 64 * 1024;
  static constexpr int kMaxClients = 16;
  static constexpr int kIdleMs = 5000;
  static constexpr int kMaxRate = 200;

  // Returns the reply's fields for a request (the server adds "ok": true), or an error Status whose message becomes
  // the error reply. Called on the server's thread only.
  using Handler = std::function<Result<nlohmann::json>(const std::string& cmd, const std::vector<std::string>& args)>;

  // Errors (naming `setting` and the path): the folder cannot be made, the path is too long for a UNIX socket,
  // another daemon answers on it, bind/listen fail.
  // `idle_ms`: how long a client may send nothing before it is closed (tests shorten it).
  static Result<std::unique_ptr<ControlServer>> start(const std::string& path, Handler handler,
                                                      const std::string& setting, int idle_ms = kIdleMs,
                                                      std::vector<std::string> slow = {});
  ~ControlServer();
  const std::string& path() const { return path_; }
  uint64_t requests() const { return requests_.load(); }
  uint64_t refused() const { return refused_.load(); }  // error replies for bad, oversized or too frequent requests

 private:
  ControlServer() = default;
  struct Request {
    std::string cmd;
    std::vector<std::string> args;
  };
  void serve();
  // The request on one line, or the error reply to it (rate, JSON, shape).
  std::variant<Request, std::string> parse(const std::string& line);
  std::string answer(const Request& req);  // the handler's reply, as one JSON line
  bool is_slow(const std::string& cmd) const;
  void run_slow(int fd, Request req);  // on slow_thread_; closes fd

  std::string path_;
  Handler handler_;
  int listen_fd_ = -1;
  int wake_[2] = {-1, -1};  // a pipe: the destructor writes to it to end serve()
  std::thread thread_;
  std::atomic<uint64_t> requests_{0}, refused_{0};
  int idle_ms_ = kIdleMs;
  std::vector<std::string> slow_;
  std::thread slow_thread_;
  std::atomic<bool> slow_busy_{false};
  uint64_t window_start_ns_ = 0;
  int window_count_ = 0;
};

// Where `hpr run` and `hpr ctl` put the socket by default: /run/hpr/hpr.sock as root, else
// $XDG_RUNTIME_DIR/hpr/hpr.sock, else /tmp/hpr-<uid>/hpr.sock.
std::string default_control_path();

// One request to a control socket and its reply (hpr ctl, tests). Errors: kUnavailable naming the path when nothing
// answers (no daemon, or permission), kIoError when the reply does not come within `timeout_ms`.
Result<nlohmann::json> control_request(const std::string& path, const std::string& cmd,
                                       const std::vector<std::string>& args, int timeout_ms = 5000);

}  // namespace hpr
