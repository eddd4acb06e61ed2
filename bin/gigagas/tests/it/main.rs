//! End-to-end tests of the `gigagas` binary (the node): `init`, `import` and `db` on the
//! execution-apis chain, and `node` over JSON-RPC, the Engine API and Prometheus; the node's
//! network block encoding.

use std::process::Output;

/// The JSON object a command printed on stdout.
fn json(out: &Output) -> serde_json::Value {
    serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("not JSON ({e}): {}", String::from_utf8_lossy(&out.stdout)))
}

mod cli;
mod import;
mod network_block;
mod node;
mod tasks;
