#!/usr/bin/env bash
# Tests a bundle (scripts/bundle.sh) in a bare Debian chroot with none of the development packages (issue 14):
#   scripts/bundle-test.sh TARBALL [CHROOT]          (as root; CHROOT default /srv/bundle-chroot)
# Makes CHROOT with `debootstrap --variant=minbase bookworm` when it has no Debian yet (a few minutes; needs the
# Debian mirror), else reuses it after taking out what an earlier run installed (pocl-opencl-icd). Mounts /proc,
# /sys and /dev into it (unmounted on exit), unpacks the bundle under /opt and runs from it: first with nothing
# installed (no OpenCL driver: hpr must say so and run native lanes only), then after
# `apt-get install pocl-opencl-icd` (a runtime package), so that OpenCL devices appear. Prints PASS/FAIL/SKIP per
# check; the exit status is the number of failures.
set -uo pipefail

tarball=$(readlink -f "${1:?usage: bundle-test.sh TARBALL [CHROOT]}")
chroot_dir=${2:-/srv/bundle-chroot}
[ -f "$tarball" ] || { echo "bundle-test: no tarball $tarball" >&2; exit 2; }
name=$(basename "$tarball" .tar.gz)
source "$(dirname "${BASH_SOURCE[0]}")/chroot-lib.sh"
chroot_setup "$chroot_dir" bundle-test
check_dir=/opt/$name
check_excerpt() {
  sed -n '/^hpr run:/p; /^Summary/,/^  books/p; /hpr bundle:/p; /No OpenCL device/p; /^[0-9] /p' "$1" | head -14 |
    sed 's/^/        | /'
}

# Bare: take out what an earlier run installed, then show that nothing for development is there.
if in_chroot dpkg-query -W -f='${Status}' pocl-opencl-icd 2>/dev/null | grep -q "install ok installed"; then
  echo "bundle-test: purging pocl-opencl-icd and ocl-icd-libopencl1 from an earlier run"
  in_chroot env DEBIAN_FRONTEND=noninteractive apt-get purge -y -qq --autoremove pocl-opencl-icd libpocl2 \
    ocl-icd-libopencl1 >/dev/null 2>&1
fi
ndev=$(in_chroot dpkg-query -W -f='${Package}\n' | grep -c -- '-dev$')
echo "bundle-test: $chroot_dir: $(in_chroot dpkg-query -W -f='${Package}\n' | wc -l) packages, $ndev of them -dev;" \
  "$(ls "$chroot_dir"/etc/OpenCL/vendors/*.icd 2>/dev/null | wc -l) OpenCL ICD files"
rm -rf "$chroot_dir/opt/$name"
mkdir -p "$chroot_dir/opt"
tar -C "$chroot_dir/opt" -xzf "$tarball" || { echo "bundle-test: cannot unpack $tarball" >&2; exit 3; }
echo "bundle-test: unpacked $(du -sh "$chroot_dir/opt/$name" | cut -f1) into /opt/$name"

cap=share/hpr/data/pcap/ndpi/webex.pcap
nodpdk=0
[[ "$name" == *-nodpdk ]] && nodpdk=1
run_checks() {  # $1: "bare" or "pocl"
  local stage=$1
  check "[$stage] hpr --version" 0 "DPDK (on|off)" "./hpr --version"
  if [ "$stage" = bare ]; then
    check "[$stage] hpr devices: says there is no OpenCL device" 0 "No OpenCL device found" "./hpr devices"
  else
    check "[$stage] hpr devices: lists PoCL's devices" 0 "Portable Computing Language" "./hpr devices"
  fi
  check "[$stage] hpr devices --json" 0 "^\[" "./hpr devices --json"
  check "[$stage] main job: hpr run --packets 0 --duration 5 (generator, ipv4)" 0 "books .*balanced" \
    "./hpr run --packets 0 --duration 5 -q"
  [ "$stage" = pocl ] && check "[$stage] hpr run: an OpenCL lane beside the native one (md5)" 0 \
    "lanes: \[[^]]+ (cpu|igpu|dgpu)\]" "./hpr run --app md5 --packets 200000 -q"
  check "[$stage] hpr run --in pcap: (dpi, bundled capture)" 0 "books .*balanced" \
    "./hpr run --app dpi --in pcap:$cap --out null -q"
  check "[$stage] hpr run --in pcap: --out pcap: (aes)" 0 "books .*balanced" \
    "./hpr run --app aes --master-key 000102030405060708090a0b0c0d0e0f --in pcap:$cap --out pcap:/tmp/hpr-bundle-out.pcap -q"
  if [ "$nodpdk" = 1 ]; then
    check "[$stage] --in dpdk: refused, naming HPR_WITH_DPDK" 3 "built without DPDK.*HPR_WITH_DPDK" \
      "./hpr run --in dpdk:net_pcap0 --vdev net_pcap0,rx_pcap=$cap --devices none -q"
    check "[$stage] --prometheus refused, naming HPR_WITH_PROMETHEUS" 3 "HPR_WITH_PROMETHEUS" \
      "./hpr run --prometheus 9464 --devices none --packets 100 -q"
  else
    check "[$stage] hpr run --in dpdk:net_pcap0 (bundled DPDK drivers)" 0 "books .*balanced" \
      "./hpr run --in dpdk:net_pcap0 --out dpdk:net_null0 --vdev net_pcap0,rx_pcap=$cap --vdev net_null0 --duration 3 -q"
  fi
  check "[$stage] hpr selftest (every device vs the native lane on the bundled captures)" 0 "selftest passed" \
    "./hpr selftest"
}

run_checks bare
echo "bundle-test: apt-get install pocl-opencl-icd (in the chroot)"
if in_chroot bash -c 'apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends pocl-opencl-icd' >/tmp/bundle-test-apt.log 2>&1; then
  echo "bundle-test: installed; $(in_chroot dpkg-query -W -f='${Package}\n' | grep -c -- '-dev$') -dev packages now"
  run_checks pocl
  # A driver installed without its .icd file: PoCL's library under NVIDIA's name, pocl.icd set aside. The launcher
  # must find libnvidia-opencl.so.1, say so, and the device must appear through its vendors folder.
  lib=$chroot_dir/usr/lib/x86_64-linux-gnu
  if [ -f "$lib/libpocl.so.2" ] && [ ! -e "$lib/libnvidia-opencl.so.1" ]; then
    cp "$lib/libpocl.so.2" "$lib/libnvidia-opencl.so.1" && mv "$chroot_dir/etc/OpenCL/vendors/pocl.icd" "$chroot_dir/root/pocl.icd.aside"
    in_chroot ldconfig
    check "[pocl] libnvidia-opencl.so.1 without an .icd file: added by the launcher" 0 \
      "added NVIDIA's /usr/lib/x86_64-linux-gnu/libnvidia-opencl.so.1" "./hpr devices"
    check "[pocl] ... and its device is listed" 0 "Portable Computing Language" "./hpr devices"
    rm -f "$lib/libnvidia-opencl.so.1"
    mv "$chroot_dir/root/pocl.icd.aside" "$chroot_dir/etc/OpenCL/vendors/pocl.icd"
    in_chroot ldconfig
  fi
else
  echo "FAIL  apt-get install pocl-opencl-icd (/tmp/bundle-test-apt.log)"
  fails=$((fails + 1))
fi
echo "bundle-test: $name: $passes passed, $fails failed"
exit "$fails"
