#!/usr/bin/env python3
"""Real client libraries as tests: a dapp's everyday flow through web3.py, ethers and
viem against two dev nodes, answers compared field by field (`make rpc-clients`).

Node A, the reference, is `geth --dev` (1.17.10, testing/geth_install.sh); node B is
`gigagas node --dev`, or a second `geth --dev` with `--only geth` (which checks the harness
itself: every step geth serves must come out "same"). Both run on testing/dev-genesis.json
(geth `init`s it: the same chain id, forks, Amsterdam included, and funded Hardhat keys), with
JSON-RPC over HTTP and WebSocket and 1-second blocks. `--geth-genesis builtin` runs geth on its
own dev genesis instead; the flows' keys are then funded from geth's unlocked dev account with
eth_sendTransaction (setup, not compared).

Each flow (flow_web3py.py, flow_ethers.mjs, flow_viem.mjs; installed by install.sh into
~/.cache/gigagas/rpc-clients) runs on both nodes at once, with its own Hardhat key (web3.py #0,
ethers #1, viem #2), each at nonce 0 on fresh nodes, so that contract addresses and nonces
match; each prints its steps with normalized answers (volatile.json). The table has a row per
step and a column per library:
  same               both answered, the normalized answers equal
  differs: PATHS     both answered, these fields differ (all of them in --json and below)
  fails on A/B/both  the step raised on that node (its error is listed below the table)
  missing on A/B     the flow did not reach the step there (it crashed, or no WebSocket)
Exit status 1 when a step that passes on A fails, is missing or differs on B.

Then the reorg scenario, rows `reorg: ...` of the same table (`--no-reorg` skips it,
`--reorg-only` runs it alone; it needs the nodes' Engine API and WebSocket, so it is not run
with --a-http/--b-http or --no-ws). A dev node cannot reorg (geth --dev has no Engine API), so
here both nodes run without `--dev`, fresh for each library on testing/dev-genesis.json (geth
`init`ed with it; `gigagas node --chain` it, no network), and the harness is their consensus
client (reorg.py: Engine API V4/V5/V6 with the node's JWT). It serves each flow a local HTTP
endpoint: `POST /build` makes a block of the pool's transactions the head (forkchoiceUpdated
with payload attributes on the head, `--reorg-slot` seconds, getPayload, newPayload,
forkchoiceUpdated to it); `POST /reorg` replaces the head A by a sibling B (forkchoiceUpdated
back to A's parent H alone, then the same as /build from H, a later timestamp, another fee
recipient). Each library's reorg flow
(reorg_web3py.py, reorg_ethers.mjs, reorg_viem.mjs; its docstring lists the steps) deploys
Pinger (block H), subscribes over WebSocket to newHeads and to the Pinger's logs, sends a
locally signed ping, has it built into A, waits for the receipt and the log notification, has
the harness reorg A out, collects notifications for `--reorg-settle` seconds, and prints the
answers: whether B holds the ping again (the pool took it back), where the receipt is after,
every newHeads and logs notification in order (`removed` flags, block numbers literal, block
hashes named H, A, B by their role). The two nodes' answers compare as above.

Usage: python3 testing/rpc_clients/compare.py [--gigagas target/release/gigagas | --only geth]
           [--flows web3py,ethers,viem] [--geth PATH] [--geth-genesis dev|builtin] [--no-ws]
           [--gigagas-flag=--flag ...] [--out target/rpc-clients] [--keep-datadirs]
           [--timeout S] [--no-reorg | --reorg-only] [--reorg-slot S] [--reorg-settle S]
           [--json]
       compare.py --a-http URL [--a-ws URL] --b-http URL [--b-ws URL]   (nodes already running)
"""

import argparse
import json
import os
import shutil
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.join(ROOT, "testing"))
from gigagas_testing import GethNode, GigagasNode, free_port, geth_binary, json_rpc  # noqa: E402
from reorg import ControlServer, Driver  # noqa: E402

