#!/usr/bin/env bash
# Builds everything, benchmarks included (build/bench/...). See docs/benchmarks.md for what to run.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install-deps.sh
cmake --preset default >/dev/null
cmake --build --preset default -j "$(nproc)"
echo "benchmarks built under build/bench/; see docs/benchmarks.md"
