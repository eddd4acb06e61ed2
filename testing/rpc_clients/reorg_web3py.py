#!/usr/bin/env python3
"""A subscription across a reorg through web3.py 7.14 (PyPI `web3`), one JSON document out.

Usage: reorg_web3py.py --http URL --ws URL --key HEX --control URL [--timeout S] [--settle S]

The node runs without `--dev`: it builds no block of its own. compare.py drives it over the
Engine API (reorg.py) and serves `--control`, where `POST /build` makes a block of the pool's
transactions the head and `POST /reorg` replaces the head by a sibling (the head's parent H
again, a later timestamp, another fee recipient), each answering the new block (number, hash,
parent hash, transaction hashes). The steps, the same in reorg_ethers.mjs and reorg_viem.mjs:

  reorg: deploy       Pinger deployed (signed here, sent raw), the harness asked for its block H
  reorg: subscribe    over WebSocket, eth_subscribe newHeads and logs of the Pinger's address
  reorg: ping         ping(7) signed here and sent raw, the harness asked for block A; its
                      receipt, its decoded event, and its log notification waited for
  reorg: sibling      the harness asked for the reorg: A replaced by its sibling B; whether B
                      holds the ping again (the node's pool took it back after the rewind)
  reorg: after        after `--settle` seconds: the ping's receipt and transaction over HTTP
                      (which block, if any, holds it now), the counter, the head
  reorg: new_heads    every newHeads notification since the subscription, in order
  reorg: logs         every logs notification since the subscription, in order (`removed`
                      kept: the log of A comes again with removed=true when A is reorged out)
  reorg: unsubscribe  both subscriptions ended

Answers are normalized as flow_web3py.py's (volatile.json), except that block numbers stay
literal (volatile.json's `reorg_literal`: the harness builds the same blocks on both nodes),
and that a block hash the harness answered is named by its role: "H" (A's parent), "A" (the
block reorged out), "B" (its sibling, the head after the reorg); another hash is `<hash>`.
"""

import argparse
import asyncio
import json
import sys
import time
import urllib.error
import urllib.request

from eth_account import Account
from web3 import AsyncWeb3, Web3
from web3.exceptions import TransactionNotFound
from web3.middleware import SignAndSendRawMiddlewareBuilder
from web3.providers import HTTPProvider, WebSocketProvider

from flow_web3py import PINGER, RULES, Flow, State, error_text, norm, norm_block, plain

LITERAL = frozenset(RULES["reorg_literal"])
WS_STEPS = ["reorg: subscribe", "reorg: ping", "reorg: sibling", "reorg: after", "reorg: new_heads",
            "reorg: logs", "reorg: unsubscribe"]


