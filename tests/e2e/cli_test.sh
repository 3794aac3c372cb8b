#!/usr/bin/env bash
# The `hpr` binary as a user meets it (issues 2 and 4): exit codes and messages for bad configurations,
# SIGTERM during a run with packets in flight (the summary still balances the books), `hpr devices --json`,
# the generator and pcap modes as an unprivileged user, `--help` and `hpr bench`. Usage: cli_test.sh HPR_BINARY. Needs python3 (JSON checks).
set -uo pipefail
hpr=${1:?usage: cli_test.sh HPR_BINARY}
export ASAN_OPTIONS=${ASAN_OPTIONS:+$ASAN_OPTIONS:}verify_asan_link_order=0
export POCL_DEVICES=${POCL_DEVICES:-"pthread basic"}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
source "$(dirname "$0")/expect.sh"
expect 2 "app.name (--app): unknown app 'nat'" run --app nat
expect 2 "app.name (--app): unknown app 'nat' in the chain 'ipv4,nat'" run --app ipv4,nat
expect 2 "app.name (--app): the chain 'ipv4,' has an empty app" run --app ipv4,
# issue 16: argument errors exit 2 (not CLI11's own codes), numbers range-checked, directories refused.
expect 2 "was not expected: --bogus" run --bogus
expect 2 "lanes.queue (--queue): 1000000000 is not in 1..1048576" run --queue 1000000000 --devices none
expect 2 "ports.buffers (--buffers): 5000000 is not in 0..4194304" run --buffers 5000000 --devices none
expect 2 "run.duration_s (--duration): -1 is not in" run --duration -1 --devices none
expect 2 "run.duration_s (--duration): nan is not in" run --duration nan --devices none
expect 2 "input.rate_steps (--rate-steps): '2e10:10'" run --rate-steps 2e10:10 --devices none
expect 2 "not a regular file" run -c "$tmp"
expect 2 "exists and is not a regular file" run --devices none --packets 100 -q --out pcap:/dev/null
# issue 16 item 8: a malformed key epoch is refused naming the setting; its text is never echoed.
expect 2 "app.key_epoch (--key-epoch): want 32 hex digits" run --app aes --master-key 000102030405060708090a0b0c0d0e0f --key-epoch 5ec2e75ec2e75ec2e75ec2e75ec2e7az --devices none
grep -q 5ec2e75e "$tmp/err" && fail "the key epoch was echoed: $(cat "$tmp/err")"
expect 2 "telemetry.summary_json (--summary-json) $tmp: exists and is not a regular file" run --devices none --packets 100 -q --summary-json "$tmp"
expect 3 "app.log (--log) $tmp/no/such/dir" run --devices none --packets 100 -q --app md5 --log "$tmp/no/such/dir/log"
expect 2 "lanes.queue" run --queue 0 --devices none
expect 2 "--weight: want NAME=VALUE" run --weight native --devices none
expect 3 "app.routes (--routes)" run --routes "$tmp/none.txt" --devices none
printf '0.0.0.0/0 1\n' >"$tmp/routes.txt"
expect 3 "lanes.devices: no OpenCL device matches 'TeslaV100'" run --devices TeslaV100 --routes "$tmp/routes.txt"
# The input's buffers are on the start line: given, or sized for the lanes (docs/pipeline.md, "Buffers").
"$hpr" run --devices none --duration 0.2 --state-dir none --buffers 5000 --routes "$tmp/routes.txt" >"$tmp/buf.log" 2>&1 &&
  grep -q "^  input buffers 5000 (ports.buffers)" "$tmp/buf.log" && echo "ok: the start line names the input's buffers" ||
  fail "input buffers: $(head -c 600 "$tmp/buf.log")"
# Learning searches a discrete GPU's batches further (kLearnMaxBatchDiscrete); its buffers hold its start batch,
# 8,192 (lane_start_batch): (2 in flight + 1) x 8,192 + 2,048.
"$hpr" run --devices basic --native 0 --kind basic=dgpu --duration 0.3 --state-dir none --routes "$tmp/routes.txt" \
  >"$tmp/dgpu.log" 2>&1 && grep -q "device batch sizes up to 4096 (16384 on discrete GPUs)" "$tmp/dgpu.log" &&
  grep -q "^  input buffers 26624 " "$tmp/dgpu.log" && echo "ok: learning's batch bound and buffers for a discrete GPU" ||
  fail "discrete GPU's batch bound: $(head -c 900 "$tmp/dgpu.log")"
expect 3 "configuration file '$tmp/none.toml' does not exist" run -c "$tmp/none.toml"
# issue 15: a service placed on lanes of its own is on the start line; lanes that name no lane are refused.
printf '[[service]]\nname = "udp"\nchain = "md5"\nproto = "udp"\nlanes = ["native1"]\n[[service]]\nname = "rest"\nchain = "md5"\n' >"$tmp/placed.toml"
"$hpr" run -c "$tmp/placed.toml" --devices none --native 2 --duration 0.2 --state-dir none --ctl none >"$tmp/placed.log" 2>&1 &&
  grep -q "^  services placed: udp on native1$" "$tmp/placed.log" &&
  grep -q "^  learning: lane shares and the lane of service rest online" "$tmp/placed.log" &&
  echo "ok: the start line names a service's lanes, and the service whose lane is learned" ||
  fail "services placed: $(head -c 600 "$tmp/placed.log")"
expect 2 "service[0].lanes (udp): 'native1' is in no lane's name (the lanes: native0)" run -c "$tmp/placed.toml" --devices none --duration 0.2 --state-dir none --ctl none
# A chain placed from each app's learned state: without them nothing is placed, the start line says why.
mkdir "$tmp/states"
"$hpr" run --app ipv4,md5 --place-app learned --devices none --native 2 --duration 0.2 --state-dir "$tmp/states" \
  --ctl none --routes "$tmp/routes.txt" >"$tmp/learned.log" 2>&1 &&
  grep -qF "  apps placed from the learned state: not placed: no learned state for ipv4 ($tmp/states/learned-ipv4.json not found), md5 (" "$tmp/learned.log" &&
  echo "ok: --place-app learned names the learned states it lacks" || fail "place-app learned: $(head -c 900 "$tmp/learned.log")"
