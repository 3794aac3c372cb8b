#!/usr/bin/env bash
# The whole GPU run from an unpacked bundle, in one command (issue 14, "Where the GPUs are"):
#   bench/gpu/run.sh [BUNDLE_DIR] [OUT_DIR]        (in a bundle: bench/gpu-run.sh; defaults: the bundle this script
#                                                   is in, and docs/gpu beside the current directory's docs/ or ./gpu)
# 1. says what the machine offers for an NVIDIA run and what is missing (nvidia-smi, libnvidia-opencl.so.1 and its
#    .icd, libnvidia-ml.so.1, the CUDA Toolkit's headers, python3 with matplotlib);
# 2. runs `hpr devices --json`, `hpr selftest --json` (where the binary has it), `hpr profile` per app over batch
#    sizes 64..65536 (GPU_BUDGET_S seconds each, default 150), `hpr report` from those tables (GPU_REPORT_S, default
#    300, for its rate steps), and a summary of the figures the issue asks for;
# 3. writes everything to OUT_DIR/<gpu-name>/ (docs/gpu/<gpu-name>/ layout): machine.txt (device, driver, date),
#    devices.json, selftest.json, profile-APP.json, report/ (report.md, plots, CSVs), summary.md, run.log.
# Each step's failure is named in one line and the rest goes on; the exit status is the number of failed steps.
# Environment: GPU_APPS (default "ipv4 md5 aes dpi"), GPU_BUDGET_S, GPU_REPORT_S, GPU_DEVICES (hpr --devices;
# default all), GPU_MAX_BATCH (default 65536). About 20 minutes with the defaults.
set -u
self=$(readlink -f "${BASH_SOURCE[0]}")
case "$self" in
  */bench/gpu-run.sh) default_bundle=$(dirname "$(dirname "$self")") ;;  # inside a bundle
  *) default_bundle=. ;;
esac
bundle=$(readlink -f "${1:-$default_bundle}")
if [ -n "${2:-}" ]; then out_root=$2; elif [ -d docs ]; then out_root=docs/gpu; else out_root=gpu; fi
hpr="$bundle/hpr"
[ -x "$hpr" ] || { echo "gpu-run: no bundle launcher $hpr (BUNDLE_DIR: an unpacked hpr-*.tar.gz)" >&2; exit 2; }
apps=${GPU_APPS:-ipv4 md5 aes dpi}
budget=${GPU_BUDGET_S:-150}
report_s=${GPU_REPORT_S:-300}
devices=${GPU_DEVICES:-all}
max_batch=${GPU_MAX_BATCH:-65536}
# The python hpr report runs (cli/report_cmd.cpp): HPR_PYTHON, else Debian's, else the first on PATH.
py=${HPR_PYTHON:-$( [ -x /usr/bin/python3 ] && echo /usr/bin/python3 || echo python3)}
failed=0
fail() { echo "gpu-run: FAILED: $*" >&2; failed=$((failed + 1)); }

# ---- 1. What the machine offers
have=() missing=()
check() { if [ -n "$2" ]; then have+=("$1: $2"); else missing+=("$1"); fi; }
ld_find() { ldconfig -p 2>/dev/null | awk -v n="$1" '$1 == n {print $NF; exit}'; }
gpus=$(command -v nvidia-smi >/dev/null && nvidia-smi -L 2>/dev/null)
check "nvidia-smi -L" "$([ -n "$gpus" ] && echo "$gpus" | head -3 | paste -sd';')"
ocl=$(ld_find libnvidia-opencl.so.1)
[ -z "$ocl" ] && for d in /usr/lib/x86_64-linux-gnu /usr/lib64 /usr/local/nvidia/lib64; do
  [ -e "$d/libnvidia-opencl.so.1" ] && ocl="$d/libnvidia-opencl.so.1" && break; done
