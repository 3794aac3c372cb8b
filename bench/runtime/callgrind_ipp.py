#!/usr/bin/python3
"""Instructions per packet under callgrind: hpr's in-place worker path beside DPDK's l3fwd (issue 12).

Cases (one after the other, each under `valgrind --tool=callgrind`):
  hpr        build/cli/hpr run --app ipv4 --devices none --native 1 --run-to-completion on (Pipeline::worker_burst),
             the 512,621-prefix BGP table (the ipv4 app's default routes)
  hpr-threaded  the same with --run-to-completion off: the lane path (dispatcher, lane and egress threads, a lane
             queue, batch and completion ring between them). The window closes when the dispatcher waits for rx;
             what the lane and egress threads have not finished of the last burst is outside it (at most a burst)
  l3fwd-lpm  DPDK l3fwd (bench/runtime/build_l3fwd.sh), LPM on the same table, every route to net_null0
  l3fwd-em   the same with --lookup em (its default rules, which the mix misses: every packet goes back to net_pcap0)
with the command lines of bench/runtime/vs_testpmd.py (hpr_cmd, l3fwd_cmd) and its capture mix (make_mix), through
the vdevs net_pcap (rx) -> net_null (tx), --no-huge --no-shconf --no-pci. The count is valgrind's: instructions
executed (Ir) by the guest program, every thread of it, which does not depend on the machine's speed, caches or
clock (it does depend on the code paths the binaries take: the same binaries on a CPU without some extension, or
valgrind's CPUID, which hides AVX-512, may pick other ones).

Method. Loading the table takes tens of seconds natively (rte_lpm adds a rule in time linear in the table), far
too long under instrumentation, so valgrind starts with --instr-atstart=no and the window is opened and closed
from outside with callgrind_control (vgdb). What makes the packet count of the window exact is the input: net_pcap
reads its rx_pcap through libpcap, and here that file is a FIFO this script writes. Both programs poll with
32-packet rx bursts (l3fwd's MAX_PKT_BURST, hpr's PipelineConfig::rx_burst) and net_pcap's rx loops on
pcap_next_ex until the burst is full, so while the FIFO is open every burst is full and a program that has
consumed everything written is blocked in read() on the FIFO at the start of its next burst, with every earlier
burst processed and transmitted. So:
  1. the capture's header and WARMUP records (a multiple of 32, at least the whole mix: every flow seen, hpr's
     flow table and both programs' caches of the mix warm) are written; the program loads its table, starts its
     loop, forwards them uninstrumented and blocks (seen in /proc/PID/task/*/syscall: read on the FIFO's fd,
     with the pipe empty);
  2. `callgrind_control -i on`; PACKETS more records (a multiple of 32; by default whole cycles of the mix:
     8 x lcm(mix, 32) = 96,000 for the 6,000-packet mix) are written; the program blocks again;
  3. `callgrind_control -d` dumps the counts (the window), `-i off`, the FIFO is closed, SIGINT ends the program.
The window runs from inside one rx call to the same point of the rx call PACKETS later: exactly PACKETS received
packets, each taken through rx, lookup and tx, and no idle polling at all (there is none while the program waits
in read(); l3fwd's poll of net_null0's empty rx queue after each burst is part of its loop, as in vs_testpmd). The port counters at exit check that the program received WARMUP + PACKETS (l3fwd's HPR_STATS
ipackets, hpr's summary). Ir/packet is the window's Ir over PACKETS.

Also given: the Ir of net_pcap's rx function (eth_pcap_rx, inclusive: libpcap's read of the record, the mbuf
allocation and the copy into it), the same work per packet in all cases, and each case's Ir/packet above it.
Costs tied to wall time rather than packets (hpr ages idle flows every 10 ms of its loop, l3fwd drains its tx
buffers every 100 us) run per packet more often under valgrind than natively; the function tables show them.

Output: the table, hpr's top functions by self and by inclusive Ir per packet (callgrind_annotate), the callgrind
files under OUT's folder (callgrind/), and CSV (one row per case) to --out. Each case takes the benchmark lock
(--lock, flock) while its valgrind runs. About 3 minutes for the three cases, two of them l3fwd's LPM table load
under valgrind (the window itself takes about a second per case).
"""
import argparse, csv, fcntl, glob, math, os, re, shutil, signal, struct, subprocess, sys, termios, threading, time
import json

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import vs_testpmd as vt  # noqa: E402  (make_mix, l3fwd_rules, hpr_cmd, l3fwd_cmd)

