#!/usr/bin/python3
"""Plots for the shaper reproduction (docs/shaper.md) from the CSVs of shaper_sim and
shaper_heap_bench. Usage: bench/shaper/plot_shaper.py [out/shaper]  -> PNGs beside the CSVs
(scale, heap_ns, model, overload, conformance, cost)."""
import csv
import os
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402


def rows(d, name):
    p = os.path.join(d, name)
    if not os.path.exists(p):
        return []
    with open(p) as f:
        return list(csv.DictReader(f))


def fl(r, k):
    return float(r[k])


def main():
    d = sys.argv[1] if len(sys.argv) > 1 else "out/shaper"
    made = []

    def save(fig, name):
        fig.tight_layout()
        fig.savefig(os.path.join(d, name), dpi=110)
        made.append(name)

    sc = rows(d, "scale.csv")
    if sc:
        q = [fl(r, "queues") for r in sc]
        fig, ax = plt.subplots(1, 2, figsize=(11, 4))
        for k, lab in [("periodic_100us", "periodic 100 us"), ("periodic_1ms", "periodic 1 ms"),
                       ("periodic_10ms", "periodic 10 ms"), ("event_touches", "event-driven (all heap + wake RMW)"),
                       ("heap_touches_beyond_8k", "event-driven, heap beyond 8 KB locked")]:
            ax[0].loglog(q, [max(fl(r, k), 1) for r in sc], marker="o", label=lab)
        ax[0].set_xlabel("queues sharing 100 Gbit/s")
        ax[0].set_ylabel("memory touches in 10 s")
        ax[0].set_title("§5.1.1 memory touches (paper Fig. 7, Table II)")
        ax[0].legend(fontsize=7)
        ax[1].semilogx(q, [fl(r, "heap_avg_per_core") for r in sc], marker="o", label="average per core")
        ax[1].semilogx(q, [fl(r, "heap_max_per_core") for r in sc], marker="s", label="maximum per core")
        ax[1].axhline(630, ls=":", c="gray", label="paper avg ~630 (1M)")
        ax[1].axhline(900, ls="--", c="gray", label="paper max ~900 (1M)")
        ax[1].set_xlabel("queues")
        ax[1].set_ylabel("heap nodes")
        ax[1].set_title("§5.1.2 heap size per core (paper Fig. 8)")
        ax[1].legend(fontsize=7)
        save(fig, "scale.png")

    hb = rows(d, "heap.csv")
    if hb:
        fig, ax = plt.subplots(figsize=(6.5, 4))
        for impl in sorted({r["impl"] for r in hb}):
            rr = [r for r in hb if r["impl"] == impl]
            n = [fl(r, "heap_size") for r in rr]
            ax.semilogx(n, [fl(r, "insert_ns_median") for r in rr], marker="o", label=f"{impl} insert")
            ax.semilogx(n, [fl(r, "delete_ns_median") for r in rr], marker="s", ls="--", label=f"{impl} delete")
        ax.set_xlabel("heap size (nodes)")
        ax.set_ylabel("ns per operation (median of runs)")
        ax.set_title("Heap insert / delete cost (paper Tables IV-V)")
        ax.legend(fontsize=7)
        save(fig, "heap_ns.png")

    md = rows(d, "model.csv")
    if md:
        ov = [fl(r, "overload") for r in md]
        fig, ax = plt.subplots(1, 2, figsize=(11, 4))
        ax[0].plot(ov, [fl(r, "sim_heap_avg") for r in md], "o-", label="simulation")
        ax[0].errorbar(ov, [fl(r, "model_heap_avg") for r in md], yerr=[fl(r, "model_heap_sigma") for r in md],
                       fmt="s--", label="eq. (11)-(13) as printed")
        ax[0].plot(ov, [fl(r, "renewal_heap_avg") for r in md], "^:", label="renewal variant")
        ax[0].set_xlabel("overload")
        ax[0].set_ylabel("average heap size per core")
        ax[0].set_title("§3.2 model vs simulation (IMIX, constant gaps)")
        ax[0].legend(fontsize=8)
        ax[1].plot(ov, [fl(r, "heap_error_pct") for r in md], "s--", label="eq. (11)-(13)")
        ax[1].plot(ov, [fl(r, "renewal_heap_error_pct") for r in md], "^:", label="renewal variant")
        ax[1].axhline(2.73, c="gray", ls=":", label="paper mean error 2.73%")
        ax[1].set_xlabel("overload")
        ax[1].set_ylabel("heap-size error %")
        ax[1].legend(fontsize=8)
        save(fig, "model.png")

    ol = rows(d, "overload.csv")
    if ol:
        fig, ax = plt.subplots(2, 1, figsize=(8, 6), sharex=True)
        for lo in range(10, int(max(fl(r, "second") for r in ol)) + 1, 20):
            for a in ax:
                a.axvspan(lo, lo + 10, color="0.92")
        for dth in sorted({r["delta_th"] for r in ol}, key=int):
            rr = [r for r in ol if r["delta_th"] == dth]
            lab = "fixed alpha" if dth == "0" else f"delta_th = {dth}"
            t = [fl(r, "second") for r in rr]
            ax[0].plot(t, [fl(r, "reschedules_per_queue_per_period") for r in rr], label=lab)
            ax[1].plot(t, [fl(r, "alpha_mean") for r in rr], label=lab)
        ax[0].set_ylabel("reschedules / queue / period")
        ax[0].set_title("§5.2.2 periodic overload (paper Fig. 11)")
        ax[0].legend(fontsize=8)
        ax[1].set_ylabel("mean alpha (bytes)")
        ax[1].set_xlabel("time (s); overload 3.85 in [10,20), [30,40)")
        save(fig, "overload.png")

    cf = rows(d, "conformance.csv")
    if cf:
        rates = sorted({fl(r, "rate_bytes_per_s") for r in cf})
        fig, ax = plt.subplots(1, 2, figsize=(11, 4))
        w = 0.38
        for i, shaper in enumerate(["event", "periodic"]):
            rr = {fl(r, "rate_bytes_per_s"): r for r in cf if r["shaper"] == shaper}
            x = [j + (i - 0.5) * w for j in range(len(rates))]
            lab = "event-driven" if shaper == "event" else "periodic 100 us"
            ax[0].bar(x, [max(fl(rr[q], "worst_1s_window_error_pct"), 1e-4) for q in rates], w, label=lab)
            ax[1].bar(x, [fl(rr[q], "max_burst_bytes") - fl(rr[q], "burst_bytes") for q in rates], w, label=lab)
        for a in ax:
            a.set_xticks(range(len(rates)))
            a.set_xticklabels([f"{q / 1e3:g} kB/s" for q in rates])
            a.set_xlabel("rate of the saturated queue (offered 2x, IMIX)")
        ax[0].set_yscale("log")
        ax[0].axhline(1.0, c="gray", ls=":", label="1% target")
        ax[0].set_ylabel("worst 1-s window rate error %")
        ax[0].set_title("Conformance: rate")
        ax[1].axhline(0, c="gray", lw=0.8)
        ax[1].set_ylabel("largest burst - configured burst (bytes)")
        ax[1].set_title("Conformance: burst (<= 0 conforms)")
        for a in ax:
            a.legend(fontsize=8)
        save(fig, "conformance.png")

    co = rows(d, "cost.csv")
    if co:
        fig, ax = plt.subplots(figsize=(6.5, 4))
        lab = ["event-driven" if r["shaper"] == "event" else f"periodic {int(fl(r, 'refill_period_ns')) // 1000} us"
               for r in co]
        med = [fl(r, "ns_per_packet_median") for r in co]
        ax.bar(lab, med, yerr=[m * fl(r, "spread") / 2 for m, r in zip(med, co)], capsize=4)
        ax.set_yscale("log")
        ax.set_ylabel("ns per packet (median; bar: spread)")
        ax.set_title("Host cost, 10,000 queues on one core (poll + enqueue)")
        save(fig, "cost.png")

    print("wrote", ", ".join(os.path.join(d, m) for m in made) if made else "nothing (no CSV found)")


if __name__ == "__main__":
    main()
