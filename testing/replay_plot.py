#!/usr/bin/env python3
"""Charts Engine API replays (`testing/engine_replay.py`'s summary.json) side by side: per
configuration, the median Mgas/s of each summary, and the node's `newPayload` per block split
into its stages (sender recovery, BAL reads, execution, the state root waited for, the rest),
medians over the runs, one stacked bar per summary.

Usage: testing/.venv/bin/python testing/replay_plot.py --png docs/img/NAME.png \\
           LABEL=target/replay/A LABEL=target/replay/B [--configs sequential,parallel-2] [--json]
"""

import argparse
import json
import os
import sys

STAGES = [("recovery", "sender recovery"), ("io", "BAL reads"), ("execution", "execution"),
          ("state_root", "state root (waited)"), ("checks", "checks")]


def load(spec):
    label, _, folder = spec.partition("=")
    if not folder:
        raise SystemExit(f"replay_plot: {spec}: expected LABEL=FOLDER")
    with open(os.path.join(folder, "summary.json")) as f:
        summary = json.load(f)
    rows = {r["config"]: r for r in summary["rows"] if r.get("stages_s")}
    return label, summary, rows


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("summaries", nargs="+", help="LABEL=FOLDER (a folder with summary.json)")
    ap.add_argument("--png", required=True)
    ap.add_argument("--configs", help="comma-separated; default: those of the first summary")
    ap.add_argument("--json", action="store_true", help="print the plotted figures as JSON")
    args = ap.parse_args()
    loaded = [load(s) for s in args.summaries]
    configs = args.configs.split(",") if args.configs else list(loaded[0][2])
    figures = []
    for config in configs:
        for label, summary, rows in loaded:
            row = rows.get(config)
            if row is None:
                continue
            blocks = summary["blocks"]
            stages = {k: row["stages_s"].get(k, 0.0) * 1e3 / blocks for k, _ in STAGES}
            figures.append({"config": config, "label": label, "mgas_per_s": row["mgas_per_s"],
                            "ms_per_block": stages, "exec_io_share": row.get("exec_io_share")})
    if args.json:
        json.dump(figures, sys.stdout, indent=1)
        print()

    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    labels = [label for label, _, _ in loaded]
    width = 0.8 / len(labels)
    fig, (top, bottom) = plt.subplots(2, 1, figsize=(max(8, 1.6 * len(configs)), 8), sharex=True)
    colors = plt.rcParams["axes.prop_cycle"].by_key()["color"]
    for k, label in enumerate(labels):
        xs, ys = [], []
        for i, config in enumerate(configs):
            f = next((f for f in figures if f["config"] == config and f["label"] == label), None)
            if f:
                xs.append(i + (k - (len(labels) - 1) / 2) * width)
                ys.append(f["mgas_per_s"])
        bars = top.bar(xs, ys, width, label=label, color=colors[k % len(colors)])
        top.bar_label(bars, fmt="%.0f", fontsize=7)
        for i, config in enumerate(configs):
            f = next((f for f in figures if f["config"] == config and f["label"] == label), None)
            if not f:
                continue
            x = i + (k - (len(labels) - 1) / 2) * width
            base = 0.0
            for j, (key, name) in enumerate(STAGES):
                v = f["ms_per_block"][key]
                bottom.bar(x, v, width, bottom=base, color=colors[(j + 2) % len(colors)],
                           edgecolor="black", linewidth=0.3, label=name if (k, i) == (0, 0) else None)
                base += v
            bottom.text(x, base + 0.5, label, ha="center", fontsize=6, rotation=90)
    first = loaded[0][1]
    top.set_ylabel("Mgas/s (median)")
    top.set_title(f"Engine API replay: {os.path.basename(first['chain'])}, {first['cores']} cores "
                  f"({first['cpu']})", fontsize=9)
    top.legend(fontsize=8)
    bottom.set_ylabel("node's newPayload, ms per block")
    bottom.set_xticks(range(len(configs)), configs, rotation=20, fontsize=8)
    bottom.legend(fontsize=7, loc="upper right")
    fig.tight_layout()
    os.makedirs(os.path.dirname(os.path.abspath(args.png)), exist_ok=True)
    fig.savefig(args.png, dpi=110)
    print(f"replay_plot: {args.png}", file=sys.stderr)


if __name__ == "__main__":
    main()
