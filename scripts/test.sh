#!/usr/bin/env bash
# Installs what is missing, builds, and runs the whole test suite with ctest.
# Usage: scripts/test.sh [test|asan|tsan]   (the CMake preset; default: test = release, no benchmarks)
set -euo pipefail
cd "$(dirname "$0")/.."
preset=${1:-test}
bash scripts/install-deps.sh
cmake --preset "$preset" >/dev/null
cmake --build --preset "$preset" -j "$(nproc)"
ctest --preset "$preset"