expect 2 "app.place = learned (--place-app learned): places the apps of one chain (--app ipv4,dpi); md5 is one app" run --app md5 --place-app learned --devices none
printf '[lanes]\nbatch = "big"\n' >"$tmp/bad.toml"
expect 2 "lanes.batch (--batch): want an integer" run -c "$tmp/bad.toml"
# issue 12: a port map naming an output that does not exist, and a bad neighbour MAC, refused before the run.
expect 2 "ports.map (--port-map): entry 1 names output port 5, but there are 2 output ports" run --devices none --packets 100 -q --out null --out null --port-map 0,5
printf '[[neighbour]]\nnext_hop = 0\nport = 0\nmac = "02:00:00:00:00"\n' >"$tmp/nb.toml"
expect 2 "neighbour[0].mac: '02:00:00:00:00' is not a MAC address" run -c "$tmp/nb.toml" --devices none --ports 1 --routes "$tmp/routes.txt"
# issue 12: the neighbour table from the command line (--neighbour NEXT_HOP,PORT,MAC[,ADDRESS]), checked like the file's.
expect 2 "--neighbour: '0,x,02:00:00:00:00:01': PORT 'x' is not an integer 0..65535" run --devices none --neighbour 0,x,02:00:00:00:00:01
expect 2 "--neighbour: want NEXT_HOP,PORT,MAC[,ADDRESS]" run --devices none --neighbour 0,1
expect 2 "neighbour[0].mac: 'zz' is not a MAC address" run --devices none --ports 1 --routes "$tmp/routes.txt" --neighbour 0,0,zz
printf '0.0.0.0/1 0\n128.0.0.0/1 1\n' >"$tmp/r2.txt"
"$hpr" run --devices none --routes "$tmp/r2.txt" --ports 2 --out "pcap:$tmp/n0.pcap" --out "pcap:$tmp/n1.pcap" \
  --port-mac 02:00:00:00:00:01,02:00:00:00:00:02 --neighbour 0,0,02:00:00:00:00:0a --neighbour 1,1,02:00:00:00:00:0b \
  --packets 2000 -q --ctl none >"$tmp/nb.log" 2>&1 || fail "--neighbour run exited $?: $(tail -c 300 "$tmp/nb.log")"
python3 - "$tmp/n0.pcap" "$tmp/n1.pcap" <<'PY' && echo "ok: --neighbour rewrites the MACs per next hop" || fail "--neighbour: wrong MACs"
import struct, sys
for path, dst, src in ((sys.argv[1], "02000000000a", "020000000001"), (sys.argv[2], "02000000000b", "020000000002")):
    d = open(path, "rb").read()
    off, ipv4 = 24, 0
    while off + 16 <= len(d):
        incl = struct.unpack_from("<I", d, off + 8)[0]
        f = d[off + 16: off + 16 + incl]
        if f[12:14] == b"\x08\x00":
            assert f[0:6].hex() == dst and f[6:12].hex() == src, (path, f[0:12].hex())
            ipv4 += 1
        off += 16 + incl
    assert ipv4 > 100, (path, ipv4)
PY
# issue 12: what workers cannot be given, refused before the run; auto is a count too.
expect 2 "lanes.native (--native): with lanes.workers (--workers) above 1" run --workers 2 --native 2 --packets 100 -q
expect 2 "lanes.workers (--workers): 65 is not in 1..64" run --workers 65 --devices none --packets 100 -q
expect 2 "lanes.workers (--workers): want auto or a worker count in 1..64" run --workers many --packets 100 -q
"$hpr" run --app ip --devices none --packets 100 >"$tmp/ip.log" 2>&1 && grep -q "^hpr run: app ipv4 " "$tmp/ip.log" &&
  echo "ok: --app ip is the ipv4 app" || fail "--app ip: $(cat "$tmp/ip.log")"
# A chain: each packet through ipv4, then md5, on the devices too (each app's kernel in turn); each app's events shown.
"$hpr" run --app ip,md5 --packets 2000 --summary-json "$tmp/chain.json" >"$tmp/chain.log" 2>&1 &&
  grep -q "^hpr run: app ipv4,md5 " "$tmp/chain.log" && ! grep -q "left out" "$tmp/chain.log" &&
  grep -q '"executor": *"opencl (mapped, 2 kernels on one gathered batch)"' "$tmp/chain.json" &&
  grep -qE "^  forwarded +[0-9]+ \(ipv4: " "$tmp/chain.log" &&
  grep -qE "^  digests +[0-9]+ \(md5: " "$tmp/chain.log" && echo "ok: --app ip,md5 runs the chain" ||
  fail "--app ip,md5: $(cat "$tmp/chain.log")"
"$hpr" run --workers auto --devices none --packets 100 >"$tmp/auto.log" 2>&1 &&
  grep -q "workers 1 (auto: the input has no RSS" "$tmp/auto.log" && echo "ok: --workers auto says what it chose" ||
  fail "--workers auto: $(cat "$tmp/auto.log")"
expect 2 "lanes.cores (--cores): 'x' is not a core number" run --workers 1 --cores x --devices none --packets 100 -q

# SIGTERM with packets in flight: rx stops, queues and batches drain, the summary balances, exit 0.
"$hpr" run --in gen --packets 0 --flows 1000 --out null --devices none --native 2 --routes "$tmp/routes.txt" \
  --summary-json "$tmp/summary.json" -q >"$tmp/run.log" 2>&1 &
pid=$!
for _ in $(seq 1 100); do grep -q "^hpr run: app" "$tmp/run.log" && break; sleep 0.1; done
sleep 2  # at least one status snapshot (every second) while packets are in flight
kill -TERM $pid
wait $pid
code=$?
if [[ $code -ne 0 ]]; then
  fail "hpr run after SIGTERM exited $code"; cat "$tmp/run.log"
