#!/usr/bin/env python3
"""gigagas paired with a real consensus client: Prysm v7.0.0 (beacon node and validator client)
drives a gigagas node over the authenticated Engine API until the beacon chain finalizes.

What it does:
1. installs Prysm v7.0.0 (testing/prysm_install.sh: the Go module proxy, built into
   ~/.cache/gigagas, never into the repository) unless --prysm-bin names its binaries;
2. writes the consensus config (mainnet preset, every fork from Altair to Fulu at epoch 0,
   --slot-seconds, 64 interop validators) and the genesis of both layers with
   `prysmctl testnet generate-genesis --fork fulu`: the execution genesis is
   testing/dev-genesis.json with Osaka at genesis (Fulu's execution fork) and without
   `amsterdamTime` (Prysm v7.0.0 pairs Fulu with Osaka); prysmctl sets Shanghai, Cancun and Prague to the genesis time and
   writes it back with the same genesis time and chain id (1337), so both layers start from
   the same execution block;
3. starts gigagas (`gigagas node --chain GENESIS --authrpc.jwtsecret JWT`, no `--dev`: the
   beacon node is its only consensus client), `beacon-chain` and `validator` with every log in
   one folder (target/devnet-prysm/run-*/);
4. sends transactions of every type the fork allows — legacy (EIP-155), EIP-2930, EIP-1559,
   EIP-7702 set-code, and blob transactions (EIP-4844) with real KZG commitments and, Osaka
   being active, the cell proofs of EIP-7594 (python `ckzg`, the mainnet trusted setup
   eth-account ships; wrapper version 1) — every slot, so that blocks are not empty;
5. waits until the beacon chain's finalized checkpoint is at least --finalized-epochs past
   genesis and gigagas holds that checkpoint's execution block as its finalized block (it only
   learns it from `finalizedBlockHash` in `engine_forkchoiceUpdated`), then checks: gigagas's
   head is the beacon node's execution payload head; every block of the chain was built by
   gigagas (`engine_getPayload`: its extraData is "gigagas"); transactions of each type were
   included and succeeded, blobs among them; Prysm logged no warning about Engine API methods
   gigagas lacks; reports the Engine API calls per method from gigagas's metrics;
6. with --late-joiner: once the chain has finalized past genesis, starts a fresh gigagas peered with
   the first over the libp2p layer (`--libp2p.bootnodes`) and a second beacon node peered with the
   first (`--peer`) and checkpoint-synced from its finalized state; the second beacon node sends
   payloads whose parents the fresh gigagas lacks, which answers SYNCING, fetches the chain from
   its peer and then answers VALID. Both gigagas nodes must reach the same head and finalized
   block, and the joiner must have answered SYNCING and synced blocks from its peer;
7. with --restarts: kill -9 and SIGTERM gigagas and restart the beacon node mid-run.

Exit status 0 only when every check holds.

Usage: python3 testing/devnet_prysm.py [--gigagas target/release/gigagas] [--prysm-bin DIR]
           [--slot-seconds 3] [--validators 64] [--finalized-epochs 2] [--late-joiner]
           [--restarts] [--timeout 1200] [--verbose] [--json]

--verbose: gigagas nodes log at info (sync rounds), the beacon nodes at debug.
"""

import argparse
import concurrent.futures
import json
import os
import re
import secrets
import signal
import subprocess
import sys
import threading
import time
import urllib.request

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from devnet import CHAIN_ID, FUNDED_KEYS, GWEI, INIT  # noqa: E402
from gigagas_testing import GigagasNode, free_port, json_rpc  # noqa: E402

try:
    import ckzg
    import eth_account
    import rlp
    from eth_account import Account
    from eth_utils import keccak, to_checksum_address
except ImportError:
    raise SystemExit("devnet_prysm: eth-account is needed (make devnet-deps)")

TRUSTED_SETUP = os.path.join(os.path.dirname(eth_account.__file__),
                             "typed_transactions/blob_transactions/kzg_trusted_setup.txt")

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
FEE_RECIPIENT = "0x00000000000000000000000000000000000000fe"
EXTRA_DATA = "0x" + b"gigagas".hex()


def chain_config(slot_seconds, validators):
    """The consensus layer's config: mainnet preset, all forks at epoch 0."""
    forks = ["ALTAIR", "BELLATRIX", "CAPELLA", "DENEB", "ELECTRA", "FULU"]
    lines = [
        "CONFIG_NAME: gigagas-devnet",
        "PRESET_BASE: mainnet",
        f"MIN_GENESIS_ACTIVE_VALIDATOR_COUNT: {validators}",
        "MIN_GENESIS_TIME: 0",
        "GENESIS_DELAY: 0",
        "GENESIS_FORK_VERSION: 0x10000539",
        f"SECONDS_PER_SLOT: {slot_seconds}",
        f"SECONDS_PER_ETH1_BLOCK: {slot_seconds}",
        "ETH1_FOLLOW_DISTANCE: 1",
        "TERMINAL_TOTAL_DIFFICULTY: 0",
        f"DEPOSIT_CHAIN_ID: {CHAIN_ID}",
        f"DEPOSIT_NETWORK_ID: {CHAIN_ID}",
        "DEPOSIT_CONTRACT_ADDRESS: 0x00000000219ab540356cBB839Cbe05303d7705Fa",
    ]
    for i, fork in enumerate(forks, start=1):
        lines.append(f"{fork}_FORK_VERSION: 0x{0x10 + i:02x}000539")
        lines.append(f"{fork}_FORK_EPOCH: 0")
    return "\n".join(lines) + "\n"


