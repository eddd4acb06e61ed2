//! The node's devp2p side: sessions with `--trusted-peers` kept up, and sync from them — to
//! `--debug.tip` with no consensus client, or to the block a consensus client's payload was
//! missing (SYNCING).
//!
//! Flow: [`local_node`] builds what the node says in its handshakes from the store (genesis,
//! head, fork id and filter at the head, its key from `DATADIR/nodekey`); the network manager
//! (`gigagas-devp2p`) keeps the trusted peers in session, dials the bootnodes while there is no
//! session and what discovery finds ([`dial_discovered`], [`dial_discovered_v5`] hand it
//! over); [`NodePool`] and [`announce_pool`] gossip the pool's transactions; [`follow_head`]
//! keeps the node's `Status` at the head and announces it with `BlockRangeUpdate` (and the
//! discovery ENRs' `eth` entry at the fork id); [`sync_to_tip`] asks the peers for the tip's
//! header, syncs up to it through the node's [`Syncer`] (the block downloader over the
//! sessions; blocks executed in parallel on the BALs eth/71 peers send) and checks that the
//! head reached is the tip.

use crate::{sync::Syncer, NodeError};
use alloy_eips::eip1898::HashOrNumber;
use alloy_primitives::B256;
use gigagas_devp2p::{Devp2pNetwork, LocalNode};
use gigagas_net_p2p::BlockClient;
use gigagas_net_peers::BootNode;
use gigagas_primitives::ChainSpec;
use gigagas_storage::FullReader;
use std::{path::Path, sync::Arc, time::Duration};

/// How often the peers are asked for the tip's header until one has it.
const TIP_POLL_INTERVAL: Duration = Duration::from_millis(500);

/// The node's devp2p secret key, kept hex-encoded in `path` (created when absent) so that its
/// enode stays the same across restarts.
///
/// # Errors
/// [`NodeError::NodeKey`] when the file cannot be read, written or holds no valid key.
pub(crate) fn load_or_create_key(path: &Path) -> Result<gigagas_net_ecies::SecretKey, NodeError> {
    use gigagas_net::KeyFileError;
    let err = |source: KeyFileError| NodeError::NodeKey { path: path.to_path_buf(), source };
    match std::fs::read_to_string(path) {
        Ok(text) => {
            let bytes = alloy_primitives::hex::decode(text.trim()).map_err(|e| err(e.into()))?;
            if bytes.len() != 32 {
                return Err(err(KeyFileError::Length(bytes.len())));
            }
            gigagas_net_ecies::SecretKey::from_slice(&bytes)
                .map_err(|e| err(KeyFileError::Invalid(Box::new(e))))
        }
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            let key = gigagas_net_ecies::random_secret_key();
            std::fs::write(path, alloy_primitives::hex::encode(key.to_bytes()))
                .map_err(|e| err(e.into()))?;
            Ok(key)
        }
        Err(e) => Err(err(e.into())),
    }
}

/// What this node says in its handshakes: `Status` at the store's head on `chain` (network id =
/// chain id, the fork id and filter of that head), `Hello` with `secret`'s node id.
///
/// # Errors
/// [`NodeError`] when the store's genesis or head header cannot be read.
pub(crate) fn local_node(
    storage: &dyn FullReader,
    chain: &ChainSpec,
    head: (u64, B256),
    secret: gigagas_net_ecies::SecretKey,
) -> Result<LocalNode, NodeError> {
    let genesis = storage.header_by_number(0)?.ok_or(NodeError::NoHeadHeader(0))?;
    let genesis_hash = genesis.hash_slow();
    let header = storage.header_by_number(head.0)?.ok_or(NodeError::NoHeadHeader(head.0))?;
    let client_version = format!(
        "gigagas/v{}/{}-{}",
        env!("CARGO_PKG_VERSION"),
        std::env::consts::OS,
        std::env::consts::ARCH
    );
    let fork_filter = chain.fork_filter(genesis_hash, genesis.timestamp, head.0, header.timestamp);
    Ok(LocalNode::at_head(secret, client_version, chain.chain_id, genesis_hash, head, fork_filter))
}

