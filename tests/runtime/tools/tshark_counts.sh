#!/usr/bin/env bash
# Independent reading of the captures for tests/runtime/parser_test.cpp: for every frame, the outermost
# L3 (ip/ipv6) and the transport right after it, as tshark dissects them without reassembly.
# Prints per-capture totals: file v4 v6 tcp udp. Run once; the numbers are kept in the test.
set -u
dir=${1:-../shared/data/pcap/ndpi}
for f in "$dir"/*.pcap "$dir"/*.pcapng "$dir"/*.cap; do
  tshark -r "$f" -o ip.defragment:FALSE -o ipv6.defragment:FALSE -o tcp.desegment_tcp_streams:FALSE \
    -o ip.check_checksum:FALSE -T fields -e frame.protocols 2>/dev/null |
  awk -v f="$(basename "$f")" '
    { n = split($0, p, ":"); l3 = ""; l4 = "";
      for (i = 1; i <= n; i++) {
        if (l3 == "" && (p[i] == "ip" || p[i] == "ipv6")) { l3 = p[i]; continue }
        if (l3 != "" && p[i] ~ /^ipv6\./) continue;
        if (l3 != "") { l4 = p[i]; break }
        if (p[i] != "eth" && p[i] != "ethertype" && p[i] != "vlan" && p[i] != "sll" && p[i] != "null" && p[i] != "raw" && p[i] != "ppp" && p[i] != "chdlc" && p[i] != "frame" && p[i] != "loop") break
      }
      if (l3 == "ip") v4++; if (l3 == "ipv6") v6++;
      if (l4 == "tcp") tcp++; if (l4 == "udp") udp++; }
    END { printf "%s %d %d %d %d\n", f, v4, v6, tcp, udp }'
done
