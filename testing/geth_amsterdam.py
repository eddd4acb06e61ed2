#!/usr/bin/env python3
"""Amsterdam (or Osaka) chains built by geth 1.17.10: `geth --dev` on a genesis with `amsterdamTime: 0`
(geth's own `dumpgenesis --dev`, its `bogotaTime` removed, a few funded keys added), fed
transactions over JSON-RPC, then `geth export`ed with the BAL geth appends after each block.
The output folder holds `genesis.json` and `chain.rlp` (a `gigagas init` + `gigagas import`
input), `fixture.json` (the same chain as a BlockchainTests fixture, network `Amsterdam`, each
block with its `blockAccessList`: for `gigagas-bench test-fixtures` and geth's `evm blocktest`)
and `summary.json` (blocks, transactions, gas, what the load covered).

Loads (`--load`):
- `coverage`: every Glamsterdam rule at least once, a few transactions a block: new accounts
  and slots (EIP-8037), code deposits, a slot set and reset, EIP-7702 authorizations, a blob
  transaction, `SLOTNUM` (EIP-7843), `DUPN`/`SWAPN`/`EXCHANGE` (EIP-8024), SELFDESTRUCT in the
  creating transaction and after it, to another account and to itself (EIP-6780, EIP-8246),
  transfers to others and to oneself, by transactions and by CALL (EIP-7708), large calldata
  (EIP-7976), access lists (EIP-7981), a transaction with a gas limit above 2^24 (EIP-8037's
  reservoir), a 64 KiB contract (EIP-7954), the CREATE2 factory (EIP-7997), the builder
  deposit and exit request contracts (EIP-8282);
- `heavy`: `--blocks` blocks of `--txs` transactions each from `--senders` keys: transfers to
  new accounts, storage writes to new and existing slots, contract calls with value; for timing
  imports (`testing/import_vs_geth.py`).

geth comes from testing/geth_install.sh (the Go module proxy, pinned v1.17.10, into
~/.cache/gigagas) unless --geth names it; Python needs eth-account (`make devnet-deps`).

Usage: testing/.venv/bin/python testing/geth_amsterdam.py --out target/chains/geth-amsterdam-coverage
           [--load coverage|heavy] [--blocks N] [--txs N] [--senders N] [--gas-limit GAS] [--json]
"""

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
import urllib.request

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from gigagas_testing import free_port, json_rpc  # noqa: E402
from devnet_prysm import sign_blob_tx  # noqa: E402

try:
    import rlp
    from eth_account import Account
    from eth_utils import keccak, to_checksum_address
except ImportError:
    raise SystemExit("geth_amsterdam: eth-account is needed (make devnet-deps)")

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
# geth's `evm blocktest` network "Amsterdam" (tests/init.go): chain id 1, BPO1 and BPO2 at
# genesis, mainnet's deposit contract; the chains are built on it so that they are fixtures too.
CHAIN_ID = 1
MAINNET_DEPOSIT_CONTRACT = "0x00000000219ab540356cBB839Cbe05303d7705Fa"
BPO1 = {"target": 10, "max": 15, "baseFeeUpdateFraction": 8346193}
BPO2 = {"target": 14, "max": 21, "baseFeeUpdateFraction": 11684671}
GWEI = 10**9
ETHER = 10**18
# EIP-7997's CREATE2 factory and EIP-8282's builder request contracts (geth's genesis allocs).
CREATE2_FACTORY = to_checksum_address("0x4e59b44847b379578588920ca78fbf26c0b4956c")
BUILDER_DEPOSITS = to_checksum_address("0x0000bff46984e3725691fa540a8c7589300d8282")
BUILDER_EXITS = to_checksum_address("0x000064d678505ad48f8ccb093bc65613800e8282")


def key_of(i):
    """The i-th funded key: keccak of a label, deterministic across runs."""
    return "0x" + keccak(f"gigagas geth-amsterdam key {i}".encode()).hex()


def deploy_code(runtime):
    """Initcode returning `runtime`: CODECOPY(0, 14, len) RETURN(0, len), lengths as PUSH3."""
    n = len(runtime)
    assert n < 1 << 24
    size = "62" + n.to_bytes(3, "big").hex()
    header = bytes.fromhex(size + "600e5f39" + size + "5ff3")
    assert len(header) == 14
    return header + runtime