elif ! python3 - "$tmp/summary.json" <<'PY'
import json, sys
s = json.load(open(sys.argv[1]))
rx, tx, dropped = s["rx"]["packets"], s["tx"]["packets"], s["dropped"]
print(f"ok: SIGTERM: rx {rx} = tx {tx} + dropped {dropped}, unaccounted {s['unaccounted']}, reorders {s['reorders']}")
sys.exit(0 if rx > 0 and rx == tx + dropped and s["unaccounted"] == 0 and s["reorders"] == 0 and s["rx_buffers_in_use"] == 0 else 1)
PY
then
  fail "books after SIGTERM"; cat "$tmp/summary.json"
fi
grep -q "books       received = transmitted + dropped: balanced" "$tmp/run.log" || fail "summary after SIGTERM lacks balanced books"

# A power meter that stops under the energy policy (issue 13): throughput until it answers again, said both ways.
# A fake powercap tree stands in for RAPL; its counter is made unreadable, then readable again, mid-run.
mkdir -p "$tmp/rapl/intel-rapl:0"
echo package-0 >"$tmp/rapl/intel-rapl:0/name"
echo 262143328850 >"$tmp/rapl/intel-rapl:0/max_energy_range_uj"
echo 1000000 >"$tmp/rapl/intel-rapl:0/energy_uj"
"$hpr" run --packets 0 --devices none --native 2 --routes "$tmp/routes.txt" --policy energy --state-dir none --ctl none \
  --rapl-root "$tmp/rapl" -q >"$tmp/silent.log" 2>&1 &
pid=$!
wait_for() { for _ in $(seq 1 600); do grep -q "$1" "$tmp/silent.log" && return 0; sleep 0.1; done; return 1; }
wait_for "^hpr run: app" && sleep 1 && echo "not a number" >"$tmp/rapl/intel-rapl:0/energy_uj" &&
  wait_for "stopped answering: policy energy -> throughput until it answers again" &&
  echo 9000000 >"$tmp/rapl/intel-rapl:0/energy_uj" && wait_for "power meters answer again: policy throughput -> energy"
found=$?
kill -INT $pid
wait $pid
code=$?
if [[ $found -eq 0 && $code -eq 0 ]] && grep -q "policy energy -> throughput (a power meter is silent)" "$tmp/silent.log" &&
   grep -q "source: rapl" "$tmp/silent.log"; then
  echo "ok: a silent power meter: energy -> throughput -> energy"
else
  fail "a silent power meter (exit $code): $(tail -c 1500 "$tmp/silent.log")"
fi

# Devices as JSON: the two PoCL devices of POCL_DEVICES="pthread basic".
"$hpr" devices --json >"$tmp/devices.json" || fail "hpr devices --json exited $?"
python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); print("ok: devices:", [x["name"] for x in d]); sys.exit(0 if len(d) >= 2 and all("kind" in x and "compute_units" in x for x in d) else 1)' \
  "$tmp/devices.json" || fail "hpr devices --json: want two devices with kind and compute units"

# Least privilege: the generator and capture-file modes need no root (run as nobody where this runs as root).
if [[ $(id -u) -eq 0 ]] && command -v runuser >/dev/null; then
  chmod 755 "$tmp"
  mkdir -m 777 "$tmp/nobody"
  cap=${HPR_DATA_DIR:-$(dirname "$0")/../../../shared/data}/pcap/ndpi/skype.pcap
  if ! runuser -u nobody -- test -x "$hpr" -a -r "$cap"; then
    echo "skip: user nobody cannot reach $hpr or $cap here (a checkout below a private directory)"
  elif runuser -u nobody -- "$hpr" run --in gen --packets 2000 --out null --devices none --routes "$tmp/routes.txt" -q \
       >"$tmp/nobody/gen.log" 2>&1 &&
     runuser -u nobody -- "$hpr" run --in "pcap:$cap" --out "pcap:$tmp/nobody/out.pcap" --devices none \
       --routes "$tmp/routes.txt" -q >"$tmp/nobody/pcap.log" 2>&1 && [[ -s $tmp/nobody/out.pcap ]]; then
    echo "ok: generator and pcap modes run as nobody"
  else
    fail "running as nobody: $(cat "$tmp/nobody/"*.log)"
  fi
  # Unreadable paths are errors naming the file (issue 16: they were uncaught filesystem_error, exit 134).
  mkdir -m 700 "$tmp/private" && cp "$tmp/routes.txt" "$tmp/private/c.toml"
  runuser -u nobody -- test -x "$hpr" || echo "skip: unreadable paths as nobody (nobody cannot run $hpr here)"
  runuser -u nobody -- test -x "$hpr" && for args in "run --in pcap:$tmp/private/x.pcap --devices none -q" "run -c $tmp/private/c.toml --devices none -q" \
              "run --app dpi --rules $tmp/private --devices none -q" "run --app dpi --rules $tmp/private/x.rules --devices none -q"; do
    runuser -u nobody -- "$hpr" $args >"$tmp/nobody/priv.log" 2>&1
    rc=$?
    if [[ $rc -eq 3 ]] && grep -qE "Permission denied|cannot be opened" "$tmp/nobody/priv.log"; then echo "ok: nobody: hpr $args -> 3"
    else fail "nobody: hpr $args exited $rc: $(cat "$tmp/nobody/priv.log")"; fi
  done
fi

