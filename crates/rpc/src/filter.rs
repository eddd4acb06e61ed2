//! geth's polling filters (`eth_newFilter`, `eth_newBlockFilter`,
//! `eth_newPendingTransactionFilter`, `eth_getFilterChanges`, `eth_getFilterLogs`,
//! `eth_uninstallFilter`; reth's `EthFilter`).
//!
//! Flow: installing a filter stores it with an empty list of changes and starts, once per
//! context, the feeder task → the feeder appends to every filter what concerns it: the hashes
//! of the blocks that joined the chain, the logs they hold that match (and, after a reorg, the
//! matching logs of the blocks it removed, `removed: true`), the transactions the pool took →
//! `eth_getFilterChanges` hands the list over and empties it.
//!
//! Bounds: a filter not polled for [`FilterConfig::ttl`] (geth's 5 minutes) is uninstalled;
//! at most [`FilterConfig::max_filters`] are installed at once (past it
//! [`RpcError::TooManyFilters`]); a filter that gathers more than
//! [`FilterConfig::max_changes`] between two polls is uninstalled and its next poll answered
//! [`RpcError::FilterOverflow`] (a poller never silently misses a log).

use crate::{chain_events::ChainEvent, RpcContext, RpcError};
use alloy_primitives::{map::HashMap, B256, U128};
use alloy_rpc_types_eth::{Filter, Log as RpcLog, Transaction as RpcTransaction};
use jsonrpsee::{core::RpcResult, proc_macros::rpc};
use serde::Serialize;
use serde_json::value::RawValue;
use std::{
    sync::{Arc, Mutex, OnceLock},
    time::{Duration, Instant},
};
use tokio::sync::{broadcast, watch};

/// geth's filter timeout: a filter not polled for this long is uninstalled.
pub const DEFAULT_FILTER_TTL: Duration = Duration::from_secs(5 * 60);
/// Filters installed at once by default.
pub const DEFAULT_MAX_FILTERS: usize = 10_000;
/// Changes (hashes, logs or transactions) one filter gathers between two polls by default.
pub const DEFAULT_MAX_FILTER_CHANGES: usize = 20_000;

/// The filters' bounds (`--rpc.filter-timeout`, `--rpc.max-filters`,
/// `--rpc.max-filter-changes`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FilterConfig {
    /// A filter not polled for this long is uninstalled.
    pub ttl: Duration,
    /// Most filters installed at once.
    pub max_filters: usize,
    /// Most changes one filter gathers between two polls.
    pub max_changes: usize,
}

impl Default for FilterConfig {
    fn default() -> Self {
        Self {
            ttl: DEFAULT_FILTER_TTL,
            max_filters: DEFAULT_MAX_FILTERS,
            max_changes: DEFAULT_MAX_FILTER_CHANGES,
        }
    }
}

/// What a filter watches.
#[derive(Debug)]
enum FilterKind {
    /// The hashes of new canonical blocks.
    Blocks,
    /// Transactions the pool takes: hashes, or whole transactions when `full`.
    PendingTransactions { full: bool },
    /// Logs matching the filter.
    Logs(Box<Filter>),
}

/// What a filter gathered since its last poll.
#[derive(Debug, Serialize)]
#[serde(untagged)]
enum Changes {
    Hashes(Vec<B256>),
    Transactions(Vec<RpcTransaction>),
    Logs(Vec<RpcLog>),
}

impl Changes {
    fn len(&self) -> usize {
        match self {
            Self::Hashes(h) => h.len(),
            Self::Transactions(t) => t.len(),
            Self::Logs(l) => l.len(),
        }
    }

    fn take(&mut self) -> Self {
        match self {
            Self::Hashes(h) => Self::Hashes(std::mem::take(h)),
            Self::Transactions(t) => Self::Transactions(std::mem::take(t)),
            Self::Logs(l) => Self::Logs(std::mem::take(l)),
        }
    }
}