# Runtime codes (hand-assembled; each line's opcodes in the comment).
# SSTORE(calldata[0:32], calldata[32:64])
STORE = bytes.fromhex("6020355f355500")
# for i in 0..count: SSTORE(start + i, start + i + 1); calldata: start, count
FILL = bytes.fromhex("5f356020355b8015601d57600182018255600190039060010190600556" + "5b00")
# SSTORE(0, SLOTNUM + 1)  (EIP-7843)
SLOTNUM = bytes.fromhex("4b600101" + "5f5500")
# PUSH1 1..20, DUPN 17 (0x80), SWAPN 17 (0x80), EXCHANGE (1, 2) (0x8e), then SSTORE(0, top),
# SSTORE(1, next), SSTORE(2, next)  (EIP-8024)
STACK_OPS = bytes.fromhex("".join(f"60{i:02x}" for i in range(1, 21)) + "e680e780e88e"
                          + "5f55600155600255" + "00")
# CALL(gas, calldata[0:32] as address, CALLVALUE, no data): value forwarded (EIP-7708 logs)
FORWARD = bytes.fromhex("5f5f5f5f345f355af1" + "00")
# SELFDESTRUCT(CALLER)
SD_TO_CALLER = bytes.fromhex("33ff")
# SELFDESTRUCT(ADDRESS): to itself (EIP-8246: the balance stays)
SD_TO_SELF = bytes.fromhex("30ff")
# CREATE(0, calldata) and CREATE2(0, calldata, salt 0); the addresses stored in slots 0 and 1
FACTORY = bytes.fromhex("365f5f37" + "365f5ff0" + "5f55" + "5f365f5ff5" + "600155" + "00")


def fund_alloc(count, balance=10**24):
    return {Account.from_key(key_of(i)).address[2:].lower(): {"balance": hex(balance)}
            for i in range(count)}


def make_genesis(geth, gas_limit, senders, fork="amsterdam"):
    """geth's dev genesis with Amsterdam at 0 instead of Bogota (`fork` "osaka": neither, the
    chain stays on Osaka with BPO1 and BPO2), `senders` keys funded."""
    out = subprocess.run([geth, "--dev", "dumpgenesis"], check=True, capture_output=True, text=True)
    genesis = json.loads(out.stdout)
    config = genesis["config"]
    config.pop("bogotaTime", None)
    config.update(chainId=CHAIN_ID, bpo1Time=0, bpo2Time=0,
                  depositContractAddress=MAINNET_DEPOSIT_CONTRACT)
    if fork == "amsterdam":
        config["amsterdamTime"] = 0
    config["blobSchedule"].update(bpo1=BPO1, bpo2=BPO2)
    genesis["gasLimit"] = hex(gas_limit)
    genesis["alloc"].update(fund_alloc(senders))
    return genesis


class Geth:
    """`geth --dev` on an initialized datadir, JSON-RPC on a free loopback port."""

    def __init__(self, geth, datadir, period, gas_limit):
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        cmd = [geth, "--dev", "--datadir", datadir, "--dev.period", str(period),
               "--miner.gaslimit", str(gas_limit), "--http", "--http.addr", "127.0.0.1",
               "--http.port", str(self.port), "--http.api", "eth,debug,txpool,net",
               "--port", "0", "--authrpc.port", str(free_port()), "--nodiscover", "--maxpeers", "0",
               "--txpool.accountslots", "4096", "--txpool.globalslots", "200000",
               "--txpool.accountqueue", "4096", "--txpool.globalqueue", "200000",
               "--rpc.txfeecap", "0", "--rpc.batch-request-limit", "100000",
               "--rpc.batch-response-max-size", "200000000", "--verbosity", "3"]
        self.log = open(os.path.join(datadir, "geth.log"), "w")
        self.proc = subprocess.Popen(cmd, stdout=self.log, stderr=subprocess.STDOUT)
        for _ in range(200):
            try:
                self.rpc("eth_blockNumber")
                return
            except Exception:
                if self.proc.poll() is not None:
                    break
                time.sleep(0.1)
        raise SystemExit(f"geth_amsterdam: geth did not start; see {datadir}/geth.log")

    def rpc(self, method, *params):
        return json_rpc(self.url, method, params)

    def stop(self):
        self.proc.terminate()
        self.proc.wait(timeout=60)
        self.log.close()


