#!/usr/bin/python3
"""Checks the e2e run: tshark (IPv4 checksums validated) on the input and the captured output, hpr's JSON summary.
Usage: check.py IN.pcap OUT.pcap SUMMARY.json SENT
Checks: every input frame hpr received is in the books (rx == sent); every forwarded IPv4 frame has TTL - 1 of
its input frame and a good header checksum; every non-IPv4 frame leaves unchanged in length; the drops hpr
counted as ttl_exceeded and bad_checksum are exactly the input IPv4 frames with TTL <= 1 and with a bad
checksum; rx == tx + dropped and unaccounted == 0."""
import collections, json, subprocess, sys

inp, outp, summ, sent = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
F = ["frame.protocols", "frame.len", "eth.type", "ip.src", "ip.dst", "ip.id", "ip.proto", "ip.ttl", "ip.checksum.status", "ip.len"]


def rows(path):
    cmd = ["tshark", "-n", "-r", path, "-o", "ip.check_checksum:TRUE", "-T", "fields", "-E", "occurrence=f",
           "-E", "separator=|"] + sum((["-e", f] for f in F), [])
    res = []
    for line in subprocess.run(cmd, check=True, capture_output=True, text=True).stdout.splitlines():
        res.append(dict(zip(F, line.split("|"))))
    return res


fails = []
def check(ok, msg):
    if not ok:
        fails.append(msg)


src, dst_all = rows(inp), rows(outp)
s = json.load(open(summ))
# ICMP Time Exceeded messages the host sends for TTL <= 1 (from app.router_addr, default 192.0.2.1):
# not forwarded packets; the summary counts them as host_frames.
ROUTER = "192.0.2.1"
host = [r for r in dst_all if r["ip.src"] == ROUTER and r["ip.proto"] == "1"]
dst = [r for r in dst_all if not (r["ip.src"] == ROUTER and r["ip.proto"] == "1")]
drops = s.get("drops", {})
rx, tx = s["rx"]["packets"], s["tx"]["packets"]
check(rx == sent, f"hpr received {rx} frames, tcpreplay sent {sent} (lost before hpr: af_packet ring?)")
check(tx == len(dst), f"hpr says it transmitted {tx}, tcpdump captured {len(dst)}")
check(len(host) == s.get("host_frames", 0), f"ICMP Time Exceeded captured {len(host)}, hpr sent {s.get('host_frames', 0)}")
check(len(host) == drops.get("ttl_exceeded", 0), f"ICMP Time Exceeded {len(host)} for {drops.get('ttl_exceeded', 0)} TTL drops")
for r in host:
    check(r["ip.checksum.status"] == "1", f"ICMP from {ROUTER}: header checksum status {r['ip.checksum.status']}")
check(rx == tx + s["dropped"], f"books: rx {rx} != tx {tx} + dropped {s['dropped']}")
check(s["unaccounted"] == 0, f"unaccounted {s['unaccounted']}")


def outer_v4(r):
    """The frame's first network header is IPv4 (after Ethernet and any VLAN tags): what hpr's ipv4 app routes."""
    p = r["frame.protocols"].split(":")
    i = 1
    while i + 1 < len(p) and p[i] == "ethertype" and p[i + 1] == "vlan":
        i += 2
    return i + 1 < len(p) and p[i] == "ethertype" and p[i + 1] == "ip"


def key(r):
    return (r["ip.src"], r["ip.dst"], r["ip.id"], r["ip.proto"], r["ip.len"])


want_ttl = collections.defaultdict(list)
exp_ttl, exp_csum, exp_len = 0, 0, 0
other_in = sum(1 for r in src if not outer_v4(r))
for r in src:
    if not outer_v4(r):
        continue
    l3_off = 14 + 4 * r["frame.protocols"].split(":").count("vlan")
    if l3_off + int(r["ip.len"]) > int(r["frame.len"]):  # hpr checks the length before the checksum
        exp_len += 1
    elif r["ip.checksum.status"] == "0":  # 0 = bad, 1 = good, 2 = unverified
        exp_csum += 1
    elif int(r["ip.ttl"]) <= 1:
        exp_ttl += 1
    else:
        want_ttl[key(r)].append(int(r["ip.ttl"]) - 1)
fwd_v4 = 0
other_out = sum(1 for r in dst if not outer_v4(r))
check(other_out == other_in, f"non-IPv4 frames: {other_in} in, {other_out} out (the ipv4 app passes them to port 0)")
for r in dst:
    if not outer_v4(r):
        continue
    fwd_v4 += 1
    check(r["ip.checksum.status"] == "1", f"forwarded {key(r)}: header checksum status {r['ip.checksum.status']} (1 = good)")
    w = want_ttl.get(key(r))
    check(bool(w) and int(r["ip.ttl"]) in w, f"forwarded {key(r)}: TTL {r['ip.ttl']}, expected one of {w}")
    if w and int(r["ip.ttl"]) in w:
        w.remove(int(r["ip.ttl"]))
check(drops.get("ttl_exceeded", 0) == exp_ttl, f"ttl_exceeded {drops.get('ttl_exceeded', 0)}, expected {exp_ttl}")
check(drops.get("bad_total_length", 0) == exp_len,
      f"bad_total_length {drops.get('bad_total_length', 0)}, expected {exp_len}")
unexpected = set(drops) - {"ttl_exceeded", "bad_checksum", "bad_total_length"}
check(not unexpected, f"unexpected drop reasons {unexpected}")
check(drops.get("bad_checksum", 0) == exp_csum, f"bad_checksum {drops.get('bad_checksum', 0)}, expected {exp_csum}")
print(f"e2e: sent {sent}, hpr rx {rx} tx {tx} dropped {s['dropped']} {drops}; forwarded IPv4 {fwd_v4} all TTL-1 with good "
      f"checksums; expected drops ttl {exp_ttl} checksum {exp_csum} length {exp_len}")
for f in fails[:20]:
    print("FAIL:", f)
sys.exit(1 if fails else 0)
