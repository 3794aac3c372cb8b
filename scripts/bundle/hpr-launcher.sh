#!/usr/bin/env bash
# The `hpr` at the top of a bundle (scripts/bundle.sh writes it there): runs bin/hpr with the bundle's libraries,
# data and DPDK drivers, and an OpenCL vendors folder that also has NVIDIA's driver where the machine has it but no
# .icd file names it. Leaves HPR_STATE_DIR and every variable already set as it is. Lines it prints start with
# "hpr bundle:" and go to stderr; HPR_BUNDLE_QUIET=1 keeps the informational ones back.
set -u
here=$(dirname "$(readlink -f "${BASH_SOURCE[0]}")")
say() { [ "${HPR_BUNDLE_QUIET:-0}" = 1 ] || echo "hpr bundle: $*" >&2; }

# glibc is the machine's: it must be as new as the newest version any bundled file asks for.
need=$(sed 's/^GLIBC_//' "$here/share/hpr/glibc-needed" 2>/dev/null)
have=$(getconf GNU_LIBC_VERSION 2>/dev/null | awk '{print $2}')
if [ -n "$need" ] && [ -n "$have" ] && [ "$(printf '%s\n%s\n' "$need" "$have" | sort -V | head -1)" != "$need" ]; then
  echo "hpr bundle: this machine has glibc $have; the bundle needs $need or newer (built on $(sed -n 2p "$here/VERSION" | cut -d' ' -f4-)); build hpr here instead (README.md)" >&2
  exit 3
fi

# libstdc++ and libgcc_s: the machine's where they are new enough (an OpenCL driver may need a newer one than the
# bundle's), else the bundle's (lib/compat).
libs="$here/lib"
want=$(cat "$here/share/hpr/glibcxx-needed" 2>/dev/null)
sys=$(ldconfig -p 2>/dev/null | awk '$1 == "libstdc++.so.6" {print $NF; exit}')
if [ -z "$sys" ] || [ -z "$want" ] || ! grep -qa "$want" "$sys" 2>/dev/null; then
  libs="$libs:$here/lib/compat"
fi
export HPR_DATA_DIR="${HPR_DATA_DIR:-$here/share/hpr/data}"
# DPDK drivers: the machine's where it has the driver folder of the DPDK hpr was built with (the EAL loads that one
# itself; the bundle's would register the same drivers twice), else the bundle's.
pmd_path=$(cat "$here/share/hpr/dpdk-pmd-path" 2>/dev/null)
if [ -d "$here/lib/dpdk-pmds" ] && ! [ -n "$pmd_path" -a -d "$pmd_path" ]; then
  libs="$libs:$here/lib/dpdk-pmds"
  export HPR_DPDK_DRIVER_DIR="${HPR_DPDK_DRIVER_DIR:-$here/lib/dpdk-pmds}"
fi
export LD_LIBRARY_PATH="$libs${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"

# OpenCL: the ICD loader (ocl-icd) reads the .icd files of the folder OCL_ICD_VENDORS names instead of
# /etc/OpenCL/vendors. The folder gets a copy of those plus nvidia.icd where libnvidia-opencl.so.1 is installed but
# no .icd names it (a driver installed without its ICD file, or a container given the library only).
find_nvidia_opencl() {
  local p
  p=$(ldconfig -p 2>/dev/null | awk '$1 == "libnvidia-opencl.so.1" {print $NF; exit}')
  [ -n "$p" ] && { echo "$p"; return; }
  for p in /usr/lib/x86_64-linux-gnu /usr/lib/aarch64-linux-gnu /usr/lib64 /usr/lib /usr/local/nvidia/lib64 \
           /usr/local/cuda/lib64 /usr/local/cuda/targets/*/lib /usr/lib/wsl/lib; do
    [ -e "$p/libnvidia-opencl.so.1" ] && { echo "$p/libnvidia-opencl.so.1"; return; }
  done
}
if [ -z "${OCL_ICD_VENDORS:-}" ]; then
  vendors="${XDG_RUNTIME_DIR:-/tmp}/hpr-icd-$(id -u)"
  # A folder someone else made (or a link) could hand this process a driver of theirs: use a fresh one then.
  if [ -L "$vendors" ] || { [ -e "$vendors" ] && [ ! -O "$vendors" ]; }; then vendors=$(mktemp -d); fi
  if mkdir -p "$vendors" 2>/dev/null && chmod 700 "$vendors"; then
    wanted=()
    for f in /etc/OpenCL/vendors/*.icd; do
      [ -f "$f" ] || continue
      n=$(basename "$f")
      wanted+=("$n")
      cp "$f" "$vendors/.$n.$$" && mv -f "$vendors/.$n.$$" "$vendors/$n"
    done
    if ! grep -qs 'libnvidia-opencl' /etc/OpenCL/vendors/*.icd; then
      nv=$(find_nvidia_opencl)
      if [ -n "$nv" ]; then
        wanted+=(hpr-nvidia.icd)
        echo "$nv" > "$vendors/.hpr-nvidia.icd.$$" && mv -f "$vendors/.hpr-nvidia.icd.$$" "$vendors/hpr-nvidia.icd"
        say "OpenCL: added NVIDIA's $nv (no .icd file in /etc/OpenCL/vendors names it) through $vendors"
      fi
    fi
    for f in "$vendors"/*.icd; do  # drivers removed since the last run
      [ -f "$f" ] || continue
      n=$(basename "$f")
      [[ " ${wanted[*]} " == *" $n "* ]] || rm -f "$f"
    done
    [ ${#wanted[@]} -eq 0 ] && say "OpenCL: no driver (/etc/OpenCL/vendors has no .icd file, no libnvidia-opencl.so.1 found): native lanes only"
    export OCL_ICD_VENDORS="$vendors"
  else
    say "OpenCL: cannot make $vendors (XDG_RUNTIME_DIR or /tmp not writable); using /etc/OpenCL/vendors as it is"
  fi
fi

exec "$here/bin/hpr" "$@"
