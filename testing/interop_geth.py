#!/usr/bin/env python3
"""gigagas and geth 1.17.10 over devp2p, both ways, measured.

For each chain (`--chains`: an Osaka chain and an Amsterdam chain with BALs, each >= 400 blocks
of transactions built by `geth --dev` through testing/geth_amsterdam.py into target/chains/
on first use):

  (a) geth imports the chain and serves it on loopback; a fresh `gigagas node --chain
      GENESIS.json --trusted-peers GETH_ENODE --debug.tip HEAD` syncs to it over eth/69-71
      (Amsterdam blocks executed in parallel on the BALs fetched over eth/71: checked with the
      node's `gigagas_executor_blocks_total{executor="parallel"}`), head hash and state root
      checked against geth's; (a') a fresh gigagas given only geth's ENR as `--bootnodes`
      finds it by discovery v5 alone (its `eth` entry on gigagas's fork) and syncs from it;
  (b) a fresh geth that knows only gigagas (its one static peer) full-syncs the chain from it
      (`--syncmode full --synctarget HEAD`), head hash and state root checked;
  (b') a fresh geth given gigagas's enode only as `--bootnodes` finds it by discovery v4 and
      full-syncs from it; (b'') the same by discovery v5 alone, from gigagas's ENR (its `eth`
      entry names the fork, which geth's v5 dialer checks);
  (ref) a fresh geth full-syncs the same chain from the serving geth the same way.

Then (c), unless `--no-devnet`: the mixed devnet of testing/devnet_mixed.py, on Osaka (Prysm
v7.0.0 has no Gloas): two Prysm v7.0.0 beacon nodes, one driving geth and one gigagas, the two
execution clients peered over devp2p, half the validators each, transactions sent to both,
until the chain finalizes; checked there (equal blocks and heads, blocks each built accepted by
the other, transactions sent to each included in blocks the other built).

Each sync is timed from its process's start to the moment its JSON-RPC reports the head
(`--runs` times, the median kept), and reported in blocks/s and Mgas/s. `--json` prints the
results as JSON; logs go to `--out` (the datadirs are removed as each sync ends).

Usage: testing/.venv/bin/python testing/interop_geth.py [--chains osaka,amsterdam] [--runs 3]
           [--gigagas target/release/gigagas] [--geth PATH] [--out target/interop-geth]
           [--chain-dir DIR] [--no-devnet] [--json]
"""

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from gigagas_testing import GethNode, GigagasNode, NodeError, geth_binary  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
# The chains: >= 400 rounds of 120 transactions (transfers to new accounts, storage writes,
# calls with value), 60M gas blocks, one round a block.
CHAIN_ARGS = ["--load", "heavy", "--blocks", "420", "--txs", "120", "--gas-limit", "60000000",
              "--period", "1"]


def log(msg):
    print(f"interop_geth: {msg}", file=sys.stderr, flush=True)


def chain_folder(fork, geth):
    """target/chains/interop-FORK, built by geth --dev when absent."""
    folder = os.path.join(ROOT, "target/chains", f"interop-{fork}")
    if not os.path.exists(os.path.join(folder, "summary.json")):
        log(f"building the {fork} chain with geth --dev into {folder} (about 10 minutes)")
        subprocess.run([sys.executable, os.path.join(ROOT, "testing/geth_amsterdam.py"), "--out",
                        folder, "--fork", fork, "--geth", geth] + CHAIN_ARGS, check=True)
    with open(os.path.join(folder, "summary.json")) as f:
        summary = json.load(f)
    with open(os.path.join(folder, "genesis.json")) as f:
        summary["chain_id"] = json.load(f)["config"]["chainId"]
    return folder, summary


def wait_for_head(node, head_hash, number, timeout, what):
    """Polls `node` until its head is `head_hash` (block `number`); seconds waited are not
    returned, the caller times from the process start. NodeError when the process exits or
    `timeout` passes."""
    deadline = time.time() + timeout
    while time.time() < deadline:
        if not node.alive():
            raise NodeError(f"{what} exited before the head:\n{node.tail()}")
        try:
            block = node.rpc("eth_getBlockByNumber", hex(number), False)
            if block and block["hash"] == head_hash:
                return block
        except Exception:  # noqa: BLE001 - not up or not there yet
            pass
        time.sleep(0.05)
    raise NodeError(f"{what}: not at block {number} {head_hash} in {timeout} s:\n{node.tail()}")


