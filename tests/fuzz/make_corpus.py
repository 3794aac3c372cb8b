#!/usr/bin/python3
"""Rebuilds the seed corpora under tests/fuzz/corpus/<target>/ from ../shared/data (small samples only).

Usage: tests/fuzz/make_corpus.py [DATA_DIR]   (default: $HPR_DATA_DIR, else data/ once scripts/get-data.sh
filled it, else ../shared/data from the repo root)
Seeds are real data cut small: single frames for the parser, small captures for the pcap reader, the first
lines of the BGP table and of a few ET rule files, the shipped TOML configuration, a table in the format of
`hpr profile`. The routes target reads a mode byte and a port-count byte before the text (fuzz_routes.cpp).
"""
import gzip, json, os, shutil, struct, sys

here = os.path.dirname(os.path.abspath(__file__))
root = os.path.dirname(os.path.dirname(here))


def default_data():  # the search of common/hpr/data_dir.hpp: $HPR_DATA_DIR, data/ once filled, ../shared/data
    if os.environ.get("HPR_DATA_DIR"):
        return os.environ["HPR_DATA_DIR"]
    if os.path.isfile(os.path.join(root, "data", "routes", "ipasn_20140513.dat.gz")):
        return os.path.join(root, "data")
    return os.path.join(root, "..", "shared", "data")


data = sys.argv[1] if len(sys.argv) > 1 else default_data()
out = os.path.join(here, "corpus")


def target(name):
    d = os.path.join(out, name)
    shutil.rmtree(d, ignore_errors=True)
    os.makedirs(d)
    return d


def write(d, name, b):
    with open(os.path.join(d, name), "wb") as f:
        f.write(b)


def pcap_frames(path, limit):
    """Frames of a classic pcap with Ethernet link type (others skipped)."""
    with open(path, "rb") as f:
        b = f.read()
    if len(b) < 24:
        return []
    magic = b[:4]
    if magic in (b"\xd4\xc3\xb2\xa1", b"\x4d\x3c\xb2\xa1"):
        e = "<"
    elif magic in (b"\xa1\xb2\xc3\xd4", b"\xa1\xb2\x3c\x4d"):
        e = ">"
    else:
        return []
    if struct.unpack(e + "I", b[20:24])[0] != 1:
        return []
    off, frames = 24, []
    while off + 16 <= len(b) and len(frames) < limit:
        incl = struct.unpack(e + "I", b[off + 8:off + 12])[0]
        frames.append(b[off + 16:off + 16 + incl])
        off += 16 + incl
    return frames


nd = os.path.join(data, "pcap", "ndpi")

# parser: a few frames from captures that cover VLAN, IPv6 extension headers, tunnels, fragments, malformed.
d = target("parser")
for cap in ["malformed_icmp.pcap", "4in4tunnel.pcap", "6in6tunnel.pcap", "ipv6_in_gtp.pcap", "fuzz-2021-10-13.pcap",
            "fuzz-2021-06-07-c6c72a0a56.pcap", "h323-overflow.pcap", "dns_long_domainname.pcap", "NTPv4.pcap",
            "cpha.pcap", "tk.pcap", "skype_udp.pcap", "zabbix.pcap", "mpegts.pcap", "smbv1.pcap", "dtls.pcap"]:
    p = os.path.join(nd, cap)
    if os.path.exists(p):
        for i, fr in enumerate(pcap_frames(p, 3)):
            write(d, f"{cap}.{i}", fr)

# pcap: whole small captures (pcap and pcapng, several link types).
d = target("pcap")
for cap in ["malformed_icmp.pcap", "fuzz-2021-10-13.pcap", "dlt_ppp.pcap", "BGP_Cisco_hdlc_slarp.pcap",
            "quic-fuzz-overflow.pcapng", "kerberos_fuzz.pcapng", "dns_invert_query.pcapng", "gtp_false_positive.pcapng",
            "6in6tunnel.pcap", "NTPv2.pcap"]:
    p = os.path.join(nd, cap)
    if os.path.exists(p) and os.path.getsize(p) <= 64 * 1024:
        shutil.copy(p, os.path.join(d, cap))

# routes: mode byte (0 pyasn text, 1 route text, 2 pyasn file, 3 route-text file), port-count byte, text.
d = target("routes")
with gzip.open(os.path.join(data, "routes", "ipasn_20140513.dat.gz"), "rt") as f:
    head = "".join(next(f) for _ in range(60))
