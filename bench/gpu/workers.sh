#!/usr/bin/env bash
# Issue 12's workers on a machine with many cores and a GPU, from a bundle (bench/runtime/workers_scaling.py there).
#   bench/gpu/workers.sh pack DIR          here (DPDK and dpdk-doc installed): the bundle (scripts/bundle.sh), DPDK's
#                                          l3fwd (bench/runtime/build_l3fwd.sh) with the libraries the bundle lacks
#                                          and its rule files, and the mix split by flow into 2, 4, 8 and 16 captures
#                                          (out/runtime/workers/). Carry DIR and out/runtime/workers to the machine
#                                          (the steps chains and learn-batch need only its mix.pcap, chain-check none:
#                                          the splits are 26 MB of the 64 MiB a device call carries).
#   bench/gpu/workers.sh run DIR OUT [STEP...]   there, from the repository root; STEPs (default: all, in this order):
#     scaling  ipv4 on W = 1, 2, 4, 8, 16 workers beside l3fwd exact match on W lcores, 5 rounds of 2 s
#     lpm      l3fwd LPM on the BGP table at 1 and 16 lcores, one round (it loads the table rule by rule: ~40 s a run)
#     ipv4-dev ipv4 on 1 and 16 workers, native only against each worker with a lane on the GPU too (learning), 8 s
#     dpi, md5 the app on 1 and 16 workers: native only, GPU lane only, both (learning), 3 rounds of 4 s (GPU_CASES:
#              workers_scaling.py's --cases, default hpr,dev,devonly)
#     md5-mix  md5 on 1 and 16 workers: native only, both (learning), and at 16 static splits with 5, 10 and 20 % on
#              the GPU (the best static split), 3 rounds of 4 s
#     shared   md5 on 16 workers, 10 % of the flows on the GPU, --static: the workers sharing the GPU's executor
#              against an executor per worker lane, 3 interleaved rounds of 4 s (bench/runtime/shared_device_ab.sh)
#     md5-learn  one learning run of md5 on 16 workers, 8 s: its summary (the decisions) and --adapt-csv
#     chain-check  hpr selftest on the GPU: each app and the chains ipv4,aes ipv4,dpi dpi,md5 aes,md5 ipv4,dpi,md5,
#              each device's output against the native chain byte for byte (32,768 packets, batch 8,192)
#     chains   bench/chain/chain_bench.py on the GPU alone: each chain against its slower app, 3 rounds of 3 s, with
#              hpr run's options GPU_CHAIN_ARGS (default "--batch 8192 --timeout-us 2000": the static 256 leaves a
#              discrete GPU waiting on each batch's copies and launches)
#     variants  one case per line of GPU_VARIANTS ("NAME hpr-run-options…"; NAME learn…: learning, its quanta
#              (--adapt-csv) in variants-adapt.tgz; else --static; default "static8192 --batch 8192", "static2048 --batch
#              2048", "learn"), the GPU alone, on the chain aes,dpi and its apps (GPU_LEARN_CHAINS), 3 rounds of
#              GPU_LEARN_S (4) s, whole run and after GPU_LEARN_WARM (1) s; the first line is the ratios' base
#     placement  bench/adapt/placement_sweep.py: each service of bench/adapt/services_mix.toml on native0 or the GPU
#              (`[[service]] lanes`, 8 placements) against learning mode (which places services too; from nothing
#              and from saved state), 3 rounds of 8 s measured after 3 s, hpr run's options
#              GPU_CHAIN_ARGS as for chains
#     learn-batch  variants with "static8192 --batch 8192 --timeout-us 2000" and "learn", 6 s runs, after 2 s
# GPU_DEVICE (default H200): the --devices name substring of the GPU. OUT gets machine.txt, devices.txt and a .csv
# (a row per sample) and .txt (medians, spreads, ratios) per step. About 8 minutes in all on 16 cores.
set -u
cmd=${1:-}
dir=${2:-}
[ -n "$dir" ] || { sed -n 2,14p "$0"; exit 2; }
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)

