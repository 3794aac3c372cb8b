#!/bin/sh
# Instructions per payload byte (callgrind) of each DPI engine on the first SAMPLE capture payloads:
# only dpi_bench_scan_pass is collected (no table build, no capture loading). Valgrind has no
# AVX-512, so the prefilter runs its AVX2 path there (and the scalar one when named).
# Usage: [HPR_BENCH_LOCK=/path/to/lock] bench/dpi/callgrind_dpi.sh [BUILD_DIR] [SAMPLE] -> out/dpi/callgrind.csv
# (with HPR_BENCH_LOCK each run holds that flock, so it never overlaps another benchmark)
set -eu
build=${1:-build}
sample=${2:-2000}
mkdir -p out/dpi
echo "set,engine,simd,payloads,payload_bytes,matches,instructions,instructions_per_byte" > out/dpi/callgrind.csv
for set in et-full et-ge4; do
  for eng in hyperscan automaton-4lane automaton-1lane prefilter prefilter-scalar; do
    f=out/dpi/callgrind.$eng.$set.out
    line=$(${HPR_BENCH_LOCK:+flock "$HPR_BENCH_LOCK"} valgrind --tool=callgrind --collect-atstart=no --toggle-collect=dpi_bench_scan_pass \
      --callgrind-out-file="$f" "$build/bench/dpi/dpi_bench" --callgrind "$eng" --callgrind-set "$set" --sample "$sample" 2>/dev/null |
      grep '^callgrind ')
    ir=$(grep '^summary:' "$f" | awk '{print $2}')
    # "callgrind ENGINE SET SIMD: N payloads, B payload bytes, M matches"
    echo "$line" | awk -v ir="$ir" '{gsub(":","",$4); printf "%s,%s,%s,%s,%s,%s,%s,%.2f\n", $3, $2, $4, $5, $7, $10, ir, ir / $7}' >> out/dpi/callgrind.csv
  done
done
cat out/dpi/callgrind.csv