# The Hardhat/Anvil dev keys testing/dev-genesis.json funds; one per library so that each
# flow starts at nonce 0 on fresh nodes whatever ran before it.
KEYS = {
    "web3py": "0xac0974bec39a17e36ba4a6b4d238ff944bacb478cbed5efcae784d7bf4f2ff80",
    "ethers": "0x59c6995e998f97a5a0044966f0945389dc9e86dae88c7a8412f4603b6b78690d",
    "viem": "0x5de4111afa1a4b94908f83103eb1f1706367c2e68ca870fc3fb9a804cdab365a",
}
ADDRESSES = {
    "web3py": "0xf39Fd6e51aad88F6F4ce6aB8827279cffFb92266",
    "ethers": "0x70997970C51812dc3A010C7d01b50e0d17dc79C8",
    "viem": "0x3C44CdDdB6a900fa2b585dd299e03d12FA4293BC",
}
FLOWS = {
    "web3py": lambda lib: [os.path.join(lib, "venv/bin/python"), os.path.join(HERE, "flow_web3py.py")],
    "ethers": lambda lib: ["node", os.path.join(HERE, "flow_ethers.mjs"), "--lib", lib],
    "viem": lambda lib: ["node", os.path.join(HERE, "flow_viem.mjs"), "--lib", lib],
}
# The reorg scenario's flows (steps `reorg: ...`), run with --control, the harness's endpoint.
REORG_FLOWS = {
    "web3py": lambda lib: [os.path.join(lib, "venv/bin/python"), os.path.join(HERE, "reorg_web3py.py")],
    "ethers": lambda lib: ["node", os.path.join(HERE, "reorg_ethers.mjs"), "--lib", lib],
    "viem": lambda lib: ["node", os.path.join(HERE, "reorg_viem.mjs"), "--lib", lib],
}
APIS = "eth,net,web3,debug,txpool"
# gigagas serves the parity `trace_` namespace too (geth has none: those steps fail on geth).
GIGAGAS_APIS = APIS + ",trace"
ETHER = 10**18


# Steps gigagas does not serve yet, which `--solo` lets fail.
NOT_SERVED_YET = set()


def lib_dir(node_libraries=True):
    d = os.environ.get("GIGAGAS_RPC_CLIENTS") or os.path.expanduser("~/.cache/gigagas/rpc-clients")
    if not os.path.exists(os.path.join(d, "venv/bin/python")) or \
            (node_libraries and not os.path.isdir(os.path.join(d, "node_modules/viem"))):
        raise SystemExit(f"compare: the client libraries are not in {d}: "
                         "run testing/rpc_clients/install.sh")
    return d


# --- nodes ------------------------------------------------------------------------------

def start_geth(geth, datadir, genesis, log, dev=True):
    """`geth --dev`, 1-second blocks, HTTP and WebSocket on free loopback ports; with
    `dev=False` geth on `genesis` alone, its blocks made over the Engine API (the reorg
    scenario)."""
    shutil.rmtree(datadir, ignore_errors=True)
    os.makedirs(datadir)
    if genesis:
        GethNode.init(geth, datadir, genesis)
    ws = free_port()
    # --cache 64: geth's default cache makes pebble preallocate ~290 MB per write-ahead log,
    # over 1 GB for a dev datadir of a few MB.
    node = GethNode(geth, datadir, (["--dev", "--dev.period", "1"] if dev else []) + [
                        "--cache", "64", "--ws", "--ws.addr", "127.0.0.1", "--ws.port", str(ws),
                        "--ws.api", APIS, "--verbosity", "3"],
                    http_api=APIS, log_path=log)
    node.datadir = datadir
    node.ws_url = f"ws://127.0.0.1:{ws}"
    node.name = "geth"
    return node


def start_gigagas(gigagas, datadir, log, extra, ws=True, chain=None):
    """`gigagas node --dev` with HTTP and (unless the binary refuses `--ws`) WebSocket; with
    `chain` (a genesis file), `gigagas node --chain CHAIN` without a network instead, its blocks
    made over the Engine API (the reorg scenario)."""
    shutil.rmtree(datadir, ignore_errors=True)
    port = free_port()
    ws_flags = ["--ws", "--ws.port", str(port), "--ws.api", GIGAGAS_APIS] if ws else []
    mode = ["--chain", chain, "--disable-network"] if chain else ["--dev"]
    try:
        node = GigagasNode(gigagas, datadir, mode + ["--http.api", GIGAGAS_APIS] + ws_flags + extra,
                           log_path=log)
    except SystemExit as e:
        if ws and "--ws" in str(e):
            print("compare: gigagas refused --ws; running it without WebSocket", file=sys.stderr)
            return start_gigagas(gigagas, datadir, log, extra, ws=False, chain=chain)
        raise
    node.ws_url = (node.info.get("ws") or f"ws://127.0.0.1:{port}") if ws else None
    node.name = "gigagas"
    return node


