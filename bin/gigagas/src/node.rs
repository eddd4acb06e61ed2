//! `gigagas node`: the node of `gigagas-node` on a Tokio runtime, serving until Ctrl-C /
//! SIGTERM.

use gigagas_node::{launch, NodeArgs};
use std::{path::Path, process::ExitCode};

/// Writes `ready` to `path` atomically: to `path.tmp`, then renamed over `path`.
fn write_ready_file(path: &Path, ready: &serde_json::Value) -> std::io::Result<()> {
    let tmp = path.with_extension("tmp");
    std::fs::write(&tmp, serde_json::to_vec_pretty(ready).map_err(std::io::Error::other)?)?;
    std::fs::rename(&tmp, path)
}

/// Launches the node, prints where it serves (and writes `--ready-file`), runs until a
/// shutdown signal.
///
/// # Errors
/// What stopped the node (`gigagas_node::NodeError`), the ready file that could not be
/// written, or the runtime that could not start.
pub(crate) fn run(args: NodeArgs) -> Result<ExitCode, String> {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .map_err(|e| format!("tokio runtime: {e}"))?;
    runtime.block_on(async move {
        let node = launch(&args).await.map_err(|e| e.to_string())?;
        let head = node.engine.forkchoice().head;
        let metrics =
            args.metrics.map_or_else(String::new, |a| format!("; metrics http://{a}/metrics"));
        let p2p = node.network.as_ref().map_or_else(
            || "; libp2p disabled".to_string(),
            |n| {
                let gossip = match (n.protocol(), n.signer()) {
                    (Some(p), Some(key)) => format!("; gossip {p} (proposer {key})"),
                    (Some(p), None) => format!("; gossip {p}"),
                    (None, _) => String::new(),
                };
                format!("; libp2p {}{gossip}", n.listen_addr())
            },
        );
        let enode = node.enode.map_or_else(String::new, |e| format!("; devp2p {e}"));
        let ws = node.ws.map_or_else(String::new, |a| format!("; WebSocket ws://{a}"));
        eprintln!(
            "gigagas node: head {} {}; JSON-RPC http://{}{ws}; Engine API http://{} (JWT secret {}); \
                 parallel executor: one pool of {} workers, reused for every payload{enode}{p2p}{metrics}",
            head.0,
            head.1,
            node.http,
            node.auth,
            node.jwt_path.display(),
            node.engine.executor_threads()
        );
        if let Some(path) = &args.ready_file {
            let ready = serde_json::json!({
                "head": { "number": head.0, "hash": head.1 },
                "http": format!("http://{}", node.http),
                "ws": node.ws.map(|a| format!("ws://{a}")),
                "ipc": node.ipc,
                "authrpc": format!("http://{}", node.auth),
                "jwt_secret": node.jwt_path,
                "p2p": node.network.as_ref().map(|n| n.listen_addr().to_string()),
                "enode": node.enode.map(|e| e.to_string()),
                "enr": node.devp2p.as_ref().and_then(|d| d.enr()).map(|e| e.to_base64()),
                "discv5_enr": node.discv5_enr,
                "proposer": node.network.as_ref().and_then(|n| n.signer()).map(|k| k.to_string()),
                "metrics": args.metrics.map(|a| format!("http://{a}/metrics")),
            });
            if let Err(e) = write_ready_file(path, &ready) {
                node.shutdown().await.map_err(|e| e.to_string())?;
                return Err(format!("--ready-file {}: {e}", path.display()));
            }
        }
        node.run_until_shutdown().await.map_err(|e| e.to_string())?;
        eprintln!("gigagas node: stopped; store flushed");
        Ok::<_, String>(())
    })?;
    Ok(ExitCode::SUCCESS)
}
