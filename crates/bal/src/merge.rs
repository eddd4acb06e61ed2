//! Rebuilding a block's BAL from per-index fragments.

use revm::state::bal::Bal;

/// Merges BAL fragments, each holding the writes and reads of one
/// [`BlockAccessIndex`](alloy_eip7928::BlockAccessIndex), into one BAL.
///
/// `fragments` must come in increasing index order (pre-execution, tx 0, tx 1, …,
/// post-execution); each is what revm's [`Bal::update_account`] recorded for that index alone.
/// The result equals what revm's sequential BAL builder records over the whole block when every
/// fragment was executed against state positioned at its index. A slot read by one index and
/// written by another ends up a write, as EIP-7928 requires.
pub fn merge_fragments<'a>(fragments: impl IntoIterator<Item = &'a Bal>) -> Bal {
    let mut out = Bal::new();
    for fragment in fragments {
        for (address, account) in &fragment.accounts {
            let entry = out.accounts.entry(*address).or_default();
            let info = &account.account_info;
            entry.account_info.balance.writes.extend_from_slice(&info.balance.writes);
            entry.account_info.nonce.writes.extend_from_slice(&info.nonce.writes);
            entry.account_info.code.writes.extend_from_slice(&info.code.writes);
            for (slot, writes) in &account.storage.storage {
                entry
                    .storage
                    .storage
                    .entry(*slot)
                    .or_default()
                    .writes
                    .extend_from_slice(&writes.writes);
            }
        }
    }
    out
}