/// An installed filter.
#[derive(Debug)]
struct Installed {
    kind: FilterKind,
    changes: Changes,
    /// Polled last at.
    polled: Instant,
    /// It gathered more than the bound: dropped, its next poll told so.
    overflowed: bool,
}

/// The installed filters, by id.
type Filters = Arc<Mutex<HashMap<U128, Installed>>>;

/// The filters of one RPC context.
#[derive(Debug, Default)]
pub struct FilterStore {
    filters: Filters,
    config: FilterConfig,
    /// Set when the feeder started; dropping it (with the context) ends the feeder.
    feeder: OnceLock<watch::Sender<()>>,
}

impl FilterStore {
    /// No filter yet, within `config`.
    pub fn new(config: FilterConfig) -> Self {
        Self { config, ..Self::default() }
    }

    /// The bounds.
    pub fn config(&self) -> FilterConfig {
        self.config
    }

    /// Filters installed now (expired ones not yet swept included).
    pub fn len(&self) -> usize {
        lock(&self.filters).len()
    }

    /// Whether none is installed.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Installs a filter of `kind`, the feeder started if it was not; its id.
    fn install(&self, ctx: &Arc<RpcContext>, kind: FilterKind) -> Result<U128, RpcError> {
        self.feeder.get_or_init(|| {
            let (stop, stopped) = watch::channel(());
            let events = ctx.events.subscribe(ctx);
            tokio::spawn(feed(
                self.filters.clone(),
                self.config,
                events,
                ctx.pool.subscribe(),
                ctx.pool.clone(),
                stopped,
            ));
            stop
        });
        let mut filters = lock(&self.filters);
        sweep(&mut filters, self.config.ttl);
        if filters.len() >= self.config.max_filters {
            return Err(RpcError::TooManyFilters(self.config.max_filters));
        }
        let changes = match &kind {
            FilterKind::Blocks | FilterKind::PendingTransactions { full: false } => {
                Changes::Hashes(Vec::new())
            }
            FilterKind::PendingTransactions { full: true } => Changes::Transactions(Vec::new()),
            FilterKind::Logs(_) => Changes::Logs(Vec::new()),
        };
        let id = loop {
            let mut bytes = [0u8; 16];
            getrandom::fill(&mut bytes)?;
            let id = U128::from_be_bytes(bytes);
            if !filters.contains_key(&id) {
                break id;
            }
        };
        filters.insert(id, Installed { kind, changes, polled: Instant::now(), overflowed: false });
        Ok(id)
    }

    /// What filter `id` gathered since its last poll, as JSON.
    fn changes(&self, id: U128) -> Result<Box<RawValue>, RpcError> {
        let mut filters = lock(&self.filters);
        let ttl = self.config.ttl;
        let installed = filters
            .get_mut(&id)
            .filter(|f| f.polled.elapsed() <= ttl)
            .ok_or(RpcError::FilterNotFound)?;
        if installed.overflowed {
            filters.remove(&id);
            return Err(RpcError::FilterOverflow(self.config.max_changes));
        }
        installed.polled = Instant::now();
        let changes = installed.changes.take();
        drop(filters);
        Ok(serde_json::value::to_raw_value(&changes)?)
    }

    /// The log filter `id`'s criteria (its poll time renewed).
    fn log_filter(&self, id: U128) -> Result<Filter, RpcError> {
        let mut filters = lock(&self.filters);
        let ttl = self.config.ttl;
        match filters.get_mut(&id).filter(|f| f.polled.elapsed() <= ttl) {
            Some(Installed { kind: FilterKind::Logs(filter), polled, .. }) => {
                *polled = Instant::now();
                Ok((**filter).clone())
            }
            _ => Err(RpcError::FilterNotFound),
        }
    }

    /// Uninstalls filter `id`; whether it was installed.
    fn uninstall(&self, id: U128) -> bool {
        lock(&self.filters).remove(&id).is_some()
    }
}

