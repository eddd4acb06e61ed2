//! `eth_subscribe` and `eth_unsubscribe` (geth's and reth's `EthPubSub`), served on the
//! WebSocket and IPC endpoints: `newHeads`, `logs`, `newPendingTransactions` (hashes, or
//! whole transactions with `true`) and `syncing`.
//!
//! Flow: a subscription is a task per subscriber reading the chain's moves
//! ([`crate::chain_events`]), the pool's new transactions or the sync's progress and writing
//! notifications into its connection's bounded buffer (jsonrpsee's, per connection) → the
//! connection's writer. A subscriber whose buffer is full (a client that does not read) or
//! that fell behind the chain's moves is dropped: the subscription ends with an error naming
//! why (the notification jsonrpsee sends as the subscription's last), and is logged.
//! Subscriptions per connection are capped by the server
//! ([`crate::WsLimits::max_subscriptions`]).

use crate::{chain_events::ChainEvent, syncing::Syncing, RpcContext};
use alloy_rpc_types_eth::{
    pubsub::{Params, SubscriptionKind},
    Filter,
};
use jsonrpsee::{
    core::{SubscriptionError, SubscriptionResult},
    proc_macros::rpc,
    server::{PendingSubscriptionSink, SubscriptionSink},
    types::ErrorObjectOwned,
};
use serde::Serialize;
use std::{sync::Arc, time::Duration};
use tokio::sync::broadcast::{self, error::RecvError};

/// How often a `syncing` subscription looks at the sync's progress.
const SYNCING_POLL: Duration = Duration::from_secs(1);

/// The `eth_` subscription methods.
#[rpc(server, namespace = "eth")]
pub trait EthPubSubApi {
    /// Subscribes to `kind`: `newHeads` (each new canonical block's header, every block of a
    /// reorg's new branch), `logs` (with a filter of addresses and topics; a reorg's removed
    /// logs again with `removed: true`), `newPendingTransactions` (hashes; whole
    /// transactions with `true`), `syncing` (`false`, or `{"syncing": true, "status": …}`
    /// with `eth_syncing`'s fields, at once and at each change).
    #[subscription(
        name = "subscribe" => "subscription",
        unsubscribe = "unsubscribe",
        item = serde_json::Value
    )]
    async fn subscribe(&self, kind: SubscriptionKind, params: Option<Params>)
        -> SubscriptionResult;
}

/// Serves [`EthPubSubApi`].
#[derive(Debug, Clone)]
pub struct EthPubSub {
    ctx: Arc<RpcContext>,
}

impl EthPubSub {
    /// The subscriptions of `ctx`.
    pub fn new(ctx: Arc<RpcContext>) -> Self {
        Self { ctx }
    }
}

/// An invalid `eth_subscribe` request (-32602), answered before a subscription exists.
fn invalid(message: String) -> ErrorObjectOwned {
    crate::RpcError::InvalidParams(message).into()
}

#[jsonrpsee::core::async_trait]
impl EthPubSubApiServer for EthPubSub {
    async fn subscribe(
        &self,
        pending: PendingSubscriptionSink,
        kind: SubscriptionKind,
        params: Option<Params>,
    ) -> SubscriptionResult {
        let params = params.unwrap_or_default();
        match (kind, params) {
            (SubscriptionKind::NewHeads, Params::None) => {
                let events = self.ctx.events.subscribe(&self.ctx);
                let sink = pending.accept().await?;
                new_heads(sink, events).await
            }
            (SubscriptionKind::Logs, Params::None) => {
                let events = self.ctx.events.subscribe(&self.ctx);
                let sink = pending.accept().await?;
                logs(sink, events, Filter::default()).await
            }
            (SubscriptionKind::Logs, Params::Logs(filter)) => {
                let events = self.ctx.events.subscribe(&self.ctx);
                let sink = pending.accept().await?;
                logs(sink, events, *filter).await
            }
            (
                SubscriptionKind::NewPendingTransactions,
                params @ (Params::None | Params::Bool(_)),
            ) => {
                let full = matches!(params, Params::Bool(true));
                let receiver = self.ctx.pool.subscribe();
                let sink = pending.accept().await?;
                pending_transactions(sink, receiver, self.ctx.clone(), full).await
            }
            (SubscriptionKind::Syncing, Params::None) => {
                let sink = pending.accept().await?;
                syncing(sink, self.ctx.clone()).await
            }
            (SubscriptionKind::TransactionReceipts, _) => {
                pending
                    .reject(invalid("transactionReceipts subscriptions are not served".into()))
                    .await;
                Ok(())
            }
            (kind, _) => {
                pending.reject(invalid(format!("invalid parameters for {kind:?}"))).await;
                Ok(())
            }
        }
    }
}

/// Why a subscription ended early.
#[derive(Debug, thiserror::Error)]
enum Dropped {
    /// The connection's buffer is full: the client does not read.
    #[error("subscription dropped: the client does not read its notifications (buffer full)")]
    NotReading,
    /// The subscription fell too far behind the chain's moves.
    #[error("subscription dropped: it fell {0} chain events behind")]
    Behind(u64),
}

/// Sends `item` as the subscription's next notification: `Ok(false)` when the subscriber is
/// gone, an error when it does not read.
fn notify(sink: &mut SubscriptionSink, item: &impl Serialize) -> Result<bool, SubscriptionError> {
    notify_json(sink, serde_json::value::to_raw_value(item).map_err(|e| e.to_string())?)
}