check "NVIDIA OpenCL library (libnvidia-opencl.so.1)" "$ocl"
check "NVIDIA .icd file in /etc/OpenCL/vendors" "$(grep -ls libnvidia-opencl /etc/OpenCL/vendors/*.icd | tr '\n' ' ')"
check "NVML (libnvidia-ml.so.1)" "$(ld_find libnvidia-ml.so.1)"
cuda_h=""
for d in "${CUDA_HOME:-}" /usr/local/cuda /usr/local/cuda/targets/x86_64-linux; do
  [ -n "$d" ] && [ -f "$d/include/nvml.h" ] && cuda_h="$d/include (nvml.h$( [ -f "$d/include/CL/cl.h" ] && echo ", CL/cl.h"))" && break
done
check "CUDA Toolkit headers (only to build hpr here, not to run it)" "$cuda_h"
check "python3 with matplotlib (hpr report's plots)" "$("$py" -c 'import matplotlib; print(matplotlib.__version__)' 2>/dev/null)"
echo "gpu-run: this machine offers:"
for h in "${have[@]}"; do echo "  + $h"; done
for m in "${missing[@]}"; do echo "  - missing: $m"; done

gpu_name=$(echo "$gpus" | head -1 | sed -E 's/^GPU [0-9]+: //; s/ \(UUID.*//')
[ -z "$gpu_name" ] && gpu_name=$("$hpr" devices --json 2>/dev/null | "$py" -c \
  'import json,sys; d=json.load(sys.stdin); g=[x for x in d if x["kind"] in ("dgpu","igpu")] or d; print(g[0]["name"] if g else "")' 2>/dev/null)
[ -z "$gpu_name" ] && gpu_name=$(hostname)-no-gpu
slug=$(echo "$gpu_name" | tr 'A-Z' 'a-z' | sed -E 's/[^a-z0-9]+/-/g; s/^-|-$//g')
out="$out_root/$slug"
mkdir -p "$out" || { echo "gpu-run: cannot make $out (OUT_DIR)" >&2; exit 2; }
out=$(readlink -f "$out")
echo "gpu-run: results in $out"
exec > >(tee -a "$out/run.log") 2>&1

{
  echo "device: $gpu_name"
  echo "date: $(date -u +%Y-%m-%dT%H:%M:%SZ)"
  echo "host: $(hostname), $(. /etc/os-release 2>/dev/null && echo "$PRETTY_NAME"), kernel $(uname -r), $(nproc) CPUs"
  [ -n "$gpus" ] && nvidia-smi --query-gpu=name,driver_version,memory.total,power.limit,pci.bus_id --format=csv 2>/dev/null \
    | sed 's/^/nvidia-smi: /'
  echo "hpr: $(sed -n 1p "$bundle/VERSION" 2>/dev/null); $("$hpr" --version 2>/dev/null)"
  HPR_BUNDLE_QUIET=1 "$hpr" devices 2>&1 | sed 's/^/opencl: /'
  for h in "${have[@]}"; do echo "have: $h"; done
  for m in "${missing[@]}"; do echo "missing: $m"; done
} > "$out/machine.txt"

# ---- 2. The runs
step() {  # step NAME OUTFILE CMD...: runs CMD, stdout to OUTFILE (or the log), says how it went
  local name=$1 file=$2; shift 2
  echo "gpu-run: == $name: $*"
  local t0=$SECONDS rc
  if [ -n "$file" ]; then "$@" > "$file"; rc=$?; else "$@"; rc=$?; fi
  if [ $rc -eq 0 ]; then echo "gpu-run: $name ok ($((SECONDS - t0)) s)"; else fail "$name (exit $rc after $((SECONDS - t0)) s)"; fi
  return $rc
}
step "devices" "$out/devices.json" "$hpr" devices --json
"$hpr" devices | tee "$out/devices.txt"
if "$hpr" --help 2>/dev/null | grep -Eq '^ +selftest\b'; then
  step "selftest" "$out/selftest.json" "$hpr" selftest --json
  # Mpps, Gbit/s and the copy share of the time against batch size, every device beside the native lane, on the
  # same sample of real captures (docs/selftest.md).
  for b in 256 1024 4096 16384 65536; do
    step "selftest batch $b" "$out/selftest-batch-$b.json" "$hpr" selftest --json --batch "$b" --packets 65536 \
      --per-file 4096 --min-ms 300
  done
