//! The file import (`gigagas import`): the blocks of a geth export file — each Amsterdam block
//! followed by its EIP-7928 BAL — judged and committed by the tree's pipelined chain insertion
//! ([`BlockTree::new_payloads_with`], with commit), the one primitive sync's rounds go through
//! too: each block executed on its parent's state while the parent's state root is computed
//! and the parent committed.
//!
//! Flow: the blocks already stored (a re-import) are skipped — a different block at a stored
//! number is refused, the import does not reorg —; the rest are decoded one by one as the tree
//! takes them; a BAL the file carries for a block before Amsterdam, a block that does not
//! decode, a verdict that is not VALID end the import with a typed [`ImportError`], the blocks
//! before it committed.

use crate::{tree::BackfillPayload, BlockTree, PayloadStatus, TreeConfig, TriePruneConfig};
use alloy_rlp::Decodable;
use gigagas_executor::Scheduler;
use gigagas_storage_api::{BlockHashReader, FullProvider};
use gigagas_validation::{BalIo, ExportedBlock, ImportError, ImportedBlock};
use std::{cell::RefCell, sync::Arc};

/// What the file import does with the EIP-7928 BAL an export file carries after an Amsterdam
/// block ([`ExportedBlock`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum FileBal {
    /// The parallel executor runs the block driven by the file's BAL (every write and read
    /// checked against it, its hash against the header's); blocks without one run on the
    /// sequential reference, which builds their BAL.
    #[default]
    Use,
    /// The file's BALs are ignored: every block runs on the sequential reference, and the BAL
    /// it builds must hash to the header's `blockAccessListHash`.
    Ignore,
}

/// How [`import_blocks_with`] executes.
#[derive(Debug, Clone, Copy)]
pub struct ImportOptions {
    /// What to do with the BALs the file carries.
    pub file_bal: FileBal,
    /// Threads of the parallel executor (0: one per core).
    pub threads: usize,
    /// The order the parallel executor hands transactions to its workers.
    pub scheduler: Scheduler,
    /// Keep each block's state-trie updates in [`ImportedBlock::updates`].
    pub keep_updates: bool,
    /// Prewarm blocks without a BAL: the executor's other workers run their transactions
    /// ahead of the sequential reference.
    pub prewarm: bool,
    /// With `prewarm`, reuse the workers' results when their reads still hold.
    pub optimistic: bool,
    /// How the parallel executor reads the keys a block's BAL names.
    pub io: BalIo,
    /// Threads of their own for those reads (the queue depth); 0: the executor's threads.
    pub io_depth: usize,
    /// Threads reading a state root's missing trie nodes level by level before its update
    /// ([`TreeConfig::trie_read_threads`]); 0: one at a time while it walks.
    pub trie_read_threads: usize,
    /// The trie pruned behind the committed head as blocks are imported (`None`: never); a
    /// prune under way when the last block is committed is waited for.
    pub prune: Option<TriePruneConfig>,
}

impl Default for ImportOptions {
    fn default() -> Self {
        Self {
            file_bal: FileBal::Use,
            threads: 0,
            scheduler: Scheduler::GasLimit,
            keep_updates: false,
            prewarm: true,
            optimistic: false,
            io: BalIo::default(),
            io_depth: 0,
            trie_read_threads: gigagas_trie::DEFAULT_TRIE_READ_THREADS,
            prune: None,
        }
    }
}

/// [`import_blocks_with`] with the default options.
///
/// # Errors
/// As [`import_blocks_with`].
pub fn import_blocks(
    store: &Arc<dyn FullProvider>,
    blocks_rlp: &[u8],
    on_block: &mut dyn FnMut(&ImportedBlock),
) -> Result<Vec<ImportedBlock>, ImportError> {
    import_blocks_with(store, blocks_rlp, ImportOptions::default(), on_block)
}

