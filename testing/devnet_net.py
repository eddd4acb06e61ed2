#!/usr/bin/env python3
"""A multi-process gigagas devnet on loopback: one proposer, N-1 followers, blocks over the network.

For each protocol asked (`--gossip rlnc,rs,gossipsub`), this script starts N gigagas processes:
node 0 with `--dev` (its miner drives the engine as a consensus client would) and a BLS signer
key, publishing every block it makes canonical; nodes 1..N-1 with `--dev.follow`, accepting
blocks signed by node 0's key, each validating what it receives as a `newPayload` (the parallel
executor runs with the BAL the proposer ships) and making it its head. The followers know only
node 0 as their bootnode and find each other by kademlia. Every node's links are shaped by the
node itself (`--net.upload-mbit`, `--net.latency-ms`, `--net.jitter-ms`: an application-level
token bucket and a read delay, because `tc netem` needs root and network namespaces).

While the proposer builds --blocks blocks, the script sends signed transfers and contract calls
to it over JSON-RPC; a third of the way it kills one follower with SIGKILL and restarts it at two
thirds (it has missed blocks: it fetches them from its peers by request/response sync), and after
the blocks it starts one more node from an empty datadir (a late joiner, which must sync the
whole chain by itself). Then it checks that every node reaches the proposer's head with the same
block hash and state root, and reports from the nodes' logs and metrics: the time from the
proposer's publish to each node's decode (p50/p90/p99/max), bytes on the wire per node (all
protocols of the node's connections), chunks useful / useless (dependent) / late (after decode) /
invalid.
Exit status 0 only when every node of every protocol converged.

The same blocks for every protocol: `--gen-chain FILE` builds a chain once (one block per
`--sizes-kb` entry, random calldata: incompressible), and `--replay FILE` makes the proposer feed
it (`gigagas node --dev --dev.replay FILE`) instead of building blocks; a replay run sends no
transactions and needs no Python package.

Usage: python3 testing/devnet_net.py [--gigagas target/release/gigagas] [--nodes 16]
           [--gossip rlnc,rs,gossipsub] [--blocks 10] [--block-time 1.0] [--upload-mbit 25]
           [--latency-ms 50] [--jitter-ms 20] [--replay FILE] [--json]
       python3 testing/devnet_net.py --gen-chain FILE [--sizes-kb 100,500,1000,2000]
"""

import argparse
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from devnet import FUNDED_KEYS, INIT, Sender, metric, start_node, to_checksum_address  # noqa: E402

ANSI = re.compile(r"\x1b\[[0-9;]*m")


def field(line, name):
    m = re.search(rf"\b{name}=(\S+)", ANSI.sub("", line))
    return m.group(1) if m else None


def percentile(values, q):
    if not values:
        return None
    values = sorted(values)
    return values[min(len(values) - 1, int(round(q / 100 * (len(values) - 1))))]


def rlp_items(data):
    """The top-level RLP items of `data` (blocks back to back), as byte strings."""
    items, i = [], 0
    while i < len(data):
        b = data[i]
        if b < 0x80:
            n, h = 1, 0
        elif b < 0xB8 or 0xC0 <= b < 0xF8:
            n, h = b - (0x80 if b < 0xC0 else 0xC0), 1
        else:
            ll = b - (0xB7 if b < 0xC0 else 0xF7)
            n, h = int.from_bytes(data[i + 1:i + 1 + ll], "big"), 1 + ll
        items.append(data[i:i + h + n])
        i += h + n
    return items


def genesis_file(work, gas_limit):
    """testing/dev-genesis.json with another block gas limit, written into `work`."""
    here = os.path.dirname(os.path.abspath(__file__))
    with open(os.path.join(here, "dev-genesis.json")) as f:
        genesis = json.load(f)
    genesis["gasLimit"] = hex(gas_limit)
    path = os.path.join(work, "genesis.json")
    with open(path, "w") as f:
        json.dump(genesis, f)
    return path


