//! The block downloader over any [`BlockClient`]: ranges of blocks by number, and the chain
//! that ends at a given block, headers first from that block back (reth's header stage).
//!
//! Flow of [`BlockDownloader::download_range`]: the connected peers ranked by score (best
//! first, equal ones in turn); from the first, the headers of the range (each must extend the
//! chain from the given parent), then their bodies (asked again for the rest while a peer
//! answers part of them) and BALs by hash; every body checked against its header's
//! transactions, ommers and withdrawals roots, every BAL against the header's BAL hash.
//! [`BlockDownloader::download_headers_back`] asks for headers from a target hash towards
//! genesis (eth's `reverse`), each the parent of the one before, until one's parent is a block
//! the caller holds: the chain then ends at the target whatever the peers' heads are, and a
//! peer cannot slip in another branch. [`BlockDownloader::download_bodies`] fetches the
//! bodies and BALs of such headers, [`BlockDownloader::download_receipts`] their receipts
//! (each block's checked against its header's receipts root). A failed request costs the peer
//! [`FAILED_REQUEST_PENALTY`] and the next peer is asked; an answer that cannot be right costs
//! it [`BAD_ANSWER_PENALTY`] and is reported to the transport
//! ([`BlockClient::report_bad_message`]); a delivered answer earns it [`SUCCESS_REWARD`].

use crate::{
    client::{BlockClient, RequestError},
    scores::{PeerScores, BAD_ANSWER_PENALTY, FAILED_REQUEST_PENALTY, SUCCESS_REWARD},
};
use alloy_consensus::{
    proofs::{
        calculate_ommers_root, calculate_receipt_root, calculate_transaction_root,
        calculate_withdrawals_root,
    },
    Block, Header, Receipt, ReceiptEnvelope, TxEnvelope, TxType,
};
use alloy_eips::eip1898::HashOrNumber;
use alloy_primitives::B256;
use gigagas_bal::BlockAccessList;
use gigagas_eth_wire_types::Receipt69;
use std::{
    future::Future,
    sync::atomic::{AtomicUsize, Ordering},
};

/// Headers asked per request when walking back from a target (eth's per-request limit).
pub const HEADERS_BACK_PER_REQUEST: u64 = 1024;

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
    #[error("{attempts} peers asked, none delivered {what}: the last: {last}")]
    Exhausted {
        /// What was asked.
        what: DownloadRequest,
        /// Peers asked.
        attempts: usize,
        /// The last peer's failure.
        #[source]
        last: PeerFault,
    },
    /// Walking back from the target reached a genesis block this node does not hold.
    #[error("headers back from {target} reach a genesis this node does not hold")]
    Unlinked {
        /// The target.
        target: B256,
    },
    /// Walking back from the target passed `max` headers without reaching a block held.
    #[error("headers back from {target}: {max} fetched without reaching a block this node holds")]
    TooFar {
        /// The target.
        target: B256,
        /// Headers fetched.
        max: u64,
    },
}

/// What the peers were asked for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DownloadRequest {
    /// Blocks (headers, bodies, BALs) from block `0`.
    Blocks(u64),
    /// Headers back from the block of this hash.
    HeadersBack(B256),
    /// Bodies and BALs from block `0` (headers known).
    Bodies(u64),
    /// Receipts from block `0`.
    Receipts(u64),
}

impl std::fmt::Display for DownloadRequest {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Blocks(first) => write!(f, "blocks {first}.."),
            Self::HeadersBack(hash) => write!(f, "headers back from {hash}"),
            Self::Bodies(first) => write!(f, "bodies from block {first}"),
            Self::Receipts(first) => write!(f, "receipts from block {first}"),
        }
    }
}

