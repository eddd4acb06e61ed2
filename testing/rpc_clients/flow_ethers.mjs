#!/usr/bin/env node
// A dapp's everyday JSON-RPC flow through ethers 6 (npm), one JSON document out.
//
// Usage: node flow_ethers.mjs --http URL [--ws URL] --key HEX [--lib DIR] [--timeout S]
//
// The same steps, names and answers as flow_web3py.py (see its docstring and
// testing/README.md), each through ethers' own API: JsonRpcProvider (which batches concurrent
// requests into JSON-RPC batches, as it does for every dapp), Wallet (populate, sign locally,
// eth_sendRawTransaction), Contract and ContractFactory, provider.on("pending") and
// contract.on(event) over HTTP (ethers' filter subscribers: eth_newPendingTransactionFilter /
// eth_newFilter polled with eth_getFilterChanges, eth_uninstallFilter on off()), and
// WebSocketProvider's on("block"), on(filter) and on("pending") (eth_subscribe). Methods ethers
// has no call for (eth_newFilter and the filter calls themselves, eth_getHeaderByNumber, the
// uncle count, eth_call with a state override, debug_*, trace_*) go through provider.send().
// One step only ethers has: `contract_on_http` (contract.on over HTTP filters).

import { Flow, PINGER, RECIPIENTS, OVERRIDE_BALANCE_OF, OVERRIDE_CODE_AT, collect, library, norm, normBlock, openWebSocket, parse, plain, shape, sleep, state } from "./common.mjs";

const args = parse();
const ethers = library("ethers", args.lib);
const flow = new Flow(args.timeout);

const provider = new ethers.JsonRpcProvider(args.http);
provider.pollingInterval = 250; // the default 4 s only slows the waits down
const wallet = new ethers.Wallet(args.key, provider);
const me = wallet.address;
const iface = new ethers.Interface(PINGER.abi);
const st = state(); // what later steps need
const hex = (n) => ethers.toQuantity(n);
const RECIPIENT = RECIPIENTS.ethers;

async function transfer(value = 1n) {
  const tx = await wallet.sendTransaction({ to: RECIPIENT, value });
  return tx;
}

await flow.step("client_version", async () => shape(await provider.send("web3_clientVersion", [])));
await flow.step("chain_id", async () => plain((await provider.getNetwork()).chainId));
await flow.step("block_number", async () => shape(await provider.getBlockNumber()));
// eth_gasPrice (getFeeData also reads the latest block and eth_maxPriorityFeePerGas, and hides
// their failures: the gas price alone is the step).
await flow.step("gas_price", async () => shape((await provider.getFeeData()).gasPrice));
await flow.step("max_priority_fee", async () => shape(await provider.send("eth_maxPriorityFeePerGas", [])));
await flow.step("fee_history", async () => norm(await provider.send("eth_feeHistory", ["0x4", "latest", [25, 75]])));
await flow.step("balance", async () => shape(await provider.getBalance(me)));
await flow.step("nonce", async () => await provider.getTransactionCount(me));
await flow.step("accounts", async () => (Array.isArray(await provider.listAccounts()) ? "<address[]>" : null));
await flow.step("protocol_version", async () => shape(await provider.send("eth_protocolVersion", [])));

await flow.step("transfer_send", async () => {
  // Wallet style: populate (nonce, gas, EIP-1559 fees from the node), sign here, send raw.
  const populated = await wallet.populateTransaction({ to: RECIPIENT, value: 10n ** 15n, type: 2 });
  const signed = await wallet.signTransaction(populated);
  const hash = await provider.send("eth_sendRawTransaction", [signed]);
  st.transfer = hash;
  return { hash: shape(hash), is_signed_hash: hash === ethers.keccak256(signed) };
});
await flow.step("transfer_receipt", async () => norm(await provider.waitForTransaction(st.transfer, 1, args.timeout)));

