//! The transactions manager (reth's `TransactionsManager`): one task owns the gossip state —
//! which peer is fetched what ([`TransactionFetcher`]), where each transaction came from (an
//! LRU of [`MAX_REMEMBERED_ORIGINS`]), the sessions' request channels — and drives the
//! requests and the pool imports as futures it polls itself.
//!
//! Flow: [`TransactionsEvent`]s from the network manager (a session started or ended, a
//! peer's announcement or broadcast, the pool's new transactions to announce) → fetches
//! (`GetPooledTransactions`, eth/72 `GetCells`) → checks of the wire's rules → the pool's
//! import on a blocking thread → the fetcher told what was delivered, the next announcer
//! asked for the rest; a peer to be dropped is named on the `bad_peers` channel, which the
//! network manager bans.

use super::{
    NetworkPool, PoolImportError, TransactionAnnouncement, MAX_ANNOUNCED_HASHES,
    MAX_POOLED_TRANSACTIONS_REQUEST, MAX_REMEMBERED_ORIGINS,
};
use crate::{
    fetcher::{blob_columns, check_network_transaction, with_blobs, Checked, TransactionFetcher},
    session::{ask, SessionCommand},
};
use alloy_primitives::{Bytes, B256};
use futures::{future::BoxFuture, stream::FuturesUnordered, StreamExt};
use gigagas_eth_wire_types::{
    CustodyBitmap, EthMessage, EthVersion, GetCells, NewPooledTransactionHashes, RequestPair,
};
use gigagas_net_p2p::RequestError;
use gigagas_net_peers::PeerId;
use schnellru::{ByLength, LruMap};
use std::{
    collections::{HashMap, HashSet},
    sync::Arc,
};
use tokio::sync::mpsc;

/// What the network manager tells the transactions manager.
#[derive(Debug)]
pub(crate) enum TransactionsEvent {
    /// A session with `peer` started, speaking eth `version`; requests go to `commands`.
    SessionEstablished { peer: PeerId, version: EthVersion, commands: mpsc::Sender<SessionCommand> },
    /// The session with `peer` ended.
    SessionClosed(PeerId),
    /// `peer` announced hashes.
    Hashes { peer: PeerId, announced: NewPooledTransactionHashes },
    /// `peer` broadcast whole transactions.
    Transactions { peer: PeerId, raws: Vec<Bytes> },
    /// The pool took these: announce them.
    Announce(Vec<TransactionAnnouncement>),
}

/// A session as the transactions manager sees it.
#[derive(Debug)]
struct Peer {
    commands: mpsc::Sender<SessionCommand>,
    version: EthVersion,
}

/// A `GetPooledTransactions` answered (or not).
struct Fetched {
    peer: PeerId,
    asked: Vec<B256>,
    answer: Result<EthMessage, RequestError>,
}

/// A message's transactions back from the pool.
struct Imported {
    peer: PeerId,
    /// The hashes asked (none: a broadcast).
    asked: Option<Vec<B256>>,
    /// The hashes sent to the pool, in order.
    identified: Vec<B256>,
    /// The pool's verdicts, in that order (empty: the import did not run).
    results: Vec<Result<B256, PoolImportError>>,
    /// Hashes already handled (blob transactions whose cells are fetched).
    delivered: HashSet<B256>,
    /// A transaction in the answer that was not asked for.
    unasked: Option<B256>,
}

/// A blob transaction's cells fetched and the transaction imported, or given up.
struct CellsFetched {
    hash: B256,
    /// The peer it came from, when the pool took it.
    origin: Option<PeerId>,
}

/// The transaction gossip's task (see the module doc).
pub(crate) struct TransactionsManager {
    pool: Arc<dyn NetworkPool>,
    fetcher: TransactionFetcher,
    origins: LruMap<B256, PeerId, ByLength>,
    peers: HashMap<PeerId, Peer>,
    events: mpsc::UnboundedReceiver<TransactionsEvent>,
    bad_peers: mpsc::UnboundedSender<PeerId>,
    fetches: FuturesUnordered<BoxFuture<'static, Fetched>>,
    imports: FuturesUnordered<BoxFuture<'static, Imported>>,
    cells: FuturesUnordered<BoxFuture<'static, CellsFetched>>,
}

impl TransactionsManager {
    /// A manager gossiping with `pool`, told what happens on `events`, naming peers to drop on
    /// `bad_peers`.
    pub(crate) fn new(
        pool: Arc<dyn NetworkPool>,
        events: mpsc::UnboundedReceiver<TransactionsEvent>,
        bad_peers: mpsc::UnboundedSender<PeerId>,
    ) -> Self {
        Self {
            pool,
            fetcher: TransactionFetcher::default(),
            origins: LruMap::new(ByLength::new(MAX_REMEMBERED_ORIGINS)),
            peers: HashMap::new(),
            events,
            bad_peers,
            fetches: FuturesUnordered::new(),
            imports: FuturesUnordered::new(),
            cells: FuturesUnordered::new(),
        }
    }

