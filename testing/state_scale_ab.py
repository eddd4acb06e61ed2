#!/usr/bin/env python3
"""Paired A/B runs of `gigagas import` builds or flags on a state made by testing/state_scale.py.

Each round runs every variant cold (page cache dropped: `sync; echo 3 >
/proc/sys/vm/drop_caches`, as root) then warm (right after, the same blocks cached), each on a
fresh checkpoint of the state, variants back to back so that the machine's drift hits them
alike; a throwaway cold run comes first (the first run after other work pays for something the
later ones do not). With `--perf-stat`, one more cold and warm run of each variant under
`perf stat` counts the read system calls (`io_uring_enter`, `pread64`), context switches and
futex calls: figures that do not move with the machine's speed.

Flow: the state's work dir (state_scale.py's `scale-N`) → per round, per variant: checkpoint →
[drop caches] → import → Mgas/s, CPU s, stage times, disk reads → medians per variant, the
cold/warm ratio of each round → table, or `--json`.

    python3 testing/state_scale_ab.py target/state-scale-10m/scale-10000000 --rounds 5 \\
        new=target/release/gigagas base=target/gigagas-base:--trie-read-threads=16
"""

import argparse
import json
import os
import statistics
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import state_scale as ss  # noqa: E402

# The node's default design: the BAL's keys read before execution on the executor's threads.
DEFAULT_FLAGS = ["--io", "prefetch-parallel"]
PERF_EVENTS = ("context-switches,cpu-clock,syscalls:sys_enter_io_uring_enter,"
               "syscalls:sys_enter_pread64,syscalls:sys_enter_futex")


def variant(spec):
    """NAME=BINARY[:FLAG,FLAG...] (each flag `--name=value` or `--name`)."""
    name, _, rest = spec.partition("=")
    binary, _, flags = rest.partition(":")
    if not name or not binary:
        raise argparse.ArgumentTypeError(f"{spec}: expected NAME=BINARY[:FLAGS]")
    args = []
    for flag in filter(None, flags.split(",")):
        args.extend(flag.split("=", 1))
    return name, binary, args


def perf_counts(binary, work, flags, cold):
    """Counts of PERF_EVENTS over one import (cold or warm) and its Mgas/s."""
    run = ss.fresh_checkpoint(binary, work)
    if cold:
        ss.drop_caches()
    out_csv = os.path.join(work, "perf-stat.csv")
    cmd = ["perf", "stat", "-x", ",", "-e", PERF_EVENTS, "-o", out_csv, binary, "import",
           os.path.join(work, "chain", "chain-blocks.rlp"), "--datadir", run, "--json"] + flags
    done = subprocess.run(cmd, capture_output=True, text=True)
    if done.returncode != 0:
        sys.exit(f"state_scale_ab: perf stat failed: {done.stderr[-2000:]}")
    counts = {"mgas_per_s": json.loads(done.stdout)["mgas_per_s"]}
    with open(out_csv) as f:
        for line in f:
            fields = line.strip().split(",")
            if len(fields) > 3 and fields[0][:1].isdigit():
                counts[fields[2].split(":")[-1]] = float(fields[0])
    return counts


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("work", help="a state's work dir (state_scale.py's WORK/scale-N)")
    ap.add_argument("variants", nargs="+", type=variant, help="NAME=BINARY[:FLAG,FLAG...]")
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--perf-stat", action="store_true",
                    help="also count system calls and context switches (perf)")
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()
    if os.geteuid() != 0:
        sys.exit("state_scale_ab: cold runs drop the page cache: run as root")
    device = ss.disk_of(args.work)
    threads = os.cpu_count()
    runs = {name: {"cold": [], "warm": []} for name, _, _ in args.variants}
    first = args.variants[0]
    ss.gigagas_run(first[1], args.work, "warmup", DEFAULT_FLAGS + first[2], True, device, threads)
    for r in range(args.rounds):
        for name, binary, flags in args.variants:
            for cold in (True, False):
                out = ss.gigagas_run(binary, args.work, name, DEFAULT_FLAGS + flags, cold, device,
                                     threads)
                runs[name]["cold" if cold else "warm"].append(out)
                print(f"round {r} {name:<10} {'cold' if cold else 'warm'}: "
                      f"{out['mgas_per_s']:6.1f} Mgas/s, CPU {out['cpu_s']:5.1f} s", file=sys.stderr,
                      flush=True)
    summary = {}
    for name, binary, flags in args.variants:
        cold, warm = runs[name]["cold"], runs[name]["warm"]
        med = lambda rs, key: statistics.median(x[key] for x in rs)  # noqa: E731
        summary[name] = {
            "binary": binary, "flags": flags,
            "cold_mgas_per_s": med(cold, "mgas_per_s"), "warm_mgas_per_s": med(warm, "mgas_per_s"),
            "cold_runs": [x["mgas_per_s"] for x in cold], "warm_runs": [x["mgas_per_s"] for x in warm],
            "round_ratios": [c["mgas_per_s"] / w["mgas_per_s"] for c, w in zip(cold, warm)],
            "cpu_s_cold": med(cold, "cpu_s"), "cpu_s_warm": med(warm, "cpu_s"),
            "disk_reads_cold": med(cold, "disk_reads"),
            "io_ms_per_block_cold": med(cold, "io_ms_per_block"),
            "state_root_ms_per_block_cold": med(cold, "state_root_ms_per_block"),
        }
        if args.perf_stat:
            summary[name]["perf_cold"] = perf_counts(binary, args.work, DEFAULT_FLAGS + flags, True)
            summary[name]["perf_warm"] = perf_counts(binary, args.work, DEFAULT_FLAGS + flags, False)
    if args.json:
        print(json.dumps({"work": args.work, "rounds": args.rounds, "variants": summary}, indent=1))
        return
    print(f"{'variant':<10} {'cold':>7} {'warm':>7} {'c/w':>5} {'CPU s cold/warm':>16} "
          f"{'disk reads':>10}  rounds' cold/warm")
    for name, s in summary.items():
        print(f"{name:<10} {s['cold_mgas_per_s']:7.1f} {s['warm_mgas_per_s']:7.1f} "
              f"{s['cold_mgas_per_s'] / s['warm_mgas_per_s']:5.2f} "
              f"{s['cpu_s_cold']:7.1f} / {s['cpu_s_warm']:5.1f} {s['disk_reads_cold']:10.0f}  "
              + " ".join(f"{x:.2f}" for x in s["round_ratios"]))
        for key in ("perf_cold", "perf_warm"):
            if key in s:
                p = s[key]
                print(f"  {key[5:]}: io_uring_enter {p.get('sys_enter_io_uring_enter', 0):,.0f}, "
                      f"pread64 {p.get('sys_enter_pread64', 0):,.0f}, "
                      f"context switches {p.get('context-switches', 0):,.0f}, "
                      f"futex {p.get('sys_enter_futex', 0):,.0f}")


if __name__ == "__main__":
    main()
