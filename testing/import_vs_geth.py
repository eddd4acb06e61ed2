#!/usr/bin/env python3
"""gigagas and geth importing the same chain, timed in one run: `gigagas init` + `gigagas
import` against geth 1.17.10's `geth init` + `geth import` of a `gigagas-bench gen-chain`
folder (genesis.json, chain.rlp), each into a fresh datadir, runs alternated. Reports per run
the import's wall time, CPU seconds (user + system) and peak RSS of the importing process,
Mgas/s, medians and the ratio; checks that both reach the chain's last block with the same
hash.

geth is installed by testing/geth_install.sh (the Go module proxy, pinned v1.17.10, into
~/.cache/gigagas) unless --geth names it.

With --prewarm-ab each run also imports with `gigagas import --prewarm false` (the sequential
reference alone, no workers prewarming it), reported as `gigagas-noprewarm`, alternated with the
default (prewarming) import. With --sequential-ab each run also imports with `gigagas import --bal ignore`
(every block on the sequential reference, its BAL built and checked against the header), reported
as `gigagas-sequential`, alternated with the default, which runs the blocks whose BAL the file
carries (geth's `export` of an Amsterdam chain) on the parallel executor driven by it. With
--optimistic-ab each run also imports with
`gigagas import --optimistic true` (the reference commits the prewarming workers' results when
what they read still holds, instead of their only warming the cache), reported as
`gigagas-optimistic`.

Usage: python3 testing/import_vs_geth.py --chain target/chains/osaka-mainnet-150m
           [--gigagas target/release/gigagas] [--geth PATH] [--runs 3] [--prewarm-ab]
           [--optimistic-ab] [--sequential-ab] [--json]
"""

