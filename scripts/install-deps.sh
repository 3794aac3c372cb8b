#!/usr/bin/env bash
# Installs the Debian 12 packages hpr needs to build, test and run.
# Idempotent: when everything is present it only checks (a few seconds).
# Usage: scripts/install-deps.sh [--run-only]
set -euo pipefail

BUILD_PKGS=(
  build-essential cmake ninja-build pkg-config git
  dpdk dpdk-dev libdpdk-dev libnuma-dev
  ocl-icd-libopencl1 ocl-icd-opencl-dev opencl-c-headers opencl-clhpp-headers clinfo
  pocl-opencl-icd
  libpcap-dev libssl-dev libhyperscan-dev zlib1g-dev
  catch2 libcli11-dev nlohmann-json3-dev libfmt-dev libspdlog-dev
  prometheus-cpp-dev libbenchmark-dev libtomlplusplus-dev
  python3 python3-matplotlib
  tshark tcpdump tcpreplay iproute2
  clang libclang-rt-14-dev  # libFuzzer targets and the hardening CI (scripts/fuzz.sh)
)
# Intel's Compute Runtime exists for amd64 only; it drives Intel integrated GPUs.
# Intel's multi-buffer crypto library (the AES-128-CBC peer of crypto_bench; optional, HPR_WITH_IPSEC_MB) is amd64
# only too.
if [ "$(dpkg --print-architecture)" = amd64 ]; then BUILD_PKGS+=(intel-opencl-icd libipsec-mb-dev); fi

missing=()
for p in "${BUILD_PKGS[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -eq 0 ]; then
  echo "install-deps: all ${#BUILD_PKGS[@]} packages present"
  exit 0
fi
as_root=()
if [ "$(id -u)" -ne 0 ]; then
  if command -v sudo >/dev/null 2>&1; then
    as_root=(sudo)  # a user with sudo: ask for it only to install
  else
    echo "install-deps: missing packages: ${missing[*]}" >&2
    echo "install-deps: run as root (there is no sudo here) to install them" >&2
    exit 1
  fi
fi
echo "install-deps: installing ${#missing[@]} packages: ${missing[*]}"
# wireshark-common asks whether non-root users may capture; answer no.
echo "wireshark-common wireshark-common/install-setuid boolean false" | "${as_root[@]}" debconf-set-selections
"${as_root[@]}" apt-get update -qq
"${as_root[@]}" env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
echo "install-deps: done"
