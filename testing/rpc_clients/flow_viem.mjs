#!/usr/bin/env node
// A dapp's everyday JSON-RPC flow through viem 2 (npm), one JSON document out.
//
// Usage: node flow_viem.mjs --http URL [--ws URL] --key HEX [--lib DIR] [--timeout S]
//
// The same steps, names and answers as flow_web3py.py (see its docstring and
// testing/README.md), each through viem's own actions: a public client and a wallet client
// with a local account (prepareTransactionRequest, signTransaction, sendRawTransaction;
// deployContract, writeContract, readContract with stateOverride, estimateContractGas,
// getContractEvents, createContractEventFilter / createBlockFilter /
// createPendingTransactionFilter with getFilterChanges, getFilterLogs and uninstallFilter) and,
// over the webSocket transport, watchBlocks, watchContractEvent and watchPendingTransactions
// (eth_subscribe, eth_unsubscribe when unwatched). Methods viem has no action for
// (web3_clientVersion, eth_maxPriorityFeePerGas itself, eth_accounts, eth_protocolVersion,
// eth_getHeaderByNumber, the uncle count, debug_*, trace_*) go through client.request().

import { Flow, PINGER, RECIPIENTS, OVERRIDE_BALANCE_OF, OVERRIDE_CODE_AT, collect, library, norm, normBlock, openWebSocket, parse, plain, shape, sleep, state } from "./common.mjs";

const args = parse();
const viem = library("viem", args.lib);
const { privateKeyToAccount } = library("viem/accounts", args.lib);
const flow = new Flow(args.timeout);
const RECIPIENT = RECIPIENTS.viem;
const abi = PINGER.abi;

const account = privateKeyToAccount(args.key);
const me = account.address;
// The chain is the node's: its id is asked first (a dapp names a chain it knows).
const bare = viem.createPublicClient({ transport: viem.http(args.http) });
const chainId = await bare.getChainId();
const chain = viem.defineChain({
  id: chainId,
  name: "dev",
  nativeCurrency: { name: "Ether", symbol: "ETH", decimals: 18 },
  rpcUrls: { default: { http: [args.http], webSocket: args.ws ? [args.ws] : [] } },
});
const pollingInterval = 250; // the default 4 s only slows the waits down
const client = viem.createPublicClient({ chain, transport: viem.http(args.http), pollingInterval });
const wallet = viem.createWalletClient({ account, chain, transport: viem.http(args.http), pollingInterval });
const st = state(); // what later steps need
const hex = (n) => viem.numberToHex(n);
const wait = (hash) => client.waitForTransactionReceipt({ hash, timeout: args.timeout, pollingInterval });

async function transfer(value = 1n) {
  return await wallet.sendTransaction({ to: RECIPIENT, value });
}

await flow.step("client_version", async () => shape(await client.request({ method: "web3_clientVersion" })));
await flow.step("chain_id", async () => await client.getChainId());
await flow.step("block_number", async () => shape(await client.getBlockNumber({ cacheTime: 0 })));
await flow.step("gas_price", async () => shape(await client.getGasPrice()));
// eth_maxPriorityFeePerGas itself (estimateMaxPriorityFeePerGas falls back to the latest
// block's fees when the method fails, hiding it).
await flow.step("max_priority_fee", async () => shape(await client.request({ method: "eth_maxPriorityFeePerGas" })));
await flow.step("fee_history", async () => norm(await client.getFeeHistory({ blockCount: 4, rewardPercentiles: [25, 75] })));
await flow.step("balance", async () => shape(await client.getBalance({ address: me })));
await flow.step("nonce", async () => await client.getTransactionCount({ address: me }));
await flow.step("accounts", async () => {
  // A wallet client without a local account asks the node (eth_accounts).
  const nodeWallet = viem.createWalletClient({ chain, transport: viem.http(args.http) });
  return Array.isArray(await nodeWallet.getAddresses()) ? "<address[]>" : null;
});
await flow.step("protocol_version", async () => shape(await client.request({ method: "eth_protocolVersion" })));

