//! The block downloader: a range of blocks over any [`BlockClient`].
//!
//! Flow of [`BlockDownloader::download_range`]: the connected peers ranked by score (best
//! first, equal ones in turn); from the first, the headers of the range (each must extend the
//! chain from the given parent), then their bodies (asked again for the rest while a peer
//! answers part of them) and BALs by hash; every body checked against its header's
//! transactions, ommers and withdrawals roots, every BAL against the header's BAL hash. A
//! failed request costs the peer [`FAILED_REQUEST_PENALTY`] and the next peer is asked; an
//! answer that cannot be right costs it [`BAD_ANSWER_PENALTY`] and is reported to the
//! transport ([`BlockClient::report_bad_message`]); a delivered range earns it
//! [`SUCCESS_REWARD`].

use crate::{
    client::{BlockClient, RequestError},
    scores::{PeerScores, BAD_ANSWER_PENALTY, FAILED_REQUEST_PENALTY, SUCCESS_REWARD},
};
use alloy_consensus::{
    proofs::{calculate_ommers_root, calculate_transaction_root, calculate_withdrawals_root},
    Block, Header, TxEnvelope,
};
use alloy_eips::eip1898::HashOrNumber;
use alloy_primitives::B256;
use gigagas_bal::BlockAccessList;
use std::sync::atomic::{AtomicUsize, Ordering};

/// A block as downloaded: checked against its header, with the peer's BAL when it had one
/// (checked against the header's BAL hash).
#[derive(Debug, Clone, PartialEq)]
pub struct DownloadedBlock {
    /// The block.
    pub block: Block<TxEnvelope>,
    /// Its EIP-7928 BAL, when the peer had it.
    pub bal: Option<BlockAccessList>,
}

/// How hard the downloader tries.
#[derive(Debug, Clone, Copy)]
pub struct DownloaderConfig {
    /// Peers asked for one range at most before giving up.
    pub max_attempts: usize,
    /// A peer whose score fell to this or below is not asked.
    pub min_score: i64,
}

impl Default for DownloaderConfig {
    fn default() -> Self {
        Self { max_attempts: 8, min_score: -BAD_ANSWER_PENALTY }
    }
}

/// Why a range could not be downloaded.
#[derive(Debug, thiserror::Error)]
pub enum DownloadError {
    /// No connected peer is left to ask.
    #[error("no peer to download from")]
    NoPeers,
    /// Every peer asked failed or answered wrongly.
    #[error("{attempts} peers asked, none delivered blocks {first}..: last {last}")]
    Exhausted {
        /// The range's first block.
        first: u64,
        /// Peers asked.
        attempts: usize,
        /// The last peer's failure.
        last: String,
    },
}

/// What one peer's attempt came to.
enum Fault {
    /// The request failed, or the peer had nothing to give: not its fault as such.
    Failed(String),
    /// An answer that cannot be right.
    Bad(String),
}

impl From<RequestError> for Fault {
    fn from(e: RequestError) -> Self {
        match e {
            RequestError::UnexpectedResponse { .. } => Self::Bad(e.to_string()),
            RequestError::Transport(_) => Self::Failed(e.to_string()),
        }
    }
}

/// Downloads ranges of blocks over `C`, scoring its peers. See the module documentation.
#[derive(Debug)]
pub struct BlockDownloader<C: BlockClient> {
    client: C,
    scores: PeerScores<C::Peer>,
    config: DownloaderConfig,
    turn: AtomicUsize,
}

impl<C: BlockClient> BlockDownloader<C> {
    /// A downloader over `client` with `config`.
    pub fn new(client: C, config: DownloaderConfig) -> Self {
        Self { client, scores: PeerScores::default(), config, turn: AtomicUsize::new(0) }
    }

    /// The client.
    pub fn client(&self) -> &C {
        &self.client
    }

    /// The peers' scores.
    pub fn scores(&self) -> &PeerScores<C::Peer> {
        &self.scores
    }