def prysm_binaries(given=None):
    """The folder of beacon-chain, validator and prysmctl: `given`, else Prysm v7.0.0 as
    testing/prysm_install.sh builds it (into ~/.cache)."""
    return given or subprocess.run(
        ["bash", os.path.join(ROOT, "testing/prysm_install.sh")], check=True,
        capture_output=True, text=True).stdout.strip().splitlines()[-1]


def report(name, summary, failures, as_json):
    """Prints `summary` (with `failures` and `ok`) as JSON or a table, NAME: OK or FAILED on
    stderr; the exit status (0 only without failures)."""
    summary["failures"] = failures
    summary["ok"] = not failures
    if as_json:
        print(json.dumps(summary, indent=1))
    else:
        for k, v in summary.items():
            print(f"  {k:32} {v}")
    print(f"{name}: OK" if not failures else f"{name}: FAILED", file=sys.stderr)
    return 0 if not failures else 1


def write_genesis(prysm, work, slot_seconds, validators, alloc=None):
    """The consensus config (WORK/config.yaml) and the genesis of both layers, 30 s from now:
    testing/dev-genesis.json with Osaka (Fulu's execution fork) and without Amsterdam, `alloc`
    ({address: balance in wei}) added, through `prysmctl testnet generate-genesis --fork fulu`.
    Returns (config path, execution genesis path, genesis state path, genesis time)."""
    config = os.path.join(work, "config.yaml")
    with open(config, "w") as f:
        f.write(chain_config(slot_seconds, validators))
    with open(os.path.join(ROOT, "testing/dev-genesis.json")) as f:
        genesis = json.load(f)
    genesis["config"].pop("amsterdamTime", None)
    genesis["config"]["osakaTime"] = 0
    for address, balance in (alloc or {}).items():
        genesis["alloc"][address.lower()] = {"balance": hex(balance)}
    el_in, el_out = os.path.join(work, "el-genesis.in.json"), os.path.join(work, "el-genesis.json")
    with open(el_in, "w") as f:
        json.dump(genesis, f)
    genesis_time = int(time.time()) + 30
    state = os.path.join(work, "genesis.ssz")
    subprocess.run([os.path.join(prysm, "prysmctl"), "testnet", "generate-genesis", "--fork", "fulu",
                    "--num-validators", str(validators), "--genesis-time", str(genesis_time),
                    "--chain-config-file", config, "--geth-genesis-json-in", el_in,
                    "--geth-genesis-json-out", el_out, "--output-ssz", state],
                   check=True, capture_output=True)
    # prysmctl moves Shanghai, Cancun and Prague to the genesis time and leaves osakaTime at 0:
    # Osaka before Prague, which geth (and gigagas) refuse. Osaka at Prague's time instead
    # (the same block: the genesis block's timestamp is the genesis time).
    with open(el_out) as f:
        el_genesis_json = json.load(f)
    el_genesis_json["config"]["osakaTime"] = el_genesis_json["config"].get("pragueTime", 0)
    with open(el_out, "w") as f:
        json.dump(el_genesis_json, f)
    return config, el_out, state, genesis_time


def beacon_command(prysm, work, datadir, config, state, engine_url, jwt, ports, *, clear,
                   discovery, supernode, extra=()):
    """A Prysm `beacon-chain` command line on loopback: WORK/DATADIR, driving the Engine API at
    `engine_url` with the JWT secret file `jwt`; `ports` = (gRPC, HTTP API, p2p TCP); no
    bootstrap node unless `extra` names one; with `supernode`, every data column custodied."""
    rpc, http, tcp = ports
    return [
        os.path.join(prysm, "beacon-chain"), "--datadir", os.path.join(work, datadir),
        "--accept-terms-of-use", *(["--force-clear-db"] if clear else []),
        "--chain-config-file", config,
        "--genesis-state", state, "--chain-id", str(CHAIN_ID), "--interop-eth1data-votes",
        *([] if discovery else ["--no-discovery"]),
        *(["--bootstrap-node", ""] if "--bootstrap-node" not in extra else []),
        *extra, *(["--subscribe-all-data-subnets"] if supernode else []),
        "--execution-endpoint", engine_url, "--jwt-secret", jwt,
        "--rpc-host", "127.0.0.1", "--rpc-port", str(rpc),
        "--http-host", "127.0.0.1", "--http-port", str(http),
        # Peers over TCP only: Prysm v7.0.0's quic-go, built with Go 1.26, panics
        # ("crypto/tls bug: where's my session ticket?") when a peer's QUIC handshake
        # completes, which took the first beacon node down when a second one dialled it.
        "--disable-quic",
        "--p2p-local-ip", "127.0.0.1", "--p2p-host-ip", "127.0.0.1",
        "--p2p-tcp-port", str(tcp), "--p2p-udp-port", str(free_port()),
        "--p2p-quic-port", str(free_port()), "--monitoring-port", str(free_port()),
        "--suggested-fee-recipient", FEE_RECIPIENT, "--minimum-peers-per-subnet", "0"]


