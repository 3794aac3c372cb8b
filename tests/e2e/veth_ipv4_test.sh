#!/usr/bin/env bash
# Real network end to end (issue 8): three network namespaces joined by two veth pairs
#
#   [src] e2e-a ──veth── e2e-b [dut: hpr run --app ipv4, DPDK net_af_packet on e2e-b and e2e-c] e2e-c ──veth── e2e-d [sink]
#
# tcpreplay sends ~1000 real frames (nDPI captures, plus hand-made TTL 0/1/2/255, bad-checksum and IP-options
# frames) into e2e-a; hpr forwards them (default route: everything to port 0 = e2e-c); tcpdump captures e2e-d;
# check.py compares with tshark (IPv4 checksums validated) and with hpr's --summary-json.
# Usage: veth_ipv4_test.sh HPR_BINARY [DATA_DIR]
# Exit: 0 pass, 1 fail, 77 skipped (not root, no `ip netns` or `ip netns exec`, or a tool missing): ctest SKIP_RETURN_CODE.
set -uo pipefail
hpr=${1:?usage: veth_ipv4_test.sh HPR_BINARY [DATA_DIR]}
data=${2:-${HPR_DATA_DIR:-$(dirname "$0")/../../../shared/data}}
here=$(cd "$(dirname "$0")" && pwd)
skip() { echo "SKIP: $*"; exit 77; }
[[ $(id -u) == 0 ]] || skip "needs root (network namespaces, veth, af_packet)"
for t in ip tcpreplay tcpdump tshark /usr/bin/python3; do command -v "$t" >/dev/null || skip "$t not installed"; done
[[ -x $hpr ]] || { echo "FAIL: $hpr is not executable"; exit 1; }

# hpr runs under stdbuf (line-buffered stdout, to see when it is up); stdbuf preloads a library, which a
# sanitizer build would refuse as "ASan runtime does not come first".
export ASAN_OPTIONS=${ASAN_OPTIONS:+$ASAN_OPTIONS:}verify_asan_link_order=0
tag=$$
src=hpr-src-$tag dut=hpr-dut-$tag sink=hpr-sink-$tag
work=$(mktemp -d /tmp/hpr-e2e.XXXXXX)
hpr_pid="" dump_pid=""
cleanup() {
  [[ -n $hpr_pid ]] && kill "$hpr_pid" 2>/dev/null
  [[ -n $dump_pid ]] && kill "$dump_pid" 2>/dev/null
  wait 2>/dev/null
  for n in $src $dut $sink; do ip netns del "$n" 2>/dev/null; done
  [[ ${HPR_E2E_KEEP:-0} == 1 ]] && echo "kept $work" || rm -rf "$work"
}
trap cleanup EXIT
ip netns add $src 2>/dev/null || skip "ip netns add is not allowed here"
ip netns add $dut && ip netns add $sink || skip "ip netns add is not allowed here"
# In a chroot and in many containers `ip netns exec` cannot remount /sys for the namespace: skip, don't fail.
ip netns exec $src true 2>"$work/exec.err" || skip "ip netns exec does not work here: $(head -c 200 "$work/exec.err")"
ip link add e2e-a netns $src type veth peer name e2e-b netns $dut || skip "veth pairs are not allowed here"
ip link add e2e-c netns $dut type veth peer name e2e-d netns $sink || skip "veth pairs are not allowed here"
setup() {  # ns ifname: up, no IPv6 (no router solicitations / MLD reports in the books), no offloads
  ip netns exec "$1" sysctl -qw net.ipv6.conf.all.disable_ipv6=1 net.ipv6.conf.default.disable_ipv6=1
  ip netns exec "$1" sysctl -qw "net.ipv6.conf.$2.disable_ipv6=1"
  ip -n "$1" link set "$2" mtu 9000 up
  ip -n "$1" link set lo up
}
setup $src e2e-a; setup $dut e2e-b; setup $dut e2e-c; setup $sink e2e-d

sent=$(/usr/bin/python3 "$here/make_input.py" "$data" "$work/in.pcap") || { echo "FAIL: make_input.py"; exit 1; }
printf '0.0.0.0/0 0\n' >"$work/routes.txt"

ip netns exec $sink tcpdump -i e2e-d -U -n -w "$work/out.pcap" -s 0 >"$work/tcpdump.log" 2>&1 &
dump_pid=$!
ip netns exec $dut stdbuf -oL "$hpr" run --app ipv4 --routes "$work/routes.txt" --native 1 --devices none \
  --vdev net_af_packet0,iface=e2e-b --vdev net_af_packet1,iface=e2e-c \
  --in dpdk:net_af_packet0 --out dpdk:net_af_packet1 --summary-json "$work/summary.json" -q >"$work/hpr.log" 2>&1 &
hpr_pid=$!
for _ in $(seq 1 300); do  # wait until hpr runs (EAL up, ports started) and tcpdump listens
  grep -q '^hpr run: app' "$work/hpr.log" && grep -q 'listening on' "$work/tcpdump.log" && break
  kill -0 $hpr_pid 2>/dev/null || { echo "FAIL: hpr exited early:"; cat "$work/hpr.log"; exit 1; }
  sleep 0.1
done
grep -q '^hpr run: app' "$work/hpr.log" || { echo "FAIL: hpr did not start in 30 s"; cat "$work/hpr.log"; exit 1; }
sleep 0.5
# Paced (2000 pps) so that the af_packet ring never overflows: a kernel-side drop would not be in hpr's books.
ip netns exec $src tcpreplay -q -i e2e-a --pps 2000 "$work/in.pcap" >"$work/tcpreplay.log" 2>&1 \
  || { echo "FAIL: tcpreplay"; cat "$work/tcpreplay.log"; exit 1; }
replayed=$(sed -n 's/.*Successful packets: *\([0-9]*\).*/\1/p' "$work/tcpreplay.log")
[[ -n $replayed ]] || replayed=$(sed -n 's/^Actual: \([0-9]*\) packets.*/\1/p' "$work/tcpreplay.log")
sleep 1.5
kill -INT $hpr_pid
wait $hpr_pid
hpr_rc=$?
hpr_pid=""
sleep 0.5
kill -INT $dump_pid; wait $dump_pid 2>/dev/null; dump_pid=""
echo "--- link counters (kernel side)"
for x in "$src e2e-a" "$dut e2e-b" "$dut e2e-c" "$sink e2e-d"; do set -- $x; echo "$1 $2:"; ip -n "$1" -s link show "$2" | sed -n '3,6p'; done
echo "--- hpr (exit $hpr_rc)"; cat "$work/hpr.log"
echo "--- tcpreplay: $sent frames written, $replayed sent"
[[ $hpr_rc == 0 ]] || { echo "FAIL: hpr exited with $hpr_rc"; exit 1; }
/usr/bin/python3 "$here/check.py" "$work/in.pcap" "$work/out.pcap" "$work/summary.json" "${replayed:-$sent}"
