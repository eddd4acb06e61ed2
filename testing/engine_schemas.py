#!/usr/bin/env python3
"""Checks the JSON of gigagas's Engine API answers against the execution-apis OpenRPC schemas.

The schemas are ethereum/execution-apis at 033ca6e6 (CC0), merged into
testing/execution-apis/engine-openrpc.json: every `components.schemas` entry and each engine
method's result schema. The script starts `gigagas node` (no `--dev`) on four chains made from
testing/dev-genesis.json — Paris then Shanghai, Cancun then Prague, Osaka, Amsterdam — drives
each over the authenticated Engine API (JWT HS256), one block per fork through
`engine_forkchoiceUpdated` with attributes, `engine_getPayload`, `engine_newPayload` and a
forkchoice update to it, with a blob transaction in the Prague, Osaka and Amsterdam blocks
(eth-account and python `ckzg`), and validates every answer (capabilities, client version,
forkchoice responses, payload envelopes V1–V6 with their blobs bundles, payload statuses,
payload bodies V1/V2, blobs V1/V2) with `jsonschema`.

Two readings are needed. The schemas type `latestValidHash`, `validationError` and `payloadId`
as non-null although the spec text and the schemas' own examples answer `null`; an optional
property whose value is `null` is therefore left out before validation. Required properties
are checked as they are. And `engine_getPayloadV2`'s `executionPayload` is `oneOf` V1 and V2,
which no V2 payload can satisfy (V1 allows more properties, so it matches both): read as `anyOf`.

Usage: python3 testing/engine_schemas.py [--gigagas target/release/gigagas] [--json]
Exit status 0 only when every answer validates.
"""

import argparse
import hashlib
import json
import os
import shutil
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from devnet import CHAIN_ID, FUNDED_KEYS, GWEI  # noqa: E402
from gigagas_testing import GigagasNode  # noqa: E402

try:
    import ckzg
    import eth_account
    import jsonschema
    import referencing
    import rlp
    from eth_account import Account
except ImportError:
    raise SystemExit("engine_schemas: eth-account and jsonschema are needed (make devnet-deps)")

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
TRUSTED_SETUP = os.path.join(os.path.dirname(eth_account.__file__),
                             "typed_transactions/blob_transactions/kzg_trusted_setup.txt")
FORKS = ["shanghaiTime", "cancunTime", "pragueTime", "osakaTime", "amsterdamTime"]


class Node(GigagasNode):
    """`gigagas node` (no gossip) on a genesis whose fork times are `times` (None removes the
    fork), in a fresh folder; `tip` is the hash of the block the next payload builds on."""

    def __init__(self, gigagas, times):
        self.dir = tempfile.mkdtemp(prefix="gigagas-schemas-")
        with open(os.path.join(ROOT, "testing/dev-genesis.json")) as f:
            genesis = json.load(f)
        for fork, t in zip(FORKS, times):
            if t is None:
                genesis["config"].pop(fork, None)
            else:
                genesis["config"][fork] = t
        path = os.path.join(self.dir, "genesis.json")
        with open(path, "w") as f:
            json.dump(genesis, f)
        super().__init__(gigagas, os.path.join(self.dir, "data"),
                         ["--chain", path, "--port", "0", "--gossip", "none"])
        self.tip = self.rpc("eth_getBlockByNumber", "0x0", False)["hash"]

    def stop(self):
        super().stop()
        shutil.rmtree(self.dir, ignore_errors=True)


