#!/usr/bin/env python3
"""Snap sync between gigagas and geth 1.17.10 on loopback, measured.

A chain (`--chain-dir`: a folder with genesis.json, chain.rlp and the head block's Engine API
calls, newpayload.json and headfcu.json, as geth's devp2p suite testdata has them; by default
that testdata, read from the Go module cache) is imported into a serving node; a fresh geth
then snap-syncs from it alone (its one static peer), driven the way a consensus client drives
it: the head's `engine_newPayload`, then `engine_forkchoiceUpdated` to the head until it is
there. geth picks its pivot (64 blocks below the head), downloads the pivot's state over snap
(snap/2 when both speak it: the state then catches up on the blocks' BALs), and follows to the
head.

  (a)   a fresh gigagas snap-syncs from geth (`--syncmode snap`, the target given by
        `--debug.tip`): the pivot 64 below the head, its state over snap, every range proven,
        the tries built and the root checked, then the blocks to the head executed;
  (b)   a fresh geth snap-syncs from gigagas (gigagas serves snap/1 and snap/2);
  (ref) a fresh geth snap-syncs from geth, the same way.

After each sync the head's state root and `eth_getProof` of a sample of accounts (and a slot of
each that has storage) are compared with the server's. Reported per sync: seconds from the
syncing geth's start to its head with `eth_syncing` false, the state it downloaded (geth's own
"state download" line: accounts, slots, codes, bytes), the snap version its syncer chose, and
the peak RSS of the syncing process (VmHWM). `--json` prints the results; logs go to `--out`.

A chain made by `gigagas-bench gen-chain --state-by-chain` creates its state in its blocks
(millions of accounts and slots); both servers import it once, and the imported datadirs are
kept in the output folder for the next run. Its `sample.json` adds accounts and slots the blocks
created to the proofs compared.

`--kill-after S` kills the syncing gigagas (kill -9) S seconds into its state download and
starts it again on the same datadir: the sync must resume and end on the same state.

Usage: testing/.venv/bin/python testing/interop_snap.py [--chain-dir DIR]
           [--gigagas target/release/gigagas] [--geth PATH] [--out target/interop-snap]
           [--timeout 600] [--only SYNC]... [--gigagas-flag FLAG]... [--kill-after S] [--json]
"""

import argparse
import datetime
import functools
import hashlib
import json
import os
import random
import re
import shutil
import subprocess
import sys
import tempfile
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from gigagas_testing import GethNode, GigagasNode, geth_binary, json_rpc  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
GETH_MODULE = "github.com/ethereum/go-ethereum@v1.17.10"


def default_chain_dir():
    """geth's devp2p suite chain in the Go module cache (downloaded on first use)."""
    out = subprocess.run(["go", "mod", "download", "-json", GETH_MODULE], check=True,
                         capture_output=True, text=True, cwd=tempfile.gettempdir()).stdout
    return os.path.join(json.loads(out)["Dir"], "cmd/devp2p/internal/ethtest/testdata")


def peak_rss_watcher(pid, stop):
    """Polls /proc/PID/status; returns a dict filled with the peak VmHWM in MiB."""
    result = {"peak_rss_mib": 0.0}

    def run():
        while not stop.is_set():
            try:
                with open(f"/proc/{pid}/status") as f:
                    for line in f:
                        if line.startswith("VmHWM:"):
                            result["peak_rss_mib"] = max(result["peak_rss_mib"],
                                                         int(line.split()[1]) / 1024)
            except OSError:
                pass
            time.sleep(0.2)

    threading.Thread(target=run, daemon=True).start()
    return result


def genesis_chain_id(chain):
    """The chain id in the genesis file's `config`, found by reading the file in blocks: an
    allocation of gigabytes is never parsed (`gen-chain` writes `config` first; a file with
    sorted keys has it after the allocation)."""
    pattern = re.compile(r'"chainId"\s*:\s*(\d+)')
    tail = ""
    with open(os.path.join(chain, "genesis.json")) as f:
        while True:
            block = f.read(1 << 24)
            if not block:
                raise ValueError(f"{chain}/genesis.json names no chainId")
            m = pattern.search(tail + block)
            if m:
                return int(m.group(1))
            tail = block[-64:]


