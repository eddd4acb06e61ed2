#!/usr/bin/env node
// A subscription across a reorg through viem 2 (npm), one JSON document out.
//
// Usage: node reorg_viem.mjs --http URL --ws URL --key HEX --control URL [--lib DIR]
//            [--timeout S] [--settle S]
//
// The same steps, names and answers as reorg_web3py.py (see its docstring: the harness builds
// the blocks when asked at --control, block numbers stay literal, hashes are named H, A, B),
// each through viem's own actions: a wallet client with a local account (deployContract,
// writeContract: signed here, sent raw), waitForTransactionReceipt, and over the webSocket
// transport watchBlocks (eth_subscribe newHeads, each head formatted as a block) and
// watchContractEvent (eth_subscribe logs of the address and the event's topic; each log
// decoded, its `removed` flag kept), unwatched at the end.

import { Flow, PINGER, REORG_LITERAL, REORG_WS_STEPS, buildUntil, labels, library, norm, normBlock, openWebSocket, parse, plain, sibling, sleep, state, waitFor } from "./common.mjs";

const args = parse();
const viem = library("viem", args.lib);
const { privateKeyToAccount } = library("viem/accounts", args.lib);
const flow = new Flow(args.timeout);
const abi = PINGER.abi;

const account = privateKeyToAccount(args.key);
// The chain is the node's: its id is asked first (a dapp names a chain it knows).
const bare = viem.createPublicClient({ transport: viem.http(args.http) });
const chain = viem.defineChain({
  id: await bare.getChainId(),
  name: "dev",
  nativeCurrency: { name: "Ether", symbol: "ETH", decimals: 18 },
  rpcUrls: { default: { http: [args.http], webSocket: args.ws ? [args.ws] : [] } },
});
const pollingInterval = 250; // the default 4 s only slows the waits down
const client = viem.createPublicClient({ chain, transport: viem.http(args.http), pollingInterval });
const wallet = viem.createWalletClient({ account, chain, transport: viem.http(args.http), pollingInterval });
const st = state(); // what later steps need
const label = labels();
const literal = (x) => norm(x, false, undefined, REORG_LITERAL);
const contract = () => ({ address: st.address, abi });

/** Blocks asked of the harness until one holds `hash` (three at most); its receipt and the
 * block as the harness answered it. */
async function included(hash) {
  const block = await buildUntil(args.control, hash);
  return { receipt: await client.waitForTransactionReceipt({ hash, timeout: args.timeout, pollingInterval }), block };
}

await flow.step("reorg: deploy", async () => {
  const { receipt } = await included(await wallet.deployContract({ abi, bytecode: PINGER.bytecode }));
  st.address = receipt.contractAddress;
  return literal(receipt);
});

const probe = args.ws
  ? await openWebSocket(args.ws, args.timeout, args.lib).catch((e) => flow.fail(REORG_WS_STEPS, e))
  : flow.fail(REORG_WS_STEPS, new Error("no --ws"));
if (probe) {
  probe.close();
  const ws = viem.createPublicClient({ chain, transport: viem.webSocket(args.ws) });
  const heads = [];
  const events = [];

  await flow.step("reorg: subscribe", async () => {
    const onError = (e) => console.error("subscription error:", e);
    const unwatchBlocks = ws.watchBlocks({ onBlock: (b) => heads.push(b), onError });
    const unwatchLogs = ws.watchContractEvent({ ...contract(), eventName: "Ping", onLogs: (logs) => events.push(...logs), onError });
    st.unwatch = () => {
      unwatchBlocks();
      unwatchLogs();
    };
    await sleep(1000); // the subscriptions are made asynchronously
    return { subscribed: ["newHeads", "logs"] };
  });

  await flow.step("reorg: ping", async () => {
    st.unwatch; // no subscription, no step
    st.ping = await wallet.writeContract({ ...contract(), functionName: "ping", args: [7n] });
    const { receipt, block } = await included(st.ping);
    label.set(block.parent_hash, "H");
    label.set(block.hash, "A");
    await waitFor(events, args.timeout, "log notification for the ping");
    const parsed = viem.parseEventLogs({ abi, logs: receipt.logs }).map((e) => ({ eventName: e.eventName, args: plain(e.args) }));
    return { block: label(receipt.blockHash), receipt: literal(receipt), events: parsed };
  });

  await flow.step("reorg: sibling", async () => {
    const ping = st.ping; // no ping, no reorg
    return await sibling(args.control, label, ping);
  });
  await sleep(args.settle);

  await flow.step("reorg: after", async () => {
    const receipt = await client.getTransactionReceipt({ hash: st.ping }).catch((e) => {
      if (e instanceof viem.TransactionReceiptNotFoundError) return null;
      throw e;
    });
    const tx = await client.getTransaction({ hash: st.ping }).catch((e) => {
      if (e instanceof viem.TransactionNotFoundError) return null;
      throw e;
    });
    const head = await client.getBlock({ blockTag: "latest" });
    const counter = await client.readContract({ ...contract(), functionName: "counter" });
    return {
      receipt: receipt && { block: label(receipt.blockHash), blockNumber: plain(receipt.blockNumber), status: receipt.status, logs: receipt.logs.length },
      transaction: tx && { block: label(tx.blockHash), blockNumber: plain(tx.blockNumber) },
      counter: plain(counter),
      head: { number: plain(head.number), block: label(head.hash) },
    };
  });

  await flow.step("reorg: new_heads", async () => {
    st.unwatch;
    return heads.map((h) => ({ number: plain(h.number), block: label(h.hash), parent: label(h.parentHash), head: normBlock(h, REORG_LITERAL) }));
  });

  await flow.step("reorg: logs", async () => {
    st.unwatch;
    return events.map((l) => ({
      removed: l.removed,
      block: label(l.blockHash),
      blockNumber: plain(l.blockNumber),
      args: plain(l.args),
      log: literal(l),
    }));
  });

  await flow.step("reorg: unsubscribe", async () => {
    st.unwatch();
    await sleep(300); // unwatch sends eth_unsubscribe without waiting for it
    return { unsubscribed: true };
  });
}

flow.print();
process.exit(0);
