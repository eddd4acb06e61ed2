//! EIP-7610: a contract creation (transaction, `CREATE`, `CREATE2`, every fork) whose target
//! address already has storage fails as a collision, exactly like one whose target has code or
//! a nonce. revm 43 checks only code and nonce (`JournalInner::create_account_checkpoint`).
//!
//! Flow. The sequential executor (and the block builder) runs a transaction as revm runs it;
//! then [`collision_targets`] looks at the accounts it loaded. An account that before the block
//! had no code, nonce 0 and non-empty storage ([`PreState::has_storage`]) is one a creation may
//! have targeted; for such a transaction (none on mainnet so far) the result is thrown away and
//! the transaction runs again with the [`StorageCollisions`] inspector, which fails exactly the
//! creations targeting those accounts as revm fails a collision. The parallel executor asks
//! the same of the accounts the BAL lists ([`storage_accounts`], once per block, before any
//! transaction runs: a first run outside the BAL would be refused) and runs every transaction
//! of such a block with the inspector. Every other transaction pays only the look at its
//! accounts.
//!
//! Why the pre-block state is enough: an account without code cannot write its own storage,
//! and cannot lose it either (it cannot self-destruct; a creation at its address is the
//! collision itself), so the accounts with storage but no code and no nonce are the same at
//! every position of a block. One that gains a nonce or code in the block (an EIP-7702
//! authorization or a transaction it sends) collides in revm already.

use alloy_primitives::{map::AddressSet, Address, Bytes};
use gigagas_state::{PreState, StateError};
use revm::{
    context::ContextTr,
    context_interface::{journaled_state::account::JournaledAccountTr, JournalTr},
    interpreter::{
        CreateInputs, CreateOutcome, Gas, InstructionResult, InterpreterResult, InterpreterTypes,
    },
    primitives::constants::CALL_STACK_LIMIT,
    state::EvmState,
    Inspector,
};

/// The accounts of `state` (what one transaction loaded) that before the block had no code,
/// nonce 0 and non-empty storage: the targets at which a creation must collide. Only an account
/// that the transaction left without code and nonce, or created, is looked up.
///
/// # Errors
/// [`StateError::Source`] when a backed state's source fails (the fault is kept in
/// `pre_state`, so the caller reports an internal error, never a verdict).
pub fn collision_targets(state: &EvmState, pre_state: &PreState) -> Result<AddressSet, StateError> {
    storage_accounts(
        state
            .iter()
            .filter(|(_, account)| {
                account.is_created()
                    || (account.info.nonce == 0 && account.info.is_empty_code_hash())
            })
            .map(|(address, _)| address),
        pre_state,
    )
}

/// Those of `addresses` that before the block have no code, nonce 0 and non-empty storage
/// (the storage is looked up only for accounts without code and nonce).
///
/// # Errors
/// [`StateError::Source`] when a backed state's source fails.
pub fn storage_accounts<'a>(
    addresses: impl IntoIterator<Item = &'a Address>,
    pre_state: &PreState,
) -> Result<AddressSet, StateError> {
    let mut targets = AddressSet::default();
    for address in addresses {
        let Some((_, nonce, code_hash)) = pre_state.account_values(address)? else { continue };
        if nonce == 0
            && (code_hash == revm::primitives::KECCAK_EMPTY || code_hash.is_zero())
            && pre_state.has_storage(address)?
        {
            targets.insert(*address);
        }
    }
    Ok(targets)
}

/// Fails every creation whose target is one of its accounts as a collision, with revm's
/// effects for one: the creator's nonce bumped, the target warm, every gas unit given to the
/// creation consumed, no address returned (0 on the stack; a creating transaction fails). The
/// checks revm makes before the collision (call depth, the creator's balance, its nonce at its
/// maximum) are left to revm: for those the inspector steps aside.
#[derive(Debug, Default, Clone)]
pub struct StorageCollisions {
    targets: AddressSet,
}

impl StorageCollisions {
    /// Collisions at `targets` (from [`collision_targets`]).
    pub fn new(targets: AddressSet) -> Self {
        Self { targets }
    }
}

impl<CTX: ContextTr, INTR: InterpreterTypes> Inspector<CTX, INTR> for StorageCollisions {
    fn create(&mut self, context: &mut CTX, inputs: &mut CreateInputs) -> Option<CreateOutcome> {
        if self.targets.is_empty() || context.journal().depth() > CALL_STACK_LIMIT as usize {
            return None;
        }
        let journal = context.journal_mut();
        // revm's `make_create_frame`, up to its collision check; a database error is left for
        // revm to meet again on the same read.
        let mut caller = journal.load_account_mut(inputs.caller()).ok()?;
        if *caller.balance() < inputs.value() {
            return None;
        }
        let nonce = caller.nonce();
        let created = inputs.created_address(nonce);
        if !self.targets.contains(&created) {
            return None;
        }
        if !caller.bump_nonce() {
            return None;
        }
        drop(caller);
        journal.load_account(created).ok()?;
        Some(CreateOutcome {
            result: InterpreterResult {
                result: InstructionResult::CreateCollision,
                gas: Gas::new_with_regular_gas_and_reservoir(
                    inputs.gas_limit(),
                    inputs.reservoir(),
                ),
                output: Bytes::new(),
            },
            address: None,
            charged_create_state_gas: inputs.charged_create_state_gas(),
        })
    }
}
