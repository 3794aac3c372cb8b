#!/usr/bin/env bash
# Fills a data directory (default: data/ in the checkout) with the real data the tests and benchmarks use, taken
# from Debian bookworm packages: the BGP table from python3-pyasn, the NIST/RFC vectors from
# python3-cryptography-vectors, the captures (and their licence) from the ndpi source package. The ET Open rules ship
# in the repository (data/rules) and are copied when DIR is elsewhere. Every file is checked against
# scripts/data.sha256. Needs no root: apt runs on a private configuration in a temporary folder.
# Usage: scripts/get-data.sh [DIR]
#        scripts/get-data.sh --if-missing   (scripts/run.sh, test.sh: fill data/ only when no data directory is found
#                                            — $HPR_DATA_DIR, data/, ../shared/data — and warn when $HPR_DATA_DIR
#                                            lacks the data)
#   HPR_DEBIAN_MIRROR   Debian mirror (default http://deb.debian.org/debian); apt's own proxy settings apply.
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
if [[ ${1:-} == --if-missing ]]; then
  marker=routes/ipasn_20140513.dat.gz
  if [[ -n ${HPR_DATA_DIR:-} ]]; then
    [[ -f $HPR_DATA_DIR/$marker ]] ||
      echo "get-data: warning: HPR_DATA_DIR=$HPR_DATA_DIR has no $marker (fill it: bash scripts/get-data.sh \"\$HPR_DATA_DIR\")" >&2
    exit 0
  fi
  [[ -f $root/data/$marker || -f $root/../shared/data/$marker ]] && exit 0
  echo "get-data: no data in data/ nor ../shared/data: fetching it (a few seconds, about 200 MB downloaded)" >&2
  set --