await flow.step("transfer_send", async () => {
  // Wallet style: prepare (nonce, gas, EIP-1559 fees from the node), sign here, send raw.
  const request = await wallet.prepareTransactionRequest({ to: RECIPIENT, value: 10n ** 15n, type: "eip1559" });
  const signed = await wallet.signTransaction(request);
  st.transfer = await wallet.sendRawTransaction({ serializedTransaction: signed });
  return { hash: shape(st.transfer), is_signed_hash: st.transfer === viem.keccak256(signed) };
});
await flow.step("transfer_receipt", async () => norm(await wait(st.transfer)));

await flow.step("deploy", async () => {
  const r = await wait(await wallet.deployContract({ abi, bytecode: PINGER.bytecode }));
  st.address = r.contractAddress;
  st.deployBlock = r.blockNumber;
  return norm(r);
});
const contract = () => ({ address: st.address, abi });

await flow.step("call_view", async () => plain(await client.readContract({ ...contract(), functionName: "counter" })));
await flow.step("estimate_gas", async () =>
  plain(await client.estimateContractGas({ ...contract(), functionName: "ping", args: [7n], account })),
);
await flow.step("contract_send", async () => {
  st.ping = await wallet.writeContract({ ...contract(), functionName: "ping", args: [7n] });
  return shape(st.ping);
});
await flow.step("contract_receipt", async () => {
  const r = await wait(st.ping);
  st.pingBlock = r.blockNumber;
  const events = viem.parseEventLogs({ abi, logs: r.logs }).map((e) => ({ eventName: e.eventName, args: plain(e.args) }));
  const counter = await client.readContract({ ...contract(), functionName: "counter" });
  return { receipt: norm(r), events, counter_after: plain(counter) };
});
await flow.step("call_revert", async () => {
  const pinger = contract(); // outside the try: no contract is no revert
  try {
    await client.readContract({ ...pinger, functionName: "fail" });
    return { reverted: false };
  } catch (e) {
    const revert = e.walk?.((x) => x instanceof viem.ContractFunctionRevertedError);
    return { reverted: true, name: e.name, reason: revert?.reason ?? null };
  }
});
await flow.step("get_logs", async () =>
  norm(await client.getContractEvents({ ...contract(), eventName: "Ping", fromBlock: st.deployBlock })),
);

await flow.step("log_filter_install", async () => {
  st.filter = await client.createContractEventFilter({ ...contract(), eventName: "Ping", fromBlock: st.deployBlock });
  return shape(st.filter.id);
});
await flow.step("log_filter_changes", async () => {
  await wait(await wallet.writeContract({ ...contract(), functionName: "ping", args: [11n] }));
  return norm(await client.getFilterChanges({ filter: st.filter }));
});
await flow.step("log_filter_logs", async () => norm(await client.getFilterLogs({ filter: st.filter })));
await flow.step("log_filter_uninstall", async () => await client.uninstallFilter({ filter: st.filter }));

await flow.step("block_filter", async () => {
  const filter = await client.createBlockFilter();
  await wait(await transfer());
  const hashes = await client.getFilterChanges({ filter });
  return {
    new_blocks: hashes.length > 0,
    items: [...new Set(hashes.map(shape))].sort(),
    uninstalled: await client.uninstallFilter({ filter }),
  };
});
await flow.step("pending_filter", async () => {
  const filter = await client.createPendingTransactionFilter();
  const hash = await transfer();
  const seen = new Set();
  const deadline = Date.now() + 10000;
  while (!seen.has(hash) && Date.now() < deadline) {
    for (const h of await client.getFilterChanges({ filter })) seen.add(h);
    await sleep(200);
  }
  await wait(hash);
  return { sent_seen: seen.has(hash), uninstalled: await client.uninstallFilter({ filter }) };
});