def validator_command(prysm, work, datadir, config, count, start, rpc_port):
    """A Prysm `validator` command line for the interop keys START..START+COUNT, attached to
    the beacon node's gRPC port."""
    return [
        os.path.join(prysm, "validator"), "--datadir", os.path.join(work, datadir),
        "--accept-terms-of-use", "--force-clear-db", "--chain-config-file", config,
        "--interop-num-validators", str(count), "--interop-start-index", str(start),
        "--beacon-rpc-provider", f"127.0.0.1:{rpc_port}", "--disable-monitoring",
        "--suggested-fee-recipient", FEE_RECIPIENT]


def peer_of(beacon, tcp_port):
    """The beacon node's libp2p multiaddr on loopback and its ENR (None before discovery
    logs one), read from its log (its identity API answers 500 without discovery)."""
    ids = re.findall(r"Running node with peer id of (\w+)", beacon.text())
    if not ids:
        raise SystemExit(f"FAIL: {beacon.name} logged no peer id")
    enrs = re.findall(r"enr:[A-Za-z0-9_\-]+", beacon.text())
    return f"/ip4/127.0.0.1/tcp/{tcp_port}/p2p/{ids[-1]}", (enrs[-1] if enrs else None)


def scrape(port):
    """gigagas's Prometheus text ('' when it cannot be read)."""
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=10) as r:
            return r.read().decode()
    except Exception:  # noqa: BLE001
        return ""


def report_metrics(texts, summary, failures):
    """newPayload counts by status, latency p50/p99 (bucket upper bounds), Mgas/s over the
    newPayload time and the Engine API calls per method (and those answered with an error),
    summed over gigagas's processes (its counters restart with it)."""
    statuses, buckets, seconds, gas, calls, errors = {}, {}, 0.0, 0.0, {}, {}
    for text in texts:
        for line in text.splitlines():
            if line.startswith("#") or " " not in line:
                continue
            name, value = line.rsplit(" ", 1)
            if name.startswith("gigagas_engine_new_payload_total{"):
                status = re.search(r'status="([^"]+)"', name).group(1)
                statuses[status] = statuses.get(status, 0) + float(value)
            elif name.startswith("gigagas_engine_new_payload_seconds_bucket{"):
                le = float(re.search(r'le="([^"]+)"', name).group(1).replace("+Inf", "inf"))
                buckets[le] = buckets.get(le, 0) + float(value)
            elif name == "gigagas_engine_new_payload_seconds_sum":
                seconds += float(value)
            elif name == "gigagas_executor_gas_total":
                gas += float(value)
            elif name.startswith(("gigagas_rpc_calls_total{", "gigagas_rpc_call_errors_total{")) \
                    and 'server="auth"' in name:
                method = re.search(r'method="([^"]+)"', name).group(1)
                into = errors if name.startswith("gigagas_rpc_call_errors") else calls
                into[method] = into.get(method, 0) + int(float(value))
    summary["new_payload_by_status"] = {k: int(v) for k, v in statuses.items()}
    summary["engine_calls_by_method"] = dict(sorted(calls.items()))
    summary["engine_call_errors_by_method"] = dict(sorted(errors.items()))
    total = buckets.get(float("inf"), 0)

    def quantile(q):
        return next((le for le in sorted(buckets) if buckets[le] >= q * total), None)
    if total:
        summary["new_payload_seconds_p50_at_most"] = quantile(0.5)
        summary["new_payload_seconds_p99_at_most"] = quantile(0.99)
        summary["new_payload_mgas_per_second"] = round(gas / seconds / 1e6, 1) if seconds else None
    bad = {k: v for k, v in statuses.items() if k.lower() not in ("valid", "syncing", "accepted")}
    if bad:
        failures.append(f"newPayload verdicts other than VALID/SYNCING: {bad}")