else
  echo "gpu-run: selftest: this hpr has no selftest subcommand; skipped"
fi
tables=()
for app in $apps; do
  if step "profile $app" "" "$hpr" profile --app "$app" --devices "$devices" --min-batch 64 --max-batch "$max_batch" \
      --budget-s "$budget" -q -o "$out/profile-$app.json"; then
    tables+=(--table "$app=$out/profile-$app.json")
  elif [ -s "$out/profile-$app.json" ]; then
    tables+=(--table "$app=$out/profile-$app.json")  # an interrupted profile keeps its finished blocks
  fi
done
if "$py" -c 'import matplotlib' 2>/dev/null; then
  step "report" "" "$hpr" report --app "$(echo $apps | tr ' ' ,)" --devices "$devices" --max-batch "$max_batch" \
    --budget-s "$report_s" -q -o "$out/report" "${tables[@]}"
else
  echo "gpu-run: report: $py has no matplotlib (apt-get install python3-matplotlib, or HPR_PYTHON); no plots, skipped"
fi

# ---- 3. The figures asked for, from the report's points (throughput against batch per lane set, power)
if [ -d "$out/report" ]; then
  step "summary" "$out/summary.md" "$py" - "$out/report" $apps <<'EOF'
import csv, os, sys
root, apps = sys.argv[1], sys.argv[2:]
print("# GPU run summary\n")
print("Per app: the best Gbit/s per lane set and batch size (report/APP/points.csv), the smallest batch at which a")
print("set with an OpenCL device beats the native lane alone, and power at the best point.")
print("Mpps and the share of time in copies against batch size: selftest-batch-*.json (table below the profile's);")
print("report.md has the plots, the Pareto front and the steps.\n")
import glob, json
runs = sorted(glob.glob(os.path.join(os.path.dirname(root), "selftest-batch-*.json")))
if runs:
    print("## selftest: Mpps, Gbit/s and copy share by batch (median pass over the sample)\n")
    print("| app | engine | batch | result | Mpps | Gbit/s | memory / copy share | power |\n|---|---|---|---|---|---|---|---|")
    rows = []
    for f in runs:
        for r in json.load(open(f)).get("results", []):
            rows.append(r)
    for r in sorted(rows, key=lambda r: (r["app"], r["engine"], r["batch"])):
        mem = f"copy {100 * r['copy_share']:.0f}%" if "copy_share" in r else r.get("memory", "")
        print(f"| {r['app']} | {r['engine']} | {r['batch']} | {r['result']} | {r.get('mpps', 0):.3f} | "
              f"{r.get('gbps', 0):.2f} | {mem} | {r.get('power_source', '')} |")
    print()
for app in apps:
    p = os.path.join(root, app, "points.csv")
    if not os.path.exists(p):
        print(f"## {app}\n\nno points ({p} missing)\n"); continue
    rows = list(csv.DictReader(open(p)))
    print(f"## {app}\n\n| lanes | split | batch | Gbit/s | power W | J/Mbit | source |\n|---|---|---|---|---|---|---|")
    for r in sorted(rows, key=lambda r: (r["set"], r["split"], int(r["batch"]))):
        print(f"| {r['set']} | {r['split']} | {r['batch']} | {float(r['gbps']):.3f} | {float(r['power_w']):.1f} | "
              f"{float(r['j_per_mbit']):.5f} | {r['source']} |")
    native = max((float(r["gbps"]) for r in rows if r["set"].startswith("native") and "+" not in r["set"]), default=0)
    dev = sorted((int(r["batch"]), r["set"]) for r in rows if not r["set"].startswith("native")
                 and float(r["gbps"]) > native)
    print(f"\nnative alone: {native:.3f} Gbit/s; " + (f"first beaten at batch {dev[0][0]} by {dev[0][1]}\n"
          if dev else "no set with an OpenCL device beats it\n"))
EOF
fi
echo "gpu-run: done, $failed step(s) failed; results in $out"
exit "$failed"