def blob_tx(nonce, cell_proofs):
    """A signed transaction of one blob in the network form of the fork: EIP-7594 (cell proofs,
    as eth-account 0.14 signs) or EIP-4844 (one proof a blob, rebuilt with ckzg)."""
    data = bytearray(os.urandom(131072))
    data[0::32] = bytes(4096)
    tx = {"type": 3, "chainId": CHAIN_ID, "nonce": nonce, "to": "0x" + "42" * 20, "value": 0,
          "gas": 21_000, "maxFeePerGas": 30 * GWEI, "maxPriorityFeePerGas": GWEI,
          "maxFeePerBlobGas": 10 * GWEI}
    raw = bytes(Account.from_key(FUNDED_KEYS[0]).sign_transaction(tx, blobs=[bytes(data)]).raw_transaction)
    fields = rlp.decode(raw[1:])
    if len(fields) == 4:
        body, blobs, commitments, _ = fields
    else:
        body, _version, blobs, commitments, _ = fields
    kzg = ckzg.load_trusted_setup(TRUSTED_SETUP, 0)
    if cell_proofs:
        proofs = [p for b in blobs for p in ckzg.compute_cells_and_kzg_proofs(b, kzg)[1]]
        return b"\x03" + rlp.encode([body, b"\x01", blobs, commitments, proofs])
    proofs = [ckzg.compute_blob_kzg_proof(b, c, kzg) for b, c in zip(blobs, commitments)]
    return b"\x03" + rlp.encode([body, blobs, commitments, proofs])


class Checker:
    def __init__(self):
        with open(os.path.join(ROOT, "testing/execution-apis/engine-openrpc.json")) as f:
            spec = json.load(f)
        self.results = spec["results"]
        root = {"components": spec["components"]}
        resource = referencing.Resource.from_contents(root, referencing.jsonschema.DRAFT7)
        self.registry = referencing.Registry().with_resource("spec", resource)
        self.checked = {}
        self.failures = []

    def check(self, method, answer):
        schema = self.results[method]
        if method == "engine_getPayloadV2":
            # `oneOf: [ExecutionPayloadV1, ExecutionPayloadV2]`: V1 allows more properties, so a
            # V2 payload matches both and `oneOf` can never hold for it; read as `anyOf`.
            schema = json.loads(json.dumps(schema).replace('"oneOf"', '"anyOf"'))
        validator = jsonschema.Draft7Validator(self._rebase(schema), registry=self.registry)
        errors = [f"{'/'.join(map(str, e.absolute_path))}: {e.message[:200]}"
                  for e in validator.iter_errors(drop_optional_nulls(answer))]
        self.checked[method] = self.checked.get(method, 0) + 1
        if errors:
            self.failures.append(f"{method}: {errors[:3]}")
        return answer

    def _rebase(self, schema):
        """`#/components/...` references resolved in the merged spec document."""
        text = json.dumps(schema).replace('"#/components/', '"spec#/components/')
        return json.loads(text)


def drop_optional_nulls(value):
    if isinstance(value, dict):
        return {k: drop_optional_nulls(v) for k, v in value.items()
                if v is not None or k in ("withdrawals", "blockAccessList")}
    if isinstance(value, list):
        return [drop_optional_nulls(v) for v in value]
    return value


def attributes(version, timestamp):
    a = {"timestamp": hex(timestamp), "prevRandao": "0x" + "09" * 32,
         "suggestedFeeRecipient": "0x" + "fe" * 20}
    if version >= 2:
        a["withdrawals"] = [{"index": "0x0", "validatorIndex": "0x1", "address": "0x" + "ab" * 20,
                             "amount": "0x64"}]
    if version >= 3:
        a["parentBeaconBlockRoot"] = "0x" + "07" * 32
    if version >= 4:
        a["slotNumber"] = hex(timestamp)
    return a


