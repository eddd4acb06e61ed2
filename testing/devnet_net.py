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
protocols of the node's connections), chunks useful / useless / invalid.
Exit status 0 only when every node of every protocol converged.

Usage: python3 testing/devnet_net.py [--gigagas target/release/gigagas] [--nodes 16]
           [--gossip rlnc,rs,gossipsub] [--blocks 10] [--block-time 1.0] [--upload-mbit 25]
           [--latency-ms 50] [--jitter-ms 20] [--json]
"""

import argparse
import json
import os
import re
import statistics
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from devnet import FUNDED_KEYS, INIT, Node, Sender, metric  # noqa: E402
from eth_utils import to_checksum_address  # noqa: E402

ANSI = re.compile(r"\x1b\[[0-9;]*m")


def field(line, name):
    m = re.search(rf"\b{name}=(\S+)", ANSI.sub("", line))
    return m.group(1) if m else None


def percentile(values, q):
    if not values:
        return None
    values = sorted(values)
    return values[min(len(values) - 1, int(round(q / 100 * (len(values) - 1))))]


def run_protocol(args, protocol):
    """One devnet with `protocol`; returns its summary (and `ok`)."""
    os.environ["RUST_LOG"] = "warn,net=info"
    work = tempfile.mkdtemp(prefix=f"gigagas-devnet-{protocol}-")
    shaping = []
    if args.upload_mbit:
        shaping += ["--net.upload-mbit", str(args.upload_mbit)]
    if args.latency_ms:
        shaping += ["--net.latency-ms", str(args.latency_ms), "--net.jitter-ms", str(args.jitter_ms)]
    common = ["--gossip", protocol, "--engine.threads", str(args.threads)] + shaping
    proposer = Node(args.gigagas, os.path.join(work, "node0"),
                    ["--dev", "--dev.block-time", str(args.block_time),
                     "--dev.min-peers", str(min(8, args.nodes - 1)),
                     "--gossip.signer-key", os.path.join(work, "bls-seed")] + common)
    banner = proposer.log[0]
    p2p = re.search(r"; p2p (\S+?)(;|$)", banner).group(1)
    key = re.search(r"proposer (0x[0-9a-f]+)", banner).group(1)
    nodes = [proposer]
    try:
        for i in range(1, args.nodes):
            nodes.append(Node(args.gigagas, os.path.join(work, f"node{i}"),
                              ["--chain", "dev", "--dev.follow", "--gossip.proposer", key,
                               "--bootnodes", p2p] + common))
        # Peers: every node connected to at least min(D, N-1) others, or 30 s.
        want = min(8, args.nodes - 1)
        deadline = time.time() + 30
        while time.time() < deadline:
            counts = [int(n.rpc("net_peerCount"), 16) for n in nodes]
            if min(counts) >= want:
                break
            time.sleep(0.5)
        start = int(proposer.rpc("eth_blockNumber"), 16)
        senders = [Sender(k) for k in FUNDED_KEYS]
        for s in senders:
            s.nonce = int(proposer.rpc("eth_getTransactionCount", s.address, "pending"), 16)
        deploy = senders[0].send(proposer, None, data="0x" + INIT, gas=200_000)
        contract = None
        sent = 1
        target = start + args.blocks
        deadline = time.time() + args.blocks * args.block_time * 4 + 60
        killed = None
        follow_args = ["--chain", "dev", "--dev.follow", "--gossip.proposer", key, "--bootnodes", p2p] + common
        while int(proposer.rpc("eth_blockNumber"), 16) < target:
            number = int(proposer.rpc("eth_blockNumber"), 16)
            # kill -9 the last follower a third of the way, restart it at two thirds: it has
            # missed blocks and must fetch them from its peers.
            if args.restart and len(nodes) > 2 and killed is None and number >= start + args.blocks // 3:
                killed = len(nodes) - 1
                nodes[killed].kill()
            if killed is not None and killed >= 0 and number >= start + 2 * args.blocks // 3:
                nodes[killed] = Node(args.gigagas, os.path.join(work, f"node{killed}"), follow_args)
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
            for j in range(args.calldata_txs):
                data = os.urandom(args.calldata_kb * 1024)
                s = senders[j % len(senders)]
                s.send(proposer, to_checksum_address("0x" + os.urandom(20).hex()),
                       data="0x" + data.hex(), gas=21_000 + 40 * len(data) + 10_000)
                sent += 1
            time.sleep(args.block_time if args.calldata_txs else args.block_time / 2)
        if args.late_joiner:
            # A node from scratch, after the fact: it must reach the head by itself.
            nodes.append(Node(args.gigagas, os.path.join(work, "late"), follow_args))
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
        # The first --warmup blocks are left out of the figures (connections and streams being
        # opened, generators derived, every process starting at once).
        for k in sorted(published, key=lambda k: published[k][0])[:args.warmup]:
            del published[k]
        delays = []
        for n in nodes[1:]:
            for line in n.log:
                if "block received" in line:
                    k = field(line, "key")
                    if k in published:
                        delays.append(float(field(line, "decoded")) - published[k][0])
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
                "invalid": metric(m, "net_chunks_total", 'outcome="invalid"'),
                "decoded": metric(m, "net_blocks_decoded_total"),
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
            "cpu_seconds_per_node_mean": statistics.mean(p["cpu_seconds"] for p in per_node),
            "cpu_seconds_proposer": per_node[0]["cpu_seconds"],
            "chunks_useful": sum(p["useful"] for p in per_node),
            "chunks_useless": sum(p["useless"] for p in per_node),
            "chunks_invalid": sum(p["invalid"] for p in per_node),
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
        print(f"{protocol}: logs in {work}/node*.log", file=sys.stderr)


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--gigagas", default="target/release/gigagas")
    p.add_argument("--nodes", type=int, default=16)
    p.add_argument("--gossip", default="rlnc,rs,gossipsub")
    p.add_argument("--blocks", type=int, default=10)
    p.add_argument("--block-time", type=float, default=1.0)
    p.add_argument("--threads", type=int, default=1, help="executor threads per node")
    p.add_argument("--upload-mbit", type=float, default=0)
    p.add_argument("--latency-ms", type=float, default=0)
    p.add_argument("--jitter-ms", type=float, default=0)
    p.add_argument("--calldata-kb", type=int, default=100,
                   help="size of each large transaction's calldata (KiB)")
    p.add_argument("--calldata-txs", type=int, default=0,
                   help="large transactions sent per block time (block size ≈ this × --calldata-kb)")
    p.add_argument("--export-chain", metavar="FILE",
                   help="write the proposer's blocks 1..head as an RLP chain file (gigagas import)")
    p.add_argument("--warmup", type=int, default=0,
                   help="blocks left out of the figures at the start")
    p.add_argument("--no-restart", dest="restart", action="store_false",
                   help="do not kill -9 and restart a follower mid-run")
    p.add_argument("--no-late-joiner", dest="late_joiner", action="store_false",
                   help="do not start a node from scratch after the blocks")
    p.add_argument("--json", action="store_true")
    args = p.parse_args()
    results = []
    for protocol in args.gossip.split(","):
        try:
            results.append(run_protocol(args, protocol))
        except Exception as e:  # noqa: BLE001 - reported as a failed run
            results.append({"protocol": protocol, "ok": False, "error": str(e)})
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
