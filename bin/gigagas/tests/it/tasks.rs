//! Supervised tasks: a critical task's panic shuts a running node down, with the task named.

use gigagas_node::{launch, NodeArgs, NodeError};
use std::time::Duration;

/// The node's flags as `gigagas node` parses them.
#[derive(clap::Parser)]
struct Flags {
    #[command(flatten)]
    node: NodeArgs,
}

#[test]
fn a_critical_task_panic_shuts_the_node_down_named() {
    let datadir = tempfile::tempdir().expect("temporary datadir");
    let path = datadir.path().display().to_string();
    let flags = [
        "node",
        "--datadir",
        &path,
        "--dev",
        "--dev.block-time",
        "0.2",
        "--disable-network",
        "--http.port",
        "0",
        "--authrpc.port",
        "0",
        "--engine.threads",
        "2",
    ];
    let args = <Flags as clap::Parser>::try_parse_from(flags).expect("flags").node;
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("runtime");
    let result = runtime.block_on(async {
        let node = launch(&args).await.expect("the node starts");
        node.task_executor().spawn_critical("injected", async {
            // Long enough for the dev miner to make blocks first.
            tokio::time::sleep(Duration::from_millis(800)).await;
            panic!("boom at {}", 800);
        });
        tokio::time::timeout(Duration::from_secs(60), node.run_until_shutdown())
            .await
            .expect("the node stops by itself")
    });
    match result {
        Err(NodeError::CriticalTask(e)) => {
            assert_eq!((e.task, e.message.as_str()), ("injected", "boom at 800"));
        }
        other => panic!("expected the injected task's panic, got {other:?}"),
    }
    // The shutdown was the orderly one: the engine flushed and let go of the store, which opens
    // again with the blocks the dev miner made before the panic.
    let storage = gigagas_storage::Storage::open(datadir.path()).expect("the store reopens");
    let head =
        gigagas_storage::BlockNumReader::best_block(&storage).expect("head").expect("a head");
    assert!(head.0 >= 1, "the dev miner made blocks before the panic: head {head:?}");
}