class Sender:
    """Signs and sends transactions of the funded keys, tracking nonces."""

    def __init__(self, geth, count):
        self.geth = geth
        self.accounts = [Account.from_key(key_of(i)) for i in range(count)]
        self.nonces = [0] * count
        self.hashes = []
        self.kinds = {}

    def fees(self):
        return {"maxFeePerGas": 200 * GWEI, "maxPriorityFeePerGas": 1 * GWEI}

    def send(self, i, kind, tx, raw=None):
        """Signs `tx` from key i (nonce, chain id filled in) and sends it; returns its hash."""
        tx = dict(tx, nonce=self.nonces[i], chainId=CHAIN_ID)
        if tx.get("to") == "":
            del tx["to"]  # a contract creation
        if raw is None:
            raw = bytes(self.accounts[i].sign_transaction(tx).raw_transaction)
        h = self.geth.rpc("eth_sendRawTransaction", "0x" + raw.hex())
        self.nonces[i] += 1
        self.hashes.append(h)
        self.kinds[h] = kind
        return h

    def wait(self, timeout=120):
        """Waits until every sent transaction has a receipt; returns the receipts by hash."""
        receipts = {}
        deadline = time.time() + timeout
        while time.time() < deadline:
            for h in self.hashes:
                if h not in receipts:
                    r = self.geth.rpc("eth_getTransactionReceipt", h)
                    if r:
                        receipts[h] = r
            if len(receipts) == len(self.hashes):
                return receipts
            time.sleep(0.3)
        missing = [self.kinds[h] for h in self.hashes if h not in receipts]
        raise SystemExit(f"geth_amsterdam: not mined in {timeout} s: {missing}")


def word(n):
    return n.to_bytes(32, "big")


def addr_word(a):
    return bytes(12) + bytes.fromhex(a[2:])


def created_address(sender, nonce):
    return to_checksum_address(keccak(rlp.encode([bytes.fromhex(sender[2:]), nonce]))[12:])


