#!/usr/bin/env python3
"""The Engine API replay benchmark: a `gigagas-bench gen-chain` folder replayed into a fresh
gigagas node per configuration, as a consensus client would send it (`gigagas-bench replay`:
newPayload + forkchoiceUpdated per block over JWT, stages from the node's metrics), and
`gigagas import` of the same file, in one run.

Configurations (`--configs`, comma-separated): `geth` (geth 1.17.10 fed the same payloads over
its Engine API: `geth init` + `geth --authrpc.*`, no peers; no stage breakdown, geth exports
no such metrics), `sequential` (`--engine.parallel false`, one
thread), `parallel-T` (T threads, gas-limit scheduler), `parallel-T-ols` (T threads, block
order); a `-noprewarm` suffix adds `--engine.prewarm false` (payloads without a BAL then run on
the sequential reference alone; with T threads and prewarming, T - 1 workers prewarm it), an
`-optimistic` suffix `--engine.optimistic true` (the reference commits the workers' results
when what they read still holds, instead of their only warming the cache), an
`-io-DESIGN` suffix `--engine.io DESIGN` (prefetch-parallel, prefetch, on-demand), a last
`-rootafter` suffix `--engine.state-root-beside false` (the state root of a payload with a BAL
computed after execution instead of from the BAL beside it), a last `-recoverfirst` suffix
`--engine.stream-senders false` (the senders the pool did not know recovered before execution
instead of by the workers as they claim each transaction). Canonical blocks are committed on
the persistence thread while the next payloads execute (the node's default, as reth does); any
configuration but `geth` takes a final `-syncpersist` suffix: `--engine.persistence-background
false` (each committed before its forkchoice update returns), or `-bgpersist` (the default,
named), before which a `-nopreserve` suffix (any configuration but `geth`) gives
`--engine.preserve-trie false` (every state root read from the store's trie nodes instead of
starting from the trie kept from the block before). A `-poolNN` part anywhere after the executor (`parallel-2-pool90`) sends NN% of each
block's transactions to the node's pool (`eth_sendRawTransaction`) before its `newPayload`,
untimed, as a network would have: the node then recovers those senders before the block.
Caches (`--caches`): `cold` (the OS page cache dropped after `gigagas init`, before the node
starts: every genesis read goes to the disk) and `warm` (the datadir just written, in the page
cache). `--restart-at N` kills the node with SIGKILL after block N of each replay, restarts it
and resumes at its head + 1 (what a crash mid-sync does); the final head must still be the
chain's last block. Runs alternate configurations (config A, B, ..., then A again).

Writes per run the replay's CSV/JSON/PNG and the node's log under --out/<config>-<cache>-<run>/, and
--out/summary.json; prints a table (or the summary with --json).

Usage: python3 testing/engine_replay.py --chain target/chains/amsterdam-mainnet-300m
           [--configs sequential,parallel-1,parallel-2] [--caches cold,warm] [--runs 1]
           [--import] [--restart-at N] [--out target/replay/NAME] [--json]
"""

import argparse
import json
import os
import re
import signal
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "testing"))
from gigagas_testing import GethNode, GigagasNode, json_rpc  # noqa: E402
from gigagas_testing.rpc import metric  # noqa: E402


def start_node(gigagas, datadir, flags):
    """gigagas on `datadir` with its Engine API, JSON-RPC and metrics, no network."""
    return GigagasNode(gigagas, datadir, ["--disable-network"] + flags, metrics=True)


def drop_page_cache():
    """Drops the OS page cache (root only); whether it could."""
    subprocess.run(["sync"], check=False)
    try:
        with open("/proc/sys/vm/drop_caches", "w") as f:
            f.write("3\n")
        return True
    except OSError:
        return False


