# Shared by scripts/bundle-test.sh and scripts/package-test.sh (source it): a bare Debian 12 chroot to test in.
#   chroot_setup DIR NAME   debootstrap --variant=minbase bookworm into DIR when it has no Debian yet (a few minutes;
#                           needs the Debian mirror), mount /proc /sys /dev (unmounted on exit), copy resolv.conf
#   in_chroot CMD...        run CMD in the chroot with a clean environment
#   check WHAT RC PAT CMD   run CMD (bash, from $check_dir) in the chroot; PASS when it exits RC and its output
#                           matches the extended regex PAT (empty: anything); counts passes and fails; then
#                           calls check_excerpt OUTPUT_FILE where the caller defines it
check_dir=/ fails=0 passes=0
mounted=()
chroot_cleanup() {
  local i
  for ((i = ${#mounted[@]} - 1; i >= 0; i--)); do umount -l "${mounted[$i]}" 2>/dev/null || echo "could not unmount ${mounted[$i]}" >&2; done
}
chroot_setup() {
  local name=$2 m
  case ${1:-/} in
    /|"") echo "$name: refusing '${1:-}' as the chroot: give a folder of its own" >&2; exit 2 ;;
  esac
  chroot_dir=$1
  [ "$(id -u)" -eq 0 ] || { echo "$name: needs root (chroot, mount, debootstrap)" >&2; exit 2; }
  trap chroot_cleanup EXIT
  trap 'exit 130' INT TERM
  if [ ! -f "$chroot_dir/etc/debian_version" ]; then
    echo "$name: debootstrap --variant=minbase bookworm $chroot_dir"
    debootstrap --variant=minbase bookworm "$chroot_dir" http://deb.debian.org/debian >"/tmp/$name-debootstrap.log" 2>&1 \
      || { echo "$name: debootstrap failed (/tmp/$name-debootstrap.log)" >&2; exit 3; }
  fi
  for m in proc sys dev; do
    mkdir -p "$chroot_dir/$m"
    mountpoint -q "$chroot_dir/$m" && continue
    case $m in
      proc) mount -t proc proc "$chroot_dir/proc" ;;
      sys) mount -t sysfs sys "$chroot_dir/sys" ;;
      dev) mount --bind /dev "$chroot_dir/dev" ;;
    esac && mounted+=("$chroot_dir/$m") || { echo "$name: cannot mount $chroot_dir/$m" >&2; exit 3; }
  done
  cp /etc/resolv.conf "$chroot_dir/etc/resolv.conf" 2>/dev/null
}
in_chroot() {  # a clean environment: nothing of this shell's leaks in
  chroot "$chroot_dir" /usr/bin/env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin HOME=/root LANG=C.UTF-8 "$@"
}
check() {
  local what=$1 want_rc=$2 pat=$3 cmd=$4 outf rc
  outf=$(mktemp)
  in_chroot bash -c "cd $check_dir && $cmd" >"$outf" 2>&1
  rc=$?
  if [ "$rc" -eq "$want_rc" ] && { [ -z "$pat" ] || grep -Eq "$pat" "$outf"; }; then
    echo "PASS  $what"
    passes=$((passes + 1))
  else
    echo "FAIL  $what (exit $rc, wanted $want_rc${pat:+, output matching /$pat/}); last lines:"
    tail -8 "$outf" | sed 's/^/        /'
    fails=$((fails + 1))
  fi
  if declare -F check_excerpt >/dev/null; then check_excerpt "$outf"; fi  # the caller's lines worth showing
  rm -f "$outf"
}
