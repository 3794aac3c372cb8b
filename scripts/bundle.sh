#!/usr/bin/env bash
# Builds hpr and writes a relocatable bundle: hpr-<version>-<arch>[-nodpdk].tar.gz (issue 14).
# Usage: scripts/bundle.sh [--no-dpdk] [--out DIR]     (default DIR: out/)
#   --no-dpdk  the minimal build (CMake preset `minimal`, build-min/: no DPDK, Hyperscan or prometheus-cpp), whose
#              ports are the pcap files and the generator, for machines where DPDK cannot run.
# The bundle holds bin/hpr (debug info stripped), lib/ (every shared library it needs but glibc's own; libstdc++ and
# libgcc_s in lib/compat, used only where the machine's are older), lib/dpdk-pmds/ (the DPDK drivers for virtual
# devices), share/hpr/data/ (a sample of the real data), the `hpr` launcher (scripts/bundle/hpr-launcher.sh), the
# GPU run (bench/gpu/run.sh as bench/gpu-run.sh) and README.bundle.md. Not PoCL, not LLVM, no OpenCL driver: those
# are the machine's.
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
variant=full
out="$root/out"
while [ $# -gt 0 ]; do
  case "$1" in
    --no-dpdk) variant=nodpdk ;;
    --out) out=${2:?--out wants a directory}; shift ;;
    -h|--help) sed -n 2,10p "$0"; exit 0 ;;
    *) echo "bundle.sh: unknown argument '$1' (--no-dpdk, --out DIR)" >&2; exit 2 ;;
  esac
  shift
done
mkdir -p "$out"
out=$(cd "$out" && pwd)
data=${HPR_DATA_DIR:-$root/../shared/data}
[ -f "$data/routes/ipasn_20140513.dat.gz" ] || { echo "bundle.sh: no routes/ipasn_20140513.dat.gz in $data (HPR_DATA_DIR)" >&2; exit 3; }

# 1. Build the binary only.
export CMAKE_CXX_COMPILER_LAUNCHER=${CMAKE_CXX_COMPILER_LAUNCHER:-ccache}
command -v ccache >/dev/null || unset CMAKE_CXX_COMPILER_LAUNCHER
if [ "$variant" = nodpdk ]; then preset=minimal; bdir="$root/build-min"; else preset=default; bdir="$root/build"; fi
echo "bundle.sh: building hpr (preset $preset, $bdir)"
(cd "$root" && cmake --preset "$preset" >/dev/null && cmake --build --preset "$preset" --target hpr -j"${JOBS:-2}" >/dev/null)
hpr_bin="$bdir/cli/hpr"
# A build dir configured by hand may have a part off that this variant must have (a preset sets only its own keys).
features=$("$hpr_bin" --version)
if [ "$variant" = full ] && [[ "$features" != *"DPDK on"* ]]; then
  echo "bundle.sh: $hpr_bin has no DPDK ($features): reconfigure $bdir with -DHPR_WITH_DPDK=ON (libdpdk-dev)" >&2
  exit 3
fi

version=$(sed -n 's/^project(hpr VERSION \([0-9.]*\).*/\1/p' "$root/CMakeLists.txt")
arch=$(uname -m)
name="hpr-$version-$arch"
[ "$variant" = nodpdk ] && name+="-nodpdk"
stage=$(mktemp -d)
trap 'rm -rf "$stage"' EXIT
b="$stage/$name"
mkdir -p "$b/bin" "$b/lib/compat" "$b/share/hpr/licenses" "$b/bench"

# 2. The binary, without its debug info (74 MB with it).
objcopy --strip-debug "$hpr_bin" "$b/bin/hpr"

# 3. Shared libraries: ldd's closure of the binary and the DPDK drivers, less glibc's own.
glibc_own='^(ld-linux.*|libc|libm|libmvec|libpthread|libdl|librt|libresolv|libutil|libanl|libnsl|libBrokenLocale|libnss_.*|libthread_db|libc_malloc_debug|libmemusage|libpcprofile)\.so'
deps() { ldd "$@" 2>/dev/null | awk '$2 == "=>" && $3 ~ /^\// {print $3}' | sort -u; }
pmds=()
if [ "$variant" = full ]; then
  pmd_dir=$(pkg-config --variable=pmd_dir libdpdk 2>/dev/null || true)
  [ -d "$pmd_dir" ] || pmd_dir=$(ls -d /usr/lib/"$(gcc -print-multiarch 2>/dev/null || echo x86_64-linux-gnu)"/dpdk/pmds-* | head -1)
  mkdir -p "$b/lib/dpdk-pmds"
  echo "$pmd_dir" > "$b/share/hpr/dpdk-pmd-path"
  # The vdev bus and ring mempools (every port needs them) and the virtual ports the docs use.
  for d in bus_vdev mempool_ring net_pcap net_null net_ring net_af_packet net_tap; do
    f=$(readlink -f "$pmd_dir/librte_$d.so" 2>/dev/null || true)
    [ -f "$f" ] || { echo "bundle.sh: DPDK driver librte_$d.so not in $pmd_dir" >&2; exit 3; }
    soname=$(objdump -p "$f" | awk '$1 == "SONAME" {print $2}')
    # The EAL loads every *.so of the folder given as -d: links to the drivers' files under their sonames, so that
    # a driver another one needs (bus_vdev) is one object however it is reached, not two that register twice.
    ln -s "$soname" "$b/lib/dpdk-pmds/librte_$d.so"
    pmds+=("$f")
  done
