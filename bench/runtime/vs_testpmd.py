#!/usr/bin/python3
"""Throughput beside dpdk-testpmd and DPDK's l3fwd in the same run (issues 2, 4 and 12).

For each round, in turn (never at once: the machine has 2 cores):
  testpmd   dpdk-testpmd --forward-mode=io, net_pcap (infinite_rx=1) -> net_null (no-rx=1): the port's floor
  l3fwd-lpm DPDK l3fwd (bench/runtime/build_l3fwd.sh), LPM on the same BGP table (every route to net_null),
            one lcore; packets without a route go back out of net_pcap (which drops them on tx)
  l3fwd-em  the same with --lookup em: an exact-match hash lookup of the 5-tuple per packet (its default rules,
            which the mix misses: every packet is looked up and sent back to net_pcap)
  classify  bench/runtime/classify_fwd dpdk: rx -> parse/flow/hash/lookup -> tx, same vdevs
  hpr:<app>:<lanes>  build/cli/hpr run through the same vdevs (DPDK in, DPDK null out)
  alt:<app>:<lanes>  the same with another hpr binary (--alt-hpr, e.g. a build before a change)
Reports Mpps median and spread (p90-p10 over median) per case, the ratio of medians to testpmd, and for
hpr runs the medians of Gbit/s out and of the rx-to-tx latency p50/p99. With l3fwd in the run, also each case's
ns per packet above the testpmd floor of the same round (median and spread over rounds) and its Mpps ratio to
l3fwd-lpm and l3fwd-em. Mpps counts every packet processed (hpr: the lanes' packets, forwarded or dropped by the
app; l3fwd: packets sent on either port), so packets without a route count alike on both sides.
Writes CSV (one row per measurement) to --out.
"""
import argparse, csv, json, os, re, statistics, subprocess, sys, tempfile, time

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
DATA = os.environ.get("HPR_DATA_DIR", os.path.join(ROOT, "..", "shared", "data"))
HPR = os.path.join(ROOT, "build", "cli", "hpr")
FWD = os.path.join(ROOT, "build", "bench", "runtime", "classify_fwd")
L3FWD_SRC = os.environ.get("HPR_L3FWD_SRC", "/usr/share/dpdk/examples/l3fwd")  # for its default rule files


def make_mix(path, packets=6000, files=25):
    """A multi-flow capture from real ones: the largest Ethernet captures of pcap/ndpi merged in
    time order, frames <= 1514 bytes, the first `packets` (net_pcap with infinite_rx keeps the whole
    file in mbufs, so it must fit the 8k-mbuf pools)."""
    d = os.path.join(DATA, "pcap", "ndpi")
    caps = []
    for f in sorted(os.listdir(d)):
        if not f.endswith(".pcap"):
            continue
        info = subprocess.run(["capinfos", "-E", os.path.join(d, f)], capture_output=True, text=True).stdout
        if "Ethernet" in info:
            caps.append((os.path.getsize(os.path.join(d, f)), f))
    chosen = [os.path.join(d, f) for _, f in sorted(caps, reverse=True)[:files]]
    tmp = path + ".all.pcap"
    subprocess.run(["mergecap", "-a", "-F", "pcap", "-w", tmp] + chosen, check=True)
    subprocess.run(["tshark", "-r", tmp, "-Y", "frame.len <= 1514", "-w", tmp + ".small", "-F", "pcap"], check=True,
                   capture_output=True)
    subprocess.run(["editcap", "-r", tmp + ".small", path, f"1-{packets}"], check=True)
    os.remove(tmp)
    os.remove(tmp + ".small")
    return path


def testpmd(capture, seconds):
    # --mp-alloc=xbuf: the frames' buffers packed in external memory, as hpr's and l3fwd's pools are without
    # hugepages (runtime/ports/dpdk_port.cpp, build_l3fwd.sh); testpmd's default pool has one mbuf per 4 KB page here.
    cmd = ["timeout", "-s", "INT", str(seconds + 2), "dpdk-testpmd", "--no-huge", "--no-shconf", "--no-pci", "-m", "512",
           "-l", "0-1", "--log-level=error", f"--vdev=net_pcap0,rx_pcap={capture},infinite_rx=1", "--vdev=net_null0,no-rx=1", "--",
           "--forward-mode=io", "--stats-period", "1", "--total-num-mbufs=8192", "--mp-alloc=xbuf"]
    out = subprocess.run(cmd, capture_output=True, text=True).stdout
    # Per-second Tx-pps of port 1 (net_null0): blocks alternate port 0, port 1.
    tx = [int(v) for v in re.findall(r"Tx-pps:\s+(\d+)", out)]
    port1 = tx[1::2][1:]  # skip the first second (start-up)
    return statistics.median(port1) / 1e6 if port1 else 0.0


