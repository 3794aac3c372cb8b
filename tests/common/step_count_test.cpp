// count_steps (hpr/step_count.hpp): exact instruction counts of known code, and the errors it names.
#include <catch2/catch.hpp>

#include <csignal>
#include <cstdint>

#include "hpr/step_count.hpp"

using namespace hpr;

namespace {

#if defined(__x86_64__)
// n iterations of two instructions (dec, jnz) when n >= 1.
__attribute__((noinline)) void spin(uint64_t n) { asm volatile("1: dec %0\n\tjnz 1b" : "+r"(n) : : "cc"); }
#elif defined(__aarch64__)
__attribute__((noinline)) void spin(uint64_t n) { asm volatile("1: subs %0, %0, #1\n\tb.ne 1b" : "+r"(n) : : "cc"); }
#endif

// ptrace refused (a container's seccomp profile, say): said, and the case has nothing to check.
bool unavailable(const Result<uint64_t>& r) {
  if (r.is_ok() || r.status().code() != Code::kUnavailable) return false;
  WARN("skipped: " << r.status().to_string());
  return true;
}

}  // namespace

#if defined(__x86_64__) || defined(__aarch64__)
TEST_CASE("count_steps: a loop of two instructions counts two per iteration, exactly") {
  auto small = count_steps([] { spin(10); });
  if (unavailable(small)) return;
  REQUIRE(small.is_ok());
  auto large = count_steps([] { spin(1010); });
  REQUIRE(large.is_ok());
  CHECK(large.value() - small.value() == 2000);
  // The call itself costs a handful (call, the std::function's dispatch, ret), not hundreds.
  CHECK(small.value() >= 20);
  CHECK(small.value() < 200);
  // The same code counts the same every time.
  auto again = count_steps([] { spin(1010); });
  REQUIRE(again.is_ok());
  CHECK(again.value() == large.value());
}

TEST_CASE("count_steps: more instructions than the limit is an error that names the limit") {
  auto r = count_steps([] { spin(100'000); }, 1'000);
  if (unavailable(r)) return;
  REQUIRE_FALSE(r.is_ok());
  CHECK(r.status().code() == Code::kInvalidArgument);
  CHECK(r.status().message().find("more than 1000 instructions") != std::string::npos);
}
#endif

TEST_CASE("count_steps: a signal in the counted code is an error that names it, and the parent lives on") {
  auto r = count_steps([] { raise(SIGUSR1); });
  if (unavailable(r)) return;
  REQUIRE_FALSE(r.is_ok());
  CHECK(r.status().message().find("signal 10") != std::string::npos);
  auto ok = count_steps([] {});
  REQUIRE(ok.is_ok());
  CHECK(ok.value() < 50);
}