class Remote:
    """A node already running, given by its URLs."""

    def __init__(self, http, ws, name):
        self.url, self.ws_url, self.name = http, ws, name

    def stop(self):
        pass


def wait_blocks(node, count=5, timeout=60):
    """Waits for `count` blocks, so that feeHistory's window is whole on both nodes."""
    deadline = time.time() + timeout
    while int(json_rpc(node.url, "eth_blockNumber", []), 16) < count:
        if time.time() > deadline:
            raise SystemExit(f"compare: {node.name} built fewer than {count} blocks in {timeout} s")
        time.sleep(0.2)


def fund(node, addresses, timeout=60):
    """Setup, not compared: 1000 ether to each address holding less than 100, from the node's
    first unlocked account (geth --dev's dev account)."""
    needy = [a for a in addresses if int(json_rpc(node.url, "eth_getBalance", [a, "latest"]), 16) < 100 * ETHER]
    if not needy:
        return
    accounts = json_rpc(node.url, "eth_accounts", [])
    if not accounts:
        raise SystemExit(f"compare: {node.name} has no account to fund {needy} from")
    hashes = [json_rpc(node.url, "eth_sendTransaction", [{"from": accounts[0], "to": a,
                                                          "value": hex(1000 * ETHER)}])
              for a in needy]
    deadline = time.time() + timeout
    for h in hashes:
        while not json_rpc(node.url, "eth_getTransactionReceipt", [h]):
            if time.time() > deadline:
                raise SystemExit(f"compare: funding transaction {h} not mined on {node.name}")
            time.sleep(0.2)


# --- flows and comparison ---------------------------------------------------------------

def run_flow(name, lib, node, ws, timeout, out_dir, side, control=None, settle=2):
    """One flow against one node: its steps, or None (and the reason) when it printed no JSON.
    With `control` (the harness's endpoint), the reorg scenario's flow instead."""
    flows = REORG_FLOWS if control else FLOWS
    cmd = flows[name](lib) + ["--http", node.url, "--key", KEYS[name], "--timeout", str(timeout)]
    if ws and node.ws_url:
        cmd += ["--ws", node.ws_url]
    if control:
        cmd += ["--control", control, "--settle", str(settle)]
    try:
        p = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout * 40)
    except subprocess.TimeoutExpired:
        return None, "the flow timed out"
    base = f"{side}-reorg-{name}" if control else f"{side}-{name}"
    with open(os.path.join(out_dir, f"{base}.json"), "w") as f:
        f.write(p.stdout)
    with open(os.path.join(out_dir, f"{base}.stderr"), "w") as f:
        f.write(p.stderr)
    try:
        return json.loads(p.stdout), None
    except json.JSONDecodeError:
        # a library's stray line before the document
        start = p.stdout.find("\n[\n")
        if start >= 0:
            try:
                return json.loads(p.stdout[start:]), None
            except json.JSONDecodeError:
                pass
        return None, f"the flow printed no JSON (exit {p.returncode}): {p.stderr.strip()[-300:]}"


def dev_scenario(args, names, lib, geth, results):
    """The flows on node A (geth --dev, or --a-http) and node B (gigagas --dev, a second geth
    --dev with `--only geth`, or --b-http) at once, library after library; their rows added to
    results[name]. Returns the two nodes' names."""
    nodes = []
    genesis = os.path.join(ROOT, "testing/dev-genesis.json") if args.geth_genesis == "dev" else None
    try:
        if args.a_http:
            a = Remote(args.a_http, args.a_ws, "A")
        else:
            a = start_geth(geth, os.path.join(args.out, "a"), genesis, os.path.join(args.out, "a.log"))
        nodes.append(a)
        if args.b_http:
            b = Remote(args.b_http, args.b_ws, "B")
        elif args.only == "geth":
            b = start_geth(geth, os.path.join(args.out, "b"), genesis, os.path.join(args.out, "b.log"))
        else:
            b = start_gigagas(args.gigagas, os.path.join(args.out, "b"),
                              os.path.join(args.out, "b.log"), args.gigagas_flag)
        nodes.append(b)
        for node in (a, b):
            fund(node, [ADDRESSES[n] for n in names])
            wait_blocks(node)

        for n in names:
            with ThreadPoolExecutor(2) as pool:
                fa = pool.submit(run_flow, n, lib, a, not args.no_ws, args.timeout, args.out, "a")
                fb = pool.submit(run_flow, n, lib, b, not args.no_ws, args.timeout, args.out, "b")
                (sa, ea), (sb, eb) = fa.result(), fb.result()
            results[n] = {"rows": compare_steps(sa, sb)}
            errors = {k: v for k, v in (("A", ea), ("B", eb)) if v}
            if errors:
                results[n]["flow_error"] = errors
            if not args.json:
                print(f"compare: {n} done", file=sys.stderr)
    finally:
        for node in nodes:
            node.stop()
            if getattr(node, "datadir", None) and not args.keep_datadirs:
                shutil.rmtree(node.datadir, ignore_errors=True)
    return a.name, b.name


