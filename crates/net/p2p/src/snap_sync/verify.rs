//! Every snap answer checked before any of it is written: account ranges and storage ranges
//! against their roots with their boundary proofs, codes against the hashes asked for. A peer
//! whose answer fails is reported; nothing of it reaches the store.

use crate::snap::full_account;
use alloy_primitives::{keccak256, Bytes, B256, U256};
use alloy_rlp::Decodable;
use alloy_trie::TrieAccount;
use gigagas_eth_wire_types::snap::{AccountRange, ByteCodes, StorageRanges};
use gigagas_trie::{verify_range_proof_nodes, EncodedNode, RangeProofError};
use std::collections::HashSet;

/// Why a peer's snap answer is wrong.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SnapAnswerError {
    /// An account's slim body does not decode.
    #[error("account {hash}: {reason}")]
    Account {
        /// The account hash.
        hash: B256,
        /// The decoder's error.
        reason: String,
    },
    /// The accounts and their proof do not prove the range.
    #[error("accounts from {origin}: {source}")]
    AccountProof {
        /// The origin asked for.
        origin: B256,
        /// What the proof check found.
        source: Box<RangeProofError>,
    },
    /// More storage lists than accounts asked for.
    #[error("{got} storage lists for {asked} accounts")]
    TooManyLists {
        /// Accounts asked for.
        asked: usize,
        /// Lists answered.
        got: usize,
    },
    /// A slot's value does not decode.
    #[error("slot {slot} of account {account}: {reason}")]
    Slot {
        /// The account hash.
        account: B256,
        /// The slot hash.
        slot: B256,
        /// The decoder's error.
        reason: String,
    },
    /// An account's slots and the proof do not prove the range.
    #[error("storage of account {account} from {origin}: {source}")]
    StorageProof {
        /// The account hash.
        account: B256,
        /// The origin asked for.
        origin: B256,
        /// What the proof check found.
        source: Box<RangeProofError>,
    },
    /// A code nobody asked for (or asked for once and sent twice).
    #[error("code {hash} was not asked for")]
    UnrequestedCode {
        /// keccak256 of the code sent.
        hash: B256,
    },
}

/// A proven account range.
#[derive(Debug)]
pub(crate) struct ProvenAccounts {
    /// (hash, account, bytes as snap counts them), in order.
    pub accounts: Vec<(B256, TrieAccount, u64)>,
    /// Whether the trie holds accounts after the last one.
    pub more: bool,
    /// The account trie's nodes the check built ([`verify_range_proof_nodes`]).
    pub nodes: Vec<EncodedNode>,
}

/// Checks an `AccountRange` answer for the range from `origin` of the state `root`.
pub(crate) fn account_range(
    root: B256,
    origin: B256,
    answer: &AccountRange,
) -> Result<ProvenAccounts, SnapAnswerError> {
    let mut accounts = Vec::with_capacity(answer.accounts.len());
    let mut keys = Vec::with_capacity(answer.accounts.len());
    let mut values = Vec::with_capacity(answer.accounts.len());
    for data in &answer.accounts {
        let account = full_account(&data.body)
            .map_err(|e| SnapAnswerError::Account { hash: data.hash, reason: e.to_string() })?;
        keys.push(data.hash);
        values.push(alloy_rlp::encode(account));
        accounts.push((data.hash, account, 32 + data.body.len() as u64));
    }
    let (more, nodes) = verify_range_proof_nodes(root, origin, &keys, &values, &answer.proof)
        .map_err(|e| SnapAnswerError::AccountProof { origin, source: Box::new(e) })?;
    Ok(ProvenAccounts { accounts, more, nodes })
}

/// One account's proven slots from a `StorageRanges` answer.
#[derive(Debug)]
pub(crate) struct ProvenStorage {
    /// The account hash.
    pub account: B256,
    /// (slot hash, value, bytes as snap counts them), in order.
    pub slots: Vec<(B256, U256, u64)>,
    /// Whether the storage trie holds slots after the last one.
    pub more: bool,
    /// The storage trie's nodes the check built ([`verify_range_proof_nodes`]).
    pub nodes: Vec<EncodedNode>,
}

/// Checks a `StorageRanges` answer for `accounts` (hash and storage root, in the order asked),
/// the first from `origin`. Each list but the last must be the account's whole storage; the
/// last may be a range proven by the answer's proof.
pub(crate) fn storage_ranges(
    accounts: &[(B256, B256)],
    origin: B256,
    answer: &StorageRanges,
) -> Result<Vec<ProvenStorage>, SnapAnswerError> {
    if answer.slots.len() > accounts.len() {
        return Err(SnapAnswerError::TooManyLists {
            asked: accounts.len(),
            got: answer.slots.len(),
        });
    }
    let mut out = Vec::with_capacity(answer.slots.len());
    // A proof with no list proves that the first account holds nothing from the origin on.
    let lists = answer.slots.len().max(usize::from(!answer.proof.is_empty()));
    for (i, &(account, root)) in accounts.iter().enumerate().take(lists) {
        let list: &[_] = answer.slots.get(i).map_or(&[], |l| l.as_slice());
        let from = if i == 0 { origin } else { B256::ZERO };
        let proof: &[Bytes] = if i + 1 == lists { &answer.proof } else { &[] };
        let mut slots = Vec::with_capacity(list.len());
        let mut keys = Vec::with_capacity(list.len());
        for data in list {
            let value = U256::decode(&mut &data.body[..]).map_err(|e| SnapAnswerError::Slot {
                account,
                slot: data.hash,
                reason: e.to_string(),
            })?;
            keys.push(data.hash);
            slots.push((data.hash, value, 32 + data.body.len() as u64));
        }
        let values: Vec<&[u8]> = list.iter().map(|d| &d.body[..]).collect();
        let (more, nodes) =
            verify_range_proof_nodes(root, from, &keys, &values, proof).map_err(|e| {
                SnapAnswerError::StorageProof { account, origin: from, source: Box::new(e) }
            })?;
        out.push(ProvenStorage { account, slots, more, nodes });
    }
    Ok(out)
}

/// Checks a `ByteCodes` answer to a request for `asked`: every code is one asked for, once.
/// Answers the codes by hash.
pub(crate) fn byte_codes(
    asked: &[B256],
    answer: &ByteCodes,
) -> Result<Vec<(B256, Bytes)>, SnapAnswerError> {
    let mut wanted: HashSet<B256> = asked.iter().copied().collect();
    answer
        .codes
        .iter()
        .map(|code| {
            let hash = keccak256(code);
            if wanted.remove(&hash) {
                Ok((hash, code.clone()))
            } else {
                Err(SnapAnswerError::UnrequestedCode { hash })
            }
        })
        .collect()
}
