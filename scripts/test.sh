#!/usr/bin/env bash
# Installs what is missing, builds, and runs the whole test suite with ctest.
# Usage: scripts/test.sh [test|asan|tsan]   (the CMake preset; default: test = release, no benchmarks)
set -euo pipefail
cd "$(dirname "$0")/.."
preset=${1:-test}
bash scripts/install-deps.sh
# Real data (data/README.md): $HPR_DATA_DIR, data/ filled by scripts/get-data.sh, or ../shared/data; with none of
# them, get-data fills data/ from Debian packages (a few seconds, about 200 MB downloaded).
marker=routes/ipasn_20140513.dat.gz
if [[ -n ${HPR_DATA_DIR:-} ]]; then
  [[ -f $HPR_DATA_DIR/$marker ]] ||
    echo "$(basename "$0"): warning: HPR_DATA_DIR=$HPR_DATA_DIR has no $marker (fill it: bash scripts/get-data.sh \"\$HPR_DATA_DIR\")" >&2
elif [[ ! -f data/$marker && ! -f ../shared/data/$marker ]]; then
  echo "$(basename "$0"): no data in data/ nor ../shared/data: fetching it with scripts/get-data.sh" >&2
  bash scripts/get-data.sh
fi
# ctest hands each test the data directory chosen at configure time: $HPR_DATA_DIR when set, else the default search.
cmake --preset "$preset" -DHPR_TEST_DATA_DIR="${HPR_DATA_DIR:-}" >/dev/null
cmake --build --preset "$preset" -j "$(nproc)"
ctest --preset "$preset"
