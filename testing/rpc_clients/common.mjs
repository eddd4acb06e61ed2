// What flow_ethers.mjs and flow_viem.mjs share: their arguments, the libraries' folder, the
// contract, the normalization of answers (the rules of flow_web3py.py, volatile.json's keys)
// and the step runner. The libraries are those of install.sh, in ~/.cache/gigagas/rpc-clients
// (or $GIGAGAS_RPC_CLIENTS, or --lib DIR): node's ESM `import` ignores NODE_PATH, so they are
// loaded with a require() rooted in that folder.

import { createRequire } from "node:module";
import { readFileSync } from "node:fs";
import { homedir } from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { parseArgs } from "node:util";

// A library's stray rejection (a cancelled request, a socket closing) must not end the flow
// before it has printed its answers.
// stdout is the flow's JSON document alone: whatever the libraries log (ethers logs some
// subscriber errors with console.log, "@TODO Error: …") goes to stderr.
console.log = console.info = console.debug = (...a) => console.error(...a);

process.on("unhandledRejection", (e) => {
  if (process.env.FLOW_DEBUG) console.error("unhandled rejection:", e);
});
process.on("uncaughtException", (e) => {
  console.error("uncaught exception (the step under way will time out):", e);
});

const HERE = dirname(fileURLToPath(import.meta.url));
export const PINGER = JSON.parse(readFileSync(join(HERE, "pinger.json"), "utf8"));
const RULES = JSON.parse(readFileSync(join(HERE, "volatile.json"), "utf8"));
const VOLATILE = new Set(RULES.keys);
const BLOCK_KEYS = new Set(RULES.block_keys);

// Where each library's transfers go: an address no genesis funds, each library its own (web3py
// 0x…bee01) so that the three flows' gas (a first transfer creates the account) does not depend
// on which of them ran first on a node.
export const RECIPIENTS = {
  ethers: "0x00000000000000000000000000000000000Bee02",
  viem: "0x00000000000000000000000000000000000Bee03",
};
// The state overrides' accounts.
export const OVERRIDE_BALANCE_OF = "0x00000000000000000000000000000000000b0B0b";
export const OVERRIDE_CODE_AT = "0x0000000000000000000000000000000000c0de00";

export function parse() {
  const { values } = parseArgs({
    options: {
      http: { type: "string" },
      ws: { type: "string" },
      key: { type: "string" },
      lib: { type: "string" },
      timeout: { type: "string", default: "60" },
      // The reorg flows' (reorg_ethers.mjs, reorg_viem.mjs): the harness's endpoint and the
      // seconds notifications are collected for after the reorg.
      control: { type: "string" },
      settle: { type: "string", default: "2" },
    },
  });
  if (!values.http || !values.key) {
    console.error("usage: --http URL [--ws URL] --key HEX [--lib DIR] [--timeout S] [--control URL] [--settle S]");
    process.exit(2);
  }
  values.timeout = Number(values.timeout) * 1000;
  values.settle = Number(values.settle) * 1000;
  return values;
}

/** require() of a package installed by install.sh. */
export function library(name, dir) {
  const root = dir || process.env.GIGAGAS_RPC_CLIENTS || join(homedir(), ".cache/gigagas/rpc-clients");
  const require = createRequire(join(root, "package.json"));
  try {
    return require(name);
  } catch (e) {
    console.error(`${name} is not installed in ${root}: run testing/rpc_clients/install.sh (${e.message})`);
    process.exit(2);
  }
}

/** A WebSocket (the `ws` package ethers and viem use) once it is open; rejects when it cannot
 * connect within `ms`. */
export function openWebSocket(url, ms, dir) {
  const root = dir || process.env.GIGAGAS_RPC_CLIENTS || join(homedir(), ".cache/gigagas/rpc-clients");
  const fromEthers = createRequire(createRequire(join(root, "package.json")).resolve("ethers"));
  const WebSocket = fromEthers("ws");
  return new Promise((resolve, reject) => {
    const socket = new WebSocket(url);
    const timer = setTimeout(() => {
      socket.terminate();
      reject(new Error(`no WebSocket connection to ${url} in ${ms / 1000} s`));
    }, ms);
    socket.once("open", () => {
      clearTimeout(timer);
      resolve(socket);
    });
    socket.once("error", (e) => {
      clearTimeout(timer);
      reject(new Error(`no WebSocket connection to ${url}: ${e.message}`));
    });
  });
}

