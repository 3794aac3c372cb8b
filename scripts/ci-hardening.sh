#!/usr/bin/env bash
# Hardening CI (issue 8): the whole suite under ASan+UBSan, the threaded tests under TSan, every fuzz target for a
# bounded time. Runs after scripts/test.sh in CI; budget 35 minutes on 2 cores (measured: docs/hardening.md).
# Usage: scripts/ci-hardening.sh [FUZZ_SECONDS_PER_TARGET]     (default 30; HPR_HARDEN_SKIP="asan tsan fuzz" skips)
# Sanitizer settings and the reasons for every suppression: tests/sanitizers.supp (one file; the LSan and TSan
# sections are split out by this script into build dirs, since each runtime reads its own file).
set -euo pipefail
cd "$(dirname "$0")/.."
fuzz_s=${1:-${HPR_FUZZ_SECONDS:-30}}
skip=" ${HPR_HARDEN_SKIP:-} "
jobs=$(nproc)
supp=tests/sanitizers.supp
mkdir -p out/harden
awk '/^\[lsan\]/{s=1;next} /^\[/{s=0} s' $supp >out/harden/lsan.supp
awk '/^\[tsan\]/{s=1;next} /^\[/{s=0} s' $supp >out/harden/tsan.supp
# Only PoCL as OpenCL platform: the Intel ICD (installed, no Intel GPU here) dlopens libdxcore with RTLD_DEEPBIND,
# which sanitizer runtimes refuse (google/sanitizers#611). Tests need PoCL only.
[[ -f /etc/OpenCL/vendors/pocl.icd ]] && export OCL_ICD_VENDORS=/etc/OpenCL/vendors/pocl.icd
export ASAN_OPTIONS=detect_leaks=1:abort_on_error=1:strict_string_checks=1:detect_stack_use_after_return=0:check_initialization_order=1
export LSAN_OPTIONS=suppressions=$PWD/out/harden/lsan.supp:print_suppressions=0
export UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
export TSAN_OPTIONS=suppressions=$PWD/out/harden/tsan.supp:halt_on_error=1:second_deadlock_stack=1:report_signal_unsafe=0
t0=$SECONDS
stamp() { printf '[ci-hardening %4ds] %s\n' $((SECONDS - t0)) "$*"; }
timings=out/harden/timings.txt
: >$timings
phase() { echo "$1 $(($SECONDS - $2))s" >>$timings; }

if [[ $skip != *" asan "* ]]; then
  s=$SECONDS; stamp "asan: configure + build (ASan+UBSan, Debug)"
  cmake --preset asan >/dev/null
  cmake --build --preset asan -j "$jobs"
  phase asan-build $s; s=$SECONDS; stamp "asan: ctest"
  # balance_test's simulation exceeds its 120 s ctest limit in a Debug+ASan build: run on its own with more time.
  ctest --preset asan -E '^balance_test$'
  timeout 900 build-asan/tests/balance/balance_test
  phase asan-ctest $s
fi

if [[ $skip != *" tsan "* ]]; then
  s=$SECONDS; stamp "tsan: configure + build of the threaded tests"
  tsan_tests=(pipeline_test dpdk_pipeline_test pipeline_workers_test faults_test ports_test control_socket_test
              ctl_commands_test pipeline_reload_test frame_pools_test)
  # The hpr binary itself: its Prometheus exposer thread beside the pipeline (e2e_telemetry_loopback) and a run
  # stopped by SIGTERM (e2e_cli).
  tsan_e2e=(e2e_telemetry_loopback e2e_cli)
  cmake --preset tsan >/dev/null
  cmake --build --preset tsan -j "$jobs" --target "${tsan_tests[@]}" hpr
  phase tsan-build $s; s=$SECONDS; stamp "tsan: ctest ${tsan_tests[*]} ${tsan_e2e[*]}"
  regex=$(IFS='|'; echo "^(${tsan_tests[*]} ${tsan_e2e[*]})\$" | tr ' ' '|')
  ctest --preset tsan -R "$regex"
  phase tsan-ctest $s
fi

if [[ $skip != *" fuzz "* ]]; then
  s=$SECONDS; stamp "fuzz: build + ${fuzz_s}s per target"
  bash scripts/fuzz.sh "$fuzz_s"
  cp build-fuzz/fuzz-summary.tsv out/harden/ 2>/dev/null || true
  phase fuzz $s
fi
stamp "done"
cat $timings
