#!/bin/sh
# Instructions per payload byte of each DPI engine on the first SAMPLE capture payloads, counted on this CPU by
# single-stepping one pass after a warm-up pass (dpi_bench --callgrind ENGINE --steps; hpr/step_count.hpp). Unlike
# callgrind_dpi.sh this runs each engine on the SIMD path it picks on this CPU (Hyperscan's own choice; the
# prefilter's default, AVX2) and the prefilter's AVX-512 path, which valgrind cannot run. About 20 us an
# instruction: Hyperscan on the full set (about 230 a byte) is left out unless ENGINES names it.
# Usage: bench/dpi/steps_dpi.sh [BUILD_DIR] [SAMPLE] -> out/dpi/steps.csv
set -eu
build=${1:-build}
sample=${2:-200}
engines=${ENGINES:-"prefilter prefilter-avx512 automaton-1lane hyperscan"}
mkdir -p out/dpi
echo "set,engine,simd,payloads,payload_bytes,matches,instructions,instructions_per_byte" > out/dpi/steps.csv
for set in et-ge4 et-full; do
  for eng in $engines; do
    [ "$set/$eng" = et-full/hyperscan ] && [ -z "${ENGINES:-}" ] && continue
    # "steps ENGINE SET SIMD: N payloads, B payload bytes, M matches, I instructions, X per byte"
    "$build/bench/dpi/dpi_bench" --callgrind "$eng" --callgrind-set "$set" --sample "$sample" --steps | grep '^steps ' |
      tr -d ':,' | awk '{printf "%s,%s,%s,%s,%s,%s,%s,%.2f\n", $3, $2, $4, $5, $7, $10, $12, $12 / $7}' >> out/dpi/steps.csv
  done
done
cat out/dpi/steps.csv
