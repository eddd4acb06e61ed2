"""The consensus driver of compare.py's reorg scenario: the harness builds the blocks of a node
run without `--dev` over its authenticated Engine API, and serves the flows a tiny HTTP endpoint
to ask for them.

`Driver(node)` drives one node (a gigagas_testing `GigagasNode` or `GethNode`: its `engine()`
call carries the JWT) on an Amsterdam chain (testing/dev-genesis.json), as a consensus client
would, with the V4/V5/V6 methods of Amsterdam:
  build()  a block on the head: `engine_forkchoiceUpdatedV4` on the head with payload
           attributes, a slot's wait (`slot` seconds, so that a builder that fills its payload
           in the background, as geth's does, has taken the pool's transactions), then
           `engine_getPayloadV6`, `engine_newPayloadV5` and `engine_forkchoiceUpdatedV4` to
           the new block;
  reorg()  a sibling of the head: `engine_forkchoiceUpdatedV4` back to the head's parent
           (the reorg: the head is taken out, one block deep), half a second, then a block
           built on the parent as by build(), with a later timestamp and another fee recipient
           (so that the sibling differs from the head whatever it holds), the forkchoice moved
           to it.
Safe and finalized stay the zero hash (nothing final, so the reorg is allowed). Every block's
`prevRandao`, parent beacon block root and (empty) withdrawals are fixed; the timestamp is the
wall clock (at least the parent's + 1), the slot number is the timestamp.

`ControlServer(driver)` serves, on a free loopback port (`url`), `POST /build` and
`POST /reorg`, each answering the new block as JSON once the node has it as its head:
  {"number": N, "hash": H, "parent_hash": P, "replaced": HASH|null, "fee_recipient": A,
   "transactions": [hashes of the block's transactions]}
(`replaced`: the head the reorg took out), or HTTP 500 with {"error": TEXT}. The flows
(reorg_web3py.py, reorg_ethers.mjs, reorg_viem.mjs) call it with a plain HTTP POST.
"""

import json
import os
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
from gigagas_testing import free_port  # noqa: E402

ZERO_HASH = "0x" + "00" * 32
PREV_RANDAO = "0x" + "5a" * 32
BEACON_ROOT = "0x" + "be" * 32
FEE_RECIPIENT = "0x" + "fe" * 20
SIBLING_FEE_RECIPIENT = "0x" + "b0" * 20
# Seconds between the forkchoice's move back to the head's parent and the sibling's build.
REWIND_SETTLE = 0.5