/** The library's answer as plain JSON: bigints as decimal strings, ethers' objects through
 * their toJSON(), bytes as 0x-hex, undefined fields left out. */
export function plain(x) {
  if (x === undefined) return null;
  if (typeof x === "bigint") return x.toString();
  if (x instanceof Uint8Array) return "0x" + Buffer.from(x).toString("hex");
  if (Array.isArray(x)) return x.map(plain);
  if (x && typeof x === "object") {
    if (typeof x.toJSON === "function") x = x.toJSON();
    if (Array.isArray(x)) return x.map(plain);
    const out = {};
    for (const [k, v] of Object.entries(x)) {
      if (v !== undefined && typeof v !== "function" && k !== "provider") out[k] = plain(v);
    }
    return out;
  }
  return x;
}

/** What a value is, not what it holds: objects keep their keys, lists their length. */
export function shape(x) {
  if (x === null || x === undefined) return null;
  if (typeof x === "boolean") return "<bool>";
  if (typeof x === "bigint") return "<quantity>";
  if (typeof x === "number") return "<number>"; // 0 and 0.5 alike (feeHistory's gasUsedRatio)
  if (typeof x === "string") {
    // 32 bytes (a hash, or r and s as quantities, their leading zeros dropped), 20 bytes
    if (/^0x[0-9a-fA-F]*$/.test(x)) return x.length >= 58 && x.length <= 66 ? "<hash>" : x.length === 42 ? "<address>" : "<hex>";
    if (/^-?[0-9]+$/.test(x)) return "<quantity>";
    return "<string>";
  }
  x = plain(x);
  if (Array.isArray(x)) return x.map(shape);
  if (x && typeof x === "object") return Object.fromEntries(Object.entries(x).map(([k, v]) => [k, shape(v)]));
  return `<${typeof x}>`;
}

/** Literal, except the values under volatile.json's keys but `keep` (shaped; objects inside
 * them are normalized by their own keys) and under `extra`. */
export function norm(x, volatile = false, extra = new Set(), keep = new Set()) {
  x = plain(x);
  if (Array.isArray(x)) return x.map((v) => norm(v, volatile, extra, keep));
  if (x && typeof x === "object") {
    return Object.fromEntries(
      Object.entries(x).map(([k, v]) => [k, norm(v, (VOLATILE.has(k) && !keep.has(k)) || extra.has(k), extra, keep)]),
    );
  }
  return volatile ? shape(x) : x;
}

/** A block or header: also its gas limit (volatile.json's block_keys) shaped. */
export function normBlock(x, keep = new Set()) {
  return norm(x, false, BLOCK_KEYS, keep);
}

export function errorText(e) {
  let text = e && (e.shortMessage || e.message) ? `${e.name || "Error"}: ${e.shortMessage || e.message}` : String(e);
  // The node's own error message, when the library wraps it (viem's details, ethers' info).
  const inner = e && (e.details || e.info?.error?.message || e.error?.message);
  if (inner && !text.includes(inner)) text += ` (${inner})`;
  return text.slice(0, 500);
}

export function sleep(ms) {
  return new Promise((r) => setTimeout(r, ms));
}

function withTimeout(promise, ms) {
  let timer;
  return Promise.race([
    promise,
    new Promise((_, reject) => {
      timer = setTimeout(() => reject(new Error(`timed out after ${ms / 1000} s`)), ms);
    }),
  ]).finally(() => clearTimeout(timer));
}

/** Runs the steps in order; each answer is already normalized. */
export class Flow {
  constructor(timeout) {
    this.steps = [];
    this.timeout = timeout;
    this.printed = false;
    // Whatever ends the process (a library's promise that never settles empties the event
    // loop), the steps so far are printed.
    process.on("exit", () => this.print());
  }

