#!/usr/bin/env bash
# One executor per OpenCL device shared by the workers (--share-devices on) against an executor per worker lane
# (off), interleaved (issue 12; docs/pipeline.md "One device shared by the workers").
# Each round runs `hpr run` twice, on then off: WORKERS (2) workers, each on an rx queue of net_pcap0 (the 6,000-packet
# mix of real captures split by flow, as bench/runtime/workers_scaling.py makes it), into net_null0, --static with a share
# DEV of the flows on DEVICE and the rest on the native lane. Prints Gbit/s per run (md5 and dpi work per byte, and
# the two workers' captures differ in size) and on/off per round, median (min-max).
# Usage: [WORKERS=N] [HPR=BIN] bench/runtime/shared_device_ab.sh [ROUNDS] [APP] [DEVICE] [DEV]
#        (defaults 5 md5 pthread 0.5; on a GPU machine: bench/gpu/workers.sh run DIR OUT shared)
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
rounds=${1:-5} app=${2:-md5} device=${3:-pthread} dev=${4:-0.5}
hpr=${HPR:-$root/build/cli/hpr}
n=${WORKERS:-2}
w=$root/out/runtime/workers
mkdir -p "$w"
[[ -f $w/mix.pcap ]] || python3 -c "import sys; sys.path.insert(0, '$root/bench/runtime'); import vs_testpmd; vs_testpmd.make_mix('$w/mix.pcap')"
parts=() rx=net_pcap0
for ((i = 0; i < n; i++)); do parts+=("$w/mix_${n}_$i.pcap") rx+=",rx_pcap=$w/mix_${n}_$i.pcap"; done
[[ -f ${parts[-1]} ]] || "$root/build/bench/runtime/split_by_flow" "$w/mix.pcap" "${parts[@]}"
js=$(mktemp)
trap 'rm -f "$js"' EXIT
export POCL_DEVICES=${POCL_DEVICES:-pthread basic}
ratios=()
for r in $(seq 1 "$rounds"); do
  declare -A g=()
  for share in on off; do
    "$hpr" run -q --app "$app" --in dpdk:net_pcap0 --out dpdk:net_null0 \
      --vdev "$rx,infinite_rx=1" --vdev net_null0,no-rx=1 \
      --devices "$device" --native 1 --workers "$n" --rx-spread queues --duration 4 --state-dir none --static \
      --weight "native=$(python3 -c "print(1 - $dev)")" --weight "$device=$dev" --share-devices "$share" \
      --summary-json "$js" >/dev/null
    g[$share]=$(python3 -c "import json; s = json.load(open('$js')); print(s['tx']['bytes'] * 8 / s['seconds'] / 1e9)")
    printf 'round %d %-3s %.3f Gbit/s\n' "$r" "$share" "${g[$share]}"
  done
  ratios+=("$(python3 -c "print(${g[on]} / ${g[off]})")")
done
python3 -c "
import statistics; r = [float(x) for x in '${ratios[*]}'.split()]
print(f'on / off per round: {statistics.median(r):.2f} ({min(r):.2f}-{max(r):.2f}), {len(r)} rounds')"