class Driver:
    """Builds `node`'s blocks over the Engine API (see the module). One call at a time."""

    def __init__(self, node, slot=2.5):
        self.node = node
        self.slot = slot
        self.lock = threading.Lock()

    def _block(self, tag_or_hash):
        if tag_or_hash.startswith("0x"):
            return self.node.rpc("eth_getBlockByHash", tag_or_hash, False)
        return self.node.rpc("eth_getBlockByNumber", tag_or_hash, False)

    def _build_on(self, parent, timestamp, fee_recipient):
        """A block on `parent` (a block of eth_getBlock*) made the head; its JSON-RPC block."""
        attributes = {"timestamp": hex(timestamp), "prevRandao": PREV_RANDAO,
                      "suggestedFeeRecipient": fee_recipient, "withdrawals": [],
                      "parentBeaconBlockRoot": BEACON_ROOT, "slotNumber": hex(timestamp)}
        state = {"headBlockHash": parent["hash"], "safeBlockHash": ZERO_HASH,
                 "finalizedBlockHash": ZERO_HASH}
        answer = self.node.engine("engine_forkchoiceUpdatedV4", state, attributes)
        if answer["payloadStatus"]["status"] != "VALID" or not answer.get("payloadId"):
            raise RuntimeError(f"engine_forkchoiceUpdatedV4 on {parent['hash']}: {answer}")
        time.sleep(self.slot)
        envelope = self.node.engine("engine_getPayloadV6", answer["payloadId"])
        payload = envelope["executionPayload"]
        status = self.node.engine("engine_newPayloadV5", payload, [], BEACON_ROOT,
                                  envelope.get("executionRequests") or [])
        if status["status"] != "VALID":
            raise RuntimeError(f"engine_newPayloadV5 of {payload['blockHash']}: {status}")
        state = {"headBlockHash": payload["blockHash"], "safeBlockHash": ZERO_HASH,
                 "finalizedBlockHash": ZERO_HASH}
        answer = self.node.engine("engine_forkchoiceUpdatedV4", state, None)
        if answer["payloadStatus"]["status"] != "VALID":
            raise RuntimeError(f"engine_forkchoiceUpdatedV4 to {payload['blockHash']}: {answer}")
        # JSON-RPC's `latest` may follow the forkchoice a moment later.
        deadline = time.time() + 5
        while (head := self._block("latest"))["hash"] != payload["blockHash"]:
            if time.time() > deadline:
                raise RuntimeError(f"the latest block is {head['hash']} 5 s after the forkchoice "
                                   f"update to {payload['blockHash']}")
            time.sleep(0.05)
        return head

    @staticmethod
    def _answer(block, replaced=None):
        txs = block["transactions"]
        return {"number": int(block["number"], 16), "hash": block["hash"],
                "parent_hash": block["parentHash"], "replaced": replaced,
                "fee_recipient": block["miner"],
                "transactions": [t if isinstance(t, str) else t["hash"] for t in txs]}

    def build(self):
        with self.lock:
            head = self._block("latest")
            timestamp = max(int(time.time()), int(head["timestamp"], 16) + 1)
            return self._answer(self._build_on(head, timestamp, FEE_RECIPIENT))

    def reorg(self):
        with self.lock:
            head = self._block("latest")
            if int(head["number"], 16) == 0:
                raise RuntimeError("no block to reorg out: the head is the genesis")
            parent = self._block(head["parentHash"])
            # The forkchoice first moves back to the parent alone (the reorg: the head's
            # transactions go back to the pool), then the sibling is built on it. A builder
            # that fills its payload once, when the attributes come, as gigagas's does, thus
            # sees the pool after the reorg as geth's, which refills it every 2 s, does.
            state = {"headBlockHash": parent["hash"], "safeBlockHash": ZERO_HASH,
                     "finalizedBlockHash": ZERO_HASH}
            answer = self.node.engine("engine_forkchoiceUpdatedV4", state, None)
            if answer["payloadStatus"]["status"] != "VALID":
                raise RuntimeError(f"engine_forkchoiceUpdatedV4 to {parent['hash']}: {answer}")
            time.sleep(REWIND_SETTLE)
            timestamp = max(int(time.time()), int(head["timestamp"], 16) + 1)
            block = self._build_on(parent, timestamp, SIBLING_FEE_RECIPIENT)
            return self._answer(block, replaced=head["hash"])


class ControlServer:
    """`POST /build` and `POST /reorg` for `driver` on a free loopback port (see the module)."""

    def __init__(self, driver):
        actions = {"/build": driver.build, "/reorg": driver.reorg}

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self):  # noqa: N802 - http.server's name
                length = int(self.headers.get("Content-Length") or 0)
                if length:
                    self.rfile.read(length)
                action = actions.get(self.path.rstrip("/"))
                if action is None:
                    code, body = 404, {"error": f"no {self.path}: POST /build or /reorg"}
                else:
                    try:
                        code, body = 200, action()
                    except Exception as e:  # noqa: BLE001 - the flow records it
                        code, body = 500, {"error": f"{type(e).__name__}: {e}"[:1000]}
                data = json.dumps(body).encode()
                self.send_response(code)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, *args):
                pass

        port = free_port()
        self.server = ThreadingHTTPServer(("127.0.0.1", port), Handler)
        self.url = f"http://127.0.0.1:{port}"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    def close(self):
        self.server.shutdown()
        self.server.server_close()
