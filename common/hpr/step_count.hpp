#pragma once
// count_steps(): the instructions a piece of code executes on this CPU, counted by single-stepping it in a traced
// child process (ptrace PTRACE_SINGLESTEP). It needs no performance counters (this project's VMs expose none to
// `perf`) and no emulator, so it counts the paths valgrind cannot run (AVX-512, VAES): the instructions per byte
// beside callgrind's for the paths callgrind can run. It counts user-mode instructions as callgrind's Ir does (a
// REP string instruction once per iteration, in both); the kernel's work (page faults, syscalls) is not counted.
// Slow: each instruction is one trap and two context switches, about 50,000 a second on this project's VMs with the
// tracer and the child held on one CPU (4x slower when they sit on two, which costs a wake-up across CPUs per step).
//
// `fn` runs in a fork()ed child, on the parent's memory as it was at the call (copy on write): set up and warm up
// before calling, and `fn`'s side effects are lost. The count excludes the fixed cost of the two stops around `fn`
// (measured once on an empty function). Linux only.
#include <sched.h>
#include <sys/ptrace.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <csignal>
#include <cstdint>
#include <cstring>
#include <functional>

#include "hpr/status.hpp"

namespace hpr {

namespace detail {

// The raw count between the child's two SIGSTOPs, or an error. Gives up (and kills the child) beyond limit + base.
inline Result<uint64_t> count_steps_raw(const std::function<void()>& fn, uint64_t limit, uint64_t base) {
  pid_t pid = fork();
  if (pid < 0) return error(Code::kUnavailable, "count_steps: fork: {}", std::strerror(errno));
  if (pid == 0) {
    if (ptrace(PTRACE_TRACEME, 0, nullptr, nullptr) != 0) _exit(100 + (errno & 0x7f));
    raise(SIGSTOP);
    fn();
    raise(SIGSTOP);
    _exit(0);
  }
  auto reap = [pid] {
    kill(pid, SIGKILL);
    int st = 0;
    while (waitpid(pid, &st, 0) < 0 && errno == EINTR) {
    }
  };
  auto wait_stop = [pid](int& st) {
    while (waitpid(pid, &st, 0) < 0) {
      if (errno != EINTR) return false;
    }
    return true;
  };
  int st = 0;
  if (!wait_stop(st)) return error(Code::kUnavailable, "count_steps: waitpid: {}", std::strerror(errno));
  if (WIFEXITED(st)) {
    int code = WEXITSTATUS(st);
    return error(Code::kUnavailable, "count_steps: ptrace(PTRACE_TRACEME) is not permitted here: {}",
                 code >= 100 ? std::strerror(code - 100) : "the child exited");
  }
  if (!WIFSTOPPED(st) || WSTOPSIG(st) != SIGSTOP) {
    reap();
    return error(Code::kInternal, "count_steps: the child did not stop at its start (status {:#x})", st);
  }
  uint64_t n = 0;
  for (;;) {
    if (ptrace(PTRACE_SINGLESTEP, pid, nullptr, nullptr) != 0) {
      int e = errno;
      reap();
      return error(Code::kUnavailable, "count_steps: PTRACE_SINGLESTEP: {}", std::strerror(e));
    }
    if (!wait_stop(st)) {
      int e = errno;
      reap();
      return error(Code::kUnavailable, "count_steps: waitpid: {}", std::strerror(e));
    }
    if (WIFEXITED(st) || WIFSIGNALED(st))
      return error(Code::kInternal, "count_steps: the counted code ended the process after {} instructions", n);
    int sig = WSTOPSIG(st);
    if (sig == SIGSTOP) break;
    if (sig != SIGTRAP) {
      reap();
      return error(Code::kInternal, "count_steps: the counted code raised signal {} ({}) after {} instructions", sig,
                   strsignal(sig), n);
    }
    if (++n > limit + base) {
      reap();
      return error(Code::kInvalidArgument, "count_steps: more than {} instructions; count a smaller piece", limit);
    }
  }
  reap();
  return n;
}

}  // namespace detail

// Instructions `fn` executes (see above). `limit` bounds the count (and the time: about 20 µs an instruction here).
inline Result<uint64_t> count_steps(const std::function<void()>& fn, uint64_t limit = 50'000'000) {
  static const std::function<void()> kEmpty = [] {};
  // Tracer and child on the CPU the caller is on (the child inherits the mask); the caller's mask back after.
  cpu_set_t saved;
  bool pinned = false;
  if (int cpu = sched_getcpu(); cpu >= 0 && sched_getaffinity(0, sizeof saved, &saved) == 0) {
    cpu_set_t one;
    CPU_ZERO(&one);
    CPU_SET(cpu, &one);
    pinned = sched_setaffinity(0, sizeof one, &one) == 0;
  }
  auto base = detail::count_steps_raw(kEmpty, 100'000, 0);
  auto n = base ? detail::count_steps_raw(fn, limit, base.value()) : base;
  if (pinned) sched_setaffinity(0, sizeof saved, &saved);
  if (!base) return base.status();
  if (!n) return n.status();
  return n.value() >= base.value() ? n.value() - base.value() : 0;
}

}  // namespace hpr