fi
for lib in $(deps "$hpr_bin" "${pmds[@]}"); do
  base=$(basename "$lib")
  [[ "$base" =~ $glibc_own ]] && continue
  case "$base" in
    libstdc++.so.*|libgcc_s.so.*) dest="$b/lib/compat" ;;
    *) dest="$b/lib" ;;
  esac
  # Drivers (what DPDK keeps in its driver folder) go to lib/dpdk-pmds, which the launcher uses only where the
  # machine has no DPDK driver folder of its own: a driver loaded from two files registers twice and the EAL panics.
  [ "$variant" = full ] && [ -e "$pmd_dir/${base%%.so*}.so" ] && dest="$b/lib/dpdk-pmds"
  cp -L "$lib" "$dest/$base"
done
for f in "${pmds[@]}"; do
  soname=$(objdump -p "$f" | awk '$1 == "SONAME" {print $2}')
  [ -f "$b/lib/dpdk-pmds/$soname" ] || cp -L "$f" "$b/lib/dpdk-pmds/$soname"
done

# 4. What the machine must have: glibc at least the newest GLIBC_ version any bundled file asks for; the newest
#    GLIBCXX_ decides whether the machine's libstdc++ will do or lib/compat's is used (the launcher checks both).
newest_sym() { local tag=$1; shift; objdump -T "$@" 2>/dev/null | grep -o "${tag}_[0-9][0-9.]*" | sort -uV | tail -1; }
mapfile -t all_elf < <(find "$b/bin" "$b/lib" -type f)  # links (dpdk-pmds/) are not followed: each file once
newest_sym GLIBC "${all_elf[@]}" > "$b/share/hpr/glibc-needed"
mapfile -t not_compat < <(find "$b/bin" "$b/lib" -path "$b/lib/compat" -prune -o -type f -print)
newest_sym GLIBCXX "${not_compat[@]}" > "$b/share/hpr/glibcxx-needed"

# 5. Licences of the bundled libraries (Debian's copyright files).
for f in $(find "$b/lib" -type f); do
  so=$(basename "$f")
  pkg=$(dpkg -S "*/$so" 2>/dev/null | head -1 | cut -d: -f1 || true)
  [ -n "$pkg" ] && [ -f "/usr/share/doc/$pkg/copyright" ] && cp "/usr/share/doc/$pkg/copyright" "$b/share/hpr/licenses/$pkg.copyright"
done
cp "$root/scripts/bundle/hpr-launcher.sh" "$b/hpr"
chmod 755 "$b/hpr"
cp "$root/bench/gpu/run.sh" "$b/bench/gpu-run.sh"
cp "$root/bench/gpu/summary.py" "$b/bench/gpu-summary.py"
chmod 755 "$b/bench/gpu-run.sh" "$b/bench/gpu-summary.py"
cp "$root/scripts/bundle/README.bundle.md" "$b/README.bundle.md"
mkdir -p "$b/share/hpr/config"
cp "$root/config/hpr.toml" "$b/share/hpr/config/"

# 6. Data: the BGP table, the ET rules, the vectors, and captures of a few MB (every one under 40 KB, many of them
#    malformed, and a few larger ones the tests and docs use).
d="$b/share/hpr/data"
mkdir -p "$d/routes" "$d/rules" "$d/pcap/ndpi" "$d/vectors"
cp "$data/README.md" "$d/"
cp "$data/routes/ipasn_20140513.dat.gz" "$d/routes/"
cp -r "$data/rules/et-open-2017" "$d/rules/"
cp -r "$data/vectors/." "$d/vectors/"
find "$data/pcap/ndpi" -maxdepth 1 -type f -size -40k -exec cp {} "$d/pcap/ndpi/" \;
grep -v '^#' "$root/packaging/sample-captures.txt" | while read -r c; do
  [ -n "$c" ] && cp "$data/pcap/ndpi/$c" "$d/pcap/ndpi/"
done
chmod -R u+w "$d"

{
  echo "hpr $version ($variant) $(git -C "$root" describe --always --dirty 2>/dev/null || echo unknown)"
  echo "built $(date -u +%Y-%m-%dT%H:%M:%SZ) on $(. /etc/os-release && echo "$PRETTY_NAME") $arch"
  "$b/bin/hpr" --version 2>/dev/null | sed 's/^/features /' || true
  echo "needs glibc >= $(sed 's/GLIBC_//' "$b/share/hpr/glibc-needed")"
} > "$b/VERSION"

tarball="$out/$name.tar.gz"
tar -C "$stage" -czf "$tarball" "$name"
echo "bundle.sh: wrote $tarball ($(du -h "$tarball" | cut -f1); unpacked $(du -sh "$b" | cut -f1): bin $(du -sh "$b/bin" | cut -f1), lib $(du -sh "$b/lib" | cut -f1), data $(du -sh "$d" | cut -f1))"
