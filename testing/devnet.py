#!/usr/bin/env python3
"""Runs a gigagas dev chain and checks it end to end.

`gigagas node --dev` starts the node and its local miner, which drives the engine task with
the messages the Engine API handlers send: a forkchoice update with payload attributes every
slot, the built payload as a new payload (with its EIP-7928 BAL, which drives the parallel
executor), a forkchoice update with safe and finalized lagging the head.

This script sends signed transactions over JSON-RPC (eth_sendRawTransaction; keys of
testing/dev-genesis.json, signed with eth-account from PyPI): transfers, a contract
deployment and calls to it from many senders, until at least --blocks blocks carry
transactions. Then it checks: every receipt succeeded; the contract's storage equals the
calls each sender made; every block with transactions has a non-empty BAL hash; the
finalized block passed the last block with transactions; the node's Prometheus metrics count
every block as executed by the parallel executor and no payload as INVALID. Finally it kills
the node with SIGKILL, restarts it on the same datadir and checks that nothing committed was
lost. Exit status 0 only when every check holds.

Usage: python3 testing/devnet.py [--gigagas target/release/gigagas] [--blocks 20]
                                 [--block-time 0.5] [--json]
"""

import argparse
import json
import sys
import tempfile
import time

from gigagas_testing import GigagasNode, metric

try:
    from eth_account import Account
    from eth_utils import keccak, to_checksum_address
except ImportError:  # devnet_net.py --replay signs nothing: it runs on a bare Python too
    Account = keccak = to_checksum_address = None

CHAIN_ID = 1337
# testing/dev-genesis.json funds these (the well-known Hardhat/Anvil dev keys).
FUNDED_KEYS = [
    "0xac0974bec39a17e36ba4a6b4d238ff944bacb478cbed5efcae784d7bf4f2ff80",
    "0x59c6995e998f97a5a0044966f0945389dc9e86dae88c7a8412f4603b6b78690d",
    "0x5de4111afa1a4b94908f83103eb1f1706367c2e68ca870fc3fb9a804cdab365a",
    "0x7c852118294e51e653712a81e05800f419141751be58f605c371e15141b007a6",
]
# Counter: storage[caller] += 1, then LOG1(new value, topic = caller).
RUNTIME = "33546001018033556000523360206000a100"
INIT = "601280600b6000396000f3" + RUNTIME
# keccak256(rlp([])): the BAL hash of a block that touches nothing.
EMPTY_BAL_HASH = "0x1dcc4de8dec75d7aab85b567b6ccd41ad312451b948a7413f0a142fd40d49347"
GWEI = 10**9


def start_node(gigagas, datadir, extra):
    """A gigagas node for the devnets (gigagas_testing.GigagasNode): devp2p and libp2p on free
    loopback ports, Prometheus metrics on, `extra` flags."""
    loopback = ["--port", "0", "--addr", "127.0.0.1", "--libp2p.addr", "127.0.0.1"]
    return GigagasNode(gigagas, datadir, loopback + extra, metrics=True)


class Sender:
    def __init__(self, key):
        self.account = Account.from_key(key)
        self.address = self.account.address
        self.nonce = 0

    def send(self, node, to, value=0, data="0x", gas=100_000):
        tx = {"type": 2, "chainId": CHAIN_ID, "nonce": self.nonce, "to": to, "value": value,
              "gas": gas, "maxFeePerGas": 20 * GWEI, "maxPriorityFeePerGas": GWEI,
              "data": data}
        if to is None:
            del tx["to"]
        raw = self.account.sign_transaction(tx).raw_transaction
        h = node.rpc("eth_sendRawTransaction", "0x" + raw.hex())
        self.nonce += 1
        return h


