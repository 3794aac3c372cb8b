#include "cli/sd_notify.hpp"

#include <spdlog/spdlog.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdlib>
#include <cstring>

namespace hpr::cli {

bool sd_notify(const std::string& state) {
  const char* path = std::getenv("NOTIFY_SOCKET");
  if (path == nullptr || *path == '\0') return true;
  static std::atomic<bool> logged{false};
  auto fail = [&](const char* what) {
    if (!logged.exchange(true)) spdlog::warn("NOTIFY_SOCKET {}: {}: {} (systemd is not told)", path, what, std::strerror(errno));
    return false;
  };
  sockaddr_un a{};
  a.sun_family = AF_UNIX;
  const size_t n = std::strlen(path);
  if ((path[0] != '/' && path[0] != '@') || n >= sizeof(a.sun_path)) {
    errno = EINVAL;
    return fail("not an absolute or abstract socket path");
  }
  std::memcpy(a.sun_path, path, n);
  if (path[0] == '@') a.sun_path[0] = '\0';  // abstract namespace
  const int fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return fail("socket");
  const auto len = static_cast<socklen_t>(offsetof(sockaddr_un, sun_path) + n);
  const ssize_t sent = sendto(fd, state.data(), state.size(), MSG_NOSIGNAL, reinterpret_cast<const sockaddr*>(&a), len);
  const int e = errno;
  close(fd);
  errno = e;
  if (sent != static_cast<ssize_t>(state.size())) return fail("sendto");
  return true;
}

}  // namespace hpr::cli