await flow.step("deploy", async () => {
  const factory = new ethers.ContractFactory(PINGER.abi, PINGER.bytecode, wallet);
  const contract = await factory.deploy();
  const receipt = await contract.deploymentTransaction().wait();
  st.contract = contract;
  st.address = await contract.getAddress();
  st.deployBlock = receipt.blockNumber;
  return norm(receipt);
});
const c = () => st.contract;

await flow.step("call_view", async () => plain(await c().counter()));
await flow.step("estimate_gas", async () => plain(await c().ping.estimateGas(7)));
await flow.step("contract_send", async () => {
  st.ping = await c().ping(7);
  return shape(st.ping.hash);
});
await flow.step("contract_receipt", async () => {
  const r = await st.ping.wait();
  st.pingBlock = r.blockNumber;
  const events = r.logs.map((l) => iface.parseLog(l)).map((e) => ({ name: e.name, args: plain([...e.args]) }));
  return { receipt: norm(r), events, counter_after: plain(await c().counter()) };
});
await flow.step("call_revert", async () => {
  const contract = c(); // outside the try: no contract is no revert
  try {
    await contract.fail();
    return { reverted: false };
  } catch (e) {
    return { reverted: true, code: e.code ?? null, reason: e.reason ?? null, revert: plain(e.revert ?? null) };
  }
});
await flow.step("get_logs", async () =>
  (await c().queryFilter("Ping", st.deployBlock)).map((l) => ({ log: norm(l), args: plain([...l.args]) })),
);

// The filter methods: ethers has no call for them (its own filter use is contract_on_http).
await flow.step("log_filter_install", async () => {
  st.filter = await provider.send("eth_newFilter", [{ address: st.address, fromBlock: hex(st.deployBlock) }]);
  return shape(st.filter);
});
await flow.step("log_filter_changes", async () => {
  await (await c().ping(11)).wait();
  return norm(await provider.send("eth_getFilterChanges", [st.filter]));
});
await flow.step("log_filter_logs", async () => norm(await provider.send("eth_getFilterLogs", [st.filter])));
await flow.step("log_filter_uninstall", async () => await provider.send("eth_uninstallFilter", [st.filter]));
await flow.step("contract_on_http", async () => {
  // contract.on over HTTP: eth_newFilter, then eth_getFilterChanges every pollingInterval.
  const got = collect(1, (push) => c().on("Ping", (from, value, ev) => push({ from, value, log: ev.log })));
  await sleep(1000); // the filter is installed on the first poll
  await (await c().ping(13)).wait();
  const [e] = await got;
  await c().off("Ping");
  return { from: e.from, value: plain(e.value), log: norm(e.log) };
}, 20000); // a failed filter is only logged by ethers: the event never comes

await flow.step("block_filter", async () => {
  const id = await provider.send("eth_newBlockFilter", []);
  await (await transfer()).wait();
  const hashes = await provider.send("eth_getFilterChanges", [id]);
  return {
    new_blocks: hashes.length > 0,
    items: [...new Set(hashes.map(shape))].sort(),
    uninstalled: await provider.send("eth_uninstallFilter", [id]),
  };
});
await flow.step("pending_filter", async () => {
  // provider.on("pending") over HTTP: eth_newPendingTransactionFilter + eth_getFilterChanges.
  const seen = new Set();
  const listener = (h) => seen.add(h);
  await provider.on("pending", listener);
  await sleep(1000); // the filter is installed on the first poll
  const tx = await transfer();
  const deadline = Date.now() + 10000;
  while (!seen.has(tx.hash) && Date.now() < deadline) await sleep(200);
  await provider.off("pending", listener);
  await tx.wait();
  return { sent_seen: seen.has(tx.hash) };
}, 20000);

await flow.step("block_by_number", async () => normBlock(await provider.getBlock(st.pingBlock)));
await flow.step("block_by_number_full", async () => {
  const b = await provider.getBlock(st.pingBlock, true);
  return { block: normBlock(b), transactions: norm(b.prefetchedTransactions) };
});
await flow.step("header_by_number", async () => normBlock(await provider.send("eth_getHeaderByNumber", [hex(st.pingBlock)])));
await flow.step("transaction_by_hash", async () => norm(await provider.getTransaction(st.ping.hash)));
await flow.step("uncle_count", async () => await provider.send("eth_getUncleCountByBlockNumber", [hex(st.pingBlock)]));

