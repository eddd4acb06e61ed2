#!/usr/bin/env python3
"""geth 1.17.10 as the oracle of Amsterdam (Glamsterdam), both ways, on chains neither side has
seen before (`make interop-amsterdam`):

1. geth builds: `geth --dev` seals a chain under the coverage load of testing/geth_amsterdam.py
   (every rule of the fork at least once) and exports it, each block followed by its BAL;
   `gigagas import` takes it on the parallel executor driven by geth's BALs, and again with
   `--bal ignore` on the sequential reference building its own: both must end on geth's head.
2. The same chain as a BlockchainTests fixture: geth's `evm blocktest` and `gigagas-bench
   test-fixtures` (both executors) pass it.
3. gigagas builds: `gigagas-bench gen-chain --fork amsterdam` (its mainnet mix), and a
   `gigagas node --dev` on the same Amsterdam genesis as step 1 fed the same coverage load over
   JSON-RPC (its own payloads: the local miner, the payload builder, the txpool), the node's
   blocks read back with `debug_getRawBlock`; `geth import` of each must end on gigagas's head;
   the node's `eth_estimateGas` of a transfer to a new account covers the gas of geth's receipt
   of the same transaction kind, within the 1.5 % that geth's estimator (which gigagas follows)
   may stop above it.
4. JSON-RPC on geth's chain of step 1: testing/rpc_vs_geth.py serves it from both clients and
   compares their answers (blocks, receipts, `eth_call`, `eth_estimateGas`, `eth_simulateV1`,
   `debug_trace*` with the struct logger, `callTracer` and `prestateTracer`).

Prints one line per check and a summary; `--json` prints the summary as JSON. Exit code 1 when
a check fails. geth comes from testing/geth_install.sh unless --geth names it.

Usage: testing/.venv/bin/python testing/interop_amsterdam.py [--gigagas target/release/gigagas]
           [--bench target/release/gigagas-bench] [--geth PATH] [--out target/interop] [--json]
"""

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import geth_amsterdam as ga  # noqa: E402
from devnet import start_node  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def run(cmd, **kw):
    return subprocess.run(cmd, capture_output=True, text=True, **kw)


def gigagas_import(gigagas, folder, extra, work):
    """`gigagas init` + `gigagas import --json` of folder's genesis.json and chain.rlp."""
    datadir = os.path.join(work, "gigagas-" + "-".join(x.strip("-") for x in extra) or "default")
    shutil.rmtree(datadir, ignore_errors=True)
    run([gigagas, "init", "--genesis", os.path.join(folder, "genesis.json"), "--datadir", datadir],
        check=True)
    out = run([gigagas, "import", os.path.join(folder, "chain.rlp"), "--datadir", datadir, "--json"]
              + extra)
    report = json.loads(out.stdout[out.stdout.index("{"):]) if "{" in out.stdout else {}
    last = report.get("blocks", [{}])[-1] if report.get("blocks") else {}
    return report, last.get("hash"), out.returncode


def geth_import(geth, folder, work):
    """`geth init` + `geth import`; the last segment's (number, abbreviated hash)."""
    datadir = os.path.join(work, "geth-import")
    shutil.rmtree(datadir, ignore_errors=True)
    run([geth, "init", "--datadir", datadir, os.path.join(folder, "genesis.json")], check=True)
    out = run([geth, "import", "--datadir", datadir, os.path.join(folder, "chain.rlp")])
    text = out.stdout + out.stderr
    segments = re.findall(r"Imported new chain segment\s+number=(\S+)\s+hash=(\S+)", text)
    errors = [line for line in text.splitlines()
              if ("error" in line.lower() or "invalid" in line.lower()) and "Sanitizing" not in line]
    head = (int(segments[-1][0].replace(",", "")), segments[-1][1]) if segments else None
    return head, errors, out.returncode


def same(full_hash, short):
    """geth logs a hash as its first and last 6 hex digits."""
    first, last = short.split("..")
    return full_hash[2:].startswith(first) and full_hash.endswith(last)