/// Keeps what the network says of this node at the engine's head: each new head (its header
/// read from the store for the fork id's timestamp) goes to [`Devp2pNetwork::update_head`],
/// which announces it to the sessions as it moves on; a new fork id goes into the discovery
/// ENRs' `eth` entries. Ends when the engine stops.
pub(crate) async fn follow_head(
    network: Devp2pNetwork,
    engine: gigagas_engine::EngineHandle,
    storage: Arc<dyn FullReader>,
    discovery: Discovery,
) {
    let mut forkchoice = engine.subscribe_forkchoice();
    let mut fork_id = network.fork_id();
    loop {
        let (number, hash) = forkchoice.borrow_and_update().head;
        match storage.header(&hash) {
            Ok(Some(header)) => {
                let now = network.update_head(number, hash, header.timestamp).await;
                if now != fork_id {
                    fork_id = now;
                    discovery.set_fork_id(&network, fork_id).await;
                }
            }
            // Not stored yet (persisted in the background): the next head will be.
            Ok(None) => {}
            Err(e) => {
                tracing::warn!(target: "net::devp2p", %hash, error = %e, "head header unreadable")
            }
        }
        if forkchoice.changed().await.is_err() {
            return;
        }
    }
}

/// The node's pool as the devp2p network sees it: peers' transactions are checked as
/// `eth_sendRawTransaction`'s are (the next block's rules, the head's state).
#[derive(Debug)]
pub(crate) struct NodePool {
    pub(crate) pool: Arc<gigagas_txpool::TxPool>,
    pub(crate) storage: Arc<dyn FullReader>,
    pub(crate) engine: gigagas_engine::EngineHandle,
}

impl gigagas_devp2p::NetworkPool for NodePool {
    fn contains(&self, hash: &B256) -> bool {
        self.pool.contains(hash)
    }

    fn network_transactions(
        &self,
        hashes: &[B256],
        max_bytes: usize,
        without_blobs: bool,
    ) -> Vec<alloy_primitives::Bytes> {
        self.pool.network_transactions(hashes, max_bytes, without_blobs)
    }

    fn cells(&self, hashes: &[B256], columns: &[u64]) -> Vec<Option<Vec<alloy_primitives::Bytes>>> {
        self.pool.cells(hashes, columns).unwrap_or_else(|e| {
            tracing::warn!(target: "net::devp2p", error = %e, "cells of pooled blobs not computed");
            vec![None; hashes.len()]
        })
    }

    fn import(
        &self,
        raws: &[alloy_primitives::Bytes],
    ) -> Vec<Result<B256, gigagas_devp2p::PoolImportError>> {
        use gigagas_devp2p::PoolImportError::{Declined, Invalid};
        use gigagas_txpool::PoolError as E;
        // One head for the whole message.
        let head = self.engine.forkchoice().head.0;
        let header = match self.storage.header_by_number(head) {
            Ok(header) => header,
            Err(e) => {
                let e: gigagas_devp2p::transactions::PoolRejection = Arc::new(e);
                return raws.iter().map(|_| Err(Declined(e.clone()))).collect();
            }
        };
        let chain = self.engine.chain();
        raws.iter()
            .map(|raw| {
                self.pool.add_raw_after(raw, chain, header.as_ref(), &*self.storage).map_err(|e| {
                    match e {
                        // What no honest peer sends.
                        E::Oversized { .. }
                        | E::Decode(_)
                        | E::Signature(_)
                        | E::ChainId { .. }
                        | E::Blob(_) => Invalid(Arc::new(e)),
                        _ => Declined(Arc::new(e)),
                    }
                })
            })
            .collect()
    }
}

/// How long announcements are gathered into one message.
const ANNOUNCE_BATCH: Duration = Duration::from_millis(50);

/// Announces every transaction the pool takes (from RPC or from peers) to the devp2p peers,
/// gathered for [`ANNOUNCE_BATCH`] into one `NewPooledTransactionHashes` per peer.
pub(crate) async fn announce_pool(network: Devp2pNetwork, pool: Arc<gigagas_txpool::TxPool>) {
    use tokio::sync::broadcast::error::RecvError;
    let mut taken = pool.subscribe();
    loop {
        let first = match taken.recv().await {
            Ok(tx) => tx,
            Err(RecvError::Lagged(missed)) => {
                tracing::debug!(target: "net::devp2p", missed, "transactions not announced");
                continue;
            }
            Err(RecvError::Closed) => return,
        };
        tokio::time::sleep(ANNOUNCE_BATCH).await;
        let mut batch = vec![first];
        while let Ok(tx) = taken.try_recv() {
            batch.push(tx);
        }
        let batch: Vec<_> = batch
            .into_iter()
            .map(|t| gigagas_devp2p::TransactionAnnouncement {
                hash: t.hash,
                tx_type: t.tx_type,
                size: t.size as u32,
                size_without_blobs: t.size_without_blobs as u32,
            })
            .collect();
        network.announce_transactions(&batch);
    }
}