    /// Runs until the network manager is gone.
    pub(crate) async fn run(mut self) {
        loop {
            tokio::select! {
                event = self.events.recv() => match event {
                    Some(event) => self.on_event(event),
                    None => return,
                },
                Some(fetched) = self.fetches.next(), if !self.fetches.is_empty() => {
                    self.on_fetched(fetched);
                }
                Some(imported) = self.imports.next(), if !self.imports.is_empty() => {
                    self.on_imported(imported);
                }
                Some(done) = self.cells.next(), if !self.cells.is_empty() => {
                    self.fetcher.delivered(&done.hash);
                    if let Some(origin) = done.origin {
                        self.remember_origin(done.hash, origin);
                    }
                }
            }
        }
    }

    fn on_event(&mut self, event: TransactionsEvent) {
        match event {
            TransactionsEvent::SessionEstablished { peer, version, commands } => {
                self.peers.insert(peer, Peer { commands, version });
            }
            TransactionsEvent::SessionClosed(peer) => {
                self.peers.remove(&peer);
                let next = self.fetcher.peer_gone(peer);
                self.spawn_fetches(next);
            }
            TransactionsEvent::Hashes { peer, announced } => self.on_hashes(peer, &announced),
            TransactionsEvent::Transactions { peer, raws } => self.import(peer, raws, None),
            TransactionsEvent::Announce(announced) => self.announce(&announced),
        }
    }

    /// The transaction `hash` came from `peer` (kept if another peer was not first).
    fn remember_origin(&mut self, hash: B256, peer: PeerId) {
        if self.origins.peek(&hash).is_none() {
            self.origins.insert(hash, peer);
        }
    }

    /// Names `peer` to the network manager, which drops and bans it.
    fn report(&self, peer: PeerId) {
        let _ = self.bad_peers.send(peer);
    }

    /// The hashes a peer announced that the pool lacks and nobody fetches are asked of it.
    fn on_hashes(&mut self, peer: PeerId, announced: &NewPooledTransactionHashes) {
        if !announced.is_consistent() {
            self.report(peer);
            return;
        }
        // Below eth/72 a peer holds whole blobs; on eth/72 its bitmap says which columns.
        let holds_blobs = announced.mask.is_none_or(|mask| mask.covers(&blob_columns()));
        let mut wanted = Vec::new();
        for ((hash, tx_type), size) in
            announced.hashes.iter().zip(announced.types.iter()).zip(&announced.sizes)
        {
            if self.pool.contains(hash) {
                continue;
            }
            if self.fetcher.announced(peer, *hash, *tx_type, *size, holds_blobs) {
                wanted.push(*hash);
            }
            self.remember_origin(*hash, peer);
        }
        self.spawn_fetches(HashMap::from([(peer, wanted)]));
    }

    /// Asks each peer for its hashes, [`MAX_POOLED_TRANSACTIONS_REQUEST`] a request.
    fn spawn_fetches(&mut self, fetches: HashMap<PeerId, Vec<B256>>) {
        for (peer, hashes) in fetches {
            let commands = self.peers.get(&peer).map(|p| p.commands.clone());
            for chunk in hashes.chunks(MAX_POOLED_TRANSACTIONS_REQUEST) {
                let (asked, commands) = (chunk.to_vec(), commands.clone());
                tracing::debug!(target: "net::devp2p", %peer, count = asked.len(), "asking for pooled transactions");
                self.fetches.push(Box::pin(async move {
                    let message = EthMessage::GetPooledTransactions(RequestPair {
                        request_id: 0,
                        message: asked.clone(),
                    });
                    let answer =
                        ask(commands, |reply| SessionCommand::Request { message, reply }).await;
                    Fetched { peer, asked, answer }
                }));
            }
        }
    }

    /// What `peer` did not deliver of `hashes` goes to the next peer that announced it.
    fn refetch(&mut self, peer: PeerId, hashes: &[B256]) {
        let next = self.fetcher.failed(peer, hashes);
        self.spawn_fetches(next);
    }

    fn on_fetched(&mut self, Fetched { peer, asked, answer }: Fetched) {
        match answer {
            Ok(EthMessage::PooledTransactions(p)) => {
                tracing::debug!(target: "net::devp2p", %peer, count = p.message.0.len(), "pooled transactions answered");
                self.import(peer, p.message.0, Some(asked));
            }
            Ok(_) => {
                self.report(peer);
                self.refetch(peer, &asked);
            }
            Err(e) => {
                tracing::debug!(target: "net::devp2p", %peer, error = %e, "pooled transactions not fetched");
                self.refetch(peer, &asked);
            }
        }
    }

