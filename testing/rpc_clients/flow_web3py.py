#!/usr/bin/env python3
"""A dapp's everyday JSON-RPC flow through web3.py 7.14 (PyPI `web3`), one JSON document out.

Usage: flow_web3py.py --http URL [--ws URL] --key HEX [--timeout S]

Runs as the venv of testing/rpc_clients/install.sh (~/.cache/gigagas/rpc-clients/venv/bin/python).
Each step goes through web3.py's own API (a raw `w3.manager.request_blocking` only where web3.py
has no method) and is recorded as {"step", "ok", "error", "answer"}: a step that raises is
ok=false with the exception's text and the flow goes on. Answers are normalized so that two
nodes' runs compare: the values under the keys of volatile.json (hashes, block numbers, times,
fees, signatures) become their shape (`<hash>`, `<quantity>`, ...), the rest stays literal. The
steps, their names and what each answer holds are the same in flow_ethers.mjs and flow_viem.mjs
(testing/README.md).

The key must be funded and start at nonce 0 on a fresh node (compare.py uses the Hardhat dev
keys testing/dev-genesis.json funds), so that the contract's address and every nonce are the
same on the two nodes compared.
"""

import argparse
import asyncio
import json
import os
import re
import sys
import time
import traceback
import warnings

from eth_account import Account
from web3 import AsyncWeb3, Web3
from web3.middleware import SignAndSendRawMiddlewareBuilder
from web3.providers import HTTPProvider, WebSocketProvider

# web3.py deprecates get_uncle_count and others; the flow calls them on purpose.
warnings.filterwarnings("ignore", category=DeprecationWarning)

HERE = os.path.dirname(os.path.abspath(__file__))
with open(os.path.join(HERE, "pinger.json")) as f:
    PINGER = json.load(f)
with open(os.path.join(HERE, "volatile.json")) as f:
    RULES = json.load(f)
VOLATILE, BLOCK_KEYS = set(RULES["keys"]), set(RULES["block_keys"])

# Where the transfers go: an address no genesis funds, each library its own (ethers 0x…Bee02,
# viem 0x…Bee03) so that the flows' gas (a first transfer creates the account) does not depend
# on which of them ran first on a node.
RECIPIENT = "0x00000000000000000000000000000000000bee01"
# For the state overrides: an account whose balance is overridden, one whose code is.
OVERRIDE_BALANCE_OF = "0x00000000000000000000000000000000000b0B0b"
OVERRIDE_CODE_AT = "0x0000000000000000000000000000000000c0de00"
GWEI = 10**9


# --- normalization (the same rules as common.mjs) -----------------------------------------

def plain(x):
    """web3.py's answer as plain JSON: AttributeDicts as dicts, HexBytes as 0x-hex."""
    if isinstance(x, (bytes, bytearray)):
        return "0x" + bytes(x).hex()
    if hasattr(x, "items"):
        return {str(k): plain(v) for k, v in x.items()}
    if isinstance(x, (list, tuple)):
        return [plain(v) for v in x]
    return x


def shape(x):
    """What a value is, not what it holds: objects keep their keys, lists their length."""
    if x is None:
        return None
    if isinstance(x, bool):
        return "<bool>"
    if isinstance(x, (int, float)):
        return "<number>"  # 0 and 0.5 alike (feeHistory's gasUsedRatio)
    if isinstance(x, str):
        if re.fullmatch(r"0x[0-9a-fA-F]*", x):
            # 32 bytes (a hash, or r and s as quantities, their leading zeros dropped), 20 bytes
            return "<hash>" if 58 <= len(x) <= 66 else "<address>" if len(x) == 42 else "<hex>"
        if re.fullmatch(r"-?[0-9]+", x):
            return "<quantity>"
        return "<string>"
    if isinstance(x, dict):
        return {k: shape(v) for k, v in x.items()}
    if isinstance(x, list):
        return [shape(v) for v in x]
    return f"<{type(x).__name__}>"


def norm(x, volatile=False, extra=frozenset(), keep=frozenset()):
    """Literal, except the values under volatile.json's keys but `keep` (shaped; objects inside
    them are normalized by their own keys) and under `extra`."""
    if isinstance(x, dict):
        return {k: norm(v, (k in VOLATILE and k not in keep) or k in extra, extra, keep)
                for k, v in x.items()}
    if isinstance(x, list):
        return [norm(v, volatile, extra, keep) for v in x]
    return shape(x) if volatile else x