/// Why one peer's attempt came to nothing: a failed request or an empty answer (not the
/// peer's fault as such: its score drops a little), or an answer that cannot be right (the
/// peer is reported: [`PeerFault::is_bad`]).
#[derive(Debug, thiserror::Error)]
pub enum PeerFault {
    /// The request failed (the session gone, a timeout), or was answered with another kind.
    #[error(transparent)]
    Request(#[from] RequestError),
    /// No item of `what` from block `first`.
    #[error("no {what} from block {first}")]
    Empty {
        /// Headers, bodies or receipts.
        what: &'static str,
        /// The first block asked.
        first: u64,
    },
    /// Not the header asked for back from.
    #[error("no header {0}")]
    NoHeader(B256),
    /// More items than asked.
    #[error("{got} {what} for {asked} asked")]
    TooMany {
        /// Headers, bodies or blocks' receipts.
        what: &'static str,
        /// Items in the answer.
        got: usize,
        /// Items asked.
        asked: usize,
    },
    /// The first header is another block than the one asked for.
    #[error("asked for header {asked}, got block {got}")]
    WrongHeader {
        /// The hash asked.
        asked: B256,
        /// The number of the block served.
        got: u64,
    },
    /// A header back is not the parent of the one before it.
    #[error("header {parent} is not the parent of header {child}")]
    NotParent {
        /// The one that should be the parent.
        parent: u64,
        /// Its child.
        child: u64,
    },
    /// A header forward does not extend the chain (another number or parent).
    #[error("header {0} does not extend the chain")]
    NotExtending(u64),
    /// A body whose transactions, ommers or withdrawals do not match its header.
    #[error("body of block {0} does not match its header")]
    BodyMismatch(u64),
    /// A BAL whose hash is not its header's.
    #[error("BAL of block {0} does not match its header's hash")]
    BalMismatch(u64),
    /// Receipts whose root is not their header's.
    #[error("receipts of block {0} do not match its header's receipts root")]
    ReceiptsMismatch(u64),
    /// A receipt of a transaction type that does not exist.
    #[error("block {block}: a receipt: {source}")]
    ReceiptType {
        /// The block.
        block: u64,
        /// The type's error.
        source: <TxType as TryFrom<u8>>::Error,
    },
}

impl PeerFault {
    /// Whether the answer cannot be right (the peer is reported), rather than missing.
    pub fn is_bad(&self) -> bool {
        match self {
            Self::Request(RequestError::UnexpectedResponse { .. }) => true,
            Self::Request(RequestError::Transport(_)) | Self::Empty { .. } | Self::NoHeader(_) => {
                false
            }
            _ => true,
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
        self.ask_peers(DownloadRequest::Blocks(first), |peer| {
            self.fetch(peer, first, parent, count)
        })
        .await
    }

    /// The headers of the chain that ends at block `target`: asked from `target` towards
    /// genesis, [`HEADERS_BACK_PER_REQUEST`] a request (each request from the best-scored peer
    /// that delivers), each header the parent of the one before, until one whose parent
    /// (number, hash) `held` says this node holds. Returned ascending: the first is a child of
    /// a held block, the last is `target`.
    ///
    /// # Errors
    /// [`DownloadError::NoPeers`] / [`DownloadError::Exhausted`] as for ranges;
    /// [`DownloadError::TooFar`] past `max` headers.
    pub async fn download_headers_back(
        &self,
        target: B256,
        held: impl Fn(u64, B256) -> bool,
        max: u64,
    ) -> Result<Vec<Header>, DownloadError> {
        let mut headers: Vec<Header> = Vec::new();
        let (mut next, mut next_number) = (target, None);
        loop {
            let what = DownloadRequest::HeadersBack(next);
            let (_, batch) = self
                .ask_peers(what, |peer| self.fetch_headers_back(peer, next, next_number))
                .await?;
            for header in batch {
                let parent = (header.number.checked_sub(1), header.parent_hash);
                headers.push(header);
                if let (Some(number), hash) = parent {
                    if held(number, hash) {
                        headers.reverse();
                        return Ok(headers);
                    }
                }
                if headers.len() as u64 >= max {
                    return Err(DownloadError::TooFar { target, max });
                }
            }
            let lowest = headers.last().expect("a non-empty batch");
            if lowest.number == 0 {
                // Genesis reached and not held: not this node's chain (peers on another
                // genesis are refused at the handshake, so this is a lying peer).
                return Err(DownloadError::Unlinked { target });
            }
            (next, next_number) = (lowest.parent_hash, Some(lowest.number - 1));
        }
    }

    /// The blocks of `headers` (a chain, ascending, as [`Self::download_headers_back`] gives):
    /// bodies and BALs by hash, checked against the headers, from as many peers as it takes.
    ///
    /// # Errors
    /// [`DownloadError::NoPeers`] / [`DownloadError::Exhausted`] when the peers stop
    /// delivering.
    pub async fn download_bodies(
        &self,
        headers: Vec<Header>,
    ) -> Result<Vec<DownloadedBlock>, DownloadError> {
        let hashes: Vec<B256> = headers.iter().map(Header::hash_slow).collect();
        let mut blocks: Vec<DownloadedBlock> = Vec::with_capacity(headers.len());
        while blocks.len() < headers.len() {
            let done = blocks.len();
            let what = DownloadRequest::Bodies(headers[done].number);
            let (_, more) = self
                .ask_peers(what, |peer| {
                    self.fetch_bodies(peer, headers[done..].to_vec(), hashes[done..].to_vec())
                })
                .await?;
            blocks.extend(more);
        }
        Ok(blocks)
    }

    /// The receipts of `headers` (a chain, ascending), each block's list checked against its
    /// header's receipts root, from as many peers as it takes: what a node that did not execute
    /// these blocks (snap sync's catch-up on BALs) serves and answers `eth_getTransactionReceipt`
    /// from.
    ///
    /// # Errors
    /// [`DownloadError::NoPeers`] / [`DownloadError::Exhausted`] when the peers stop
    /// delivering.
    pub async fn download_receipts(
        &self,
        headers: &[Header],
    ) -> Result<Vec<Vec<ReceiptEnvelope>>, DownloadError> {
        let mut receipts: Vec<Vec<ReceiptEnvelope>> = Vec::with_capacity(headers.len());
        while receipts.len() < headers.len() {
            let done = receipts.len();
            let what = DownloadRequest::Receipts(headers[done].number);
            let (_, more) =
                self.ask_peers(what, |peer| self.fetch_receipts(peer, &headers[done..])).await?;
            receipts.extend(more);
        }
        Ok(receipts)
    }

    /// One peer's receipts for `headers`: at least one block's, each checked against its
    /// header's receipts root.
    async fn fetch_receipts(
        &self,
        peer: C::Peer,
        headers: &[Header],
    ) -> Result<Vec<Vec<ReceiptEnvelope>>, PeerFault> {
        let hashes: Vec<B256> = headers.iter().map(Header::hash_slow).collect();
        let lists = self.client.get_receipts(peer, hashes).await?;
        let first = headers.first().map_or(0, |h| h.number);
        if lists.is_empty() {
            return Err(PeerFault::Empty { what: "receipts", first });
        }
        if lists.len() > headers.len() {
            let (got, asked) = (lists.len(), headers.len());
            return Err(PeerFault::TooMany { what: "blocks' receipts", got, asked });
        }
        let mut out = Vec::with_capacity(lists.len());
        for (header, list) in headers.iter().zip(lists) {
            let receipts = list
                .into_iter()
                .map(receipt_envelope)
                .collect::<Result<Vec<_>, _>>()
                .map_err(|source| PeerFault::ReceiptType { block: header.number, source })?;
            if calculate_receipt_root(&receipts) != header.receipts_root {
                return Err(PeerFault::ReceiptsMismatch(header.number));
            }
            out.push(receipts);
        }
        Ok(out)
    }

    /// `attempt` with each peer, ranked, until one delivers: that peer and its answer. Peers
    /// are scored by the outcome (see the module documentation).
    async fn ask_peers<T, F, Fut>(
        &self,
        what: DownloadRequest,
        attempt: F,
    ) -> Result<(C::Peer, T), DownloadError>
    where
        F: Fn(C::Peer) -> Fut,
        Fut: Future<Output = Result<T, PeerFault>>,
    {
        let turn = self.turn.fetch_add(1, Ordering::Relaxed);
        let peers = self.scores.ranked(&self.client.peers(), turn, self.config.min_score);
        if peers.is_empty() {
            return Err(DownloadError::NoPeers);
        }
        let mut last = None;
        let mut attempts = 0;
        for peer in peers.into_iter().take(self.config.max_attempts) {
            attempts += 1;
            match attempt(peer).await {
                Ok(answer) => {
                    self.scores.adjust(peer, SUCCESS_REWARD);
                    return Ok((peer, answer));
                }
                Err(fault) if fault.is_bad() => {
                    tracing::warn!(target: "net::downloader", %peer, %what, %fault, "bad answer: peer reported");
                    self.scores.adjust(peer, -BAD_ANSWER_PENALTY);
                    self.client.report_bad_message(peer);
                    last = Some(fault);
                }
                Err(fault) => {
                    tracing::debug!(target: "net::downloader", %peer, %what, %fault, "request failed");
                    self.scores.adjust(peer, -FAILED_REQUEST_PENALTY);
                    last = Some(fault);
                }
            }
        }
        match last {
            Some(last) => Err(DownloadError::Exhausted { what, attempts, last }),
            None => Err(DownloadError::NoPeers),
        }
    }

    /// One peer's headers from `start` back: the first must be `start` (block `number` when
    /// known), each the parent of the one before.
    async fn fetch_headers_back(
        &self,
        peer: C::Peer,
        start: B256,
        number: Option<u64>,
    ) -> Result<Vec<Header>, PeerFault> {
        let headers = self
            .client
            .get_headers(peer, HashOrNumber::Hash(start), HEADERS_BACK_PER_REQUEST, true)
            .await?;
        let Some(first) = headers.first() else {
            return Err(PeerFault::NoHeader(start));
        };
        if headers.len() as u64 > HEADERS_BACK_PER_REQUEST {
            let (got, asked) = (headers.len(), HEADERS_BACK_PER_REQUEST as usize);
            return Err(PeerFault::TooMany { what: "headers", got, asked });
        }
        if first.hash_slow() != start || number.is_some_and(|n| n != first.number) {
            return Err(PeerFault::WrongHeader { asked: start, got: first.number });
        }
        for pair in headers.windows(2) {
            if pair[1].number + 1 != pair[0].number || pair[1].hash_slow() != pair[0].parent_hash {
                return Err(PeerFault::NotParent { parent: pair[1].number, child: pair[0].number });
            }
        }
        Ok(headers)
    }

    /// One peer's attempt at the range.
    async fn fetch(
        &self,
        peer: C::Peer,
        first: u64,
        parent: B256,
        count: u64,
    ) -> Result<Vec<DownloadedBlock>, PeerFault> {
        let headers =
            self.client.get_headers(peer, HashOrNumber::Number(first), count, false).await?;
        if headers.is_empty() {
            return Err(PeerFault::Empty { what: "headers", first });
        }
        if headers.len() as u64 > count {
            let (got, asked) = (headers.len(), count as usize);
            return Err(PeerFault::TooMany { what: "headers", got, asked });
        }
        let hashes = chain_hashes(&headers, first, parent)?;
        self.fetch_bodies(peer, headers, hashes).await
    }

    /// One peer's bodies and BALs for `headers` (whose hashes are `hashes`): at least one
    /// block, each body and BAL checked against its header.
    async fn fetch_bodies(
        &self,
        peer: C::Peer,
        headers: Vec<Header>,
        hashes: Vec<B256>,
    ) -> Result<Vec<DownloadedBlock>, PeerFault> {
        let first = headers.first().map_or(0, |h| h.number);
        let mut bodies = Vec::with_capacity(hashes.len());
        while bodies.len() < hashes.len() {
            let more = self.client.get_block_bodies(peer, hashes[bodies.len()..].to_vec()).await?;
            if more.is_empty() {
                break;
            }
            bodies.extend(more);
        }
        if bodies.is_empty() {
            return Err(PeerFault::Empty { what: "bodies", first });
        }
        if bodies.len() > hashes.len() {
            let (got, asked) = (bodies.len(), hashes.len());
            return Err(PeerFault::TooMany { what: "bodies", got, asked });
        }
        // BALs until each block has its entry: a peer stops an answer at its size limit (a
        // few large BALs fill it), and is asked again for the rest.
        let mut bals: Vec<Option<BlockAccessList>> = Vec::with_capacity(bodies.len());
        while bals.len() < bodies.len() {
            let more = self
                .client
                .get_block_access_lists(peer, hashes[bals.len()..bodies.len()].to_vec())
                .await?;
            if more.is_empty() {
                break;
            }
            bals.extend(more);
        }
        let mut blocks = Vec::with_capacity(bodies.len());
        for (i, (header, body)) in headers.into_iter().zip(bodies).enumerate() {
            if calculate_transaction_root(&body.transactions) != header.transactions_root
                || calculate_ommers_root(&body.ommers) != header.ommers_hash
                || body.withdrawals.as_ref().map(|w| calculate_withdrawals_root(w))
                    != header.withdrawals_root
            {
                return Err(PeerFault::BodyMismatch(header.number));
            }
            let bal = bals.get(i).cloned().flatten();
            if let (Some(bal), Some(hash)) = (&bal, header.block_access_list_hash) {
                if gigagas_bal::compute_block_access_list_hash(bal) != hash {
                    return Err(PeerFault::BalMismatch(header.number));
                }
            }
            blocks.push(DownloadedBlock { block: Block { header, body }, bal });
        }
        Ok(blocks)
    }
}

/// The stored form of an eth/69 receipt: its bloom computed from its logs; an error for a
/// transaction type that does not exist.
fn receipt_envelope(r: Receipt69) -> Result<ReceiptEnvelope, <TxType as TryFrom<u8>>::Error> {
    let tx_type = TxType::try_from(r.tx_type)?;
    let receipt =
        Receipt { status: r.status, cumulative_gas_used: r.cumulative_gas_used, logs: r.logs };
    Ok(ReceiptEnvelope::from_typed(tx_type, receipt.with_bloom()))
}

/// The hashes of `headers`, which must be blocks `first`, `first + 1`, … each the child of the
/// one before, the first a child of `parent`; a bad answer otherwise.
fn chain_hashes(headers: &[Header], first: u64, parent: B256) -> Result<Vec<B256>, PeerFault> {
    let mut expected_parent = parent;
    let mut hashes = Vec::with_capacity(headers.len());
    for (i, header) in headers.iter().enumerate() {
        if header.number != first + i as u64 || header.parent_hash != expected_parent {
            return Err(PeerFault::NotExtending(header.number));
        }
        expected_parent = header.hash_slow();
        hashes.push(expected_parent);
    }
    Ok(hashes)
}
