"""hpr report: this machine's energy-vs-throughput picture (issue 13; hetero-opencl-adaptive-scheduler Figs. 3-7).

Embedded in the hpr binary (cli/report_cmd.cpp runs it as `python3 -c SOURCE --hpr HPR_BINARY ARGS...`). For each
app it
  1. profiles every device alone and every combination over batch sizes (`hpr profile`: repeated, interleaved
     samples; median and spread per point) -- or takes a saved table (--table APP=FILE);
  2. runs the app over offered-rate steps three ways: learning mode under the energy policy (seeded with the table),
     all lanes all the time (static default weights), and for each step the best static configuration of the table
     (the least power that carries the step's rate);
and writes PNG plots, the CSVs behind them and report.md linking them. --from DIR re-plots an earlier report without
measuring. Every power figure names its source (rapl, nvml, model).
"""
import argparse
import csv
import json
import math
import os
import shutil
import subprocess
import sys
import time

APPS = ("ipv4", "dpi", "md5", "aes")
DEFAULT_FRACTIONS = "0.1,0.4,0.8,0.25,0.6"
STEP_SETTLE_S = 0.0  # every quantum of a step counts: the adaptive run's energy includes its adaptation


class ReportError(Exception):
    pass


# ---------------------------------------------------------------- statistics (common/hpr/median_spread.hpp)
def median(v):
    s = sorted(v)
    if not s:
        return 0.0
    r = 0.5 * (len(s) - 1)
    lo, hi = math.floor(r), math.ceil(r)
    return s[lo] + (s[hi] - s[lo]) * (r - lo)


def median_interval_rank(n):
    k = 1
    while 2 * (k + 1) <= n:
        below, term = 0.0, 2.0 ** -n
        for i in range(k + 1):
            below += term
            term = term * (n - i) / (i + 1)
        if 1 - 2 * below < 0.875:
            break
        k += 1
    return k


def median_spread(v):
    """Median and the half-width of its 87.5 % order-statistic confidence interval (the project's spread)."""
    s = sorted(v)
    if not s:
        return 0.0, 0.0
    k = median_interval_rank(len(s))
    return median(s), (s[len(s) - k] - s[k - 1]) / 2


# ---------------------------------------------------------------- progress
class Progress:
    """One line with a bar and the ETA of the whole report (planned stage durations, corrected as stages end)."""

    def __init__(self, planned_s, quiet):
        self.planned = max(planned_s, 1.0)
        self.done = 0.0
        self.quiet = quiet
        self.start = time.monotonic()
        self.tty = sys.stderr.isatty()

    def show(self, label, stage_elapsed, stage_planned):
        if self.quiet:
            return
        elapsed = time.monotonic() - self.start
        frac = min(0.99, (self.done + min(stage_elapsed, stage_planned)) / self.planned)
        eta = max(0.0, elapsed / frac - elapsed) if frac > 0.02 else self.planned - elapsed
        bar = "#" * int(30 * frac) + "." * (30 - int(30 * frac))
        line = f"[{bar}] {100 * frac:3.0f}%  {label:<38.38}  elapsed {fmt_s(elapsed)}  ETA {fmt_s(eta)}"
        if self.tty:
            sys.stderr.write("\r" + line)
        elif stage_elapsed == 0:
            sys.stderr.write(line + "\n")
        sys.stderr.flush()

    def stage_done(self, planned, actual):
        self.done += planned
        # Stages that ran long or short move the plan with them.
        self.planned = max(self.planned + (actual - planned), self.done + 1)

    def end(self):
        if not self.quiet and self.tty:
            sys.stderr.write("\n")


def fmt_s(s):
    s = int(round(s))
    return f"{s // 60}m{s % 60:02d}s" if s >= 60 else f"{s}s"


def run_hpr(ctx, args, label, planned_s, log_path):
    """Runs `hpr ARGS`, output to log_path, redrawing the progress bar; raises ReportError on failure."""
    t0 = time.monotonic()
    with open(log_path, "w") as log:
        log.write("$ hpr " + " ".join(quote(a) for a in args) + "\n")
        log.flush()
        p = subprocess.Popen([ctx.hpr] + args, stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                             env=ctx.env)
        ctx.progress.show(label, 0, planned_s)
        while True:
            try:
                rc = p.wait(timeout=0.5)
                break
            except subprocess.TimeoutExpired:
                ctx.progress.show(label, time.monotonic() - t0, planned_s)
            except KeyboardInterrupt:
                p.terminate()
                p.wait()
                raise
    ctx.progress.stage_done(planned_s, time.monotonic() - t0)
    if rc != 0:
        with open(log_path) as f:
            tail = f.readlines()[-6:]
        raise ReportError(f"{label}: `hpr {args[0]}` exited {rc}; its output is in {log_path}:\n" + "".join(tail))
    return time.monotonic() - t0