def wait_receipts(node, hashes, timeout=60):
    receipts = {}
    deadline = time.time() + timeout
    while len(receipts) < len(hashes):
        if time.time() > deadline:
            missing = [h for h in hashes if h not in receipts]
            raise SystemExit(f"FAIL: {len(missing)} transactions not included, e.g. {missing[0]}")
        for h in hashes:
            if h not in receipts:
                r = node.rpc("eth_getTransactionReceipt", h)
                if r is not None:
                    receipts[h] = r
        time.sleep(0.2)
    return [receipts[h] for h in hashes]


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--gigagas", default="target/release/gigagas")
    ap.add_argument("--blocks", type=int, default=20, help="blocks with transactions to reach")
    ap.add_argument("--block-time", type=float, default=0.5)
    ap.add_argument("--senders", type=int, default=16)
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()

    datadir = tempfile.mkdtemp(prefix="gigagas-devnet-")
    start = time.time()
    node = start_node(args.gigagas, datadir, ["--dev", "--dev.block-time", str(args.block_time)])
    failures = []
    try:
        funded = [Sender(k) for k in FUNDED_KEYS]
        fresh = [Sender("0x" + keccak(f"gigagas devnet {i}".encode()).hex())
                 for i in range(args.senders - len(funded))]
        # Fund the fresh senders and deploy the counter.
        # Amsterdam's EIP-8037 prices: a new account 183,600 gas of state, a new slot 97,920,
        # deployed code 1,530 a byte.
        hashes = [funded[i % len(funded)].send(node, s.address, value=10**20, gas=250_000)
                  for i, s in enumerate(fresh)]
        deploy = funded[0].send(node, None, data="0x" + INIT, gas=400_000)
        receipts = wait_receipts(node, hashes + [deploy])
        counter = to_checksum_address(receipts[-1]["contractAddress"])
        all_receipts = list(receipts)
        senders = funded + fresh
        calls = {s.address: 0 for s in senders}
        tx_blocks = {int(r["blockNumber"], 16) for r in receipts}
        round_ = 0
        while len(tx_blocks) < args.blocks:
            round_ += 1
            hashes = []
            for i, s in enumerate(senders):
                if (i + round_) % 3:
                    hashes.append(s.send(node, counter, gas=200_000))
                    calls[s.address] += 1
                else:
                    to = senders[(i + round_) % len(senders)].address
                    hashes.append(s.send(node, to, value=10**15, gas=21_000))
            receipts = wait_receipts(node, hashes)
            all_receipts += receipts
            tx_blocks |= {int(r["blockNumber"], 16) for r in receipts}

        # Checks.
        bad = [r["transactionHash"] for r in all_receipts if r["status"] != "0x1"]
        if bad:
            failures.append(f"{len(bad)} receipts failed, e.g. {bad[0]}")
        for address, n in calls.items():
            slot = "0x" + address[2:].lower().rjust(64, "0")
            value = int(node.rpc("eth_getStorageAt", counter, slot, "latest"), 16)
            if value != n:
                failures.append(f"counter of {address}: {value}, {n} calls sent")
        gas = 0
        for n in sorted(tx_blocks):
            b = node.rpc("eth_getBlockByNumber", hex(n), False)
            gas += int(b["gasUsed"], 16)
            if b.get("blockAccessListHash") in (None, EMPTY_BAL_HASH):
                failures.append(f"block {n} has transactions but BAL hash {b.get('blockAccessListHash')}")
        last = max(tx_blocks)
        deadline = time.time() + 30
        while int(node.rpc("eth_getBlockByNumber", "finalized", False)["number"], 16) < last:
            if time.time() > deadline:
                failures.append(f"block {last} not finalized within 30 s")
                break
            time.sleep(0.2)
        finalized = node.rpc("eth_getBlockByNumber", "finalized", False)
        head = int(node.rpc("eth_blockNumber"), 16)
        text = node.metrics()
        parallel = metric(text, "gigagas_executor_blocks_total", 'executor="parallel"')
        sequential = metric(text, "gigagas_executor_blocks_total", 'executor="sequential"')
        invalid = metric(text, "gigagas_engine_new_payload_total", 'status="INVALID"')
        np_sum = metric(text, "gigagas_engine_new_payload_seconds_sum")
        np_count = metric(text, "gigagas_engine_new_payload_seconds_count")
        exec_gas = metric(text, "gigagas_executor_gas_total")
        if parallel < len(tx_blocks) or sequential > 0:
            failures.append(f"executor counts: parallel {parallel}, sequential {sequential}")
        if invalid:
            failures.append(f"{invalid} payloads INVALID")

        # SIGKILL, restart on the same datadir: nothing committed is lost.
        node.kill()
        node = start_node(args.gigagas, datadir, [])
        after = int(node.rpc("eth_blockNumber"), 16)
        if after < int(finalized["number"], 16):
            failures.append(f"after SIGKILL the head is {after}, finalized was {finalized['number']}")
        for address, n in list(calls.items())[:4]:
            slot = "0x" + address[2:].lower().rjust(64, "0")
            if int(node.rpc("eth_getStorageAt", counter, slot, "latest"), 16) != n:
                failures.append(f"after SIGKILL the counter of {address} changed")

        summary = {
            "blocks": head,
            "blocks_with_transactions": len(tx_blocks),
            "transactions": len(all_receipts),
            "gas": gas,
            "finalized": int(finalized["number"], 16),
            "executed_parallel": int(parallel),
            "executed_sequential": int(sequential),
            "new_payload_mean_seconds": np_sum / np_count if np_count else None,
            "executed_gas": int(exec_gas),
            "head_after_sigkill": after,
            "wall_seconds": round(time.time() - start, 1),
            "failures": failures,
        }
        if args.json:
            print(json.dumps(summary))
        else:
            for k, v in summary.items():
                print(f"{k:28} {v}")
            print("devnet: OK" if not failures else "devnet: FAILED")
    finally:
        node.stop()
    return 0 if not failures else 1


if __name__ == "__main__":
    sys.exit(main())
