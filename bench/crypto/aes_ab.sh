#!/usr/bin/env bash
# A/B of two hpr binaries on the aes app in place (one native lane, run to completion), rounds interleaved
# (A B A B ...) so that a change of machine load hits both alike. Prints each run and, per binary, the median
# and spread ((max - min) / median) of Mpps and Gbit/s, the ratio of the medians (B / A), and the ratios of
# the runs of each round (A and B back to back see about the same load), sorted, with their median.
# Usage: bench/crypto/aes_ab.sh A_HPR B_HPR ROUNDS SECONDS [extra hpr run arguments...]
# AB_LANES replaces the lane arguments (default: --devices none --native 1 --run-to-completion on), e.g.
# AB_LANES="--devices pthread --native 0" for the OpenCL path.
# Run it under `flock /work/bench.lock` on a shared machine.
set -euo pipefail
a=$1 b=$2 rounds=$3 secs=$4
lanes=${AB_LANES:---devices none --native 1 --run-to-completion on}
shift 4
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
for r in $(seq 1 "$rounds"); do
  for which in A B; do
    hpr=$a
    [[ $which == B ]] && hpr=$b
    # shellcheck disable=SC2086
    "$hpr" run --app aes --master-key 000102030405060708090a0b0c0d0e0f --in gen $lanes \
      --static --state-dir none --duration "$secs" --out null -q \
      --summary-json "$tmp/$which.$r.json" "$@" >/dev/null 2>"$tmp/$which.$r.err" ||
      { cat "$tmp/$which.$r.err"; exit 1; }
  done
done
/usr/bin/python3 - "$tmp" "$rounds" <<'EOF'
import json, statistics, sys
tmp, rounds = sys.argv[1], int(sys.argv[2])
med, rates = {}, {}
for which in "AB":
    mpps, gbps = [], []
    for r in range(1, rounds + 1):
        s = json.load(open(f"{tmp}/{which}.{r}.json"))
        mpps.append(s["rx"]["packets"] / s["seconds"] / 1e6)
        gbps.append(s["tx"]["bytes"] * 8 / s["seconds"] / 1e9)
        enc = s["app_events"]["count"]
        print(f"{which} round {r}: {mpps[-1]:.3f} Mpps {gbps[-1]:.3f} Gbit/s, flows {s['flows']}, "
              f"encrypted {enc}, dropped {s['dropped']}")
    rates[which] = mpps
    m, g = statistics.median(mpps), statistics.median(gbps)
    med[which] = m
    print(f"{which}: median {m:.3f} Mpps (spread {(max(mpps) - min(mpps)) / m:.1%}), "
          f"{g:.3f} Gbit/s (spread {(max(gbps) - min(gbps)) / g:.1%})")
print(f"B / A (median Mpps): {med['B'] / med['A']:.3f}")
pairs = sorted(b / a for a, b in zip(rates["A"], rates["B"]))
print("B / A per round (B after A): " + ", ".join(f"{r:.3f}" for r in pairs) +
      f"; median {statistics.median(pairs):.3f}")
EOF