if [ "$cmd" = pack ]; then
  set -e
  mkdir -p "$dir/l3fwd/lib" "$dir/l3fwd/src"
  dir=$(cd "$dir" && pwd)
  bash "$root/scripts/bundle.sh" --out "$dir"
  # Where vs_testpmd.py, callgrind_ipp.py and workers_scaling.py look for it (before, the binary itself was put at
  # build/bench/l3fwd, and their builds then failed on "mkdir: Not a directory").
  l3=$root/build/bench/l3fwd
  if [ -f "$l3" ]; then rm -f "$l3"; fi
  bash "$root/bench/runtime/build_l3fwd.sh" "$l3" >/dev/null
  cp "$l3/l3fwd" "$dir/l3fwd/"
  cp /usr/share/dpdk/examples/l3fwd/*.cfg "$dir/l3fwd/src/"
  tar xzf "$dir"/hpr-*.tar.gz -C "$dir"
  b=$(ls -d "$dir"/hpr-*/ | head -1)
  for l in $(ldd "$l3/l3fwd" | awk '$3 ~ /^\// {print $3}'); do
    n=$(basename "$l")
    case "$n" in libc.so*|libm.so*) continue ;; esac
    [ -e "$b/lib/$n" ] || cp -L "$l" "$dir/l3fwd/lib/"
  done
  rm -rf "$b"
  # The captures: workers_scaling.py makes the mix, its splits and the l3fwd rules file, and runs nothing (0 rounds).
  python3 "$root/bench/runtime/workers_scaling.py" --workers 2,4,8,16 --cases hpr,lpm --rounds 0 --out /dev/null
  echo "workers.sh: packed $dir; carry it and out/runtime/workers"
  exit 0
fi
[ "$cmd" = run ] || { echo "workers.sh: pack DIR | run DIR OUT [STEP...]" >&2; exit 2; }
out=${3:?workers.sh run DIR OUT [STEP...]}
shift 3
steps=${*:-scaling lpm ipv4-dev dpi md5}
dir=$(cd "$dir" && pwd)
mkdir -p "$out"
gpu=${GPU_DEVICE:-H200}
t0=$(date +%s)
tar xzf "$dir"/hpr-*.tar.gz -C "$dir"
b=$(ls -d "$dir"/hpr-*/ | head -1)
{ date -u; nproc; lscpu | grep -E 'Model name|Thread|Core|Socket|NUMA node|L3'; nvidia-smi -L; free -g | head -2
  head -2 /etc/os-release; command -v python3; python3 --version; } > "$out/machine.txt" 2>&1
export HPR_L3FWD_SRC=$dir/l3fwd/src HPR_BUNDLE_QUIET=1 HPR_STATE_DIR=none
export LD_LIBRARY_PATH=$dir/l3fwd/lib:$b/lib
# Without DPDK installed, the EAL loads the bundle's drivers (l3fwd through vs_testpmd's -d, hpr through its launcher).
if ! [ -d /usr/lib/x86_64-linux-gnu/dpdk ]; then
  export HPR_DPDK_DRIVER_DIR=$b/lib/dpdk-pmds LD_LIBRARY_PATH=$LD_LIBRARY_PATH:$b/lib/dpdk-pmds
