#!/usr/bin/env python3
"""gigagas's JSON-RPC answers against geth 1.17.10's on the same chain (`make rpc-vs-geth`).

Both clients import one chain (a folder with `genesis.json` and `chain.rlp`, by default the
geth-built Amsterdam chain testing/geth/amsterdam-coverage, whose load exercises every
Glamsterdam rule) and then serve it over JSON-RPC without a consensus client or peers, both
with the RPC gas cap `--gas-cap` (0, none, by default). The same requests go to both and the
answers are compared, field by field:

- per block: `eth_getBlockByNumber` (full transactions), `eth_getBlockReceipts`,
  `debug_traceBlockByNumber` (`callTracer`), `debug_executionWitness` (headers, codes and
  trie nodes), the uncle methods (`eth_getUncleCountByBlockNumber`,
  `eth_getUncleByBlockNumberAndIndex`, `…ByBlockHashAndIndex`), and `eth_simulateV1` of the block's transactions
  as calls on its parent (with and without `validation`, `traceTransfers` on);
- per transaction: `eth_getTransactionReceipt`, `debug_traceTransaction` with `callTracer`,
  `prestateTracer` (and `diffMode`) and the struct logger (memory off), and `eth_call` /
  `eth_estimateGas` / `debug_traceCall` (`callTracer`) of the transaction as a call on its
  parent block;
- per proof-of-work block (a chain from testing/premerge_chain): gigagas's parity reward traces
  (`trace_block`: one block reward, one per ommer) against what geth's `eth_getBalance` says
  each address gained in the block (its rewards, plus the priority fees for the block's fee
  recipient), a row `trace_block rewards`;
- at the head, first: `eth_maxPriorityFeePerGas` and `eth_gasPrice` (geth's gas price oracle
  over the chain's last 20 blocks).

An answer counts as the same when the two JSON values are equal; for an error answer, when
both sides answer an error (the messages are shown, not compared). Two differences are known
and counted apart (`known`, with the reason) instead of failing the run:
- `eth_simulateV1` of a call priced with `gasPrice`: geth makes it an unsigned legacy
  transaction with v = 0 (no EIP-155 chain id), which alloy's encoding cannot write (it gives
  v = 35 + 2 × chain id), so that transaction's hash, the transactions root and the block hash
  differ;
- `callTracer` of a `SELFDESTRUCT` to the contract itself by a contract not created in the same
  transaction: revm moves no balance and destroys nothing there, so revm's inspector hook is
  not called and revm-inspectors' frame has no `from`, `to` or `value`.
Differences are written to OUT/diffs.json. Prints a table per method and exits 1 when any
answer differs otherwise; `--json` prints the table as JSON. geth comes from
testing/geth_install.sh unless --geth names it.

Usage: testing/.venv/bin/python testing/rpc_vs_geth.py [--chain testing/geth/amsterdam-coverage]
           [--gigagas target/release/gigagas] [--geth PATH] [--out target/rpc-vs-geth]
           [--gas-cap GAS] [--json]
"""

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import urllib.request

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from gigagas_testing import GethNode, GigagasNode  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def raw_call(url, request):
    """The whole JSON-RPC answer to `request`."""
    body = json.dumps(request).encode()
    req = urllib.request.Request(url, body, {"Content-Type": "application/json"})
    with urllib.request.urlopen(req, timeout=120) as r:
        return json.load(r)


def call(url, method, params):
    """(result, error) of one JSON-RPC request; error is the JSON-RPC error object or None."""
    answer = raw_call(url, {"jsonrpc": "2.0", "id": 1, "method": method, "params": params})
    return answer.get("result"), answer.get("error")


RECORD_MAX_BYTES = 256 * 1024


def record(folder, cases, head_hash, chain):
    """geth's answers as execution-apis rpc-compat cases: folder/METHOD/NAME.io (a comment,
    `>> request`, `<< answer`) and folder/headfcu.json (the forkchoice to the chain's head).
    Answers above RECORD_MAX_BYTES (the struct logs of the heaviest transactions) are left
    out."""
    for method, what, request, answer in cases:
        text = json.dumps(answer, separators=(",", ":"))
        if len(text) > RECORD_MAX_BYTES:
            continue
        short = re.sub(r"0x([0-9a-f]{8})[0-9a-f]{56}", r"\1", what.lower())
        name = re.sub(r"[^a-z0-9]+", "-", short).strip("-")
        os.makedirs(os.path.join(folder, method), exist_ok=True)
        with open(os.path.join(folder, method, name + ".io"), "w") as f:
            f.write(f"// geth 1.17.10's answer on {os.path.basename(chain)}: {what} "
                    f"(testing/rpc_vs_geth.py --record)\n")
            f.write(">> " + json.dumps(request, separators=(",", ":")) + "\n")
            f.write("<< " + text + "\n")
    state = {"headBlockHash": head_hash, "safeBlockHash": head_hash,
             "finalizedBlockHash": head_hash}
    with open(os.path.join(folder, "headfcu.json"), "w") as f:
        json.dump({"jsonrpc": "2.0", "id": "fcu", "method": "engine_forkchoiceUpdatedV3",
                   "params": [state, None]}, f, indent=2)
        f.write("\n")