/// The map, a poisoned lock taken over (a panicking holder leaves it consistent: every
/// change is one insert, remove or push).
fn lock(filters: &Filters) -> std::sync::MutexGuard<'_, HashMap<U128, Installed>> {
    filters.lock().unwrap_or_else(|p| p.into_inner())
}

/// Uninstalls the filters not polled for `ttl`.
fn sweep(filters: &mut HashMap<U128, Installed>, ttl: Duration) {
    filters.retain(|_, f| f.polled.elapsed() <= ttl);
}

/// Appends `new` (of length `count`) to a filter's changes, or marks it overflowed past `max`.
fn gather(installed: &mut Installed, max: usize, count: usize, push: impl FnOnce(&mut Changes)) {
    if installed.overflowed || count == 0 {
        return;
    }
    if installed.changes.len() + count > max {
        installed.overflowed = true;
        // What was gathered is of no use now: the next poll says the filter was dropped.
        installed.changes.take();
        return;
    }
    push(&mut installed.changes);
}

/// The feeder: the chain's moves and the pool's new transactions into the filters, expired
/// filters swept, until the context is gone.
async fn feed(
    filters: Filters,
    config: FilterConfig,
    mut events: broadcast::Receiver<Arc<ChainEvent>>,
    mut pool: broadcast::Receiver<gigagas_txpool::NewTransaction>,
    txpool: Arc<gigagas_txpool::TxPool>,
    mut stop: watch::Receiver<()>,
) {
    let mut sweeps = tokio::time::interval((config.ttl / 4).max(Duration::from_millis(100)));
    loop {
        tokio::select! {
            // Nothing is ever sent: this ends when the context drops the sender.
            _ = stop.changed() => return,
            _ = sweeps.tick() => sweep(&mut lock(&filters), config.ttl),
            event = events.recv() => match event {
                Ok(event) => on_chain_event(&filters, config.max_changes, &event),
                Err(broadcast::error::RecvError::Lagged(missed)) => {
                    // The changes of `missed` moves are lost: every block and log filter is
                    // told at its next poll rather than answer with a gap.
                    tracing::warn!(target: "rpc::filter", missed, "filters fell behind the chain");
                    for f in lock(&filters).values_mut() {
                        if !matches!(f.kind, FilterKind::PendingTransactions { .. }) {
                            f.overflowed = true;
                        }
                    }
                }
                Err(broadcast::error::RecvError::Closed) => return,
            },
            tx = pool.recv() => match tx {
                Ok(tx) => on_pool_transaction(&filters, config.max_changes, &txpool, tx.hash),
                // A pending-transaction filter may miss some (geth's drops them too).
                Err(broadcast::error::RecvError::Lagged(_)) => {}
                Err(broadcast::error::RecvError::Closed) => return,
            },
        }
    }
}

/// A move of the chain into every block and log filter.
fn on_chain_event(filters: &Filters, max: usize, event: &ChainEvent) {
    let mut filters = lock(filters);
    for installed in filters.values_mut() {
        match &installed.kind {
            FilterKind::Blocks => {
                let hashes: Vec<B256> = event.added.iter().map(|b| b.block.hash).collect();
                gather(installed, max, hashes.len(), |c| {
                    if let Changes::Hashes(h) = c {
                        h.extend(hashes)
                    }
                });
            }
            FilterKind::Logs(filter) => {
                let removed = event.removed.iter().flat_map(|b| b.logs(filter, true));
                let added = event.added.iter().flat_map(|b| b.logs(filter, false));
                let logs: Vec<RpcLog> = removed.chain(added).collect();
                gather(installed, max, logs.len(), |c| {
                    if let Changes::Logs(l) = c {
                        l.extend(logs)
                    }
                });
            }
            FilterKind::PendingTransactions { .. } => {}
        }
    }
}