def geth_init(geth, datadir, chain):
    """`geth init` of the chain's genesis into `datadir`. geth builds a large allocation's
    tries in memory (minutes for a million slots), so the initialised datadir is kept in the
    output folder (`geth-init/<genesis path hash>`, made again when the genesis file changes)
    and copied without its node key (each node makes its own; two with one key refuse each
    other): the bytes `geth init` writes, before any sync's clock starts."""
    genesis = os.path.join(chain, "genesis.json")
    stat = os.stat(genesis)
    stamp = f"{stat.st_size}-{int(stat.st_mtime)}-{os.path.basename(geth)}"
    # Beside the run's work folders (the chain's own folder may be read-only: geth's module).
    key = hashlib.sha1(os.path.abspath(genesis).encode()).hexdigest()[:12]
    template = os.path.join(os.path.dirname(os.path.dirname(datadir)), "geth-init", key)
    stamp_path = os.path.join(template, "stamp")
    if not (os.path.exists(stamp_path) and open(stamp_path).read() == stamp):
        shutil.rmtree(template, ignore_errors=True)
        GethNode.init(geth, template, genesis)
        with open(stamp_path, "w") as f:
            f.write(stamp)
    shutil.rmtree(datadir, ignore_errors=True)
    shutil.copytree(template, datadir, ignore=shutil.ignore_patterns("stamp", "LOCK", "nodekey"))


def imported(client, datadir, chain, make):
    """`datadir` holding the chain imported by `make(template)`: a chain of many gigagas of
    state takes minutes to import, so the imported datadir is kept in the output folder
    (`<client>-import/<chain path hash>`, made again when chain.rlp or genesis.json
    change) and copied without its node key and lock, before any sync's clock
    starts."""
    # Not the binary: rebuilding it would import again each time (a store it cannot open
    # fails loudly; remove the folder then).
    files = [os.path.join(chain, "genesis.json"), os.path.join(chain, "chain.rlp")]
    stamp = "-".join(f"{os.stat(f).st_size}:{int(os.stat(f).st_mtime)}" for f in files)
    key = hashlib.sha1(os.path.abspath(chain).encode()).hexdigest()[:12]
    template = os.path.join(os.path.dirname(work_root(datadir)), f"{client}-import", key)
    stamp_path = os.path.join(template, "stamp")
    if not (os.path.exists(stamp_path) and open(stamp_path).read() == stamp):
        shutil.rmtree(template, ignore_errors=True)
        started = time.time()
        make(template)
        with open(stamp_path, "w") as f:
            f.write(stamp)
        print(f"{client}: chain imported in {time.time() - started:.0f} s", file=sys.stderr)
    shutil.rmtree(datadir, ignore_errors=True)
    shutil.copytree(template, datadir, ignore=shutil.ignore_patterns("stamp", "LOCK", "nodekey"),
                    copy_function=link_sst)


def link_sst(src, dst):
    """A table file (`.sst`: RocksDB's and Pebble's, never changed once written) is hard-linked,
    anything else copied: a checkpoint, as RocksDB makes them, without copying gigabytes."""
    if src.endswith(".sst"):
        os.link(src, dst)
    else:
        shutil.copy2(src, dst)


def make_gigagas(gigagas, chain, datadir):
    """`gigagas init` and `gigagas import` of the chain into `datadir`."""
    subprocess.run([gigagas, "init", "--genesis", os.path.join(chain, "genesis.json"),
                    "--datadir", datadir], check=True, capture_output=True)
    subprocess.run([gigagas, "import", os.path.join(chain, "chain.rlp"), "--datadir", datadir],
                   check=True, capture_output=True)


def make_geth(geth, chain, datadir):
    """`geth init` and `geth import` of the chain into `datadir`."""
    geth_init(geth, datadir, chain)
    subprocess.run([geth, "import", "--datadir", datadir, os.path.join(chain, "chain.rlp")],
                   check=True, capture_output=True)