ROOT = vt.ROOT
BURST = 32  # rx burst of both programs


def read_records(path):
    """(global header, [record bytes]) of a classic pcap file (converted from pcapng first when needed)."""
    with open(path, "rb") as f:
        data = f.read()
    if data[:4] not in (b"\xd4\xc3\xb2\xa1", b"\xa1\xb2\xc3\xd4", b"\x4d\x3c\xb2\xa1", b"\xa1\xb2\x3c\x4d"):
        classic = path + ".classic.pcap"
        subprocess.run(["editcap", "-F", "pcap", path, classic], check=True)
        with open(classic, "rb") as f:
            data = f.read()
    endian = "<" if data[:4] in (b"\xd4\xc3\xb2\xa1", b"\x4d\x3c\xb2\xa1") else ">"
    recs, off = [], 24
    while off + 16 <= len(data):
        incl = struct.unpack_from(endian + "I", data, off + 8)[0]
        recs.append(data[off:off + 16 + incl])
        off += 16 + incl
    return data[:24], recs


class Feeder:
    """Writes pcap records into the FIFO from a thread (writes block while the program does not read)."""

    def __init__(self, fifo, proc, timeout):
        self.fd = None
        t0 = time.time()
        while self.fd is None:  # the program opens the FIFO when DPDK probes net_pcap0
            try:
                self.fd = os.open(fifo, os.O_WRONLY | os.O_NONBLOCK)
            except OSError:
                if proc.poll() is not None or time.time() - t0 > timeout:
                    raise RuntimeError("the program did not open the capture FIFO")
                time.sleep(0.05)
        os.set_blocking(self.fd, True)
        self.thread = None

    def write(self, chunks):
        def run():
            for c in chunks:
                os.write(self.fd, c)
        self.thread = threading.Thread(target=run, daemon=True)
        self.thread.start()

    def done(self):
        return self.thread is None or not self.thread.is_alive()

    def pending(self):
        buf = bytearray(4)
        fcntl.ioctl(self.fd, termios.FIONREAD, buf)
        return struct.unpack("i", bytes(buf))[0]

    def close(self):
        if self.fd is not None:
            os.close(self.fd)
            self.fd = None


def fifo_fds(pid, fifo):
    fds = []
    for fd in os.listdir(f"/proc/{pid}/fd"):
        try:
            if os.readlink(f"/proc/{pid}/fd/{fd}") == fifo:
                fds.append(int(fd))
        except OSError:
            pass
    return fds


def blocked_in_read(pid, fds):
    """True when a thread of pid waits in read() on one of fds."""
    for t in os.listdir(f"/proc/{pid}/task"):
        try:
            f = open(f"/proc/{pid}/task/{t}/syscall").read().split()
        except OSError:
            continue
        if len(f) > 1 and f[0] == "0" and int(f[1], 16) in fds:
            return True
    return False


def wait_drained(proc, feeder, fifo, timeout, what):
    """Waits until everything written is read and the program waits in read() for more (twice, 50 ms apart)."""
    t0, ok = time.time(), 0
    fds = []
    while ok < 2:
        if proc.poll() is not None:
            raise RuntimeError(f"the program ended while {what}")
        if time.time() - t0 > timeout:
            raise RuntimeError(f"timed out {what}")
        fds = fds or fifo_fds(proc.pid, fifo)
        ok = ok + 1 if feeder.done() and feeder.pending() == 0 and fds and blocked_in_read(proc.pid, fds) else 0
        time.sleep(0.05)
    return time.time() - t0