def run(cmd, **kw):
    return subprocess.run(cmd, capture_output=True, text=True, **kw)


def geth_server(geth, chain, datadir, gas_cap):
    """geth init + import of the chain, then geth on it: JSON-RPC (eth, debug, net, web3) on a
    free loopback port, no peers, the RPC gas cap `gas_cap`, its log in DATADIR/geth.log."""
    run([geth, "init", "--datadir", datadir, os.path.join(chain, "genesis.json")], check=True)
    out = run([geth, "import", "--datadir", datadir, os.path.join(chain, "chain.rlp")])
    if out.returncode != 0:
        raise SystemExit(f"rpc-vs-geth: geth import failed:\n{out.stderr[-2000:]}")
    return GethNode(geth, datadir, ["--rpc.gascap", str(gas_cap), "--rpc.txfeecap", "0",
                                    "--verbosity", "2"],
                    http_api="eth,debug,net,web3", log_path=os.path.join(datadir, "geth.log"))


def gigagas_server(gigagas, chain, datadir, gas_cap):
    """gigagas init + import of the chain, then `gigagas node` on it without a network."""
    run([gigagas, "init", "--genesis", os.path.join(chain, "genesis.json"), "--datadir", datadir],
        check=True)
    out = run([gigagas, "import", os.path.join(chain, "chain.rlp"), "--datadir", datadir])
    if out.returncode != 0:
        raise SystemExit(f"rpc-vs-geth: gigagas import failed:\n{out.stderr[-2000:]}")
    return GigagasNode(gigagas, datadir, ["--disable-network", "--rpc.gascap", str(gas_cap),
                                          "--http.api", "eth,net,web3,debug,trace"])


CALL_FIELDS = ["from", "to", "gas", "value", "input", "nonce", "accessList", "authorizationList",
               "blobVersionedHashes", "maxFeePerBlobGas"]


def as_call(tx, with_gas=True):
    """A transaction of eth_getBlockByNumber as the call object of eth_call and friends."""
    c = {k: tx[k] for k in CALL_FIELDS if k in tx and tx[k] is not None}
    if tx["type"] in ("0x0", "0x1"):
        c["gasPrice"] = tx["gasPrice"]
    else:
        c["maxFeePerGas"] = tx["maxFeePerGas"]
        c["maxPriorityFeePerGas"] = tx["maxPriorityFeePerGas"]
    if not with_gas:
        c.pop("gas", None)
    return c


ZERO_ADDRESS = "0x" + "00" * 20


def known_difference(method, params, path, gigagas_value):
    """The reason when (method, params, first differing path) is one of the known differences
    of the module documentation, else None."""
    if method == "eth_simulateV1" and re.search(r"(\.hash|\.blockHash|\.transactionsRoot|"
                                                r"\.transactions\[\d+\])$", path):
        calls = [c for block in params[0]["blockStateCalls"] for c in block.get("calls", [])]
        if any("gasPrice" in c for c in calls):
            return "legacy call: geth's unsigned transaction has v = 0"
    if method in ("debug_traceTransaction", "debug_traceBlockByNumber", "debug_traceCall") and \
            re.search(r"\.calls\[\d+\]\.(from|to|value)$", path) and \
            gigagas_value in (ZERO_ADDRESS, "<absent>"):
        return "SELFDESTRUCT to itself: no inspector hook in revm"
    return None


def all_differences(a, b, path="$"):
    """Every (path, a's value, b's value) where a and b differ."""
    out = []
    if type(a) is not type(b):
        return [(path, a, b)]
    if isinstance(a, dict):
        for k in sorted(set(a) | set(b)):
            if k not in a or k not in b:
                out.append((f"{path}.{k}", a.get(k, "<absent>"), b.get(k, "<absent>")))
            else:
                out += all_differences(a[k], b[k], f"{path}.{k}")
    elif isinstance(a, list):
        if len(a) != len(b):
            return [(f"{path}.length", len(a), len(b))]
        for i, (x, y) in enumerate(zip(a, b)):
            out += all_differences(x, y, f"{path}[{i}]")
    elif a != b:
        out.append((path, a, b))
    return out