def flags_of(config):
    if config == "geth":
        return [], "geth"
    if config.endswith("-bgpersist"):
        flags, scheduler = flags_of(config.removesuffix("-bgpersist"))
        return flags + ["--engine.persistence-background", "true"], scheduler
    if config.endswith("-syncpersist"):
        flags, scheduler = flags_of(config.removesuffix("-syncpersist"))
        return flags + ["--engine.persistence-background", "false"], scheduler
    if config.endswith("-nopreserve"):
        flags, scheduler = flags_of(config.removesuffix("-nopreserve"))
        return flags + ["--engine.preserve-trie", "false"], scheduler
    if config == "sequential":
        return ["--engine.parallel", "false", "--engine.threads", "1"], "sequential"
    m = re.fullmatch(r"parallel-(\d+)(-ols)?(-noprewarm|-optimistic)?"
                     r"(?:-io-(prefetch-parallel|prefetch|on-demand))?(-rootafter)?(-recoverfirst)?",
                     config)
    if not m:
        raise SystemExit(f"engine_replay: unknown configuration {config}")
    scheduler = "ols" if m.group(2) else "gas-limit"
    flags = ["--engine.threads", m.group(1), "--engine.scheduler", scheduler]
    if m.group(3) == "-noprewarm":
        flags += ["--engine.prewarm", "false"]
    if m.group(3) == "-optimistic":
        flags += ["--engine.optimistic", "true"]
    if m.group(4):
        flags += ["--engine.io", m.group(4)]
    if m.group(5):
        flags += ["--engine.state-root-beside", "false"]
    if m.group(6):
        flags += ["--engine.stream-senders", "false"]
    return flags, scheduler


def replay(bench, node, chain, out, label, start=None, to=None, pool_share=0.0):
    cmd = [bench, "replay", "--chain", chain, "--engine", node.engine_url, "--jwt-secret",
           node.jwt_path, "--label", label, "--json"]
    if pool_share:
        cmd += ["--pool-share", str(pool_share), "--pool-rpc", node.url]
    if getattr(node, "metrics_addr", None):
        cmd += ["--metrics", f"http://{node.metrics_addr}/metrics"]
    if out:
        cmd += ["--out", out]
    if start:
        cmd += ["--from", str(start)]
    if to:
        cmd += ["--to", str(to)]
    proc = subprocess.run(cmd, capture_output=True, text=True)
    if proc.returncode != 0:
        tail = "".join(node.log[-20:])
        raise SystemExit(f"engine_replay: {label}: replay failed: {proc.stderr[-3000:]}\nnode:\n{tail}")
    return json.loads(proc.stdout)


def pool_share_of(config):
    """A configuration's `-poolNN` part (NN% of each block's transactions sent to the node's
    pool before the block) -> (the configuration without it, the share)."""
    m = re.search(r"-pool(\d+)", config)
    if not m:
        return config, 0.0
    return config.replace(m.group(0), "", 1), int(m.group(1)) / 100


def one_run(args, info, config, cache, run, bench):
    base, pool_share = pool_share_of(config)
    flags, scheduler = flags_of(base)
    label = f"{config}-{cache}-{run}"
    with tempfile.TemporaryDirectory(dir=os.path.join(ROOT, "target")) as tmp:
        datadir = os.path.join(tmp, "datadir")
        genesis = os.path.join(args.chain, "genesis.json")
        if base == "geth":
            if args.restart_at:
                raise SystemExit("engine_replay: --restart-at is for gigagas configurations")
            GethNode.init(args.geth, datadir, genesis)
            dropped = drop_page_cache() if cache == "cold" else None
            node = GethNode(args.geth, datadir)
        else:
            subprocess.run([args.gigagas, "init", "--genesis", genesis, "--datadir", datadir],
                           check=True, capture_output=True)
            dropped = drop_page_cache() if cache == "cold" else None
            node = start_node(args.gigagas, datadir, flags)
        out = os.path.join(args.out, label)
        restarts = 0
        try:
            if args.restart_at and args.restart_at < len(info["blocks"]):
                first = replay(bench, node, args.chain, None, label, to=args.restart_at,
                               pool_share=pool_share)
                node.stop(signal.SIGKILL)
                restarts = 1
                if cache == "cold":
                    drop_page_cache()
                node = start_node(args.gigagas, datadir, flags)
                resumed_at = node.head() + 1
                report = replay(bench, node, args.chain, out, label, start=resumed_at,
                                pool_share=pool_share)
                report["restart"] = {"killed_after": args.restart_at, "resumed_at": resumed_at,
                                     "first_part_blocks": first["blocks"]}
            else:
                report = replay(bench, node, args.chain, out, label, pool_share=pool_share)
            # With background persistence the store trails the last forkchoice update by the
            # blocks being committed (JSON-RPC serves them from memory meanwhile): the run ends
            # when the store holds the last block (gigagas's persisted-block gauge; geth's
            # head), and that wait counts in its Mgas/s.
            last = info["blocks"][-1]
            waited = time.monotonic()
            while True:
                persisted = (int(metric(node.metrics(), "gigagas_chain_persisted_number"))
                             if base != "geth" else last["number"])
                head = json_rpc(node.url, "eth_getBlockByNumber", ["latest", False])
                if (persisted >= last["number"] and int(head["number"], 16) >= last["number"]) \
                        or time.monotonic() - waited > 30:
                    break
                time.sleep(0.005)
            tail = time.monotonic() - waited
            report["persist_tail_s"] = tail
            report["seconds"] += tail
            report["mgas_per_s"] = report["gas"] / report["seconds"] / 1e6
        finally:
            node.stop()
            # The node's output beside the run's (with RUST_LOG=executor::parallel=debug, the
            # parallel executor's stages per block).
            if os.path.isdir(out):
                with open(os.path.join(out, "node.log"), "w") as f:
                    f.write("".join(node.log))
    last = info["blocks"][-1]
    if int(head["number"], 16) != last["number"] or head["hash"] != last["hash"]:
        raise SystemExit(f"engine_replay: {label}: head {head['number']} {head['hash']}, the chain's "
                         f"last block is {last['number']} {last['hash']}")
    report.update({"config": config, "cache": cache, "run": run, "scheduler": scheduler,
                   "page_cache_dropped": dropped, "restarts": restarts})
    return report


