#!/usr/bin/python3
"""Writes the e2e input capture: real Ethernet frames (<= 1514 bytes) from nDPI captures, plus hand-made IPv4
frames that the ipv4 app must drop (TTL 1, TTL 0, bad header checksum) or forward (TTL 2, 255, options).
Usage: make_input.py DATA_DIR OUT.pcap [MAX_PER_CAPTURE]"""
import os, struct, sys

data, out = sys.argv[1], sys.argv[2]
per = int(sys.argv[3]) if len(sys.argv) > 3 else 8

def frames(path, limit):
    b = open(path, "rb").read()
    m = b[:4]
    e = "<" if m in (b"\xd4\xc3\xb2\xa1", b"\x4d\x3c\xb2\xa1") else ">" if m in (b"\xa1\xb2\xc3\xd4", b"\xa1\xb2\x3c\x4d") else None
    if e is None or struct.unpack(e + "I", b[20:24])[0] != 1:
        return
    off, n = 24, 0
    while off + 16 <= len(b) and n < limit:
        incl = struct.unpack(e + "I", b[off + 8:off + 12])[0]
        fr = b[off + 16:off + 16 + incl]
        off += 16 + incl
        if 14 <= len(fr) <= 1514 and not ipv4_fragment(fr):
            n += 1
            yield fr


def ipv4_fragment(fr):
    """DPDK net_af_packet joins a PACKET_FANOUT group with PACKET_FANOUT_FLAG_DEFRAG (hard-coded in DPDK 22.11):
    the kernel reassembles IPv4 fragments before hpr sees them, so fragments cannot be compared frame by frame."""
    off = 12
    while off + 2 <= len(fr) and fr[off:off + 2] in (b"\x81\x00", b"\x88\xa8"):
        off += 4
    if fr[off:off + 2] != b"\x08\x00" or len(fr) < off + 2 + 8:
        return False
    flags_frag = struct.unpack("!H", fr[off + 8:off + 10])[0]
    return (flags_frag & 0x3fff) != 0


def csum(h):
    s = sum(struct.unpack("!%dH" % (len(h) // 2), h))
    while s >> 16:
        s = (s & 0xffff) + (s >> 16)
    return (~s) & 0xffff


def ipv4(ttl, good=True, options=b"", ident=0x4242):
    payload = struct.pack("!HHHH", 1234, 5678, 8 + 18, 0) + b"hpr-e2e-handmade!!"
    ihl = 5 + len(options) // 4
    h = struct.pack("!BBHHHBBH4s4s", 0x40 | ihl, 0, ihl * 4 + len(payload), ident, 0, ttl, 17, 0,
                    bytes([10, 0, 0, 1]), bytes([10, 9, 8, 7])) + options
    c = csum(h)
    if not good:
        c ^= 0x00ff
    h = h[:10] + struct.pack("!H", c) + h[12:]
    return b"\x02\x00\x00\x00\x00\x02\x02\x00\x00\x00\x00\x01\x08\x00" + h + payload


out_frames = []
nd = os.path.join(data, "pcap", "ndpi")
for c in sorted(os.listdir(nd)):  # every classic-pcap Ethernet capture, a few frames each, up to 1000 frames
    if c.endswith(".pcap") and len(out_frames) < 1000:
        out_frames.extend(frames(os.path.join(nd, c), per))
hand = [ipv4(1, ident=1), ipv4(0, ident=2), ipv4(64, good=False, ident=3), ipv4(2, ident=4), ipv4(255, ident=5),
        ipv4(64, options=b"\x01\x01\x01\x00", ident=6)]
out_frames.extend(hand)
with open(out, "wb") as f:
    f.write(struct.pack("<IHHiIII", 0xa1b2c3d4, 2, 4, 0, 0, 65535, 1))
    for i, fr in enumerate(out_frames):
        f.write(struct.pack("<IIII", 1_000_000_000 + i, 0, len(fr), len(fr)) + fr)
print(len(out_frames))
