//! `eth_syncing` as geth answers it: `false` once synced, else an object of geth's progress
//! fields (every one a hex quantity), whatever sync is running.

use alloy_primitives::U64;
use serde::{Deserialize, Deserializer, Serialize, Serializer};

/// A sync's progress in geth's `eth_syncing` fields (`ethereum.SyncProgress`): blocks, the
/// snap state downloaded (accounts, codes, slots and their bytes), healing (gigagas heals
/// nothing: 0), snap/2's access lists, the trie generation, the indexes.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SyncProgress {
    /// The block the sync started from.
    pub starting_block: U64,
    /// The block the node is at.
    pub current_block: U64,
    /// The block the sync goes to.
    pub highest_block: U64,
    /// Accounts downloaded (snap).
    pub synced_accounts: U64,
    /// Their bytes.
    pub synced_account_bytes: U64,
    /// Codes downloaded (snap).
    pub synced_bytecodes: U64,
    /// Their bytes.
    pub synced_bytecode_bytes: U64,
    /// Storage slots downloaded (snap).
    pub synced_storage: U64,
    /// Their bytes.
    pub synced_storage_bytes: U64,
    /// Trie nodes healed.
    pub healed_trienodes: U64,
    /// Their bytes.
    pub healed_trienode_bytes: U64,
    /// Codes healed.
    pub healed_bytecodes: U64,
    /// Their bytes.
    pub healed_bytecode_bytes: U64,
    /// Trie nodes being healed.
    pub healing_trienodes: U64,
    /// Codes being healed.
    pub healing_bytecode: U64,
    /// Access lists downloaded (snap/2).
    pub synced_access_lists: U64,
    /// Access lists to download (snap/2).
    pub total_access_lists: U64,
    /// Accounts whose trie leaves were generated.
    pub trie_gen_progress: U64,
    /// Blocks whose transactions are indexed.
    pub tx_index_finished_blocks: U64,
    /// Blocks whose transactions are still to index.
    pub tx_index_remaining_blocks: U64,
    /// State history still to index.
    pub state_index_remaining: U64,
    /// Trie-node history still to index.
    pub trienode_index_remaining: U64,
}

/// `eth_syncing`'s answer: `false`, or the progress.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Syncing {
    /// Synced (or never syncing).
    No,
    /// A sync is running.
    Yes(Box<SyncProgress>),
}

impl Serialize for Syncing {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        match self {
            Self::No => serializer.serialize_bool(false),
            Self::Yes(progress) => progress.serialize(serializer),
        }
    }
}

impl<'de> Deserialize<'de> for Syncing {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        #[derive(Deserialize)]
        #[serde(untagged)]
        enum Either {
            Bool(bool),
            Progress(Box<SyncProgress>),
        }
        match Either::deserialize(deserializer)? {
            Either::Bool(false) => Ok(Self::No),
            Either::Bool(true) => {
                Err(serde::de::Error::custom("eth_syncing answers false or an object"))
            }
            Either::Progress(p) => Ok(Self::Yes(p)),
        }
    }
}

/// Where `eth_syncing` reads the running sync's progress. The node sets one; without it the
/// node answers `false`.
pub trait SyncStatusSource: Send + Sync + std::fmt::Debug {
    /// The progress of the sync running now, `None` when none is.
    fn progress(&self) -> Option<SyncProgress>;
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn answers_false_or_geths_fields() {
        assert_eq!(serde_json::to_value(Syncing::No).unwrap(), serde_json::json!(false));
        let progress = SyncProgress { synced_accounts: U64::from(7), ..Default::default() };
        let value = serde_json::to_value(Syncing::Yes(Box::new(progress))).unwrap();
        assert_eq!(value["syncedAccounts"], "0x7");
        assert_eq!(value["trienodeIndexRemaining"], "0x0");
        assert_eq!(value.as_object().unwrap().len(), 22, "geth 1.17.10's fields");
        assert_eq!(
            serde_json::from_value::<Syncing>(value.clone()).unwrap(),
            serde_json::from_value::<Syncing>(value).unwrap()
        );
    }
}
