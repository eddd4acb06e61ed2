//! Optimistic execution of blocks without a BAL: the prewarming workers' speculative results
//! kept, and reused by the in-order run when what they read still holds — Block-STM's
//! read-set validation (Gelashvili et al., 2022) with the block order as the only order of
//! commits and the in-order run as the one validator.
//!
//! Flow: a worker ([`crate::prewarm`]) executes transaction `i` against the latest state it can
//! see — the pre-block state under the newest write of each key by a transaction before `i`,
//! committed by the in-order run or left by a worker's speculative run
//! ([`Speculations::publish`]: Block-STM's multi-version memory reduced to one version a key)
//! — through a [`RecordingDb`], which notes every account and storage slot the EVM reads, with
//! the fee to the beneficiary held back ([`FeeDeferred`]: revm's handler with its
//! `reward_beneficiary` step only computing the fee), so that the beneficiary is among the
//! reads only when the transaction itself touched it. The result ([`Speculated`]) waits in
//! slot `i` of [`Speculations`]. When the in-order run reaches transaction `i` it takes the
//! slot and reads every noted key again from its own state — the pre-block state with the
//! system calls and transactions `0..i` applied ([`Speculated::validate`]). When every value
//! is the one the worker read and the transaction's nonce is its sender's, the EVM would do
//! exactly what it did for the worker (revm's execution is a function of what it reads), so
//! the result is committed as it is, with the fee added to the beneficiary as revm's handler
//! adds it; otherwise the transaction runs in order as the reference runs it.
//!
//! What a worker reads only steers its guess: the in-order run checks every value against its
//! own state, so a value published between two reads of one speculative run (a view no single
//! point of the block had) costs a re-execution, never a wrong result.
//!
//! The outcome is the reference's: receipts, post-state and BAL are built by the same
//! `commit_transaction` from the same results. Only blocks under the pre-Amsterdam gas rules
//! take this path (EIP-7778 and EIP-8037 change how the block's gas is counted before the run).

use crate::{eip7610::collision_targets, evm_config::BlockPrecompiles};
use alloy_consensus::{Transaction, TxEnvelope};
use alloy_evm::eth::EthEvmContext;
use alloy_primitives::{map::DefaultHashBuilder, Address, B256, U256};
use dashmap::DashMap;
use gigagas_state::{PreState, StateError};
use revm::{
    context::{ContextSetters, TxEnv},
    context_interface::{
        result::{EVMError, HaltReason, ResultAndState},
        Block, Cfg, ContextTr, JournalTr, Transaction as _,
    },
    database::WrapDatabaseRef,
    handler::{
        instructions::EthInstructions, EthFrame, EvmTr, EvmTrError, FrameResult, FrameTr, Handler,
    },
    inspector::NoOpInspector,
    interpreter::{interpreter::EthInterpreter, interpreter_action::FrameInit},
    primitives::hardfork::SpecId,
    state::{Account, AccountInfo, Bytecode, EvmState, TransactionId},
    Database, DatabaseRef, ExecuteEvm,
};
use std::{
    cell::{Cell, RefCell},
    marker::PhantomData,
    sync::{atomic::AtomicU64, Mutex},
};

/// The EVM of a speculative run: [`crate::EvmConfig`]'s, unwrapped to revm's so that it runs
/// with the [`FeeDeferred`] handler.
pub(crate) type SpeculativeEvm<'a> = revm::context::Evm<
    EthEvmContext<WrapDatabaseRef<RecordingDb<'a>>>,
    NoOpInspector,
    EthInstructions<EthInterpreter, EthEvmContext<WrapDatabaseRef<RecordingDb<'a>>>>,
    BlockPrecompiles,
    EthFrame,
>;

/// An account as the EVM read it: balance, nonce and code hash, `None` when it did not exist.
type AccountRead = Option<(U256, u64, B256)>;

fn account_read(info: Option<&AccountInfo>) -> AccountRead {
    info.map(|a| (a.balance, a.nonce, a.code_hash))
}

/// What one speculative execution read (from the published writes or the pre-block state), in
/// the order it read it.
#[derive(Debug, Default)]
pub(crate) struct ReadSet {
    accounts: Vec<(Address, AccountRead)>,
    slots: Vec<(Address, U256, U256)>,
}

/// The pre-block state under the published writes of earlier transactions (the in-order run's
/// and the workers'), noting every account and slot read through it (code by hash and block hashes do not change within a block and are
/// not noted).
#[derive(Debug)]
pub(crate) struct RecordingDb<'a> {
    pre_state: &'a PreState,
    published: &'a Speculations,
    /// The transaction being executed: it sees the writes of the transactions before it.
    tx: Cell<usize>,
    reads: RefCell<ReadSet>,
}

