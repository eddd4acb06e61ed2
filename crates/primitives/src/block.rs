//! Block input types: a block as it arrives (signed transactions) and after sender recovery.

use crate::{ChainSpec, RecoveryError, SenderCache};
use alloy_consensus::{transaction::SignerRecoverable, Header, TxEnvelope};
use alloy_eips::eip4895::Withdrawals;
use alloy_primitives::{Address, B256};
use rayon::prelude::*;

/// A block as handed to the executor: header, signed transactions and withdrawals.
#[derive(Debug, Clone)]
pub struct BlockInput {
    /// Block hash as stated by the source (not recomputed).
    pub hash: B256,
    /// Consensus header (`gasUsed`, `receiptsRoot`, `logsBloom` are validated against execution).
    pub header: Header,
    /// Signed transactions in block order.
    pub transactions: Vec<TxEnvelope>,
    /// Senders as stated by the source (RPC `from`), one per transaction; empty if unknown.
    /// Recovery checks the signature against them.
    pub claimed_senders: Vec<Address>,
    /// EIP-4895 withdrawals (Shanghai and later), `None` before.
    pub withdrawals: Option<Withdrawals>,
    /// Ommer (uncle) headers. The mainnet data holds only uncle hashes, so this is empty there;
    /// see `docs/architecture.md` for the effect on block rewards.
    pub ommers: Vec<Header>,
}

impl BlockInput {
    /// Block number.
    pub fn number(&self) -> u64 {
        self.header.number
    }

    /// Recovers every sender (secp256k1 ECDSA, EIP-155 replay protection) on the calling thread.
    /// EIP-2's low-`s` rule applies from Homestead on; Frontier signatures may have a high `s`.
    ///
    /// # Errors
    /// [`RecoveryError`] naming block and transaction index on an invalid signature or a
    /// sender that differs from [`Self::claimed_senders`].
    pub fn recover(&self, chain: &ChainSpec) -> Result<Vec<Address>, RecoveryError> {
        let low_s = chain.is_homestead(self.number());
        (0..self.transactions.len()).map(|i| self.recover_one(i, low_s)).collect()
    }

    /// Recovers every sender in parallel on the current rayon pool.
    ///
    /// # Errors
    /// As [`Self::recover`].
    pub fn par_recover(&self, chain: &ChainSpec) -> Result<Vec<Address>, RecoveryError> {
        let low_s = chain.is_homestead(self.number());
        (0..self.transactions.len()).into_par_iter().map(|i| self.recover_one(i, low_s)).collect()
    }

    /// [`Self::par_recover`] where `known` holds a transaction's sender already (looked up by
    /// the hash of the block's own transaction): those are taken as recovered (a transaction
    /// hash covers the signature), the rest recovered in parallel. Returns the senders and how
    /// many came from `known`.
    ///
    /// # Errors
    /// As [`Self::recover`]; a known sender that differs from [`Self::claimed_senders`] is a
    /// [`RecoveryError::SenderMismatch`] as a recovered one is.
    pub fn par_recover_cached(
        &self,
        chain: &ChainSpec,
        known: &SenderCache,
    ) -> Result<(Vec<Address>, usize), RecoveryError> {
        let low_s = chain.is_homestead(self.number());
        let cached = self.known_senders(known)?;
        let hits = cached.iter().filter(|s| s.is_some()).count();
        let senders = cached
            .into_par_iter()
            .enumerate()
            .map(|(i, sender)| match sender {
                Some(sender) => Ok(sender),
                None => self.recover_one(i, low_s),
            })
            .collect::<Result<_, _>>()?;
        Ok((senders, hits))
    }

    /// The sender `known` holds for each transaction (looked up by the hash of the block's own
    /// transaction), each checked against [`Self::claimed_senders`]; `None` where it holds none.
    ///
    /// # Errors
    /// [`RecoveryError::SenderMismatch`] for a known sender other than the claimed one.
    pub(crate) fn known_senders(
        &self,
        known: &SenderCache,
    ) -> Result<Vec<Option<Address>>, RecoveryError> {
        // The hashes outside the cache's lock (each a keccak-256 of the encoding unless the
        // decoder kept it).
        let hashes: Vec<B256> = self.transactions.par_iter().map(|tx| *tx.tx_hash()).collect();
        let cached = known.get_many(&hashes);
        for (i, sender) in cached.iter().enumerate() {
            if let Some(sender) = sender {
                self.check_claimed(i, *sender)?;
            }
        }
        Ok(cached)
    }

    pub(crate) fn recover_one(
        &self,
        tx_index: usize,
        low_s: bool,
    ) -> Result<Address, RecoveryError> {
        let tx = &self.transactions[tx_index];
        let block = self.number();
        let recovered = if low_s { tx.recover_signer() } else { tx.recover_signer_unchecked() };
        let recovered = recovered.map_err(|_| RecoveryError::InvalidSignature {
            block,
            tx_index,
            tx_hash: *tx.tx_hash(),
        })?;
        self.check_claimed(tx_index, recovered)
    }

    /// `recovered` when it is the sender the source claimed for transaction `tx_index` (or
    /// none was claimed).
    pub(crate) fn check_claimed(
        &self,
        tx_index: usize,
        recovered: Address,
    ) -> Result<Address, RecoveryError> {
        if let Some(&claimed) = self.claimed_senders.get(tx_index) {
            if claimed != recovered {
                return Err(RecoveryError::SenderMismatch {
                    block: self.number(),
                    tx_index,
                    tx_hash: *self.transactions[tx_index].tx_hash(),
                    recovered,
                    claimed,
                });
            }
        }
        Ok(recovered)
    }
}
