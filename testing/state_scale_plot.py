#!/usr/bin/env python3
"""Charts of testing/state_scale.py's results: how each cost grows with the state.

Four panels against the state's entries (log scale): Mgas/s of the chosen designs (`--designs`),
cold and warm (geth beside); the state root's time per block and the commit's, cold and warm, for the
BAL-hinted design measured at the most sizes; bytes on disk of gigagas's and geth's datadirs (each
gigagas point marked unpruned or pruned while generating); peak RSS of the importing process.

Several `--json` files (e.g. one per session, each with the sizes it measured) are merged by
state size, a later file's size replacing an earlier file's.

Usage: testing/.venv/bin/python testing/state_scale_plot.py [--json target/state-scale/state-scale.json ...]
           [--png docs/img/state_scale.png] [--designs seq,par-ondemand,par-bal-qd0,par-bal-qd16,par-bal-qd32,geth]
           [--title "where and when each size was measured"]
"""

import argparse
import json


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--json", nargs="+", default=["target/state-scale/state-scale.json"],
                    help="state_scale.py's results, merged by state size (the last file wins)")
    ap.add_argument("--png", default="docs/img/state_scale.png")
    ap.add_argument("--designs", default="seq,par-ondemand,par-bal-qd0,par-bal-qd16,par-bal-qd32,geth",
                    help="the designs drawn in the Mgas/s panel, comma-separated")
    ap.add_argument("--title", help="a line above the panels (e.g. the machines the merged files "
                    "were measured on)")
    args = ap.parse_args()
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    by_size = {}
    for path in args.json:
        with open(path) as f:
            for s in json.load(f)["sizes"]:
                by_size[s["entries"]] = s
    sizes = [by_size[k] for k in sorted(by_size)]
    x = [s["entries"] for s in sizes]
    measured = {r["design"] for s in sizes for r in s["runs"]}
    designs = [d for d in args.designs.split(",") if d in measured]

    def run(s, design, cold):
        for r in s["runs"]:
            if r["design"] == design and r["cold"] == cold:
                return r
        return None

    def series(design, cold, key):
        xs, ys = [], []
        for s in sizes:
            r = run(s, design, cold)
            if r and r.get(key) is not None:
                xs.append(s["entries"])
                ys.append(r[key])
        return xs, ys

    # The stage panel: the BAL design measured at the most sizes (then at the largest).
    bal = [d for d in designs if d.startswith("par-bal-qd")]
    def reach(d):
        at = [s["entries"] for s in sizes if run(s, d, True)]
        return (len(at), max(at, default=0))
    staged = max(bal, key=reach) if bal else None
    fig, axes = plt.subplots(2, 2, figsize=(12, 9))
    ax = axes[0][0]
    for i, design in enumerate(designs):
        color = f"C{i}"
        for cold, style in ((True, "-"), (False, "--")):
            xs, ys = series(design, cold, "mgas_per_s")
            if xs:
                ax.plot(xs, ys, style, marker="o", color=color,
                        label=f"{design} {'cold' if cold else 'warm'}")
    ax.set_title("Mgas/s on the spread mix's 300M-gas blocks")
    ax.set_ylabel("Mgas/s")
    ax.legend(fontsize=7, ncol=2)

    ax = axes[0][1]
    if staged:
        for key, label, color in (("state_root_ms_per_block", "state root (waited)", "C0"),
                                  ("commit_ms_per_block", "commit", "C1"),
                                  ("execution_ms_per_block", "execution", "C2")):
            for cold, style in ((True, "-"), (False, "--")):
                xs, ys = series(staged, cold, key)
                if xs:
                    ax.plot(xs, ys, style, marker="o", color=color,
                            label=f"{label} {'cold' if cold else 'warm'}")
        ax.set_title(f"gigagas stage time per block ({staged})")
    ax.set_ylabel("ms per block")
    ax.legend(fontsize=7)

    ax = axes[1][0]
    ax.plot(x, [s["gigagas_bytes"] / 1e9 for s in sizes], marker="o", label="gigagas")
    # States below `--prune-from` are generated without pruning their superseded trie nodes.
    for s in sizes:
        pruned = bool(s.get("generation", {}).get("state_prunes"))
        ax.annotate("pruned while generating" if pruned else "unpruned",
                    (s["entries"], s["gigagas_bytes"] / 1e9), textcoords="offset points",
                    xytext=(0, 6), ha="center", fontsize=7)
    gx = [s["entries"] for s in sizes if "geth_bytes" in s]
    if gx:
        ax.plot(gx, [s["geth_bytes"] / 1e9 for s in sizes if "geth_bytes" in s], marker="o",
                label="geth 1.17.10")
    ax.set_title("datadir after the state's blocks")
    ax.set_ylabel("GB")
    ax.legend(fontsize=7)

    ax = axes[1][1]
    for i, design in enumerate(designs):
        xs, ys = series(design, True, "peak_rss")
        if xs:
            ax.plot(xs, [y / 1e9 for y in ys], marker="o", color=f"C{i}", label=design)
    ax.set_title("peak RSS of the import (cold)")
    ax.set_ylabel("GB")
    ax.legend(fontsize=7)

    for row in axes:
        for ax in row:
            ax.set_xscale("log")
            ax.set_xlabel("state entries (accounts + slots)")
            ax.grid(alpha=0.3)
    if args.title:
        fig.suptitle(args.title, fontsize=10)
    fig.tight_layout()
    fig.savefig(args.png, dpi=110)
    print(args.png)


if __name__ == "__main__":
    main()