def coverage_load(s):
    """Every rule of the module doc at least once, over a few blocks. Returns what each
    transaction covers, by hash, and the receipts."""
    fee = s.fees()
    a = s.accounts
    deployed = {}

    def deploy(i, name, runtime, value=0, gas=3_000_000):
        s.send(i, f"deploy {name}", {"value": value, "gas": gas,
                                      "data": deploy_code(runtime), **fee})
        deployed[name] = created_address(a[i].address, s.nonces[i] - 1)

    # Block(s) 1: code deposits (EIP-8037 state gas per byte), a 64 KiB contract (EIP-7954).
    for name, code, value in [("store", STORE, 0), ("fill", FILL, 0), ("slotnum", SLOTNUM, 0),
                              ("stack", STACK_OPS, 0), ("forward", FORWARD, 0),
                              ("sd_caller", SD_TO_CALLER, 5 * GWEI), ("sd_self", SD_TO_SELF, 7 * GWEI),
                              ("factory", FACTORY, 0)]:
        deploy(0, name, code, value)
    big = bytes([0x5b]) * 65536  # 64 KiB of JUMPDESTs: the largest code Amsterdam allows
    deploy(1, "big", big, gas=120_000_000)
    receipts = s.wait()

    # Block(s) 2: calls and transfers.
    new = [to_checksum_address(keccak(f"new account {i}".encode())[12:]) for i in range(4)]
    s.send(2, "transfer to a new account", {"to": new[0], "value": 10**15, "gas": 500_000, **fee})
    s.send(2, "transfer to an existing account", {"to": a[3].address, "value": 1, "gas": 500_000, **fee})
    s.send(2, "transfer to oneself", {"to": a[2].address, "value": 12345, "gas": 500_000, **fee})
    s.send(2, "zero-value transfer to a new account", {"to": new[1], "value": 0, "gas": 500_000, **fee})
    s.send(3, "new slots", {"to": deployed["store"], "value": 0, "gas": 500_000,
                            "data": word(7) + word(0xdead), **fee})
    s.send(3, "SLOTNUM", {"to": deployed["slotnum"], "gas": 500_000, "data": b"", **fee})
    s.send(3, "DUPN/SWAPN/EXCHANGE", {"to": deployed["stack"], "gas": 500_000, "data": b"", **fee})
    s.send(4, "CALL with value to a new account", {"to": deployed["forward"], "value": 999, "gas": 500_000,
                                                   "data": addr_word(new[2]), **fee})
    s.send(4, "CALL with value to itself", {"to": deployed["forward"], "value": 77, "gas": 500_000,
                                            "data": addr_word(deployed["forward"]), **fee})
    s.send(4, "SELFDESTRUCT after creation, to the caller",
           {"to": deployed["sd_caller"], "gas": 500_000, **fee})
    s.send(4, "SELFDESTRUCT after creation, to itself", {"to": deployed["sd_self"], "gas": 500_000, **fee})
    s.send(5, "SELFDESTRUCT in the creating transaction",
           {"to": "", "value": 3 * GWEI, "gas": 1_000_000,
            "data": bytes.fromhex("73") + bytes.fromhex(new[3][2:]) + bytes.fromhex("ff"), **fee})
    s.send(5, "CREATE and CREATE2 of children that self-destruct in their initcode",
           {"to": deployed["factory"], "gas": 2_000_000, "data": bytes.fromhex("33ff"), **fee})
    s.send(5, "CREATE2 factory (EIP-7997)",
           {"to": CREATE2_FACTORY, "gas": 2_000_000, "data": word(42) + deploy_code(STORE), **fee})
    s.send(6, "large calldata (EIP-7976 floor)",
           {"to": new[0], "gas": 10_000_000, "data": os.urandom(100_000), **fee})
    s.send(6, "access list, type 1",
           {"to": deployed["store"], "gas": 500_000, "gasPrice": 200 * GWEI, "data": word(8) + word(1),
            "accessList": [{"address": deployed["store"], "storageKeys": ["0x" + word(k).hex() for k in (8, 9)]},
                           {"address": new[0], "storageKeys": []}]})
    s.send(6, "access list, type 2",
           {"to": deployed["store"], "gas": 500_000, "data": word(9) + word(2), **fee,
            "accessList": [{"address": deployed["store"], "storageKeys": ["0x" + word(9).hex()]}]})
    s.send(7, "gas limit above 2^24: 300 new slots",
           {"to": deployed["fill"], "gas": 40_000_000, "data": word(1000) + word(300), **fee})
    s.send(8, "legacy transaction", {"to": new[0], "value": 5, "gas": 100_000, "gasPrice": 200 * GWEI})
    receipts.update(s.wait())

    # Block(s) 3: EIP-7702, a reset slot, builder requests, a blob, a transaction to a delegated
    # account.
    authority = Account.from_key(key_of(9))
    fresh = Account.from_key(key_of(1000))  # no balance: its first state is the authorization's
    auth1 = authority.sign_authorization({"chainId": CHAIN_ID, "address": deployed["store"], "nonce": 0})
    auth2 = fresh.sign_authorization({"chainId": CHAIN_ID, "address": deployed["forward"], "nonce": 0})
    s.send(10, "EIP-7702 authorizations (one of a new account)",
           {"to": a[10].address, "gas": 1_000_000, "authorizationList": [auth1, auth2], **fee})
    s.send(3, "slot reset to zero", {"to": deployed["store"], "gas": 500_000, "data": word(7) + word(0), **fee})
    deposit = bytearray(184)
    deposit[80:88] = (10**9).to_bytes(8, "big")  # 1 ETH in gwei
    s.send(11, "EIP-8282 builder deposit request",
           {"to": BUILDER_DEPOSITS, "value": ETHER + 10**6, "gas": 1_000_000, "data": bytes(deposit), **fee})
    s.send(11, "EIP-8282 builder exit request",
           {"to": BUILDER_EXITS, "value": 10**6, "gas": 1_000_000, "data": os.urandom(48), **fee})
    blob_tx = {"to": new[0], "value": 0, "gas": 100_000, "maxFeePerBlobGas": 100 * GWEI,
               "nonce": s.nonces[12], "chainId": CHAIN_ID, **fee}
    s.send(12, "blob transaction", blob_tx, raw=sign_blob_tx(key_of(12), blob_tx, 1))
    receipts.update(s.wait())
    s.send(13, "call to a delegated account (EIP-7702)",
           {"to": authority.address, "gas": 500_000, "data": word(3) + word(4), **fee})
    receipts.update(s.wait())
    return deployed, receipts