def norm_block(x, keep=frozenset()):
    """A block or header: also its gas limit (volatile.json's block_keys) shaped."""
    return norm(x, extra=BLOCK_KEYS, keep=keep)


# --- the flow -----------------------------------------------------------------------------

class Flow:
    def __init__(self):
        self.steps = []

    def step(self, name, fn):
        """Runs fn; its return value (already normalized) is the answer."""
        try:
            answer = fn()
            self.steps.append({"step": name, "ok": True, "error": None, "answer": answer})
            return True
        except Exception as e:  # noqa: BLE001 - a failed step is an answer too
            self.steps.append({"step": name, "ok": False, "error": error_text(e), "answer": None})
            if os.environ.get("FLOW_DEBUG"):
                traceback.print_exc()
            return False

    async def astep(self, name, fn, timeout):
        try:
            answer = await asyncio.wait_for(fn(), timeout)
            self.steps.append({"step": name, "ok": True, "error": None, "answer": answer})
        except Exception as e:  # noqa: BLE001
            self.steps.append({"step": name, "ok": False, "error": error_text(e), "answer": None})
            if os.environ.get("FLOW_DEBUG"):
                traceback.print_exc()


def accounts_shape(accounts):
    """eth_accounts: a node's own (dev) accounts differ between nodes; a list is the answer."""
    return "<address[]>" if isinstance(accounts, (list, tuple)) else shape(plain(accounts))


class State(dict):
    """What later steps need from earlier ones: a key no step set fails at once."""

    def __missing__(self, key):
        raise LookupError(f"skipped: no {key} (an earlier step failed)")


def error_text(e):
    if str(e).startswith("skipped:"):
        return str(e)
    if isinstance(e, asyncio.TimeoutError):
        return "timed out"
    text = f"{type(e).__name__}: {e}" if str(e) else type(e).__name__
    return text[:500]


def raw(w3, method, *params):
    """A method web3.py has no helper for, through its own request manager."""
    return plain(w3.manager.request_blocking(method, list(params)))


