#!/usr/bin/env python3
"""Datadir growth per Ggas after the state is built, with and without the trie pruned while
blocks are imported.

1. `gigagas-bench gen-chain --state-by-chain --mix spread` builds a state of ENTRIES entries
   (accounts plus slots) and BLOCKS blocks of the spread mix after it (transfers to existing
   accounts, updates of existing slots; each block with its BAL), and keeps gigagas's datadir
   at the end of the state (`--state-datadir`).
2. For each mode, a fresh checkpoint of that datadir (`gigagas db checkpoint`) imports the
   mix's blocks CHUNK at a time (`gigagas import`, one process per chunk, as a node restarted
   now and then), and the datadir's bytes are measured after each chunk:
   - `unpruned`: every block's trie nodes stay;
   - `pruned`: `--prune-trie-keep KEEP --prune-trie-interval INTERVAL`, the node's pruner: every
     INTERVAL blocks the trie nodes no state of the last KEEP blocks reaches are deleted on a
     thread of their own while blocks go on being imported.
3. Growth per Ggas is the slope of bytes against gas over the blocks past the first KEEP + INTERVAL
   (once the pruned datadir has reached its steady state), by least squares.

Usage: python3 testing/prune_growth.py [--entries 1m] [--blocks 320] [--gas 100M]
           [--chunk 32] [--keep 128] [--interval 32] [--work target/prune-growth] [--json]
"""

import argparse
import json
import os
import shutil
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "testing"))
import state_scale  # noqa: E402  (the same generator call, sizes and byte counts)


def rlp_items(data):
    """The top-level RLP items of data, back to back, as byte slices."""
    items, i = [], 0
    while i < len(data):
        prefix = data[i]
        if prefix < 0xc0:
            raise ValueError(f"offset {i}: not an RLP list (prefix {prefix:#x})")
        if prefix <= 0xf7:
            length, head = prefix - 0xc0, 1
        else:
            size = prefix - 0xf7
            length, head = int.from_bytes(data[i + 1:i + 1 + size], "big"), 1 + size
        items.append(data[i:i + head + length])
        i += head + length
    return items


def gas_of(info, blocks):
    """Gas of each of the last `blocks` blocks of the chain (info.json's order)."""
    return [b["gas_used"] for b in info["blocks"]][-blocks:]


def slope(points):
    """Least-squares slope of (x, y) points."""
    n = len(points)
    if n < 2:
        return 0.0
    mx = sum(x for x, _ in points) / n
    my = sum(y for _, y in points) / n
    den = sum((x - mx) ** 2 for x, _ in points)
    return sum((x - mx) * (y - my) for x, y in points) / den if den else 0.0


def run_mode(gigagas, work, name, flags, chunks, gas, warmup):
    datadir = os.path.join(work, f"run-{name}")
    shutil.rmtree(datadir, ignore_errors=True)
    subprocess.run([gigagas, "db", "--datadir", os.path.join(work, "gigagas-base"),
                    "checkpoint", datadir], check=True, capture_output=True)
    points = [(0, 0.0, state_scale.du(datadir))]
    done, total_gas = 0, 0
    for i, chunk in enumerate(chunks):
        path = os.path.join(work, "chunk.rlp")
        with open(path, "wb") as f:
            f.write(b"".join(chunk))
        out = subprocess.run([gigagas, "import", path, "--datadir", datadir, "--json"] + flags,
                             capture_output=True, text=True)
        if out.returncode != 0:
            sys.exit(f"{name}: import of chunk {i} failed: {out.stderr[-2000:]}")
        done += len(chunk)
        total_gas += sum(gas[done - len(chunk):done])
        points.append((done, total_gas / 1e9, state_scale.du(datadir)))
        print(f"[{name}] {done:>5} blocks  {total_gas / 1e9:7.2f} Ggas  "
              f"{points[-1][2] / 1e6:9.1f} MB", file=sys.stderr, flush=True)
    steady = [(g, b) for n, g, b in points if n >= warmup]
    shutil.rmtree(datadir, ignore_errors=True)
    return {"mode": name, "flags": flags, "points": points,
            "bytes_per_ggas": slope(steady), "steady_from_block": warmup}


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--entries", type=state_scale.parse_size, default=state_scale.parse_size("1m"))
    ap.add_argument("--blocks", type=int, default=320)
    ap.add_argument("--gas", default="100M", help="gas per block of the mix")
    ap.add_argument("--chunk", type=int, default=32, help="blocks per import")
    ap.add_argument("--keep", type=int, default=128)
    ap.add_argument("--interval", type=int, default=32)
    ap.add_argument("--work", default=os.path.join(ROOT, "target/prune-growth"))
    ap.add_argument("--gigagas", default=os.path.join(ROOT, "target/release/gigagas"))
    ap.add_argument("--bench", default=os.path.join(ROOT, "target/release/gigagas-bench"))
    ap.add_argument("--json", action="store_true", help="print the results as one JSON object")
    args = ap.parse_args()
    work = os.path.join(args.work, f"entries-{args.entries}-blocks-{args.blocks}")
    os.makedirs(work, exist_ok=True)
    gen = state_scale.generate(args.bench, args.entries, args.blocks, args.gas, work)
    with open(os.path.join(work, "chain", "info.json")) as f:
        gas = gas_of(json.load(f), args.blocks)
    with open(os.path.join(work, "chain", "chain-blocks.rlp"), "rb") as f:
        blocks = rlp_items(f.read())
    assert len(blocks) == args.blocks, (len(blocks), args.blocks)
    chunks = [blocks[i:i + args.chunk] for i in range(0, len(blocks), args.chunk)]
    warmup = args.keep + args.interval
    modes = [("unpruned", []),
             ("pruned", ["--prune-trie-keep", str(args.keep),
                         "--prune-trie-interval", str(args.interval)])]
    results = {"entries": args.entries, "blocks": args.blocks, "gas_per_block": args.gas,
               "mix_gas": gen["mix_gas"], "keep": args.keep, "interval": args.interval,
               "modes": [run_mode(args.gigagas, work, name, flags, chunks, gas, warmup)
                         for name, flags in modes]}
    with open(os.path.join(args.work, "prune-growth.json"), "w") as f:
        json.dump(results, f, indent=1)
    if args.json:
        print(json.dumps(results, indent=1))
    else:
        print(f"{'mode':<10} {'start MB':>10} {'end MB':>10} {'MB/Ggas past block ' + str(warmup):>24}")
        for m in results["modes"]:
            print(f"{m['mode']:<10} {m['points'][0][2] / 1e6:10.1f} {m['points'][-1][2] / 1e6:10.1f}"
                  f" {m['bytes_per_ggas'] / 1e6:24.1f}")


if __name__ == "__main__":
    main()
