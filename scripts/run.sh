#!/usr/bin/env bash
# Installs what is missing, builds, and runs the main job: `hpr run` on the bundled default traffic.
# Extra arguments go to `hpr run` (see `build/cli/hpr run --help`); without any, it runs for 10 s on unlimited
# generated traffic, long enough for learning mode to settle (a second run starts from what the first kept).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install-deps.sh
# Real data (data/README.md): $HPR_DATA_DIR, data/ filled by scripts/get-data.sh, or ../shared/data; with none of
# them, get-data fills data/ from Debian packages.
bash scripts/get-data.sh --if-missing
cmake --preset default >/dev/null
cmake --build --preset default -j "$(nproc)" --target hpr
if [[ $# -eq 0 ]]; then set -- --packets 0 --duration 10; fi
./build/cli/hpr run "$@"