def quote(a):
    return a if a and all(c.isalnum() or c in "-_.:/=,+" for c in a) else "'" + a.replace("'", "'\\''") + "'"


# ---------------------------------------------------------------- tables
def load_table(path):
    try:
        with open(path) as f:
            t = json.load(f)
    except (OSError, ValueError) as e:
        raise ReportError(f"table {path}: {e}")
    if t.get("format") != "hpr-config-table" or not isinstance(t.get("points"), list):
        raise ReportError(f"table {path}: not an hpr configuration table (hpr profile -o / learned-APP.json)")
    return t


def lane_names(table):
    return [d.get("name", f"device{i}") for i, d in enumerate(table.get("fingerprint", {}).get("devices", []))]


def short_name(name):
    if name.startswith("native"):
        return name
    for sep in ("-", " "):
        if sep in name:
            name = name.split(sep)[0]
    return name[:16]


def flatten(table):
    """One row per table point: the device set, its batch, throughput / latency / power with spreads."""
    names = lane_names(table)
    rows = []
    for pt in table["points"]:
        devs = sorted(pt.get("devices", []), key=lambda d: d.get("device", 0))
        if not devs:
            continue
        idx = [d["device"] for d in devs]
        label = "+".join(short_name(names[i]) if i < len(names) else f"lane{i}" for i in idx)
        thr = pt.get("throughput_bps", 0.0)
        pw = pt.get("power_w", 0.0)
        rows.append({
            "set": label,
            "lanes": idx,
            "size": len(idx),
            "batch": max(d.get("batch", 0) for d in devs),
            "split": "/".join(f"{d.get('split', 0):.2f}" for d in devs),
            "splits": [d.get("split", 0.0) for d in devs],
            "batches": [d.get("batch", 0) for d in devs],
            "gbps": thr / 1e9,
            "gbps_spread": pt.get("throughput_spread_bps", 0.0) / 1e9,
            "lat_us": pt.get("latency_ns", 0.0) / 1e3,
            "lat_p99_us": pt.get("latency_p99_ns", 0.0) / 1e3,
            "power_w": pw,
            "power_spread_w": pt.get("power_spread_w", 0.0),
            "j_per_mbit": pw / (thr / 1e6) if thr > 0 else float("inf"),
            "source": pt.get("power_source", "?"),
            "samples": pt.get("samples", 1),
        })
    return rows


def best_per_batch(rows):
    """For each (device set, batch) the split with the highest throughput (the paper plots the best split)."""
    best = {}
    for r in rows:
        k = (r["set"], r["batch"])
        if k not in best or r["gbps"] > best[k]["gbps"]:
            best[k] = r
    return sorted(best.values(), key=lambda r: (r["size"], r["set"], r["batch"]))


def pareto_front(rows):
    """Points no other point beats on both throughput (higher) and power (lower)."""
    front, top = [], -1.0
    for r in sorted(rows, key=lambda r: (r["power_w"], -r["gbps"])):
        if r["gbps"] > top:
            front.append(r)
            top = r["gbps"]
    return front