/// [`notify`] of an item already written as JSON.
fn notify_json(
    sink: &mut SubscriptionSink,
    json: Box<serde_json::value::RawValue>,
) -> Result<bool, SubscriptionError> {
    match sink.try_send(json) {
        Ok(()) => Ok(true),
        Err(jsonrpsee::core::server::TrySendError::Closed(_)) => Ok(false),
        Err(jsonrpsee::core::server::TrySendError::Full(_)) => {
            tracing::debug!(
                target: "rpc::pubsub",
                subscription = ?sink.subscription_id(),
                connection = sink.connection_id().0,
                "{}",
                Dropped::NotReading
            );
            Err(Dropped::NotReading.into())
        }
    }
}

/// The next chain event for a subscription: `None` when the chain follower or the subscriber
/// is gone.
async fn next_event(
    sink: &SubscriptionSink,
    events: &mut broadcast::Receiver<Arc<ChainEvent>>,
) -> Result<Option<Arc<ChainEvent>>, SubscriptionError> {
    tokio::select! {
        _ = sink.closed() => Ok(None),
        event = events.recv() => match event {
            Ok(event) => Ok(Some(event)),
            Err(RecvError::Lagged(missed)) => Err(Dropped::Behind(missed).into()),
            Err(RecvError::Closed) => Ok(None),
        },
    }
}

/// `newHeads`: the header of every block that joins the chain.
async fn new_heads(
    mut sink: SubscriptionSink,
    mut events: broadcast::Receiver<Arc<ChainEvent>>,
) -> SubscriptionResult {
    while let Some(event) = next_event(&sink, &mut events).await? {
        for block in &event.added {
            // Written once per block for every subscriber.
            let header = block.header_json().map_err(|e| e.to_string())?;
            if !notify_json(&mut sink, header)? {
                return Ok(());
            }
        }
    }
    Ok(())
}

/// `logs`: the logs `filter` matches in every block that joins the chain, and again, marked
/// removed, in every block that leaves it.
async fn logs(
    mut sink: SubscriptionSink,
    mut events: broadcast::Receiver<Arc<ChainEvent>>,
    filter: Filter,
) -> SubscriptionResult {
    while let Some(event) = next_event(&sink, &mut events).await? {
        let removed = event.removed.iter().flat_map(|b| b.logs(&filter, true));
        let added = event.added.iter().flat_map(|b| b.logs(&filter, false));
        for log in removed.chain(added) {
            if !notify(&mut sink, &log)? {
                return Ok(());
            }
        }
    }
    Ok(())
}

/// `newPendingTransactions`: the hash of each transaction the pool takes, or the whole
/// transaction when `full` (one already gone from the pool is skipped).
async fn pending_transactions(
    mut sink: SubscriptionSink,
    mut receiver: broadcast::Receiver<gigagas_txpool::NewTransaction>,
    ctx: Arc<RpcContext>,
    full: bool,
) -> SubscriptionResult {
    loop {
        let tx = tokio::select! {
            _ = sink.closed() => return Ok(()),
            tx = receiver.recv() => match tx {
                Ok(tx) => tx,
                // As geth's: a burst past the pool's backlog is not all reported.
                Err(RecvError::Lagged(_)) => continue,
                Err(RecvError::Closed) => return Ok(()),
            },
        };
        let sent = if full {
            match ctx.pool.get(&tx.hash) {
                Some(pooled) => notify(&mut sink, &crate::txpool::pending_transaction(&pooled))?,
                None => true,
            }
        } else {
            notify(&mut sink, &tx.hash)?
        };
        if !sent {
            return Ok(());
        }
    }
}

/// `syncing`'s notification: `false`, or geth's `{"syncing": true, "status": {…}}`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(untagged)]
enum SyncingNotification {
    Done(bool),
    Running { syncing: bool, status: Box<crate::syncing::SyncProgress> },
}

impl SyncingNotification {
    fn now(ctx: &RpcContext) -> Self {
        match crate::eth::syncing_status(ctx) {
            Syncing::No => Self::Done(false),
            Syncing::Yes(status) => Self::Running { syncing: true, status },
        }
    }
}

/// `syncing`: the sync's status at once, then at each change.
async fn syncing(mut sink: SubscriptionSink, ctx: Arc<RpcContext>) -> SubscriptionResult {
    let mut last = SyncingNotification::now(&ctx);
    if !notify(&mut sink, &last)? {
        return Ok(());
    }
    let mut ticks = tokio::time::interval(SYNCING_POLL);
    loop {
        tokio::select! {
            _ = sink.closed() => return Ok(()),
            _ = ticks.tick() => {}
        }
        let now = SyncingNotification::now(&ctx);
        // Progress counters move all the time: told when the sync starts, stops or its
        // target moves, not at every block.
        let changed = match (&last, &now) {
            (
                SyncingNotification::Running { status: a, .. },
                SyncingNotification::Running { status: b, .. },
            ) => a.highest_block != b.highest_block,
            (a, b) => a != b,
        };
        if changed {
            if !notify(&mut sink, &now)? {
                return Ok(());
            }
            last = now;
        }
    }
}

/// Subscription ids as geth makes them: 16 random bytes in hex, `0x`-prefixed, leading zeros
/// trimmed (reth's `EthSubscriptionIdProvider`).
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct HexIdProvider;

impl jsonrpsee::server::IdProvider for HexIdProvider {
    fn next_id(&self) -> jsonrpsee::types::SubscriptionId<'static> {
        let mut bytes = [0u8; 16];
        // The operating system's generator does not fail on Linux once booted; a zero id would
        // still be unique per connection only by luck, so take the clock's nanoseconds then.
        if getrandom::fill(&mut bytes).is_err() {
            let nanos = std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map_or(0, |d| d.as_nanos());
            bytes = nanos.to_be_bytes();
        }
        let id = alloy_primitives::U128::from_be_bytes(bytes);
        jsonrpsee::types::SubscriptionId::Str(format!("{id:#x}").into())
    }
}