def check_late_joiner(late, eth, summary, failures, args):
    """Waits (10 minutes from the joiner's start, or 60 slots after the first gigagas's
    finality if later) until the late joiner's gigagas has the first one's head and finalized
    block, then records how it got there: its newPayload verdicts (SYNCING first, then VALID),
    the blocks it synced from its peer, and the time it took."""
    if late is None:
        failures.append("late joiner: never started (the chain did not finalize epoch 1)")
        return
    (el, bn, ports, restart_beacon), joiner = late, Rpc(f"http://127.0.0.1:{late[2][0]}")
    started = summary["late_joiner_started"]["at"]
    deadline = max(started + 600, time.time() + 60 * args.slot_seconds)
    have = want = None
    # Prysm's joiner can lose its only peer's blocks right after its initial sync: it rejects
    # the data-column sidecars of blocks it has not imported yet ("target root from epoch:
    # invalid nil or unknown node"), gossipsub's invalid-delivery penalty (squared per topic)
    # graylists that peer, or the first beacon node bans the joiner ("client banned this
    # node"; docs/node.md). Its head then stands still; a restart with a new peer id (what an
    # operator does) starts over. Recorded, at most three times.
    restarts, progress = [], (None, time.time())
    summary["late_joiner_beacon_restarts"] = restarts
    while time.time() < deadline:
        for p in (el, bn):
            if not p.alive():
                failures.append(f"late joiner: {p.name} exited:\n{p.text()[-2000:]}")
                return
        try:
            want = [eth("eth_getBlockByNumber", t, False) for t in ("latest", "finalized")]
            have = [joiner("eth_getBlockByNumber", t, False) for t in ("latest", "finalized")]
            if all(h and w and h["hash"] == w["hash"] for h, w in zip(have, want)):
                break
            head = int(have[0]["number"], 16)
            if head != progress[0]:
                progress = (head, time.time())
            elif (head > 0 and time.time() - progress[1] > 30 * args.slot_seconds
                  and len(restarts) < 3):
                restarts.append({"at_head": head, "first_gigagas_head": int(want[0]["number"], 16),
                                 "seconds_after_start": round(time.time() - started, 1)})
                print(f"devnet-prysm: the joiner's beacon node stalled at block {head}: "
                      "restarting it", file=sys.stderr)
                bn = restart_beacon(bn, len(restarts))
                progress = (head, time.time())
        except Exception:  # noqa: BLE001 - polled again
            pass
        time.sleep(1)
    else:
        def show(b):
            return b and f"{int(b['number'], 16)} {b['hash'][:12]}"
        failures.append("late joiner: head / finalized "
                        f"{[show(b) for b in have or []]}, the first gigagas's "
                        f"{[show(b) for b in want or []]}")
        return
    text = scrape(ports[2])
    statuses = {m.group(1): int(float(m.group(2))) for m in re.finditer(
        r'^gigagas_engine_new_payload_total\{status="([^"]+)"\} (\S+)', text, re.M)}
    synced = sum(int(float(m.group(1))) for m in re.finditer(
        r"^net_sync_blocks_total(?:\{[^}]*\})? (\S+)", text, re.M))
    summary["late_joiner"] = {
        "seconds_to_head": round(time.time() - started, 1),
        "head_block": int(have[0]["number"], 16), "finalized_block": int(have[1]["number"], 16),
        "new_payload_by_status": statuses, "blocks_synced_from_peer": synced}
    if not statuses.get("SYNCING"):
        failures.append(f"late joiner: never answered SYNCING ({statuses}): the path to test was not taken")
    if not synced:
        failures.append("late joiner: synced no block from its peer")
    bad = {k: v for k, v in statuses.items() if k not in ("VALID", "SYNCING", "ACCEPTED")}
    if bad:
        failures.append(f"late joiner: newPayload verdicts {bad}")


def get(url, timeout=10):
    with urllib.request.urlopen(url, timeout=timeout) as r:
        return json.load(r)


class Process:
    """A child process whose stderr and stdout go to a log file."""

    def __init__(self, name, cmd, work, env=None):
        self.name = name
        self.path = os.path.join(work, f"{name}.log")
        self.file = open(self.path, "w")
        self.proc = subprocess.Popen(cmd, stdout=self.file, stderr=subprocess.STDOUT, text=True,
                                     env=env)

    def alive(self):
        return self.proc.poll() is None

    def stop(self, sig=None):
        if self.alive():
            self.proc.send_signal(sig or signal.SIGTERM)
            try:
                self.proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                self.proc.kill()
        self.file.close()

    def text(self):
        with open(self.path, errors="replace") as f:
            return f.read()


class Rpc:
    def __init__(self, url):
        self.url = url
        self.id = 0

    def __call__(self, method, *params):
        self.id += 1
        return json_rpc(self.url, method, params, self.id)


def sign_blob_tx(key, tx, count):
    """`tx` with `count` blobs of random data, signed, in the EIP-7594 network form (wrapper
    version 1, the cell proofs of each blob). eth-account 0.14 signs in that form; from a
    version that gives the EIP-4844 form (one proof a blob) the sidecar is rebuilt with python
    `ckzg` and the trusted setup eth-account ships."""
    blobs = []
    for _ in range(count):
        data = bytearray(os.urandom(131072))
        data[0::32] = bytes(4096)  # every field element below the BLS modulus
        blobs.append(bytes(data))
    raw = bytes(Account.from_key(key).sign_transaction(tx, blobs=blobs).raw_transaction)
    fields = rlp.decode(raw[1:])
    if len(fields) == 5:  # [tx, wrapper version, blobs, commitments, cell proofs]
        return raw
    body, blobs_rlp, commitments, _proofs = fields  # [tx, blobs, commitments, proofs]
    kzg = ckzg.load_trusted_setup(TRUSTED_SETUP, 0)
    cell_proofs = []
    for blob in blobs_rlp:
        _cells, proofs = ckzg.compute_cells_and_kzg_proofs(blob, kzg)
        cell_proofs.extend(proofs)
    return b"\x03" + rlp.encode([body, b"\x01", blobs_rlp, commitments, cell_proofs])