def static_config(path, enode):
    """A geth TOML config whose one static (and trusted) peer is `enode`: geth has no flag for
    static peers."""
    with open(path, "w") as f:
        f.write(f'[Node.P2P]\nStaticNodes = ["{enode}"]\nTrustedNodes = ["{enode}"]\n')


def geth_sync(geth, folder, summary, work, name, peer_enode, timeout, discover=None):
    """A fresh geth full-syncs the chain from `peer_enode` alone (its static peer; with
    `discover` "v4" or "v5", its only bootnode instead — an enode or an ENR — found by that
    discovery alone): seconds from its start to the head, and its head block."""
    datadir = os.path.join(work, name)
    shutil.rmtree(datadir, ignore_errors=True)
    GethNode.init(geth, datadir, os.path.join(folder, "genesis.json"))
    if discover:
        # Discovery on (GethNode's `discovery=True`), one version only, gigagas the only
        # bootnode.
        other = "v5" if discover == "v4" else "v4"
        flags = ["--bootnodes", peer_enode, f"--discovery.{discover}", f"--discovery.{other}=false"]
    else:
        config = os.path.join(work, f"{name}.toml")
        static_config(config, peer_enode)
        flags = ["--config", config]
    start = time.time()
    node = GethNode(geth, datadir, flags + ["--networkid", str(summary["chain_id"]),
                                            "--synctarget", summary["head_hash"]],
                    http_api="eth,net,admin", log_path=os.path.join(work, f"{name}.log"), p2p=True,
                    discovery=bool(discover))
    try:
        block = wait_for_head(node, summary["head_hash"], summary["head"], timeout, name)
        return time.time() - start, block
    finally:
        node.stop()
        # Its log stays; the datadir (hundreds of MB of geth's database) goes.
        shutil.rmtree(datadir, ignore_errors=True)


def parallel_blocks(node):
    """`gigagas_executor_blocks_total` by executor, from the node's metrics."""
    counts = {}
    for line in node.metrics().splitlines():
        if line.startswith("gigagas_executor_blocks_total{"):
            label = line.split('executor="', 1)[1].split('"', 1)[0]
            counts[label] = counts.get(label, 0) + int(float(line.rsplit(" ", 1)[1]))
    return counts