# A capture with no record and --loops 0 ends (it used to spin and ignore SIGTERM); so does hpr profile on it.
printf '\xd4\xc3\xb2\xa1\x02\x00\x04\x00\x00\x00\x00\x00\x00\x00\x00\x00\xff\xff\x00\x00\x01\x00\x00\x00' >"$tmp/empty.pcap"
timeout -s KILL 60 "$hpr" run --in "pcap:$tmp/empty.pcap" --loops 0 --devices none -q >"$tmp/empty.log" 2>&1
rc=$?
if [[ $rc -eq 0 ]] && grep -q "not reading it again" "$tmp/empty.log"; then echo "ok: empty capture with --loops 0 ends"
else fail "empty capture with --loops 0: exit $rc: $(tail -c 300 "$tmp/empty.log")"; fi
expect 2 "is a directory" run --table "$tmp" --devices none -q --packets 10
# hpr profile's sampling flags (issue 13): checked before any lane is built, the error names the flag.
expect 2 "--min-samples 0: at least 1" profile --min-samples 0 --devices none -q -o "$tmp/p.json"
expect 2 "--max-samples 2: below --min-samples 3" profile --max-samples 2 --devices none -q -o "$tmp/p.json"
expect 2 "--spread -0.5: a relative spread >= 0" profile --spread -0.5 --devices none -q -o "$tmp/p.json"
expect 2 "--interleave: want auto, block or grid, not 'rows'" profile --interleave rows --devices none -q -o "$tmp/p.json"
expect 2 "--min-samples" profile --min-samples x --devices none -q -o "$tmp/p.json"
# --interleave auto (the default): rounds over the whole grid, over each block where a budget may end the profile.
for budget in 0 5; do
  want="rounds over the whole grid (auto: no --budget-s)"
  [[ $budget == 0 ]] || want="rounds over each block (auto: --budget-s may end a grid"
  "$hpr" profile --devices none --native 1 --min-batch 64 --max-batch 64 --min-samples 1 --max-samples 1 \
    --quantum-ms 20 --budget-s $budget -q -o "$tmp/p.json" >"$tmp/out" 2>&1
  if grep -qF -- "$want" "$tmp/out"; then echo "ok: profile --budget-s $budget: $want"
  else fail "profile --budget-s $budget: no '$want': $(cat "$tmp/out")"; fi
done

# Learning mode keeps what it learned (issue 13): a second run starts from the saved setup; a corrupt state file is
# set aside and the run learns afresh; an unwritable state dir is a warning, not a failure.
learn() { "$hpr" run --devices none --native 2 --packets 0 --duration 3 --quantum-ms 20 --flows 200 --routes "$tmp/routes.txt" "$@"; }
learn --state-dir "$tmp/state" >"$tmp/l1.log" 2>&1 || fail "learning run 1 exited $?: $(tail -c 300 "$tmp/l1.log")"
if [[ -s "$tmp/state/learned-ipv4.json" ]]; then echo "ok: learning run 1 kept its state"
else fail "no $tmp/state/learned-ipv4.json after a learning run: $(tail -c 500 "$tmp/l1.log")"; fi
learn --state-dir "$tmp/state" >"$tmp/l2.log" 2>&1 || fail "learning run 2 exited $?"
grep -q "start from the saved setup" "$tmp/l2.log" && echo "ok: learning run 2 starts from the saved setup" ||
  fail "learning run 2 did not start from the saved setup: $(grep -i learn "$tmp/l2.log" | head -5)"
printf '{"format": "hpr-config-table", "version": 2, "points": [tru' >"$tmp/state/learned-ipv4.json"
learn --state-dir "$tmp/state" >"$tmp/l3.log" 2>&1 || fail "learning run on a corrupt state exited $?"
if grep -q "saved state set aside as $tmp/state/learned-ipv4.json.set-aside-" "$tmp/l3.log" &&
   ls "$tmp/state"/learned-ipv4.json.set-aside-* >/dev/null 2>&1; then echo "ok: a corrupt state file is set aside"
else fail "corrupt state: $(grep -i "state" "$tmp/l3.log" | head -3)"; fi
: >"$tmp/plainfile"
learn --state-dir "$tmp/plainfile/sub" >"$tmp/l4.log" 2>&1 || fail "learning run with an unwritable state dir exited $?"
grep -q "what was learned is not kept" "$tmp/l4.log" && echo "ok: an unwritable state dir is a warning" ||
  fail "unwritable state dir: no warning: $(tail -c 300 "$tmp/l4.log")"
expect 2 "adaptive.static (--static) and adaptive.table (--table): choose one" run --static --table "$tmp/t.json" --devices none

"$hpr" --help | grep -q "Exit codes: 0 ok; 1" || fail "--help does not list the exit codes"
"$hpr" bench >"$tmp/bench.txt" || fail "hpr bench (list) exited $?"
grep -q "^  ipv4 " "$tmp/bench.txt" || fail "hpr bench does not list ipv4"
expect 2 "unknown benchmark 'nosuch'" bench nosuch

# hpr selftest (issue 14): every device against the native reference on real captures; a device that computes wrong
# results (fault injector) is FAIL with the first differing packet, exit 1; bad arguments exit 2; --json parses.
st() { "$hpr" selftest --packets 512 --min-ms 5 "$@"; }
st --apps md5,ipv4 >"$tmp/st.log" 2>&1 && grep -q "selftest passed" "$tmp/st.log" && ! grep -q FAIL "$tmp/st.log" &&
  echo "ok: selftest passes" || fail "selftest: $(tail -c 600 "$tmp/st.log")"
HPR_FAULT_CL=corrupt:1@pthread st --apps md5 >"$tmp/st2.log" 2>&1
rc=$?
if [[ $rc -eq 1 ]] && grep -q "^FAIL md5 on cl.*pthread.*: packet 1 of 512 (.*): result byte 0 of 16" "$tmp/st2.log"; then
  echo "ok: a device with wrong results fails selftest"
else fail "selftest with corrupt results: exit $rc: $(tail -c 600 "$tmp/st2.log")"; fi
expect 2 "--apps: unknown app 'nat'" selftest --apps nat
# --chain: each app's kernel in turn on one gathered batch (docs/chains.md), mapped and copied (basic as discrete),
# against the native chain; a device that corrupts the second app's results is FAIL naming the chain.
st --apps "" --chain ipv4,aes aes,md5 --kind basic=dgpu >"$tmp/stc.log" 2>&1 && [[ $(grep -c " PASS " "$tmp/stc.log") -eq 4 ]] &&
  grep -q "^cl.*basic.* aes,md5 *PASS .*copy" "$tmp/stc.log" && echo "ok: selftest --chain passes, mapped and copied" ||
  fail "selftest --chain: $(tail -c 600 "$tmp/stc.log")"
