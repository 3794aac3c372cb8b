#include "pipeline/control_socket.hpp"

#include <fcntl.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <vector>

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include "hpr/clock.hpp"

namespace hpr {

namespace {

Result<sockaddr_un> unix_address(const std::string& path, const std::string& setting) {
  sockaddr_un a{};
  a.sun_family = AF_UNIX;
  if (path.empty() || path.size() >= sizeof(a.sun_path))
    return error(Code::kInvalidArgument, "{} '{}': a UNIX socket path is 1..{} bytes", setting, path,
                 sizeof(a.sun_path) - 1);
  std::memcpy(a.sun_path, path.c_str(), path.size() + 1);
  return a;
}

// Connects to `path`; the fd, or -errno.
int connect_to(const sockaddr_un& a) {
  int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return -errno;
  if (connect(fd, reinterpret_cast<const sockaddr*>(&a), sizeof(a)) != 0) {
    const int e = errno;
    close(fd);
    return -e;
  }
  return fd;
}

// Writes all of `s` to a non-blocking socket within `timeout_ms`.
bool send_all(int fd, const std::string& s, int timeout_ms) {
  size_t done = 0;
  const uint64_t deadline = monotonic_ns() + uint64_t(timeout_ms) * 1'000'000;
  while (done < s.size()) {
    ssize_t n = send(fd, s.data() + done, s.size() - done, MSG_NOSIGNAL);
    if (n > 0) {
      done += static_cast<size_t>(n);
      continue;
    }
    if (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR) return false;
    const uint64_t now = monotonic_ns();
    if (now >= deadline) return false;
    pollfd p{fd, POLLOUT, 0};
    poll(&p, 1, static_cast<int>((deadline - now) / 1'000'000) + 1);
  }
  return true;
}

std::string error_reply(const std::string& why) { return nlohmann::json{{"ok", false}, {"error", why}}.dump(); }

}  // namespace

std::string default_control_path() {
  if (geteuid() == 0) return "/run/hpr/hpr.sock";
  if (const char* x = std::getenv("XDG_RUNTIME_DIR"); x != nullptr && *x == '/') return std::string(x) + "/hpr/hpr.sock";
  return "/tmp/hpr-" + std::to_string(geteuid()) + "/hpr.sock";
}

Result<std::unique_ptr<ControlServer>> ControlServer::start(const std::string& path, Handler handler,
                                                            const std::string& setting, int idle_ms,
                                                            std::vector<std::string> slow) {
  auto addr = unix_address(path, setting);
  if (!addr) return addr.status();
  namespace fs = std::filesystem;
  std::error_code ec;
  const fs::path dir = fs::path(path).parent_path();
  if (!dir.empty() && !fs::is_directory(dir, ec)) {
    fs::create_directories(dir, ec);
    if (ec) return error(Code::kIoError, "{} {}: cannot make its folder: {}", setting, path, ec.message());
    fs::permissions(dir, fs::perms::owner_all | fs::perms::group_read | fs::perms::group_exec, ec);
  }
  struct stat st{};
  if (lstat(path.c_str(), &st) == 0) {
    if (!S_ISSOCK(st.st_mode)) return error(Code::kInvalidArgument, "{} {}: exists and is not a socket", setting, path);
    const int fd = connect_to(*addr);
    if (fd >= 0) {
      close(fd);
      return error(Code::kUnavailable, "{} {}: another hpr answers on it (stop it, or give this one another --ctl)",
                   setting, path);
    }
    if (fd != -ECONNREFUSED && fd != -ENOENT)
      return error(Code::kUnavailable, "{} {}: cannot tell whether another hpr answers on it: {}", setting, path,
                   std::strerror(-fd));
    unlink(path.c_str());  // stale: left by a daemon that did not end cleanly
    spdlog::info("{} {}: replaced a stale socket file (nothing answered on it)", setting, path);
  }
  std::unique_ptr<ControlServer> s(new ControlServer());
  s->path_ = path;
  s->handler_ = std::move(handler);
  s->idle_ms_ = idle_ms;
  s->slow_ = std::move(slow);
  s->listen_fd_ = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
  if (s->listen_fd_ < 0) return error(Code::kIoError, "{} {}: socket: {}", setting, path, std::strerror(errno));
  // The mode is set before anyone can connect: umask while binding, chmod after (both, as bind's mode is umask-bound).
  const mode_t old = umask(0117);
  const int b = bind(s->listen_fd_, reinterpret_cast<const sockaddr*>(&*addr), sizeof(*addr));
  const int be = errno;
  umask(old);
  if (b != 0) return error(Code::kIoError, "{} {}: bind: {}", setting, path, std::strerror(be));
  if (chmod(path.c_str(), 0660) != 0 || listen(s->listen_fd_, kMaxClients) != 0) {
    const int e = errno;
    unlink(path.c_str());
    return error(Code::kIoError, "{} {}: {}", setting, path, std::strerror(e));
  }
  if (pipe2(s->wake_, O_CLOEXEC | O_NONBLOCK) != 0) {
    unlink(path.c_str());
    return error(Code::kIoError, "{}: pipe: {}", setting, std::strerror(errno));
  }
  s->thread_ = std::thread([p = s.get()] { p->serve(); });
  return s;
}

ControlServer::~ControlServer() {
  if (thread_.joinable()) {
    const char c = 1;
    (void)!write(wake_[1], &c, 1);
    thread_.join();
  }
  if (slow_thread_.joinable()) slow_thread_.join();  // a reload under way ends first
  for (int fd : {listen_fd_, wake_[0], wake_[1]})
    if (fd >= 0) close(fd);
  if (listen_fd_ >= 0) unlink(path_.c_str());
}

std::variant<ControlServer::Request, std::string> ControlServer::parse(const std::string& line) {
  const uint64_t now = monotonic_ns();
  if (now - window_start_ns_ >= 1'000'000'000) {
    window_start_ns_ = now;
    window_count_ = 0;
  }
  if (++window_count_ > kMaxRate) {
    ++refused_;
    return error_reply(fmt::format("busy: more than {} requests a second; try again", kMaxRate));
  }
  nlohmann::json req = nlohmann::json::parse(line, nullptr, false);
  if (req.is_discarded() || !req.is_object() || !req.contains("cmd") || !req["cmd"].is_string()) {
    ++refused_;
    return error_reply("want one JSON object a line: {\"cmd\": \"status\", \"args\": [...]}");
  }
  std::vector<std::string> args;
  if (req.contains("args")) {
    if (!req["args"].is_array()) {
      ++refused_;
      return error_reply("\"args\" must be an array of strings");
    }
    for (const auto& a : req["args"]) {
      if (!a.is_string()) {
        ++refused_;
        return error_reply("\"args\" must be an array of strings");
      }
      args.push_back(a.get<std::string>());
    }
  }
  ++requests_;
  return Request{req["cmd"].get<std::string>(), std::move(args)};
}

bool ControlServer::is_slow(const std::string& cmd) const {
  return std::find(slow_.begin(), slow_.end(), cmd) != slow_.end();
}

std::string ControlServer::answer(const Request& req) {
  try {
    auto r = handler_(req.cmd, req.args);
    if (!r) return error_reply(r.status().message());
    nlohmann::json out = r->is_object() ? *r : nlohmann::json{{"result", *r}};
    out["ok"] = true;
    return out.dump();
  } catch (const std::exception& e) {
    return error_reply(fmt::format("internal error: {}", e.what()));
  }
}

void ControlServer::run_slow(int fd, Request req) {
  const std::string reply = answer(req) + "\n";
  // Free before the reply leaves: a client that sends the next one as soon as it has this reply is not told "busy"
  // (the server joins this thread, sending, before it starts another).
  slow_busy_.store(false);
  send_all(fd, reply, 5000);
  close(fd);
}

void ControlServer::serve() {
  struct Client {
    int fd;
    std::string buf;
    uint64_t last_ns;
  };
  std::vector<Client> clients;
  auto drop = [&](size_t i) {
    close(clients[i].fd);
    clients.erase(clients.begin() + static_cast<std::ptrdiff_t>(i));
  };
  for (;;) {
    std::vector<pollfd> fds{{wake_[0], POLLIN, 0}, {listen_fd_, POLLIN, 0}};
    for (const auto& c : clients) fds.push_back({c.fd, POLLIN, 0});
    if (poll(fds.data(), fds.size(), 250) < 0 && errno != EINTR) {
      spdlog::warn("control socket {}: poll: {}; the socket stops answering", path_, std::strerror(errno));
      break;
    }
    if (fds[0].revents != 0) break;
    const uint64_t now = monotonic_ns();
    // Clients first (their indices match fds[2..]), from the back so that dropping one keeps the others' indices.
    for (size_t k = clients.size(); k-- > 0;) {
      Client& c = clients[k];
      const short ev = fds[k + 2].revents;
      if (ev == 0) {
        if (now - c.last_ns > uint64_t(idle_ms_) * 1'000'000) drop(k);  // sent nothing for too long
        continue;
      }
      char buf[4096];
      const ssize_t n = recv(c.fd, buf, sizeof buf, 0);
      if (n <= 0) {
        if (n == 0 || (errno != EAGAIN && errno != EINTR)) drop(k);
        continue;
      }
      c.last_ns = now;
      c.buf.append(buf, static_cast<size_t>(n));
      bool closed = false, handed = false;
      for (size_t nl; !closed && !handed && (nl = c.buf.find('\n')) != std::string::npos;) {
        std::string line = c.buf.substr(0, nl);
        c.buf.erase(0, nl + 1);
        auto req = parse(line);
        if (const auto* err = std::get_if<std::string>(&req)) {
          if (!send_all(c.fd, *err + "\n", 1000)) closed = true;
        } else if (Request& r = std::get<Request>(req); !is_slow(r.cmd)) {
          if (!send_all(c.fd, answer(r) + "\n", 1000)) closed = true;
        } else if (slow_busy_.load()) {
          ++refused_;
          send_all(c.fd, error_reply(fmt::format("busy: a {} is under way; try again when it has ended", r.cmd)) + "\n", 100);
          closed = true;
        } else {
          // Its own thread answers and closes the connection; this one forgets the client.
          if (slow_thread_.joinable()) slow_thread_.join();  // the last one has ended (slow_busy_ is false)
          slow_busy_.store(true);
          slow_thread_ = std::thread([this, fd = c.fd, r = std::move(r)]() mutable { run_slow(fd, std::move(r)); });
          handed = true;
        }
      }
      if (handed) {
        clients.erase(clients.begin() + static_cast<std::ptrdiff_t>(k));
        continue;
      }
      if (!closed && c.buf.size() > kMaxRequest) {
        ++refused_;
        send_all(c.fd, error_reply(fmt::format("request longer than {} bytes", kMaxRequest)) + "\n", 100);
        closed = true;
      }
      if (closed) drop(k);
    }
    if (fds[1].revents != 0) {
      for (int fd; (fd = accept4(listen_fd_, nullptr, nullptr, SOCK_NONBLOCK | SOCK_CLOEXEC)) >= 0;) {
        if (static_cast<int>(clients.size()) >= kMaxClients) {
          ++refused_;
          send_all(fd, error_reply(fmt::format("busy: {} clients already connected", kMaxClients)) + "\n", 100);
          close(fd);
          continue;
        }
        clients.push_back({fd, {}, now});
      }
    }
  }
  for (const auto& c : clients) close(c.fd);
}

Result<nlohmann::json> control_request(const std::string& path, const std::string& cmd,
                                       const std::vector<std::string>& args, int timeout_ms) {
  auto addr = unix_address(path, "--ctl");
  if (!addr) return addr.status();
  const int fd = connect_to(*addr);
  if (fd == -EACCES)
    return error(Code::kUnavailable, "{}: permission denied (mode 0660: be its owner or in its group)", path);
  if (fd < 0)
    return error(Code::kUnavailable, "no hpr answers on {} ({}): is `hpr run` running, with this --ctl?", path,
                 std::strerror(-fd));
  const std::string req = nlohmann::json{{"cmd", cmd}, {"args", args}}.dump() + "\n";
  std::string reply;
  bool ok = send_all(fd, req, timeout_ms);
  const uint64_t deadline = monotonic_ns() + uint64_t(timeout_ms) * 1'000'000;
  while (ok && reply.find('\n') == std::string::npos) {
    const uint64_t now = monotonic_ns();
    if (now >= deadline) break;
    pollfd p{fd, POLLIN, 0};
    if (poll(&p, 1, static_cast<int>((deadline - now) / 1'000'000) + 1) <= 0) continue;
    char buf[65536];
    const ssize_t n = recv(fd, buf, sizeof buf, 0);
    if (n <= 0) break;
    reply.append(buf, static_cast<size_t>(n));
  }
  close(fd);
  if (reply.find('\n') == std::string::npos)
    return error(Code::kIoError, "{}: no complete reply within {} ms", path, timeout_ms);
  auto j = nlohmann::json::parse(reply.substr(0, reply.find('\n')), nullptr, false);
  if (j.is_discarded()) return error(Code::kIoError, "{}: the reply is not JSON", path);
  return j;
}

}  // namespace hpr