impl<'a> RecordingDb<'a> {
    /// A recorder over `pre_state` and the writes `published` holds, with nothing read yet.
    pub(crate) fn new(pre_state: &'a PreState, published: &'a Speculations) -> Self {
        Self { pre_state, published, tx: Cell::new(0), reads: RefCell::default() }
    }

    /// The reads since the last call.
    pub(crate) fn take(&self) -> ReadSet {
        self.reads.take()
    }
}

impl DatabaseRef for RecordingDb<'_> {
    type Error = StateError;

    fn basic_ref(&self, address: Address) -> Result<Option<AccountInfo>, StateError> {
        let tx = self.tx.get();
        let info = match self.published.accounts.get(&address).filter(|e| e.0 < tx) {
            Some(entry) => entry.1.clone(),
            None => self.pre_state.basic_ref(address)?,
        };
        self.reads.borrow_mut().accounts.push((address, account_read(info.as_ref())));
        Ok(info)
    }

    fn code_by_hash_ref(&self, code_hash: B256) -> Result<Bytecode, StateError> {
        self.pre_state.code_by_hash_ref(code_hash)
    }

    fn storage_ref(&self, address: Address, index: U256) -> Result<U256, StateError> {
        let tx = self.tx.get();
        let value = match self.published.slots.get(&(address, index)).filter(|e| e.0 < tx) {
            Some(entry) => entry.1,
            None => self.pre_state.storage_ref(address, index)?,
        };
        self.reads.borrow_mut().slots.push((address, index, value));
        Ok(value)
    }

    fn block_hash_ref(&self, number: u64) -> Result<B256, StateError> {
        self.pre_state.block_hash_ref(number)
    }
}

/// revm's mainnet handler with the fee to the beneficiary computed, not paid: the in-order run
/// pays it on commit ([`Speculated::validate`]), so that a speculative run reads the
/// beneficiary's account only when the transaction touches it (every transaction's fee would
/// otherwise make it a read that each earlier transaction invalidates).
#[derive(Debug)]
pub(crate) struct FeeDeferred<EVM, ERROR, FRAME> {
    fee: Cell<U256>,
    _types: PhantomData<(EVM, ERROR, FRAME)>,
}

impl<EVM, ERROR, FRAME> Default for FeeDeferred<EVM, ERROR, FRAME> {
    fn default() -> Self {
        Self { fee: Cell::new(U256::ZERO), _types: PhantomData }
    }
}

impl<EVM, ERROR, FRAME> Handler for FeeDeferred<EVM, ERROR, FRAME>
where
    EVM: EvmTr<Context: ContextTr<Journal: JournalTr<State = EvmState>>, Frame = FRAME>,
    ERROR: EvmTrError<EVM>,
    FRAME: FrameTr<FrameResult = FrameResult, FrameInit = FrameInit>,
{
    type Evm = EVM;
    type Error = ERROR;
    type HaltReason = HaltReason;

    /// revm's `post_execution::reward_beneficiary`, the amount kept instead of paid.
    fn reward_beneficiary(
        &self,
        evm: &mut Self::Evm,
        exec_result: &mut FrameResult,
    ) -> Result<(), Self::Error> {
        let ctx = evm.ctx();
        if ctx.cfg().is_fee_charge_disabled() {
            self.fee.set(U256::ZERO);
            return Ok(());
        }
        let basefee = ctx.block().basefee() as u128;
        let effective_gas_price = ctx.tx().effective_gas_price(basefee);
        let coinbase_gas_price = if ctx.cfg().spec().into().is_enabled_in(SpecId::LONDON) {
            effective_gas_price.saturating_sub(basefee)
        } else {
            effective_gas_price
        };
        let gas = exec_result.gas();
        let effective_used = gas.used().saturating_sub(gas.reservoir());
        self.fee.set(U256::from(coinbase_gas_price * effective_used as u128));
        Ok(())
    }
}

/// A transaction executed speculatively (against the state a worker sees, [`RecordingDb`]):
/// what it read, its result and state changes, and the fee its beneficiary is owed.
#[derive(Debug)]
pub(crate) struct Speculated {
    reads: ReadSet,
    result: ResultAndState<HaltReason>,
    fee: U256,
}

impl Speculated {
    /// Executes transaction `index` (`tx`) on `evm` (over a [`RecordingDb`]) with the fee
    /// deferred, and publishes its writes for the speculative runs of later transactions.
    /// `None` when the EVM rejects it against the state the worker sees (the in-order run then
    /// meets the verdict itself), or when it needs EIP-7610's collision rule (a creation at an
    /// address with storage), which the in-order run applies.
    pub(crate) fn execute(evm: &mut SpeculativeEvm<'_>, index: usize, tx: TxEnv) -> Option<Self> {
        evm.ctx.journaled_state.database.0.tx.set(index);
        evm.ctx.set_tx(tx);
        let mut handler = FeeDeferred::<_, EVMError<StateError>, EthFrame>::default();
        let run = handler.run(evm);
        let state = evm.finalize();
        let db = &evm.ctx.journaled_state.database.0;
        let reads = db.take();
        let result = run.ok()?;
        if !collision_targets(&state, db.pre_state).ok()?.is_empty() {
            return None;
        }
        db.published.publish(index, &state);
        Some(Self { reads, result: ResultAndState::new(result, state), fee: handler.fee.get() })
    }