class Traffic:
    """Transactions of every type from four funded keys (`keys`, default the dev keys): every
    slot a legacy, an EIP-2930, an EIP-1559 and an EIP-7702 transaction (keys 1–3), and, in a
    thread of their own (the KZG work takes longer than a slot), blob transactions of two blobs
    (key 0). `tag` names the EIP-7702 authorities, so that two Traffics on one chain differ."""

    def __init__(self, rpc, keys=FUNDED_KEYS, tag="gigagas prysm"):
        self.rpc = rpc
        self.keys = list(keys)
        self.tag = tag
        self.accounts = [Account.from_key(k) for k in self.keys]
        self.nonces = [0] * len(self.accounts)
        self.sent = {}  # hash -> type
        self.errors = []
        self.counter = None
        self.delegated = 0
        self.blob_txs = 0
        self.signer = concurrent.futures.ProcessPoolExecutor(max_workers=1)
        self.stop = threading.Event()

    def _send(self, i, tx):
        tx = dict(tx, chainId=CHAIN_ID, nonce=self.nonces[i])
        raw = self.accounts[i].sign_transaction(tx).raw_transaction
        h = self.rpc("eth_sendRawTransaction", "0x" + raw.hex())
        self.nonces[i] += 1
        self.sent[h] = tx.get("type", 0)
        return h

    def refresh(self, keys):
        """Nonces from the node (`pending`: the pool's too), so that a restarted node, whose
        in-memory pool is gone, gets the sender's next nonces instead of a gap."""
        for i in keys:
            address = self.accounts[i].address
            self.nonces[i] = int(self.rpc("eth_getTransactionCount", address, "pending"), 16)

    def round(self):
        self.refresh([1, 2, 3])
        fee = {"maxFeePerGas": 30 * GWEI, "maxPriorityFeePerGas": GWEI}
        if self.counter is None:
            h = self._send(3, {"type": 2, "data": "0x" + INIT, "gas": 200_000, "value": 0, **fee})
            for _ in range(200):
                r = self.rpc("eth_getTransactionReceipt", h)
                if r:
                    self.counter = to_checksum_address(r["contractAddress"])
                    break
                time.sleep(0.5)
            return
        to = self.counter
        self._send(1, {"to": to, "gas": 100_000, "gasPrice": 30 * GWEI, "value": 0})  # legacy
        self._send(2, {"type": 1, "to": to, "gas": 100_000, "gasPrice": 30 * GWEI, "value": 0,
                       "accessList": [{"address": to, "storageKeys": ["0x" + "00" * 32]}]})
        self._send(3, {"type": 2, "to": to, "gas": 100_000, "value": 0, **fee})
        # EIP-7702: a fresh account delegates to the counter; the call runs its code.
        authority = Account.from_key(keccak(f"{self.tag} {self.delegated}".encode()))
        self.delegated += 1
        auth = authority.sign_authorization({"chainId": CHAIN_ID, "address": to, "nonce": 0})
        self._send(3, {"type": 4, "to": authority.address, "gas": 200_000, "value": 0,
                       "authorizationList": [auth], **fee})

    def blob_round(self):
        if self.counter is not None:
            self.refresh([0])
            self._send_blobs(0, 2)

    def _send_blobs(self, i, count):
        """A blob transaction of `count` blobs, signed in a worker process (the KZG work
        holds the interpreter's lock for seconds, which would starve the other thread)."""
        tx = {"type": 3, "chainId": CHAIN_ID, "nonce": self.nonces[i], "to": self.counter,
              "value": 0, "gas": 100_000, "maxFeePerGas": 30 * GWEI,
              "maxPriorityFeePerGas": GWEI, "maxFeePerBlobGas": 10 * GWEI}
        network = self.signer.submit(sign_blob_tx, self.keys[i], tx, count).result()
        h = self.rpc("eth_sendRawTransaction", "0x" + network.hex())
        self.nonces[i] += 1
        self.sent[h] = 3
        self.blob_txs += 1

    def run(self, every, blobs=False):
        keys = [0] if blobs else [1, 2, 3]
        while not self.stop.is_set():
            try:
                self.blob_round() if blobs else self.round()
            except Exception as e:  # noqa: BLE001 - reported in the checks
                self.errors.append(str(e))
                # The node may have refused a nonce: read this thread's again.
                try:
                    self.refresh(keys)
                except Exception:  # noqa: BLE001
                    pass
            self.stop.wait(every)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--gigagas", default=os.path.join(ROOT, "target/release/gigagas"))
    ap.add_argument("--prysm-bin", help="folder with beacon-chain, validator, prysmctl")
    ap.add_argument("--slot-seconds", type=int, default=3)
    ap.add_argument("--validators", type=int, default=64)
    ap.add_argument("--finalized-epochs", type=int, default=2,
                    help="finalized epochs to reach (with --restarts, at least 4)")
    ap.add_argument("--restarts", action="store_true",
                    help="kill -9 gigagas once the chain finalized epoch 1, SIGTERM it at 2, "
                         "restart the beacon node at 3; each comes back on its datadir")
    ap.add_argument("--late-joiner", action="store_true",
                    help="once the chain finalized past genesis, start a fresh gigagas (peered with the "
                         "first over the network layer) and a second beacon node (peered with the "
                         "first, checkpoint-synced from it); both must reach the same head and "
                         "finalized block")
    ap.add_argument("--timeout", type=float, default=1200, help="seconds to wait for finality")
    ap.add_argument("--verbose", action="store_true",
                    help="gigagas logs at info (RUST_LOG=info), the beacon nodes at debug")
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()

    prysm = prysm_binaries(args.prysm_bin)
    work = os.path.join(ROOT, "target/devnet-prysm", time.strftime("run-%Y%m%d-%H%M%S"))
    os.makedirs(work)
    print(f"devnet-prysm: logs in {work}", file=sys.stderr)
    config, el_out, state, genesis_time = write_genesis(prysm, work, args.slot_seconds,
                                                        args.validators)
    jwt = os.path.join(work, "jwt.hex")
    with open(jwt, "w") as f:
        f.write(secrets.token_hex(32))

    http, auth, rpc_port, beacon_http = free_port(), free_port(), free_port(), free_port()
    metrics_port = free_port()
    target = max(args.finalized_epochs, 4) if args.restarts else args.finalized_epochs
    procs = []
    failures = []
    summary = {"work": work, "slot_seconds": args.slot_seconds, "validators": args.validators}
    traffic = None
    try:
        # gigagas's peer-to-peer port and the beacon node's p2p TCP port stay the same across
        # restarts, so that the late joiner's peers find them again.
        gigagas_p2p, beacon_p2p = free_port(), free_port()

        def start_gigagas(name, datadir="gigagas", ports=None, bootnodes=None):
            """gigagas on `datadir`, ready (its ready file written), its log in NAME.log."""
            h, a, m, port = ports or (http, auth, metrics_port, gigagas_p2p)
            node = GigagasNode(
                args.gigagas, os.path.join(work, datadir),
                ["--chain", el_out, "--authrpc.jwtsecret", jwt, "--libp2p.port", str(port),
                 "--gossip", "none", *(["--libp2p.bootnodes", bootnodes] if bootnodes else [])],
                http_port=h, authrpc_port=a, metrics=f"127.0.0.1:{m}",
                log_path=os.path.join(work, f"{name}.log"),
                env=dict(os.environ, RUST_LOG="info") if args.verbose else None)
            node.name = name
            return node

        def start_beacon(name, clear, datadir="beacon", ports=None, extra=("--min-sync-peers", "0")):
            a, rpc, h, tcp = ports or (auth, rpc_port, beacon_http, beacon_p2p)
            # The first beacon node custodies every data column (a supernode), so that a node
            # syncing from it alone finds the columns of the blocks with blobs (Fulu, PeerDAS).
            # With a late joiner, discovery stays on (loopback only, no bootnodes): Prysm
            # learns a peer's custody of data columns from its ENR.
            return Process(name, beacon_command(
                prysm, work, datadir, config, state, f"http://127.0.0.1:{a}", jwt, (rpc, h, tcp),
                clear=clear, discovery=args.late_joiner, supernode=not ports, extra=extra), work)

        def start_late_joiner():
            """A fresh gigagas peered with the first over the network layer, and a second beacon
            node peered with the first, checkpoint-synced from its finalized state."""
            if not gigagas.p2p:
                raise SystemExit(f"FAIL: gigagas has no p2p address:\n{gigagas.text()[-2000:]}")
            ports = (free_port(), free_port(), free_port(), free_port())
            el = start_gigagas("gigagas-late", "gigagas-late", ports, gigagas.p2p)
            peer, enr = peer_of(beacon, beacon_p2p)
            bootstrap = ["--bootstrap-node", enr] if enr else []
            beacon_ports = (ports[1], free_port(), free_port(), free_port())
            extra = ("--min-sync-peers", "1", "--peer", peer, "--checkpoint-sync-url", cl,
                     *bootstrap, *(["--verbosity", "debug"] if args.verbose else []))
            bn = start_beacon("beacon-chain-late", True, "beacon-late", beacon_ports, extra)

            def restart_beacon(bn, n):
                """The joiner's beacon node stopped (SIGTERM) and started again on its database
                with a new network key (a new log, beacon-chain-late-N.log): the first beacon
                node may have banned the old peer id."""
                bn.stop()
                try:
                    os.remove(os.path.join(work, "beacon-late", "network-keys"))
                except FileNotFoundError:
                    pass
                new = start_beacon(f"beacon-chain-late-{n}", False, "beacon-late", beacon_ports,
                                   extra)
                procs.append(new)
                return new
            return el, bn, ports, restart_beacon

        gigagas = start_gigagas("gigagas")
        procs.append(gigagas)
        eth = Rpc(gigagas.url)
        el_genesis = eth("eth_getBlockByNumber", "0x0", False)["hash"]
        beacon = start_beacon("beacon-chain", True,
                              extra=("--min-sync-peers", "0",
                                     *(["--verbosity", "debug"] if args.verbose else [])))
        procs.append(beacon)
        validator = Process("validator", validator_command(
            prysm, work, "validator", config, args.validators, 0, rpc_port), work)
        procs.append(validator)
        cl = f"http://127.0.0.1:{beacon_http}"
        for _ in range(300):
            try:
                st = get(f"{cl}/eth/v2/debug/beacon/states/genesis", timeout=30)["data"]
                cl_genesis = st["latest_execution_payload_header"]["block_hash"]
                break
            except Exception:  # noqa: BLE001 - the beacon node is starting
                if not beacon.alive():
                    raise SystemExit(f"beacon-chain exited:\n{beacon.text()[-3000:]}")
                time.sleep(1)
        else:
            raise SystemExit("the beacon node's API did not come up")
        summary["el_genesis"], summary["cl_genesis_payload"] = el_genesis, cl_genesis
        if el_genesis != cl_genesis:
            raise SystemExit(f"FAIL: genesis differs: gigagas {el_genesis}, beacon state {cl_genesis}")
        traffic = Traffic(eth)
        threading.Thread(target=traffic.run, args=(args.slot_seconds,), daemon=True).start()
        threading.Thread(target=traffic.run, args=(args.slot_seconds, True), daemon=True).start()

        # Finality: the beacon chain's finalized checkpoint, and gigagas's finalized block.
        deadline = time.time() + args.timeout + max(0, genesis_time - time.time())
        finalized_epoch, finalized_hash, last_print = 0, None, 0
        restarts = {1: "gigagas kill -9", 2: "gigagas SIGTERM", 3: "beacon-chain SIGTERM"} \
            if args.restarts else {}
        scraped = []  # gigagas's metrics before each of its stops, and at the end
        summary["restarts"] = []
        late = None  # the late joiner's (gigagas, beacon node, gigagas's ports, restart), once started

        def join_late():
            """Starts the late joiner (once) when there is a finalized checkpoint to sync from."""
            nonlocal late
            if args.late_joiner and late is None and finalized_epoch >= 1:
                late = start_late_joiner()
                procs.extend(late[:2])
                summary["late_joiner_started"] = {
                    "finalized_epoch": finalized_epoch,
                    "gigagas_head": int(eth("eth_blockNumber"), 16), "at": time.time()}
                print(f"devnet-prysm: late joiner started (gigagas head "
                      f"{summary['late_joiner_started']['gigagas_head']})", file=sys.stderr)

        while time.time() < deadline:
            join_late()
            due = [e for e in restarts if finalized_epoch >= e]
            if due:
                what = restarts.pop(due[0])
                name, how = what.split(" ", 1)
                i = procs.index(gigagas if name == "gigagas" else beacon)
                if name == "gigagas":
                    scraped.append(scrape(metrics_port))
                procs[i].stop(signal.SIGKILL if how == "kill -9" else signal.SIGTERM)
                if name == "gigagas":
                    gigagas = procs[i] = start_gigagas(f"gigagas-{len(summary['restarts']) + 1}")
                else:
                    beacon = procs[i] = start_beacon(f"beacon-chain-{len(summary['restarts']) + 1}", False)
                summary["restarts"].append(f"{what} after finalized epoch {finalized_epoch}")
                print(f"devnet-prysm: {what} and restarted", file=sys.stderr)
            for p in procs:
                if not p.alive():
                    raise SystemExit(f"FAIL: {p.name} exited:\n{p.text()[-3000:]}")
            try:
                cp = get(f"{cl}/eth/v1/beacon/states/head/finality_checkpoints")["data"]["finalized"]
                finalized_epoch = int(cp["epoch"])
                if finalized_epoch >= target and not restarts:
                    block = get(f"{cl}/eth/v2/beacon/blocks/{cp['root']}")["data"]["message"]
                    want = block["body"]["execution_payload"]["block_hash"]
                    have = eth("eth_getBlockByNumber", "finalized", False)
                    if have and have["hash"] == want:
                        join_late()  # the chain may finalize epoch 2 first: from 0 straight to 2
                        finalized_hash = want
                        summary["finalized_block"] = int(have["number"], 16)
                        summary["finalized_slot"] = int(block["slot"])
                        break
            except Exception:  # noqa: BLE001 - polled again
                pass
            if time.time() - last_print > 30:
                try:
                    head = eth("eth_blockNumber")
                except Exception:  # noqa: BLE001 - restarting
                    head = "0x0"
                print(f"devnet-prysm: finalized epoch {finalized_epoch}, gigagas head {int(head, 16)}",
                      file=sys.stderr)
                last_print = time.time()
            time.sleep(1)
        summary["finalized_epoch"] = finalized_epoch
        if finalized_hash is None:
            failures.append(f"finality: the finalized epoch reached {finalized_epoch}, not "
                            f"{target}, or gigagas never got its block as finalized")
        if args.late_joiner:
            check_late_joiner(late, eth, summary, failures, args)
        scraped.append(scrape(metrics_port))
        report_metrics(scraped, summary, failures)
        traffic.stop.set()

        # Head: gigagas's head is the beacon node's execution payload head (a slot may pass
        # between the two reads: retried).
        for _ in range(3 * args.slot_seconds):
            cl_head = get(f"{cl}/eth/v2/beacon/blocks/head")["data"]["message"]
            want = cl_head["body"]["execution_payload"]["block_hash"]
            have = eth("eth_getBlockByNumber", "latest", False)["hash"]
            if want == have:
                break
            time.sleep(1)
        else:
            failures.append(f"head: gigagas {have}, beacon execution payload head {want}")
        summary["head_slot"] = int(cl_head["slot"])

        # Every block built by gigagas, transactions of every type included and successful.
        head = int(eth("eth_blockNumber"), 16)
        summary["head_block"] = head
        foreign = [n for n in range(1, head + 1)
                   if eth("eth_getBlockByNumber", hex(n), False)["extraData"] != EXTRA_DATA]
        if foreign:
            failures.append(f"blocks not built by gigagas's getPayload: {foreign[:10]}")
        included = {}
        failed = 0
        for h, kind in traffic.sent.items():
            r = eth("eth_getTransactionReceipt", h)
            if r is not None:
                included[kind] = included.get(kind, 0) + 1
                failed += r["status"] != "0x1"
        summary["transactions_sent"] = len(traffic.sent)
        summary["transactions_included_by_type"] = included
        summary["transactions_failed"] = failed
        summary["traffic_errors"] = traffic.errors[:5]
        blob_blocks = sum(1 for n in range(1, head + 1)
                          if int(eth("eth_getBlockByNumber", hex(n), False).get("blobGasUsed") or "0x0", 16) > 0)
        summary["blocks_with_blobs"] = blob_blocks
        # Blocks after the traffic started (the counter's deployment) that carry transactions.
        deployed = next((int(r["blockNumber"], 16) for h, k in list(traffic.sent.items())[:1]
                         if (r := eth("eth_getTransactionReceipt", h))), head)
        full = sum(1 for n in range(deployed + 1, head + 1)
                   if eth("eth_getBlockByNumber", hex(n), False)["transactions"])
        summary["blocks_with_transactions_after_start"] = f"{full} of {head - deployed}"
        if head > deployed and full < 0.75 * (head - deployed):
            failures.append(f"only {full} of {head - deployed} blocks carried transactions")
        if not blob_blocks:
            failures.append("no block carried blobs")
        # The beacon blocks carry the commitments of gigagas's blobs bundles: as many as the
        # execution blocks' blobs.
        el_blobs = sum(int(eth("eth_getBlockByNumber", hex(n), False).get("blobGasUsed") or "0x0", 16)
                       for n in range(1, head + 1)) // 131072
        cl_blobs = 0
        for slot in range(1, summary["head_slot"] + 1):
            try:
                body = get(f"{cl}/eth/v2/beacon/blocks/{slot}")["data"]["message"]["body"]
            except Exception:  # noqa: BLE001 - an empty slot
                continue
            if int(body["execution_payload"]["block_number"]) <= head:
                cl_blobs += len(body.get("blob_kzg_commitments", []))
        summary["blobs_execution_blocks"], summary["blobs_beacon_blocks"] = el_blobs, cl_blobs
        if el_blobs != cl_blobs:
            failures.append(f"blobs: {el_blobs} in the execution blocks, {cl_blobs} commitments in the beacon blocks")
        for kind in (0, 1, 2, 3, 4):
            if not included.get(kind):
                failures.append(f"no transaction of type {kind} was included")
        if failed:
            failures.append(f"{failed} included transactions failed")

        # Prysm's view of the Engine API.
        log = beacon.text()
        missing = re.findall(r'does not support some requested engine methods.*', log)
        if missing:
            failures.append(f"Prysm: {missing[0][:300]}")
        summary["prysm_engine_warnings"] = missing[:1]
    finally:
        if traffic:
            traffic.stop.set()
            traffic.signer.shutdown(wait=False, cancel_futures=True)
        for p in reversed(procs):
            p.stop()
    return report("devnet-prysm", summary, failures, args.json)


if __name__ == "__main__":
    sys.exit(main())
