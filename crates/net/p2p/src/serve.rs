//! The server side of block sync, whatever the transport (reth's `EthRequestHandler`
//! answers): headers, bodies, receipts and BALs read from any store of the storage API
//! ([`ChainReader`]), each answer a prefix of what was asked — at most the item limit, the
//! item that crosses [`SOFT_RESPONSE_LIMIT`] bytes the last, nothing after the first block the
//! store does not hold. A read that fails is an error, never a shorter answer.

use alloy_consensus::{BlockBody, Header, ReceiptEnvelope, TxEnvelope};
use alloy_eips::eip1898::HashOrNumber;
use alloy_primitives::B256;
use alloy_rlp::Encodable;
use gigagas_bal::BlockAccessList;
use gigagas_eth_wire_types::{MAX_HEADERS, SOFT_RESPONSE_LIMIT};
use gigagas_storage_api::{ChainReader, ProviderError};
use std::sync::Arc;

/// Answers sync requests from `provider`.
#[derive(Debug, Clone)]
pub struct ChainServer {
    provider: Arc<dyn ChainReader>,
}

impl ChainServer {
    /// A server reading `provider`.
    pub fn new(provider: Arc<dyn ChainReader>) -> Self {
        Self { provider }
    }

    /// The store read.
    pub fn provider(&self) -> &Arc<dyn ChainReader> {
        &self.provider
    }

    /// Up to `limit` (at most [`MAX_HEADERS`]) canonical headers from `start`, every
    /// `skip + 1`-th, descending when `reverse`; stops at a block not held or the soft limit.
    ///
    /// # Errors
    /// [`ProviderError`] when a read fails.
    pub fn headers(
        &self,
        start: HashOrNumber,
        limit: u64,
        skip: u64,
        reverse: bool,
    ) -> Result<Vec<Header>, ProviderError> {
        let Some(mut number) = (match start {
            HashOrNumber::Number(n) => Some(n),
            HashOrNumber::Hash(h) => self.provider.block_number(&h)?,
        }) else {
            return Ok(Vec::new());
        };
        let step = skip.saturating_add(1);
        let mut out = Vec::new();
        let mut bytes = 0;
        while (out.len() as u64) < limit.min(MAX_HEADERS) && bytes < SOFT_RESPONSE_LIMIT {
            let Some(header) = self.provider.header_by_number(number)? else { break };
            bytes += header.length();
            out.push(header);
            number = match if reverse { number.checked_sub(step) } else { number.checked_add(step) }
            {
                Some(n) => n,
                None => break,
            };
        }
        Ok(out)
    }

    /// The bodies of `hashes`, at most `max_items`.
    ///
    /// # Errors
    /// [`ProviderError`] when a read fails.
    pub fn bodies(
        &self,
        hashes: &[B256],
        max_items: usize,
    ) -> Result<Vec<BlockBody<TxEnvelope>>, ProviderError> {
        within_limits(hashes, max_items, |hash| {
            let Some(number) = self.provider.block_number(hash)? else { return Ok(None) };
            Ok(self.provider.body_by_number(number)?.map(|body| (body.length(), body)))
        })
    }

    /// The receipts of `hashes`' blocks, at most `max_items` blocks.
    ///
    /// # Errors
    /// [`ProviderError`] when a read fails.
    pub fn receipts(
        &self,
        hashes: &[B256],
        max_items: usize,
    ) -> Result<Vec<Vec<ReceiptEnvelope>>, ProviderError> {
        within_limits(hashes, max_items, |hash| {
            let Some(number) = self.provider.block_number(hash)? else { return Ok(None) };
            Ok(self.provider.receipts_by_number(number)?.map(|r| (r.length(), r)))
        })
    }

    /// The receipts of one block, `None` when the block or its receipts are not held.
    ///
    /// # Errors
    /// [`ProviderError`] when a read fails.
    pub fn block_receipts(
        &self,
        hash: &B256,
    ) -> Result<Option<Vec<ReceiptEnvelope>>, ProviderError> {
        let Some(number) = self.provider.block_number(hash)? else { return Ok(None) };
        self.provider.receipts_by_number(number)
    }

    /// The BALs of `hashes`' blocks (`None` for a block held without one, or not held), at
    /// most `max_items`.
    ///
    /// # Errors
    /// [`ProviderError`] when a read fails.
    pub fn access_lists(
        &self,
        hashes: &[B256],
        max_items: usize,
    ) -> Result<Vec<Option<BlockAccessList>>, ProviderError> {
        within_limits(hashes, max_items, |hash| {
            let bal = match self.provider.block_number(hash)? {
                Some(number) => self.provider.block_access_list(number)?,
                None => None,
            };
            Ok(Some((bal.as_ref().map_or(1, |b| b.length()), bal)))
        })
    }
}

/// The answers `item` gives for `hashes`, in order: at most `max_items`, the one that crosses
/// [`SOFT_RESPONSE_LIMIT`] bytes the last, and none after the first `None` (a block not held).
/// `item` gives an answer with its encoded size.
fn within_limits<T>(
    hashes: &[B256],
    max_items: usize,
    mut item: impl FnMut(&B256) -> Result<Option<(usize, T)>, ProviderError>,
) -> Result<Vec<T>, ProviderError> {
    let mut out = Vec::new();
    let mut bytes = 0;
    for hash in hashes.iter().take(max_items) {
        if bytes >= SOFT_RESPONSE_LIMIT {
            break;
        }
        let Some((size, answer)) = item(hash)? else { break };
        bytes += size;
        out.push(answer);
    }
    Ok(out)
}