HPR_FAULT_CL=corrupt:1@pthread st --apps "" --chain aes,md5 >"$tmp/stc2.log" 2>&1
rc=$?
[[ $rc -eq 1 ]] && grep -q "^FAIL aes,md5 on cl.*pthread.*: packet 1 of 512 (.*): result byte 16 of 32" "$tmp/stc2.log" &&
  echo "ok: a device with wrong chain results fails selftest" ||
  fail "selftest --chain with corrupt results: exit $rc: $(tail -c 600 "$tmp/stc2.log")"
expect 2 "--chain ipv4: a chain names two apps or more" selftest --chain ipv4
expect 2 "unknown app 'nat' in the chain" selftest --chain ipv4,nat
expect 2 "--in-flight" selftest --in-flight 0
# --fill: fewer frames in the captures than --packets → the same frames again up to --packets, and still equal.
"$hpr" selftest --min-ms 5 --apps md5,aes --packets 3000 --per-file 2 --fill --json >"$tmp/stf.json" 2>"$tmp/stf.err" || fail "selftest --fill exited $?"
python3 -c "import json,sys; j=json.load(open(sys.argv[1])); s=j['sample']; \
assert s['packets']==3000 and 'repeated' in s['source'] and all(r['result'] in ('ref','PASS') for r in j['results']), j" \
  "$tmp/stf.json" && echo "ok: selftest --fill repeats the captures up to --packets" || fail "selftest --fill: $(head -c 400 "$tmp/stf.json")"
# A discrete device (--kind) with one batch in flight: its copies are timed (copy share, the link's rate).
st --apps md5 --devices pthread --kind pthread=dgpu --in-flight 1 --batch 128 --json >"$tmp/st1.json" 2>"$tmp/st1.err" ||
  fail "selftest --in-flight 1 exited $?: $(tail -c 300 "$tmp/st1.err")"
python3 -c "import json,sys; r=[x for x in json.load(open(sys.argv[1]))['results'] if x['result']=='PASS']; \
assert len(r)==1 and r[0]['in_flight']==1 and r[0]['link_gbps']>0 and 0<r[0]['copy_share']<=1, r" "$tmp/st1.json" &&
  echo "ok: selftest --in-flight 1 on a discrete device times its copies" || fail "selftest --in-flight: $(head -c 600 "$tmp/st1.json")"
expect 2 "--devices: no OpenCL device matches 'TeslaV100'" selftest --devices TeslaV100
st --apps aes --devices none --json >"$tmp/st.json" 2>"$tmp/st.err" || fail "selftest --json exited $?: $(cat "$tmp/st.err")"
python3 -c "import json,sys; j=json.load(open(sys.argv[1])); r=j['results']; assert len(r)==1 and r[0]['result']=='ref' and r[0]['power_source']=='model', r" \
  "$tmp/st.json" && echo "ok: selftest --json" || fail "selftest --json: $(head -c 300 "$tmp/st.json")"
# A driver that cannot be loaded is named in one line; the devices of the others are listed (issue 14).
mkdir -p "$tmp/vendors" && cp /etc/OpenCL/vendors/pocl.icd "$tmp/vendors/"  # not intel.icd: sanitizers refuse its RTLD_DEEPBIND
echo libnvidia-opencl.so.1 >"$tmp/vendors/zz-nvidia.icd"
OCL_ICD_VENDORS="$tmp/vendors" "$hpr" devices >"$tmp/dv.out" 2>"$tmp/dv.err" || fail "hpr devices with a broken ICD exited $?"
grep -q "zz-nvidia.icd: its driver libnvidia-opencl.so.1 cannot be loaded (" "$tmp/dv.err" && grep -q pthread "$tmp/dv.out" &&
  echo "ok: a driver that cannot be loaded is named, the rest listed" || fail "broken ICD: $(cat "$tmp/dv.err" "$tmp/dv.out")"
OCL_ICD_VENDORS="$tmp/none.icd" "$hpr" devices >"$tmp/dv.out" 2>"$tmp/dv.err" || fail "hpr devices without an ICD exited $?"
grep -q "OCL_ICD_VENDORS=$tmp/none.icd: no such file" "$tmp/dv.err" && grep -q "No OpenCL device found" "$tmp/dv.out" &&
  echo "ok: no ICD at all: named, no crash" || fail "no ICD: $(cat "$tmp/dv.err" "$tmp/dv.out")"
# hpr run leaves the device out with the reason, and runs on the others.
HPR_FAULT_CL=corrupt:1@pthread "$hpr" run --app md5 --packets 2000 -q >"$tmp/co.log" 2>&1 || fail "run with a corrupt device exited $?"
grep -q "left out: pthread.*: computes wrong results: packet 1 of" "$tmp/co.log" && grep -q "balanced" "$tmp/co.log" &&
  echo "ok: hpr run leaves a device with wrong results out" || fail "corrupt device in hpr run: $(tail -c 600 "$tmp/co.log")"
# The core budget (issue 12): PoCL's CPU threads get the cores hpr's busy threads leave, at least one; a count the
# user set is kept; a run without devices says nothing of PoCL.
grep -qE "core budget: [0-9]+ cores; hpr's busy threads [0-9]+ .*; PoCL CPU threads [0-9]+ \(the cores left" "$tmp/co.log" &&
  echo "ok: the core budget gives PoCL the cores left" || fail "core budget: $(grep -i budget "$tmp/co.log")"