def run(args):
    flow = Flow()
    acct = Account.from_key(args.key)
    me = acct.address
    w3 = Web3(HTTPProvider(args.http, request_kwargs={"timeout": args.timeout}))
    # Contract transactions the web3.py way: eth_sendTransaction from the default account,
    # filled (nonce, gas, fees) and signed locally by the middleware, sent raw.
    w3.middleware_onion.inject(SignAndSendRawMiddlewareBuilder.build(acct), layer=0)
    w3.eth.default_account = me
    st = State()  # what later steps need: receipts, the contract, block numbers

    def wait(h):
        return w3.eth.wait_for_transaction_receipt(h, timeout=args.timeout, poll_latency=0.2)

    def transfer(value=1):
        """A locally signed EIP-1559 transfer, wallet style: fees from the node, signed here,
        sent with eth_sendRawTransaction. Returns (hash the node gave, the signed hash)."""
        prio = w3.eth.max_priority_fee
        base = w3.eth.get_block("latest")["baseFeePerGas"]
        tx = {"type": 2, "chainId": w3.eth.chain_id, "to": RECIPIENT, "value": value,
              "nonce": w3.eth.get_transaction_count(me, "pending"),
              "maxPriorityFeePerGas": prio, "maxFeePerGas": 2 * base + prio}
        tx["gas"] = w3.eth.estimate_gas({"from": me, "to": RECIPIENT, "value": value})
        signed = acct.sign_transaction(tx)
        return w3.eth.send_raw_transaction(signed.raw_transaction), signed.hash

    flow.step("client_version", lambda: shape(w3.client_version))
    flow.step("chain_id", lambda: w3.eth.chain_id)
    flow.step("block_number", lambda: shape(w3.eth.block_number))
    flow.step("gas_price", lambda: shape(w3.eth.gas_price))
    flow.step("max_priority_fee", lambda: shape(
        w3.manager.request_blocking("eth_maxPriorityFeePerGas", [])))
    flow.step("fee_history", lambda: norm(plain(w3.eth.fee_history(4, "latest", [25, 75]))))
    flow.step("balance", lambda: shape(w3.eth.get_balance(me)))
    flow.step("nonce", lambda: w3.eth.get_transaction_count(me))
    flow.step("accounts", lambda: accounts_shape(w3.eth.accounts))
    flow.step("protocol_version", lambda: shape(raw(w3, "eth_protocolVersion")))

    def transfer_send():
        h, local = transfer(10**15)
        st["transfer"] = h
        return {"hash": shape(plain(h)), "is_signed_hash": bytes(h) == bytes(local)}
    flow.step("transfer_send", transfer_send)
    flow.step("transfer_receipt", lambda: norm(plain(wait(st["transfer"]))))

    def deploy():
        factory = w3.eth.contract(abi=PINGER["abi"], bytecode=PINGER["bytecode"])
        r = wait(factory.constructor().transact())
        st["deploy_block"] = r["blockNumber"]
        st["contract"] = w3.eth.contract(address=r["contractAddress"], abi=PINGER["abi"])
        return norm(plain(r))
    flow.step("deploy", deploy)
    c = lambda: st["contract"]  # noqa: E731

    flow.step("call_view", lambda: c().functions.counter().call())
    flow.step("estimate_gas", lambda: c().functions.ping(7).estimate_gas())

    def contract_send():
        st["ping"] = c().functions.ping(7).transact()
        return shape(plain(st["ping"]))
    flow.step("contract_send", contract_send)

    def contract_receipt():
        r = wait(st["ping"])
        st["ping_block"] = r["blockNumber"]
        events = c().events.Ping().process_receipt(r)
        return {"receipt": norm(plain(r)), "events": norm(plain(events)),
                "counter_after": c().functions.counter().call()}
    flow.step("contract_receipt", contract_receipt)

    def call_revert():
        fail = c().functions.fail()  # outside the try: no contract is no revert
        try:
            fail.call()
        except Exception as e:  # noqa: BLE001 - the revert is the answer
            return {"reverted": True, "type": type(e).__name__, "message": str(e)}
        return {"reverted": False}
    flow.step("call_revert", call_revert)

    flow.step("get_logs", lambda: norm(plain(
        c().events.Ping.get_logs(from_block=st["deploy_block"]))))

    def log_filter_install():
        st["log_filter"] = c().events.Ping.create_filter(from_block=st["deploy_block"])
        return shape(st["log_filter"].filter_id)
    flow.step("log_filter_install", log_filter_install)

    def log_filter_changes():
        wait(c().functions.ping(11).transact())
        return norm(plain(st["log_filter"].get_new_entries()))
    flow.step("log_filter_changes", log_filter_changes)
    flow.step("log_filter_logs", lambda: norm(plain(st["log_filter"].get_all_entries())))
    flow.step("log_filter_uninstall",
              lambda: w3.eth.uninstall_filter(st["log_filter"].filter_id))

    def block_filter():
        f = w3.eth.filter("latest")
        wait(transfer()[0])
        hashes = f.get_new_entries()
        return {"new_blocks": len(hashes) > 0, "items": sorted({shape(plain(h)) for h in hashes}),
                "uninstalled": w3.eth.uninstall_filter(f.filter_id)}
    flow.step("block_filter", block_filter)

    def pending_filter():
        f = w3.eth.filter("pending")
        h, _ = transfer()
        seen, deadline = [], time.time() + 10
        while bytes(h) not in seen and time.time() < deadline:
            seen += [bytes(x) for x in f.get_new_entries()]
            time.sleep(0.2)
        wait(h)
        return {"sent_seen": bytes(h) in seen, "uninstalled": w3.eth.uninstall_filter(f.filter_id)}
    flow.step("pending_filter", pending_filter)

    flow.step("block_by_number", lambda: norm_block(plain(w3.eth.get_block(st["ping_block"]))))
    flow.step("block_by_number_full",
              lambda: norm_block(plain(w3.eth.get_block(st["ping_block"], full_transactions=True))))
    flow.step("header_by_number",
              lambda: norm_block(raw(w3, "eth_getHeaderByNumber", hex(st["ping_block"]))))
    flow.step("transaction_by_hash", lambda: norm(plain(w3.eth.get_transaction(st["ping"]))))
    flow.step("uncle_count", lambda: w3.eth.get_uncle_count(st["ping_block"]))

    def call_balance_override():
        return c().functions.balanceOf(OVERRIDE_BALANCE_OF).call(
            block_identifier="latest", state_override={OVERRIDE_BALANCE_OF: {"balance": 12345}})
    flow.step("call_balance_override", call_balance_override)

    def call_code_override():
        other = w3.eth.contract(address=OVERRIDE_CODE_AT, abi=PINGER["abi"])
        return other.functions.counter().call(state_override={OVERRIDE_CODE_AT: {
            "code": PINGER["runtime"], "stateDiff": {"0x" + "00" * 32: "0x" + "2a".rjust(64, "0")}}})
    flow.step("call_code_override", call_code_override)

    # The traces before the WebSocket steps: a node keeps a recent block's state only so long.
    flow.step("debug_trace_transaction", lambda: norm(raw(
        w3, "debug_traceTransaction", "0x" + bytes(st["ping"]).hex(), {"tracer": "callTracer"})))
    flow.step("debug_trace_call", lambda: norm(raw(
        w3, "debug_traceCall", {"from": me, "to": c().address, "gas": hex(100_000),
                                "data": c().encode_abi("ping", [3])},
        "latest", {"tracer": "callTracer"})))
    flow.step("trace_transaction", lambda: norm(plain(w3.tracing.trace_transaction(st["ping"]))))
    flow.step("trace_block", lambda: norm(plain(w3.tracing.trace_block(st["ping_block"]))))

    if args.ws:
        asyncio.run(ws_steps(flow, args, acct, st))
    return flow.steps


