#!/bin/bash
# Repeats the three runs of run_experiment.sh (adaptive with learning, adaptive table-only, all lanes) N times on
# the same table (profile once with run_experiment.sh first) and prints the energy median and spread of each, and
# the ratios of the medians. Output: $OUT/repeat.csv. Usage: bench/adapt/repeat.sh [N=5] [HPR_BINARY]
set -euo pipefail
N=${1:-5}
HPR=${2:-build/cli/hpr}
OUT=${OUT:-out/adapt}
export POCL_DEVICES="pthread basic"
TRAFFIC="--app ipv4 --zipf 0 --flows 50000 --sizes imix --seed 1"
STEPS=${STEPS:-"5:20000,5:80000,5:250000,5:40000,5:150000"}
printf '[lanes]\nbackpressure = false\n' > "$OUT/run.toml"
echo "rep,mode,energy_j,power_source,tx_packets,queue_full,changes" > "$OUT/repeat.csv"
for i in $(seq 1 "$N"); do
  for mode in learn table all; do
    case $mode in
      learn) extra="--table $OUT/ipv4_table.json --policy energy" ;;
      table) extra="--table $OUT/ipv4_table.json --policy energy --no-learn" ;;
      all) extra="--batch 256" ;;
    esac
    "$HPR" run -c "$OUT/run.toml" $TRAFFIC --packets 0 --rate-steps "$STEPS" $extra -q \
      --summary-json "$OUT/rep.json" > "$OUT/rep.log" 2>&1
    changes=$(grep -o '[0-9]* changes' "$OUT/rep.log" | grep -o '[0-9]*' || echo 0)
    /usr/bin/python3 - "$OUT/rep.json" "$i" "$mode" "$changes" >> "$OUT/repeat.csv" <<'PY'
import json, sys
j = json.load(open(sys.argv[1]))
print(f"{sys.argv[2]},{sys.argv[3]},{j['power']['energy_j']:.1f},{j['power']['source']},{j['tx']['packets']},"
      f"{j.get('drops', {}).get('queue_full', 0)},{sys.argv[4]}")
PY
  done
done
/usr/bin/python3 - "$OUT/repeat.csv" <<'PY'
import csv, statistics, sys
rows = list(csv.DictReader(open(sys.argv[1])))
med = {}
for mode in ("learn", "table", "all"):
    e = [float(r["energy_j"]) for r in rows if r["mode"] == mode]
    q = [int(r["queue_full"]) for r in rows if r["mode"] == mode]
    med[mode] = statistics.median(e)
    print(f"{mode:6} energy median {med[mode]:.1f} J (min {min(e):.1f}, max {max(e):.1f}, n={len(e)}), "
          f"source {rows[0]['power_source']}, queue_full median {statistics.median(q):.0f}")
print(f"all/learn {med['all'] / med['learn']:.2f}x, all/table {med['all'] / med['table']:.2f}x")
PY