  async step(name, fn, timeout = this.timeout) {
    try {
      const answer = await withTimeout(fn(), timeout);
      this.steps.push({ step: name, ok: true, error: null, answer: answer === undefined ? null : answer });
      return true;
    } catch (e) {
      this.steps.push({ step: name, ok: false, error: errorText(e), answer: null });
      if (process.env.FLOW_DEBUG) console.error(name, e);
      return false;
    }
  }

  /** Records the steps `names` as failed with `error` (a missing WebSocket, say). */
  fail(names, error) {
    for (const name of names) this.steps.push({ step: name, ok: false, error: errorText(error), answer: null });
  }

  print() {
    if (this.printed) return;
    this.printed = true;
    process.stdout.write(JSON.stringify(this.steps, null, 1) + "\n");
  }
}

/** What later steps need from earlier ones: reading a key no step set throws at once ("skipped:
 * …"), instead of a later step waiting on an undefined hash until its timeout. */
export function state() {
  return new Proxy(
    {},
    {
      get(target, key) {
        if (typeof key === "string" && !(key in target)) throw new Error(`skipped: no ${key} (an earlier step failed)`);
        return target[key];
      },
    },
  );
}

/** Resolves with the first `count` values `subscribe(push)` pushes that pass `predicate`. */
export function collect(count, subscribe, predicate = () => true) {
  return new Promise((resolve, reject) => {
    const got = [];
    Promise.resolve(
      subscribe((v) => {
        if (got.length < count && predicate(v)) {
          got.push(v);
          if (got.length === count) resolve(got);
        }
      }),
    ).catch(reject);
  });
}

// --- the reorg scenario (reorg_ethers.mjs, reorg_viem.mjs; see reorg_web3py.py) -------------

/** The steps that need the WebSocket, failed together when there is none. */
export const REORG_WS_STEPS = ["reorg: subscribe", "reorg: ping", "reorg: sibling", "reorg: after", "reorg: new_heads", "reorg: logs", "reorg: unsubscribe"];
/** volatile.json's keys kept literal there: the harness builds the same blocks on both nodes. */
export const REORG_LITERAL = new Set(RULES.reorg_literal);

/** POST /build or /reorg to the harness (compare.py's reorg.py): the new block as it answers
 * it (number, hash, parent_hash, replaced, transactions), or an Error with its error. */
export async function control(url, action) {
  const r = await fetch(`${url}/${action}`, { method: "POST" });
  const body = await r.json();
  if (!r.ok) throw new Error(`harness /${action}: ${body.error}`);
  return body;
}

/** Block hashes by their role in the scenario (H, A, B); `<hash>` for any other. */
export function labels() {
  const names = new Map();
  const label = (hash) => (hash == null ? null : names.get(String(hash).toLowerCase()) ?? "<hash>");
  label.set = (hash, role) => names.set(hash.toLowerCase(), role);
  return label;
}

/** Blocks asked of the harness until one holds the transaction `hash` (three at most): the
 * last, as the harness answered it. */
export async function buildUntil(url, hash) {
  let block;
  for (let i = 0; i < 3; i++) {
    block = await control(url, "build");
    if (holds(block, hash)) break;
  }
  return block;
}

/** The "reorg: sibling" answer: the harness replaces the head by a sibling (named B in
 * `label`), which holds the ping `ping` again or not. */
export async function sibling(url, label, ping) {
  const b = await control(url, "reorg");
  label.set(b.hash, "B");
  return {
    number: b.number,
    parent: label(b.parent_hash),
    replaced: label(b.replaced),
    transactions: b.transactions.length,
    ping_included: holds(b, ping),
  };
}

/** Waits up to `ms` for `list` to hold something; an Error naming `what` if it stays empty. */
export async function waitFor(list, ms, what) {
  const deadline = Date.now() + ms;
  while (!list.length && Date.now() < deadline) await sleep(50);
  if (!list.length) throw new Error(`no ${what}`);
}

/** Whether the harness's block `block` holds the transaction `hash`. */
export function holds(block, hash) {
  return block.transactions.some((t) => t.toLowerCase() === hash.toLowerCase());
}
