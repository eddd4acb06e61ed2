//! Serving peers' sync requests from the store, on a task of its own (reth's
//! `EthRequestHandler`), so that store reads never run on the swarm's event loop.
//!
//! Flow: the swarm's loop hands each inbound request, with its response channel, to the
//! handler's bounded queue ([`RequestQueue::offer`]; a full queue sheds the request, which the
//! peer sees fail) and goes on; the handler task reads the store on a blocking thread
//! ([`EthRequestHandler::on_request`]), caps the answer at the protocol's limits (1,024
//! headers, [`MAX_BODIES`] bodies or BALs, 2 MiB: eth's soft limit), and sends it back to the
//! loop, which writes it to the peer. A read that fails leaves
//! the request unanswered (the peer asks another) rather than answering it short.

use alloy_primitives::B256;
use gigagas_eth_wire_types::{ChainStatus, SyncRequest, SyncResponse, ETH_VERSION, MAX_BODIES};
use gigagas_net_p2p::ChainServer;
use gigagas_storage_api::{ChainReader, ProviderError};
use libp2p::{request_response::ResponseChannel, PeerId};
use std::sync::Arc;
use tokio::sync::mpsc;

/// Requests waiting for the handler at most; more are shed (unanswered).
pub const MAX_QUEUED_REQUESTS: usize = 256;

/// Answers sync requests from a store holding a chain with network id `network_id` and genesis
/// `genesis` (the reads are `gigagas-net-p2p`'s [`ChainServer`], shared with devp2p).
#[derive(Debug, Clone)]
pub struct EthRequestHandler {
    server: ChainServer,
    network_id: u64,
    genesis: B256,
}

impl EthRequestHandler {
    /// A handler serving from `provider`, whose chain has id `network_id` and genesis block
    /// hash `genesis`.
    pub fn new(provider: Arc<dyn ChainReader>, network_id: u64, genesis: B256) -> Self {
        Self { server: ChainServer::new(provider), network_id, genesis }
    }

    /// The answer to `request`, within the limits: a prefix of what was asked, ending at the
    /// first block the store does not hold (a missing BAL is `None` in its place).
    ///
    /// # Errors
    /// [`ProviderError`] when a read fails: then there is no answer at all.
    pub fn on_request(&self, request: SyncRequest) -> Result<SyncResponse, ProviderError> {
        Ok(match request {
            SyncRequest::Status => SyncResponse::Status(self.status()?),
            SyncRequest::GetBlockHeaders { start, limit, skip, reverse } => {
                SyncResponse::BlockHeaders(self.server.headers(start, limit, skip, reverse)?)
            }
            SyncRequest::GetBlockBodies(hashes) => {
                SyncResponse::BlockBodies(self.server.bodies(&hashes, MAX_BODIES)?)
            }
            SyncRequest::GetBlockAccessLists(hashes) => {
                SyncResponse::BlockAccessLists(self.server.access_lists(&hashes, MAX_BODIES)?)
            }
        })
    }

    fn status(&self) -> Result<Option<ChainStatus>, ProviderError> {
        let Some((latest, latest_hash)) = self.server.provider().best_block()? else {
            return Ok(None);
        };
        Ok(Some(ChainStatus {
            version: ETH_VERSION,
            network_id: self.network_id,
            genesis: self.genesis,
            earliest: 0,
            latest,
            latest_hash,
        }))
    }
}

/// An inbound request on its way to the handler.
pub(crate) struct IncomingRequest {
    pub(crate) peer: PeerId,
    pub(crate) request: SyncRequest,
    pub(crate) channel: ResponseChannel<SyncResponse>,
}

/// A request the handler is done with, back to the swarm's loop to be written.
pub(crate) struct ServedRequest {
    pub(crate) peer: PeerId,
    pub(crate) channel: ResponseChannel<SyncResponse>,
    pub(crate) response: Result<SyncResponse, ProviderError>,
}

/// The swarm loop's side of the handler: a bounded queue of inbound requests.
pub(crate) struct RequestQueue(mpsc::Sender<IncomingRequest>);

impl RequestQueue {
    /// Queues `request`; `false` when the queue is full or the handler gone (the request is
    /// dropped, so the peer's request fails).
    pub(crate) fn offer(&self, request: IncomingRequest) -> bool {
        self.0.try_send(request).is_ok()
    }
}

/// Starts the handler task (a critical task `net-requests` with `tasks`); returns the queue
/// requests go to, answers coming back on `served`.
pub(crate) fn spawn(
    handler: EthRequestHandler,
    served: mpsc::UnboundedSender<ServedRequest>,
    tasks: &gigagas_tasks::TaskExecutor,
) -> RequestQueue {
    let (tx, mut rx) = mpsc::channel::<IncomingRequest>(MAX_QUEUED_REQUESTS);
    let run = async move {
        while let Some(IncomingRequest { peer, request, channel }) = rx.recv().await {
            let handler = handler.clone();
            let response =
                match tokio::task::spawn_blocking(move || handler.on_request(request)).await {
                    Ok(response) => response,
                    Err(e) if e.is_panic() => std::panic::resume_unwind(e.into_panic()),
                    Err(_) => return, // the runtime is shutting down
                };
            if served.send(ServedRequest { peer, channel, response }).is_err() {
                return;
            }
        }
    };
    drop(tasks.spawn_critical("net-requests", run));
    RequestQueue(tx)
}