def work_root(datadir):
    """The run's work folder of a datadir in it."""
    return os.path.dirname(datadir)


def serving_gigagas(gigagas, chain, work):
    datadir = os.path.join(work, "gigagas-server")
    imported("gigagas", datadir, chain, lambda t: make_gigagas(gigagas, chain, t))
    return GigagasNode(gigagas, datadir, ["--chain", os.path.join(chain, "genesis.json"),
                                          "--libp2p.disable", "--disable-discovery",
                                          "--addr", "127.0.0.1"],
                       log_path=os.path.join(work, "gigagas-server.log"))


def serving_geth(geth, chain, work):
    datadir = os.path.join(work, "geth-server")
    imported("geth", datadir, chain, lambda t: make_geth(geth, chain, t))
    return GethNode(geth, datadir, ["--nat", "none"], http_api="eth,net,web3,admin",
                    log_path=os.path.join(work, "geth-server.log"), p2p=True)


def engine_head(chain, prefix=""):
    """The head's newPayload call and the forkchoice update to it (`prefix`: the files of
    another block, e.g. `state-` for the last block of a `--state-by-chain` chain's state
    part)."""
    with open(os.path.join(chain, f"{prefix}newpayload.json")) as f:
        calls = json.load(f)
    new_payload = calls[-1] if isinstance(calls, list) else calls
    with open(os.path.join(chain, f"{prefix}headfcu.json")) as f:
        fcu = json.load(f)
    return new_payload, fcu


def wait_synced(node, server, chain, head, start, timeout, result, drive=lambda: None):
    """Waits (calling `drive` each round) until `node`'s head is `head` with `eth_syncing`
    false; fills `result` with the seconds since `start`, and with the state root and proofs
    compared to `server`'s when it got there."""
    block = None
    while time.time() < start + timeout:
        drive()
        block = json_rpc(node.url, "eth_getBlockByNumber", ["latest", False])
        if block and block["hash"] == head["hash"] and json_rpc(node.url, "eth_syncing",
                                                                []) is False:
            result["synced"] = True
            break
        time.sleep(0.2)
    result["seconds"] = round(time.time() - start, 2)
    result["head"] = int(head["number"], 16)
    if result["synced"]:
        result["state_root_equal"] = block["stateRoot"] == head["stateRoot"]
        result["proofs_equal"], result["proofs_checked"] = compare_proofs(server, node, chain)


def snap_sync(geth, chain, work, name, server, timeout, calls="", keep=False):
    """A fresh geth snap-syncs from `server` alone (to the head named by the chain's
    `{calls}newpayload.json`, which must be the server's head); its figures and the sync's
    checks. Its datadir (`work/name`) is removed after, unless `keep`."""
    datadir = os.path.join(work, name)
    geth_init(geth, datadir, chain)
    config = os.path.join(work, f"{name}.toml")
    with open(config, "w") as f:
        f.write(f'[Node.P2P]\nStaticNodes = ["{server.enode}"]\nTrustedNodes = ["{server.enode}"]\n')
    chain_id = genesis_chain_id(chain)
    new_payload, fcu = engine_head(chain, calls)
    head = json_rpc(server.url, "eth_getBlockByNumber", ["latest", False])
    log_path = os.path.join(work, f"{name}.log")
    start = time.time()
    node = GethNode(geth, datadir, ["--config", config, "--networkid", str(chain_id),
                                    "--verbosity", "3"],
                    http_api="eth,net,admin", log_path=log_path, p2p=True, syncmode="snap")
    stop = threading.Event()
    rss = peak_rss_watcher(node.proc.pid, stop)
    result = {"sync": name, "synced": False}
    try:
        node.engine(new_payload["method"], *new_payload["params"])
        last_fcu = [0.0]

        def drive():
            if time.time() - last_fcu[0] > 2:
                node.engine(fcu["method"], *fcu["params"])
                last_fcu[0] = time.time()

        wait_synced(node, server, chain, head, start, timeout, result, drive)
    finally:
        stop.set()
        node.stop()
    result["peak_rss_mib"] = round(rss["peak_rss_mib"], 1)
    with open(log_path) as f:
        text = f.read()
    state = re.findall(r"Syncing: state download in progress\s+synced=([\d.]+)%\s+state=(\S+)\s+"
                       r"accounts=(\S+)\s+slots=(\S+)\s+codes=(\S+)", text)
    if state:
        synced, size, accounts, slots, codes = state[-1]
        result["state"] = {"synced_pct": float(synced), "bytes": size, "accounts": accounts,
                           "slots": slots, "codes": codes}
    version = re.search(r"Selected snap sync state syncer\s+version=(\d+)", text)
    result["snap_version"] = int(version.group(1)) if version else None
    result["snap_sync"] = "Enabled snap-sync" in text
    if not keep:
        shutil.rmtree(datadir, ignore_errors=True)
    return result