def run_chain(fork, geth, gigagas, out, runs, timeout, folder=None):
    if folder:
        with open(os.path.join(folder, "summary.json")) as f:
            summary = json.load(f)
        with open(os.path.join(folder, "genesis.json")) as f:
            summary["chain_id"] = json.load(f)["config"]["chainId"]
    else:
        folder, summary = chain_folder(fork, geth)
    head, head_hash, gas = summary["head"], summary["head_hash"], summary["gas_used"]
    work = os.path.join(out, fork)
    shutil.rmtree(work, ignore_errors=True)
    os.makedirs(work)
    log(f"{fork}: {head} blocks, {summary['transactions']} transactions, {gas / 1e6:.0f} Mgas, "
        f"head {head_hash}")
    # The serving geth: the chain imported, devp2p on loopback.
    served = os.path.join(work, "geth-served")
    GethNode.init(geth, served, os.path.join(folder, "genesis.json"))
    subprocess.run([geth, "import", "--datadir", served, os.path.join(folder, "chain.rlp")],
                   check=True, capture_output=True)
    # Discovery on (no bootnodes: it only answers), so that (a') can find it by discv5.
    server = GethNode(geth, served, ["--networkid", str(summary["chain_id"])],
                      http_api="eth,net,admin", log_path=os.path.join(work, "geth-served.log"),
                      p2p=True, discovery=True)
    expected = server.rpc("eth_getBlockByNumber", hex(head), False)
    if expected["hash"] != head_hash:
        raise SystemExit(f"interop_geth: geth imported {fork} to another head {expected['hash']}")
    results = {"fork": fork, "blocks": head, "transactions": summary["transactions"],
               "gas": gas, "head": head_hash, "state_root": expected["stateRoot"]}
    checks = []
    try:
        # (a) gigagas syncs from geth.
        times, executors = [], None
        for run in range(runs):
            datadir = os.path.join(work, f"gigagas-{run}")
            shutil.rmtree(datadir, ignore_errors=True)
            start = time.time()
            node = GigagasNode(gigagas, datadir, ["--chain", os.path.join(folder, "genesis.json"),
                                                  "--trusted-peers", server.enode,
                                                  "--debug.tip", head_hash, "--libp2p.disable",
                                                  "--enable-discv5-discovery",
                                                  "--discovery.v5.port", "0"],
                               metrics=True, log_path=os.path.join(work, f"gigagas-{run}.log"))
            try:
                block = wait_for_head(node, head_hash, head, timeout, "gigagas")
                times.append(time.time() - start)
                executors = parallel_blocks(node)
                root_ok = block["stateRoot"] == expected["stateRoot"]
                checks.append((f"{fork} (a) run {run}: gigagas at geth's head and state root",
                               root_ok, block["stateRoot"]))
            finally:
                if run < runs - 1:
                    node.stop()
                    shutil.rmtree(datadir, ignore_errors=True)
        serving = node  # the last run's node serves (b)
        # (a') gigagas finds geth by discovery v5 alone (geth's ENR its only bootnode, no
        # trusted peer) and syncs from it.
        found = os.path.join(work, "gigagas-discovers-geth")
        shutil.rmtree(found, ignore_errors=True)
        start = time.time()
        enr = server.rpc("admin_nodeInfo")["enr"]
        seeker = GigagasNode(gigagas, found, ["--chain", os.path.join(folder, "genesis.json"),
                                              "--bootnodes", enr, "--debug.tip", head_hash,
                                              "--libp2p.disable", "--disable-discv4-discovery",
                                              "--enable-discv5-discovery",
                                              "--discovery.v5.port", "0"],
                             log_path=os.path.join(work, "gigagas-discovers-geth.log"))
        try:
            block = wait_for_head(seeker, head_hash, head, timeout, "gigagas (discv5)")
            checks.append((f"{fork} (a'): gigagas found geth by discovery v5 alone and synced to "
                           "its head and root", block["stateRoot"] == expected["stateRoot"],
                           f"{time.time() - start:.2f} s"))
        finally:
            seeker.stop()
            shutil.rmtree(found, ignore_errors=True)
        parallel = executors.get("parallel", 0)
        if "amsterdam" in fork:
            checks.append((f"{fork} (a): every block executed in parallel on its eth/71 BAL",
                           parallel == head, f"{parallel}/{head} parallel ({executors})"))
        results["gigagas_from_geth"] = timing(times, head, gas)
        results["gigagas_executors"] = executors
        # (ref) geth syncs from geth.
        times = [geth_sync(geth, folder, summary, work, f"geth-from-geth-{r}", server.enode,
                           timeout)[0] for r in range(runs)]
        results["geth_from_geth"] = timing(times, head, gas)
        server.stop()
        # (b) geth syncs from gigagas alone.
        times = []
        for r in range(runs):
            seconds, block = geth_sync(geth, folder, summary, work, f"geth-from-gigagas-{r}",
                                       serving.enode, timeout)
            times.append(seconds)
            checks.append((f"{fork} (b) run {r}: geth synced from gigagas to the head and root",
                           block["stateRoot"] == expected["stateRoot"], block["stateRoot"]))
        results["geth_from_gigagas"] = timing(times, head, gas)
        # (b') the same, geth knowing gigagas only as a bootnode: found by discovery v4, then
        # (b'') by discovery v5 from its ENR (the `eth` entry says it is on geth's fork).
        for version, bootnode, mark in (("v4", serving.enode, "b'"), ("v5", serving.discv5_enr, "b''")):
            seconds, block = geth_sync(geth, folder, summary, work, f"geth-discovers-gigagas-{version}",
                                       bootnode, timeout, discover=version)
            checks.append((f"{fork} ({mark}): geth found gigagas by discovery {version} alone and "
                           "synced to the root", block["stateRoot"] == expected["stateRoot"],
                           f"{seconds:.2f} s"))
        serving.stop()
    finally:
        server.stop()
        for folder in [served] + [os.path.join(work, f"gigagas-{r}") for r in range(runs)]:
            shutil.rmtree(folder, ignore_errors=True)
    return results, checks