import argparse
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def measured(cmd):
    """Runs cmd; returns (wall s, cpu s, peak RSS MiB, stdout+stderr, exit code)."""
    start = time.perf_counter()
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    out = proc.stdout.read()
    _, status, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - start
    proc.returncode = os.waitstatus_to_exitcode(status)
    return wall, usage.ru_utime + usage.ru_stime, usage.ru_maxrss / 1024, out, proc.returncode


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--chain", required=True, help="a gen-chain folder: genesis.json, chain.rlp")
    ap.add_argument("--gigagas", default=os.path.join(ROOT, "target/release/gigagas"))
    ap.add_argument("--geth", help="geth binary (default: testing/geth_install.sh)")
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--prewarm-ab", action="store_true",
                    help="also gigagas import --prewarm false, alternated with the default")
    ap.add_argument("--optimistic-ab", action="store_true",
                    help="also gigagas import --optimistic true, alternated with the default")
    ap.add_argument("--sequential-ab", action="store_true",
                    help="also gigagas import --bal ignore (the sequential path, BALs built), "
                         "alternated with the default (the parallel executor on the file's BALs)")
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()
    genesis, chain = (os.path.join(args.chain, f) for f in ("genesis.json", "chain.rlp"))
    for f in (genesis, chain):
        if not os.path.isfile(f):
            raise SystemExit(f"import_vs_geth: {f} is missing (make one with gigagas-bench gen-chain)")
    info = {}
    if os.path.isfile(os.path.join(args.chain, "info.json")):
        with open(os.path.join(args.chain, "info.json")) as f:
            info = json.load(f)
    geth = args.geth or os.path.join(subprocess.run(
        ["bash", os.path.join(ROOT, "testing/geth_install.sh")], check=True, capture_output=True,
        text=True).stdout.strip().splitlines()[-1], "geth")
    version = subprocess.run([geth, "version"], capture_output=True, text=True).stdout
    version = next((line.split(":", 1)[1].strip() for line in version.splitlines()
                    if line.startswith("Version")), "?")
    gas = info.get("gas_used")
    variants = [("gigagas", [])]
    if args.prewarm_ab:
        variants.append(("gigagas-noprewarm", ["--prewarm", "false"]))
    if args.optimistic_ab:
        variants.append(("gigagas-optimistic", ["--optimistic", "true"]))
    if args.sequential_ab:
        variants.append(("gigagas-sequential", ["--bal", "ignore"]))
    runs = {name: [] for name, _ in variants}
    runs["geth"] = []
    heads = {}
    for i in range(args.runs):
        with tempfile.TemporaryDirectory(dir=os.path.join(ROOT, "target")) as tmp:
            # Alternate the gigagas variants' order from run to run.
            for name, flags in (variants if i % 2 == 0 else variants[::-1]):
                ours = os.path.join(tmp, name)
                subprocess.run([args.gigagas, "init", "--genesis", genesis, "--datadir", ours],
                               check=True, capture_output=True)
                wall, cpu, rss, out, code = measured(
                    [args.gigagas, "import", chain, "--datadir", ours, "--json"] + flags)
                if code != 0:
                    raise SystemExit(f"import_vs_geth: {name} import failed:\n{out[-3000:]}")
                report = json.loads(out[out.index("{"):])
                head = json.loads(subprocess.run([args.gigagas, "db", "--datadir", ours, "head"],
                                                 check=True, capture_output=True,
                                                 text=True).stdout)
                heads[name] = (report["head"], head["hash"])
                gas = gas or report["gas"]
                runs[name].append({"seconds": wall, "cpu_seconds": cpu, "peak_rss_mib": rss})

            theirs = os.path.join(tmp, "geth")
            subprocess.run([geth, "init", "--datadir", theirs, genesis], check=True,
                           capture_output=True)
            wall, cpu, rss, out, code = measured([geth, "import", "--datadir", theirs, chain])
            segments = re.findall(r"Imported new chain segment\s+number=(\S+)\s+hash=(\S+)", out)
            if code != 0 or not segments or "Import error" in out:
                raise SystemExit(f"import_vs_geth: geth import failed:\n{out[-3000:]}")
            heads["geth"] = (int(segments[-1][0].replace(",", "")), segments[-1][1])
            runs["geth"].append({"seconds": wall, "cpu_seconds": cpu, "peak_rss_mib": rss})
        print(f"import_vs_geth: run {i + 1}: " + ", ".join(
            f"{k} {v[-1]['seconds']:.2f} s" for k, v in runs.items()), file=sys.stderr)
    # geth logs the hash abbreviated (first 6 and last 6 hex digits).
    ours_number, ours_hash = heads["gigagas"]
    geth_number, geth_short = heads["geth"]
    first, last = geth_short.split("..")
    same_head = (ours_number == geth_number and ours_hash[2:].startswith(first)
                 and ours_hash.endswith(last)
                 and all(heads[name] == heads["gigagas"] for name, _ in variants))
    med = {k: {m: round(statistics.median(r[m] for r in v), 3)
               for m in ("seconds", "cpu_seconds", "peak_rss_mib")} for k, v in runs.items()}
    summary = {
        "chain": os.path.abspath(args.chain), "fork": info.get("fork"), "mix": info.get("mix"),
        "blocks": ours_number, "gas": gas, "runs": args.runs,
        "cpu": next((line.split(":", 1)[1].strip() for line in open("/proc/cpuinfo")
                     if line.startswith("model name")), "?"),
        "cores": os.cpu_count(), "geth_version": version,
        "runs_by_client": runs, "median": med,
        "gigagas_mgas_per_s": round(gas / med["gigagas"]["seconds"] / 1e6, 1),
        "geth_mgas_per_s": round(gas / med["geth"]["seconds"] / 1e6, 1),
        "speed_gigagas_over_geth": round(med["geth"]["seconds"] / med["gigagas"]["seconds"], 2),
        **({"speed_prewarm_over_noprewarm": round(
            med["gigagas-noprewarm"]["seconds"] / med["gigagas"]["seconds"], 3)}
           if args.prewarm_ab else {}),
        **({"speed_parallel_over_sequential": round(
            med["gigagas-sequential"]["seconds"] / med["gigagas"]["seconds"], 3)}
           if args.sequential_ab else {}),
        **({"speed_optimistic_over_default": round(
            med["gigagas"]["seconds"] / med["gigagas-optimistic"]["seconds"], 3)}
           if args.optimistic_ab else {}),
        "same_head": same_head, "head": {"gigagas": heads["gigagas"], "geth": heads["geth"]},
    }
    if args.json:
        print(json.dumps(summary, indent=1))
    else:
        for k, v in summary.items():
            if k != "runs_by_client":
                print(f"  {k:26} {v}")
    if not same_head:
        raise SystemExit("import_vs_geth: the two clients ended on different heads")


if __name__ == "__main__":
    main()