def gigagas_snap_sync(gigagas, chain, work, server, timeout, extra=(), kill_after=None,
                      name="gigagas-from-geth"):
    """A fresh gigagas snap-syncs from `server` (geth, or gigagas for `gigagas-from-gigagas`)
    alone, to the server's head given as `--debug.tip`; its figures and the sync's checks."""
    datadir = os.path.join(work, name)
    shutil.rmtree(datadir, ignore_errors=True)
    # The genesis initialised before the clock starts, as for geth.
    subprocess.run([gigagas, "init", "--genesis", os.path.join(chain, "genesis.json"),
                    "--datadir", datadir], check=True, capture_output=True)
    head = json_rpc(server.url, "eth_getBlockByNumber", ["latest", False])
    log_path = os.path.join(work, f"{name}.log")
    flags = ["--libp2p.disable", "--disable-discovery", "--addr", "127.0.0.1", "--syncmode",
             "snap", "--trusted-peers", server.enode, "--debug.tip", head["hash"]] + list(extra)
    env = dict(os.environ, RUST_LOG=os.environ.get(
        "RUST_LOG", "warn,sync=info,net::devp2p=info,engine=info"))
    start = time.time()
    node = GigagasNode(gigagas, datadir, flags, log_path=log_path, env=env)
    killed = None
    if kill_after is not None:
        # kill -9 once the state download has run `kill_after` seconds, then start again on
        # the same datadir: the sync must resume from what it wrote.
        while time.time() < start + timeout:
            with open(log_path) as f:
                if "snap sync started" in f.read():
                    break
            time.sleep(0.05)
        time.sleep(kill_after)
        with open(log_path) as f:
            progress = [line for line in f if "sync::snap" in line]
        node.proc.kill()
        node.proc.wait()
        killed = {"after_s": kill_after, "log_before": progress[-1].strip() if progress else ""}
        log_path = os.path.join(work, f"{name}.resumed.log")
        node = GigagasNode(gigagas, datadir, flags, log_path=log_path, env=env)
    stop = threading.Event()
    rss = peak_rss_watcher(node.proc.pid, stop)
    result = {"sync": name, "synced": False}
    if killed:
        result["killed"] = killed
    try:
        wait_synced(node, server, chain, head, start, timeout, result)
        # The table files the state's bulk load left are merged beside the running node:
        # how long that takes after the sync, when it ends within a minute.
        merged_by = time.time() + 60
        while result["synced"] and time.time() < merged_by:
            with open(log_path) as f:
                merged = [line for line in f if "state's table files merged" in line]
            if merged:
                secs = re.search(r"\bsecs=([\d.]+)", re.sub(r"\x1b\[[0-9;]*m", "", merged[-1]))
                if secs:
                    result["merge_seconds_after_sync"] = round(float(secs.group(1)), 2)
                break
            time.sleep(0.2)
    finally:
        stop.set()
        node.stop()
    result["peak_rss_mib"] = round(rss["peak_rss_mib"], 1)
    with open(log_path) as f:
        text = f.read()
    text = re.sub(r"\x1b\[[0-9;]*m", "", text)
    lines = text.splitlines()
    state = next((line for line in lines if "snap sync state done" in line), None)
    done = next((line for line in lines if "snap sync done" in line), None)
    if state:
        field = lambda name: re.search(rf"\b{name}=([\d.]+)", state).group(1)  # noqa: E731
        result["state"] = {"pivot": int(field("pivot")), "accounts": field("accounts"),
                           "slots": field("slots"), "codes": field("codes"),
                           "bytes": f"{int(field('bytes')) / 1024:.2f}KiB",
                           "snap_seconds": float(field("secs"))}
        # From the pivot's state to the head: BALs applied, or blocks executed.
        if result["synced"]:
            stamp = re.match(r"(\d{4}-\d\d-\d\dT[\d:.]+)Z", state)
            if stamp:
                at = datetime.datetime.fromisoformat(stamp.group(1)).replace(
                    tzinfo=datetime.timezone.utc).timestamp()
                result["catch_up_seconds"] = round(start + result["seconds"] - at, 2)
        caught = [line for line in lines if "caught up on BALs" in line]
        result["catch_up"] = "bal" if caught else "execute"
        if caught:
            result["bal_blocks"] = int(re.search(r"\bblocks=(\d+)", caught[-1]).group(1))
    result["snap_sync"] = done is not None
    # The snap version negotiated with the server (0: none).
    session = next((line for line in lines if "session established" in line), "")
    version = re.search(r"\bsnap=(\d)", session)
    result["snap_version"] = int(version.group(1)) if version else None
    if killed:
        result["resumed"] = "resuming snap sync" in text
    shutil.rmtree(datadir, ignore_errors=True)
    return result