def l3fwd_rules(workdir):
    """The BGP table as l3fwd LPM rules, every route to port 1 (net_null0)."""
    path = os.path.join(workdir, "l3fwd_v4.cfg")
    if not os.path.exists(path):
        import gzip
        with gzip.open(os.path.join(DATA, "routes", "ipasn_20140513.dat.gz"), "rt") as f, open(path, "w") as o:
            for line in f:
                if line.startswith(";") or "/" not in line:
                    continue
                o.write(f"R{line.split()[0]} 1\n")
    return path


def l3fwd_cmd(binary, rx_vdev, lookup, rules):
    """l3fwd's command line: one lcore polls net_pcap0 (rx_vdev, e.g. net_pcap0,rx_pcap=F,infinite_rx=1) and
    net_null0; LPM on `rules` (l3fwd_rules) or EM on its default rules."""
    v4 = rules if lookup == "lpm" else os.path.join(L3FWD_SRC, "em_default_v4.cfg")
    # Where DPDK is not installed (a bundle's libraries), the EAL loads the drivers from the bundle's folder.
    drivers = os.environ.get("HPR_DPDK_DRIVER_DIR", "")
    return [binary] + (["-d", drivers] if drivers else []) + [
            "--no-huge", "--no-shconf", "--no-pci", "-m", "1024", "-l", "1", "--log-level=error",
            f"--vdev={rx_vdev}", "--vdev=net_null0,no-rx=1", "--", "-p", "0x3",
            "--config=(0,0,1),(1,0,1)", f"--lookup={lookup}", "--parse-ptype", f"--rule_ipv4={v4}",
            f"--rule_ipv6={os.path.join(L3FWD_SRC, lookup + '_default_v6.cfg')}"]


def l3fwd(binary, capture, seconds, lookup, rules):
    """Mpps of l3fwd on one lcore (l3fwd_mpps)."""
    return l3fwd_mpps(l3fwd_cmd(binary, f"net_pcap0,rx_pcap={capture},infinite_rx=1", lookup, rules), seconds)