def cgctl(*args):
    r = subprocess.run(["callgrind_control", *map(str, args)], capture_output=True, text=True, timeout=120)
    if r.returncode != 0:
        raise RuntimeError(f"callgrind_control {' '.join(map(str, args))}: {r.stdout}{r.stderr}")
    return r.stdout


def totals(path):
    """Ir of a callgrind file (its totals/summary line)."""
    ir = None
    with open(path) as f:
        for line in f:
            if line.startswith(("totals:", "summary:")):
                ir = int(line.split()[1])
    return ir


FUNC = re.compile(r"^\s*([\d,]+)\s+(?:\(\s*[\d.]+%\)\s+)?([<>*]?)\s*(\S.*?)(?: \([\d,]+x\))?(?: \[(.*)\])?$")


def annotate(path, inclusive):
    """[(Ir, function, object)] of callgrind_annotate, self or inclusive, every function (callgrind_annotate gives a
    row per function and source file, an inlined header apart: see by_function)."""
    out = subprocess.run(["callgrind_annotate", f"--inclusive={'yes' if inclusive else 'no'}", "--threshold=100", "--auto=no", path],
                         capture_output=True, text=True).stdout
    rows = []
    for line in out.splitlines():
        m = FUNC.match(line)
        if m and not m.group(2) and "PROGRAM TOTALS" not in line:
            rows.append((int(m.group(1).replace(",", "")), m.group(3).split(":", 1)[-1], m.group(4) or ""))
    return rows


def by_function(rows):
    """[(Ir, function, object)] summed over the rows of each function, largest first."""
    acc = {}
    for c, fn, obj in rows:
        ir, o = acc.get(fn, (0, ""))
        acc[fn] = (ir + c, o or obj)
    return sorted(((ir, fn, obj) for fn, (ir, obj) in acc.items()), reverse=True)


def callers(path, function):
    """{(function, object)} that call `function` (callgrind_annotate --tree=caller)."""
    out = subprocess.run(["callgrind_annotate", "--tree=caller", "--threshold=100", "--auto=no", path], capture_output=True,
                         text=True).stdout
    found, pending = set(), []
    for line in out.splitlines():
        m = FUNC.match(line)
        if not m:
            pending = []
            continue
        name = (m.group(3).split(":", 1)[-1], m.group(4) or "")
        if m.group(2) == "<":
            pending.append(name)
        elif m.group(2) == "*":
            if name[0] == function:
                found.update(pending)
            pending = []
    return found


def rx_ir(path, incl):
    """Inclusive Ir of net_pcap's rx function: eth_pcap_rx, or where the PMD has no symbols (Debian strips its
    static functions), whatever calls pcap_next_ex (only that function does)."""
    named = sum(c for c, fn, _ in incl if fn == "eth_pcap_rx")
    if named:
        return named
    rx = callers(path, "pcap_next_ex")
    return sum(c for c, fn, obj in incl if (fn, obj) in rx)


# Work done on a wall-clock period, not per packet (inclusive Ir): hpr ages idle flows every 10 ms of its loop.
TIMER = ("hpr::FlowTable::expire(",)