await flow.step("block_by_number", async () => normBlock(await client.getBlock({ blockNumber: st.pingBlock })));
await flow.step("block_by_number_full", async () =>
  normBlock(await client.getBlock({ blockNumber: st.pingBlock, includeTransactions: true })),
);
await flow.step("header_by_number", async () =>
  normBlock(await client.request({ method: "eth_getHeaderByNumber", params: [hex(st.pingBlock)] })),
);
await flow.step("transaction_by_hash", async () => norm(await client.getTransaction({ hash: st.ping })));
await flow.step("uncle_count", async () =>
  await client.request({ method: "eth_getUncleCountByBlockNumber", params: [hex(st.pingBlock)] }),
);

await flow.step("call_balance_override", async () =>
  plain(
    await client.readContract({
      ...contract(),
      functionName: "balanceOf",
      args: [OVERRIDE_BALANCE_OF],
      stateOverride: [{ address: OVERRIDE_BALANCE_OF, balance: 12345n }],
    }),
  ),
);
await flow.step("call_code_override", async () =>
  plain(
    await client.readContract({
      address: OVERRIDE_CODE_AT,
      abi,
      functionName: "counter",
      stateOverride: [
        {
          address: OVERRIDE_CODE_AT,
          code: PINGER.runtime,
          stateDiff: [{ slot: viem.pad("0x00"), value: viem.pad("0x2a") }],
        },
      ],
    }),
  ),
);

// The traces before the WebSocket steps: a node keeps a recent block's state only so long.
await flow.step("debug_trace_transaction", async () =>
  norm(await client.request({ method: "debug_traceTransaction", params: [st.ping, { tracer: "callTracer" }] })),
);
await flow.step("debug_trace_call", async () => {
  const data = viem.encodeFunctionData({ abi, functionName: "ping", args: [3n] });
  const call = { from: me, to: st.address, gas: hex(100000), data };
  return norm(await client.request({ method: "debug_traceCall", params: [call, "latest", { tracer: "callTracer" }] }));
});
await flow.step("trace_transaction", async () => norm(await client.request({ method: "trace_transaction", params: [st.ping] })));
await flow.step("trace_block", async () => norm(await client.request({ method: "trace_block", params: [hex(st.pingBlock)] })));

// A first connection tells a node without WebSocket (each step fails with why) from one that
// serves it (viem's transport then connects, and would retry on a refusal).
const WS_STEPS = ["ws_new_heads", "ws_logs", "ws_pending_transactions"];
const probe = args.ws ? await openWebSocket(args.ws, args.timeout, args.lib).catch((e) => flow.fail(WS_STEPS, e)) : null;
if (probe) {
  probe.close();
  const ws = viem.createPublicClient({ chain, transport: viem.webSocket(args.ws) });
  await flow.step("ws_new_heads", async () => {
    // watchBlocks on a webSocket transport: eth_subscribe newHeads, eth_unsubscribe on unwatch.
    let unwatch;
    const heads = await collect(2, (push) => {
      unwatch = ws.watchBlocks({ onBlock: push, onError: () => {} });
    });
    unwatch();
    return { heads: heads.length, head: shape(heads[0]) };
  });
  await flow.step("ws_logs", async () => {
    let unwatch;
    const got = collect(1, (push) => {
      unwatch = ws.watchContractEvent({ ...contract(), eventName: "Ping", onLogs: (logs) => logs.forEach(push), onError: () => {} });
    });
    await sleep(500); // the subscription is made asynchronously
    await wait(await wallet.writeContract({ ...contract(), functionName: "ping", args: [5n] }));
    const [log] = await got;
    unwatch();
    return { log: norm(log) };
  });
  await flow.step("ws_pending_transactions", async () => {
    const seen = new Set();
    const unwatch = ws.watchPendingTransactions({ onTransactions: (hs) => hs.forEach((h) => seen.add(h)), onError: () => {} });
    await sleep(500);
    const hash = await transfer();
    const deadline = Date.now() + 10000;
    while (!seen.has(hash) && Date.now() < deadline) await sleep(100);
    unwatch();
    await wait(hash);
    if (!seen.has(hash)) throw new Error("the sent transaction's hash never came");
    return { sent_seen: true };
  });
  await sleep(300); // unwatch sends eth_unsubscribe without waiting for it
}

flow.print();
process.exit(0);
