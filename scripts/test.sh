#!/usr/bin/env bash
# Installs what is missing, builds, and runs the whole test suite with ctest.
# Usage: scripts/test.sh [test|asan|tsan]   (the CMake preset; default: test = release, no benchmarks)
set -euo pipefail
cd "$(dirname "$0")/.."
preset=${1:-test}
bash scripts/install-deps.sh
# Real data (data/README.md): $HPR_DATA_DIR, data/ filled by scripts/get-data.sh, or ../shared/data; with none of
# them, get-data fills data/ from Debian packages.
bash scripts/get-data.sh --if-missing
# The sanitizer builds run as the hardening CI runs them (scripts/ci-hardening.sh): with its environment (PoCL as the
# only OpenCL platform, the suppressions of tests/sanitizers.supp) and its choice of tests (TSan: the threaded ones).
case $preset in
  asan) HPR_HARDEN_SKIP="tsan fuzz" exec bash scripts/ci-hardening.sh ;;
  tsan) HPR_HARDEN_SKIP="asan fuzz" exec bash scripts/ci-hardening.sh ;;
esac
# ctest hands each test the data directory chosen at configure time: $HPR_DATA_DIR when set, else the default search.
cmake --preset "$preset" -DHPR_TEST_DATA_DIR="${HPR_DATA_DIR:-}" >/dev/null
cmake --build --preset "$preset" -j "$(nproc)"
ctest --preset "$preset"
