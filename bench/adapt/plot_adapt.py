#!/usr/bin/python3
"""Plot of the adaptive run (bench/adapt/run_experiment.sh): offered/achieved rate, power (with its source),
chosen lanes and batch sizes, latency over time; energy against all lanes all the time. Writes adapt.png and
energy.txt into the output folder."""
import csv
import json
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt

out = sys.argv[1] if len(sys.argv) > 1 else "out/adapt"
rows = list(csv.DictReader(open(f"{out}/adaptive.csv")))
t = [float(r["t_s"]) for r in rows]
fig, ax = plt.subplots(4, 1, figsize=(10, 11), sharex=True)
ax[0].plot(t, [float(r["offered_bps"]) / 1e9 for r in rows], label="offered")
ax[0].plot(t, [float(r["achieved_bps"]) / 1e9 for r in rows], label="achieved")
ax[0].set_ylabel("Gbit/s")
ax[0].legend()
src = rows[0]["power_source"] if rows else "?"
ax[1].plot(t, [float(r["power_w"]) for r in rows], color="tab:red")
ax[1].set_ylabel(f"power W ({src})")
lanes = sorted({int(x) for r in rows for x in r["devices"].split("+") if x != "-"})
for d in lanes:
    ax[2].step(t, [d + 0.8 if str(d) in r["devices"].split("+") else None for r in rows], where="post", lw=6, label=f"lane {d}")
    ax[2].step(t, [int(r["batches"].split("/")[d]) / 4096 + d if str(d) in r["devices"].split("+") else None for r in rows],
               where="post", lw=1, color="k")
ax[2].set_ylabel("chosen lanes\n(thin: batch/4096)")
ax[2].set_yticks([d + 0.5 for d in lanes], [f"lane {d}" for d in lanes])
ax[3].semilogy(t, [max(float(r["lat_p50_us"]), 1) for r in rows], label="p50")
ax[3].semilogy(t, [max(float(r["lat_p99_us"]), 1) for r in rows], label="p99")
ax[3].set_ylabel("rx-to-tx latency us")
ax[3].set_xlabel("time s")
ax[3].legend()
lines = []
try:
    a = json.load(open(f"{out}/adaptive_summary.json"))
    b = json.load(open(f"{out}/all_lanes_summary.json"))
    ea, eb = a["power"]["energy_j"], b["power"]["energy_j"]
    lines.append(f"energy adaptive {ea:.1f} J ({a['power']['source']}) over {a['seconds']:.1f} s, "
                 f"{a['tx']['packets']} packets sent")
    lines.append(f"energy all lanes {eb:.1f} J ({b['power']['source']}) over {b['seconds']:.1f} s, "
                 f"{b['tx']['packets']} packets sent")
    lines.append(f"ratio all/adaptive {eb / ea:.2f}; per packet {ea / max(a['tx']['packets'], 1) * 1e6:.1f} uJ vs "
                 f"{eb / max(b['tx']['packets'], 1) * 1e6:.1f} uJ")
    fig.suptitle("; ".join(lines[:2]), fontsize=8)
except (OSError, KeyError) as e:
    lines.append(f"no energy comparison: {e}")
fig.tight_layout()
fig.savefig(f"{out}/adapt.png", dpi=110)
open(f"{out}/energy.txt", "w").write("\n".join(lines) + "\n")
print("\n".join(lines))
print(f"wrote {out}/adapt.png")