def pct(share):
    return "-" if share is None else f"{100 * share:.1f}%"


def import_run(args, run):
    from_import = {}
    with tempfile.TemporaryDirectory(dir=os.path.join(ROOT, "target")) as tmp:
        datadir = os.path.join(tmp, "datadir")
        subprocess.run([args.gigagas, "init", "--genesis", os.path.join(args.chain, "genesis.json"),
                        "--datadir", datadir], check=True, capture_output=True)
        drop_page_cache()
        start = time.perf_counter()
        proc = subprocess.run([args.gigagas, "import", os.path.join(args.chain, "chain.rlp"),
                               "--datadir", datadir, "--json"], capture_output=True, text=True)
        wall = time.perf_counter() - start
        if proc.returncode != 0:
            raise SystemExit(f"engine_replay: import failed: {proc.stdout[-2000:]}{proc.stderr[-2000:]}")
        from_import = json.loads(proc.stdout[proc.stdout.index("{"):])
    return {"config": "import", "cache": "cold", "run": run, "seconds": wall,
            "gas": from_import.get("gas"), "blocks": from_import.get("blocks_imported")}


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--chain", required=True, help="a gen-chain folder")
    ap.add_argument("--gigagas", default=os.path.join(ROOT, "target/release/gigagas"))
    ap.add_argument("--bench", default=os.path.join(ROOT, "target/release/gigagas-bench"))
    ap.add_argument("--configs", default="sequential,parallel-1,parallel-2")
    ap.add_argument("--geth", help="geth binary for the `geth` configuration "
                    "(default: testing/geth_install.sh, v1.17.10)")
    ap.add_argument("--caches", default="cold,warm")
    ap.add_argument("--runs", type=int, default=1)
    ap.add_argument("--import", dest="do_import", action="store_true",
                    help="also time `gigagas import` of the same chain.rlp (cold)")
    ap.add_argument("--restart-at", type=int, help="SIGKILL the node after this block, resume")
    ap.add_argument("--out", help="output folder (default target/replay/<chain name>)")
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()
    args.chain = os.path.abspath(args.chain)
    args.out = args.out or os.path.join(ROOT, "target/replay", os.path.basename(args.chain))
    os.makedirs(args.out, exist_ok=True)
    with open(os.path.join(args.chain, "info.json")) as f:
        info = json.load(f)
    configs = args.configs.split(",")
    caches = args.caches.split(",")
    if "geth" in configs and not args.geth:
        args.geth = os.path.join(subprocess.run(
            ["bash", os.path.join(ROOT, "testing/geth_install.sh")], check=True, capture_output=True,
            text=True).stdout.strip().splitlines()[-1], "geth")
    reports, imports = [], []
    for run in range(1, args.runs + 1):
        for config in configs:
            for cache in caches:
                r = one_run(args, info, config, cache, run, args.bench)
                reports.append(r)
                print(f"engine_replay: {r['config']:>16} {r['cache']:>4} run {run}: "
                      f"{r['mgas_per_s']:8.1f} Mgas/s, newPayload p50 {r['new_payload']['p50'] * 1e3:.1f} ms",
                      file=sys.stderr)
        if args.do_import:
            imports.append(import_run(args, run))
    rows = []
    for config in configs:
        for cache in caches:
            rs = [r for r in reports if r["config"] == config and r["cache"] == cache]
            med = lambda f: statistics.median(f(r) for r in rs)
            stages = {k: med(lambda r, k=k: r["stages"].get(k, 0.0)) for k in rs[0]["stages"]}
            rows.append({
                "config": config, "cache": cache, "runs": len(rs),
                "mgas_per_s": round(med(lambda r: r["mgas_per_s"]), 1),
                "new_payload_p50_ms": round(med(lambda r: r["new_payload"]["p50"]) * 1e3, 1),
                "new_payload_p99_ms": round(med(lambda r: r["new_payload"]["p99"]) * 1e3, 1),
                "new_payload_max_ms": round(med(lambda r: r["new_payload"]["max"]) * 1e3, 1),
                "forkchoice_p50_ms": round(med(lambda r: r["forkchoice"]["p50"]) * 1e3, 1),
                "state_root_share": round(med(lambda r: r["state_root_share"] or 0.0), 3),
                "stages_s": {k: round(v, 3) for k, v in stages.items()},
                # Execution with its BAL reads, over the node's newPayload time (the issue's
                # critical-path share), and the senders the pool had recovered.
                "exec_io_share": round((stages.get("execution", 0.0) + stages.get("io", 0.0))
                                       / stages["node_new_payload"], 3)
                if stages.get("node_new_payload") else None,
                "senders_known_share": round(med(lambda r: (r.get("senders_known") or 0.0)
                                                 / max(r["transactions"], 1)), 3)
                if rs[0].get("senders_known") is not None else None,
                "page_cache_dropped": rs[0]["page_cache_dropped"],
            })
    gas = info["gas_used"]
    if imports:
        secs = statistics.median(i["seconds"] for i in imports)
        rows.append({"config": "import", "cache": "cold", "runs": len(imports),
                     "mgas_per_s": round(gas / secs / 1e6, 1)})
    summary = {
        "chain": args.chain, "fork": info.get("fork"), "mix": info.get("mix"),
        "gas_per_block": info.get("gas_per_block"), "blocks": len(info["blocks"]), "gas": gas,
        "cores": os.cpu_count(),
        "cpu": next((line.split(":", 1)[1].strip() for line in open("/proc/cpuinfo")
                     if line.startswith("model name")), "?"),
        "restart_at": args.restart_at, "rows": rows, "runs": reports, "imports": imports,
    }
    with open(os.path.join(args.out, "summary.json"), "w") as f:
        json.dump(summary, f, indent=1)
    if args.json:
        print(json.dumps({k: v for k, v in summary.items() if k != "runs"}, indent=1))
        return
    print(f"{summary['chain']}: {summary['blocks']} blocks, {gas / 1e9:.2f} Ggas, "
          f"{summary['cores']} cores ({summary['cpu']})")
    print(f"{'config':>16} {'cache':>5} {'Mgas/s':>8} {'np p50':>8} {'np p99':>8} {'np max':>8} "
          f"{'fcu p50':>8} {'root %':>7} {'exec+io %':>9} {'known %':>7}")
    for r in rows:
        if r["config"] == "import":
            print(f"{'gigagas import':>16} {'cold':>5} {r['mgas_per_s']:8.1f}")
            continue
        print(f"{r['config']:>16} {r['cache']:>5} {r['mgas_per_s']:8.1f} {r['new_payload_p50_ms']:8.1f} "
              f"{r['new_payload_p99_ms']:8.1f} {r['new_payload_max_ms']:8.1f} "
              f"{r['forkchoice_p50_ms']:8.1f} {100 * r['state_root_share']:6.1f}% "
              f"{pct(r['exec_io_share']):>9} {pct(r['senders_known_share']):>7}")
    print(f"per-run CSV/JSON/PNG and summary.json in {args.out}")


if __name__ == "__main__":
    main()
