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
# default all), GPU_MIN_BATCH / GPU_MAX_BATCH (default 64 / 65536), GPU_SELFTEST_BATCHES (default "256 1024 4096 16384 65536"),
# GPU_SERIAL_BATCHES (selftest with one batch in flight; default "1024 8192 65536"), GPU_REPORT_ARGS (more hpr report
# options, e.g. "--steps 0.3,0.8 --step-s 2"). About 20 minutes with the defaults.
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
min_batch=${GPU_MIN_BATCH:-64}
# The python hpr report runs (cli/report_cmd.cpp): HPR_PYTHON, else the first of Debian's and the one on PATH that
# has matplotlib (a CUDA image's /usr/bin/python3 often lacks it; its venv's has it), else Debian's.
if [ -z "${HPR_PYTHON:-}" ]; then
  for c in /usr/bin/python3 "$(command -v python3)"; do
    [ -x "$c" ] && "$c" -c 'import matplotlib' 2>/dev/null && { export HPR_PYTHON=$c; break; }
  done
fi
py=${HPR_PYTHON:-$( [ -x /usr/bin/python3 ] && echo /usr/bin/python3 || echo python3)}
report_args=${GPU_REPORT_ARGS:-}
batches=${GPU_SELFTEST_BATCHES:-256 1024 4096 16384 65536}
serial_batches=${GPU_SERIAL_BATCHES:-1024 8192 65536}
# aes needs a key: FIPS-197's test key (the one hpr selftest uses), never a user's, unless one is given.
export HPR_MASTER_KEY=${HPR_MASTER_KEY:-2b7e151628aed2a6abf7158809cf4f3c}
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
  # same sample of real captures (docs/selftest.md), repeated up to 65,536 packets (--fill: the bundle's captures
  # hold 14,857), so that a pass has several batches even at 16,384.
  for b in $batches; do
    step "selftest batch $b" "$out/selftest-batch-$b.json" "$hpr" selftest --json --batch "$b" --packets 65536 \
      --per-file 4096 --fill --min-ms 300
  done
  # The same with one batch in flight: no batch's copies overlap another's kernel. The rate with two against it
  # is what the overlap buys (summary.md).
  for b in $serial_batches; do
    step "selftest batch $b, 1 in flight" "$out/selftest-serial-$b.json" "$hpr" selftest --json --batch "$b" \
      --packets 65536 --per-file 4096 --fill --min-ms 300 --in-flight 1
  done
else
  echo "gpu-run: selftest: this hpr has no selftest subcommand; skipped"
fi
tables=()
for app in $apps; do
  if step "profile $app" "" "$hpr" profile --app "$app" --devices "$devices" --min-batch "$min_batch" --max-batch "$max_batch" \
      --budget-s "$budget" -q -o "$out/profile-$app.json"; then
    tables+=(--table "$app=$out/profile-$app.json")
  elif [ -s "$out/profile-$app.json" ]; then
    tables+=(--table "$app=$out/profile-$app.json")  # an interrupted profile keeps its finished blocks
  fi
done
if "$py" -c 'import matplotlib' 2>/dev/null; then
  step "report" "" "$hpr" report --app "$(echo $apps | tr ' ' ,)" --devices "$devices" --max-batch "$max_batch" \
    --budget-s "$report_s" -q -o "$out/report" $report_args "${tables[@]}"
else
  echo "gpu-run: report: $py has no matplotlib (apt-get install python3-matplotlib, or HPR_PYTHON); no plots, skipped"
fi

# ---- 3. The figures asked for, from the selftest runs and the report's points (bench/gpu/summary.py: the one beside
#         this script, bench/gpu-summary.py in a bundle, so that script and summary are of one version)
summary=$(dirname "$self")/summary.py
[ -f "$summary" ] || summary=$(dirname "$self")/gpu-summary.py
if ls "$out"/selftest-batch-*.json >/dev/null 2>&1 || [ -d "$out/report" ]; then
  step "summary" "$out/summary.md" "$py" "$summary" "$out" $apps
fi
echo "gpu-run: done, $failed step(s) failed; results in $out"
exit "$failed"