async def ws_steps(flow, args, acct, st):
    """The WebSocket steps: eth_subscribe newHeads, logs and newPendingTransactions through
    web3.py's persistent WebSocketProvider, each unsubscribed at its end."""
    t = args.timeout
    names = ("ws_new_heads", "ws_logs", "ws_pending_transactions")
    try:
        w3 = await asyncio.wait_for(AsyncWeb3(WebSocketProvider(args.ws)), t)
    except Exception as e:  # noqa: BLE001 - no WebSocket: each step says so
        error = f"no WebSocket connection to {args.ws} in {t:g} s: {error_text(e)}"
        for name in names:
            flow.steps.append({"step": name, "ok": False, "error": error, "answer": None})
        return
    w3.middleware_onion.inject(SignAndSendRawMiddlewareBuilder.build(acct), layer=0)
    w3.eth.default_account = acct.address

    async def next_message(sub_id, predicate=lambda r: True):
        async for msg in w3.socket.process_subscriptions():
            if msg.get("subscription") == sub_id and predicate(msg["result"]):
                return msg["result"]

    async def new_heads():
        sub = await w3.eth.subscribe("newHeads")
        heads = [await next_message(sub), await next_message(sub)]
        return {"heads": len(heads), "head": shape(plain(heads[0])),
                "unsubscribed": await w3.eth.unsubscribe(sub)}
    await flow.astep(names[0], new_heads, t)

    async def logs():
        address = st["contract"].address
        sub = await w3.eth.subscribe("logs", {"address": address})
        contract = w3.eth.contract(address=address, abi=PINGER["abi"])
        await contract.functions.ping(5).transact()
        log = await next_message(sub)
        return {"log": norm(plain(log)), "unsubscribed": await w3.eth.unsubscribe(sub)}
    await flow.astep(names[1], logs, t)

    async def pending():
        sub = await w3.eth.subscribe("newPendingTransactions")
        h = await w3.eth.send_transaction({"to": RECIPIENT, "value": 1})
        await next_message(sub, lambda r: bytes(r) == bytes(h))
        await w3.eth.wait_for_transaction_receipt(h, timeout=t, poll_latency=0.2)
        return {"sent_seen": True, "unsubscribed": await w3.eth.unsubscribe(sub)}
    await flow.astep(names[2], pending, t)
    await w3.provider.disconnect()


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--http", required=True)
    p.add_argument("--ws")
    p.add_argument("--key", required=True)
    p.add_argument("--timeout", type=float, default=60, help="seconds a step may wait")
    args = p.parse_args()
    # stdout is the JSON document alone: anything printed on the way goes to stderr.
    out, sys.stdout = sys.stdout, sys.stderr
    steps = run(args)
    json.dump(steps, out, indent=1)
    out.write("\n")


if __name__ == "__main__":
    main()