def first_difference(a, b, path="$"):
    """The JSON path of the first place where a and b differ, with both values there."""
    if type(a) is not type(b):
        return path, a, b
    if isinstance(a, dict):
        for k in sorted(set(a) | set(b)):
            if k not in a or k not in b:
                return f"{path}.{k}", a.get(k, "<absent>"), b.get(k, "<absent>")
            d = first_difference(a[k], b[k], f"{path}.{k}")
            if d:
                return d
        return None
    if isinstance(a, list):
        if len(a) != len(b):
            return f"{path}.length", len(a), len(b)
        for i, (x, y) in enumerate(zip(a, b)):
            d = first_difference(x, y, f"{path}[{i}]")
            if d:
                return d
        return None
    return None if a == b else (path, a, b)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--chain", default=os.path.join(ROOT, "testing/geth/amsterdam-coverage"))
    ap.add_argument("--gigagas", default=os.path.join(ROOT, "target/release/gigagas"))
    ap.add_argument("--geth", help="geth binary (default: testing/geth_install.sh)")
    ap.add_argument("--out", default=os.path.join(ROOT, "target/rpc-vs-geth"))
    ap.add_argument("--gas-cap", type=int, default=0,
                    help="both clients' --rpc.gascap (default 0: none, so that execution is "
                         "compared rather than caps)")
    ap.add_argument("--record", metavar="DIR",
                    help="also write geth's answers (all but the known differences) as "
                         "execution-apis rpc-compat cases into DIR (one folder per method, and "
                         "headfcu.json), for `gigagas-bench test-rpc`")
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()
    if not os.path.exists(os.path.join(args.chain, "chain.rlp")):
        raise SystemExit(f"rpc-vs-geth: no chain.rlp in {args.chain}")
    if not args.geth:
        folder = run([os.path.join(ROOT, "testing/geth_install.sh")], check=True).stdout
        args.geth = os.path.join(folder.strip().splitlines()[-1], "geth")
    os.makedirs(args.out, exist_ok=True)
    work = tempfile.mkdtemp(prefix="rpc-vs-geth-", dir=args.out)
    table, diffs, recorded = {}, [], []

    def compare(method, params, what):
        request = {"jsonrpc": "2.0", "id": 1, "method": method, "params": params}
        g_answer = raw_call(geth.url, request)
        g_res, g_err = g_answer.get("result"), g_answer.get("error")
        n_res, n_err = call(node.url, method, params)
        row = table.setdefault(method, {"same": 0, "differ": 0, "known": 0, "errors_both": 0})
        if g_err or n_err:
            same = bool(g_err) and bool(n_err)
            if same:
                row["errors_both"] += 1
            detail = {"geth_error": g_err, "gigagas_error": n_err}
        else:
            d = first_difference(g_res, n_res)
            same = d is None
            detail = None if same else {"path": d[0], "geth": d[1], "gigagas": d[2]}
        known = None
        if not same and "path" in detail:
            # Known only when every difference in the answer is.
            reasons = {known_difference(method, params, p, n)
                       for p, _, n in all_differences(g_res, n_res)}
            known = reasons.pop() if len(reasons) == 1 and None not in reasons else None
        row["same" if same else "known" if known else "differ"] += 1
        if not known:
            recorded.append((method, what, request, g_answer))
        if not same:
            diffs.append({"method": method, "what": what, "params": params, "known": known,
                          **detail})

    def check_rewards(block):
        """A proof-of-work block: gigagas's parity reward traces (`trace_block`) against what
        geth's state says each one paid. Every address a reward names must have gained, from
        the parent's state to the block's, its rewards plus, for the block's fee recipient,
        the priority fees of the block's transactions (the chain's fee recipients receive
        nothing else: testing/premerge_chain)."""
        number, tag = int(block["number"], 16), block["number"]
        row = table.setdefault("trace_block rewards", {"same": 0, "differ": 0, "known": 0,
                                                       "errors_both": 0})
        traces, err = call(node.url, "trace_block", [tag])
        paid = {}
        for t in traces or []:
            if t["type"] == "reward":
                author = t["action"]["author"].lower()
                paid[author] = paid.get(author, 0) + int(t["action"]["value"], 16)
        receipts, _ = call(geth.url, "eth_getBlockReceipts", [tag])
        base_fee = int(block.get("baseFeePerGas") or "0x0", 16)
        fees = sum(int(r["gasUsed"], 16) * (int(r["effectiveGasPrice"], 16) - base_fee)
                   for r in receipts or [])
        miner = block["miner"].lower()
        gained = {}
        for author in set(paid) | {miner}:
            after = int(call(geth.url, "eth_getBalance", [author, tag])[0], 16)
            before = int(call(geth.url, "eth_getBalance", [author, hex(number - 1)])[0], 16)
            gained[author] = after - before
        expected = {a: paid.get(a, 0) + (fees if a == miner else 0) for a in gained}
        kinds = sorted(t["action"]["rewardType"] for t in traces or [] if t["type"] == "reward")
        ommer_count = len(block["uncles"])
        same = (err is None and expected == gained
                and kinds == sorted(["block"] + ["uncle"] * ommer_count))
        row["same" if same else "differ"] += 1
        if not same:
            diffs.append({"method": "trace_block rewards", "what": f"block {number}",
                          "params": [tag], "known": None, "error": err, "rewardTypes": kinds,
                          "geth_balance_gains": gained, "gigagas_rewards_and_fees": expected})

    try:
        geth = geth_server(args.geth, args.chain, os.path.join(work, "geth"), args.gas_cap)
        node = gigagas_server(args.gigagas, args.chain, os.path.join(work, "gigagas"),
                              args.gas_cap)
        try:
            head = int(call(geth.url, "eth_blockNumber", [])[0], 16)
            n_head = int(call(node.url, "eth_blockNumber", [])[0], 16)
            if head != n_head:
                raise SystemExit(f"rpc-vs-geth: heads differ: geth {head}, gigagas {n_head}")
            head_hash = call(geth.url, "eth_getBlockByNumber", [hex(head), False])[0]["hash"]
            # The gas price oracle first, on fresh nodes: its answer at a head depends on its
            # last one (an empty block counts as it).
            compare("eth_maxPriorityFeePerGas", [], "head")
            compare("eth_gasPrice", [], "head")
            for number in range(1, head + 1):
                tag, parent = hex(number), hex(number - 1)
                block, _ = call(geth.url, "eth_getBlockByNumber", [tag, True])
                compare("eth_getBlockByNumber", [tag, True], f"block {number}")
                compare("eth_getBlockReceipts", [tag], f"block {number}")
                compare("debug_traceBlockByNumber", [tag, {"tracer": "callTracer"}],
                        f"block {number}")
                compare("debug_executionWitness", [tag], f"block {number}")
                compare("eth_getUncleCountByBlockNumber", [tag], f"block {number}")
                for i in range(len(block["uncles"])):
                    compare("eth_getUncleByBlockNumberAndIndex", [tag, hex(i)],
                            f"block {number} ommer {i}")
                    compare("eth_getUncleByBlockHashAndIndex", [block["hash"], hex(i)],
                            f"block {number} ommer {i}")
                if int(block["difficulty"], 16) > 0:
                    check_rewards(block)
                calls = [as_call(tx) for tx in block["transactions"]]
                if calls:
                    for validation in (False, True):
                        compare("eth_simulateV1",
                                [{"blockStateCalls": [{"calls": calls}], "validation": validation,
                                  "traceTransfers": True}, parent],
                                f"block {number}, validation {validation}")
                for tx in block["transactions"]:
                    h = tx["hash"]
                    what = f"block {number} tx {int(tx['transactionIndex'], 16)} {h}"
                    compare("eth_getTransactionReceipt", [h], what)
                    for tracer in ({"tracer": "callTracer"},
                                   {"tracer": "prestateTracer"},
                                   {"tracer": "prestateTracer", "tracerConfig": {"diffMode": True}},
                                   {"enableMemory": False}):
                        label = tracer.get("tracer", "structLogger") + \
                            (" diffMode" if "tracerConfig" in tracer else "")
                        compare("debug_traceTransaction", [h, tracer], f"{what} {label}")
                    compare("eth_call", [as_call(tx), parent], what)
                    compare("debug_traceCall", [as_call(tx), parent, {"tracer": "callTracer"}],
                            what)
                    compare("eth_estimateGas", [as_call(tx, with_gas=False), parent], what)
        finally:
            node.kill()
            geth.stop()
    finally:
        shutil.rmtree(work, ignore_errors=True)
    if args.record:
        record(args.record, recorded, head_hash, args.chain)
    with open(os.path.join(args.out, "diffs.json"), "w") as f:
        json.dump(diffs, f, indent=1)
    failed = [d for d in diffs if not d["known"]]
    ok = not failed
    if args.json:
        print(json.dumps({"ok": ok, "chain": args.chain, "methods": table}, indent=1))
    else:
        print(f"{'method':28} {'same':>6} {'differ':>7} {'known':>6} {'both error':>11}")
        for method, row in table.items():
            print(f"{method:28} {row['same']:>6} {row['differ']:>7} {row['known']:>6} "
                  f"{row['errors_both']:>11}")
    for d in [d for d in diffs if d["known"]]:
        print(f"known {d['method']} {d['what']}: {d['known']}", file=sys.stderr)
    for d in failed[:10]:
        print(f"DIFF {d['method']} {d['what']}: "
              f"{ {k: v for k, v in d.items() if k not in ('method', 'what', 'params', 'known')} }"[:600],
              file=sys.stderr)
    print(f"rpc-vs-geth: {sum(r['same'] for r in table.values())} answers the same, "
          f"{len(failed)} differ, {len(diffs) - len(failed)} known differences "
          f"(OUT {args.out}/diffs.json)", file=sys.stderr)
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()
