#!/usr/bin/env python3
"""`gigagas import` of one chain across executor thread counts: the parallel executor driven by
the BALs the file carries (`--threads N` for each N of `--threads`) against the sequential
reference (`--bal ignore`: its BALs built and checked against the headers), each run into a
fresh datadir, the configurations alternated within each run. Reports per configuration the
medians of wall time (the whole `gigagas import` process), the execution stage, sender
recovery within it, and Mgas/s, and the ratio of each to the sequential reference; checks that
every import ends on the same head.

The chain is a folder with genesis.json and chain.rlp whose Amsterdam blocks carry their BALs
(geth's `export`, e.g. testing/geth_amsterdam.py --load heavy).

Usage: python3 testing/import_scaling.py --chain target/chains/geth-amsterdam-heavy
           [--gigagas target/release/gigagas] [--threads 1,2,4,8,16] [--runs 3] [--json]
"""

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def import_once(gigagas, chain, extra, work):
    """init + import --json into a fresh datadir: (wall s, report)."""
    datadir = tempfile.mkdtemp(prefix="scaling-", dir=work)
    try:
        subprocess.run([gigagas, "init", "--genesis", os.path.join(chain, "genesis.json"),
                        "--datadir", datadir], check=True, capture_output=True)
        start = time.perf_counter()
        out = subprocess.run([gigagas, "import", os.path.join(chain, "chain.rlp"), "--datadir",
                              datadir, "--json"] + extra, capture_output=True, text=True)
        wall = time.perf_counter() - start
        if out.returncode != 0:
            raise SystemExit(f"import_scaling: {extra} failed:\n{out.stderr[-2000:]}")
        return wall, json.loads(out.stdout[out.stdout.index("{"):])
    finally:
        shutil.rmtree(datadir, ignore_errors=True)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--chain", required=True)
    ap.add_argument("--gigagas", default=os.path.join(ROOT, "target/release/gigagas"))
    ap.add_argument("--threads", default="1,2,4,8,16")
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--work", default=None, help="folder for the datadirs (default: the system's)")
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()
    configs = [("sequential", ["--bal", "ignore"])] + [
        (f"parallel-{n}", ["--threads", n]) for n in args.threads.split(",")]
    samples = {name: [] for name, _ in configs}
    heads = set()
    for run in range(args.runs):
        for name, extra in configs:
            wall, report = import_once(args.gigagas, args.chain, extra, args.work)
            blocks = report["blocks"]
            heads.add((report["head"], blocks[-1]["hash"] if blocks else None))
            samples[name].append({
                "wall_s": wall,
                "execution_s": report["execution_s"],
                "recovery_s": sum(b.get("recovery_ms", 0) for b in blocks) / 1e3,
                "mgas_per_s": report["gas"] / 1e6 / wall,
                "executors": sorted({b["executor"] for b in blocks if b.get("transactions")}),
            })
            print(f"run {run + 1} {name}: {wall:.3f} s", file=sys.stderr)
    if len(heads) != 1:
        raise SystemExit(f"import_scaling: imports ended on different heads: {heads}")
    median = {name: {k: statistics.median(s[k] for s in runs)
                     for k in ("wall_s", "execution_s", "recovery_s", "mgas_per_s")}
              for name, runs in samples.items()}
    base = median["sequential"]
    rows = [{"config": name, **m, "speedup_wall": base["wall_s"] / m["wall_s"],
             "speedup_execution": base["execution_s"] / m["execution_s"],
             "executors": samples[name][0]["executors"], "runs": samples[name]}
            for name, m in median.items()]
    summary = {"chain": args.chain, "cores": os.cpu_count(), "head": heads.pop(),
               "runs": args.runs, "configs": rows}
    if args.json:
        print(json.dumps(summary, indent=1))
    else:
        print(f"{'config':14} {'wall s':>8} {'exec s':>8} {'recov s':>8} {'Mgas/s':>8} "
              f"{'×seq wall':>9} {'×seq exec':>9}")
        for r in rows:
            print(f"{r['config']:14} {r['wall_s']:8.3f} {r['execution_s']:8.3f} "
                  f"{r['recovery_s']:8.3f} {r['mgas_per_s']:8.0f} {r['speedup_wall']:9.2f} "
                  f"{r['speedup_execution']:9.2f}")


if __name__ == "__main__":
    main()
