#pragma once
// Files written whole or not at all: a unique temporary file in the target's directory (mkstemp),
// every write checked, fsync, then rename over the target. A target that exists and is not a
// regular file (a device node, a FIFO, a directory) is refused, so `-o /dev/sda` never replaces a
// device node with a regular file. An AtomicFile destroyed without commit() removes its temporary
// file: a failed write leaves neither a half-written target nor a stray temporary behind.
//
// Errors name `what` (the setting, e.g. "--summary-json") and the path:
//   kInvalidArgument: the target is a directory or another non-regular file;
//   kIoError: the directory cannot be written, a write failed (disk full, I/O error: errno text).
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <string>
#include <string_view>
#include <utility>

#include "hpr/status.hpp"

namespace hpr {

class AtomicFile {
 public:
  // The refusal open() makes, on its own: for a file written only at the end of a run, checked at its
  // start. kInvalidArgument when `path` exists and is not a regular file.
  static Status check_target(const std::string& path, std::string_view what) {
    struct stat st {};
    if (::stat(path.c_str(), &st) == 0 && !S_ISREG(st.st_mode))
      return error(Code::kInvalidArgument, "{} {}: exists and is not a regular file ({}); name a file to write",
                   what, path, S_ISDIR(st.st_mode) ? "a directory" : "a device, FIFO or socket");
    return Status::ok();
  }

  static Result<AtomicFile> open(const std::string& path, std::string_view what) {
    HPR_RETURN_IF_ERROR(check_target(path, what));
    auto slash = path.find_last_of('/');
    std::string dir = slash == std::string::npos ? "." : path.substr(0, slash + 1);
    std::string base = slash == std::string::npos ? path : path.substr(slash + 1);
    if (base.empty()) return error(Code::kInvalidArgument, "{} {}: names a directory, not a file", what, path);
    AtomicFile f;
    f.path_ = path;
    f.what_ = std::string(what);
    f.tmp_ = (slash == std::string::npos ? std::string() : dir) + "." + base + ".hpr-XXXXXX";
    int fd = ::mkstemp(f.tmp_.data());
    if (fd < 0)
      return error(Code::kIoError, "{} {}: cannot create a file in {}: {}", what, path, dir, std::strerror(errno));
    ::fchmod(fd, 0644);
    f.file_ = ::fdopen(fd, "w");
    if (f.file_ == nullptr) {
      int e = errno;
      ::close(fd);
      ::unlink(f.tmp_.c_str());
      return error(Code::kIoError, "{} {}: {}", what, path, std::strerror(e));
    }
    return f;
  }

  AtomicFile(AtomicFile&& o) noexcept { *this = std::move(o); }
  AtomicFile& operator=(AtomicFile&& o) noexcept {
    if (this != &o) {
      discard();
      path_ = std::move(o.path_);
      tmp_ = std::move(o.tmp_);
      what_ = std::move(o.what_);
      file_ = std::exchange(o.file_, nullptr);
    }
    return *this;
  }
  AtomicFile(const AtomicFile&) = delete;
  AtomicFile& operator=(const AtomicFile&) = delete;
  ~AtomicFile() { discard(); }

  FILE* file() const { return file_; }
  const std::string& path() const { return path_; }

  // Pushes buffered bytes to the file and reports whether every write so far succeeded.
  Status flush() {
    if (file_ == nullptr) return error(Code::kIoError, "{} {}: already closed", what_, path_);
    if (std::fflush(file_) != 0 || std::ferror(file_))
      return error(Code::kIoError, "{} {}: write failed: {}", what_, path_, std::strerror(errno ? errno : EIO));
    return Status::ok();
  }

  // Flushes, syncs, closes and renames over the target. After an error the target is untouched.
  Status commit() {
    HPR_RETURN_IF_ERROR(flush());
    int rc = ::fsync(::fileno(file_));
    int e = errno;
    // EINVAL: the file system cannot sync (e.g. some pseudo file systems); the data was written.
    if (rc != 0 && e != EINVAL) return error(Code::kIoError, "{} {}: fsync failed: {}", what_, path_, std::strerror(e));
    FILE* f = std::exchange(file_, nullptr);
    if (std::fclose(f) != 0) {
      e = errno;
      ::unlink(tmp_.c_str());
      return error(Code::kIoError, "{} {}: close failed: {}", what_, path_, std::strerror(e));
    }
    if (std::rename(tmp_.c_str(), path_.c_str()) != 0) {
      e = errno;
      ::unlink(tmp_.c_str());
      return error(Code::kIoError, "{} {}: rename from {} failed: {}", what_, path_, tmp_, std::strerror(e));
    }
    return Status::ok();
  }

 private:
  AtomicFile() = default;
  void discard() {
    if (file_ != nullptr) {
      std::fclose(std::exchange(file_, nullptr));
      ::unlink(tmp_.c_str());
    }
  }
  std::string path_, tmp_, what_;
  FILE* file_ = nullptr;
};

// The whole of `content` to `path`, atomically (see AtomicFile).
inline Status write_file_atomic(const std::string& path, std::string_view content, std::string_view what) {
  auto f = AtomicFile::open(path, what);
  if (!f) return f.status();
  if (!content.empty() && std::fwrite(content.data(), 1, content.size(), f->file()) != content.size())
    return error(Code::kIoError, "{} {}: write failed: {}", what, path, std::strerror(errno));
  return f->commit();
}

}  // namespace hpr