/// Imports `blocks_rlp` (blocks back to back, geth's export format) on top of the stored head
/// (see the module documentation), calling `on_block` with each block as it is skipped or
/// committed; returns them all, in order.
///
/// # Errors
/// The first [`ImportError`]: a consensus failure (the block's typed error), a file that does
/// not decode, a stored block replaced, or a fault of ours; the blocks before it stay committed.
pub fn import_blocks_with(
    store: &Arc<dyn FullProvider>,
    blocks_rlp: &[u8],
    options: ImportOptions,
    on_block: &mut dyn FnMut(&ImportedBlock),
) -> Result<Vec<ImportedBlock>, ImportError> {
    let ImportOptions {
        file_bal,
        threads,
        scheduler,
        keep_updates,
        prewarm,
        optimistic,
        io,
        io_depth,
        trie_read_threads,
        prune,
    } = options;
    let threads = if threads == 0 { rayon::current_num_threads() } else { threads };
    let config = TreeConfig::new(threads)
        .with_executor(true, scheduler)
        .with_prewarm(prewarm, optimistic)
        .with_updates_kept(keep_updates)
        .with_io(io, io_depth)
        .with_trie_read_threads(trie_read_threads)
        .with_trie_pruning(prune);
    let mut tree = BlockTree::with_config(store.clone(), config)?;
    let chain = tree.chain().clone();
    let head = tree.forkchoice().head.0;
    let mut out = Vec::new();
    let mut buf = blocks_rlp;
    let mut index = 0;
    let next =
        |buf: &mut &[u8], index: &mut usize| -> Result<(ExportedBlock, usize), ImportError> {
            let offset = blocks_rlp.len() - buf.len();
            let start = *buf;
            let exported = ExportedBlock::decode(buf).map_err(|e| ImportError::Decode {
                index: *index,
                offset,
                reason: e.to_string(),
            })?;
            *index += 1;
            Ok((exported, start.len() - buf.len()))
        };
    // The blocks already stored: skipped when they are the same blocks.
    let mut first = None;
    while !buf.is_empty() {
        let (ExportedBlock { block, bal }, rlp_len) = next(&mut buf, &mut index)?;
        let number = block.header.number;
        if number > head {
            first = Some((ExportedBlock { block, bal }, rlp_len));
            break;
        }
        let hash = block.header.hash_slow();
        if BlockHashReader::block_hash(&**store, number)? != Some(hash) {
            return Err(ImportError::Invalid {
                number,
                reason: format!(
                    "a different block {number} is already stored (no reorgs on import)"
                ),
            });
        }
        let skipped = ImportedBlock {
            number,
            hash,
            transactions: block.body.transactions.len(),
            gas_used: block.header.gas_used,
            imported: false,
            post_state_root: block.header.state_root,
            ..Default::default()
        };
        on_block(&skipped);
        out.push(skipped);
    }
    // The rest, decoded as the tree takes them; a fault of the file stops the stream.
    let stopped: RefCell<Option<ImportError>> = RefCell::new(None);
    let payload = |(ExportedBlock { block, bal }, rlp_len): (ExportedBlock, usize)| {
        let bal = bal.filter(|_| file_bal == FileBal::Use);
        if let Some(bal) = &bal {
            if !chain.is_amsterdam(block.header.timestamp) {
                let number = block.header.number;
                let reason = format!(
                    "the file carries a BAL of {} accounts for a block before Amsterdam",
                    bal.len()
                );
                *stopped.borrow_mut() = Some(ImportError::Invalid { number, reason });
                return None;
            }
        }
        Some(BackfillPayload { block, bal, rlp_len })
    };
    let rest = first
        .into_iter()
        .map(Ok)
        .chain(std::iter::from_fn(|| (!buf.is_empty()).then(|| next(&mut buf, &mut index))));
    let payloads = rest.map_while(|item| match item {
        Ok(item) => payload(item),
        Err(e) => {
            *stopped.borrow_mut() = Some(e);
            None
        }
    });
    let done = tree.new_payloads_with(payloads, true, on_block);
    tree.wait_pruned();
    let done = done?;
    out.extend(done.change.committed);
    match done.verdicts.iter().find(|(status, _)| !matches!(status, PayloadStatus::Valid(_))) {
        Some((PayloadStatus::Invalid { reason, .. }, _)) => {
            let number = out.last().map_or(head, |b| b.number) + 1;
            Err(done.invalid.unwrap_or(ImportError::Invalid { number, reason: reason.clone() }))
        }
        Some((_, _)) => {
            let number = out.last().map_or(head, |b| b.number) + 1;
            Err(ImportError::Invalid { number, reason: "its parent is not stored".into() })
        }
        None => match stopped.into_inner() {
            Some(e) => Err(e),
            None => Ok(out),
        },
    }
}