fi
manifest=$root/scripts/data.sha256
dest=${1:-$root/data}
mirror=${HPR_DEBIAN_MIRROR:-http://deb.debian.org/debian}
suite=bookworm
keyring=/usr/share/keyrings/debian-archive-keyring.gpg
apt_helper=/usr/lib/apt/apt-helper

say() { echo "get-data: $*" >&2; }
die() { say "error: $*"; exit 1; }

if [[ $# -gt 1 || ${1:-} == -* ]]; then
  echo "usage: scripts/get-data.sh [DIR]   (default: $root/data)" >&2
  exit 2
fi
[[ -r $manifest ]] || die "cannot read $manifest (the list of data files and their SHA-256)"

# The units installed as wholes; routes/ipasn_20140513.dat.gz goes last: data_dir() takes a folder holding it as
# complete.
units=(rules/et-open-2017 vectors/aes-cbc vectors/md5 pcap/ndpi routes/ipasn_20140513.dat.gz)

# Manifest lines of one unit (a folder or a file), "HASH  PATH".
unit_lines() { awk -v u="$1" '$2 == u || index($2, u "/") == 1' "$manifest"; }

# Whether DIR/unit holds every file of the unit with the right SHA-256.
unit_complete() {
  local dir=$1 unit=$2
  [[ -e $dir/$unit ]] || return 1
  (cd "$dir" && unit_lines "$unit" | sha256sum --check --quiet --status) 2>/dev/null
}

created=
if [[ ! -d $dest ]]; then created=$dest; fi
mkdir -p "$dest" || die "cannot create the data directory $dest"
dest=$(cd "$dest" && pwd)

missing=()
for u in "${units[@]}"; do unit_complete "$dest" "$u" || missing+=("$u"); done
if [[ ${#missing[@]} -eq 0 ]]; then
  say "$dest is complete ($(wc -l <"$manifest") files match scripts/data.sha256); nothing to do"
  exit 0
fi
say "filling $dest: ${missing[*]}"
# The rules come from the checkout: there is nothing to download for them.
if [[ $dest == "$root/data" && " ${missing[*]} " == *" rules/et-open-2017 "* ]]; then
  die "data/rules/et-open-2017 in the checkout is missing or changed (run: git checkout -- data/rules)"
fi

# Tools: every Debian has them, but name the package when one is missing.
need() { command -v "$1" >/dev/null 2>&1 || die "$1 not found: install the Debian package $2 (apt-get install $2)"; }
need apt-get apt
need dpkg-deb dpkg
need tar tar
need gzip gzip
need sha256sum coreutils
need awk mawk
[[ -x $apt_helper ]] || die "$apt_helper not found: install the Debian package apt"
[[ -r $keyring ]] || die "$keyring not found: install the Debian package debian-archive-keyring"

# Leftovers of runs that were killed (their process is gone).
for old in "$dest"/.get-data.*; do
  [[ -d $old ]] || continue
  pid=${old##*/.get-data.}; pid=${pid%%.*}
  if [[ $pid =~ ^[0-9]+$ ]] && ! kill -0 "$pid" 2>/dev/null; then rm -rf "$old"; fi
done

# Everything is written under a staging folder inside DIR (same file system, so the final moves are renames) and
# removed on any exit.
stage=$(mktemp -d "$dest/.get-data.$$.XXXXXX") || die "cannot write in $dest"
# A DIR this run created is removed again when the run fails before filling it.
trap 'rm -rf "$stage"; if [[ -n $created ]]; then rmdir "$created" 2>/dev/null || true; fi' EXIT
trap 'exit 130' INT TERM HUP
dl=$stage/download
mkdir -p "$dl/lists/partial" "$dl/cache/archives/partial" "$dl/parts" "$dl/src" "$stage/new"
log=$dl/apt.log

wants() { local u; for u in "${missing[@]}"; do [[ $u == "$1" ]] && return 0; done; return 1; }

# apt on a private configuration: its own sources list (deb and deb-src of bookworm main, checked with the Debian
# archive key), lists and cache; the system's sources, lists and cache are neither read nor changed (its apt.conf
# settings, such as a proxy, apply).
cat >"$dl/sources.list" <<EOF
deb [signed-by=$keyring] $mirror $suite main
deb-src [signed-by=$keyring] $mirror $suite main
EOF
# The system's hooks (docker-clean, appstream, packagekit: APT::Update::Post-Invoke...) are for its own lists and
# cache, and fail as a user: cleared for these calls.
printf '#clear %s;\n' APT::Update::Pre-Invoke APT::Update::Post-Invoke APT::Update::Post-Invoke-Success \
  DPkg::Pre-Invoke DPkg::Post-Invoke >"$dl/apt.conf"
apt_opts=(-c "$dl/apt.conf" -o "Dir::Etc::SourceList=$dl/sources.list" -o "Dir::Etc::SourceParts=$dl/parts"
          -o "Dir::Etc::Preferences=$dl/parts/none" -o "Dir::Etc::PreferencesParts=$dl/parts"
          -o "Dir::State::Lists=$dl/lists" -o "Dir::Cache=$dl/cache" -o "Debug::NoLocking=1"
          -o "Acquire::Languages=none" -o "APT::Get::Show-Versions=0")
if [[ $(id -u) -eq 0 ]]; then apt_opts+=(-o "APT::Sandbox::User=root"); fi  # _apt cannot write in $dest
apt_run() {  # what, command...: runs apt, its output to the log, shown on failure
  local what=$1; shift
  if ! "$@" >>"$log" 2>&1; then
    tail -n 15 "$log" >&2
    die "$what failed (the apt output is above)"
  fi
}

t0=$SECONDS
say "reading the $suite package and source index from $mirror"
apt_run "apt-get update on the private configuration ($mirror $suite main, deb and deb-src)" \
  apt-get "${apt_opts[@]}" update

debs=()
wants routes/ipasn_20140513.dat.gz && debs+=(python3-pyasn)
{ wants vectors/aes-cbc || wants vectors/md5; } && debs+=(python3-cryptography-vectors)
for pkg in "${debs[@]}"; do
  say "downloading the package $pkg"
  mkdir -p "$dl/deb/$pkg"
  (cd "$dl/deb/$pkg" && apt_run "apt-get download $pkg" apt-get "${apt_opts[@]}" download "$pkg")
  deb=$(ls "$dl/deb/$pkg"/*.deb 2>/dev/null | head -n 1) || true
  [[ -n $deb ]] || die "apt-get download $pkg left no .deb in $dl/deb/$pkg"
  mkdir -p "$dl/x/$pkg"
  dpkg-deb -x "$deb" "$dl/x/$pkg" || die "dpkg-deb -x ${deb##*/} failed (package $pkg)"
done

# Copies the files of one unit from a folder, file by file, naming the files that are missing.
take() {  # unit source-folder
  local unit=$1 from=$2 f name src lack=()
  while read -r _ f; do
    name=${f#"$unit"}; name=${name#/}; [[ -n $name ]] || name=${unit##*/}
    src=$from/$name
    if [[ -f $src ]]; then
      mkdir -p "$(dirname "$stage/new/$f")"
      cp "$src" "$stage/new/$f" || die "cannot copy $src to $stage/new/$f"
    else
      lack+=("${src#"$dl/"}")
    fi
  done < <(unit_lines "$unit")
  [[ ${#lack[@]} -eq 0 ]] || die "$unit: the source lacks ${#lack[@]} file(s): ${lack[*]}"
}

if wants routes/ipasn_20140513.dat.gz; then
  take routes/ipasn_20140513.dat.gz "$dl/x/python3-pyasn/usr/lib/python3/dist-packages/data"
fi
cv=$dl/x/python3-cryptography-vectors/usr/lib/python3/dist-packages/cryptography_vectors
wants vectors/aes-cbc && take vectors/aes-cbc "$cv/ciphers/AES/CBC"
wants vectors/md5 && take vectors/md5 "$cv/hashes/MD5"

if wants pcap/ndpi; then
  # Only the upstream tarball is fetched (not the Debian diff), checked against the SHA-256 of the signed Sources
  # index; `apt-get --print-uris source` names it without downloading anything.
  say "looking up the ndpi source package"
  (cd "$dl/src" && apt_run "apt-get --print-uris source ndpi" apt-get "${apt_opts[@]}" --print-uris source ndpi)
  line=$(grep -E "^'[^']*/ndpi_[^']*\.orig\.tar\.[a-z0-9]+' " "$log" | tail -n 1) || true
  [[ -n $line ]] || die "no orig tarball for the source package ndpi in $mirror $suite (see apt-get --print-uris source ndpi)"
  read -r uri file size hash <<<"$line"
  uri=${uri//\'/}
  [[ $hash == SHA256:* ]] || die "the source package ndpi: no SHA256 for $file in the Sources index (got '$hash')"
  say "downloading $file ($((size / 1048576)) MB) from the source package ndpi"
  apt_run "downloading $uri (source package ndpi)" "$apt_helper" "${apt_opts[@]}" download-file "$uri" "$dl/$file" "$hash"
  # apt-helper checks the hash; check again so that a helper that skipped it cannot pass a bad file.
  echo "${hash#SHA256:}  $dl/$file" | sha256sum --check --quiet --status ||
    die "$file (source package ndpi) does not match the SHA-256 of the Sources index"
  mkdir -p "$dl/ndpi"
  tar -xf "$dl/$file" -C "$dl/ndpi" --wildcards '*/tests/pcap/*' '*/COPYING' ||
    die "cannot unpack $file (source package ndpi; tar and gzip/xz-utils needed)"
  top=$(cd "$dl/ndpi" && ls -d */ | head -n 1) || true
  [[ -n $top && -d $dl/ndpi/${top}tests/pcap ]] || die "$file (source package ndpi) has no tests/pcap folder"
  mkdir -p "$dl/ndpi/pcap"
  cp "$dl/ndpi/${top}COPYING" "$dl/ndpi/pcap/COPYING.LGPL-3" || die "$file (source package ndpi) has no COPYING"
  cp -n "$dl/ndpi/${top}tests/pcap/"* "$dl/ndpi/pcap/" 2>/dev/null || true
  take pcap/ndpi "$dl/ndpi/pcap"
fi

if wants rules/et-open-2017; then
  take rules/et-open-2017 "$root/data/rules/et-open-2017"
fi
dl_mb=$(find "$dl" -maxdepth 3 \( -name '*.deb' -o -name '*.orig.tar.*' -o -path "$dl/lists/*" \) -type f \
  -printf '%s\n' | awk '{ s += $1 } END { printf "%d", s / 1048576 }')

# Every file against the manifest before anything moves.
for u in "${missing[@]}"; do
  if ! (cd "$stage/new" && unit_lines "$u" | sha256sum --check --quiet); then
    die "$u: the files named above differ from scripts/data.sha256 (a newer Debian package?); nothing was changed in $dest"
  fi
done

# Install: one rename per unit, the routes file last; what was there before is removed with the staging folder.
mkdir -p "$stage/old"
for u in "${units[@]}"; do
  wants "$u" || continue
  mkdir -p "$(dirname "$dest/$u")" "$(dirname "$stage/old/$u")"
  if [[ -e $dest/$u ]]; then mv "$dest/$u" "$stage/old/$u" || die "cannot move the old $dest/$u aside"; fi
  mv "$stage/new/$u" "$dest/$u" || die "cannot move $u into $dest"
done
if [[ $dest != "$root/data" && ! -e $dest/README.md ]]; then cp "$root/data/README.md" "$dest/README.md"; fi

say "done in $((SECONDS - t0)) s: ${missing[*]} in $dest ($dl_mb MB downloaded, $(du -sm --exclude=".get-data.*" "$dest" | cut -f1) MB of data)"
