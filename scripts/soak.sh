#!/usr/bin/env bash
# Soak (issue 8): hpr run with the generator at overload (as fast as it can, a million flows, backpressure off)
# for several minutes; samples RSS and open fds of the daemon; checks at the end that the books balance
# (rx == tx + dropped, unaccounted 0, no reorder), that every rx buffer came back (rx_buffers_in_use 0), that the
# fd count did not grow, and reports RSS at start and end.
# Usage: scripts/soak.sh [SECONDS] [HPR_BINARY]     (default 300 s, build/cli/hpr)
# Output: out/soak/{samples.tsv,summary.json,hpr.log,report.txt}. Exit 0 when every check holds.
set -euo pipefail
cd "$(dirname "$0")/.."
secs=${1:-300}
hpr=${2:-build/cli/hpr}
out=out/soak
mkdir -p $out
[[ -x $hpr ]] || { echo "soak: $hpr not built (cmake --build build --target hpr)"; exit 2; }
routes=$out/routes.txt
printf '0.0.0.0/0 0\n10.0.0.0/8 1\n192.168.0.0/16 2\n' >$routes
cat >$out/soak.toml <<TOML
[input]
kind = "generator"
packets = 0            # unlimited
flows = 1000000
zipf = 1.0
sizes = "imix"
[output]
kind = "null"
[app]
name = "ipv4"
routes = "$routes"
[lanes]
native = 1
devices = ["all"]
backpressure = false   # overload: a full lane queue drops (queue_full), counted
[flows]
capacity = 1048576
idle_s = 5
[telemetry]
status_interval_s = 10
summary_json = "$out/summary.json"
[run]
duration_s = $secs
TOML
POCL_DEVICES=${POCL_DEVICES:-"pthread basic"} "$hpr" run -c $out/soak.toml >$out/hpr.log 2>&1 &
pid=$!
printf 't_s\trss_kb\tfds\n' >$out/samples.tsv
sample() {
  local rss fds
  rss=$(awk '/^VmRSS:/{print $2}' /proc/$pid/status 2>/dev/null) || return 1
  fds=$(ls /proc/$pid/fd 2>/dev/null | wc -l)
  [[ -n $rss ]] && printf '%s\t%s\t%s\n' "$1" "$rss" "$fds" >>$out/samples.tsv
}
t=0
sleep 5; t=5   # past start-up (EAL, OpenCL program builds, flow table allocation)
while kill -0 $pid 2>/dev/null; do
  sample $t || break
  sleep 5; t=$((t + 5))
done
set +e; wait $pid; rc=$?; set -e
/usr/bin/python3 - "$out" "$rc" <<'PY'
import json, sys
out, rc = sys.argv[1], int(sys.argv[2])
rows = [l.split("\t") for l in open(f"{out}/samples.tsv").read().split("\n")[1:] if l]
s = json.load(open(f"{out}/summary.json"))
first, last = rows[0], rows[-1]
rss0, rss1 = int(first[1]), int(last[1])
mid = rows[len(rows) // 2]
fds = [int(r[2]) for r in rows]
rx, tx, dr = s["rx"]["packets"], s["tx"]["packets"], s["dropped"]
checks = {
    "hpr exit 0 (books balanced by its own check)": rc == 0,
    "rx == tx + dropped": rx == tx + dr,
    "unaccounted == 0": s["unaccounted"] == 0,
    "reorders == 0": s["reorders"] == 0,
    "rx_buffers_in_use == 0 after the drain": s.get("rx_buffers_in_use", -1) == 0,
    # No fd leak: the count at the end equals the count at the start. A transient extra fd mid-run is PoCL
    # compiling a kernel variant for a new work size (its cache files), closed again.
    "fd count back to its start value (no fd leak)": fds[-1] == fds[0],
    # Flat memory: from mid-run to the end RSS may not grow by more than 5 % (start-up and the flow table
    # filling up happen in the first half).
    "RSS flat in the second half (< 5 % growth)": rss1 <= int(mid[1]) * 1.05,
}
rep = [f"soak: {s['seconds']:.0f} s, rx {rx} tx {tx} dropped {dr} {s.get('drops', {})}",
       f"  flows seen {s['flows']}, flow table full events {s['flow_table_full']}",
       f"  RSS start {rss0} kB (t={first[0]} s), mid {mid[1]} kB, end {rss1} kB (t={last[0]} s); fds {min(fds)}..{max(fds)}",
       f"  unaccounted {s['unaccounted']}, reorders {s['reorders']}, rx_buffers_in_use {s.get('rx_buffers_in_use')}"]
rep += [f"  {'ok  ' if v else 'FAIL'} {k}" for k, v in checks.items()]
open(f"{out}/report.txt", "w").write("\n".join(rep) + "\n")
print("\n".join(rep))
sys.exit(0 if all(checks.values()) else 1)
PY
