//! `gigagas node`: the node of `gigagas-node` on a Tokio runtime, serving until Ctrl-C /
//! SIGTERM.

use gigagas_node::{launch, NodeArgs, NodeError};
use std::process::ExitCode;

/// Launches the node, prints where it serves, runs until a shutdown signal.
///
/// # Errors
/// What stopped the node ([`NodeError`]), or the runtime that could not start.
pub(crate) fn run(args: NodeArgs) -> Result<ExitCode, String> {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .map_err(|e| format!("tokio runtime: {e}"))?;
    runtime
        .block_on(async move {
            let node = launch(&args).await?;
            let head = node.engine.forkchoice().head;
            let metrics =
                args.metrics.map_or_else(String::new, |a| format!("; metrics http://{a}/metrics"));
            let p2p = node
                .network
                .as_ref()
                .map_or_else(|| "; p2p disabled".to_string(), |n| {
                    let gossip = match (n.protocol(), n.signer()) {
                        (Some(p), Some(key)) => format!("; gossip {p} (proposer {key})"),
                        (Some(p), None) => format!("; gossip {p}"),
                        (None, _) => String::new(),
                    };
                    format!("; p2p {}{gossip}", n.listen_addr())
                });
            eprintln!(
                "gigagas node: head {} {}; JSON-RPC http://{}; Engine API http://{} (JWT secret {}); \
                 parallel executor: one pool of {} workers, reused for every payload{p2p}{metrics}",
                head.0,
                head.1,
                node.http,
                node.auth,
                node.jwt_path.display(),
                node.engine.executor_threads()
            );
            node.run_until_shutdown().await?;
            eprintln!("gigagas node: stopped; store flushed");
            Ok::<_, NodeError>(())
        })
        .map_err(|e| e.to_string())?;
    Ok(ExitCode::SUCCESS)
}
