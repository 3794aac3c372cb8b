#!/usr/bin/env bash
# Tests the Debian package (cpack -G DEB in build/, cmake/install.cmake) on a fresh Debian 12 (issue 17):
#   scripts/package-test.sh DEB [CHROOT]            (as root; CHROOT default /srv/package-chroot, made fresh)
# In a bare `debootstrap --variant=minbase bookworm` chroot: apt installs the package and what it depends on; the
# files are where they belong; `systemd-analyze verify` accepts the unit (systemd installed for that); the unit's
# command runs by hand in the chroot (the main job from /etc/hpr/hpr.toml, asked through its control socket, stopped
# with hpr ctl stop, books balanced); where systemd-nspawn is installed the chroot then boots under systemd, and the
# unit itself starts the job, reloads it on systemctl reload and stops it; then the package is removed and purged. Prints PASS/FAIL per check; the exit status is the number of failures.
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
# A boot under systemd (systemd-nspawn --boot, where this machine has it): the unit starts the main job, which
# answers hpr ctl; systemctl reload reloads its routes; systemctl stop ends it with balanced books (the journal).
if command -v systemd-nspawn >/dev/null; then
  cat >"$dir/usr/local/sbin/hpr-boot-test" <<'SH'
#!/bin/bash
exec >/root/boot-test.out 2>&1
for i in $(seq 150); do systemctl is-active -q hpr && break; sleep 0.2; done
echo "hpr.service: $(systemctl is-active hpr)"
for i in $(seq 50); do hpr ctl status >/dev/null 2>&1 && break; sleep 0.2; done
hpr ctl status | grep -m1 received
systemctl reload hpr && for i in $(seq 100); do journalctl -u hpr --no-pager | grep -q "reloaded routes" && break; sleep 0.2; done
journalctl -u hpr --no-pager | grep -o "reloaded routes from [^:]*: generation [0-9]*"
systemctl stop hpr
journalctl -u hpr --no-pager | grep -m1 -o "books .*"
echo "hpr.service after stop: $(systemctl is-active hpr)"
systemctl poweroff
SH
  chmod +x "$dir/usr/local/sbin/hpr-boot-test"
  printf '[Unit]\nAfter=hpr.service\nWants=hpr.service\n[Service]\nType=oneshot\nExecStart=/usr/local/sbin/hpr-boot-test\n[Install]\nWantedBy=multi-user.target\n' \
    >"$dir/etc/systemd/system/hpr-boot-test.service"
  in_chroot systemctl enable hpr.service hpr-boot-test.service >/dev/null 2>&1
  chroot_cleanup
  mounted=()
  rm -f "$dir/root/boot-test.out"
  timeout 300 systemd-nspawn --register=no --keep-unit -q -D "$dir" --boot >/tmp/package-test-boot.log 2>&1
  out=$(cat "$dir/root/boot-test.out" 2>/dev/null)
  if grep -q "^hpr.service: active" <<<"$out" && grep -q "received" <<<"$out" &&
     grep -q "reloaded routes from .*: generation 2" <<<"$out" && grep -q "books .*balanced" <<<"$out" &&
     grep -q "after stop: inactive" <<<"$out"; then
    echo "PASS  booted under systemd (nspawn): the unit runs the main job, hpr ctl answers, systemctl reload reloads, stop balances the books"
    passes=$((passes + 1))
  else
    echo "FAIL  boot under systemd (nspawn); the test's output, then the boot log's last lines:"
    sed 's/^/        /' <<<"$out"
    tail -8 /tmp/package-test-boot.log | sed 's/^/        /'
    fails=$((fails + 1))
  fi
  in_chroot systemctl disable hpr-boot-test.service >/dev/null 2>&1
  rm -f "$dir/etc/systemd/system/hpr-boot-test.service" "$dir/usr/local/sbin/hpr-boot-test"
  chroot_setup "$dir" package-test
else
  echo "SKIP  boot under systemd: no systemd-nspawn here (apt install systemd-container)"
fi
check "apt remove, then purge" 0 "" \
  "DEBIAN_FRONTEND=noninteractive apt-get remove -y -qq hpr && test -f /etc/hpr/hpr.toml &&
   DEBIAN_FRONTEND=noninteractive apt-get purge -y -qq hpr && test ! -e /etc/hpr/hpr.toml && test ! -e /usr/bin/hpr"
echo "package-test: $(basename "$deb"): $passes passed, $fails failed"
exit "$fails"