def reorg_scenario(args, names, lib, geth, results):
    """The reorg scenario: per library, fresh nodes A (geth) and B (gigagas, or geth with
    `--only geth`) without `--dev` on testing/dev-genesis.json, each driven over its Engine API
    by reorg.py's Driver and served to the flow by its ControlServer, the library's reorg flow
    run on both at once; its rows (`reorg: ...`) are added to results[name]."""
    genesis = os.path.join(ROOT, "testing/dev-genesis.json")
    for n in names:
        nodes, servers, b_error = [], [], None
        sa = sb = ea = eb = None
        try:
            a = start_geth(geth, os.path.join(args.out, "reorg-a"), genesis,
                           os.path.join(args.out, f"reorg-a-{n}.log"), dev=False)
            nodes.append(a)
            b_log = os.path.join(args.out, f"reorg-b-{n}.log")
            try:
                if args.only == "geth":
                    b = start_geth(geth, os.path.join(args.out, "reorg-b"), genesis, b_log, dev=False)
                else:
                    b = start_gigagas(args.gigagas, os.path.join(args.out, "reorg-b"), b_log,
                                      args.gigagas_flag, chain=genesis)
                nodes.append(b)
            except SystemExit as e:  # NodeError: B did not start; A's steps are still run
                b, b_error = None, f"node B did not start without --dev: {str(e)[-300:]}"
            for node in nodes:
                servers.append(ControlServer(Driver(node, args.reorg_slot)))
            with ThreadPoolExecutor(2) as pool:
                fa = pool.submit(run_flow, n, lib, a, True, args.timeout, args.out, "a",
                                 servers[0].url, args.reorg_settle)
                fb = b and pool.submit(run_flow, n, lib, b, True, args.timeout, args.out, "b",
                                       servers[1].url, args.reorg_settle)
                sa, ea = fa.result()
                sb, eb = fb.result() if fb else (None, b_error)
        finally:
            for server in servers:
                server.close()
            for node in nodes:
                node.stop()
                if not args.keep_datadirs:
                    shutil.rmtree(node.datadir, ignore_errors=True)
        entry = results.setdefault(n, {"rows": {}})
        entry["rows"].update(compare_steps(sa, sb))
        errors = {k: v for k, v in (("A (reorg)", ea), ("B (reorg)", eb)) if v}
        if errors:
            entry.setdefault("flow_error", {}).update(errors)
        if not args.json:
            print(f"compare: {n} reorg done", file=sys.stderr)


def diff_paths(a, b, path=""):
    """The field paths where two JSON values differ."""
    if isinstance(a, dict) and isinstance(b, dict):
        out = []
        for k in list(a) + [k for k in b if k not in a]:
            p = f"{path}.{k}" if path else k
            if k not in a:
                out.append(f"{p} (only B)")
            elif k not in b:
                out.append(f"{p} (only A)")
            else:
                out += diff_paths(a[k], b[k], p)
        return out
    if isinstance(a, list) and isinstance(b, list):
        if len(a) != len(b):
            return [f"{path or '.'}[len {len(a)}≠{len(b)}]"]
        out = []
        for i, (x, y) in enumerate(zip(a, b)):
            out += diff_paths(x, y, f"{path}[{i}]")
        return out
    return [] if a == b else [path or "."]


