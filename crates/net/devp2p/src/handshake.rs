//! A session's start, dialing or accepting (reth's pending sessions): TCP, the RLPx handshake
//! (`gigagas-net-ecies`), `Hello` and `Status` (`gigagas-eth-wire`), within
//! [`HANDSHAKE_TIMEOUT`]. Each runs on a task of its own; the stream it yields goes to the
//! manager, which starts the session. An inbound peer is admitted or refused by the manager
//! after its `Hello` (banned, or the node full).

use crate::{
    config::{DIAL_TIMEOUT, HANDSHAKE_TIMEOUT},
    session::Stream,
    LocalNode, SessionError, SessionInfo,
};
use gigagas_eth_wire::{
    eth_protocols, snap_protocols, DisconnectReason, EthStream, HelloMessage, P2PStream,
    P2PStreamError, Protocol, P2P_VERSION,
};
use gigagas_eth_wire_types::StatusMessage;
use gigagas_net_ecies::{peer_id, EciesStream};
use gigagas_net_peers::{NodeRecord, PeerId};
use std::net::SocketAddr;
use tokio::{net::TcpStream, sync::oneshot};

/// What a handshake needs of the node: its identity and head, and whether snap is offered.
#[derive(Debug, Clone)]
pub(crate) struct Handshake {
    /// What the node says about itself.
    pub(crate) local: LocalNode,
    /// Whether snap/1–2 are offered beside eth.
    pub(crate) snap: bool,
}

impl Handshake {
    /// The protocols offered: eth/69–72, and snap/1–2 when served.
    fn protocols(&self) -> Vec<Protocol> {
        let mut protocols = eth_protocols();
        if self.snap {
            protocols.extend(snap_protocols());
        }
        protocols
    }

    /// This node's `Hello`.
    fn hello(&self) -> HelloMessage {
        HelloMessage {
            protocol_version: P2P_VERSION,
            client_version: self.local.client_version.clone(),
            capabilities: self.protocols().into_iter().map(|p| p.cap).collect(),
            port: self.local.port,
            id: peer_id(&self.local.secret.public_key()),
        }
    }

    /// Dials `record`: TCP within [`DIAL_TIMEOUT`], then the initiator's handshakes.
    ///
    /// # Errors
    /// [`SessionError`] naming the step that failed.
    pub(crate) async fn dial(
        &self,
        record: NodeRecord,
    ) -> Result<(Stream, SessionInfo), SessionError> {
        let addr = record.tcp_addr();
        let io = tokio::time::timeout(DIAL_TIMEOUT, TcpStream::connect(addr))
            .await
            .map_err(|_| SessionError::Timeout { step: "TCP connect", after: DIAL_TIMEOUT })?
            .map_err(|source| SessionError::Connect { addr, source })?;
        let _ = io.set_nodelay(true);
        let handshakes = async {
            let ecies = EciesStream::connect(io, self.local.secret.clone(), record.id).await?;
            let (p2p, hello) =
                P2PStream::handshake(ecies, &self.hello(), &self.protocols()).await?;
            let (eth, status) =
                EthStream::handshake(p2p, self.local.status, &self.local.fork_filter).await?;
            Ok::<_, SessionError>((eth, hello, status))
        };
        let (eth, hello, status) = within_timeout(handshakes).await?;
        let info = session_info(record, hello, &eth, status, false);
        Ok((eth, info))
    }

    /// The recipient's handshakes on `io` from `remote`; after the peer's `Hello`, `admit`
    /// asks the manager whether it may stay (refused: disconnected with the manager's reason).
    ///
    /// # Errors
    /// [`SessionError`] naming the step that failed, or the refusal.
    pub(crate) async fn accept(
        &self,
        io: TcpStream,
        remote: SocketAddr,
        admit: impl FnOnce(PeerId) -> Option<oneshot::Receiver<Option<DisconnectReason>>>,
    ) -> Result<(Stream, SessionInfo), SessionError> {
        within_timeout(async {
            let _ = io.set_nodelay(true);
            let ecies = EciesStream::accept(io, self.local.secret.clone()).await?;
            let id = ecies.remote_id();
            let (mut p2p, hello) =
                P2PStream::handshake(ecies, &self.hello(), &self.protocols()).await?;
            // No answer: the manager is gone, the node stopping.
            let refusal = match admit(id) {
                Some(answer) => answer.await.unwrap_or(Some(DisconnectReason::ClientQuitting)),
                None => Some(DisconnectReason::ClientQuitting),
            };
            if let Some(reason) = refusal {
                let _ = p2p.disconnect(reason).await;
                return Err(SessionError::P2P(P2PStreamError::Disconnected(reason)));
            }
            let (eth, status) =
                EthStream::handshake(p2p, self.local.status, &self.local.fork_filter).await?;
            let port = if hello.port == 0 { remote.port() } else { hello.port };
            let record = NodeRecord { address: remote.ip(), tcp_port: port, udp_port: port, id };
            let info = session_info(record, hello, &eth, status, true);
            Ok((eth, info))
        })
        .await
    }
}

/// What is known of a session with `record` once its handshakes are done.
fn session_info(
    record: NodeRecord,
    hello: HelloMessage,
    eth: &Stream,
    status: StatusMessage,
    inbound: bool,
) -> SessionInfo {
    SessionInfo {
        record,
        client_version: hello.client_version,
        version: eth.version(),
        snap: eth.snap_version(),
        status,
        inbound,
    }
}

/// `handshakes` within [`HANDSHAKE_TIMEOUT`].
async fn within_timeout<T>(
    handshakes: impl std::future::Future<Output = Result<T, SessionError>>,
) -> Result<T, SessionError> {
    tokio::time::timeout(HANDSHAKE_TIMEOUT, handshakes)
        .await
        .map_err(|_| SessionError::Timeout { step: "handshakes", after: HANDSHAKE_TIMEOUT })?
}
