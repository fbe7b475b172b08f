"""Write the generated section of bench/RESULTS.md and its plots from a `make bench` JSON.

Reads the JSON pytest-benchmark wrote (``--benchmark-json``), where every bench/ module stored its
figure, the limit measured in the same run and their ratio in ``extra_info`` (bench/benchkit.py),
and replaces what lies between the markers below in RESULTS.md (inserting them before the first
hand-written section if missing); the hand-written history around them is left as it is. Plots
(matplotlib) go next to RESULTS.md.

    .venv/bin/python bench/report.py bench/results/20261126-170000.json [--results bench/RESULTS.md]
"""
from __future__ import annotations

import argparse
import json
import math
import os

BEGIN, END = "<!-- generated: begin -->", "<!-- generated: end -->"
HERE = os.path.dirname(os.path.abspath(__file__))
PLOT = "bench_ratios.png"


def fmt(x) -> str:
    if x is None or (isinstance(x, float) and math.isnan(x)):
        return "-"
    ax = abs(x)
    return f"{x:,.0f}" if ax >= 100 else f"{x:.2f}" if ax >= 1 else f"{x:.3g}"


def rows(data: dict) -> dict[str, list[dict]]:
    """extra_info of each benchmark, by group, in run order."""
    groups: dict[str, list[dict]] = {}
    for b in data["benchmarks"]:
        info = b.get("extra_info") or {}
        if "ratio" not in info:
            continue
        groups.setdefault(b.get("group") or "other", []).append({"name": b["name"], **info})
    return groups


def section(data: dict, src: str, plot: str | None) -> str:
    m = data.get("machine_info", {})
    cpu = m.get("cpu", {}).get("brand_raw", m.get("processor", ""))
    out = [BEGIN, "## Generated from the last `make bench` run", "",
           f"Do not edit between the markers: `bench/report.py` rewrites it from `{src}`.", "",
           f"Command: `{data.get('command', 'make bench')}`  ",
           f"Run: {data.get('datetime', '?')}, commit {data.get('commit_info', {}).get('id', '?')[:10]}, "
           f"Python {m.get('python_version', '?')}, {cpu}, {os.cpu_count()} cpus."
           + (" **Smoke run (tiny sizes): the figures mean nothing.**"
              if any(r.get("smoke") for g in rows(data).values() for r in g) else ""), "",
           "Each figure is fastkafka's best round; the limit was timed in the same run, alternating with it. "
           "Ratio = fastkafka / limit, best to best (and the median of per-round ratios).", ""]
    for group, rs in rows(data).items():
        out += [f"### {group}", "", "| figure | fastkafka | limit (same run) | ratio best / per-round median "
                "| goal | other references |", "|---|---|---|---|---|---|"]
        for r in rs:
            others = ", ".join(f"{k} {fmt(v)}" for k, v in (r.get("others") or {}).items())
            if r.get("cpu_s_per_gb") is not None:
                others += (", " if others else "") + f"broker CPU-s per GB {fmt(r['cpu_s_per_gb'])}"
            out.append(f"| {r['what']} | {fmt(r['value'])} {r['unit']} | {r['limit_name']} {fmt(r['limit'])} "
                       f"| {fmt(r['ratio'])}x / {fmt(r.get('ratio_median'))}x | {r.get('goal') or ''} | {others} |")
        notes = sorted({r["note"] for r in rs if r.get("note")})
        out += [""] + [f"- {n}" for n in notes] + ([""] if notes else [])
    if plot:
        out += [f"![ratios against the limits]({plot})", ""]
    out.append(END)
    return "\n".join(out)


def plot(data: dict, path: str) -> None:
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    items = [(g, r) for g, rs in rows(data).items() for r in rs if r["ratio"] and r["ratio"] > 0]
    fig, ax = plt.subplots(figsize=(10, 0.28 * len(items) + 1.2))
    groups = list(dict.fromkeys(g for g, _ in items))
    colors = {g: f"C{i % 10}" for i, g in enumerate(groups)}
    ys = range(len(items))
    ax.barh(ys, [r["ratio"] for _, r in items], color=[colors[g] for g, _ in items])
    ax.scatter([r.get("ratio_median") or r["ratio"] for _, r in items], ys, marker="|", color="black", zorder=3)
    ax.set_yticks(list(ys))
    ax.set_yticklabels([f"{r['what']} / {r['limit_name']}" for _, r in items], fontsize=7)
    ax.invert_yaxis()
    ax.set_xscale("log")
    ax.axvline(1.0, color="grey", lw=0.8)
    ax.set_xlabel("fastkafka / limit (bar: best to best, tick: per-round median); log scale")
    ax.set_title("make bench: each figure against its limit, same run", fontsize=10)
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)


def splice(text: str, generated: str) -> str:
    """``text`` with the marked section replaced by ``generated`` (inserted before the first '## ' if absent)."""
    if BEGIN in text and END in text:
        head, rest = text.split(BEGIN, 1)
        return head + generated + rest.split(END, 1)[1]
    at = text.find("\n## ")
    at = len(text) if at < 0 else at + 1
    return text[:at] + generated + "\n\n" + text[at:]


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("json")
    ap.add_argument("--results", default=os.path.join(HERE, "RESULTS.md"))
    ap.add_argument("--no-plot", action="store_true")
    args = ap.parse_args(argv)
    with open(args.json) as f:
        data = json.load(f)
    out_dir = os.path.dirname(os.path.abspath(args.results))
    if not args.no_plot:
        plot(data, os.path.join(out_dir, PLOT))
    src = os.path.relpath(os.path.abspath(args.json), os.path.dirname(HERE))
    with open(args.results) as f:
        text = f.read()
    with open(args.results, "w") as f:
        f.write(splice(text, section(data, src if not src.startswith("..") else os.path.abspath(args.json),
                                     None if args.no_plot else PLOT)))
    print(f"wrote the generated section of {args.results}" + ("" if args.no_plot else f" and {PLOT}"))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