POCL_MAX_PTHREAD_COUNT=3 "$hpr" run --app md5 --packets 2000 --devices pthread -q >"$tmp/pb.log" 2>&1 || fail "run with POCL_MAX_PTHREAD_COUNT exited $?"
"$hpr" run --app md5 --packets 2000 --devices none -q >"$tmp/pn.log" 2>&1 || fail "run without devices exited $?"
grep -q "PoCL CPU threads 3 (set by POCL_MAX_PTHREAD_COUNT)" "$tmp/pb.log" && ! grep -q "PoCL" "$tmp/pn.log" &&
  echo "ok: a PoCL thread count the user set is kept" || fail "POCL_MAX_PTHREAD_COUNT: $(grep -i budget "$tmp/pb.log" "$tmp/pn.log")"
# The control socket (issue 17): hpr ctl asks a running hpr; a second daemon on the same socket is refused; stop ends
# the run with balanced books; nothing answering is exit 3.
ctl="$tmp/ctl/hpr.sock"
# Paced: a reload builds at nice 19, which lanes that poll flat out on both cores (unpaced input, sanitizers) starve.
"$hpr" run --devices none --native 2 --packets 0 --rate-pps 50000 --duration 600 -q --ctl "$ctl" --routes "$tmp/routes.txt" >"$tmp/ctl.log" 2>&1 &
ctl_pid=$!
for _ in $(seq 100); do "$hpr" ctl --ctl "$ctl" help >/dev/null 2>&1 && break; sleep 0.2; done
"$hpr" ctl --ctl "$ctl" status >"$tmp/ctl.out" 2>&1 && grep -q "received" "$tmp/ctl.out" && echo "ok: hpr ctl status" ||
  fail "hpr ctl status: $(cat "$tmp/ctl.out")"
"$hpr" ctl --ctl "$ctl" lanes --json | python3 -c "import json,sys; j=json.load(sys.stdin); assert j['ok'] and j['lanes'][0]['name']=='native0', j" &&
  echo "ok: hpr ctl lanes --json" || fail "hpr ctl lanes --json"
"$hpr" ctl --ctl "$ctl" scheduler >"$tmp/ctl.out" 2>&1 && grep -Eq "learning|static lane weights" "$tmp/ctl.out" &&
  echo "ok: hpr ctl scheduler" || fail "hpr ctl scheduler: $(cat "$tmp/ctl.out")"
expect 1 "unknown command 'bogus' (known: help, status, lanes, drops, scheduler, flows, set, reload, stop)" ctl --ctl "$ctl" bogus
# Live reloads: a new table swapped in; bad files and kinds refused with the file (and line) named, the run goes on.
printf '0.0.0.0/0 2\n10.0.0.0/8 1\n' >"$tmp/routes2.txt"
printf '0.0.0.0/0 1\n10.0.0.0/40 2\n' >"$tmp/routes-bad.txt"
"$hpr" ctl --ctl "$ctl" reload routes "$tmp/routes2.txt" >"$tmp/ctl.out" 2>&1 &&
  grep -q "reloaded routes from $tmp/routes2.txt: generation 2" "$tmp/ctl.out" && echo "ok: hpr ctl reload routes FILE" ||
  fail "hpr ctl reload routes: $(cat "$tmp/ctl.out")"
(cd "$tmp" && "$hpr" ctl --ctl "$ctl" reload routes routes.txt --json) | python3 -c \
  "import json,sys; j=json.load(sys.stdin); r=j['reload']; assert j['ok'] and r['generation']==3 and r['file'].endswith('/routes.txt') and r['old_freed'], j" &&
  echo "ok: hpr ctl reload with a relative path (--json)" || fail "hpr ctl reload relative path"
"$hpr" ctl --ctl "$ctl" status | grep -q "tables *generation 3" && echo "ok: hpr ctl status names the tables' generation" ||
  fail "hpr ctl status after reloads: no 'tables generation 3'"
expect 1 "reload routes: $tmp/routes-bad.txt:2: bad prefix length '40' (0..32)" ctl --ctl "$ctl" reload routes "$tmp/routes-bad.txt"
expect 1 "reload routes: $tmp/none.txt: No such file or directory" ctl --ctl "$ctl" reload routes "$tmp/none.txt"
expect 1 "reload routes: $tmp: is a folder, not a file" ctl --ctl "$ctl" reload routes "$tmp"
expect 1 "the ipv4 app has no rules to reload (it reloads: routes)" ctl --ctl "$ctl" reload rules
expect 1 "reload: want routes|rules|keys [FILE] (this run reloads: routes)" ctl --ctl "$ctl" reload
# flows top (each dispatcher answers from its own flow table), as text and JSON; bad N; this run learns its weights
# (two lanes, no --static): set weight is refused, set policy goes to the learning scheduler.
"$hpr" ctl --ctl "$ctl" flows top 3 >"$tmp/ctl.out" 2>&1 && grep -q "the 3 with the most bytes" "$tmp/ctl.out" &&
  [[ $(grep -c " <-> " "$tmp/ctl.out") -eq 3 ]] && echo "ok: hpr ctl flows top 3" || fail "hpr ctl flows top 3: $(cat "$tmp/ctl.out")"
"$hpr" ctl --ctl "$ctl" flows top 3 --json | python3 -c "
import json,sys; j=json.load(sys.stdin); f=j['flows']
assert j['ok'] and len(f)==3 and j['live']>=3 and f[0]['bytes']>=f[1]['bytes']>=f[2]['bytes'] and f[0]['lane'].startswith('native'), j" &&
  echo "ok: hpr ctl flows top 3 --json" || fail "hpr ctl flows top 3 --json"
expect 1 "flows top: N '0' is not a whole number in 1..1000" ctl --ctl "$ctl" flows top 0
expect 1 "flows top: N 'many' is not a whole number in 1..1000" ctl --ctl "$ctl" flows top many
expect 1 "flows: usage: flows top [N]" ctl --ctl "$ctl" flows
expect 1 "set weight: the learning scheduler sets the lane weights in this run; start hpr run with --static" ctl --ctl "$ctl" set weight native0 1
"$hpr" ctl --ctl "$ctl" set policy energy >"$tmp/ctl.out" 2>&1 && grep -q "policy throughput -> energy" "$tmp/ctl.out" &&
  echo "ok: hpr ctl set policy energy" || fail "hpr ctl set policy energy: $(cat "$tmp/ctl.out")"