    /// Imports `raws` from `peer` (the answer to `asked`, or a `Transactions` broadcast when
    /// `None`), as geth's handler and fetcher take them: a message with a transaction that
    /// breaks the wire's rules ([`check_network_transaction`]), or the same transaction twice,
    /// drops the peer and is not imported; every announcer of a transaction that named another
    /// type or size is dropped; eth/72 blob transactions without their blobs wait for their
    /// cells; the rest goes to the pool on a blocking thread ([`Self::on_imported`]).
    fn import(&mut self, peer: PeerId, raws: Vec<Bytes>, asked: Option<Vec<B256>>) {
        let eth72 = self.peers.get(&peer).is_some_and(|p| p.version >= EthVersion::Eth72);
        let mut identified = Vec::with_capacity(raws.len());
        let mut seen = HashSet::with_capacity(raws.len());
        let mut blobless = Vec::new();
        for raw in &raws {
            match check_network_transaction(raw, asked.is_none(), eth72) {
                Ok(checked) if seen.insert(checked.hash) => {
                    identified.push((checked.hash, checked.tx_type, raw.len() as u32));
                    if eth72 && checked.blobs > 0 {
                        blobless.push(checked.hash);
                    }
                }
                Ok(Checked { hash, .. }) => {
                    tracing::debug!(target: "net::devp2p", %peer, %hash, "the same transaction twice in one message");
                    self.report(peer);
                    self.refetch(peer, asked.as_deref().unwrap_or_default());
                    return;
                }
                Err(violation) => {
                    tracing::debug!(target: "net::devp2p", %peer, %violation, "peer broke the transaction rules");
                    self.report(peer);
                    self.refetch(peer, asked.as_deref().unwrap_or_default());
                    return;
                }
            }
        }
        let unasked = asked
            .as_ref()
            .and_then(|a| identified.iter().find(|(h, _, _)| !a.contains(h)).map(|(h, _, _)| *h));
        for (hash, tx_type, size) in &identified {
            for bad in self.fetcher.arrived(hash, *tx_type, *size).mismatched {
                tracing::debug!(target: "net::devp2p", peer = %bad, "announced a transaction's type or size wrong");
                self.report(bad);
            }
        }
        let (mut to_pool, mut hashes) = (Vec::new(), Vec::new());
        for (raw, (hash, _, _)) in raws.into_iter().zip(identified) {
            if blobless.contains(&hash) {
                self.fetch_cells(peer, hash, raw);
            } else {
                to_pool.push(raw);
                hashes.push(hash);
            }
        }
        let pool = self.pool.clone();
        self.imports.push(Box::pin(async move {
            let results = match tokio::task::spawn_blocking(move || pool.import(&to_pool)).await {
                Ok(results) => results,
                Err(e) if e.is_panic() => std::panic::resume_unwind(e.into_panic()),
                // The runtime is shutting down.
                Err(_) => Vec::new(),
            };
            Imported {
                peer,
                asked,
                identified: hashes,
                results,
                delivered: blobless.into_iter().collect(),
                unasked,
            }
        }));
    }

    /// The pool's verdicts: a transaction it finds invalid, or one not asked for, drops the
    /// peer; the asked hashes not delivered valid go to the next announcer.
    fn on_imported(&mut self, imported: Imported) {
        let Imported { peer, asked, identified, results, mut delivered, unasked } = imported;
        let mut invalid = None;
        for (hash, result) in identified.iter().zip(&results) {
            tracing::trace!(target: "net::devp2p", %peer, %hash, ?result, "transaction from a peer");
            match result {
                Err(e @ PoolImportError::Invalid(_)) => {
                    invalid.get_or_insert_with(|| e.clone());
                }
                Ok(_) | Err(PoolImportError::Declined(_)) => {
                    delivered.insert(*hash);
                    self.fetcher.delivered(hash);
                    if result.is_ok() {
                        self.remember_origin(*hash, peer);
                    }
                }
            }
        }
        if let Some(reason) = invalid {
            tracing::debug!(target: "net::devp2p", %peer, %reason, "peer sent an invalid transaction");
            self.report(peer);
        } else if let Some(unasked) = unasked {
            tracing::debug!(target: "net::devp2p", %peer, %unasked, "a transaction not asked for");
            self.report(peer);
        }
        if let Some(asked) = asked {
            let undelivered: Vec<B256> =
                asked.into_iter().filter(|h| !delivered.contains(h)).collect();
            self.refetch(peer, &undelivered);
        }
    }

