#!/usr/bin/env bash
# `hpr report` (issue 13) as a user meets it: a short measured report of one app (the table, the rate-step runs,
# plots, CSVs, report.md naming the power source), a re-plot with --from, a saved table with --table, and bad
# arguments. Usage: report_test.sh HPR_BINARY. Skips (77) without python3-matplotlib.
set -uo pipefail
hpr=${1:?usage: report_test.sh HPR_BINARY}
export ASAN_OPTIONS=${ASAN_OPTIONS:+$ASAN_OPTIONS:}verify_asan_link_order=0
export POCL_DEVICES=${POCL_DEVICES:-"pthread basic"}
/usr/bin/python3 -c 'import matplotlib' 2>/dev/null || { echo "skip: python3-matplotlib is not installed"; exit 77; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
source "$(dirname "$0")/expect.sh"
expect 2 "--app: unknown app nat" report --app nat -o "$tmp/x"
expect 2 "--budget-s: 5.0 is not a number of seconds >= 10" report --budget-s 5 -o "$tmp/x"
expect 2 "--budget-s: nan" report --budget-s nan -o "$tmp/x"
expect 2 "--steps: '0.5,x'" report --steps 0.5,x -o "$tmp/x"
expect 2 "--table: $tmp/none.json: not a readable file" report --table ipv4=$tmp/none.json -o "$tmp/x"
expect 2 "--from: $tmp/none: not a directory" report --from "$tmp/none" -o "$tmp/x"
expect 3 "no plan.json" report --app ipv4 --from "$tmp" -o "$tmp/y"
"$hpr" report --help | grep -q "energy-vs-throughput report" || fail "hpr report --help"

# One app, measured: small budget, short steps.
if ! "$hpr" report --app ipv4 --budget-s 10 --step-s 0.5 --steps 0.2,0.7 --max-batch 128 --native 1 -q \
    -o "$tmp/r" >"$tmp/out" 2>"$tmp/err"; then
  fail "hpr report exited $?: $(tail -5 "$tmp/err")"
fi
for f in report.md ipv4/table.json ipv4/points.csv ipv4/pareto.csv ipv4/steps.csv ipv4/adaptive.csv \
    ipv4/all_lanes.csv ipv4/best_static_0.csv ipv4/best_static_1.csv ipv4/batch.png ipv4/efficiency.png \
    ipv4/pareto.png ipv4/steps.png ipv4/plan.json; do
  [[ -s "$tmp/r/$f" ]] || fail "report: $f missing or empty"
done
grep -q "Power source: \*\*model\*\*" "$tmp/r/report.md" || fail "report.md does not name the power source"
grep -q "no sensor" "$tmp/r/report.md" || fail "report.md does not say the model is not a sensor"
# steps.csv: two steps × three runs, each with quanta and an energy
/usr/bin/python3 - "$tmp/r/ipv4/steps.csv" <<'PY' || fail "steps.csv"
import csv, sys
rows = list(csv.DictReader(open(sys.argv[1])))
assert len(rows) == 6, rows
assert {r["run"] for r in rows} == {"adaptive", "best_static", "all_lanes"}, rows
for r in rows:
    assert int(r["quanta"]) >= 1 and float(r["energy_j"]) > 0 and r["source"] == "model", r
PY
# PNGs are PNGs
for p in "$tmp"/r/ipv4/*.png; do
  [[ "$(head -c 4 "$p" | od -An -c | tr -d ' ')" == "211PNG" ]] || fail "$p is not a PNG"
done
# Re-plot without measuring, into another directory
rm -f "$tmp/r/ipv4/"*.png
"$hpr" report --app ipv4 --from "$tmp/r" -o "$tmp/r2" -q >/dev/null 2>"$tmp/err" || fail "--from: $(cat "$tmp/err")"
[[ -s "$tmp/r2/ipv4/steps.png" && -s "$tmp/r2/report.md" ]] || fail "--from wrote no plot"

# A saved table instead of profiling
"$hpr" report --app ipv4 --table "ipv4=$tmp/r/ipv4/table.json" --budget-s 10 --step-s 0.5 --steps 0.3 --native 1 -q \
  -o "$tmp/r3" >/dev/null 2>"$tmp/err" || fail "--table: $(tail -3 "$tmp/err")"
grep -q "table_from" "$tmp/r3/ipv4/plan.json" || fail "--table: plan.json does not name the table"
[[ -e "$tmp/r3/ipv4/logs/profile.log" ]] && fail "--table: profiled anyway"

[[ $fails -eq 0 ]] && echo "all report checks passed"
exit $((fails > 0))