# The scheduler takes it at its next quantum; its report (refreshed with each status line) then shows the new goal.
for _ in $(seq 50); do "$hpr" ctl --ctl "$ctl" scheduler 2>&1 | grep -q "learning    policy energy" && break; sleep 0.2; done
"$hpr" ctl --ctl "$ctl" scheduler >"$tmp/ctl.out" 2>&1 && grep -q "learning    policy energy" "$tmp/ctl.out" &&
  grep -q "policy throughput -> energy (hpr ctl set policy)" "$tmp/ctl.out" && echo "ok: the learning scheduler runs with policy energy" ||
  fail "hpr ctl scheduler after set policy energy: $(cat "$tmp/ctl.out")"
expect 1 "set policy: policy 'fastest' is not one of energy, latency, throughput, latency-target" ctl --ctl "$ctl" set policy fastest
expect 1 "set policy latency-target: no p99 target" ctl --ctl "$ctl" set policy latency-target
expect 1 "set: usage: set weight LANE W | set place SERVICE LANE|any | set policy GOAL" ctl --ctl "$ctl" set colour blue
expect 1 "set place: learning mode places the services in this run" ctl --ctl "$ctl" set place udp native0
expect 3 "control.socket (--ctl) $ctl: another hpr answers on it" run --devices none --packets 10 -q --ctl "$ctl"
"$hpr" ctl --ctl "$ctl" stop >/dev/null || fail "hpr ctl stop exited $?"
wait $ctl_pid && grep -q "balanced" "$tmp/ctl.log" && [[ ! -e "$ctl" ]] && echo "ok: hpr ctl stop ends the run, balanced, socket removed" ||
  fail "run after hpr ctl stop: $(tail -c 400 "$tmp/ctl.log")"
expect 3 "no hpr answers on $ctl" ctl --ctl "$ctl" status
# Reloads of aes keys and dpi rules: the new key source for every live flow (none left without a key), a key file
# that is not one refused naming it; with --strict-rules a rule that cannot be read refuses the set, file:line named;
# a file above the size a reload reads is refused before it is read.
echo 00112233445566778899aabbccddeeff >"$tmp/mk1"
echo ffeeddccbbaa99887766554433221100 >"$tmp/mk2"
printf 'alert tcp any any -> any any (msg:"a"; content:"GET"; sid:1;)\n' >"$tmp/one.rules"
printf 'alert tcp any any -> any any (msg:"a"; content:"GET"; sid:1;)\nalert tcp any any -> any any (content:"|zz|"; sid:2;)\n' >"$tmp/bad.rules"
truncate -s 600M "$tmp/huge.rules"
for app in aes dpi; do
  src=(--master-key-file "$tmp/mk1"); [[ $app == dpi ]] && src=(--rules "$tmp/one.rules" --strict-rules)
  "$hpr" run --app $app "${src[@]}" --devices none --packets 0 --rate-pps 50000 --duration 600 -q --ctl "$ctl" \
    --state-dir none --summary-json "$tmp/$app-reload.json" >"$tmp/$app-reload.log" 2>&1 &
  pid=$!
  for _ in $(seq 100); do "$hpr" ctl --ctl "$ctl" help >/dev/null 2>&1 && break; sleep 0.2; done
  if [[ $app == aes ]]; then
    "$hpr" ctl --ctl "$ctl" reload keys "$tmp/mk2" >"$tmp/ctl.out" 2>&1 && grep -q "reloaded keys from $tmp/mk2: generation 2" "$tmp/ctl.out" &&
      echo "ok: hpr ctl reload keys" || fail "hpr ctl reload keys: $(cat "$tmp/ctl.out")"
    expect 1 "reload keys: app.master_key_file (--master-key-file): '$tmp/one.rules': want 32 hex digits (AES-128)" ctl --ctl "$ctl" reload keys "$tmp/one.rules"
  else
    "$hpr" ctl --ctl "$ctl" reload rules "$tmp/one.rules" >"$tmp/ctl.out" 2>&1 && grep -q "reloaded rules from $tmp/one.rules: generation 2" "$tmp/ctl.out" &&
      echo "ok: hpr ctl reload rules" || fail "hpr ctl reload rules: $(cat "$tmp/ctl.out")"
    expect 1 "$tmp/bad.rules:2: content \"|zz|\": 'z' is not a hex digit" ctl --ctl "$ctl" reload rules "$tmp/bad.rules"
    expect 1 "reload rules: $tmp/huge.rules: 629145600 bytes, more than the 512 MiB a reload reads" ctl --ctl "$ctl" reload rules "$tmp/huge.rules"
  fi
  "$hpr" ctl --ctl "$ctl" stop >/dev/null || fail "hpr ctl stop ($app) exited $?"
  wait $pid || fail "$app run with reloads exited $?: $(tail -c 300 "$tmp/$app-reload.log")"
  python3 -c "import json,sys; j=json.load(open(sys.argv[1])); assert j['dropped']==0 and j['reorders']==0 and j['unaccounted']==0 and j['rx']['packets']>0, j" \
    "$tmp/$app-reload.json" && echo "ok: $app run with reloads: nothing dropped or reordered" || fail "$app reload run: $(head -c 400 "$tmp/$app-reload.json")"
done
rm -f "$tmp/huge.rules"
# set weight in a run with static weights (two lanes): by name and index; all lanes 0, bad W, unknown lane and a goal
# without a scheduler refused; the run goes on and balances its books.
"$hpr" run --devices none --native 2 --static --packets 0 --rate-pps 20000 --duration 600 -q --ctl "$ctl" --routes "$tmp/routes.txt" >"$tmp/ctl.log" 2>&1 &
ctl_pid=$!
for _ in $(seq 100); do "$hpr" ctl --ctl "$ctl" help >/dev/null 2>&1 && break; sleep 0.2; done
"$hpr" ctl --ctl "$ctl" set weight native1 0 >"$tmp/ctl.out" 2>&1 && grep -q "weight native1 1 -> 0" "$tmp/ctl.out" &&
  grep -q "weights: native0 1, native1 0" "$tmp/ctl.out" && echo "ok: hpr ctl set weight native1 0" ||
  fail "hpr ctl set weight native1 0: $(cat "$tmp/ctl.out")"