    /// The speculative result as the in-order run would have produced it over `db` (its state
    /// after the transactions before this one), or `None` when it must run again: a value it
    /// read has changed since, or its nonce is not its sender's. The beneficiary's fee is
    /// added as revm's handler adds it (the account touched, its balance raised).
    ///
    /// # Errors
    /// A read of `db` that fails (the in-order run then runs the transaction and meets it).
    pub(crate) fn validate<DB: Database>(
        self,
        db: &mut DB,
        tx: &TxEnvelope,
        sender: Address,
        beneficiary: Address,
    ) -> Result<Option<ResultAndState<HaltReason>>, DB::Error> {
        let Self { reads, result: ResultAndState { result, mut state }, fee } = self;
        // The speculative run skipped the nonce check (a sender's later transactions run too).
        if db.basic(sender)?.map_or(0, |a| a.nonce) != tx.nonce() {
            return Ok(None);
        }
        for (address, read) in &reads.accounts {
            if account_read(db.basic(*address)?.as_ref()) != *read {
                return Ok(None);
            }
        }
        for (address, slot, value) in &reads.slots {
            if db.storage(*address, *slot)? != *value {
                return Ok(None);
            }
        }
        let account = match state.entry(beneficiary) {
            std::collections::hash_map::Entry::Occupied(entry) => entry.into_mut(),
            std::collections::hash_map::Entry::Vacant(entry) => {
                entry.insert(match db.basic(beneficiary)? {
                    Some(info) => Account::from(info),
                    None => Account::new_not_existing(TransactionId::ZERO),
                })
            }
        };
        account.mark_touch();
        account.info.balance = account.info.balance.saturating_add(fee);
        Ok(Some(ResultAndState::new(result, state)))
    }
}

/// The speculative results of one block, one slot per transaction, each taken at most once,
/// and the newest value of every account and storage slot the in-order run has written.
#[derive(Debug)]
pub(crate) struct Speculations {
    results: Vec<Mutex<Option<Speculated>>>,
    /// The newest write of each account: (transaction index, info; `None` once destroyed).
    accounts: DashMap<Address, (usize, Option<AccountInfo>), DefaultHashBuilder>,
    /// The newest write of each slot: (transaction index, value).
    slots: DashMap<(Address, U256), (usize, U256), DefaultHashBuilder>,
    /// Results the in-order run committed.
    pub(crate) reused: AtomicU64,
    /// Results the in-order run found stale (a value read had changed, or the nonce).
    pub(crate) stale: AtomicU64,
}

impl Speculations {
    /// Empty slots for `n` transactions.
    pub(crate) fn new(n: usize) -> Self {
        Self {
            results: (0..n).map(|_| Mutex::new(None)).collect(),
            accounts: DashMap::default(),
            slots: DashMap::default(),
            reused: AtomicU64::new(0),
            stale: AtomicU64::new(0),
        }
    }

    /// Leaves transaction `i`'s result.
    pub(crate) fn put(&self, i: usize, speculated: Speculated) {
        *self.results[i].lock().unwrap_or_else(|p| p.into_inner()) = Some(speculated);
    }

    /// Takes transaction `i`'s result, if a worker has left one.
    pub(crate) fn take(&self, i: usize) -> Option<Speculated> {
        self.results.get(i)?.lock().unwrap_or_else(|p| p.into_inner()).take()
    }

    /// Publishes the writes of transaction `index` — what the in-order run is about to commit,
    /// or what a worker's speculative run produced — for the workers' speculative runs of later
    /// transactions to read: every touched account (`None` once self-destructed) and every
    /// changed slot, each kept unless a later transaction's write is already there (the
    /// in-order run's write replaces a worker's of the same transaction).
    pub(crate) fn publish(&self, index: usize, state: &EvmState) {
        fn newest<K: std::hash::Hash + Eq, V>(
            map: &DashMap<K, (usize, V), DefaultHashBuilder>,
            key: K,
            index: usize,
            value: V,
        ) {
            match map.entry(key) {
                dashmap::Entry::Occupied(e) if e.get().0 > index => {}
                entry => {
                    entry.insert((index, value));
                }
            }
        }
        for (address, account) in state.iter().filter(|(_, a)| a.is_touched()) {
            let info = (!account.is_selfdestructed()).then(|| account.info.clone());
            newest(&self.accounts, *address, index, info);
            for (slot, value) in account.changed_storage_slots() {
                newest(&self.slots, (*address, *slot), index, value.present_value);
            }
        }
    }
}