def mixed_devnet(geth, gigagas):
    """(c): testing/devnet_mixed.py's summary (its `ok` and `failures`), or its failure."""
    log("(c) the mixed Prysm devnet (about 8 minutes)")
    run = subprocess.run([sys.executable, os.path.join(ROOT, "testing/devnet_mixed.py"), "--json",
                          "--geth", geth, "--gigagas", gigagas], capture_output=True, text=True)
    try:
        return json.loads(run.stdout)
    except ValueError:
        return {"ok": False, "failures": [f"devnet_mixed exited {run.returncode}: "
                                          f"{run.stderr[-2000:]}"]}


def timing(times, blocks, gas):
    median = statistics.median(times)
    return {"seconds": [round(t, 3) for t in times], "median_s": round(median, 3),
            "blocks_per_s": round(blocks / median, 1), "mgas_per_s": round(gas / 1e6 / median, 1)}


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--gigagas", default=os.path.join(ROOT, "target/release/gigagas"))
    ap.add_argument("--geth", help="geth binary (default: testing/geth_install.sh)")
    ap.add_argument("--chains", default="osaka,amsterdam")
    ap.add_argument("--runs", type=int, default=1, help="syncs of each kind (median reported)")
    ap.add_argument("--timeout", type=float, default=600, help="seconds a sync may take")
    ap.add_argument("--out", default=os.path.join(ROOT, "target/interop-geth"))
    ap.add_argument("--chain-dir", action="append", default=[],
                    help="also run (a), (b) and (ref) on this folder's chain (genesis.json, "
                         "chain.rlp, summary.json as testing/geth_amsterdam.py writes them)")
    ap.add_argument("--no-devnet", action="store_true", help="skip (c), the mixed Prysm devnet")
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()
    geth = geth_binary(args.geth)
    results, checks = [], []
    chains = [(c, None) for c in args.chains.split(",") if c]
    chains += [(os.path.basename(os.path.normpath(d)), d) for d in args.chain_dir]
    for fork, folder in chains:
        r, c = run_chain(fork, geth, args.gigagas, args.out, args.runs, args.timeout, folder)
        results.append(r)
        checks += c
    devnet = None
    if not args.no_devnet:
        devnet = mixed_devnet(geth, args.gigagas)
        checks.append(("(c) mixed Prysm devnet: geth and gigagas finalize one chain, each "
                       "accepting the other's blocks and including the other's transactions",
                       devnet.get("ok", False),
                       devnet.get("failures") or
                       f"finalized block {devnet.get('finalized_block')}, head "
                       f"{devnet.get('head_block')}, built {devnet.get('blocks_built_by')}, "
                       f"taken across {devnet.get('included_in_the_others_blocks')}"))
    failed = [c for c in checks if not c[1]]
    if args.json:
        print(json.dumps({"results": results, "mixed_devnet": devnet, "checks": [
            {"check": n, "ok": ok, "detail": d} for n, ok, d in checks]}, indent=1))
    else:
        for name, ok, detail in checks:
            print(f"{'ok  ' if ok else 'FAIL'} {name}: {detail}")
        print(f"{'chain':<10} {'blocks':>6} {'Mgas':>7}  {'sync':<18} {'median s':>8} "
              f"{'blocks/s':>8} {'Mgas/s':>7}")
        for r in results:
            for key, label in [("gigagas_from_geth", "gigagas <- geth"),
                               ("geth_from_gigagas", "geth <- gigagas"),
                               ("geth_from_geth", "geth <- geth")]:
                t = r[key]
                print(f"{r['fork']:<10} {r['blocks']:>6} {r['gas'] / 1e6:>7.0f}  {label:<18} "
                      f"{t['median_s']:>8.2f} {t['blocks_per_s']:>8.1f} {t['mgas_per_s']:>7.1f}")
    if failed:
        raise SystemExit(f"interop_geth: {len(failed)} checks failed")


if __name__ == "__main__":
    main()