    /// Up to `count` blocks from number `first` on, the first a child of `parent`, from one
    /// peer (the best-scored that delivers): the peer and the blocks, at least one.
    ///
    /// # Errors
    /// [`DownloadError::NoPeers`] when no peer can be asked; [`DownloadError::Exhausted`] when
    /// every peer asked failed.
    pub async fn download_range(
        &self,
        first: u64,
        parent: B256,
        count: u64,
    ) -> Result<(C::Peer, Vec<DownloadedBlock>), DownloadError> {
        let turn = self.turn.fetch_add(1, Ordering::Relaxed);
        let peers = self.scores.ranked(&self.client.peers(), turn, self.config.min_score);
        if peers.is_empty() {
            return Err(DownloadError::NoPeers);
        }
        let mut last = String::new();
        let mut attempts = 0;
        for peer in peers.into_iter().take(self.config.max_attempts) {
            attempts += 1;
            match self.fetch(peer, first, parent, count).await {
                Ok(blocks) => {
                    self.scores.adjust(peer, SUCCESS_REWARD);
                    return Ok((peer, blocks));
                }
                Err(Fault::Failed(reason)) => {
                    tracing::debug!(target: "net::downloader", %peer, first, %reason, "request failed");
                    self.scores.adjust(peer, -FAILED_REQUEST_PENALTY);
                    last = format!("peer {peer}: {reason}");
                }
                Err(Fault::Bad(reason)) => {
                    tracing::warn!(target: "net::downloader", %peer, first, %reason, "bad answer: peer reported");
                    self.scores.adjust(peer, -BAD_ANSWER_PENALTY);
                    self.client.report_bad_message(peer);
                    last = format!("peer {peer}: {reason}");
                }
            }
        }
        Err(DownloadError::Exhausted { first, attempts, last })
    }

    /// One peer's attempt at the range.
    async fn fetch(
        &self,
        peer: C::Peer,
        first: u64,
        parent: B256,
        count: u64,
    ) -> Result<Vec<DownloadedBlock>, Fault> {
        let headers = self.client.get_headers(peer, HashOrNumber::Number(first), count).await?;
        if headers.is_empty() {
            return Err(Fault::Failed(format!("no headers from block {first}")));
        }
        if headers.len() as u64 > count {
            return Err(Fault::Bad(format!("{} headers for {count} asked", headers.len())));
        }
        let hashes = chain_hashes(&headers, first, parent)?;
        let mut bodies = Vec::with_capacity(hashes.len());
        while bodies.len() < hashes.len() {
            let more = self.client.get_block_bodies(peer, hashes[bodies.len()..].to_vec()).await?;
            if more.is_empty() {
                break;
            }
            bodies.extend(more);
        }
        if bodies.is_empty() {
            return Err(Fault::Failed(format!("no bodies from block {first}")));
        }
        if bodies.len() > hashes.len() {
            return Err(Fault::Bad(format!("{} bodies for {} asked", bodies.len(), hashes.len())));
        }
        let bals = self.client.get_block_access_lists(peer, hashes.clone()).await?;
        let mut blocks = Vec::with_capacity(bodies.len());
        for (i, (header, body)) in headers.into_iter().zip(bodies).enumerate() {
            if calculate_transaction_root(&body.transactions) != header.transactions_root
                || calculate_ommers_root(&body.ommers) != header.ommers_hash
                || body.withdrawals.as_ref().map(|w| calculate_withdrawals_root(w))
                    != header.withdrawals_root
            {
                return Err(Fault::Bad(format!(
                    "body of block {} does not match its header",
                    header.number
                )));
            }
            let bal = bals.get(i).cloned().flatten();
            if let (Some(bal), Some(hash)) = (&bal, header.block_access_list_hash) {
                if gigagas_bal::compute_block_access_list_hash(bal) != hash {
                    return Err(Fault::Bad(format!(
                        "BAL of block {} does not match its header's hash",
                        header.number
                    )));
                }
            }
            blocks.push(DownloadedBlock { block: Block { header, body }, bal });
        }
        Ok(blocks)
    }
}

/// The hashes of `headers`, which must be blocks `first`, `first + 1`, … each the child of the
/// one before, the first a child of `parent`; a bad answer otherwise.
fn chain_hashes(headers: &[Header], first: u64, parent: B256) -> Result<Vec<B256>, Fault> {
    let mut expected_parent = parent;
    let mut hashes = Vec::with_capacity(headers.len());
    for (i, header) in headers.iter().enumerate() {
        if header.number != first + i as u64 || header.parent_hash != expected_parent {
            return Err(Fault::Bad(format!("header {} does not extend the chain", header.number)));
        }
        expected_parent = header.hash_slow();
        hashes.push(expected_parent);
    }
    Ok(hashes)
}