@functools.lru_cache(maxsize=None)
def proof_sample(chain, first=12, spread=12):
    """Accounts and slots of the chain's genesis alloc to compare proofs at: the first `first`
    accounts (slot 0 of each) and `spread` (account, slot) pairs drawn evenly at random from
    every stored slot, read line by line (an allocation of millions of entries is not loaded
    whole). Relies on the layout `gen-chain` and geth's `dumpgenesis` write: one alloc key per
    line at four spaces, a large storage map's slots one per line below it."""
    address_line = re.compile(r'^ {4}"(0x[0-9a-fA-F]{40}|[0-9a-fA-F]{40})"\s*:')
    slot_line = re.compile(r'^ {6,}"(0x[0-9a-fA-F]{1,64})"\s*:\s*"')
    rng = random.Random(7)
    heads, drawn, seen, current = [], [], 0, None
    with open(os.path.join(chain, "genesis.json")) as f:
        for line in f:
            m = address_line.match(line)
            if m:
                current = m.group(1) if m.group(1).startswith("0x") else "0x" + m.group(1)
                if len(heads) < first:
                    heads.append((current, "0x0"))
                continue
            m = slot_line.match(line)
            if m and current:
                seen += 1
                if len(drawn) < spread:
                    drawn.append((current, m.group(1)))
                elif rng.randrange(seen) < spread:
                    drawn[rng.randrange(spread)] = (current, m.group(1))
    # A chain that creates its state (`gen-chain --state-by-chain`) names some of what its
    # blocks created.
    created = []
    sample_path = os.path.join(chain, "sample.json")
    if os.path.exists(sample_path):
        with open(sample_path) as f:
            created = [(e["address"], e["slot"]) for e in json.load(f)]
    return heads + drawn + created


