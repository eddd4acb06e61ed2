//! The libp2p network behind the transport-neutral traits: a [`BlockClient`] (the p2p traits'
//! requests as request-response sync messages to one peer; a peer reported for a bad message
//! is blocked: disconnected, kept out, dropped from the routing table) and a [`NetworkInfo`]
//! (what RPC sees).

use crate::{NetworkHandle, PeerId};
use alloy_consensus::{BlockBody, Header, TxEnvelope};
use alloy_eips::eip1898::HashOrNumber;
use alloy_primitives::B256;
use gigagas_bal::BlockAccessList;
use gigagas_eth_wire_types::{SyncRequest, SyncResponse};
use gigagas_net_api::{NetworkInfo, NodeInfo, PeerInfo};
use gigagas_net_p2p::{BlockClient, RequestError};

fn transport(e: crate::NetError) -> RequestError {
    RequestError::Transport(Box::new(e))
}

impl BlockClient for NetworkHandle {
    type Peer = PeerId;

    fn peers(&self) -> Vec<PeerId> {
        NetworkHandle::peers(self).into_iter().collect()
    }

    async fn get_headers(
        &self,
        peer: PeerId,
        start: HashOrNumber,
        limit: u64,
        reverse: bool,
    ) -> Result<Vec<Header>, RequestError> {
        let request = SyncRequest::GetBlockHeaders { start, limit, skip: 0, reverse };
        match self.request(peer, request).await.map_err(transport)? {
            SyncResponse::BlockHeaders(headers) => Ok(headers),
            _ => Err(RequestError::UnexpectedResponse { expected: "BlockHeaders" }),
        }
    }

    async fn get_block_bodies(
        &self,
        peer: PeerId,
        hashes: Vec<B256>,
    ) -> Result<Vec<BlockBody<TxEnvelope>>, RequestError> {
        match self.request(peer, SyncRequest::GetBlockBodies(hashes)).await.map_err(transport)? {
            SyncResponse::BlockBodies(bodies) => Ok(bodies),
            _ => Err(RequestError::UnexpectedResponse { expected: "BlockBodies" }),
        }
    }

    /// The libp2p sync protocol carries no receipts: none.
    async fn get_receipts(
        &self,
        _peer: PeerId,
        _hashes: Vec<B256>,
    ) -> Result<Vec<Vec<gigagas_eth_wire_types::Receipt69>>, RequestError> {
        Ok(Vec::new())
    }

    async fn get_block_access_lists(
        &self,
        peer: PeerId,
        hashes: Vec<B256>,
    ) -> Result<Vec<Option<BlockAccessList>>, RequestError> {
        let request = SyncRequest::GetBlockAccessLists(hashes);
        match self.request(peer, request).await.map_err(transport)? {
            SyncResponse::BlockAccessLists(bals) => Ok(bals),
            _ => Err(RequestError::UnexpectedResponse { expected: "BlockAccessLists" }),
        }
    }

    fn report_bad_message(&self, peer: PeerId) {
        self.ban(peer);
    }
}

impl NetworkInfo for NetworkHandle {
    fn transport(&self) -> &'static str {
        "libp2p"
    }

    fn node_info(&self) -> NodeInfo {
        NodeInfo {
            id: self.local_peer_id().to_string(),
            name: format!("gigagas/v{}", env!("CARGO_PKG_VERSION")),
            listen_addr: self.listen_addr().to_string(),
            enode: None,
            enr: None,
            listener_port: 0,
            discovery_port: 0,
            transport: "libp2p",
        }
    }

    fn peers(&self) -> Vec<PeerInfo> {
        NetworkHandle::peers(self)
            .into_iter()
            .map(|p| PeerInfo {
                id: p.to_string(),
                name: String::new(),
                remote_addr: String::new(),
                caps: Vec::new(),
                enode: None,
                inbound: false,
                is_static: false,
                transport: "libp2p",
            })
            .collect()
    }

    fn peer_count(&self) -> usize {
        NetworkHandle::peers(self).len()
    }
}