def run_case(name, cmd, hdr, recs, warmup, packets, workdir, lock, load_timeout, env=None):
    """One program under callgrind with the window of the module docstring: returns a dict of its figures."""
    d = os.path.join(workdir, name)
    shutil.rmtree(d, ignore_errors=True)
    os.makedirs(d)
    fifo = os.path.join(d, "rx.fifo")
    os.mkfifo(fifo)
    cmd = [c.replace("@FIFO@", fifo) for c in cmd]
    vg = ["valgrind", "--tool=callgrind", "--instr-atstart=no", "--vgdb=yes",
          f"--callgrind-out-file={d}/callgrind.out.%p"] + cmd
    lock_fd = None
    if lock:
        lock_fd = os.open(lock, os.O_RDWR | os.O_CREAT, 0o666)
        print(f"[{name}] waiting for the benchmark lock {lock}", file=sys.stderr, flush=True)
        fcntl.flock(lock_fd, fcntl.LOCK_EX)
    log = open(os.path.join(d, "program.log"), "w")
    t0 = time.time()
    proc = subprocess.Popen(vg, stdout=log, stderr=subprocess.STDOUT, env=env, cwd=d)
    feeder = None
    try:
        feeder = Feeder(fifo, proc, load_timeout)
        n = len(recs)
        feeder.write([hdr] + [recs[i % n] for i in range(warmup)])
        took = wait_drained(proc, feeder, fifo, load_timeout, "loading and forwarding the warm-up")
        print(f"[{name}] loaded and warm ({warmup} packets) after {time.time() - t0:.0f} s", file=sys.stderr, flush=True)
        cgctl("-i", "on", proc.pid)
        t1 = time.time()
        feeder.write([recs[i % n] for i in range(warmup, warmup + packets)])
        wait_drained(proc, feeder, fifo, max(load_timeout, 600), "forwarding the measured packets")
        window_s = time.time() - t1
        cgctl("-d", "window", proc.pid)
        cgctl("-i", "off", proc.pid)
        print(f"[{name}] {packets} packets instrumented in {window_s:.1f} s", file=sys.stderr, flush=True)
        feeder.close()
        time.sleep(0.5)
        proc.send_signal(signal.SIGINT)
        try:
            proc.wait(timeout=120)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
    finally:
        if feeder:
            feeder.close()
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        log.close()
        if lock_fd is not None:
            os.close(lock_fd)
    dumps = sorted(glob.glob(os.path.join(d, f"callgrind.out.{proc.pid}.*")))
    if not dumps:
        raise RuntimeError(f"{name}: no callgrind dump in {d}")
    window = dumps[0]
    ir = totals(window)
    incl = annotate(window, True)
    rx = rx_ir(window, incl)
    timer = max([c for c, fn, _ in incl if fn.startswith(TIMER)] or [0])
    return {"case": name, "packets": packets, "ir": ir, "ir_per_packet": ir / packets, "rx_ir_per_packet": rx / packets,
            "above_rx_per_packet": (ir - rx) / packets,
            "timer_per_packet": timer / packets, "rest_per_packet": (ir - rx - timer) / packets, "window_s": round(window_s, 1), "file": window,
            "log": os.path.join(d, "program.log")}


def counters_l3fwd(logpath):
    """(packets received, packets sent to net_null0) over the whole run: HPR_STATS of build_l3fwd.sh."""
    text = open(logpath, errors="replace").read()
    got = re.findall(r"HPR_STATS port=(\d+) opackets=(\d+) seconds=[\d.]+ ipackets=(\d+)", text)
    if not got:
        return None, None
    return sum(int(i) for _, _, i in got), sum(int(o) for p, o, _ in got if p == "1")