def gen_chain(args):
    """Builds a dev chain whose blocks carry --sizes-kb of random calldata each (one size per
    block, in order), on a dev genesis with --gas-limit, and writes it to --gen-chain (RLP blocks
    back to back) and its genesis beside it (FILE.genesis.json), for --replay."""
    os.environ["RUST_LOG"] = "warn"
    work = tempfile.mkdtemp(prefix="gigagas-genchain-")
    genesis = genesis_file(work, args.gas_limit)
    node = start_node(args.gigagas, os.path.join(work, "node"),
                ["--dev", "--dev.block-time", str(args.block_time), "--chain", genesis,
                 "--disable-network"])
    try:
        senders = [Sender(k) for k in FUNDED_KEYS]
        # Just after a block, so that all of the first size's transactions fit the next one;
        # each next size is sent as soon as the previous one is included (no empty block).
        number = int(node.rpc("eth_blockNumber"), 16)
        while int(node.rpc("eth_blockNumber"), 16) == number:
            time.sleep(0.05)
        for size_kb in args.sizes_kb:
            hashes, left, j = [], size_kb * 1000, 0
            while left > 0:
                data = os.urandom(min(left, 100_000))
                left -= len(data)
                s = senders[j % len(senders)]
                j += 1
                hashes.append(s.send(node, to_checksum_address("0x" + os.urandom(20).hex()),
                                     data="0x" + data.hex(), gas=21_000 + 40 * len(data) + 10_000))
            deadline = time.time() + 60
            while node.rpc("eth_getTransactionReceipt", hashes[-1]) is None:
                if time.time() > deadline:
                    raise SystemExit("gen-chain: transactions not included")
                time.sleep(0.02)
        head = int(node.rpc("eth_blockNumber"), 16)
        sizes = []
        with open(args.gen_chain, "wb") as f:
            for number in range(1, head + 1):
                raw = bytes.fromhex(node.rpc("debug_getRawBlock", hex(number))[2:])
                sizes.append(len(raw))
                f.write(raw)
        with open(genesis) as src, open(args.gen_chain + ".genesis.json", "w") as dst:
            dst.write(src.read())
        big = [round(b / 1000) for b in sizes if b > 10_000]
        print(f"gen-chain: {head} blocks in {args.gen_chain} (KB of the blocks with calldata: {big}), "
              f"genesis {args.gen_chain}.genesis.json", file=sys.stderr)
        return 0
    finally:
        node.kill()