def node_chain(gigagas, geth, folder, out):
    """A gigagas dev node on folder's genesis fed the coverage load; its blocks written as
    out/chain.rlp beside the genesis. Returns (head number, head hash, transactions, failed)."""
    os.makedirs(out, exist_ok=True)
    shutil.copy(os.path.join(folder, "genesis.json"), os.path.join(out, "genesis.json"))
    datadir = tempfile.mkdtemp(prefix="gigagas-interop-node-")
    node = start_node(gigagas, datadir, ["--dev", "--dev.block-time", "1", "--chain",
                                   os.path.join(out, "genesis.json")])
    try:
        sender = ga.Sender(node, 14)
        _, receipts = ga.coverage_load(sender)
        failed = sorted({sender.kinds[h] for h, r in receipts.items() if r["status"] != "0x1"})
        head = int(node.rpc("eth_blockNumber"), 16)
        with open(os.path.join(out, "chain.rlp"), "wb") as f:
            for n in range(1, head + 1):
                f.write(bytes.fromhex(node.rpc("debug_getRawBlock", hex(n))[2:]))
        head_hash = node.rpc("eth_getBlockByNumber", hex(head), False)["hash"]
        # eth_estimateGas under the node's Amsterdam: a transfer to a new account (EIP-2780's
        # 21,000 plus EIP-8037's 183,600 of state gas).
        fresh = ga.to_checksum_address(ga.keccak(b"interop estimate")[12:])
        estimate = int(node.rpc("eth_estimateGas", {"from": sender.accounts[2].address,
                                                    "to": fresh, "value": hex(10**15)}), 16)
        return head, head_hash, len(receipts), failed, estimate
    finally:
        node.kill()
        shutil.rmtree(datadir, ignore_errors=True)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--gigagas", default=os.path.join(ROOT, "target/release/gigagas"))
    ap.add_argument("--bench", default=os.path.join(ROOT, "target/release/gigagas-bench"))
    ap.add_argument("--geth", help="geth binary (default: testing/geth_install.sh)")
    ap.add_argument("--out", default=os.path.join(ROOT, "target/interop"))
    ap.add_argument("--data", default=os.path.join(ROOT, "../shared/data/mainnet"))
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()
    if not args.geth:
        folder = run([os.path.join(ROOT, "testing/geth_install.sh")], check=True).stdout
        args.geth = os.path.join(folder.strip().splitlines()[-1], "geth")
    evm = os.path.join(os.path.dirname(args.geth), "evm")
    os.makedirs(args.out, exist_ok=True)
    work = tempfile.mkdtemp(prefix="gigagas-interop-", dir=args.out)
    checks = []

    def check(name, ok, detail):
        checks.append({"check": name, "ok": bool(ok), "detail": detail})
        print(f"{'ok  ' if ok else 'FAIL'} {name}: {detail}", file=sys.stderr)

    try:
        # 1. geth builds, gigagas imports.
        geth_chain = os.path.join(args.out, "geth-coverage")
        out = run([sys.executable, os.path.join(ROOT, "testing/geth_amsterdam.py"), "--geth",
                   args.geth, "--out", geth_chain, "--json"])
        if out.returncode != 0:
            raise SystemExit(f"interop: geth_amsterdam.py failed:\n{out.stderr[-3000:]}")
        summary = json.loads(out.stdout)
        geth_head = summary["head_hash"]
        for extra, what in [([], "parallel executor on geth's BALs"),
                            (["--bal", "ignore"], "sequential reference, BALs built")]:
            report, head, code = gigagas_import(args.gigagas, geth_chain, extra, work)
            executors = sorted({(b["executor"], b["bal"]) for b in report.get("blocks", [])})
            check(f"gigagas import of geth's chain ({what})",
                  code == 0 and head == geth_head,
                  f"{report.get('blocks_imported')} blocks, {summary['transactions']} transactions, "
                  f"head {head} (geth {geth_head}), executors {executors}, error {report.get('error')}")
        # 2. The fixture, both ways.
        fixture = os.path.join(geth_chain, "fixture.json")
        out = run([evm, "blocktest", fixture])
        passed = '"pass": true' in out.stdout
        check("geth evm blocktest of the fixture", out.returncode == 0 and passed,
              "pass" if passed else (out.stdout + out.stderr)[-500:])
        out = run([args.bench, "test-fixtures", fixture])
        check("gigagas-bench test-fixtures of the fixture", out.returncode == 0,
              out.stdout.strip().splitlines()[-1] if out.stdout.strip() else out.stderr[-500:])
        # 3. gigagas builds, geth imports.
        gen = os.path.join(args.out, "gen-chain-amsterdam")
        out = run([args.bench, "gen-chain", "--data", args.data, "--fork", "amsterdam", "--mix",
                   "mainnet", "--gas", "60M", "--blocks", "8", "--out", gen, "--json"])
        if out.returncode != 0:
            raise SystemExit(f"interop: gen-chain failed:\n{out.stderr[-3000:]}")
        info = json.loads(out.stdout)
        last = info["blocks"][-1]
        head, errors, code = geth_import(args.geth, gen, work)
        check("geth import of gigagas-bench gen-chain --fork amsterdam",
              code == 0 and head and head[0] == last["number"] and same(last["hash"], head[1]),
              f"{len(info['blocks'])} blocks, {sum(b['transactions'] for b in info['blocks'])} "
              f"transactions, geth head {head}, gigagas {last['number']} {last['hash']}; {errors[:2]}")
        node_out = os.path.join(args.out, "node-coverage")
        number, hash_, txs, failed, estimate = node_chain(args.gigagas, args.geth, geth_chain,
                                                          node_out)
        geth_gas = summary["by_kind"]["transfer to a new account"][0]["gasUsed"]
        check("eth_estimateGas of a transfer to a new account covers geth's receipt (≤ 1.5 % more)",
              geth_gas <= estimate <= geth_gas / (1 - 0.015),
              f"gigagas node {estimate}, geth's chain {geth_gas}")
        head, errors, code = geth_import(args.geth, node_out, work)
        check("geth import of a gigagas dev node's blocks (coverage load)",
              code == 0 and head and head[0] == number and same(hash_, head[1]),
              f"{number} blocks, {txs} transactions (reverted: {failed}), geth head {head}, "
              f"gigagas {hash_}; {errors[:2]}")
        # 4. JSON-RPC answers on geth's chain.
        out = run([sys.executable, os.path.join(ROOT, "testing/rpc_vs_geth.py"), "--chain",
                   geth_chain, "--gigagas", args.gigagas, "--geth", args.geth, "--out",
                   os.path.join(args.out, "rpc-vs-geth"), "--json"])
        table = json.loads(out.stdout)["methods"] if out.stdout.strip().startswith("{") else {}
        equal = sum(r["same"] for r in table.values())
        differ = sum(r["differ"] for r in table.values())
        known = sum(r["known"] for r in table.values())
        check("JSON-RPC answers on geth's chain equal geth's", out.returncode == 0 and table,
              f"{equal} the same, {differ} differ, {known} known differences "
              f"(testing/rpc_vs_geth.py){'' if table else ': ' + out.stderr[-500:]}")
    finally:
        shutil.rmtree(work, ignore_errors=True)
    ok = all(c["ok"] for c in checks)
    if args.json:
        print(json.dumps({"ok": ok, "checks": checks}, indent=1))
    print(f"interop: {sum(c['ok'] for c in checks)} of {len(checks)} checks passed", file=sys.stderr)
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()