def heavy_load(s, blocks, txs):
    """`blocks` rounds of `txs` transactions spread over the senders: transfers to new accounts,
    storage writes to new and existing slots, calls with value. Each round is signed, sent as
    one JSON-RPC batch, and mined before the next one is sent."""
    fee = s.fees()
    a = s.accounts
    s.send(0, "deploy store", {"to": "", "gas": 3_000_000, "data": deploy_code(STORE), **fee})
    s.send(0, "deploy forward", {"to": "", "gas": 3_000_000, "data": deploy_code(FORWARD), **fee})
    store, forward = created_address(a[0].address, 0), created_address(a[0].address, 1)
    s.wait()
    senders = len(a)
    counter = 0
    for b in range(blocks):
        start = time.time()
        raws = []
        for _ in range(txs):
            i = 1 + (counter % (senders - 1))
            counter += 1
            kind = counter % 4
            if kind == 0:
                to = to_checksum_address(keccak(f"heavy new {counter}".encode())[12:])
                tx = {"to": to, "value": 10**12, "gas": 300_000}
            elif kind == 1:
                tx = {"to": store, "gas": 300_000, "data": word(counter) + word(counter + 1)}
            elif kind == 2:
                tx = {"to": store, "gas": 300_000, "data": word(counter % 97) + word(counter)}
            else:
                tx = {"to": forward, "value": 3, "gas": 300_000,
                      "data": addr_word(a[(i + 1) % senders].address)}
            tx.update(fee, nonce=s.nonces[i], chainId=CHAIN_ID)
            s.nonces[i] += 1
            raws.append("0x" + bytes(a[i].sign_transaction(tx).raw_transaction).hex())
        batch = [{"jsonrpc": "2.0", "id": k, "method": "eth_sendRawTransaction", "params": [raw]}
                 for k, raw in enumerate(raws)]
        req = urllib.request.Request(s.geth.url, json.dumps(batch).encode(),
                                     {"Content-Type": "application/json"})
        with urllib.request.urlopen(req, timeout=120) as r:
            answers = json.load(r)
        errors = [a["error"] for a in answers if "error" in a]
        if errors:
            raise SystemExit(f"geth_amsterdam: geth refused {len(errors)} transactions: {errors[:3]}")
        deadline = time.time() + 600
        while time.time() < deadline:
            status = s.geth.rpc("txpool_status")
            if int(status["pending"], 16) == 0 and int(status["queued"], 16) == 0:
                break
            time.sleep(0.2)
        print(f"geth_amsterdam: round {b + 1}/{blocks}: {txs} transactions mined in "
              f"{time.time() - start:.1f} s", file=sys.stderr)
    return {"store": store, "forward": forward}, {}


def rlp_items(data):
    """The entries of an export file, each decoded (nested lists of bytes)."""
    from rlp.codec import consume_length_prefix
    pos, out = 0, []
    while pos < len(data):
        _, _, length, start = consume_length_prefix(data, pos)
        out.append(rlp.decode(data[pos:start + length]))
        pos = start + length
    return out


def qty(b):
    """An RLP integer (big-endian bytes) as a JSON quantity."""
    return hex(int.from_bytes(b, "big"))


def bal_json(bal):
    """An EIP-7928 BAL decoded from RLP ([address, storageChanges, storageReads,
    balanceChanges, nonceChanges, codeChanges] per account) in the fixtures' JSON form."""
    out = []
    for address, storage, reads, balances, nonces, codes in bal:
        out.append({
            "address": "0x" + address.hex(),
            "nonceChanges": [{"blockAccessIndex": qty(i), "postNonce": qty(v)} for i, v in nonces],
            "balanceChanges": [{"blockAccessIndex": qty(i), "postBalance": qty(v)} for i, v in balances],
            "codeChanges": [{"blockAccessIndex": qty(i), "newCode": "0x" + c.hex()} for i, c in codes],
            "storageChanges": [{"slot": qty(slot), "slotChanges": [
                {"blockAccessIndex": qty(i), "postValue": qty(v)} for i, v in changes]}
                for slot, changes in storage],
            "storageReads": [qty(slot) for slot in reads],
        })
    return out