def run_protocol(args, protocol):
    """One devnet with `protocol`; returns its summary (and `ok`)."""
    os.environ["RUST_LOG"] = "warn,net=info"
    work = tempfile.mkdtemp(prefix=f"gigagas-devnet-{protocol.replace(':', '-').replace(',', '-')}-")
    shaping = []
    if args.upload_mbit:
        shaping += ["--net.upload-mbit", str(args.upload_mbit)]
    if args.latency_ms:
        shaping += ["--net.latency-ms", str(args.latency_ms), "--net.jitter-ms", str(args.jitter_ms)]
    # A variant: `rlnc:per-peer=4,chunks=32` adds `--gossip.per-peer 4 --gossip.chunks 32`.
    name, _, variant = protocol.partition(":")
    tuning = []
    for kv in filter(None, variant.split(",")):
        k, _, v = kv.partition("=")
        tuning += [f"--gossip.{k}", v]
    if args.loss:
        help_text = subprocess.run([args.gigagas, "node", "--help"], capture_output=True,
                                   text=True).stdout
        if "--net.loss" not in help_text:
            raise SystemExit(f"devnet_net: {args.gigagas} has no --net.loss (fault injection is "
                             "not in the production binary): `make build-faults`, then "
                             "--gigagas target/faults/release/gigagas")
        shaping += ["--net.loss", str(args.loss)]
    common = ["--gossip", name, "--engine.threads", str(args.threads)] + tuning + shaping
    chain = ["--chain", "dev"]
    replay = []
    if args.replay:
        genesis = args.replay + ".genesis.json"
        if os.path.exists(genesis):
            chain = ["--chain", genesis]
        replay = ["--dev.replay", args.replay]
    proposer = start_node(args.gigagas, os.path.join(work, "node0"),
                    ["--dev", "--dev.block-time", str(args.block_time)] + chain + replay + [
                     "--dev.min-peers", str(min(8, args.nodes - 1)),
                     "--gossip.signer-key", os.path.join(work, "bls-seed")] + common)
    p2p, key = proposer.p2p, proposer.proposer
    nodes = [proposer]
    try:
        for i in range(1, args.nodes):
            nodes.append(start_node(args.gigagas, os.path.join(work, f"node{i}"),
                              chain + ["--dev.follow", "--gossip.proposer", key,
                                       "--libp2p.bootnodes", p2p] + common))
        # Peers: every node connected to at least min(D, N-1) others, or 30 s.
        want = min(8, args.nodes - 1)
        deadline = time.time() + 30
        while time.time() < deadline:
            counts = [int(n.rpc("net_peerCount"), 16) for n in nodes]
            if min(counts) >= want:
                break
            time.sleep(0.5)
        start = int(proposer.rpc("eth_blockNumber"), 16)
        blocks = args.blocks
        if args.replay:
            # The same blocks for every protocol: the proposer feeds them from the file.
            with open(args.replay, "rb") as f:
                blocks = len(rlp_items(f.read())) - start
            senders, sent, contract = [], 0, True
        else:
            senders = [Sender(k) for k in FUNDED_KEYS]
            for s in senders:
                s.nonce = int(proposer.rpc("eth_getTransactionCount", s.address, "pending"), 16)
            deploy = senders[0].send(proposer, None, data="0x" + INIT, gas=200_000)
            contract = None
            sent = 1
        target = start + blocks
        deadline = time.time() + blocks * args.block_time * 4 + 60
        killed, killed_at = None, None
        follow_args = chain + ["--dev.follow", "--gossip.proposer", key, "--libp2p.bootnodes", p2p] + common
        while int(proposer.rpc("eth_blockNumber"), 16) < target:
            number = int(proposer.rpc("eth_blockNumber"), 16)
            # kill -9 the last follower a third of the way, restart it at two thirds: it has
            # missed blocks and must fetch them from its peers.
            kill_at = args.kill_at if args.kill_at is not None else start + blocks // 3
            if args.restart and len(nodes) > 2 and killed is None and number >= kill_at:
                killed = len(nodes) - 1
                nodes[killed].kill()
                killed_at = time.time()
            if killed is not None and killed >= 0 and number >= start + 2 * blocks // 3:
                nodes[killed] = start_node(args.gigagas, os.path.join(work, f"node{killed}"), follow_args)
                killed = -1
            if time.time() > deadline:
                raise RuntimeError("the proposer did not build the blocks in time")
            if contract is None:
                r = proposer.rpc("eth_getTransactionReceipt", deploy)
                contract = r and to_checksum_address(r["contractAddress"])
            for s in senders[1:]:
                if contract:
                    s.send(proposer, contract, gas=60_000)
                s.send(proposer, to_checksum_address("0x" + os.urandom(20).hex()), value=1)
                sent += 2 if contract else 1
            # Large blocks: transactions carrying random (incompressible) calldata; gas is the
            # EIP-7623 floor, 40 per non-zero byte.
            for j in range(0 if args.replay else args.calldata_txs):
                data = os.urandom(args.calldata_kb * 1024)
                s = senders[j % len(senders)]
                s.send(proposer, to_checksum_address("0x" + os.urandom(20).hex()),
                       data="0x" + data.hex(), gas=21_000 + 40 * len(data) + 10_000)
                sent += 1
            # A replay sends nothing: poll often, so that the kill lands within ~0.1 s of the
            # publish of block --kill-at (mid-propagation of a large block).
            time.sleep(0.1 if args.replay else args.block_time if args.calldata_txs else args.block_time / 2)
        if args.late_joiner:
            # A node from scratch, after the fact: it must reach the head by itself.
            nodes.append(start_node(args.gigagas, os.path.join(work, "late"), follow_args))
            time.sleep(args.block_time * 3)
        head = int(proposer.rpc("eth_blockNumber"), 16)
        want_block = proposer.rpc("eth_getBlockByNumber", hex(head), False)
        # Convergence: every node has the proposer's block at `head`, same hash and state root.
        deadline = time.time() + 90
        lagging = list(range(1, len(nodes)))
        while lagging and time.time() < deadline:
            still = []
            for i in lagging:
                b = nodes[i].rpc("eth_getBlockByNumber", hex(head), False)
                if not b or b["hash"] != want_block["hash"] or b["stateRoot"] != want_block["stateRoot"]:
                    still.append(i)
            lagging = still
            if lagging:
                time.sleep(0.5)
        time.sleep(0.5)
        # Measurements from the logs (one clock: all processes on this machine).
        published = {}
        for line in proposer.log:
            if "block published" in line:
                published[field(line, "key")] = (float(field(line, "sent")), int(field(line, "bytes")))
        # Was the follower killed while a block was propagating? The last publish before it.
        kill = None
        if killed_at is not None:
            before = [v for v in published.values() if v[0] <= killed_at]
            if before:
                sent_at, size = max(before)
                kill = {"block_bytes": size, "ms_after_publish": round((killed_at - sent_at) * 1000)}
        # The first --warmup blocks are left out of the figures (connections and streams being
        # opened, generators derived, every process starting at once).
        for k in sorted(published, key=lambda k: published[k][0])[:args.warmup]:
            del published[k]
        delays = []
        per_block = {}
        for n in nodes[1:]:
            for line in n.log:
                if "block received" in line:
                    k = field(line, "key")
                    if k in published:
                        d = float(field(line, "decoded")) - published[k][0]
                        delays.append(d)
                        per_block.setdefault(k, []).append(d * 1000)
        per_node = []
        tick = os.sysconf("SC_CLK_TCK")
        for n in nodes:
            m = n.metrics()
            try:
                with open(f"/proc/{n.proc.pid}/stat") as f:
                    stat = f.read().rsplit(")", 1)[1].split()
                cpu = (int(stat[11]) + int(stat[12])) / tick
            except OSError:
                cpu = 0.0
            per_node.append({
                "link_out": metric(m, "net_link_bytes_total", 'direction="out"'),
                "link_in": metric(m, "net_link_bytes_total", 'direction="in"'),
                "useful": metric(m, "net_chunks_total", 'outcome="useful"'),
                "useless": metric(m, "net_chunks_total", 'outcome="useless"'),
                "late": metric(m, "net_chunks_total", 'outcome="late"'),
                "invalid": metric(m, "net_chunks_total", 'outcome="invalid"'),
                "lost": metric(m, "net_chunks_total", 'outcome="lost"'),
                "decoded": metric(m, "net_blocks_decoded_total"),
                "batches": metric(m, "net_verify_batches_total"),
                "batched": metric(m, "net_verify_batched_chunks_total"),
                "cpu_seconds": cpu,
            })
        # The late joiner's (and the restarted node's) sync rate, from their logs.
        synced = []
        for n in nodes[1:]:
            for line in n.log:
                if "synced" in line and field(line, "imported"):
                    synced.append((int(field(line, "imported")), float(field(line, "seconds"))))
        if args.export_chain:
            with open(args.export_chain, "wb") as f:
                for number in range(1, head + 1):
                    f.write(bytes.fromhex(proposer.rpc("debug_getRawBlock", hex(number))[2:]))
        ms = [d * 1000 for d in delays]
        sizes = [b for (_, b) in published.values()]
        summary = {
            "protocol": protocol,
            "nodes": args.nodes,
            "blocks_published": len(published),
            "block_bytes_mean": statistics.mean(sizes) if sizes else 0,
            "head": head,
            "transactions_sent": sent,
            "converged": not lagging,
            "restarted_node": args.restart and len(nodes) > 2,
            "killed_during": kill,
            "late_joiner": args.late_joiner,
            "lagging_nodes": lagging,
            "deliveries": len(delays),
            "delivery_ms_p50": percentile(ms, 50),
            "delivery_ms_p90": percentile(ms, 90),
            "delivery_ms_p99": percentile(ms, 99),
            "delivery_ms_max": max(ms) if ms else None,
            "link_out_bytes_per_node_mean": statistics.mean(p["link_out"] for p in per_node),
            "link_out_bytes_total": sum(p["link_out"] for p in per_node),
            "syncs": [{"blocks": b, "seconds": round(t, 3), "blocks_per_second": round(b / t, 1)}
                      for b, t in synced if t > 0],
            "blocks": [{"bytes": published[k][1], "deliveries": len(per_block.get(k, [])),
                        "delivery_ms_p50": percentile(per_block.get(k, []), 50),
                        "delivery_ms_p99": percentile(per_block.get(k, []), 99),
                        "delivery_ms_max": max(per_block.get(k, []), default=None)}
                       for k in sorted(published, key=lambda k: published[k][0])],
            "cpu_seconds_per_node_mean": statistics.mean(p["cpu_seconds"] for p in per_node),
            "cpu_seconds_proposer": per_node[0]["cpu_seconds"],
            "chunks_useful": sum(p["useful"] for p in per_node),
            "chunks_useless": sum(p["useless"] for p in per_node),
            "chunks_late": sum(p["late"] for p in per_node),
            "chunks_invalid": sum(p["invalid"] for p in per_node),
            "chunks_lost": sum(p["lost"] for p in per_node),
            "verify_batches": sum(p["batches"] for p in per_node),
            "verify_batch_mean": (sum(p["batched"] for p in per_node)
                                  / max(1, sum(p["batches"] for p in per_node))),
        }
        summary["ok"] = summary["converged"] and summary["chunks_invalid"] == 0
        return summary
    finally:
        for i, n in enumerate(nodes):
            try:
                n.kill()
            except Exception:  # noqa: BLE001 - best effort cleanup
                pass
            with open(os.path.join(work, f"node{i}.log"), "w") as f:
                f.writelines(ANSI.sub("", line) for line in n.log)
        if not args.keep_data:
            # The datadirs (RocksDB, ≈ 75 MB a node) go; the logs stay.
            for entry in os.listdir(work):
                path = os.path.join(work, entry)
                if os.path.isdir(path):
                    shutil.rmtree(path, ignore_errors=True)
        print(f"{protocol}: logs in {work}/node*.log", file=sys.stderr)


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--gigagas", default="target/release/gigagas")
    p.add_argument("--nodes", type=int, default=16)
    p.add_argument("--gossip", default="rlnc,rs,gossipsub",
                   help="protocols, run in turn; a variant adds --gossip.* flags: rlnc:per-peer=4")
    p.add_argument("--blocks", type=int, default=10)
    p.add_argument("--block-time", type=float, default=1.0)
    p.add_argument("--threads", type=int, default=1, help="executor threads per node")
    p.add_argument("--upload-mbit", type=float, default=0)
    p.add_argument("--latency-ms", type=float, default=0)
    p.add_argument("--jitter-ms", type=float, default=0)
    p.add_argument("--loss", type=float, default=0,
                   help="fraction of received block frames / gossipsub messages each node drops "
                        "(--net.loss)")
    p.add_argument("--calldata-kb", type=int, default=100,
                   help="size of each large transaction's calldata (KiB)")
    p.add_argument("--calldata-txs", type=int, default=0,
                   help="large transactions sent per block time (block size ≈ this × --calldata-kb)")
    p.add_argument("--export-chain", metavar="FILE",
                   help="write the proposer's blocks 1..head as an RLP chain file (gigagas import)")
    p.add_argument("--warmup", type=int, default=0,
                   help="blocks left out of the figures at the start")
    p.add_argument("--kill-at", type=int, metavar="N",
                   help="kill -9 the follower as soon as the proposer's head reaches block N "
                        "(default: a third of the blocks); restarted at two thirds")
    p.add_argument("--no-restart", dest="restart", action="store_false",
                   help="do not kill -9 and restart a follower mid-run")
    p.add_argument("--no-late-joiner", dest="late_joiner", action="store_false",
                   help="do not start a node from scratch after the blocks")
    p.add_argument("--replay", metavar="FILE",
                   help="the proposer replays this chain file (from --gen-chain or --export-chain; "
                        "its genesis FILE.genesis.json when present) instead of building blocks: "
                        "the same blocks for every protocol; no transactions are sent")
    p.add_argument("--gen-chain", metavar="FILE",
                   help="only build a chain for --replay: one block per --sizes-kb entry (random "
                        "calldata), on a dev genesis with --gas-limit; writes FILE and FILE.genesis.json")
    p.add_argument("--sizes-kb", default="100,250,500,1000,1000,1000,1500,2000",
                   type=lambda v: [int(x) for x in v.split(",")],
                   help="--gen-chain: calldata per block (KB, one block each, in order)")
    p.add_argument("--gas-limit", type=int, default=150_000_000,
                   help="--gen-chain: the genesis block gas limit (2 MB of calldata needs 84M gas "
                        "at EIP-7623's floor)")
    p.add_argument("--json", action="store_true")
    p.add_argument("--keep-data", action="store_true",
                   help="keep the nodes' datadirs after the run (by default only the logs stay)")
    p.add_argument("--json-out", metavar="FILE",
                   help="also write the results as JSON to FILE, rewritten after each protocol")
    args = p.parse_args()
    if args.gen_chain:
        sys.exit(gen_chain(args))
    # `rlnc:per-peer=4,wave=2,gossipsub`: an item with `=` and no `:` belongs to the variant before.
    protocols = []
    for item in args.gossip.split(","):
        if "=" in item and ":" not in item and protocols:
            protocols[-1] += "," + item
        else:
            protocols.append(item)
    results = []
    for protocol in protocols:
        try:
            results.append(run_protocol(args, protocol))
        except Exception as e:  # noqa: BLE001 - reported as a failed run
            results.append({"protocol": protocol, "ok": False, "error": str(e)})
        if args.json_out:  # after each protocol: what is done survives a timeout
            with open(args.json_out, "w") as f:
                json.dump(results, f, indent=1)
    if args.json:
        print(json.dumps(results, indent=1))
    else:
        for r in results:
            print(f"== {r['protocol']}")
            for k, v in r.items():
                if k != "protocol":
                    print(f"  {k:30} {v}")
    ok = all(r["ok"] for r in results)
    print("devnet-net: OK" if ok else "devnet-net: FAILED", file=sys.stderr)
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()
