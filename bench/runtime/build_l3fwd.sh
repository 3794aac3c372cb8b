#!/usr/bin/env bash
# Builds DPDK's l3fwd example (Debian package dpdk-doc) as the forwarding peer of bench/runtime/vs_testpmd.py,
# with the two changes a full BGP table and software ports need:
#   - room for the table: IPV4_L3FWD_LPM_MAX_RULES 1024 -> 1,048,576, IPV4_L3FWD_LPM_NUMBER_TBL8S 256 -> 65,536;
#   - no rx checksum offload (vdevs have none, and l3fwd refuses to start on a port that lacks an offload it asks for);
#   - without hugepages, an mbuf pool packed across 4 KB pages (hpr_pool.h), as hpr's own (runtime/ports/dpdk_port.cpp,
#     create_mbuf_pool): rte_pktmbuf_pool_create puts one mbuf on each 4 KB page there, and the two programs should
#     forward from the same layout;
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
cat > hpr_pool.h <<'EOF_POOL'
#include <rte_errno.h>
#include <rte_mbuf_pool_ops.h>
/* rte_pktmbuf_pool_create, packed across 4 KB pages where there are no hugepages and IOVA is VA (hpr's pool). */
static struct rte_mempool *hpr_pool_create(const char *name, unsigned n, unsigned cache, uint16_t priv,
                                           uint16_t room, int socket) {
	if (rte_eal_has_hugepages() || rte_eal_iova_mode() != RTE_IOVA_VA)
		return rte_pktmbuf_pool_create(name, n, cache, priv, room, socket);
	struct rte_mempool *mp = rte_mempool_create_empty(name, n, sizeof(struct rte_mbuf) + priv + room, cache,
		sizeof(struct rte_pktmbuf_pool_private), socket, RTE_MEMPOOL_F_NO_IOVA_CONTIG);
	if (mp == NULL)
		return NULL;
	int rc = rte_mempool_set_ops_byname(mp, rte_mbuf_best_mempool_ops(), NULL);
	if (rc == 0) {
		struct rte_pktmbuf_pool_private pp = {.mbuf_data_room_size = room, .mbuf_priv_size = priv};
		rte_pktmbuf_pool_init(mp, &pp);
		rc = rte_mempool_populate_default(mp);
	}
	if (rc < 0) {
		rte_mempool_free(mp);
		rte_errno = -rc;
		return NULL;
	}
	rte_mempool_obj_iter(mp, rte_pktmbuf_init, NULL);
	return mp;
}
EOF_POOL
sed -i -e 's/^#include "l3fwd.h"$/&\n#include "hpr_pool.h"/' -e 's/\brte_pktmbuf_pool_create(s, nb_mbuf,/hpr_pool_create(s, nb_mbuf,/' main.c
sed -i -e 's/^\trte_eal_mp_remote_launch(l3fwd_lkp.main_loop, NULL, CALL_MAIN);/\tuint64_t hpr_t0 = rte_rdtsc();\n&/' \
       -e 's/^\t\t\tprintf("Closing port %d...", portid);/\t\t\t{ struct rte_eth_stats st; rte_eth_stats_get(portid, \&st); printf("HPR_STATS port=%u opackets=%" PRIu64 " seconds=%.6f ipackets=%" PRIu64 "\\n", portid, st.opackets, (double)(rte_rdtsc() - hpr_t0) \/ rte_get_tsc_hz(), st.ipackets); }\n&/' main.c
grep -q '(1 << 20)' l3fwd_lpm.c && grep -q '.offloads = 0,' main.c && grep -q 'hpr_pool_create(s, nb_mbuf' main.c && grep -q HPR_STATS main.c && grep -q 'hpr_t0 = rte_rdtsc' main.c || { echo "build_l3fwd.sh: the l3fwd source changed; edit the patterns" >&2; exit 1; }
make -s -j"$(nproc)" shared >/dev/null
cp build/l3fwd-shared "$out/l3fwd"
echo "$out/l3fwd"
