#!/usr/bin/env node
// A subscription across a reorg through ethers 6 (npm), one JSON document out.
//
// Usage: node reorg_ethers.mjs --http URL --ws URL --key HEX --control URL [--lib DIR]
//            [--timeout S] [--settle S]
//
// The same steps, names and answers as reorg_web3py.py (see its docstring: the harness builds
// the blocks when asked at --control, block numbers stay literal, hashes are named H, A, B),
// each through ethers' own API: Wallet and ContractFactory / Contract (populated, signed
// here, sent raw), WebSocketProvider's on("block") (eth_subscribe newHeads: ethers hands the
// listener the block number alone) and a Contract on it, contract.on("Ping") (eth_subscribe
// logs of the address and the event's topic; the listener gets the decoded arguments and the
// log), off() for both. ethers passes a log notification with removed=true on to the listeners
// of the log's removedEvent() (its "orphan" event) instead of the event's; the flow listens
// there too, but ethers 6.17.0 calls neither (the orphan subscription it looks up is keyed by
// the whole notified log, the one removedEvent() registers by a subset of its fields), so that
// through ethers a reorg shows as the log of A and then the log of B, no removal between.

import { Flow, PINGER, REORG_LITERAL, REORG_WS_STEPS, buildUntil, labels, library, norm, openWebSocket, parse, plain, sibling, sleep, state, waitFor } from "./common.mjs";

const args = parse();
const ethers = library("ethers", args.lib);
const flow = new Flow(args.timeout);

const provider = new ethers.JsonRpcProvider(args.http);
provider.pollingInterval = 250; // the default 4 s only slows the waits down
const wallet = new ethers.Wallet(args.key, provider);
const iface = new ethers.Interface(PINGER.abi);
const st = state(); // what later steps need
const label = labels();
const literal = (x) => norm(x, false, undefined, REORG_LITERAL);

/** Blocks asked of the harness until one holds `hash` (three at most); its receipt and the
 * block as the harness answered it. */
async function included(hash) {
  const block = await buildUntil(args.control, hash);
  return { receipt: await provider.waitForTransaction(hash, 1, args.timeout), block };
}

await flow.step("reorg: deploy", async () => {
  const factory = new ethers.ContractFactory(PINGER.abi, PINGER.bytecode, wallet);
  const contract = await factory.deploy();
  const { receipt } = await included(contract.deploymentTransaction().hash);
  st.address = receipt.contractAddress;
  return literal(receipt);
});

const probe = args.ws
  ? await openWebSocket(args.ws, args.timeout, args.lib).catch((e) => flow.fail(REORG_WS_STEPS, e))
  : flow.fail(REORG_WS_STEPS, new Error("no --ws"));
if (probe) {
  probe.close();
  const ws = new ethers.WebSocketProvider(args.ws);
  const heads = [];
  const events = [];
  const onBlock = (n) => heads.push(n);

  await flow.step("reorg: subscribe", async () => {
    const contract = new ethers.Contract(st.address, PINGER.abi, ws);
    await ws.on("block", onBlock);
    await contract.on("Ping", (from, value, ev) => {
      events.push({ from, value, log: ev.log });
      // ethers hands a log notification with removed=true to the listeners of the log's
      // removedEvent() (an "orphan" event), never to the event's (ethers 6.17.0 calls neither:
      // see the head of this file).
      ws.once(ev.log.removedEvent(), (log) => events.push({ from, value, log }));
    });
    st.wsContract = contract;
    await sleep(1000); // the subscriptions are made asynchronously
    return { subscribed: ["newHeads", "logs"] };
  });

  await flow.step("reorg: ping", async () => {
    st.wsContract; // no subscription, no step
    const tx = await new ethers.Contract(st.address, PINGER.abi, wallet).ping(7);
    st.ping = tx.hash;
    const { receipt, block } = await included(tx.hash);
    label.set(block.parent_hash, "H");
    label.set(block.hash, "A");
    await waitFor(events, args.timeout, "log notification for the ping");
    const parsed = receipt.logs.map((l) => iface.parseLog(l)).map((e) => ({ name: e.name, args: plain([...e.args]) }));
    return { block: label(receipt.blockHash), receipt: literal(receipt), events: parsed };
  });

  await flow.step("reorg: sibling", async () => {
    const ping = st.ping; // no ping, no reorg
    return await sibling(args.control, label, ping);
  });
  await sleep(args.settle);

  await flow.step("reorg: after", async () => {
    const receipt = await provider.getTransactionReceipt(st.ping);
    const tx = await provider.getTransaction(st.ping);
    const head = await provider.getBlock("latest");
    const counter = await new ethers.Contract(st.address, PINGER.abi, provider).counter();
    return {
      receipt: receipt && { block: label(receipt.blockHash), blockNumber: receipt.blockNumber, status: receipt.status, logs: receipt.logs.length },
      transaction: tx && { block: label(tx.blockHash), blockNumber: tx.blockNumber },
      counter: plain(counter),
      head: { number: head.number, block: label(head.hash) },
    };
  });

  await flow.step("reorg: new_heads", async () => {
    st.wsContract;
    return heads;
  });

  await flow.step("reorg: logs", async () => {
    st.wsContract;
    return events.map((e) => ({
      removed: e.log.removed,
      block: label(e.log.blockHash),
      blockNumber: e.log.blockNumber,
      args: { from: e.from, value: plain(e.value) },
      log: literal(e.log),
    }));
  });

  await flow.step("reorg: unsubscribe", async () => {
    await ws.off("block", onBlock);
    await st.wsContract.off("Ping");
    await sleep(500); // off() sends eth_unsubscribe without waiting for it
    return { unsubscribed: true };
  });
  ws.destroy();
}

flow.print();
provider.destroy();
process.exit(0);