/// Says at start how many bootnodes the network manager can dial (those with a TCP port)
/// and how many are discovery-only ENRs (UDP, no TCP port), which only discovery can reach
/// (`discovery`: whether it runs); warns when no bootnode can be reached at all.
pub(crate) fn log_bootnodes(bootnodes: &[BootNode], discovery: bool) {
    let dialable = bootnodes.iter().filter(|b| b.record.is_dialable()).count();
    let udp_only = bootnodes.len() - dialable;
    tracing::info!(target: "net::devp2p", dialable, discovery_only = udp_only, discovery, "bootnodes");
    if dialable == 0 && udp_only > 0 && !discovery {
        tracing::warn!(target: "net::devp2p", discovery_only = udp_only, "every bootnode is a discovery-only ENR (no TCP port), and discovery is disabled: no peer can be found from them");
    }
}

/// Hands the nodes discovery v4 proves to the network manager, which dials them while it has
/// room.
pub(crate) async fn dial_discovered(
    network: Devp2pNetwork,
    mut found: tokio::sync::mpsc::Receiver<gigagas_net_peers::NodeRecord>,
) {
    while let Some(record) = found.recv().await {
        network.discovered(record, None, "discv4");
    }
}

/// Hands the nodes discovery v5 meets to the network manager with their ENR's fork id: it
/// dials those on a fork this node accepts (EIP-2124, as the `Status` handshake would check
/// it).
pub(crate) async fn dial_discovered_v5(
    network: Devp2pNetwork,
    mut found: tokio::sync::mpsc::Receiver<gigagas_discv5::Discovered>,
) {
    while let Some(node) = found.recv().await {
        network.discovered(node.record, Some(node.fork_id), "discv5");
    }
}

/// The discovery services running, kept at the node's fork by [`follow_head`].
#[derive(Debug, Clone, Default)]
pub(crate) struct Discovery {
    /// Discovery v4, whose ENR the node shows (`admin_nodeInfo`).
    pub(crate) v4: Option<gigagas_discv4::Discv4>,
    /// Discovery v5.
    pub(crate) v5: Option<gigagas_discv5::Discv5>,
}

impl Discovery {
    /// The node is on `fork_id` now: both ENRs' `eth` entries say so (re-signed), and the
    /// network shows the new record.
    async fn set_fork_id(&self, network: &Devp2pNetwork, fork_id: alloy_eip2124::ForkId) {
        if let Some(v4) = &self.v4 {
            if v4.set_fork_id(fork_id) {
                network.set_discovery(v4.local_addr().port(), v4.enr()).await;
            }
        }
        if let Some(v5) = &self.v5 {
            v5.set_fork_id(fork_id);
        }
        tracing::info!(target: "net::devp2p", ?fork_id, "new fork id in the node's ENRs");
    }
}

/// Why the sync to `--debug.tip` stopped.
#[derive(Debug, thiserror::Error)]
pub(crate) enum TipSyncError {
    /// Sync failed.
    #[error(transparent)]
    Sync(#[from] crate::sync::SyncError),
    /// Sync ended on another block than the tip at the tip's height.
    #[error("sync reached {reached} at block {number}, not the tip {tip}")]
    OtherChain {
        /// The tip asked for.
        tip: B256,
        /// Its number.
        number: u64,
        /// The head reached.
        reached: B256,
    },
}

/// Syncs to block `tip`: waits for a peer that has its header, then syncs to it (headers back
/// from the tip, then bodies: [`Syncer::sync_to_hash`]) and checks that the head is the tip.
pub(crate) async fn sync_to_tip(
    syncer: Arc<Syncer<Devp2pNetwork>>,
    engine: gigagas_engine::EngineHandle,
    tip: B256,
) -> Result<(), TipSyncError> {
    let network = syncer.client().clone();
    let mut waited = 0u32;
    let number = loop {
        let mut found = None;
        for peer in network.peers() {
            if let Ok(headers) = network.get_headers(peer, HashOrNumber::Hash(tip), 1, false).await
            {
                if let Some(h) = headers.first().filter(|h| h.hash_slow() == tip) {
                    found = Some(h.number);
                    break;
                }
            }
        }
        match found {
            Some(number) => break number,
            None => {
                if waited.is_multiple_of(10) {
                    tracing::info!(target: "net::devp2p", %tip, peers = network.peers().len(), "waiting for a peer with the tip");
                }
                waited += 1;
                tokio::time::sleep(TIP_POLL_INTERVAL).await;
            }
        }
    };
    tracing::info!(target: "net::devp2p", %tip, number, head = engine.forkchoice().head.0, "syncing to the tip");
    syncer.sync_to_hash(tip).await?;
    let (reached_number, reached) = engine.forkchoice().head;
    if reached_number == number && reached == tip {
        tracing::info!(target: "net::devp2p", %tip, number, "synced to the tip");
        Ok(())
    } else {
        Err(TipSyncError::OtherChain { tip, number, reached })
    }
}