def header_json(b):
    """A JSON-RPC block's header in BlockchainTests' `blockHeader` form (geth's btHeader)."""
    h = {"bloom": b["logsBloom"], "coinbase": b["miner"], "mixHash": b["mixHash"],
         "nonce": b["nonce"], "number": b["number"], "hash": b["hash"],
         "parentHash": b["parentHash"], "receiptTrie": b["receiptsRoot"],
         "stateRoot": b["stateRoot"], "transactionsTrie": b["transactionsRoot"],
         "uncleHash": b["sha3Uncles"], "extraData": b["extraData"],
         "difficulty": b["difficulty"], "gasLimit": b["gasLimit"], "gasUsed": b["gasUsed"],
         "timestamp": b["timestamp"]}
    for rpc, name in [("baseFeePerGas", "baseFeePerGas"), ("withdrawalsRoot", "withdrawalsRoot"),
                      ("blobGasUsed", "blobGasUsed"), ("excessBlobGas", "excessBlobGas"),
                      ("parentBeaconBlockRoot", "parentBeaconBlockRoot"),
                      ("requestsHash", "requestsHash"),
                      ("blockAccessListHash", "blockAccessListHash"), ("slotNumber", "slotNumber")]:
        if b.get(rpc) is not None:
            h[name] = b[rpc]
    return h


def write_fixture(path, name, genesis, headers, export):
    """The chain as one BlockchainTests fixture (module doc)."""
    entries = rlp_items(export)
    blocks = []
    for entry, header in zip(entries, headers[1:]):
        block = {"rlp": "0x" + rlp.encode(entry[:4]).hex(), "blockHeader": header_json(header),
                 "transactions": [], "uncleHeaders": [], "withdrawals": []}
        if len(entry) > 4:
            block["blockAccessList"] = bal_json(entry[4])
        blocks.append(block)
    pre = {}
    for address, account in genesis["alloc"].items():
        address = address if address.startswith("0x") else "0x" + address
        pre[address.lower()] = {"balance": hex(int(account.get("balance", "0x0"), 16)),
                                "nonce": hex(int(account.get("nonce", "0x0"), 16)),
                                "code": account.get("code", "0x"),
                                "storage": account.get("storage", {})}
    g = headers[0]
    network = "Amsterdam" if "amsterdamTime" in genesis["config"] else "BPO2"
    test = {"network": network, "genesisBlockHeader": header_json(g),
            "genesisRLP": genesis_rlp(g), "pre": pre, "blocks": blocks,
            "postStateHash": headers[-1]["stateRoot"], "lastblockhash": headers[-1]["hash"],
            "sealEngine": "NoProof",
            "_info": {"comment": "built by geth 1.17.10 --dev (testing/geth_amsterdam.py)"}}
    with open(path, "w") as f:
        json.dump({name: test}, f, indent=1)


