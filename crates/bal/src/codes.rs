//! The codes a BAL deploys, decoded and hashed once per block.

use crate::BalValidationError;
use alloy_eip7928::AccountChanges;
use alloy_primitives::B256;
use revm::bytecode::Bytecode;

/// EIP-7954's largest deployed code (bytes), Amsterdam's: no BAL code change may be larger.
pub(crate) const MAX_CODE_SIZE: usize = 0x10000;

/// One code change: account position in the BAL, block access index, code hash, bytecode.
#[derive(Debug, Clone)]
struct CodeEntry {
    account: u32,
    index: u64,
    hash: B256,
    code: Bytecode,
}

/// Every `codeChanges` entry of a BAL as revm bytecode with its keccak256 (the code hash an
/// account takes), sorted by (account position, block access index). Shared by the readers
/// positioned by the BAL (which hand the bytecode to the EVM), the per-index write checks and
/// the implied post-state (which compare code hashes), so that no deployed code is analysed or
/// hashed twice.
#[derive(Debug, Clone, Default)]
pub struct BalCodes {
    entries: Vec<CodeEntry>,
}

impl BalCodes {
    /// Decodes the code changes of `bal` (the BAL of block `block`) with revm's
    /// `Bytecode::new_raw_checked`, as revm's own BAL conversion does.
    ///
    /// # Errors
    /// [`BalValidationError::InvalidCode`] naming the account and index of a code change that
    /// is not valid bytecode (a malformed EIP-7702 delegation).
    pub fn new(block: u64, bal: &[AccountChanges]) -> Result<Self, BalValidationError> {
        let mut entries = Vec::new();
        for (k, account) in bal.iter().enumerate() {
            for change in &account.code_changes {
                // No code deposit can exceed EIP-7954's limit (geth checks a BAL's code
                // changes against it).
                let size = change.new_code().len();
                if size > MAX_CODE_SIZE {
                    return Err(BalValidationError::InvalidCode {
                        block,
                        reason: format!(
                            "account {} at index {}: {size} bytes of code, above the {MAX_CODE_SIZE} \
                             bytes of EIP-7954",
                            account.address, change.block_access_index.0
                        ),
                    });
                }
                let code = Bytecode::new_raw_checked(change.new_code().clone()).map_err(|e| {
                    BalValidationError::InvalidCode {
                        block,
                        reason: format!(
                            "account {} at index {}: {e}",
                            account.address, change.block_access_index.0
                        ),
                    }
                })?;
                entries.push(CodeEntry {
                    account: k as u32,
                    index: change.block_access_index.0,
                    hash: code.hash_slow(),
                    code,
                });
            }
        }
        // A BAL that passed structural validation is already in this order.
        entries.sort_by_key(|e| (e.account, e.index));
        Ok(Self { entries })
    }

    /// The code written to the account at BAL position `account` at exactly `index`.
    pub fn at(&self, account: usize, index: u64) -> Option<(B256, &Bytecode)> {
        let key = (account as u32, index);
        let i = self.entries.binary_search_by_key(&key, |e| (e.account, e.index)).ok()?;
        let e = &self.entries[i];
        Some((e.hash, &e.code))
    }

    /// The last code written to the account at BAL position `account` before `index` (what a
    /// read positioned at `index` sees), `None` if no earlier index changed its code.
    pub fn before(&self, account: usize, index: u64) -> Option<(B256, &Bytecode)> {
        let key = (account as u32, index);
        let i = self.entries.partition_point(|e| (e.account, e.index) < key);
        let e = self.entries.get(i.checked_sub(1)?)?;
        (e.account == account as u32).then_some((e.hash, &e.code))
    }

    /// The bytecode with hash `hash` that the BAL deploys, if any.
    pub fn by_hash(&self, hash: &B256) -> Option<&Bytecode> {
        self.entries.iter().find(|e| e.hash == *hash).map(|e| &e.code)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use alloy_eip7928::{BlockAccessIndex, CodeChange};
    use alloy_primitives::{keccak256, Address, Bytes};

    fn account(byte: u8, codes: &[(u64, &[u8])]) -> AccountChanges {
        AccountChanges {
            address: Address::repeat_byte(byte),
            code_changes: codes
                .iter()
                .map(|(i, c)| CodeChange::new(BlockAccessIndex(*i), Bytes::copy_from_slice(c)))
                .collect(),
            ..Default::default()
        }
    }

    #[test]
    fn positions_codes_by_account_and_index() {
        let bal = vec![account(1, &[]), account(2, &[(2, &[0x60, 0x00]), (5, &[])])];
        let codes = BalCodes::new(7, &bal).unwrap();
        assert_eq!(codes.at(1, 2).unwrap().0, keccak256([0x60, 0x00]));
        assert!(codes.at(1, 3).is_none());
        assert!(codes.before(1, 2).is_none(), "a read at the writing index sees the old code");
        assert_eq!(codes.before(1, 3).unwrap().0, keccak256([0x60, 0x00]));
        assert_eq!(codes.before(1, 6).unwrap().0, revm::primitives::KECCAK_EMPTY);
        assert!(codes.before(0, 9).is_none());
        assert!(codes.before(2, 9).is_none());
        assert!(codes.by_hash(&keccak256([0x60, 0x00])).is_some());
    }

    #[test]
    fn malformed_delegation_names_account_and_index() {
        // EIP-7702 magic with a truncated address.
        let bal = vec![account(3, &[(1, &[0xef, 0x01, 0x00, 0x01])])];
        let err = BalCodes::new(9, &bal).unwrap_err().to_string();
        assert!(err.contains("block 9"), "{err}");
        assert!(err.contains(&Address::repeat_byte(3).to_string()), "{err}");
        assert!(err.contains("index 1"), "{err}");
    }

    #[test]
    fn code_above_64_kib_is_refused() {
        let at_limit = vec![0x5b; MAX_CODE_SIZE];
        assert!(BalCodes::new(4, &[account(5, &[(1, &at_limit)])]).is_ok());
        let over = vec![0x5b; MAX_CODE_SIZE + 1];
        let err = BalCodes::new(4, &[account(5, &[(1, &over)])]).unwrap_err().to_string();
        assert!(err.contains("65537 bytes") && err.contains("index 1"), "{err}");
    }
}
