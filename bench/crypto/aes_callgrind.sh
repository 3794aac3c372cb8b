#!/usr/bin/env bash
# Instructions per byte of the AES-128-CBC contestants under callgrind: hpr native, intel-ipsec-mb, OpenSSL, on
# crypto_bench's batches (64 B, 1514 B, the mix). Collection is on only inside cg_region (ITERS batches after a
# warm-up batch and all setup). Under valgrind the CPU shows no VAES and no AVX-512, so hpr runs AES-NI x8 and
# intel-ipsec-mb its AVX2 manager (AES-NI x8 on xmm): the same CPU features.
# With APP=md5 the MD5 contestants instead (crypto_bench --md5: hpr's multi-buffer paths and OpenSSL); under
# valgrind hpr's x16 (AVX-512) path is absent, so the MD5 figures are AVX2 x8 and OpenSSL.
# Usage: bench/crypto/aes_callgrind.sh [BENCH] [BATCH] [ITERS] [APP: aes|md5]   (run it under flock /work/bench.lock)
set -euo pipefail
BENCH=${1:-build/bench/crypto/crypto_bench}
BATCH=${2:-256}
ITERS=${3:-10}
APP_FLAG=()
[ "${4:-aes}" = md5 ] && APP_FLAG=(--md5)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
names=$(valgrind --tool=callgrind --callgrind-out-file=/dev/null "$BENCH" "${APP_FLAG[@]}" --callgrind '?' --batch 1 --iters 1 \
  --out "$tmp" 2>&1 | sed -n 's/.*(have: \(.*\))/\1/p' || true)
[ -n "$names" ] || { echo "aes_callgrind: $BENCH --callgrind listed no contestants" >&2; exit 1; }
printf '%-14s %-5s %14s %12s %10s\n' contestant size instructions bytes instr/byte
for size in 64 1514 mix; do
  for c in $names; do
    out="$tmp/cg.$c.$size"
    bytes=$(valgrind --tool=callgrind --collect-atstart=no --toggle-collect='*cg_region*' --callgrind-out-file="$out" \
      "$BENCH" "${APP_FLAG[@]}" --callgrind "$c" --size "$size" --batch "$BATCH" --iters "$ITERS" --out "$tmp" 2>/dev/null \
      | sed -n 's/^callgrind: .* bytes \([0-9]*\) .*/\1/p')
    ir=$(sed -n 's/^totals: \([0-9]*\).*/\1/p' "$out")
    printf '%-14s %-5s %14s %12s %10.3f\n' "$c" "$size" "$ir" "$bytes" "$(echo "$ir / $bytes" | bc -l)"
  done
done
