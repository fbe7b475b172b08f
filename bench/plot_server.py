"""Plot bench/server_results.json (written by bench_server.py) as bench/server_throughput.png.

One group of bars per section (produce/fetch with the load generator, produce/consume with
confluent-kafka), one bar per target: the best round's MB/s, with the median round as a tick,
because on this machine the spread between rounds is part of the result (DESIGN §9).

Usage::

    .venv/bin/python bench/plot_server.py [results.json] [out.png]
"""
from __future__ import annotations

import json
import os
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
COLORS = {"fastkafka": "#1f77b4", "fastkafka (base)": "#9ecae1", "tansu": "#d62728",
          "null broker": "#7f7f7f", "sendfile limit": "#7f7f7f", "read limit": "#bdbdbd"}


def main(src: str = os.path.join(HERE, "server_results.json"),
         out: str = os.path.join(HERE, "server_throughput.png")) -> None:
    with open(src) as f:
        data = json.load(f)
    sections = data["sections"]
    targets = list(dict.fromkeys(r["target"] for rows in sections.values() for r in rows))
    fig, ax = plt.subplots(figsize=(12, 5))
    width = 0.8 / len(targets)
    for i, name in enumerate(targets):
        xs, best, med = [], [], []
        for j, rows in enumerate(sections.values()):
            for r in rows:
                if r["target"] == name:
                    xs.append(j + (i - (len(targets) - 1) / 2) * width)
                    best.append(r["best_mbs"])
                    med.append(r["median_mbs"])
        ax.bar(xs, best, width, label=name, color=COLORS.get(name))
        ax.scatter(xs, med, marker="_", color="black", s=80, zorder=3)
    ax.set_xticks(range(len(sections)))
    ax.set_xticklabels([t.replace(" (", "\n(") for t in sections], fontsize=8)
    ax.set_ylabel("MB/s (bar: best round, tick: median)")
    ax.set_title("fastkafka vs limits and tansu, 1 MiB batches, one partition, acks=1 (loopback, 2 vCPU)")
    ax.legend(fontsize=8)
    ax.grid(axis="y", alpha=0.3)
    fig.tight_layout()
    fig.savefig(out, dpi=110)
    print(f"wrote {out}")


if __name__ == "__main__":
    main(*sys.argv[1:])
