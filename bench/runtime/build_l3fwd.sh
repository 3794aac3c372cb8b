#!/usr/bin/env bash
# Builds DPDK's l3fwd example (Debian package dpdk-doc) as the forwarding peer of bench/runtime/vs_testpmd.py,
# with the two changes a full BGP table and software ports need:
#   - room for the table: IPV4_L3FWD_LPM_MAX_RULES 1024 -> 1,048,576, IPV4_L3FWD_LPM_NUMBER_TBL8S 256 -> 65,536;
#   - no rx checksum offload (vdevs have none, and l3fwd refuses to start on a port that lacks an offload it asks for);
#   - at exit, one line per port, `HPR_STATS port=P opackets=N seconds=S ipackets=M` (S from the launch of the
#     forwarding loops to their end), since l3fwd prints no counters of its own.
# Usage: bench/runtime/build_l3fwd.sh OUTDIR   → OUTDIR/l3fwd
set -euo pipefail
out=${1:?usage: build_l3fwd.sh OUTDIR}
src=/usr/share/dpdk/examples/l3fwd
if [ ! -f "$src/main.c" ]; then
  echo "build_l3fwd.sh: $src/main.c not found: install the Debian package dpdk-doc" >&2
  exit 1
fi
mkdir -p "$out/src"
out=$(cd "$out" && pwd)  # absolute: the build below runs in $out/src
cp -r "$src/." "$out/src/"
cp -r /usr/share/dpdk/examples/common "$out/common" 2>/dev/null || true
cd "$out/src"
sed -i -e 's/^#define IPV4_L3FWD_LPM_MAX_RULES .*/#define IPV4_L3FWD_LPM_MAX_RULES (1 << 20)/' \
       -e 's/^#define IPV4_L3FWD_LPM_NUMBER_TBL8S .*/#define IPV4_L3FWD_LPM_NUMBER_TBL8S (1 << 16)/' l3fwd_lpm.c
sed -i -e 's/\.offloads = RTE_ETH_RX_OFFLOAD_CHECKSUM,/.offloads = 0,/' main.c
sed -i -e 's/^\trte_eal_mp_remote_launch(l3fwd_lkp.main_loop, NULL, CALL_MAIN);/\tuint64_t hpr_t0 = rte_rdtsc();\n&/' \
       -e 's/^\t\t\tprintf("Closing port %d...", portid);/\t\t\t{ struct rte_eth_stats st; rte_eth_stats_get(portid, \&st); printf("HPR_STATS port=%u opackets=%" PRIu64 " seconds=%.6f ipackets=%" PRIu64 "\\n", portid, st.opackets, (double)(rte_rdtsc() - hpr_t0) \/ rte_get_tsc_hz(), st.ipackets); }\n&/' main.c
grep -q '(1 << 20)' l3fwd_lpm.c && grep -q '.offloads = 0,' main.c && grep -q HPR_STATS main.c && grep -q 'hpr_t0 = rte_rdtsc' main.c || { echo "build_l3fwd.sh: the l3fwd source changed; edit the patterns" >&2; exit 1; }
make -s -j"$(nproc)" shared >/dev/null
cp build/l3fwd-shared "$out/l3fwd"
echo "$out/l3fwd"