def write_csv(path, rows, cols):
    with open(path, "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(cols)
        for r in rows:
            w.writerow([fmt_cell(r.get(c, "")) for c in cols])


def fmt_cell(v):
    if isinstance(v, float):
        return f"{v:.6g}"
    if isinstance(v, list):
        return "/".join(str(x) for x in v)
    return v


POINT_COLS = ["set", "size", "batch", "split", "gbps", "gbps_spread", "lat_us", "lat_p99_us", "power_w",
              "power_spread_w", "j_per_mbit", "source", "samples"]


# ---------------------------------------------------------------- runs over rate steps
def read_quanta(path):
    with open(path, newline="") as f:
        return [r for r in csv.DictReader(f)]


def step_figures(rows, start_s, dur_s):
    """Median and spread of one step's quanta (achieved Gbit/s, power W, p99 µs) and its energy (J)."""
    sel = [r for r in rows if start_s + STEP_SETTLE_S < float(r["t_s"]) <= start_s + dur_s]
    if not sel:
        return None
    ach = [float(r["achieved_bps"]) / 1e9 for r in sel]
    off = [float(r["offered_bps"]) / 1e9 for r in sel]
    pw = [float(r["power_w"]) for r in sel]
    p99 = [float(r["lat_p99_us"]) for r in sel]
    lost = sum(int(r["lost_pkts"]) for r in sel)
    a, a_s = median_spread(ach)
    p, p_s = median_spread(pw)
    # Energy over the step: mean power × the step's length (each quantum's power is its interval's mean).
    energy = sum(pw) / len(pw) * dur_s
    return {"quanta": len(sel), "offered_gbps": median(off), "achieved_gbps": a, "achieved_spread": a_s,
            "power_w": p, "power_spread_w": p_s, "energy_j": energy, "p99_us": median(p99), "lost_pkts": lost,
            "source": sel[0]["power_source"]}


def static_args(table, row):
    """`hpr run` flags that run one table point as a static configuration (its lanes, shares and batch)."""
    names = lane_names(table)
    cl = [names[i] for i in row["lanes"] if i < len(names) and not names[i].startswith("native")]
    natives = [names[i] for i in row["lanes"] if i < len(names) and names[i].startswith("native")]
    n_native = max([int(n[len("native"):] or 0) + 1 for n in natives], default=0)
    args = ["--static", "--devices", ",".join(cl) if cl else "none", "--native", str(n_native),
            "--batch", str(max(row["batch"], 1))]
    for i, share in zip(row["lanes"], row["splits"]):
        args += ["--weight", f"{names[i]}={max(share, 0.0):.4f}"]
    for k in range(n_native):  # native lanes the point does not use carry nothing
        if f"native{k}" not in natives:
            args += ["--weight", f"native{k}=0"]
    return args


def best_static_for(rows, offered_gbps):
    """The point that surely carries the offered rate (throughput less its spread) at the least power it may draw
    (power plus its spread: a noisy point is not chosen on a lucky median); else the fastest."""
    carry = [r for r in rows if r["gbps"] - r["gbps_spread"] >= offered_gbps]
    if carry:
        return min(carry, key=lambda r: (r["power_w"] + r["power_spread_w"], -r["gbps"])), True
    return max(rows, key=lambda r: r["gbps"]), False


# ---------------------------------------------------------------- plots
def plt_module():
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
        return plt
    except ImportError:
        raise ReportError("hpr report needs matplotlib for its plots (Debian: apt install python3-matplotlib)")


def set_colours(sets):
    import matplotlib
    cmap = matplotlib.colormaps["tab10"]
    return {s: cmap(i % 10) for i, s in enumerate(sets)}


def plot_batch(plt, app, rows, source, out):
    """Figs. 3-4: throughput, latency and power against batch size, one line per device set (best split)."""
    best = best_per_batch(rows)
    sets = list(dict.fromkeys(r["set"] for r in best))
    col = set_colours(sets)
    fig, ax = plt.subplots(1, 3, figsize=(15, 4.4))
    for s in sets:
        pts = [r for r in best if r["set"] == s]
        b = [r["batch"] for r in pts]
        ls = "-" if pts[0]["size"] == 1 else "--"
        ax[0].errorbar(b, [r["gbps"] for r in pts], yerr=[r["gbps_spread"] for r in pts], color=col[s], ls=ls,
                       marker="o", ms=3, capsize=2, label=s)
        ax[1].plot(b, [r["lat_us"] for r in pts], color=col[s], ls=ls, marker="o", ms=3)
        ax[1].plot(b, [r["lat_p99_us"] for r in pts], color=col[s], ls=":", alpha=0.6)
        ax[2].errorbar(b, [r["power_w"] for r in pts], yerr=[r["power_spread_w"] for r in pts], color=col[s], ls=ls,
                       marker="o", ms=3, capsize=2)
    for a, t in zip(ax, ["throughput (Gbit/s)", "latency median, p99 dotted (µs)", f"power (W, {source})"]):
        a.set_xscale("log", base=2)
        a.set_xlabel("batch (packets)")
        a.set_title(t, fontsize=10)
        a.grid(alpha=0.3)
    ax[1].set_yscale("log")
    ax[0].legend(fontsize=7, loc="best")
    fig.suptitle(f"{app}: solo devices (solid) and combinations (dashed, best split per batch); bars: spread")
    fig.tight_layout()
    fig.savefig(out, dpi=110)
    plt.close(fig)


def plot_efficiency(plt, app, rows, source, out):
    """Figs. 5-6: energy per Mbit against batch size, one line per device set."""
    best = best_per_batch(rows)
    sets = list(dict.fromkeys(r["set"] for r in best))
    col = set_colours(sets)
    fig, ax = plt.subplots(figsize=(7.5, 4.4))
    for s in sets:
        pts = [r for r in best if r["set"] == s and math.isfinite(r["j_per_mbit"])]
        if pts:
            ax.plot([r["batch"] for r in pts], [r["j_per_mbit"] * 1e3 for r in pts], color=col[s],
                    ls="-" if pts[0]["size"] == 1 else "--", marker="o", ms=3, label=s)
    ax.set_xscale("log", base=2)
    ax.set_xlabel("batch (packets)")
    ax.set_ylabel(f"energy per Mbit (mJ, {source} power; lower is better)")
    ax.grid(alpha=0.3)
    ax.legend(fontsize=7)
    ax.set_title(f"{app}: energy efficiency per device set")
    fig.tight_layout()
    fig.savefig(out, dpi=110)
    plt.close(fig)


def plot_pareto(plt, app, rows, front, source, out):
    """Throughput against power of every measured configuration, and the Pareto front."""
    sets = list(dict.fromkeys(r["set"] for r in sorted(rows, key=lambda r: (r["size"], r["set"]))))
    col = set_colours(sets)
    fig, ax = plt.subplots(figsize=(7.5, 5))
    for s in sets:
        pts = [r for r in rows if r["set"] == s]
        ax.errorbar([r["power_w"] for r in pts], [r["gbps"] for r in pts],
                    xerr=[r["power_spread_w"] for r in pts], yerr=[r["gbps_spread"] for r in pts], fmt="o", ms=4,
                    color=col[s], alpha=0.75, elinewidth=0.7, label=s)
    ax.step([r["power_w"] for r in front], [r["gbps"] for r in front], where="post", color="k", lw=1.2,
            label="Pareto front")
    for r in front:
        ax.annotate(f"b{r['batch']}", (r["power_w"], r["gbps"]), fontsize=6, xytext=(3, -8),
                    textcoords="offset points")
    ax.set_xlabel(f"power (W, {source})")
    ax.set_ylabel("throughput (Gbit/s)")
    ax.grid(alpha=0.3)
    ax.legend(fontsize=7)
    ax.set_title(f"{app}: throughput against power, every configuration measured")
    fig.tight_layout()
    fig.savefig(out, dpi=110)
    plt.close(fig)


def parse_setup_weights(s):
    """'w 0.33/0.00/0.67 b 256/512/256' -> [0.33, 0.0, 0.67]."""
    parts = s.split()
    if len(parts) >= 2 and parts[0] == "w":
        try:
            return [float(x) for x in parts[1].split("/")]
        except ValueError:
            return None
    return None


def plot_steps(plt, app, plan, runs, source, names, out):
    """Fig. 7: offered and achieved rate, power and p99 latency over the rate steps; the learner's lane shares."""
    fig, ax = plt.subplots(4, 1, figsize=(10, 10), sharex=True,
                           gridspec_kw={"height_ratios": [3, 3, 2, 2]})
    ad = runs["adaptive"]
    t = [float(r["t_s"]) for r in ad]
    ax[0].plot(t, [float(r["offered_bps"]) / 1e9 for r in ad], color="0.5", lw=1, label="offered")
    styles = {"adaptive": ("C0", "-"), "all_lanes": ("C3", "--"), "best_static": ("C2", "-.")}
    labels = {"adaptive": f"learning ({plan['policy']} policy)", "all_lanes": "all lanes all the time",
              "best_static": "best static per step"}
    for k, rows in runs.items():
        if not rows:
            continue
        c, ls = styles[k]
        tt = [float(r["t_s"]) for r in rows]
        ax[0].plot(tt, [float(r["achieved_bps"]) / 1e9 for r in rows], color=c, ls=ls, lw=1, label=labels[k])
        ax[1].plot(tt, [float(r["power_w"]) for r in rows], color=c, ls=ls, lw=1, label=labels[k])
        ax[2].plot(tt, [max(float(r["lat_p99_us"]), 1e-3) for r in rows], color=c, ls=ls, lw=1)
    ax[0].set_ylabel("Gbit/s")
    ax[0].legend(fontsize=7, loc="upper right")
    ax[1].set_ylabel(f"power (W, {source})")
    ax[2].set_ylabel("p99 latency (µs)")
    ax[2].set_yscale("log")
    # Lane shares the learner ran with, stacked.
    w = [parse_setup_weights(r["setup"]) for r in ad]
    n = max((len(x) for x in w if x), default=0)
    if n:
        ys = [[(x[i] if x and i < len(x) else 0.0) for x in w] for i in range(n)]
        ax[3].stackplot(t, ys, labels=[short_name(names[i]) if i < len(names) else f"lane{i}" for i in range(n)],
                        alpha=0.8)
        ax[3].legend(fontsize=7, loc="upper right", ncol=n)
    ax[3].set_ylabel("learner's shares")
    ax[3].set_xlabel("time (s)")
    start = 0.0
    for st in plan["steps"]:
        for a in ax:
            a.axvline(start, color="0.85", lw=0.8, zorder=0)
        start += st["seconds"]
    for a in ax:
        a.grid(alpha=0.3)
    fig.suptitle(f"{app}: offered-rate steps (the paper's Fig. 7)")
    fig.tight_layout()
    fig.savefig(out, dpi=110)
    plt.close(fig)


# ---------------------------------------------------------------- one app
class Ctx:
    pass


def traffic_args(opts, app, lanes=True):
    """The app and traffic flags of every run; lanes=False leaves out --devices and --native, for a run whose lanes
    static_args names (hpr run's --devices is a list: a second one was appended, and "all" then read as a device)."""
    a = ["--app", app]
    if lanes and opts.devices:
        a += ["--devices", opts.devices]
    if lanes and opts.native is not None:
        a += ["--native", str(opts.native)]
    if opts.sizes:
        a += ["--sizes", opts.sizes]
    return a


def measure_app(ctx, app, adir, budget_s, table_path):
    opts = ctx.opts
    logs = os.path.join(adir, "logs")
    os.makedirs(logs, exist_ok=True)
    plan = {"app": app, "policy": opts.policy, "commands": []}
    tr = traffic_args(opts, app)

    # 1. the table
    prof_s = 0.0 if table_path else max(5.0, 0.45 * budget_s)
    if table_path:
        shutil.copyfile(table_path, os.path.join(adir, "table.json"))
        plan["table_from"] = table_path
    else:
        args = ["profile"] + tr + ["--budget-s", f"{prof_s:.0f}", "--max-batch", str(opts.max_batch), "-q", "-o",
                                   os.path.join(adir, "table.json")]
        plan["commands"].append(args)
        run_hpr(ctx, args, f"{app}: profile (budget {prof_s:.0f} s)", prof_s + 3, os.path.join(logs, "profile.log"))
    table = load_table(os.path.join(adir, "table.json"))
    rows = flatten(table)
    if not rows:
        raise ReportError(f"{app}: the table holds no point")

    # 2. the mean frame of this traffic (to turn Gbit/s into the generator's packets/s), and the start-up time
    cal = os.path.join(adir, "calibrate.json")
    args = ["run"] + tr + ["--static", "--packets", "0", "--rate-pps", "20000", "--duration", "1", "-q",
                           "--state-dir", "none", "--summary-json", cal]
    wall = run_hpr(ctx, args, f"{app}: calibrate", 4, os.path.join(logs, "calibrate.log"))
    with open(cal) as f:
        s = json.load(f)
    if not s["rx"]["packets"]:
        raise ReportError(f"{app}: the calibration run received no packet (see {logs}/calibrate.log)")
    frame_bytes = s["rx"]["bytes"] / s["rx"]["packets"]
    startup_s = max(0.5, wall - s["seconds"])

    # 3. the steps
    top = max(rows, key=lambda r: r["gbps"])
    fracs = [float(x) for x in opts.steps.split(",")]
    left = budget_s - prof_s
    n_runs = 2 + len(fracs)
    step_s = opts.step_s or min(8.0, max(2.0, (left - n_runs * startup_s) / (3 * len(fracs))))
    steps = []
    for f in fracs:
        gbps = f * top["gbps"]
        pps = max(1, int(gbps * 1e9 / (8 * frame_bytes)))
        steps.append({"fraction": f, "offered_gbps": gbps, "pps": pps, "seconds": step_s})
    plan.update({"frame_bytes": frame_bytes, "steps": steps, "top_gbps": top["gbps"], "top_set": top["set"]})
    spec = ",".join(f"{st['seconds']:g}:{st['pps']}" for st in steps)
    total_s = step_s * len(steps)

    # 3a. learning mode, seeded with the table (the same format as its saved state)
    state = os.path.join(adir, "state")
    os.makedirs(state, exist_ok=True)
    shutil.copyfile(os.path.join(adir, "table.json"), os.path.join(state, f"learned-{app}.json"))
    common = ["--packets", "0", "--rate-steps", spec, "-q", "--backpressure", "off"]
    args = ["run"] + tr + common + ["--policy", opts.policy, "--state-dir", state, "--adapt-csv",
                                    os.path.join(adir, "adaptive.csv"), "--summary-json",
                                    os.path.join(adir, "adaptive.json")]
    plan["commands"].append(args)
    run_hpr(ctx, args, f"{app}: learning over {len(steps)} steps", total_s + startup_s,
            os.path.join(logs, "adaptive.log"))
    # 3b. all lanes all the time
    args = ["run"] + tr + common + ["--static", "--state-dir", "none", "--adapt-csv",
                                    os.path.join(adir, "all_lanes.csv"), "--summary-json",
                                    os.path.join(adir, "all_lanes.json")]
    plan["commands"].append(args)
    run_hpr(ctx, args, f"{app}: all lanes over the steps", total_s + startup_s, os.path.join(logs, "all_lanes.log"))
    # 3c. the best static configuration of each step, one run a step
    for i, st in enumerate(steps):
        row, carries = best_static_for(rows, st["offered_gbps"])
        st["best_static"] = {"set": row["set"], "batch": row["batch"], "split": row["split"], "carries": carries,
                             "table_gbps": row["gbps"], "table_power_w": row["power_w"]}
        args = (["run"] + traffic_args(opts, app, lanes=False) + static_args(table, row) +
                ["--packets", "0", "--rate-pps", str(st["pps"]), "--duration", f"{st['seconds']:g}", "-q",
                 "--backpressure", "off", "--state-dir", "none", "--adapt-csv",
                 os.path.join(adir, f"best_static_{i}.csv")])
        plan["commands"].append(args)
        run_hpr(ctx, args, f"{app}: best static, step {i + 1}/{len(steps)}", st["seconds"] + startup_s,
                os.path.join(logs, f"best_static_{i}.log"))
    with open(os.path.join(adir, "plan.json"), "w") as f:
        json.dump(plan, f, indent=1)


def analyse_app(app, adir):
    """Reads what measure_app wrote (or an earlier report's), writes CSVs and plots; returns the page section."""
    plt = plt_module()
    with open(os.path.join(adir, "plan.json")) as f:
        plan = json.load(f)
    table = load_table(os.path.join(adir, "table.json"))
    rows = flatten(table)
    names = lane_names(table)
    runs = {"adaptive": read_quanta(os.path.join(adir, "adaptive.csv")),
            "all_lanes": read_quanta(os.path.join(adir, "all_lanes.csv"))}
    # The runs' quanta name the whole source ("mixed: nvml+model"); a table point names one (a mix with the model
    # is "model" there).
    sources = sorted({q["power_source"] for k in runs for q in runs[k] if q.get("power_source")}) or \
        sorted(set(r["source"] for r in rows))
    source = "/".join(sources)
    front = pareto_front(rows)
    write_csv(os.path.join(adir, "points.csv"), rows, POINT_COLS)
    write_csv(os.path.join(adir, "pareto.csv"), front, POINT_COLS)
    plot_batch(plt, app, rows, source, os.path.join(adir, "batch.png"))
    plot_efficiency(plt, app, rows, source, os.path.join(adir, "efficiency.png"))
    plot_pareto(plt, app, rows, front, source, os.path.join(adir, "pareto.png"))

    steps = plan["steps"]
    best_rows, start, table_rows = [], 0.0, []
    for i, st in enumerate(steps):
        fig = {}
        for k in ("adaptive", "all_lanes"):
            fig[k] = step_figures(runs[k], start, st["seconds"])
        bs = read_quanta(os.path.join(adir, f"best_static_{i}.csv"))
        fig["best_static"] = step_figures(bs, 0.0, st["seconds"])
        for r in bs:  # on the steps' time axis, for the plot
            r = dict(r)
            r["t_s"] = str(float(r["t_s"]) + start)
            best_rows.append(r)
        table_rows.append((st, fig))
        start += st["seconds"]
    runs["best_static"] = best_rows
    plot_steps(plt, app, plan, runs, source, names, os.path.join(adir, "steps.png"))

    step_csv = []
    for i, (st, fig) in enumerate(table_rows):
        for k in ("adaptive", "best_static", "all_lanes"):
            f = fig[k] or {}
            step_csv.append(dict({"step": i + 1, "run": k, "offered_target_gbps": st["offered_gbps"]}, **f))
    write_csv(os.path.join(adir, "steps.csv"), step_csv,
              ["step", "run", "offered_target_gbps", "offered_gbps", "achieved_gbps", "achieved_spread", "power_w",
               "power_spread_w", "energy_j", "p99_us", "lost_pkts", "quanta", "source"])
    return section(app, plan, table, rows, front, table_rows, source)


def ratio(a, b):
    return f"{a / b:.2f}" if a and b else "–"


def section(app, plan, table, rows, front, table_rows, source):
    L = [f"## {app}", ""]
    fp = table.get("fingerprint", {})
    L.append(f"Lanes: {', '.join(lane_names(table))}. Traffic: {fp.get('traffic', '?')}, mean frame "
             f"{plan['frame_bytes']:.0f} bytes. Power source: **{source}**"
             + (" (a model: no sensor on this machine; energy figures are model estimates)" if source == "model"
                else " (the lanes without a sensor are modelled: their part of each figure is an estimate)"
                if "model" in source else "") + ".")
    L.append("")
    solo = [r for r in rows if r["size"] == 1]
    if solo:
        fast = max(solo, key=lambda r: r["gbps"])
        eff = min(solo, key=lambda r: r["j_per_mbit"])
        L.append(f"Fastest single lane: **{fast['set']}** at batch {fast['batch']}, {fast['gbps']:.2f} ± "
                 f"{fast['gbps_spread']:.2f} Gbit/s. Most efficient single lane: **{eff['set']}** at batch "
                 f"{eff['batch']}, {eff['j_per_mbit'] * 1e3:.2f} mJ/Mbit. Fastest of all: **{plan['top_set']}** "
                 f"{plan['top_gbps']:.2f} Gbit/s. {len(rows)} configurations, medians of "
                 f"{int(median([r['samples'] for r in rows]))} interleaved samples (median count).")
        L.append("")
    L += ["| throughput and latency and power against batch (Figs. 3–4) | energy per Mbit (Figs. 5–6) |",
          "|---|---|", "| ![](" + app + "/batch.png) | ![](" + app + "/efficiency.png) |", ""]
    L += [f"![throughput against power]({app}/pareto.png)", "", "Pareto front (least power for its throughput):", "",
          "| device set | batch | split | Gbit/s | W | mJ/Mbit |", "|---|---|---|---|---|---|"]
    for r in front:
        L.append(f"| {r['set']} | {r['batch']} | {r['split']} | {r['gbps']:.2f} ± {r['gbps_spread']:.2f} | "
                 f"{r['power_w']:.1f} ± {r['power_spread_w']:.1f} | {r['j_per_mbit'] * 1e3:.2f} |")
    L += ["", f"### Offered-rate steps ({plan['policy']} policy; the paper's Fig. 7)", "",
          f"![rate steps]({app}/steps.png)", "",
          "Per step: achieved Gbit/s and power are medians ± spreads of the step's 40 ms quanta; energy is the "
          "step's mean power × its length, including the learner's adaptation. Best static = the table's "
          "configuration that carries the step's rate (throughput less its spread) at the least power (plus its "
          "spread), run alone at that rate.", "",
          "| step | offered Gbit/s | learning Gbit/s | W | best static (set, batch) | Gbit/s | W | all lanes "
          "Gbit/s | W | energy learning ÷ best static | all lanes ÷ learning |",
          "|---|---|---|---|---|---|---|---|---|---|---|"]
    for i, (st, fig) in enumerate(table_rows):
        a, b, c = fig["adaptive"] or {}, fig["best_static"] or {}, fig["all_lanes"] or {}
        bs = st.get("best_static", {})
        tag = "" if bs.get("carries", True) else " (none carries it: fastest)"
        L.append(f"| {i + 1} | {st['offered_gbps']:.2f} | {a.get('achieved_gbps', 0):.2f} | "
                 f"{a.get('power_w', 0):.1f} | {bs.get('set', '?')}, {bs.get('batch', '?')}{tag} | "
                 f"{b.get('achieved_gbps', 0):.2f} | {b.get('power_w', 0):.1f} | {c.get('achieved_gbps', 0):.2f} | "
                 f"{c.get('power_w', 0):.1f} | {ratio(a.get('energy_j'), b.get('energy_j'))} | "
                 f"{ratio(c.get('energy_j'), a.get('energy_j'))} |")
    L += ["", f"Data: [points]({app}/points.csv), [Pareto front]({app}/pareto.csv), [steps]({app}/steps.csv), "
          f"quanta: [learning]({app}/adaptive.csv), [all lanes]({app}/all_lanes.csv); the table: "
          f"[{app}/table.json]({app}/table.json); commands and their output: {app}/plan.json, {app}/logs/.", ""]
    return "\n".join(L)


# ---------------------------------------------------------------- main
def parse_args(argv):
    p = argparse.ArgumentParser(
        prog="hpr report",
        description="Measure this machine and write its energy-vs-throughput report: per app, throughput, latency "
                    "and power against batch size per device and combination (the paper's Figs. 3-6), throughput "
                    "against power with the Pareto front, and learning mode against all lanes and the best static "
                    "configuration over offered-rate steps (Fig. 7). PNG plots (matplotlib), the CSVs behind them "
                    "and report.md linking them.",
        epilog="Exit codes: 0 written; 2 bad arguments; 3 a run failed or an output could not be written.")
    p.add_argument("--hpr", required=True, help=argparse.SUPPRESS)
    p.add_argument("--app", default=",".join(APPS), help="apps, comma-separated (default: all four)")
    p.add_argument("-o", "--out", default="hpr-report", help="output directory (default hpr-report)")
    p.add_argument("--budget-s", type=float, default=600,
                   help="time budget of the whole report in seconds, shared by the apps (default 600)")
    p.add_argument("--from", dest="from_dir", default="",
                   help="re-plot an earlier report's directory (its tables and CSVs) without measuring")
    p.add_argument("--table", action="append", default=[], metavar="APP=FILE",
                   help="use this saved table (hpr profile -o, or a learned-APP.json state file) instead of profiling")
    p.add_argument("--policy", default="energy", choices=["energy", "throughput", "latency"],
                   help="learning mode's policy over the rate steps (default energy, as in the paper's Fig. 7)")
    p.add_argument("--steps", default=DEFAULT_FRACTIONS,
                   help=f"offered rates as fractions of the fastest configuration measured (default {DEFAULT_FRACTIONS})")
    p.add_argument("--step-s", type=float, default=0, help="seconds per step (default: from the budget, 2..8)")
    p.add_argument("--max-batch", type=int, default=4096, help="largest batch profiled (default 4096)")
    p.add_argument("--devices", default="", help="OpenCL devices (hpr run --devices; default all)")
    p.add_argument("--native", type=int, default=None, help="native lanes (default 1)")
    p.add_argument("--sizes", default="", help="generator frame sizes: imix | fixed:N | uniform:A-B (default imix)")
    p.add_argument("-q", "--quiet", action="store_true", help="no progress bar")
    o = p.parse_args(argv)
    apps = [a.strip() for a in o.app.split(",") if a.strip()]
    bad = [a for a in apps if a not in APPS]
    if bad or not apps:
        p.error(f"--app: unknown app {', '.join(bad) or '(none)'}; known: {', '.join(APPS)}")
    o.apps = apps
    if not (math.isfinite(o.budget_s) and o.budget_s >= 10):
        p.error(f"--budget-s: {o.budget_s} is not a number of seconds >= 10")
    if o.step_s and not (math.isfinite(o.step_s) and 0.5 <= o.step_s <= 600):
        p.error(f"--step-s: {o.step_s} is not in 0.5..600")
    try:
        fr = [float(x) for x in o.steps.split(",")]
    except ValueError:
        fr = []
    if not fr or any(not (math.isfinite(x) and 0 < x <= 2) for x in fr):
        p.error(f"--steps: '{o.steps}' is not a comma-separated list of fractions in (0, 2]")
    if o.max_batch < 1 or o.max_batch & (o.max_batch - 1) or o.max_batch > 65536:
        p.error(f"--max-batch: {o.max_batch} is not a power of two in 1..65536")
    o.tables = {}
    for t in o.table:
        app, sep, path = t.partition("=")
        if not sep or app not in APPS:
            p.error(f"--table: '{t}' is not APP=FILE with APP one of {', '.join(APPS)}")
        if not os.path.isfile(path):
            p.error(f"--table: {path}: not a readable file")
        o.tables[app] = path
    if o.from_dir and not os.path.isdir(o.from_dir):
        p.error(f"--from: {o.from_dir}: not a directory")
    return o


def main(argv):
    opts = parse_args(argv)
    ctx = Ctx()
    ctx.opts = opts
    ctx.hpr = opts.hpr
    ctx.env = dict(os.environ)
    if "aes" in opts.apps and not ctx.env.get("HPR_MASTER_KEY"):
        ctx.env["HPR_MASTER_KEY"] = os.urandom(16).hex()  # a fresh key for the runs, never written anywhere
    src = opts.from_dir or opts.out
    try:
        plt_module()  # before anything is measured: a missing matplotlib is said at once
        os.makedirs(opts.out, exist_ok=True)
        if not opts.from_dir:
            per_app = opts.budget_s / len(opts.apps)
            ctx.progress = Progress(opts.budget_s, opts.quiet)
            for app in opts.apps:
                measure_app(ctx, app, os.path.join(opts.out, app), per_app, opts.tables.get(app))
            ctx.progress.end()
        elif os.path.abspath(opts.from_dir) != os.path.abspath(opts.out):
            for app in opts.apps:
                if os.path.isdir(os.path.join(opts.from_dir, app)):
                    shutil.copytree(os.path.join(opts.from_dir, app), os.path.join(opts.out, app),
                                    dirs_exist_ok=True)
        sections = []
        for app in opts.apps:
            adir = os.path.join(opts.out, app)
            if not os.path.isfile(os.path.join(adir, "plan.json")):
                raise ReportError(f"{adir}: no plan.json (was this app measured? {src})")
            sections.append(analyse_app(app, adir))
        page = ["# hpr report", "",
                f"Written {time.strftime('%Y-%m-%d %H:%M:%S')} by `hpr report` ({', '.join(opts.apps)}). "
                "Every figure is a median of repeated, interleaved samples with its spread (the half-width of "
                "the median's 87.5 % confidence interval). Power figures name their source: rapl and nvml are "
                "measured, model is hpr's power model (no sensor) and says only what the model says.", ""]
        tmp = os.path.join(opts.out, ".report.md.tmp")
        with open(tmp, "w") as f:
            f.write("\n".join(page + sections) + "\n")
        os.replace(tmp, os.path.join(opts.out, "report.md"))
        print(f"hpr report: {os.path.join(opts.out, 'report.md')} ({len(opts.apps)} apps; plots and CSVs under "
              f"{opts.out}/APP/)")
        return 0
    except ReportError as e:
        if getattr(ctx, "progress", None):
            ctx.progress.end()
        print(f"hpr report: {e}", file=sys.stderr)
        return 3
    except OSError as e:
        print(f"hpr report: {e.filename or ''}: {e.strerror}", file=sys.stderr)
        return 3
    except KeyboardInterrupt:
        print("\nhpr report: interrupted", file=sys.stderr)
        return 130


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