    /// Fetches the blobs of blob transaction `hash` (`raw`: its network form without them,
    /// delivered by `peer` over eth/72) as the cells of columns 0..63 from the peers that
    /// announced holding them (`peer` first), and hands the rebuilt transaction to the pool.
    /// Cells that are not 64 a blob, or whose blobs fail the pool's KZG check, drop the peer
    /// that sent them, and the next holder is asked; an answer without the transaction, a
    /// timeout or a lost session only moves on to the next.
    fn fetch_cells(&mut self, peer: PeerId, hash: B256, raw: Bytes) {
        let holders: Vec<_> = self
            .fetcher
            .blob_holders(&hash, peer)
            .into_iter()
            .map(|holder| (holder, self.peers.get(&holder).map(|p| p.commands.clone())))
            .collect();
        let (pool, bad_peers) = (self.pool.clone(), self.bad_peers.clone());
        self.cells.push(Box::pin(async move {
            for (holder, commands) in holders {
                let message = EthMessage::GetCells(GetCells {
                    request_id: 0,
                    hashes: vec![hash],
                    mask: blob_columns(),
                });
                tracing::debug!(target: "net::devp2p", peer = %holder, %hash, "asking for cells");
                let answer = ask(commands, |reply| SessionCommand::Request { message, reply }).await;
                let cells = match answer {
                    Ok(EthMessage::Cells(c)) if c.mask != blob_columns() => {
                        tracing::debug!(target: "net::devp2p", peer = %holder, "cells of other columns");
                        continue;
                    }
                    Ok(EthMessage::Cells(c)) => match c.hashes.iter().position(|h| *h == hash) {
                        Some(i) if c.hashes.len() == c.cells.len() => c.cells[i].clone(),
                        Some(_) => {
                            let _ = bad_peers.send(holder);
                            continue;
                        }
                        None => continue,
                    },
                    Ok(_) => {
                        let _ = bad_peers.send(holder);
                        continue;
                    }
                    Err(e) => {
                        tracing::debug!(target: "net::devp2p", peer = %holder, error = %e, "cells not fetched");
                        continue;
                    }
                };
                let full = match with_blobs(&raw, &cells) {
                    Ok(full) => Bytes::from(full),
                    Err(violation) => {
                        tracing::debug!(target: "net::devp2p", peer = %holder, %violation, "bad cells");
                        let _ = bad_peers.send(holder);
                        continue;
                    }
                };
                let pool = pool.clone();
                let result = match tokio::task::spawn_blocking(move || pool.import(&[full])).await {
                    Ok(mut results) => results.pop(),
                    Err(e) if e.is_panic() => std::panic::resume_unwind(e.into_panic()),
                    Err(_) => return CellsFetched { hash, origin: None },
                };
                tracing::debug!(target: "net::devp2p", peer = %holder, %hash, ?result, "blob transaction rebuilt from cells");
                match result {
                    Some(Err(PoolImportError::Invalid(reason))) => {
                        tracing::debug!(target: "net::devp2p", peer = %holder, %reason, "cells that do not verify");
                        let _ = bad_peers.send(holder);
                    }
                    Some(Ok(_)) => return CellsFetched { hash, origin: Some(peer) },
                    _ => return CellsFetched { hash, origin: None },
                }
            }
            CellsFetched { hash, origin: None }
        }));
    }

    /// Announces transactions the pool took to every session but the one each came from
    /// (`NewPooledTransactionHashes`, at most [`MAX_ANNOUNCED_HASHES`] a message).
    fn announce(&self, announced: &[TransactionAnnouncement]) {
        let origins: Vec<Option<PeerId>> =
            announced.iter().map(|a| self.origins.peek(&a.hash).copied()).collect();
        for (peer, session) in &self.peers {
            let to_peer: Vec<&TransactionAnnouncement> = announced
                .iter()
                .zip(&origins)
                .filter(|(_, origin)| **origin != Some(*peer))
                .map(|(a, _)| a)
                .collect();
            // On eth/72 a blob transaction is announced at its size without blobs, with the
            // columns held: all of them (the pool keeps whole blobs).
            let eth72 = session.version >= EthVersion::Eth72;
            for chunk in to_peer.chunks(MAX_ANNOUNCED_HASHES) {
                let message = NewPooledTransactionHashes {
                    types: chunk.iter().map(|a| a.tx_type).collect::<Vec<u8>>().into(),
                    sizes: chunk
                        .iter()
                        .map(|a| if eth72 { a.size_without_blobs } else { a.size })
                        .collect(),
                    hashes: chunk.iter().map(|a| a.hash).collect(),
                    mask: eth72.then_some(CustodyBitmap::ALL),
                };
                // A session too busy to take it misses this announcement.
                let _ = session.commands.try_send(SessionCommand::Send(
                    EthMessage::NewPooledTransactionHashes(message),
                ));
            }
        }
    }
}