def compare_steps(a, b):
    """Per step: (verdict, detail, regression). A is the reference."""
    a_steps = {s["step"]: s for s in a or []}
    b_steps = {s["step"]: s for s in b or []}
    names = [s["step"] for s in a or []] + [s["step"] for s in b or [] if s["step"] not in a_steps]
    rows = {}
    for n in names:
        sa, sb = a_steps.get(n), b_steps.get(n)
        if sa is None:
            rows[n] = {"verdict": "missing on A", "regression": False}
        elif sb is None:
            rows[n] = {"verdict": "missing on B", "regression": sa["ok"]}
        elif sa["ok"] and sb["ok"]:
            paths = diff_paths(sa["answer"], sb["answer"])
            rows[n] = {"verdict": "same"} if not paths else {
                "verdict": "differs", "paths": paths, "a": sa["answer"], "b": sb["answer"]}
            rows[n]["regression"] = bool(paths)
        elif sa["ok"]:
            rows[n] = {"verdict": "fails on B", "error_b": sb["error"], "regression": True}
        elif sb["ok"]:
            rows[n] = {"verdict": "fails on A", "error_a": sa["error"], "regression": False}
        else:
            rows[n] = {"verdict": "fails on both", "error_a": sa["error"], "error_b": sb["error"],
                       "regression": False}
    return rows


def cell(row, width):
    if row is None:
        return ""
    text = row["verdict"]
    if text == "differs":
        text = "differs: " + ", ".join(row["paths"])
    return text if len(text) <= width else text[:width - 1] + "…"


def print_table(results, names, a_name, b_name):
    steps = []  # every flow's steps in order, a step one flow alone has after its predecessor
    for n in names:
        previous = None
        for s in results[n]["rows"]:
            if s not in steps:
                steps.insert(steps.index(previous) + 1 if previous else len(steps), s)
            previous = s
    width = 34
    print(f"A = {a_name} (reference), B = {b_name}")
    head = f"{'step':<26}" + "".join(f" {n:<{width}}" for n in names)
    print(head)
    print("-" * len(head))
    for s in steps:
        print(f"{s:<26}" + "".join(f" {cell(results[n]['rows'].get(s), width):<{width}}" for n in names))
    for n in names:
        if results[n].get("flow_error"):
            for side, err in results[n]["flow_error"].items():
                print(f"\n{n} on {side}: {err}")
    details = []
    for n in names:
        for s, row in results[n]["rows"].items():
            if row["verdict"] == "differs":
                details.append(f"  {n} {s}: " + "; ".join(
                    f"{p}: A {pick(row['a'], p)} B {pick(row['b'], p)}" for p in row["paths"][:8]))
            for side in ("a", "b"):
                if row.get(f"error_{side}") and (side == "b" or row["verdict"] == "fails on A"):
                    details.append(f"  {n} {s} on {side.upper()}: {row[f'error_{side}'][:200]}")
    if details:
        print("\nDetails:")
        print("\n".join(details))


def pick(value, path):
    """The value at a path of diff_paths (for the details), shortened."""
    try:
        for part in path.replace("]", "").replace("[", ".").split("."):
            if not part or part.startswith("len ") or part.endswith(")"):
                continue
            value = value[int(part)] if isinstance(value, list) else value[part]
    except (KeyError, IndexError, ValueError, TypeError):
        return "?"
    text = json.dumps(value)
    return text if len(text) <= 70 else text[:69] + "…"