fi
"$b/hpr" devices > "$out/devices.txt" 2>&1
ws() { python3 "$root/bench/runtime/workers_scaling.py" --hpr "$b/hpr" --l3fwd "$dir/l3fwd/l3fwd" "$@"; }
for s in $steps; do
  case "$s" in
    scaling) ws --workers 2,4,8,16 --cases hpr,em --rounds 5 --seconds 2 --out "$out/$s.csv" ;;
    lpm) ws --workers 16 --cases lpm --rounds 1 --seconds 4 --out "$out/$s.csv" ;;
    ipv4-dev) ws --workers 16 --cases hpr,dev --dev-devices "$gpu" --rounds 3 --seconds 8 --out "$out/$s.csv" ;;
    dpi|md5) ws --app "$s" --workers 16 --cases "${GPU_CASES:-hpr,dev,devonly}" --dev-devices "$gpu" --rounds 3 --seconds 4 \
                --out "$out/$s.csv" ;;
    md5-mix) ws --app md5 --workers 16 --cases hpr,dev --mix 0.05,0.1,0.2 --dev-devices "$gpu" --rounds 3 \
                --seconds 4 --out "$out/$s.csv" ;;
    shared) WORKERS=16 HPR=$b/hpr bash "$root/bench/runtime/shared_device_ab.sh" 3 md5 "$gpu" 0.1 ;;
    md5-learn) mkdir -p "$out/learn"
               "$b/hpr" run --app md5 --in dpdk:net_pcap0 --out dpdk:net_null0 --vdev "net_pcap0,$(
                 for i in $(seq 0 15); do printf 'rx_pcap=%s,' "$root/out/runtime/workers/mix_16_$i.pcap"; done
               )infinite_rx=1" --vdev net_null0,no-rx=1 --devices "$gpu" --workers 16 --rx-spread queues \
                 --duration 8 --state-dir none --adapt-csv "$out/learn/md5-16.csv" ;;
    chain-check) HPR_MASTER_KEY=2b7e151628aed2a6abf7158809cf4f3c "$b/hpr" selftest --devices "$gpu" --packets 32768 \
                   --fill --chain ipv4,aes ipv4,dpi dpi,md5 aes,md5 ipv4,dpi,md5 --json ;;
    chains) HPR_DATA_DIR=$b/share/hpr/data python3 "$root/bench/chain/chain_bench.py" --hpr "$b/hpr" --lanes "$gpu" \
              --run-args "${GPU_CHAIN_ARGS:---batch 8192 --timeout-us 2000}" --rounds 3 --seconds 3 --out "$out/$s.csv"; rm -f "$out/routes_default.dat" ;;
    placement) HPR_DATA_DIR=$b/share/hpr/data python3 "$root/bench/adapt/placement_sweep.py" --hpr "$b/hpr" \
                 --lanes "native0,$gpu" --run-args "${GPU_CHAIN_ARGS:---batch 8192 --timeout-us 2000}" --rounds 3 \
                 --seconds 8 --warm-s 3 --out "$out/$s" ;;
    learn-batch|variants) w="$out/$s-bin"; mkdir -p "$w" "$out/$s-adapt"; set --
               if [ "$s" = learn-batch ]; then sec=${GPU_LEARN_S:-6} warm=2 def="static8192 --batch 8192 --timeout-us 2000
learn"
               else sec=${GPU_LEARN_S:-4} warm=${GPU_LEARN_WARM:-1} def="static8192 --batch 8192
static2048 --batch 2048
learn"; fi
               # One build per line of GPU_VARIANTS, "NAME hpr-run-options…"; a NAME starting with "learn" learns
               # (chain_bench's --static dropped; its quanta in $s-adapt.tgz), the others run --static.
               while read -r n args; do
                 [ -n "$n" ] || continue
                 case $n in learn*) printf '#!/bin/sh\napp=; p=\nfor a; do shift; [ "$p" = --app ] && app=$a; p=$a; [ "$a" = --static ] || set -- "$@" "$a"; done\napp=$(echo "$app" | tr , +)\nn=0; while [ -e "%s/%s-$app-$n.csv" ]; do n=$((n+1)); done\nexec %s "$@" %s --adapt-csv "%s/%s-$app-$n.csv"\n' \
                                  "$out/$s-adapt" "$n" "$b/hpr" "$args" "$out/$s-adapt" "$n" >"$w/$n" ;;
                   *) printf '#!/bin/sh\nexec %s "$@" %s\n' "$b/hpr" "$args" >"$w/$n" ;;
                 esac
                 chmod +x "$w/$n"; set -- "$@" --hpr "$n=$w/$n"
               done <<EOV
${GPU_VARIANTS:-$def}
EOV
               HPR_DATA_DIR=$b/share/hpr/data python3 "$root/bench/chain/chain_bench.py" "$@" --lanes "$gpu" \
                 --chains "${GPU_LEARN_CHAINS:-aes,dpi}" --rounds 3 --seconds "$sec" --warm-s "$warm" --out "$out/$s.csv"
               tar czf "$out/$s-adapt.tgz" -C "$out" "$s-adapt"  # one file: a device call brings back few
               rm -rf "$w" "$out/$s-adapt" "$out/routes_default.dat" ;;
    *) echo "workers.sh: unknown step $s (scaling lpm ipv4-dev dpi md5 md5-mix shared md5-learn chain-check chains placement learn-batch variants)" ;;
  esac > "$out/$s.txt" 2>&1
  echo "$s rc=$? at $(( $(date +%s) - t0 )) s" >> "$out/machine.txt"
done
rm -rf "$b"
cat "$out/machine.txt"