def control(url, action, timeout=60):
    """POST /build or /reorg to the harness: the new block, or RuntimeError with its error."""
    req = urllib.request.Request(f"{url}/{action}", b"", {"Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(req, timeout=timeout) as r:
            return json.load(r)
    except urllib.error.HTTPError as e:
        raise RuntimeError(f"harness /{action}: {json.load(e).get('error')}") from None


class Labels:
    """Block hashes by their role in the scenario (H, A, B); `<hash>` for any other."""

    def __init__(self):
        self.names = {}

    def name(self, block_hash, role):
        self.names[block_hash.lower()] = role

    def __call__(self, block_hash):
        if block_hash is None:
            return None
        h = plain(block_hash)
        return self.names.get(h.lower(), "<hash>") if isinstance(h, str) else "<hash>"


def run(args):
    flow = Flow()
    acct = Account.from_key(args.key)
    w3 = Web3(HTTPProvider(args.http, request_kwargs={"timeout": args.timeout}))
    w3.middleware_onion.inject(SignAndSendRawMiddlewareBuilder.build(acct), layer=0)
    w3.eth.default_account = acct.address
    st = State()
    labels = Labels()

    def included(h):
        """Blocks asked of the harness until one holds `h` (three at most); its receipt and the
        block as the harness answered it."""
        want = plain(h).lower()
        for _ in range(3):
            block = control(args.control, "build", args.timeout)
            if want in [t.lower() for t in block["transactions"]]:
                break
        return w3.eth.wait_for_transaction_receipt(h, timeout=args.timeout, poll_latency=0.2), block

    def deploy():
        factory = w3.eth.contract(abi=PINGER["abi"], bytecode=PINGER["bytecode"])
        receipt, _ = included(factory.constructor().transact())
        st["contract"] = w3.eth.contract(address=receipt["contractAddress"], abi=PINGER["abi"])
        return norm(plain(receipt), keep=LITERAL)
    flow.step("reorg: deploy", deploy)

    asyncio.run(ws_steps(flow, args, acct, w3, st, labels, included))
    return flow.steps


async def ws_steps(flow, args, acct, w3, st, labels, included):
    t = args.timeout
    try:
        aw3 = await asyncio.wait_for(AsyncWeb3(WebSocketProvider(args.ws)), t)
    except Exception as e:  # noqa: BLE001 - no WebSocket: each step says so
        error = f"no WebSocket connection to {args.ws} in {t:g} s: {error_text(e)}"
        for name in WS_STEPS:
            flow.steps.append({"step": name, "ok": False, "error": error, "answer": None})
        return
    heads, logs = [], []

    async def consume():
        async for msg in aw3.socket.process_subscriptions():
            if msg.get("subscription") == st["heads_sub"]:
                heads.append(plain(msg["result"]))
            elif msg.get("subscription") == st["logs_sub"]:
                logs.append(msg["result"])

    async def subscribe():
        st["heads_sub"] = await aw3.eth.subscribe("newHeads")
        st["logs_sub"] = await aw3.eth.subscribe("logs", {"address": st["contract"].address})
        st["consumer"] = asyncio.create_task(consume())
        return {"subscribed": ["newHeads", "logs"]}
    await flow.astep("reorg: subscribe", subscribe, t)

    def decoded(log):
        return norm(plain(st["contract"].events.Ping().process_log(log)["args"]))

    async def ping():
        st["consumer"]  # noqa: B018 - no subscription, no step
        h = await asyncio.to_thread(lambda: st["contract"].functions.ping(7).transact())
        st["ping"] = plain(h).lower()
        receipt, block = await asyncio.to_thread(included, h)
        labels.name(block["parent_hash"], "H")
        labels.name(block["hash"], "A")
        deadline = time.time() + t
        while not logs and time.time() < deadline:
            await asyncio.sleep(0.05)
        if not logs:
            raise TimeoutError("no log notification for the ping")
        events = st["contract"].events.Ping().process_receipt(receipt)
        return {"block": labels(receipt["blockHash"]), "receipt": norm(plain(receipt), keep=LITERAL),
                "events": [norm(plain(e["args"])) for e in events]}
    await flow.astep("reorg: ping", ping, t)

    async def sibling():
        st["ping"]  # noqa: B018 - no ping, no reorg
        b = await asyncio.to_thread(control, args.control, "reorg", t)
        labels.name(b["hash"], "B")
        return {"number": b["number"], "parent": labels(b["parent_hash"]),
                "replaced": labels(b["replaced"]), "transactions": len(b["transactions"]),
                "ping_included": st["ping"] in [x.lower() for x in b["transactions"]]}
    await flow.astep("reorg: sibling", sibling, t)
    await asyncio.sleep(args.settle)

    def after():
        try:
            receipt = w3.eth.get_transaction_receipt(st["ping"])
        except TransactionNotFound:
            receipt = None
        try:
            tx = w3.eth.get_transaction(st["ping"])
        except TransactionNotFound:
            tx = None
        head = w3.eth.get_block("latest")
        return {"receipt": None if receipt is None else {
                    "block": labels(receipt["blockHash"]), "blockNumber": receipt["blockNumber"],
                    "status": receipt["status"], "logs": len(receipt["logs"])},
                "transaction": None if tx is None else {
                    "block": labels(tx["blockHash"]), "blockNumber": tx["blockNumber"]},
                "counter": st["contract"].functions.counter().call(),
                "head": {"number": head["number"], "block": labels(head["hash"])}}
    await flow.astep("reorg: after", lambda: asyncio.to_thread(after), t)

    async def new_heads():
        st["consumer"]  # noqa: B018
        return [{"number": h["number"], "block": labels(h["hash"]),
                 "parent": labels(h["parentHash"]), "head": norm_block(h, keep=LITERAL)}
                for h in heads]
    await flow.astep("reorg: new_heads", new_heads, t)

    async def logs_step():
        st["consumer"]  # noqa: B018
        return [{"removed": log["removed"], "block": labels(log["blockHash"]),
                 "blockNumber": log["blockNumber"], "args": decoded(log),
                 "log": norm(plain(log), keep=LITERAL)} for log in logs]
    await flow.astep("reorg: logs", logs_step, t)

    async def unsubscribe():
        st["consumer"].cancel()
        return {"newHeads": await aw3.eth.unsubscribe(st["heads_sub"]),
                "logs": await aw3.eth.unsubscribe(st["logs_sub"])}
    await flow.astep("reorg: unsubscribe", unsubscribe, t)
    await aw3.provider.disconnect()


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--http", required=True)
    p.add_argument("--ws", required=True)
    p.add_argument("--key", required=True)
    p.add_argument("--control", required=True, help="the harness's endpoint (compare.py)")
    p.add_argument("--timeout", type=float, default=60, help="seconds a step may wait")
    p.add_argument("--settle", type=float, default=2,
                   help="seconds notifications are collected for after the reorg")
    args = p.parse_args()
    # stdout is the JSON document alone: anything printed on the way goes to stderr.
    out, sys.stdout = sys.stdout, sys.stderr
    steps = run(args)
    json.dump(steps, out, indent=1)
    out.write("\n")


if __name__ == "__main__":
    main()
