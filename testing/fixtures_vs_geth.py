#!/usr/bin/env python3
"""gigagas and geth on the same conformance suite, timed in one run: `gigagas-bench
test-fixtures DIR` against geth 1.17.10's `evm blocktest` over the same files, runs
alternated, medians and the ratio reported (wall time of the whole command, start-up included).

geth's `evm` is installed by testing/geth_install.sh (the Go module proxy, pinned v1.17.10,
into ~/.cache/gigagas) unless --evm names it. `evm blocktest` takes one file per invocation in
some versions and a folder in others: the script passes the folder and, when evm refuses it,
runs every file (one process per file, the way geth's own CI loops) and says so.

Usage: python3 testing/fixtures_vs_geth.py [--suite ../shared/data/ethereum-tests]
           [--gigagas-bench target/release/gigagas-bench] [--evm PATH] [--runs 3] [--json]
"""

import argparse
import json
import os
import statistics
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def timed(cmd, **kw):
    start = time.perf_counter()
    proc = subprocess.run(cmd, capture_output=True, text=True, **kw)
    return time.perf_counter() - start, proc


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--suite", default=os.path.join(ROOT, "../shared/data/ethereum-tests"))
    ap.add_argument("--gigagas-bench", default=os.path.join(ROOT, "target/release/gigagas-bench"))
    ap.add_argument("--evm", help="geth's evm binary (default: testing/geth_install.sh)")
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()
    if not os.path.isdir(args.suite):
        raise SystemExit(f"fixtures_vs_geth: {args.suite} is missing (the shared data beside the project)")
    evm = args.evm or os.path.join(subprocess.run(
        ["bash", os.path.join(ROOT, "testing/geth_install.sh")], check=True, capture_output=True,
        text=True).stdout.strip().splitlines()[-1], "evm")
    files = sorted(os.path.join(d, f) for d, _, fs in os.walk(args.suite) for f in fs
                   if f.endswith(".json"))
    version = subprocess.run([evm, "--version"], capture_output=True, text=True).stdout.strip()

    def run_geth():
        seconds, proc = timed([evm, "blocktest", args.suite])
        if proc.returncode == 0 or "PASS" in proc.stdout + proc.stderr:
            return seconds, proc.stdout + proc.stderr, "folder"
        total, out = 0.0, []
        for f in files:
            s, p = timed([evm, "blocktest", f])
            total += s
            out.append(p.stdout + p.stderr)
        return total, "\n".join(out), "file by file"

    gigagas, geth, mode, geth_out, ours_out = [], [], None, "", ""
    for i in range(args.runs):
        s, proc = timed([args.gigagas_bench, "test-fixtures", args.suite, "--json"])
        gigagas.append(s)
        ours_out = proc.stdout
        s, geth_out, mode = run_geth()
        geth.append(s)
        print(f"fixtures_vs_geth: run {i + 1}: gigagas {gigagas[-1]:.2f} s, geth evm {geth[-1]:.2f} s",
              file=sys.stderr)
    ours = json.loads(ours_out)
    passes = geth_out.count('"pass": true') + geth_out.count("PASS")
    fails = geth_out.count('"pass": false') + geth_out.count("FAIL")
    summary = {
        "suite": os.path.abspath(args.suite), "files": len(files), "runs": args.runs,
        "cpu": next((line.split(":", 1)[1].strip() for line in open("/proc/cpuinfo")
                     if line.startswith("model name")), "?"),
        "cores": os.cpu_count(), "geth_evm_version": version, "geth_mode": mode,
        "gigagas_seconds": [round(x, 2) for x in gigagas],
        "geth_seconds": [round(x, 2) for x in geth],
        "gigagas_median_s": round(statistics.median(gigagas), 2),
        "geth_median_s": round(statistics.median(geth), 2),
        "gigagas_cases": {"passed": ours["passed"], "failed": ours["failed"], "skipped": ours["skipped"]},
        "geth_cases_reported": {"pass": passes, "fail": fails},
    }
    summary["ratio_gigagas_over_geth"] = round(summary["gigagas_median_s"] / summary["geth_median_s"], 3)
    if args.json:
        print(json.dumps(summary, indent=1))
    else:
        for k, v in summary.items():
            print(f"  {k:26} {v}")


if __name__ == "__main__":
    main()
