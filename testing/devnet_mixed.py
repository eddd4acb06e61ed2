#!/usr/bin/env python3
"""A mixed devnet on loopback: geth 1.17.10 and gigagas, each driven by its own Prysm v7.0.0
beacon node, the two execution clients peered over devp2p, until the chain finalizes.

What it does:
1. writes the genesis of both layers as testing/devnet_prysm.py does (mainnet preset, every
   consensus fork to Fulu at epoch 0, Osaka at genesis: Prysm v7.0.0 has no Gloas, so no
   Amsterdam; --slot-seconds, --validators interop validators), with four more funded keys for
   the transactions sent to geth;
2. starts geth (`--syncmode full`, devp2p on a loopback port, no discovery, its blocks marked
   by `--miner.extradata geth`) and gigagas (`--trusted-peers` geth's enode, the libp2p layer
   off; its blocks say "gigagas"), then two beacon nodes, the first driving gigagas and the
   second geth over the authenticated Engine API, peered with each other (`--peer`, the first's
   ENR as bootstrap node, both custodying every data column), and two validator clients with
   half the validators each, so that each execution client builds about half the blocks;
3. sends transactions of every type (legacy, EIP-2930, EIP-1559, EIP-7702, blob transactions
   with EIP-7594 cell proofs) to gigagas and to geth, each from keys of its own, every slot;
4. waits until the beacon chain has finalized --finalized-epochs past genesis and both
   execution clients hold that checkpoint's block as finalized, then checks:
   - both execution clients are at the beacon node's execution payload head and have the same
     block at every height up to it (blocks proposed through each were accepted by the other);
   - each client built at least ten blocks (by extraData);
   - transactions sent to gigagas were included in blocks geth built, and transactions sent to
     geth in blocks gigagas built, blob transactions included: they reached the other's pool
     over devp2p (`NewPooledTransactionHashes` / `GetPooledTransactions` / `Transactions`);
   - gigagas answered every `newPayload` VALID, geth logged no bad block, Prysm no missing
     Engine API method; the two stayed peers (`admin_peers` on both).

Exit status 0 only when every check holds. Logs in target/devnet-mixed/run-*/ (the datadirs
are removed at the end unless --keep-data).

Usage: python3 testing/devnet_mixed.py [--gigagas target/release/gigagas] [--geth GETH]
           [--prysm-bin DIR] [--slot-seconds 3] [--validators 64] [--finalized-epochs 2]
           [--timeout 1200] [--keep-data] [--json]
"""

import argparse
import os
import re
import secrets
import shutil
import sys
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from devnet import FUNDED_KEYS  # noqa: E402
from devnet_prysm import (EXTRA_DATA, Process, Rpc, Traffic, beacon_command, get, peer_of,  # noqa: E402
                          prysm_binaries, report, report_metrics, scrape, validator_command,
                          write_genesis)
from gigagas_testing import GethNode, GigagasNode, free_port, geth_binary  # noqa: E402
from eth_account import Account  # noqa: E402
from eth_utils import keccak  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
# The transactions sent to geth come from keys of their own (funded at genesis), so that the two
# senders never race for a nonce.
GETH_KEYS = ["0x" + keccak(f"gigagas mixed devnet geth {i}".encode()).hex() for i in range(4)]
GETH_EXTRA = "0x" + b"geth".hex()


def log(msg):
    print(f"devnet-mixed: {msg}", file=sys.stderr, flush=True)


def wait_for_peer_id(beacon, tcp, timeout=120):
    """The beacon node's (multiaddr, ENR) once it has logged them."""
    deadline = time.time() + timeout
    while time.time() < deadline:
        if not beacon.alive():
            raise SystemExit(f"FAIL: {beacon.name} exited:\n{beacon.text()[-3000:]}")
        if "Running node with peer id" in beacon.text():
            time.sleep(2)  # the ENR follows once discovery is up
            return peer_of(beacon, tcp)
        time.sleep(0.5)
    raise SystemExit(f"FAIL: {beacon.name} logged no peer id in {timeout} s")


