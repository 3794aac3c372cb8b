#!/usr/bin/env bash
# `hpr profile` keeps what it measured when interrupted (issue 5). SIGINT is sent as soon as hpr has installed
# its handler (SigCgt in /proc), i.e. while it still sets up the lanes (PoCL devices: program builds), before the
# pipeline exists: the signal must be kept for the pipeline, the profile must end with exit 0 and a table marked
# "complete": false that loads as JSON. (Before the fix such a signal was dropped and the profile ran its whole
# grid.) Usage: profile_sigint_test.sh HPR_BINARY. Exit 77 (skip) without /proc or python3.
set -uo pipefail
hpr=${1:?usage: profile_sigint_test.sh HPR_BINARY}
[[ -r /proc/self/status ]] || { echo "SKIP: no /proc"; exit 77; }
command -v python3 >/dev/null || { echo "SKIP: python3 not installed"; exit 77; }
export ASAN_OPTIONS=${ASAN_OPTIONS:+$ASAN_OPTIONS:}verify_asan_link_order=0
export POCL_DEVICES=${POCL_DEVICES:-"pthread basic"}
dir=$(mktemp -d)
table=$dir/table.json
printf '0.0.0.0/0 1\n10.0.0.0/8 2\n' >"$dir/routes.txt"
# Two PoCL lanes + one native lane, batches 64..1024, 100 ms quantum: dozens of points of >= two quanta each.
"$hpr" profile --app ipv4 --routes "$dir/routes.txt" --devices all --native 1 --min-batch 64 --max-batch 1024 \
  --quantum-ms 100 --flows 100 -o "$table" -q >"$dir/log" 2>&1 &
pid=$!
trap 'kill $pid 2>/dev/null; rm -rf "$dir"' EXIT
caught=0
for _ in $(seq 1 1000); do
  mask=$(awk '/^SigCgt:/ {print $2}' "/proc/$pid/status" 2>/dev/null)
  [[ -n $mask ]] || break
  if (((16#$mask >> 1) & 1)); then caught=1; break; fi  # bit 1: SIGINT (signal 2) has a handler
  sleep 0.005
done
[[ $caught == 1 ]] || { echo "FAIL: hpr profile never installed a SIGINT handler"; cat "$dir/log"; exit 1; }
kill -INT $pid
wait $pid
rc=$?
cat "$dir/log"
[[ $rc == 0 ]] || { echo "FAIL: hpr profile exited $rc after SIGINT"; exit 1; }
grep -q "incomplete: what was measured is kept" "$dir/log" || { echo "FAIL: no 'incomplete' line"; exit 1; }
# The default rounds go over the whole grid (no --budget-s), which keeps all points or none: the log says so.
grep -q "rounds over the whole grid keep all points or none" "$dir/log" || { echo "FAIL: no 'all or none' line"; exit 1; }
python3 - "$table" <<'PY' || exit 1
import json, sys
t = json.load(open(sys.argv[1]))
assert t["complete"] is False, "table marked complete after SIGINT"
print(f"PASS: table kept {len(t['points'])} points, complete=false")
PY