def counters_hpr(summary):
    """(packets received, packets sent to net_null0) over the whole run: hpr's summary."""
    try:
        s = json.load(open(summary))
        return s["rx"]["packets"], s["tx"]["packets"]
    except (OSError, ValueError, KeyError):
        return None, None


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--capture", default="", help="default: the 6,000-packet mix of vs_testpmd.make_mix")
    ap.add_argument("--cycles", type=int, default=8,
                    help="the window's packets in units of lcm(capture packets, 32), whole cycles of the capture")
    ap.add_argument("--packets", type=int, default=0, help="packets in the window, a multiple of 32 (instead of --cycles)")
    ap.add_argument("--warmup", type=int, default=0,
                    help="packets forwarded before the window, a multiple of 32 (default: the capture, rounded up)")
    ap.add_argument("--cases", default="hpr,l3fwd-lpm,l3fwd-em")
    ap.add_argument("--top", type=int, default=20, help="functions in hpr's tables")
    ap.add_argument("--build", default=os.path.join(ROOT, "build"), help="build folder with cli/hpr and bench/l3fwd/")
    ap.add_argument("--hpr", default="", help="hpr binary (default BUILD/cli/hpr)")
    ap.add_argument("--l3fwd", default="", help="l3fwd binary (default BUILD/bench/l3fwd/l3fwd, built when missing)")
    ap.add_argument("--lock", default=os.path.join(os.path.dirname(ROOT), "bench.lock"),
                    help="benchmark lock file taken while valgrind runs ('' for none; default ../bench.lock)")
    ap.add_argument("--load-timeout", type=float, default=600, help="seconds for start-up, table load and warm-up")
    ap.add_argument("--out", default=os.path.join(ROOT, "out", "runtime", "callgrind_ipp.csv"))
    a = ap.parse_args()
    for tool in ("valgrind", "callgrind_control", "callgrind_annotate", "editcap"):
        if not shutil.which(tool):
            sys.exit(f"callgrind_ipp: {tool} not found (apt-get install valgrind tshark; scripts/bench.sh installs them)")
    a.hpr = a.hpr or os.path.join(a.build, "cli", "hpr")
    a.l3fwd = a.l3fwd or os.path.join(a.build, "bench", "l3fwd", "l3fwd")
    outdir = os.path.dirname(os.path.abspath(a.out))
    os.makedirs(outdir, exist_ok=True)
    workdir = os.path.join(outdir, "callgrind")
    if a.lock and not os.path.exists(os.path.dirname(os.path.abspath(a.lock))):
        a.lock = ""
    if not a.capture:
        a.capture = vt.make_mix(os.path.join(outdir, "mix.pcap"))
    hdr, recs = read_records(a.capture)
    a.warmup = a.warmup or -(-len(recs) // BURST) * BURST
    a.packets = a.packets or a.cycles * len(recs) * BURST // math.gcd(len(recs), BURST)
    if a.warmup % BURST or a.packets % BURST:
        sys.exit(f"callgrind_ipp: --warmup and --packets must be multiples of {BURST}")
    cases = a.cases.split(",")
    if any(c.startswith("l3fwd") for c in cases) and not os.path.exists(a.l3fwd):
        if subprocess.run([os.path.join(ROOT, "bench", "runtime", "build_l3fwd.sh"), os.path.dirname(a.l3fwd)]).returncode:
            sys.exit("callgrind_ipp: no l3fwd (see the message above)")
    rules = vt.l3fwd_rules(outdir) if "l3fwd-lpm" in cases else ""
    commit = subprocess.run(["git", "-C", ROOT, "rev-parse", "--short", "HEAD"], capture_output=True, text=True).stdout.strip()
    print(f"capture {a.capture}: {len(recs)} packets; warm-up {a.warmup}, window {a.packets} packets; commit {commit}",
          flush=True)
    res = {}
    for case in cases:
        summary = os.path.join(workdir, case + ".summary.json")
        if case in ("hpr", "hpr-threaded"):
            cmd = vt.hpr_cmd(a.hpr, "net_pcap0,rx_pcap=@FIFO@", "ipv4", "none", 1, case == "hpr", 256, 0, summary)
        elif case in ("l3fwd-lpm", "l3fwd-em"):
            cmd = vt.l3fwd_cmd(a.l3fwd, "net_pcap0,rx_pcap=@FIFO@", case[6:], rules)
        else:
            sys.exit(f"callgrind_ipp: unknown case {case}")
        os.makedirs(workdir, exist_ok=True)
        r = run_case(case, cmd, hdr, recs, a.warmup, a.packets, workdir, a.lock, a.load_timeout)
        got, r["to_null_total"] = counters_hpr(summary) if case.startswith("hpr") else counters_l3fwd(r["log"])
        r["received_total"] = got
        if got != a.warmup + a.packets:
            print(f"[{case}] WARNING: the program counted {got} packets received, not {a.warmup + a.packets}; "
                  f"see {r['log']}", file=sys.stderr)
        res[case] = r
        print(f"[{case}] {r['ir']:,} Ir in the window: {r['ir_per_packet']:.1f} Ir/packet", flush=True)
    lpm = res.get("l3fwd-lpm", {}).get("ir_per_packet")
    em = res.get("l3fwd-em", {}).get("ir_per_packet")
    print(f"\n{'case':<12} {'packets':>7} {'Ir in window':>12} {'Ir/packet':>9} {'x lpm':>6} {'x em':>6} | "
          f"{'rx':>6} {'timer':>6} {'rest':>6} {'x lpm':>6} {'x em':>6} | {'received':>8} {'to null':>8}")
    rest_lpm = res.get("l3fwd-lpm", {}).get("rest_per_packet")
    rest_em = res.get("l3fwd-em", {}).get("rest_per_packet")
    for case, r in res.items():
        r["x_l3fwd_lpm"] = round(r["ir_per_packet"] / lpm, 3) if lpm else ""
        r["x_l3fwd_em"] = round(r["ir_per_packet"] / em, 3) if em else ""
        r["rest_x_l3fwd_lpm"] = round(r["rest_per_packet"] / rest_lpm, 3) if rest_lpm else ""
        r["rest_x_l3fwd_em"] = round(r["rest_per_packet"] / rest_em, 3) if rest_em else ""
        print(f"{case:<12} {r['packets']:7d} {r['ir']:12,d} {r['ir_per_packet']:9.1f} {r['x_l3fwd_lpm'] or 0:6.3f} "
              f"{r['x_l3fwd_em'] or 0:6.3f} | {r['rx_ir_per_packet']:6.1f} {r['timer_per_packet']:6.1f} "
              f"{r['rest_per_packet']:6.1f} {r['rest_x_l3fwd_lpm'] or 0:6.3f} {r['rest_x_l3fwd_em'] or 0:6.3f} | "
              f"{r['received_total'] or 0:8d} {r['to_null_total'] or 0:8d}")
    print("Ir/packet: all of the window over its packets; rx: net_pcap's rx function (libpcap's read, mbuf "
          "allocation, copy); timer: wall-clock work (hpr: FlowTable::expire); rest: the other two taken off. "
          "received / to null: the whole run's counters (warm-up included).")
    for case, r in res.items():
        if not case.startswith("hpr"):
            continue
        for inclusive in (False, True):
            rows = by_function(annotate(r["file"], inclusive))[:a.top]
            print(f"\n{case}: top {a.top} functions by {'inclusive' if inclusive else 'self'} Ir per packet")
            for c, fn, obj in rows:
                print(f"{c / r['packets']:9.1f}  {c / r['ir'] * 100:5.1f}%  {fn[:110]}  [{os.path.basename(obj)}]")
    fields = ["case", "packets", "ir", "ir_per_packet", "x_l3fwd_lpm", "x_l3fwd_em", "rx_ir_per_packet",
              "above_rx_per_packet", "timer_per_packet", "rest_per_packet", "rest_x_l3fwd_lpm", "rest_x_l3fwd_em",
              "warmup", "received_total", "to_null_total", "window_s", "commit", "file"]
    with open(a.out, "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=fields, extrasaction="ignore")
        w.writeheader()
        for r in res.values():
            w.writerow({**r, "warmup": a.warmup, "commit": commit,
                        **{k: round(r[k], 2) for k in fields if k.endswith("_per_packet")}})
    print(f"\nCSV: {a.out}")


if __name__ == "__main__":
    main()