def block(node, c, fcu, get, new, timestamp, blob=None):
    """One block through the Engine API, every answer validated; returns the payload."""
    hashes = []
    if blob is not None:
        node.rpc("eth_sendRawTransaction", "0x" + blob.hex())
    state = {"headBlockHash": node.tip, "safeBlockHash": node.tip, "finalizedBlockHash": node.tip}
    answer = c.check(f"engine_forkchoiceUpdatedV{fcu}",
                     node.engine(f"engine_forkchoiceUpdatedV{fcu}", state, attributes(fcu, timestamp)))
    envelope = c.check(f"engine_getPayloadV{get}", node.engine(f"engine_getPayloadV{get}", answer["payloadId"]))
    payload = envelope if get == 1 else envelope["executionPayload"]
    if blob is not None:
        assert len(envelope["blobsBundle"]["blobs"]) == 1, "the blob is in the bundle"
        commitment = bytes.fromhex(envelope["blobsBundle"]["commitments"][0][2:])
        hashes = ["0x01" + hashlib.sha256(commitment).hexdigest()[2:]]
        blobs_method = "engine_getBlobsV2" if get >= 5 else "engine_getBlobsV1"
        c.check(blobs_method, node.engine(blobs_method, hashes))
    params = [payload]
    if new >= 3:
        params += [hashes, "0x" + "07" * 32]
    if new >= 4:
        params.append(envelope["executionRequests"])
    status = c.check(f"engine_newPayloadV{new}", node.engine(f"engine_newPayloadV{new}", *params))
    if status["status"] != "VALID":
        c.failures.append(f"engine_newPayloadV{new} at {timestamp}: {status}")
    state = {"headBlockHash": payload["blockHash"], "safeBlockHash": payload["blockHash"],
             "finalizedBlockHash": payload["blockHash"]}
    c.check(f"engine_forkchoiceUpdatedV{fcu}", node.engine(f"engine_forkchoiceUpdatedV{fcu}", state))
    node.tip = payload["blockHash"]
    return payload


def bodies(node, c, version, hashes):
    c.check(f"engine_getPayloadBodiesByRangeV{version}",
            node.engine(f"engine_getPayloadBodiesByRangeV{version}", "0x1", hex(len(hashes))))
    c.check(f"engine_getPayloadBodiesByHashV{version}",
            node.engine(f"engine_getPayloadBodiesByHashV{version}", hashes))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--gigagas", default=os.path.join(ROOT, "target/release/gigagas"))
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()
    c = Checker()
    chains = [
        # Paris, then Shanghai at 10.
        ([10, None, None, None, None], [(1, 1, 1, 1, None), (2, 2, 2, 11, None)], 1),
        # Cancun, then Prague at 10 (a blob: one proof a blob).
        ([0, 0, 10, None, None], [(3, 3, 3, 1, False), (3, 4, 4, 11, False)], 1),
        # Osaka (cell proofs).
        ([0, 0, 0, 0, None], [(3, 5, 4, 1, True)], 1),
        # Amsterdam (bal-devnet rules with Osaka).
        ([0, 0, 0, 0, 0], [(4, 6, 5, 1, True)], 2),
    ]
    for times, steps, body_version in chains:
        node = Node(args.gigagas, times)
        try:
            c.check("engine_exchangeCapabilities", node.engine("engine_exchangeCapabilities", []))
            nonce, hashes = 0, []
            for fcu, get, new, t, cells in steps:
                blob = None if cells is None else blob_tx(nonce, cells)
                nonce += blob is not None
                hashes.append(block(node, c, fcu, get, new, t, blob)["blockHash"])
            bodies(node, c, body_version, hashes)
            if body_version == 2:
                bodies(node, c, 1, hashes)
        except Exception as e:  # noqa: BLE001 - reported
            c.failures.append(f"chain {times}: {e}")
        finally:
            node.stop()
    summary = {"checked": c.checked, "failures": c.failures, "ok": not c.failures}
    print(json.dumps(summary, indent=1) if args.json else
          "\n".join([f"  {m:40} {n}" for m, n in sorted(c.checked.items())] + [f"FAIL {f}" for f in c.failures]))
    print("engine-schemas: OK" if not c.failures else "engine-schemas: FAILED", file=sys.stderr)
    return 0 if not c.failures else 1


if __name__ == "__main__":
    sys.exit(main())