def l3fwd_mpps(cmd, seconds):
    """Mpps of an l3fwd command line: packets sent on both ports over the time its loops ran (HPR_STATS lines of
    the build_l3fwd.sh patch). Waits for the table to load (tens of seconds for the BGP table) before timing."""
    p = subprocess.Popen(["stdbuf", "-oL"] + cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    for line in p.stdout:
        if line.startswith("Port 1 Link"):
            break
    time.sleep(seconds)
    p.send_signal(2)
    out = p.stdout.read()
    p.wait()
    stats = re.findall(r"HPR_STATS port=(\d+) opackets=(\d+) seconds=([\d.]+)", out)
    if not stats:
        print(out[-2000:], file=sys.stderr)
        return None
    return sum(int(n) for _, n, _ in stats) / max(float(t) for _, _, t in stats) / 1e6


def classify(capture, seconds, mode):
    out = subprocess.run([FWD, "dpdk", "--capture", capture, "--seconds", str(seconds), "--mode", mode],
                         capture_output=True, text=True).stdout
    return json.loads(out.strip().splitlines()[-1])["mpps"]


def processed(s):
    """Packets the run's lanes took, from an `hpr run` summary (JSON): a chain's first app's (with its apps on lanes
    of their own, --place-app, each packet is on a lane of every stage, so the lanes' sum counts it once a stage)."""
    return s["chain_events"][0]["packets_in"] if s.get("chain_events") else sum(l["packets"] for l in s["lanes"])


def hpr_cmd(binary, rx_vdev, app, devices, native, rtc, batch, seconds, summary_json):
    """hpr run's command line: net_pcap0 (rx_vdev) in, net_null0 out, the summary to summary_json."""
    return [binary, "run", "-q", "--app", app, "--in", "dpdk:net_pcap0", "--out", "dpdk:net_null0",
            "--vdev", rx_vdev, "--vdev", "net_null0",
            "--devices", devices, "--native", str(native), "--batch", str(batch), "--duration", str(seconds),
            "--summary-json", summary_json, "--master-key", "000102030405060708090a0b0c0d0e0f",
            "--run-to-completion", "on" if rtc else "off"]


def hpr_run(binary, capture, seconds, app, devices, native, rtc, batch):
    with tempfile.TemporaryDirectory() as d:
        js = os.path.join(d, "s.json")
        cmd = hpr_cmd(binary, f"net_pcap0,rx_pcap={capture},infinite_rx=1", app, devices, native, rtc, batch, seconds, js)
        env = dict(os.environ, POCL_DEVICES=os.environ.get("POCL_DEVICES", "pthread basic"))
        r = subprocess.run(cmd, capture_output=True, text=True, env=env)
        if r.returncode not in (0, 1):
            print(r.stderr, file=sys.stderr)
            return None
        s = json.load(open(js))
        return {"mpps": processed(s) / s["seconds"] / 1e6, "gbps": s["tx"]["bytes"] * 8 / s["seconds"] / 1e9,
                "p50_us": s["latency_ns"]["p50"] / 1e3, "p99_us": s["latency_ns"]["p99"] / 1e3,
                "dropped": s["dropped"], "reorders": s["reorders"]}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--capture", default="", help="default: a 6,000-packet mix of real captures (make_mix)")
    ap.add_argument("--seconds", type=float, default=3)
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--apps", default="ipv4")
    ap.add_argument("--lanes", default="native:none:1,native-rtc:none:1:rtc,cl-pthread:pthread:0,cl-basic:basic:0,"
                    "cl:all:0,all:all:1,all-rtc:all:1:rtc",
                    help="name:devices:native[:rtc] lane sets for hpr run (rtc: --run-to-completion on)")
    ap.add_argument("--alt-hpr", default="", help="another hpr binary, run beside build/cli/hpr on the same cases")
    ap.add_argument("--batch", type=int, default=256)
    ap.add_argument("--issue2-only", action="store_true")
    ap.add_argument("--no-l3fwd", action="store_true", help="leave the l3fwd cases out")
    ap.add_argument("--cases", default="",
                    help="keep only these cases (comma list of testpmd, io, classify, l3fwd-lpm, l3fwd-em, hpr, alt: "
                         "hpr and alt stand for all their lane sets); default all")
    ap.add_argument("--l3fwd", default="",
                    help="l3fwd binary (default BUILD/bench/l3fwd/l3fwd, built by bench/runtime/build_l3fwd.sh when missing)")
    ap.add_argument("--out", default=os.path.join(ROOT, "out", "runtime", "vs_testpmd.csv"))
    ap.add_argument("--build", default=os.path.join(ROOT, "build"), help="build folder with cli/hpr and bench/")
    a = ap.parse_args()
    global HPR, FWD
    HPR = os.path.join(a.build, "cli", "hpr")
    FWD = os.path.join(a.build, "bench", "runtime", "classify_fwd")
    a.l3fwd = a.l3fwd or os.path.join(a.build, "bench", "l3fwd", "l3fwd")
    os.makedirs(os.path.dirname(a.out), exist_ok=True)
    if not a.capture:
        a.capture = make_mix(os.path.join(os.path.dirname(a.out), "mix.pcap"))
        print(f"capture: {a.capture}")
    rows, res = [], {}
    cases = [("testpmd", None), ("io", None), ("classify", None)]
    if not a.no_l3fwd and not os.path.exists(a.l3fwd):
        if subprocess.run([os.path.join(ROOT, "bench", "runtime", "build_l3fwd.sh"), os.path.dirname(a.l3fwd)]).returncode:
            sys.exit("vs_testpmd: no l3fwd (see the message above); pass --no-l3fwd to run without it")
    if not a.no_l3fwd:
        rules = l3fwd_rules(os.path.dirname(a.out))
        cases += [("l3fwd-lpm", rules), ("l3fwd-em", rules)]
    if not a.issue2_only:
        for app in a.apps.split(","):
            for spec in a.lanes.split(","):
                name, devs, native, *rest = spec.split(":")
                cases.append((f"hpr:{app}:{name}", (HPR, app, devs, int(native), rest == ["rtc"])))
                if a.alt_hpr:
                    cases.append((f"alt:{app}:{name}", (a.alt_hpr, app, devs, int(native), rest == ["rtc"])))
    if a.cases:
        keep = set(a.cases.split(","))
        cases = [(c, arg) for c, arg in cases if c in keep or c.split(":")[0] in keep]
    for r in range(a.rounds):
        # Rotated: each case starts a round in turn, so that a drift of the machine within a round hits all alike.
        k = r % len(cases)
        for case, arg in cases[k:] + cases[:k]:
            extra = {}
            if case == "testpmd":
                v = testpmd(a.capture, a.seconds)
            elif case in ("io", "classify"):
                v = classify(a.capture, a.seconds, case)
            elif case.startswith("l3fwd-"):
                v = l3fwd(a.l3fwd, a.capture, a.seconds, case[6:], arg)
                if v is None:
                    continue
            else:
                m = hpr_run(arg[0], a.capture, a.seconds, *arg[1:], a.batch)
                if m is None:
                    continue
                v, extra = m["mpps"], m
            res.setdefault(case, []).append(v)
            rows.append({"round": r, "case": case, "mpps": v, **{k: extra.get(k, "") for k in ("gbps", "p50_us", "p99_us", "dropped", "reorders")}})
            print(f"round {r} {case:<22} {v:8.3f} Mpps {extra if extra else ''}", flush=True)
    with open(a.out, "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=list(rows[0].keys()))
        w.writeheader()
        w.writerows(rows)
    base = statistics.median(res["testpmd"]) if "testpmd" in res else 0
    print(f"\n{'case':<24} {'median Mpps':>12} {'spread':>8} {'ratio to testpmd':>17} {'Gbit/s':>7} {'p50 us':>8} {'p99 us':>8}")
    for case, vals in res.items():
        vs = sorted(vals)
        med = statistics.median(vs)
        p10, p90 = vs[int(0.1 * (len(vs) - 1))], vs[int(round(0.9 * (len(vs) - 1)))]
        extra = ""
        if case.startswith(("hpr:", "alt:")):
            mine = [r for r in rows if r["case"] == case]
            extra = " ".join(f"{statistics.median(r[k] for r in mine):{w}.{d}f}" for k, w, d in
                             (("gbps", 7, 2), ("p50_us", 8, 0), ("p99_us", 8, 0)))
        print(f"{case:<24} {med:12.3f} {(p90 - p10) / med if med else 0:8.3f} {med / base if base else 0:17.3f} {extra}")
    if "l3fwd-lpm" in res and "testpmd" in res:
        floor_ns(rows, res)
    round_ratios(rows)
    print(f"\nCSV: {a.out}")


def round_ratios(rows):
    """Each hpr case against its peers of the same round (alt, l3fwd-em, l3fwd-lpm): median (min-max) over rounds."""
    by = {}
    for r in rows:
        by.setdefault(r["round"], {})[r["case"]] = r["mpps"]
    cases = sorted({r["case"] for r in rows if r["case"].startswith("hpr:")})
    out = []
    for case in cases:
        for peer in ("alt:" + case[4:], "l3fwd-em", "l3fwd-lpm"):
            x = [v[case] / v[peer] for v in by.values() if v.get(case) and v.get(peer)]
            if x:
                out.append(f"{case} / {peer}: {statistics.median(x):.3f} ({min(x):.3f}-{max(x):.3f}) over {len(x)} rounds")
    if out:
        print("\nper-round ratios, median (min-max):\n  " + "\n  ".join(out))


def floor_ns(rows, res):
    """Each case's ns per packet above the testpmd floor of its own round, and its Mpps ratio to l3fwd."""
    floor = {r["round"]: 1e3 / r["mpps"] for r in rows if r["case"] == "testpmd" and r["mpps"] > 0}
    lpm, em = statistics.median(res["l3fwd-lpm"]), statistics.median(res.get("l3fwd-em", [0]))
    print(f"\n{'case':<24} {'ns/pkt above floor':>19} {'range':>7} {'x l3fwd-lpm':>12} {'x l3fwd-em':>11}")
    for case in res:
        if case == "testpmd":
            continue
        above = sorted(1e3 / r["mpps"] - floor[r["round"]] for r in rows
                       if r["case"] == case and r["mpps"] > 0 and r["round"] in floor)
        if not above:
            continue
        med = statistics.median(above)
        med_mpps = statistics.median(res[case])
        print(f"{case:<24} {med:19.1f} {above[-1] - above[0]:7.1f} {med_mpps / lpm:12.3f} "
              f"{med_mpps / em if em else 0:11.3f}")


if __name__ == "__main__":
    main()