write(d, "ipasn_head", b"\x00\x04" + head.encode())
write(d, "ipasn_head_file", b"\x02\x10" + head.encode())
write(d, "ipasn_head_gzip", b"\x02\x04" + gzip.compress(head.encode()))
text = "# plain routes\n0.0.0.0/0 0\n10.0.0.0/8 1\n10.1.0.0/16 2\n192.168.1.0/24 3\n; comment\n\n1.2.3.4/32 7\n"
write(d, "text", b"\x01\x00" + text.encode())
write(d, "text_file", b"\x03\x00" + text.encode())
write(d, "text_gzip", b"\x03\x00" + gzip.compress(text.encode()))

# run_config: the shipped configuration and small variants.
d = target("run_config")
shutil.copy(os.path.join(root, "config", "hpr.toml"), os.path.join(d, "hpr.toml"))
write(d, "faults.toml", b'[input]\nkind = "generator"\npackets = 1000\nflows = 10\n[output]\nkind = "null"\n'
      b'[app]\nname = "ipv4"\nroutes = "r.txt"\n[lanes]\nnative = 2\ndevices = ["none"]\nbatch = 64\n'
      b'[faults.fail_after_batches]\nnative = 3\n')
write(d, "pcap.toml", b'[input]\nkind = "pcap"\npcap = "in.pcap"\nloops = 2\n[output]\nkind = "pcap"\npcap = "o.pcap"\n'
      b'[run]\nduration_s = 1.5\nsummary_json = "s.json"\n[telemetry]\nprometheus = "127.0.0.1:9464"\n')
write(d, "shaper_classes.toml", b'[shaper]\nenabled = true\nby = "class"\nqueue_packets = 16\n'
      b'[[shaper.class]]\nname = "voice"\ndscp = [46, 34]\nrate_bps = 4e6\nburst_bytes = 4096\n'
      b'[[shaper.class]]\nname = "lan"\nout_port = 3\nrate_bps = 1000000\nburst_bytes = 8192\nalpha_bytes = 1024\n'
      b'[shaper.adaptive]\nenabled = true\ngamma = 1.5\ndelta_th = 2\nperiod_s = 0.5\n')

# config_table: a table as `hpr profile` writes it.
d = target("config_table")
table = {"format": "hpr-config-table", "version": 1, "complete": True,
         "fingerprint": {"hpr_version": "0.1.0", "app": "ipv4", "traffic": "ndpi",
                         "devices": [{"name": "pthread-AMD EPYC", "driver": "Portable Computing Language",
                                      "version": "OpenCL 3.0 PoCL 3.1"}]},
         "points": [{"devices": [{"device": 0, "batch": 1024, "split": 1.0}], "throughput_bps": 1e9,
                     "latency_ns": 50000.0, "latency_p99_ns": 90000.0, "power_w": 80.0, "power_source": "rapl"},
                    {"devices": [{"device": 0, "batch": 256, "split": 0.5}, {"device": 1, "batch": 64, "split": 0.5}],
                     "throughput_bps": 2e9, "latency_ns": 20000.0, "latency_p99_ns": 40000.0, "power_w": 0.0,
                     "power_source": "unknown"}]}
write(d, "table.json", json.dumps(table, indent=1).encode())
# Format 2: medians with their spreads and sample counts, a point measured on a traffic of its own.
v2 = json.loads(json.dumps(table))
v2["version"] = 2
v2["points"][0].update({"throughput_spread_bps": 2.5e7, "latency_spread_ns": 1500.0, "latency_p99_spread_ns": 4000.0,
                        "power_spread_w": 1.25, "samples": 5})
v2["points"][1].update({"throughput_spread_bps": 0.0, "latency_spread_ns": 0.0, "latency_p99_spread_ns": 0.0,
                        "power_spread_w": 0.0, "samples": 7, "traffic": "generator sizes=fixed:64 flows=1000"})
write(d, "table_v2.json", json.dumps(v2, indent=1).encode())
table["complete"] = False
table["points"] = []
write(d, "empty.json", json.dumps(table).encode())

# dpi_rules: the first rules of a few ET files (content with |hex|, nocase, negation, pcre, comments).
d = target("dpi_rules")
rd = os.path.join(data, "rules", "et-open-2017")
for name in ["attack-responses.rules", "backdoor.rules", "bad-traffic.rules", "chat.rules", "community-bot.rules"]:
    p = os.path.join(rd, name)
    if os.path.exists(p):
        with open(p, "rb") as f:
            lines = f.read().splitlines(keepends=True)[:40]
        write(d, name, b"".join(lines))
write(d, "hand.rules", b'alert tcp any any -> any 80 (msg:"x"; content:"GET|20|/"; nocase; content:!"evil"; sid:1;)\n'
      b'# alert udp any any -> any any (content:"|de ad be ef|"; sid:2;)\n')
total = sum(os.path.getsize(os.path.join(dp, f)) for dp, _, fs in os.walk(out) for f in fs)
print(f"corpus: {total} bytes under {out}")
