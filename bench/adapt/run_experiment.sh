#!/bin/bash
# The adaptive scheduler on this machine's real lanes (issue 5): POCL_DEVICES="pthread basic" (two PoCL CPU
# devices) + one native lane, model power. 1) hpr profile of the ipv4 app on a reduced grid; 2) hpr run with
# generator rate steps under the energy policy (per-quantum CSV); 3) the same steps on all lanes all the time
# (fixed batch) as the peer; 4) plot. Both runs without backpressure: the generator offers its rate and a full
# lane queue drops (queue_full), as a line-rate port would. Output: out/adapt/ (git-ignored).
# Usage: bench/adapt/run_experiment.sh [HPR_BINARY]   (default build/cli/hpr)
set -euo pipefail
HPR=${1:-build/cli/hpr}
OUT=${OUT:-out/adapt}
mkdir -p "$OUT"
export POCL_DEVICES="pthread basic"
TRAFFIC="--app ipv4 --zipf 0 --flows 50000 --sizes imix --seed 1"
STEPS=${STEPS:-"5:20000,5:80000,5:250000,5:40000,5:150000"}
QUANTUM_MS=${QUANTUM_MS:-40}
printf '[lanes]\nbackpressure = false\n' > "$OUT/run.toml"
if [ -z "${SKIP_PROFILE:-}" ]; then
  "$HPR" profile $TRAFFIC --min-batch ${MIN_BATCH:-256} --max-batch ${MAX_BATCH:-1024} --splits ${SPLITS:-2} \
    --quantum-ms ${PROFILE_QUANTUM_MS:-250} --budget-s ${BUDGET_S:-240} -o "$OUT/ipv4_table.json" -q | tee "$OUT/profile.log"
fi
"$HPR" run -c "$OUT/run.toml" $TRAFFIC --packets 0 --rate-steps "$STEPS" --table "$OUT/ipv4_table.json" --policy energy ${NO_LEARN:+--no-learn} \
  --quantum-ms $QUANTUM_MS --adapt-csv "$OUT/adaptive.csv" --summary-json "$OUT/adaptive_summary.json" 2>&1 \
  | tee "$OUT/adaptive.log"
# Peer: every lane all the time, same traffic, fixed batch 256.
"$HPR" run -c "$OUT/run.toml" $TRAFFIC --packets 0 --rate-steps "$STEPS" --batch 256 \
  --summary-json "$OUT/all_lanes_summary.json" 2>&1 | tee "$OUT/all_lanes.log"
/usr/bin/python3 "$(dirname "$0")/plot_adapt.py" "$OUT"
