#!/usr/bin/env bash
# Installs what is missing, builds, and runs the main job: `hpr run` on the bundled default traffic.
# Extra arguments go to `hpr run` (see `build/cli/hpr run --help`).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install-deps.sh
cmake --preset default >/dev/null
cmake --build --preset default -j "$(nproc)" --target hpr
./build/cli/hpr run "$@"