def genesis_rlp(g):
    """The genesis block's RLP from its JSON-RPC form (no transactions, ommers or withdrawals)."""
    def n(x):
        return int(x, 16)

    def b(x):
        return bytes.fromhex(x[2:])
    fields = [b(g["parentHash"]), b(g["sha3Uncles"]), b(g["miner"]), b(g["stateRoot"]),
              b(g["transactionsRoot"]), b(g["receiptsRoot"]), b(g["logsBloom"]), n(g["difficulty"]),
              n(g["number"]), n(g["gasLimit"]), n(g["gasUsed"]), n(g["timestamp"]), b(g["extraData"]),
              b(g["mixHash"]), b(g["nonce"]), n(g["baseFeePerGas"]), b(g["withdrawalsRoot"]),
              n(g["blobGasUsed"]), n(g["excessBlobGas"]), b(g["parentBeaconBlockRoot"]),
              b(g["requestsHash"])]
    for key in ("blockAccessListHash",):
        if g.get(key) is not None:
            fields.append(b(g[key]))
    if g.get("slotNumber") is not None:
        fields.append(n(g["slotNumber"]))
    header = rlp.encode(fields)
    if "0x" + keccak(header).hex() != g["hash"]:
        raise SystemExit(f"geth_amsterdam: genesis header re-encoded to another hash than {g['hash']}")
    return "0x" + rlp.encode([rlp.decode(header), [], [], []]).hex()


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", required=True, help="output folder: genesis.json, chain.rlp, summary.json")
    ap.add_argument("--geth", help="geth binary (default: testing/geth_install.sh)")
    ap.add_argument("--load", choices=["coverage", "heavy"], default="coverage")
    ap.add_argument("--fork", choices=["amsterdam", "osaka"], default="amsterdam",
                    help="heavy: the chain's fork (osaka: Osaka with BPO1 and BPO2, no BALs)")
    ap.add_argument("--blocks", type=int, default=20, help="heavy: rounds (about one block each)")
    ap.add_argument("--txs", type=int, default=400, help="heavy: transactions a round")
    ap.add_argument("--senders", type=int, default=64, help="funded keys")
    ap.add_argument("--gas-limit", type=int, default=300_000_000, help="block gas limit")
    ap.add_argument("--period", type=int, default=2, help="seconds between geth's blocks")
    ap.add_argument("--json", action="store_true", help="print the summary as JSON")
    args = ap.parse_args()
    if not args.geth:
        folder = subprocess.run([os.path.join(ROOT, "testing/geth_install.sh")], check=True,
                                capture_output=True, text=True).stdout.strip().splitlines()[-1]
        args.geth = os.path.join(folder, "geth")
    senders = max(args.senders, 14)
    os.makedirs(args.out, exist_ok=True)
    if args.load == "coverage" and args.fork != "amsterdam":
        raise SystemExit("geth_amsterdam: the coverage load exercises Amsterdam's rules: --fork amsterdam")
    genesis = make_genesis(args.geth, args.gas_limit, senders, args.fork)
    genesis_path = os.path.join(args.out, "genesis.json")
    with open(genesis_path, "w") as f:
        json.dump(genesis, f, indent=1)
    work = tempfile.mkdtemp(prefix="geth-amsterdam-")
    try:
        subprocess.run([args.geth, "init", "--datadir", work, genesis_path], check=True,
                       capture_output=True)
        geth = Geth(args.geth, work, args.period, args.gas_limit)
        try:
            s = Sender(geth, senders)
            if args.load == "coverage":
                deployed, receipts = coverage_load(s)
            else:
                deployed, receipts = heavy_load(s, args.blocks, args.txs)
            kinds = dict(s.kinds)
            head = int(geth.rpc("eth_blockNumber"), 16)
            # One more block so that the last transactions' block is not the head being built.
            time.sleep(args.period + 0.5)
            head = int(geth.rpc("eth_blockNumber"), 16)
            head_hash = geth.rpc("eth_getBlockByNumber", hex(head), False)["hash"]
            headers = [geth.rpc("eth_getBlockByNumber", hex(n), False) for n in range(0, head + 1)]
            tx_count = sum(len(h["transactions"]) for h in headers)
            gas = sum(int(h["gasUsed"], 16) for h in headers)
        finally:
            geth.stop()
        chain = os.path.join(args.out, "chain.rlp")
        if os.path.exists(chain):
            os.remove(chain)
        subprocess.run([args.geth, "export", "--datadir", work, chain, "1", str(head)], check=True,
                       capture_output=True)
        with open(chain, "rb") as f:
            write_fixture(os.path.join(args.out, "fixture.json"), f"geth_amsterdam_{args.load}",
                          genesis, headers, f.read())
        failed = sorted({kinds.get(h, h) for h, r in receipts.items() if r["status"] != "0x1"})
        by_kind = {}
        for h, r in receipts.items():
            k = kinds.get(h, "?")
            by_kind.setdefault(k, []).append({"block": int(r["blockNumber"], 16),
                                              "gasUsed": int(r["gasUsed"], 16),
                                              "status": int(r["status"], 16)})
        summary = {"load": args.load, "fork": args.fork, "head": head, "head_hash": head_hash,
                   "transactions": sum(len(v) for v in by_kind.values()) or tx_count, "failed": failed, "deployed": deployed,
                   "gas_limit": args.gas_limit, "gas_used": gas, "by_kind": by_kind if args.load == "coverage" else None}
        with open(os.path.join(args.out, "summary.json"), "w") as f:
            json.dump(summary, f, indent=1)
        if args.json:
            print(json.dumps(summary, indent=1))
        else:
            print(f"geth_amsterdam: {head} blocks, {summary['transactions']} transactions, {gas / 1e6:.1f} Mgas, head {head_hash}; "
                  f"{len(failed)} kinds reverted: {failed}; {args.out}")
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