expect 1 "set weight: refused: every lane would have weight 0, so no lane would take a new flow" ctl --ctl "$ctl" set weight 0 0
"$hpr" ctl --ctl "$ctl" set weight 1 2.5 --json | python3 -c "
import json,sys; j=json.load(sys.stdin); assert j['ok'] and j['weights']=={'native0': 1, 'native1': 2.5}, j" &&
  echo "ok: hpr ctl set weight 1 2.5 (by index) --json" || fail "hpr ctl set weight 1 2.5 --json"
expect 1 "set weight: W 'heavy' is not a number in 0..1e6" ctl --ctl "$ctl" set weight native0 heavy
expect 1 "set weight: W '-1' is not a number in 0..1e6" ctl --ctl "$ctl" -- set weight native0 -1
expect 1 "set weight: LANE 'cl0' is neither a lane's name nor its index (lanes: native0, native1)" ctl --ctl "$ctl" set weight cl0 1
expect 1 "set weight: usage: set weight LANE W" ctl --ctl "$ctl" set weight native0
expect 1 "set policy: this run has no scheduler (--static: fixed lane weights)" ctl --ctl "$ctl" set policy energy
"$hpr" ctl --ctl "$ctl" flows top >"$tmp/ctl.out" 2>&1 && grep -q "native" "$tmp/ctl.out" && echo "ok: hpr ctl flows top (default N)" ||
  fail "hpr ctl flows top: $(cat "$tmp/ctl.out")"
"$hpr" ctl --ctl "$ctl" stop >/dev/null || fail "hpr ctl stop exited $?"
wait $ctl_pid && grep -q "balanced" "$tmp/ctl.log" && grep -q "reorders    0" "$tmp/ctl.log" &&
  echo "ok: the run after hpr ctl set weight and errors goes on, balanced" || fail "run after set weight: $(tail -c 400 "$tmp/ctl.log")"
# systemd's readiness protocol (Type=notify, packaging/hpr.service): READY=1 before forwarding, STATUS= lines, then
# STOPPING=1; SIGHUP (systemctl reload) reloads the routes between RELOADING=1 and READY=1, the run goes on.
python3 - "$tmp/notify.sock" >"$tmp/notify.out" <<'PY' &
import socket, sys
s = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
s.bind(sys.argv[1])
s.settimeout(60)
while True:
    m = s.recv(4096).decode()
    print(m.replace("\n", " | "), flush=True)
    if "STOPPING=1" in m:
        break
PY
ln_pid=$!
for _ in $(seq 50); do [[ -S "$tmp/notify.sock" ]] && break; sleep 0.1; done
NOTIFY_SOCKET="$tmp/notify.sock" "$hpr" run --devices none --packets 0 --rate-pps 50000 --duration 120 -q --ctl none \
  --routes "$tmp/routes.txt" >"$tmp/notify-run.log" 2>&1 &
run_pid=$!
for _ in $(seq 50); do grep -q READY=1 "$tmp/notify.out" && break; sleep 0.1; done
kill -HUP $run_pid
# The reload happens at the next status tick; then SIGTERM ends the run (systemctl stop).
for _ in $(seq 600); do grep -q "reloaded routes" "$tmp/notify-run.log" && break; sleep 0.1; done
sleep 1.2  # a status line after the reload
kill -TERM $run_pid
wait $run_pid || fail "run under NOTIFY_SOCKET exited $?: $(tail -c 300 "$tmp/notify-run.log")"
wait $ln_pid
if head -1 "$tmp/notify.out" | grep -q "^READY=1" && grep -q "^STATUS=\[" "$tmp/notify.out" &&
   tail -1 "$tmp/notify.out" | grep -q "^STOPPING=1" && grep -q "reloaded routes from $tmp/routes.txt: generation 2" "$tmp/notify-run.log" &&
   awk '/^RELOADING=1/ { r = 1 } r && /^READY=1/ { ok = 1 } END { exit !ok }' "$tmp/notify.out" &&
   grep -q "balanced" "$tmp/notify-run.log"; then echo "ok: sd_notify READY/STATUS/STOPPING; SIGHUP reloads between RELOADING and READY"
else fail "sd_notify: $(cat "$tmp/notify.out") / $(tail -c 300 "$tmp/notify-run.log")"; fi
# issue 14: no OpenCL driver at all (an empty vendors folder: the ICD loader finds no platform) is said, not a crash;
# the run goes on with native lanes, and --version names the optional parts this build has.
mkdir -p "$tmp/no-icd"
OCL_ICD_VENDORS="$tmp/no-icd" "$hpr" devices >"$tmp/noicd.txt" 2>&1 && grep -q "No OpenCL device found" "$tmp/noicd.txt" &&
  echo "ok: no ICD: hpr devices says so" || fail "no ICD: hpr devices: $(tail -c 300 "$tmp/noicd.txt")"
OCL_ICD_VENDORS="$tmp/no-icd" "$hpr" run --packets 20000 -q --state-dir none >"$tmp/noicd-run.txt" 2>&1 &&
  grep -q "balanced" "$tmp/noicd-run.txt" && echo "ok: no ICD: hpr run runs native lanes" ||
  fail "no ICD: hpr run: $(tail -c 300 "$tmp/noicd-run.txt")"
"$hpr" --version | grep -Eq "DPDK (on|off), Hyperscan (on|off), prometheus (on|off)" || fail "--version: $("$hpr" --version)"

if [[ $fails -ne 0 ]]; then echo "$fails failed"; exit 1; fi
echo "PASS: cli"
