//! `gigagas db`: inspection of a datadir, printing JSON — the head, a canonical block's
//! header, body, receipts or EIP-7928 BAL, decoded by the store's typed readers —,
//! `checkpoint`, a consistent copy of it (hard-linked table files) to run blocks against again,
//! and the two that change it with the node stopped: `compact` and `prune-trie`.

use alloy_consensus::{BlockBody, Header, ReceiptEnvelope, TxEnvelope};
use clap::{Args, Subcommand};
use gigagas_storage::{
    BlockAccessListReader, BlockNumReader, BlockReader, HeaderProvider, KeepStates,
    ReceiptProvider, Storage, TriePruner,
};
use gigagas_validation::stored_chain_spec;
use serde::Serialize;
use std::{path::PathBuf, process::ExitCode};

/// Arguments of `gigagas db`.
#[derive(Debug, Args)]
pub(crate) struct DbArgs {
    /// Data directory.
    #[arg(long)]
    datadir: PathBuf,
    #[command(subcommand)]
    command: DbCommand,
}

#[derive(Debug, Subcommand)]
enum DbCommand {
    /// The canonical head (number, hash, state root) and the chain id.
    Head,
    /// The header of canonical block N.
    Header {
        /// Block number.
        number: u64,
    },
    /// The body (transactions, ommers, withdrawals) of canonical block N.
    Body {
        /// Block number.
        number: u64,
    },
    /// The receipts of canonical block N.
    Receipts {
        /// Block number.
        number: u64,
    },
    /// The EIP-7928 block access list of canonical block N.
    Bal {
        /// Block number.
        number: u64,
    },
    /// A consistent copy of the datadir in OUT (which must not exist): RocksDB's checkpoint,
    /// its table files hard-linked (nearly free on the same file system). Run the same
    /// blocks against the same state again by importing them into a fresh checkpoint.
    Checkpoint {
        /// The copy's folder.
        out: PathBuf,
    },
    /// Compacts every table of the datadir fully (RocksDB's manual compaction, as geth's
    /// `db compact`; the node must be stopped): what a long import or a prune left in the
    /// upper levels is merged down, so that reads look in fewer files and the next blocks owe
    /// no compaction for it. Prints the datadir's bytes before and after, and the seconds.
    Compact,
    /// Deletes the trie nodes that no state root of the last KEEP blocks reaches (mark and
    /// sweep; the node must be stopped). Blocks' state older than that is then answered as
    /// pruned. Prints what was kept and deleted, and the datadir's bytes before and after.
    PruneTrie {
        /// Blocks whose state stays (the reorg window; geth keeps 128 diff layers).
        #[arg(long, default_value_t = 128)]
        keep: u64,
        /// Threads reading the nodes to keep (reads of a cold disk wait; more of them in
        /// flight answer more per second).
        #[arg(long, default_value_t = 32)]
        threads: usize,
    },
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct HeadJson {
    number: u64,
    hash: alloy_primitives::B256,
    state_root: alloy_primitives::B256,
    chain_id: u64,
}

fn print<T: Serialize>(value: Option<T>, what: &str, number: u64) -> Result<ExitCode, String> {
    match value {
        Some(v) => {
            println!("{}", serde_json::to_string_pretty(&v).map_err(|e| e.to_string())?);
            Ok(ExitCode::SUCCESS)
        }
        None => Err(format!("no {what} stored for block {number}")),
    }
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct PruneJson {
    first_kept: u64,
    head: u64,
    nodes_kept: u64,
    nodes_deleted: u64,
    mark_seconds: f64,
    sweep_seconds: f64,
    bytes_before: u64,
    bytes_after: u64,
    seconds: f64,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct CompactJson {
    bytes_before: u64,
    bytes_after: u64,
    seconds: f64,
}

/// `db prune-trie`: the state roots of the last `keep` blocks kept (those held: a snap-synced
/// datadir holds none below its pivot), every other trie node deleted.
fn prune_trie(
    store: &Storage,
    datadir: &std::path::Path,
    keep: u64,
    threads: usize,
) -> Result<ExitCode, String> {
    let err = |e: gigagas_storage::ProviderError| e.to_string();
    let start = std::time::Instant::now();
    let (head, _) = store.best_block().map_err(err)?.ok_or("datadir not initialized")?;
    let bytes_before = gigagas_storage::datadir_bytes(datadir);
    let bar = indicatif::ProgressBar::new_spinner();
    let stats = store
        .prune_trie(KeepStates::Latest(keep), threads, &mut |phase, n| {
            bar.set_message(format!("{phase}: {n}"))
        })
        .map_err(err)?;
    bar.finish_and_clear();
    let report = PruneJson {
        first_kept: stats.first_kept,
        head,
        nodes_kept: stats.kept,
        nodes_deleted: stats.deleted,
        mark_seconds: stats.mark_time.as_secs_f64(),
        sweep_seconds: stats.sweep_time.as_secs_f64(),
        bytes_before,
        bytes_after: gigagas_storage::datadir_bytes(datadir),
        seconds: start.elapsed().as_secs_f64(),
    };
    print(Some(report), "prune", head)
}

/// Opens the datadir and prints what was asked.
pub(crate) fn run(args: DbArgs) -> Result<ExitCode, String> {
    if !args.datadir.is_dir() {
        return Err(format!("{}: no such datadir", args.datadir.display()));
    }
    let store = Storage::open(&args.datadir).map_err(|e| e.to_string())?;
    let err = |e: gigagas_storage::ProviderError| e.to_string();
    match args.command {
        DbCommand::Head => {
            let (number, hash) = store
                .best_block()
                .map_err(err)?
                .ok_or("datadir not initialized: run `gigagas init`")?;
            let header: Header =
                store.header_by_number(number).map_err(err)?.ok_or("head header missing")?;
            let chain = stored_chain_spec(&store).map_err(|e| e.to_string())?;
            let head =
                HeadJson { number, hash, state_root: header.state_root, chain_id: chain.chain_id };
            print(Some(head), "head", number)
        }
        DbCommand::Header { number } => {
            print(store.header_by_number(number).map_err(err)?, "header", number)
        }
        DbCommand::Body { number } => {
            let body: Option<BlockBody<TxEnvelope>> = store.body_by_number(number).map_err(err)?;
            print(body, "body", number)
        }
        DbCommand::Receipts { number } => {
            let receipts: Option<Vec<ReceiptEnvelope>> =
                store.receipts_by_number(number).map_err(err)?;
            print(receipts, "receipts", number)
        }
        DbCommand::Bal { number } => {
            print(store.block_access_list(number).map_err(err)?, "BAL", number)
        }
        DbCommand::PruneTrie { keep, threads } => prune_trie(&store, &args.datadir, keep, threads),
        DbCommand::Compact => {
            let (start, bytes_before) =
                (std::time::Instant::now(), gigagas_storage::datadir_bytes(&args.datadir));
            let bar = indicatif::ProgressBar::new_spinner();
            bar.set_message("compacting every table");
            bar.enable_steady_tick(std::time::Duration::from_millis(200));
            store.compact();
            bar.finish_and_clear();
            let report = CompactJson {
                bytes_before,
                bytes_after: gigagas_storage::datadir_bytes(&args.datadir),
                seconds: start.elapsed().as_secs_f64(),
            };
            println!("{}", serde_json::to_string_pretty(&report).map_err(|e| e.to_string())?);
            Ok(ExitCode::SUCCESS)
        }
        DbCommand::Checkpoint { out } => {
            store.checkpoint(&out).map_err(err)?;
            println!("{}: checkpoint of {}", out.display(), args.datadir.display());
            Ok(ExitCode::SUCCESS)
        }
    }
}
