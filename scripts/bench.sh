#!/usr/bin/env bash
# Builds everything, benchmarks included (build/bench/...). See docs/benchmarks.md for what to run.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install-deps.sh
cmake --preset default >/dev/null
cmake --build --preset default -j "$(nproc)"
# DPDK's l3fwd, the forwarding peer of bench/runtime/vs_testpmd.py, from the example source in dpdk-doc;
# valgrind for bench/runtime/callgrind_ipp.py (instructions per packet beside l3fwd).
for pkg in dpdk-doc valgrind; do
  if ! dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q "install ok installed"; then
    if [ "$(id -u)" -eq 0 ]; then apt-get install -y "$pkg"; else sudo apt-get install -y "$pkg"; fi
  fi
done
bash bench/runtime/build_l3fwd.sh build/bench/l3fwd >/dev/null
echo "benchmarks built under build/bench/; see docs/benchmarks.md"
