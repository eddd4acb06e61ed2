//! geth's `admin_` namespace for the node's networks ([`AdminApi`], served by [`AdminRpc`]):
//! `admin_nodeInfo` (the devp2p node: enode URL, ENR, ports, and its `eth` protocol: network
//! id, genesis, head), `admin_peers` (every session of every network, geth's shape) and
//! `admin_addPeer` (an enode URL kept connected). Answers come from the
//! [`gigagas_net_api::NetworkInfo`]s the node gave the context; without one, `nodeInfo` is an
//! error, `peers` empty and `addPeer` refused.

use crate::{RpcContext, RpcError};
use alloy_primitives::{keccak256, B256};
use gigagas_net_api::{AddPeerError, NetworkInfo, NodeInfo, PeerInfo};
use jsonrpsee::{core::RpcResult, proc_macros::rpc};
use serde::{Deserialize, Serialize};
use std::{collections::BTreeMap, sync::Arc};

/// geth's `admin_` namespace (the parts about peers).
#[rpc(server, client, namespace = "admin")]
pub trait AdminApi {
    /// The local node as its devp2p network announces it (or its only network).
    #[method(name = "nodeInfo")]
    fn node_info(&self) -> RpcResult<AdminNodeInfo>;

    /// The connected peers of every network.
    #[method(name = "peers")]
    fn peers(&self) -> RpcResult<Vec<AdminPeer>>;

    /// Keeps a session with the node at `enode` (dialed now and whenever its session ends);
    /// `true` once accepted, an error naming what is wrong with the URL otherwise.
    #[method(name = "addPeer")]
    fn add_peer(&self, enode: String) -> RpcResult<bool>;
}

/// The `admin_nodeInfo` answer (geth's `p2p.NodeInfo`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct AdminNodeInfo {
    /// The node id as geth prints it: keccak256 of the public key (devp2p), else the
    /// transport's own id.
    pub id: String,
    /// The client name (`Hello`'s).
    pub name: String,
    /// The enode URL.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub enode: Option<String>,
    /// The EIP-778 record.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub enr: Option<String>,
    /// The IP address peers reach it on.
    pub ip: String,
    /// Its ports.
    pub ports: AdminPorts,
    /// The address it listens on.
    pub listen_addr: String,
    /// Per protocol, what it says of the chain (`eth`: network id, genesis, head).
    pub protocols: BTreeMap<String, serde_json::Value>,
}

/// `admin_nodeInfo.ports`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct AdminPorts {
    /// The UDP port of discovery (0: none).
    pub discovery: u16,
    /// The TCP port of RLPx.
    pub listener: u16,
}

/// One `admin_peers` entry (geth's `p2p.PeerInfo`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct AdminPeer {
    /// Its enode URL (devp2p).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub enode: Option<String>,
    /// Its id (keccak256 of its public key on devp2p, as geth prints it).
    pub id: String,
    /// Its client name.
    pub name: String,
    /// The protocols spoken with it (`eth/71`).
    pub caps: Vec<String>,
    /// Where it is.
    pub network: AdminPeerNetwork,
    /// Per protocol, its version.
    pub protocols: BTreeMap<String, serde_json::Value>,
    /// The transport: `devp2p` or `libp2p` (not in geth's answer).
    pub transport: String,
}

/// `admin_peers[].network`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct AdminPeerNetwork {
    /// Its address.
    pub remote_address: String,
    /// Whether it dialed us.
    pub inbound: bool,
    /// Whether it is kept connected (`--trusted-peers`, `admin_addPeer`).
    pub trusted: bool,
    /// The same as `trusted`: gigagas keeps one list.
    #[serde(rename = "static")]
    pub is_static: bool,
}

/// Serves [`AdminApi`] from the context's networks.
#[derive(Debug, Clone)]
pub struct AdminRpc {
    ctx: Arc<RpcContext>,
}

impl AdminRpc {
    /// The handler over `ctx`.
    pub fn new(ctx: Arc<RpcContext>) -> Self {
        Self { ctx }
    }

    /// The devp2p network, else the first one.
    fn main_network(&self) -> Option<&Arc<dyn NetworkInfo>> {
        let networks = &self.ctx.networks;
        networks.iter().find(|n| n.transport() == "devp2p").or(networks.first())
    }
}

/// geth's node id: keccak256 of the 64-byte public key, for a devp2p id given in hex.
fn geth_id(info_id: &str, transport: &str) -> String {
    match alloy_primitives::hex::decode(info_id) {
        Ok(key) if transport == "devp2p" && key.len() == 64 => {
            alloy_primitives::hex::encode(keccak256(key))
        }
        _ => info_id.to_string(),
    }
}

impl AdminApiServer for AdminRpc {
    fn node_info(&self) -> RpcResult<AdminNodeInfo> {
        let network =
            self.main_network().ok_or_else(|| RpcError::Execution("no network runs".into()))?;
        let NodeInfo {
            id,
            name,
            listen_addr,
            enode,
            enr,
            listener_port,
            discovery_port,
            transport,
        } = network.node_info();
        let ip = enode
            .as_deref()
            .and_then(|e| e.parse::<gigagas_net_peers::NodeRecord>().ok())
            .map(|r| r.address.to_string())
            .unwrap_or_default();
        let genesis = gigagas_storage_api::BlockHashReader::block_hash(&*self.ctx.provider, 0)
            .map_err(RpcError::from)?;
        let head = self.ctx.forkchoice().head.1;
        let eth = serde_json::json!({
            "network": self.ctx.chain.chain_id,
            "genesis": genesis.unwrap_or(B256::ZERO),
            "head": head,
        });
        Ok(AdminNodeInfo {
            id: geth_id(&id, transport),
            name,
            enode,
            enr,
            ip,
            ports: AdminPorts { discovery: discovery_port, listener: listener_port },
            listen_addr,
            protocols: BTreeMap::from([("eth".to_string(), eth)]),
        })
    }

    fn peers(&self) -> RpcResult<Vec<AdminPeer>> {
        let peers = self.ctx.networks.iter().flat_map(|n| n.peers());
        Ok(peers
            .map(|p: PeerInfo| {
                let protocols = p
                    .caps
                    .iter()
                    .filter_map(|c| c.split_once('/'))
                    .map(|(name, version)| {
                        let version: u64 = version.parse().unwrap_or_default();
                        (name.to_string(), serde_json::json!({ "version": version }))
                    })
                    .collect();
                AdminPeer {
                    id: geth_id(&p.id, p.transport),
                    enode: p.enode,
                    name: p.name,
                    caps: p.caps,
                    network: AdminPeerNetwork {
                        remote_address: p.remote_addr,
                        inbound: p.inbound,
                        trusted: p.is_static,
                        is_static: p.is_static,
                    },
                    protocols,
                    transport: p.transport.to_string(),
                }
            })
            .collect())
    }

    fn add_peer(&self, enode: String) -> RpcResult<bool> {
        let network =
            self.main_network().ok_or_else(|| RpcError::Execution("no network runs".into()))?;
        match network.add_peer(&enode) {
            Ok(()) => Ok(true),
            Err(AddPeerError::InvalidAddress(e)) => {
                Err(RpcError::Execution(format!("invalid enode: {e}")).into())
            }
            Err(e @ AddPeerError::Unsupported) => Err(RpcError::Execution(e.to_string()).into()),
        }
    }
}
