#!/usr/bin/env bash
# Tests the Debian package (cpack -G DEB in build/, cmake/install.cmake) on a fresh Debian 12 (issue 17):
#   scripts/package-test.sh DEB [CHROOT]            (as root; CHROOT default /srv/package-chroot, made fresh)
# In a bare `debootstrap --variant=minbase bookworm` chroot: apt installs the package and what it depends on; the
# files are where they belong; `systemd-analyze verify` accepts the unit (systemd installed for that; it cannot boot
# in a chroot, so the unit's command runs by hand, as the unit would run it: the main job from /etc/hpr/hpr.toml,
# asked through its control socket, stopped with hpr ctl stop, books balanced); then the package is removed and
# purged. Prints PASS/FAIL per check; the exit status is the number of failures.
set -uo pipefail
deb=$(readlink -f "${1:?usage: package-test.sh DEB [CHROOT]}")
[ -f "$deb" ] || { echo "package-test: no package $deb" >&2; exit 2; }
dir=${2:-/srv/package-chroot}
source "$(dirname "${BASH_SOURCE[0]}")/chroot-lib.sh"
if [ -f "$dir/etc/debian_version" ]; then
  echo "package-test: $dir exists; starting from a fresh one"
  rm -rf --one-file-system "$dir"
fi
chroot_setup "$dir" package-test
cp "$deb" "$dir/tmp/"
d=/tmp/$(basename "$deb")
check "apt install the package (and its dependencies) on bare Debian 12" 0 "Setting up hpr" \
  "apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends $d"
check "the files: binary, unit, config, data sample, docs" 0 "" \
  "test -x /usr/bin/hpr && test -f /usr/lib/systemd/system/hpr.service && test -f /etc/hpr/hpr.toml &&
   test -f /usr/share/hpr/data/routes/ipasn_20140513.dat.gz && test -f /usr/share/doc/hpr/operations.md"
check "/etc/hpr/hpr.toml is a conffile" 0 "/etc/hpr/hpr.toml" "dpkg-query -W -f='\${Conffiles}' hpr"
check "hpr --version names its parts" 0 "DPDK on" "hpr --version"
check "hpr devices (no OpenCL driver installed)" 0 "No OpenCL device found" "hpr devices"
check "hpr finds the packaged data (/usr/share/hpr/data)" 0 "selftest passed" "hpr selftest --apps ipv4,md5 --min-ms 20"
check "systemd-analyze verify hpr.service" 0 "" \
  "DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends systemd >/dev/null &&
   systemd-analyze verify /usr/lib/systemd/system/hpr.service"
# The unit's ExecStart, by hand: the service's config (unlimited generated traffic), its control socket in /run/hpr.
check "the service's command runs, answers hpr ctl, stops on hpr ctl stop with balanced books" 0 \
  "books .*balanced" \
  "(HPR_STATE_DIR=/var/lib/hpr hpr run -c /etc/hpr/hpr.toml --quiet >/tmp/svc.log 2>&1 &)
   for i in \$(seq 50); do hpr ctl status >/dev/null 2>&1 && break; sleep 0.2; done
   hpr ctl status | grep -q received && hpr ctl stop && for i in \$(seq 100); do grep -q books /tmp/svc.log && break; sleep 0.2; done
   cat /tmp/svc.log"
check "apt remove, then purge" 0 "" \
  "DEBIAN_FRONTEND=noninteractive apt-get remove -y -qq hpr && test -f /etc/hpr/hpr.toml &&
   DEBIAN_FRONTEND=noninteractive apt-get purge -y -qq hpr && test ! -e /etc/hpr/hpr.toml && test ! -e /usr/bin/hpr"
echo "package-test: $(basename "$deb"): $passes passed, $fails failed"
exit "$fails"