def solo(args, names, lib):
    """The flows against gigagas alone: exit status 1 when a step fails (but those of
    NOT_SERVED_YET) or a flow prints nothing."""
    if not os.path.exists(args.gigagas):
        raise SystemExit(f"compare: no gigagas binary at {args.gigagas} (make build)")
    node = start_gigagas(args.gigagas, os.path.join(args.out, "solo"),
                         os.path.join(args.out, "solo.log"), args.gigagas_flag)
    failed = []
    try:
        fund(node, [ADDRESSES[n] for n in names])
        wait_blocks(node)
        for n in names:
            steps, error = run_flow(n, lib, node, not args.no_ws, args.timeout, args.out, "solo")
            if steps is None:
                failed.append(f"{n}: {error}")
                continue
            passed = [s["step"] for s in steps if s["ok"]]
            bad = [s for s in steps if not s["ok"] and s["step"] not in NOT_SERVED_YET]
            failed += [f"{n}.{s['step']}: {s['error']}" for s in bad]
            print(f"rpc-clients: {n} against gigagas: {len(passed)} of {len(steps)} steps pass"
                  f"{'' if not bad else f', {len(bad)} fail'}", file=sys.stderr)
    finally:
        node.stop()
        if getattr(node, "datadir", None) and not args.keep_datadirs:
            shutil.rmtree(node.datadir, ignore_errors=True)
    for f in failed:
        print(f"FAIL {f}"[:400], file=sys.stderr)
    return 1 if failed else 0


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--gigagas", default=os.path.join(ROOT, "target/release/gigagas"))
    ap.add_argument("--only", choices=["geth"], help="geth against geth: checks the harness")
    ap.add_argument("--solo", action="store_true",
                    help="gigagas alone, no geth: every step must pass (but those gigagas does "
                         "not serve yet); what `make test` runs with --flows web3py")
    ap.add_argument("--geth", help="geth binary (default: testing/geth_install.sh's 1.17.10)")
    ap.add_argument("--geth-genesis", choices=["dev", "builtin"], default="dev",
                    help="dev: testing/dev-genesis.json (as gigagas --dev); builtin: geth's own")
    ap.add_argument("--flows", default="web3py,ethers,viem")
    ap.add_argument("--no-ws", action="store_true", help="skip the WebSocket steps")
    ap.add_argument("--gigagas-flag", action="append", default=[],
                    help="one more flag for gigagas node (repeat; --gigagas-flag=--x for a dash)")
    ap.add_argument("--out", default=os.path.join(ROOT, "target/rpc-clients"),
                    help="datadirs, node logs and each flow's JSON")
    ap.add_argument("--keep-datadirs", action="store_true",
                    help="keep the nodes' datadirs in --out (removed after the run otherwise)")
    ap.add_argument("--timeout", type=float, default=60, help="seconds a step may wait")
    ap.add_argument("--no-reorg", action="store_true",
                    help="skip the reorg scenario (nodes without --dev, blocks made by the harness)")
    ap.add_argument("--reorg-only", action="store_true", help="the reorg scenario alone")
    ap.add_argument("--reorg-slot", type=float, default=2.5,
                    help="seconds between a forkchoice update with attributes and getPayload")
    ap.add_argument("--reorg-settle", type=float, default=2,
                    help="seconds the reorg flows collect notifications for after the reorg")
    ap.add_argument("--json", action="store_true")
    for side in ("a", "b"):
        ap.add_argument(f"--{side}-http", help=f"node {side.upper()} already running: its HTTP URL")
        ap.add_argument(f"--{side}-ws", help=f"node {side.upper()}'s WebSocket URL")
    args = ap.parse_args()
    names = [n.strip() for n in args.flows.split(",") if n.strip()]
    for n in names:
        if n not in FLOWS:
            raise SystemExit(f"compare: no flow {n!r} (web3py, ethers, viem)")
    lib = lib_dir(node_libraries=any(n != "web3py" for n in names))
    os.makedirs(args.out, exist_ok=True)
    if args.solo:
        sys.exit(solo(args, names, lib))

    # The reorg scenario needs the nodes' Engine API (not given with --a-http/--b-http) and
    # WebSocket.
    reorg = not args.no_reorg and not args.no_ws and not args.a_http and not args.b_http
    if args.reorg_only and not reorg:
        raise SystemExit("compare: --reorg-only runs nodes of its own, with WebSocket")
    if not reorg and not args.no_reorg and not args.json:
        print("compare: no reorg scenario (it starts nodes of its own, with WebSocket)",
              file=sys.stderr)
    if not args.only and (reorg or not args.b_http) and not os.path.exists(args.gigagas):
        raise SystemExit(f"compare: no gigagas binary at {args.gigagas} (make build)")
    geth = geth_binary(args.geth) if not args.a_http or (args.only and not args.b_http) else None
    results = {}
    a_name, b_name = "geth", args.only or "gigagas"
    if not args.reorg_only:
        a_name, b_name = dev_scenario(args, names, lib, geth, results)
    if reorg:
        reorg_scenario(args, names, lib, geth, results)

    regressions = [f"{n}.{s}" for n in names for s, row in results[n]["rows"].items()
                   if row["regression"]]
    regressions += [f"{n} (flow on {side})" for n in names
                    for side in results[n].get("flow_error", {}) if side.startswith("B")]
    if args.json:
        json.dump({"a": a_name, "b": b_name, "flows": results, "regressions": regressions},
                  sys.stdout, indent=1)
        print()
    else:
        print_table(results, names, a_name, b_name)
        print(f"\n{len(regressions)} step(s) that A passes fail or differ on B"
              + (": " + ", ".join(regressions) if regressions else ""))
    sys.exit(1 if regressions else 0)


if __name__ == "__main__":
    main()
