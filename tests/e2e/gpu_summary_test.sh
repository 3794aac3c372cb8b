#!/usr/bin/env bash
# bench/gpu/summary.py (issue 14): the summary of the H200 run in docs/gpu/nvidia-h200/ is what the script makes of
# that folder's files (a known answer: the committed summary.md), and its verdicts hold: a device passes the
# native lane only beyond both spreads, repeated runs give the median run and the range.
set -u
root=${1:?usage: gpu_summary_test.sh SOURCE_DIR}
run="$root/docs/gpu/nvidia-h200"
py=$( [ -x /usr/bin/python3 ] && echo /usr/bin/python3 || echo python3)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fails=0
fail() { echo "FAIL: $*"; fails=$((fails + 1)); }
"$py" "$root/bench/gpu/summary.py" "$run" ipv4 md5 aes dpi >"$tmp/summary.md" || fail "summary.py exited $?"
diff -u "$run/summary.md" "$tmp/summary.md" >"$tmp/diff" && echo "ok: summary.md is the script's output" ||
  fail "summary.md differs from the script's output: $(head -c 1500 "$tmp/diff")"
grep -q "^native alone: 0.50 ± 0.07 Gbit/s; first beaten beyond both spreads at batch 256 by NVIDIA" "$tmp/summary.md" &&
  grep -q "^native alone: 14.52 ± 1.10 Gbit/s; no set with an OpenCL device beats it beyond both spreads" "$tmp/summary.md" &&
  echo "ok: beaten only beyond both spreads" || fail "verdicts: $(grep '^native alone' "$tmp/summary.md")"
grep -q "| dpi | cl0:NVIDIA H200 | 1024 | PASS | 0.907 (0.91–0.91, 3 runs) |" "$tmp/summary.md" &&
  echo "ok: repeated runs: the median run and the range" || fail "repeats: $(grep 'dpi | cl0' "$tmp/summary.md")"
# A FAIL in any repeat makes the row FAIL.
mkdir -p "$tmp/run"
cp "$run"/selftest-batch-1024*.json "$tmp/run/"
"$py" - "$tmp/run/selftest-batch-1024-r3.json" <<'PY'
import json, sys
j = json.load(open(sys.argv[1]))
for r in j["results"]:
    if r["app"] == "md5" and "NVIDIA" in r["engine"]:
        r["result"] = "FAIL"
json.dump(j, open(sys.argv[1], "w"))
PY
"$py" "$root/bench/gpu/summary.py" "$tmp/run" md5 >"$tmp/s2.md" || fail "summary.py on a FAIL exited $?"
grep -q "| md5 | cl0:NVIDIA H200 | 1024 | FAIL |" "$tmp/s2.md" && echo "ok: a FAIL in a repeat is a FAIL" ||
  fail "FAIL row: $(grep 'md5 | cl0' "$tmp/s2.md")"
exit $((fails > 0))