await flow.step("call_balance_override", async () => {
  const data = iface.encodeFunctionData("balanceOf", [OVERRIDE_BALANCE_OF]);
  const out = await provider.send("eth_call", [{ to: st.address, data }, "latest", { [OVERRIDE_BALANCE_OF]: { balance: hex(12345) } }]);
  return plain(iface.decodeFunctionResult("balanceOf", out)[0]);
});
await flow.step("call_code_override", async () => {
  const data = iface.encodeFunctionData("counter", []);
  const override = { code: PINGER.runtime, stateDiff: { [ethers.zeroPadValue("0x00", 32)]: ethers.zeroPadValue("0x2a", 32) } };
  const out = await provider.send("eth_call", [{ to: OVERRIDE_CODE_AT, data }, "latest", { [OVERRIDE_CODE_AT]: override }]);
  return plain(iface.decodeFunctionResult("counter", out)[0]);
});

// The traces before the WebSocket steps: a node keeps a recent block's state only so long.
await flow.step("debug_trace_transaction", async () =>
  norm(await provider.send("debug_traceTransaction", [st.ping.hash, { tracer: "callTracer" }])),
);
await flow.step("debug_trace_call", async () => {
  const call = { from: me, to: st.address, gas: hex(100000), data: iface.encodeFunctionData("ping", [3]) };
  return norm(await provider.send("debug_traceCall", [call, "latest", { tracer: "callTracer" }]));
});
await flow.step("trace_transaction", async () => norm(await provider.send("trace_transaction", [st.ping.hash])));
await flow.step("trace_block", async () => norm(await provider.send("trace_block", [hex(st.pingBlock)])));

const WS_STEPS = ["ws_new_heads", "ws_logs", "ws_pending_transactions"];
// A first connection tells a node without WebSocket (each step fails with why) from one that
// serves it (ethers' own provider then connects, and would retry forever on a refusal).
const probe = args.ws ? await openWebSocket(args.ws, args.timeout, args.lib).catch((e) => flow.fail(WS_STEPS, e)) : null;
if (probe) {
  probe.close();
  const ws = new ethers.WebSocketProvider(args.ws);
  const wsWallet = new ethers.Wallet(args.key, ws);
  await flow.step("ws_new_heads", async () => {
    // on("block"): eth_subscribe newHeads; ethers hands the listener the block number.
    const listener = [];
    const heads = await collect(2, (push) => {
      listener.push(push);
      return ws.on("block", push);
    });
    await ws.off("block", listener[0]);
    return { heads: heads.length, head: shape(heads[0]) };
  });
  await flow.step("ws_logs", async () => {
    const filter = { address: st.address };
    let handler;
    const got = collect(1, (push) => ws.on(filter, (handler = push)));
    await sleep(500); // the subscription is made asynchronously
    await (await c().connect(wsWallet).ping(5)).wait();
    const [log] = await got;
    await ws.off(filter, handler);
    return { log: norm(log) };
  });
  await flow.step("ws_pending_transactions", async () => {
    const seen = new Set();
    const listener = (h) => seen.add(h);
    await ws.on("pending", listener);
    await sleep(500);
    const tx = await wsWallet.sendTransaction({ to: RECIPIENT, value: 1n });
    const deadline = Date.now() + 10000;
    while (!seen.has(tx.hash) && Date.now() < deadline) await sleep(100);
    await ws.off("pending", listener);
    await tx.wait();
    if (!seen.has(tx.hash)) throw new Error("the sent transaction's hash never came");
    return { sent_seen: true };
  });
  await sleep(500); // off() sends eth_unsubscribe without waiting for it
  ws.destroy();
}

flow.print();
provider.destroy();
process.exit(0);