def builders(eth, other, head):
    """{number: builder} for blocks 1..head ("gigagas", "geth" or the extraData), and the
    heights where the two clients hold different blocks."""
    by, differ = {}, []
    for n in range(1, head + 1):
        a = eth("eth_getBlockByNumber", hex(n), False)
        b = other("eth_getBlockByNumber", hex(n), False)
        if not a or not b or a["hash"] != b["hash"]:
            differ.append(n)
        extra = a["extraData"] if a else None
        by[n] = {EXTRA_DATA: "gigagas", GETH_EXTRA: "geth"}.get(extra, extra)
    return by, differ


def inclusions(eth, traffic, by):
    """{sent-to's transactions included: {builder: {type: count}}} from the receipts."""
    out = {}
    for h, kind in list(traffic.sent.items()):
        r = eth("eth_getTransactionReceipt", h)
        if r is None:
            continue
        builder = by.get(int(r["blockNumber"], 16), "after the head read")
        per = out.setdefault(builder, {})
        per[kind] = per.get(kind, 0) + 1
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--gigagas", default=os.path.join(ROOT, "target/release/gigagas"))
    ap.add_argument("--geth", help="geth binary (default: testing/geth_install.sh)")
    ap.add_argument("--prysm-bin", help="folder with beacon-chain, validator, prysmctl")
    ap.add_argument("--slot-seconds", type=int, default=3)
    ap.add_argument("--validators", type=int, default=64)
    ap.add_argument("--finalized-epochs", type=int, default=2)
    ap.add_argument("--timeout", type=float, default=1200, help="seconds to wait for finality")
    ap.add_argument("--keep-data", action="store_true",
                    help="keep the datadirs (removed at the end by default; the logs stay)")
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()

    geth_bin = geth_binary(args.geth)
    prysm = prysm_binaries(args.prysm_bin)
    work = os.path.join(ROOT, "target/devnet-mixed", time.strftime("run-%Y%m%d-%H%M%S"))
    os.makedirs(work)
    log(f"logs in {work}")
    balance = 10**24
    config, el_genesis, state, genesis_time = write_genesis(
        prysm, work, args.slot_seconds, args.validators,
        {Account.from_key(k).address: balance for k in GETH_KEYS})
    jwt = os.path.join(work, "jwt.hex")
    with open(jwt, "w") as f:
        f.write(secrets.token_hex(32))

    procs, failures, traffics = [], [], []
    summary = {"work": work, "slot_seconds": args.slot_seconds, "validators": args.validators}
    started = time.time()
    try:
        geth_dir = os.path.join(work, "geth")
        GethNode.init(geth_bin, geth_dir, el_genesis)
        geth = GethNode(geth_bin, geth_dir, ["--networkid", "1337", "--miner.extradata", "geth"],
                        http_api="eth,net,web3,admin,txpool", p2p=True,
                        log_path=os.path.join(work, "geth.log"))
        geth.name = "geth"
        procs.append(geth)
        gigagas = GigagasNode(args.gigagas, os.path.join(work, "gigagas"),
                              ["--chain", el_genesis, "--authrpc.jwtsecret", jwt,
                               "--trusted-peers", geth.enode, "--libp2p.disable"],
                              metrics=True, log_path=os.path.join(work, "gigagas.log"))
        gigagas.name = "gigagas"
        procs.append(gigagas)
        eth, geth_rpc = Rpc(gigagas.url), Rpc(geth.url)
        genesis = [r("eth_getBlockByNumber", "0x0", False)["hash"] for r in (eth, geth_rpc)]
        summary["el_genesis"] = genesis[0]
        if genesis[0] != genesis[1]:
            raise SystemExit(f"FAIL: genesis differs: gigagas {genesis[0]}, geth {genesis[1]}")

        tcp = [free_port(), free_port()]
        apis = [(free_port(), free_port()), (free_port(), free_port())]  # (gRPC, HTTP)
        beacons = []
        for i, (engine, secret) in enumerate([(gigagas.engine_url, jwt),
                                              (geth.engine_url, geth.jwt_path)]):
            extra = ["--min-sync-peers", "0"]
            if beacons:
                peer, enr = wait_for_peer_id(beacons[0], tcp[0])
                extra += ["--peer", peer, *(["--bootstrap-node", enr] if enr else [])]
            bn = Process(f"beacon-chain-{i + 1}", beacon_command(
                prysm, work, f"beacon-{i + 1}", config, state, engine, secret,
                (*apis[i], tcp[i]), clear=True, discovery=True, supernode=True, extra=extra), work)
            procs.append(bn)
            beacons.append(bn)
        half = args.validators // 2
        for i, (start, count) in enumerate([(0, half), (half, args.validators - half)]):
            procs.append(Process(f"validator-{i + 1}", validator_command(
                prysm, work, f"validator-{i + 1}", config, count, start, apis[i][0]), work))
        cls = [f"http://127.0.0.1:{http}" for _, http in apis]
        for _ in range(300):
            try:
                st = get(f"{cls[0]}/eth/v2/debug/beacon/states/genesis", timeout=30)["data"]
                cl_genesis = st["latest_execution_payload_header"]["block_hash"]
                break
            except Exception:  # noqa: BLE001 - the beacon node is starting
                for p in procs:
                    if not p.alive():
                        raise SystemExit(f"FAIL: {p.name} exited:\n{p.text()[-3000:]}")
                time.sleep(1)
        else:
            raise SystemExit("the first beacon node's API did not come up")
        if cl_genesis != genesis[0]:
            raise SystemExit(f"FAIL: genesis differs: execution {genesis[0]}, beacon state {cl_genesis}")

        traffics = [Traffic(eth, FUNDED_KEYS, "gigagas mixed devnet to gigagas"),
                    Traffic(geth_rpc, GETH_KEYS, "gigagas mixed devnet to geth")]
        for t in traffics:
            threading.Thread(target=t.run, args=(args.slot_seconds,), daemon=True).start()
            threading.Thread(target=t.run, args=(args.slot_seconds, True), daemon=True).start()

        # Finality on both beacon nodes, the block finalized in both execution clients.
        deadline = time.time() + args.timeout + max(0, genesis_time - time.time())
        finalized, last_print = None, 0
        while time.time() < deadline and finalized is None:
            for p in procs:
                if not p.alive():
                    raise SystemExit(f"FAIL: {p.name} exited:\n{p.text()[-3000:]}")
            try:
                cps = [get(f"{cl}/eth/v1/beacon/states/head/finality_checkpoints")["data"]["finalized"]
                       for cl in cls]
                epochs = [int(cp["epoch"]) for cp in cps]
                if min(epochs) >= args.finalized_epochs:
                    block = get(f"{cls[0]}/eth/v2/beacon/blocks/{cps[0]['root']}")["data"]["message"]
                    want = block["body"]["execution_payload"]["block_hash"]
                    have = [r("eth_getBlockByNumber", "finalized", False) for r in (eth, geth_rpc)]
                    if all(h and h["hash"] == want for h in have):
                        finalized = (want, int(have[0]["number"], 16), int(block["slot"]))
            except Exception:  # noqa: BLE001 - polled again
                epochs = None
            if time.time() - last_print > 30:
                heads = [int(r("eth_blockNumber"), 16) for r in (eth, geth_rpc)]
                log(f"finalized epochs {epochs}, heads gigagas {heads[0]} geth {heads[1]}")
                last_print = time.time()
            time.sleep(1)
        summary["seconds_to_finality"] = round(time.time() - max(started, genesis_time), 1)
        if finalized is None:
            failures.append(f"finality: not both beacon nodes at finalized epoch "
                            f"{args.finalized_epochs} with the block finalized in both ELs")
        else:
            summary["finalized_block"], summary["finalized_slot"] = finalized[1], finalized[2]
        for t in traffics:
            t.stop.set()

        # Heads: both at the beacon node's execution payload head (a slot may pass between the
        # reads: retried).
        for _ in range(4 * args.slot_seconds):
            want = get(f"{cls[0]}/eth/v2/beacon/blocks/head")["data"]["message"]
            want = want["body"]["execution_payload"]["block_hash"]
            heads = [r("eth_getBlockByNumber", "latest", False) for r in (eth, geth_rpc)]
            if all(h["hash"] == want for h in heads):
                break
            time.sleep(1)
        else:
            failures.append(f"head: gigagas {heads[0]['hash']}, geth {heads[1]['hash']}, "
                            f"beacon execution payload head {want}")
        head = min(int(h["number"], 16) for h in heads)
        summary["head_block"] = head
        by, differ = builders(eth, geth_rpc, head)
        if differ:
            failures.append(f"gigagas and geth hold different blocks at heights {differ[:10]}")
        built = {b: sum(1 for v in by.values() if v == b) for b in set(by.values())}
        summary["blocks_built_by"] = built
        # The proposers of the first epochs come from the genesis seed: one validator client
        # may propose most of them. Ten blocks each still show both ways.
        for who in ("gigagas", "geth"):
            if built.get(who, 0) < min(10, head / 5):
                failures.append(f"{who} built {built.get(who, 0)} of {head} blocks")
        if set(built) - {"gigagas", "geth"}:
            failures.append(f"blocks of unknown builders: {built}")

        # Transactions sent to each client, included in blocks the other built.
        cross = {}
        for t, sent_to, other in ((traffics[0], "gigagas", "geth"), (traffics[1], "geth", "gigagas")):
            inc = inclusions(eth, t, by)
            summary[f"sent_to_{sent_to}"] = {"sent": len(t.sent), "included_by_builder": inc,
                                             "errors": t.errors[:3]}
            cross[sent_to] = inc.get(other, {})
            if not cross[sent_to]:
                failures.append(f"no transaction sent to {sent_to} was included in a block {other} "
                                f"built: {inc}")
            elif not cross[sent_to].get(3):
                failures.append(f"no blob transaction sent to {sent_to} was included in a block "
                                f"{other} built: {inc}")
        summary["included_in_the_others_blocks"] = cross

        # Verdicts and warnings.
        text = scrape(gigagas.metrics_addr.split(":")[1])
        report_metrics([text], summary, failures)
        bad = re.findall(r"(?:BAD BLOCK|Invalid block|invalid block).*", geth.text())
        if bad:
            failures.append(f"geth: {bad[0][:300]}")
        for bn in beacons[:1]:
            missing = re.findall(r"does not support some requested engine methods.*", bn.text())
            if missing:
                failures.append(f"Prysm: {missing[0][:300]}")
        peers = {"gigagas": [p.get("enode") for p in eth("admin_peers")],
                 "geth": [p.get("enode") for p in geth_rpc("admin_peers")]}
        summary["devp2p_peers"] = {k: len(v) for k, v in peers.items()}
        if geth.enode.split("@")[0] not in [(e or "").split("@")[0] for e in peers["gigagas"]]:
            failures.append(f"gigagas's admin_peers lacks geth: {peers['gigagas']}")
        if gigagas.enode.split("@")[0] not in [(e or "").split("@")[0] for e in peers["geth"]]:
            failures.append(f"geth's admin_peers lacks gigagas: {peers['geth']}")
    finally:
        for t in traffics:
            t.stop.set()
            t.signer.shutdown(wait=False, cancel_futures=True)
        for p in reversed(procs):
            p.stop()
        if not args.keep_data:
            # The logs stay; the databases (GBs of geth's, the beacon nodes') go.
            for name in ("geth", "gigagas", "beacon-1", "beacon-2", "validator-1", "validator-2"):
                shutil.rmtree(os.path.join(work, name), ignore_errors=True)
    return report("devnet-mixed", summary, failures, args.json)


if __name__ == "__main__":
    sys.exit(main())
