#!/usr/bin/env bash
# Builds the libFuzzer targets (clang, ASan+UBSan, build dir build-fuzz) and runs each for a bounded time.
# Usage: scripts/fuzz.sh [SECONDS_PER_TARGET] [TARGET...]     (default 60 s, every target)
#   scripts/fuzz.sh 0            build only
#   scripts/fuzz.sh 3600 pcap    one target for an hour (by hand)
# Seeds: tests/fuzz/corpus/<t>/ (checked in; never written). New inputs go to build-fuzz/corpus/<t>/ (kept between
# runs). Crashes go to build-fuzz/crashes/<t>/; copy one into tests/fuzz/regressions/<t>/ once it is fixed, so
# fuzz_regression_test replays it in every ctest run. Summary: build-fuzz/fuzz-summary.tsv (target, runs, seconds,
# crashes). Exits non-zero when any target crashed.
set -euo pipefail
cd "$(dirname "$0")/.."
secs=${1:-60}
shift || true
jobs=${HPR_FUZZ_BUILD_JOBS:-$(nproc)}
bd=build-fuzz
# -fconstexpr-steps: kernels/aes/aes_tables.hpp builds its S-box at compile time, past clang's default step limit.
san="-fsanitize=fuzzer-no-link,address,undefined -fno-sanitize-recover=undefined -fno-omit-frame-pointer -fconstexpr-steps=50000000"
if [[ ! -f $bd/build.ninja ]]; then
  CC=clang CXX=clang++ cmake -S . -B $bd -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DHPR_BUILD_BENCH=OFF \
    -DHPR_FUZZ=ON "-DCMAKE_C_FLAGS=$san" "-DCMAKE_CXX_FLAGS=$san" >/dev/null
fi
mapfile -t all < <(sed -n 's/^build tests\/fuzz\/fuzz_\([a-z_]*\): .*/\1/p' $bd/build.ninja | grep -vx regression_test | sort -u)
targets=("$@")
[[ ${#targets[@]} -eq 0 ]] && targets=("${all[@]}")
cmake --build $bd -j "$jobs" --target "${targets[@]/#/fuzz_}"
[[ $secs == 0 ]] && exit 0

# Leaks in PoCL/DPDK are not ours and not reachable from these targets; keep leak checking on for our code.
export ASAN_OPTIONS=${ASAN_OPTIONS:-abort_on_error=1:detect_leaks=1:allocator_may_return_null=1}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}
summary=$bd/fuzz-summary.tsv
printf 'target\truns\tseconds\tcrashes\n' >"$summary"
status=0
for t in "${targets[@]}"; do
  mkdir -p $bd/corpus/$t $bd/crashes/$t
  log=$bd/fuzz-$t.log
  set +e
  # -rss_limit_mb: the loaders may allocate what a file announces, but not gigabytes.
  $bd/tests/fuzz/fuzz_$t -max_total_time="$secs" -timeout=10 -rss_limit_mb=2048 -max_len=65536 \
    -artifact_prefix=$bd/crashes/$t/ -print_final_stats=1 $bd/corpus/$t tests/fuzz/corpus/$t >"$log" 2>&1
  rc=$?
  set -e
  runs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -1)
  crashes=$(find $bd/crashes/$t -type f | wc -l)
  printf '%s\t%s\t%s\t%s\n' "$t" "${runs:-?}" "$secs" "$crashes" >>"$summary"
  if [[ $rc -ne 0 ]]; then
    status=1
    echo "fuzz_$t: FAILED (rc $rc); see $log and $bd/crashes/$t/" >&2
    grep -m5 -E 'ERROR|SUMMARY|runtime error' "$log" >&2 || true
  fi
done
column -t "$summary"
exit $status