/// A transaction the pool took into every pending-transaction filter.
fn on_pool_transaction(filters: &Filters, max: usize, pool: &gigagas_txpool::TxPool, hash: B256) {
    let mut filters = lock(filters);
    // Looked up once, only when a filter wants the whole transaction (it may have left the
    // pool already: then it is not reported).
    let mut full = None;
    for installed in filters.values_mut() {
        match installed.kind {
            FilterKind::PendingTransactions { full: false } => {
                gather(installed, max, 1, |c| {
                    if let Changes::Hashes(h) = c {
                        h.push(hash)
                    }
                });
            }
            FilterKind::PendingTransactions { full: true } => {
                let tx = full.get_or_insert_with(|| {
                    pool.get(&hash).map(|tx| crate::txpool::pending_transaction(&tx))
                });
                if let Some(tx) = tx.clone() {
                    gather(installed, max, 1, |c| {
                        if let Changes::Transactions(t) = c {
                            t.push(tx)
                        }
                    });
                }
            }
            _ => {}
        }
    }
}

/// geth's filter methods of the `eth_` namespace.
#[rpc(server, client, namespace = "eth")]
pub trait EthFilterApi {
    /// Installs a log filter (addresses, topics, a block range or hash); its id.
    #[method(name = "newFilter")]
    fn new_filter(&self, filter: Filter) -> RpcResult<U128>;

    /// Installs a filter of new canonical blocks' hashes; its id.
    #[method(name = "newBlockFilter")]
    fn new_block_filter(&self) -> RpcResult<U128>;

    /// Installs a filter of the transactions the pool takes (hashes; whole transactions when
    /// `full`); its id.
    #[method(name = "newPendingTransactionFilter")]
    fn new_pending_transaction_filter(&self, full: Option<bool>) -> RpcResult<U128>;

    /// What filter `id` gathered since its last poll: block hashes, transaction hashes (or
    /// transactions) or logs.
    #[method(name = "getFilterChanges")]
    fn filter_changes(&self, id: U128) -> RpcResult<Box<RawValue>>;

    /// Every log log filter `id` matches, as `eth_getLogs` answers its criteria.
    #[method(name = "getFilterLogs", blocking)]
    fn filter_logs(&self, id: U128) -> RpcResult<Box<RawValue>>;

    /// Uninstalls filter `id`; whether it was installed.
    #[method(name = "uninstallFilter")]
    fn uninstall_filter(&self, id: U128) -> RpcResult<bool>;
}

/// Serves [`EthFilterApi`] over the context's [`FilterStore`].
#[derive(Debug, Clone)]
pub struct EthFilter {
    ctx: Arc<RpcContext>,
}

impl EthFilter {
    /// The filter methods over `ctx`.
    pub fn new(ctx: Arc<RpcContext>) -> Self {
        Self { ctx }
    }
}

impl EthFilterApiServer for EthFilter {
    fn new_filter(&self, filter: Filter) -> RpcResult<U128> {
        Ok(self.ctx.filters.install(&self.ctx, FilterKind::Logs(Box::new(filter)))?)
    }

    fn new_block_filter(&self) -> RpcResult<U128> {
        Ok(self.ctx.filters.install(&self.ctx, FilterKind::Blocks)?)
    }

    fn new_pending_transaction_filter(&self, full: Option<bool>) -> RpcResult<U128> {
        let kind = FilterKind::PendingTransactions { full: full.unwrap_or(false) };
        Ok(self.ctx.filters.install(&self.ctx, kind)?)
    }

    fn filter_changes(&self, id: U128) -> RpcResult<Box<RawValue>> {
        Ok(self.ctx.filters.changes(id)?)
    }

    fn filter_logs(&self, id: U128) -> RpcResult<Box<RawValue>> {
        let filter = self.ctx.filters.log_filter(id)?;
        Ok(crate::eth::logs(&self.ctx, &filter)?)
    }

    fn uninstall_filter(&self, id: U128) -> RpcResult<bool> {
        Ok(self.ctx.filters.uninstall(id))
    }
}