def compare_proofs(server, node, chain):
    """`eth_getProof` at the head on both, at [`proof_sample`]'s accounts and slots:
    (all equal, how many compared)."""
    sample = proof_sample(chain)
    equal = True
    for address, slot in sample:
        args = [address, [slot], "latest"]
        a, b = json_rpc(server.url, "eth_getProof", args), json_rpc(node.url, "eth_getProof", args)
        equal &= (a["accountProof"], a["storageHash"], a["storageProof"]) == (
            b["accountProof"], b["storageHash"], b["storageProof"])
    return equal, len(sample)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--chain-dir", help="genesis.json, chain.rlp, newpayload.json, headfcu.json")
    ap.add_argument("--gigagas", default=os.path.join(ROOT, "target/release/gigagas"))
    ap.add_argument("--geth", help="geth binary (default: testing/geth_install.sh)")
    ap.add_argument("--out", default=os.path.join(ROOT, "target/interop-snap"))
    ap.add_argument("--timeout", type=int, default=600, help="seconds per sync")
    ap.add_argument("--only", choices=["geth-from-gigagas", "gigagas-from-geth", "geth-from-geth",
                                       "gigagas-from-gigagas"],
                    action="append",
                    help="run only these syncs (repeatable; gigagas-from-gigagas runs only when "
                         "named, for states geth cannot initialise)")
    ap.add_argument("--gigagas-flag", action="append", default=[],
                    help="an extra flag of the syncing gigagas node (repeatable)")
    ap.add_argument("--kill-after", type=float,
                    help="kill -9 the syncing gigagas this many seconds into its state download, "
                         "then start it again on the same datadir")
    ap.add_argument("--prepare", action="store_true",
                    help="only import the chain into both servers' kept datadirs, then exit")
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()
    wanted = lambda name: (not args.only and name != "gigagas-from-gigagas"  # noqa: E731
                           or name in (args.only or []))

    geth = geth_binary(args.geth)
    chain = args.chain_dir or default_chain_dir()
    os.makedirs(args.out, exist_ok=True)
    work = tempfile.mkdtemp(prefix="interop-snap-", dir=args.out)
    results = []
    flags = [f for flag in args.gigagas_flag for f in flag.split(" ", 1)]
    if args.prepare:
        imported("gigagas", os.path.join(work, "gigagas-server"), chain,
                 lambda t: make_gigagas(args.gigagas, chain, t))
        imported("geth", os.path.join(work, "geth-server"), chain,
                 lambda t: make_geth(geth, chain, t))
        shutil.rmtree(work, ignore_errors=True)
        return
    if wanted("geth-from-gigagas") or "gigagas-from-gigagas" in (args.only or []):
        server = serving_gigagas(args.gigagas, chain, work)
        try:
            if wanted("geth-from-gigagas"):
                results.append(snap_sync(geth, chain, work, "geth-from-gigagas", server,
                                         args.timeout))
            if "gigagas-from-gigagas" in (args.only or []):
                results.append(gigagas_snap_sync(args.gigagas, chain, work, server,
                                                 args.timeout, flags, args.kill_after,
                                                 name="gigagas-from-gigagas"))
        finally:
            server.stop()
            # A copy of the kept import: only its log stays.
            shutil.rmtree(os.path.join(work, "gigagas-server"), ignore_errors=True)
    if wanted("gigagas-from-geth") or wanted("geth-from-geth"):
        server = serving_geth(geth, chain, work)
        try:
            if wanted("gigagas-from-geth"):
                results.append(gigagas_snap_sync(args.gigagas, chain, work, server,
                                                 args.timeout, flags, args.kill_after))
            if wanted("geth-from-geth"):
                results.append(snap_sync(geth, chain, work, "geth-from-geth", server,
                                         args.timeout))
        finally:
            server.stop()
            shutil.rmtree(os.path.join(work, "geth-server"), ignore_errors=True)
    failed = [r for r in results if not (r["synced"] and r.get("state_root_equal")
                                         and r.get("proofs_equal") and r.get("snap_sync")
                                         and r.get("resumed", True))]
    summary = {"chain": chain, "results": results, "logs": work}
    with open(os.path.join(args.out, "summary.json"), "w") as f:
        json.dump(summary, f, indent=1)
    if args.json:
        print(json.dumps(summary, indent=1))
    else:
        print(f"{'sync':20} {'ok':>4} {'s':>7} {'snap':>4} {'accounts':>12} {'slots':>14} "
              f"{'bytes':>10} {'RSS MiB':>8}")
        for r in results:
            st = r.get("state", {})
            ok = r in failed and "FAIL" or "ok"
            print(f"{r['sync']:20} {ok:>4} {r.get('seconds', 0):7.1f} "
                  f"{str(r.get('snap_version')):>4} {st.get('accounts', '-'):>12} "
                  f"{st.get('slots', '-'):>14} {st.get('bytes', '-'):>10} "
                  f"{r['peak_rss_mib']:8.1f}")
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
