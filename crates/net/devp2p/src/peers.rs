//! The peer manager (reth's `PeersManager`), as state without I/O: which peers the node knows,
//! which it is in session with or dialing, which are banned, and whom to dial next. The
//! network manager tells it what happens and dials what [`PeersManager::dials_due`] names.
//!
//! Dial policy:
//! - a static peer (`--trusted-peers`, `admin_addPeer`) is dialed while not in session, again
//!   [`REDIAL_INTERVAL`] after a failed dial or a closed session, beyond the peer limit;
//! - a discovered node is dialed while sessions and dials in flight stay below the limit; a
//!   failed dial backs it off ([`DISCOVERED_BACKOFF`], doubling up to 32 times that), and at
//!   most [`MAX_DISCOVERED`] are kept;
//! - the bootnodes are dialed while the node has no session, every
//!   [`BOOTNODE_REDIAL_INTERVAL`];
//! - a peer that sent what no honest peer sends is banned: disconnected, refused when it dials
//!   in, never dialed again (geth drops such peers too; the ban lasts as long as the process).

use gigagas_eth_wire::DisconnectReason;
use gigagas_net_peers::{NodeRecord, PeerId};
use std::{
    collections::{HashMap, HashSet},
    time::{Duration, Instant},
};

/// How soon a static peer not in session is dialed again.
pub const REDIAL_INTERVAL: Duration = Duration::from_secs(5);

/// How often the bootnodes are dialed again while the node has no session.
pub const BOOTNODE_REDIAL_INTERVAL: Duration = Duration::from_secs(30);

/// How long a discovered node whose dial failed waits before the next (doubled each failure).
pub const DISCOVERED_BACKOFF: Duration = Duration::from_secs(30);

/// The most discovered nodes kept (others are dropped until room is made).
pub const MAX_DISCOVERED: usize = 1024;

/// Why a peer is known.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum PeerKind {
    /// Kept in session.
    Static,
    /// Dialed while the node has no session.
    Bootnode,
    /// Found by discovery.
    Discovered,
}

/// A known peer.
#[derive(Debug)]
struct Peer {
    record: NodeRecord,
    kind: PeerKind,
    /// In session now.
    connected: bool,
    /// A dial in flight.
    dialing: bool,
    /// Not dialed before.
    next_dial: Instant,
    /// Dials failed in a row.
    failures: u32,
}

impl Peer {
    fn new(record: NodeRecord, kind: PeerKind, now: Instant) -> Self {
        Self { record, kind, connected: false, dialing: false, next_dial: now, failures: 0 }
    }
}

/// The peers the node knows and its dial policy (see the module doc).
#[derive(Debug)]
pub(crate) struct PeersManager {
    /// Every known peer, each once (a peer is dialed for one reason at a time).
    peers: HashMap<PeerId, Peer>,
    banned: HashSet<PeerId>,
    max_peers: usize,
    local_id: PeerId,
}

impl PeersManager {
    /// A manager of `local_id`'s peers keeping at most `max_peers` sessions (static peers
    /// beyond), with `statics` kept in session and `bootnodes` dialed while none is.
    pub(crate) fn new(
        local_id: PeerId,
        max_peers: usize,
        statics: &[NodeRecord],
        bootnodes: Vec<NodeRecord>,
        now: Instant,
    ) -> Self {
        let mut manager =
            Self { peers: HashMap::new(), banned: HashSet::new(), max_peers, local_id };
        for record in statics {
            manager.add_static(*record, now);
        }
        for record in bootnodes {
            if record.id != local_id && !manager.peers.contains_key(&record.id) {
                manager.peers.insert(record.id, Peer::new(record, PeerKind::Bootnode, now));
            }
        }
        manager
    }

    /// Keeps a session with `record` from now on (dialed at the next [`Self::dials_due`]).
    pub(crate) fn add_static(&mut self, record: NodeRecord, now: Instant) {
        if record.id == self.local_id {
            return;
        }
        let peer = self.peers.entry(record.id).or_insert(Peer::new(record, PeerKind::Static, now));
        peer.record = record;
        peer.kind = PeerKind::Static;
        peer.next_dial = peer.next_dial.min(now);
    }

    /// The static peers.
    pub(crate) fn statics(&self) -> Vec<NodeRecord> {
        self.peers.values().filter(|p| p.kind == PeerKind::Static).map(|p| p.record).collect()
    }

    /// Discovery found `record`: kept to be dialed unless banned, known, this node, or
    /// [`MAX_DISCOVERED`] are kept. Returns whether it was new.
    pub(crate) fn add_discovered(&mut self, record: NodeRecord, now: Instant) -> bool {
        if record.id == self.local_id
            || self.banned.contains(&record.id)
            || self.peers.contains_key(&record.id)
            || self.peers.values().filter(|p| p.kind == PeerKind::Discovered).count()
                >= MAX_DISCOVERED
        {
            return false;
        }
        self.peers.insert(record.id, Peer::new(record, PeerKind::Discovered, now));
        true
    }

    /// Bans `peer` (see the module doc); a discovered one is forgotten.
    pub(crate) fn ban(&mut self, peer: PeerId) {
        self.banned.insert(peer);
        if self.peers.get(&peer).is_some_and(|p| p.kind == PeerKind::Discovered) {
            self.peers.remove(&peer);
        }
    }

    /// Whether `peer` is banned.
    pub(crate) fn is_banned(&self, peer: &PeerId) -> bool {
        self.banned.contains(peer)
    }

    /// Whether a peer that dialed in may have a session while `sessions` are open: `None`,
    /// or the reason it is refused (banned: `UselessPeer`; the node full: `TooManyPeers`,
    /// unless it is a static peer).
    pub(crate) fn admit_inbound(&self, peer: &PeerId, sessions: usize) -> Option<DisconnectReason> {
        if self.banned.contains(peer) {
            Some(DisconnectReason::UselessPeer)
        } else if sessions >= self.max_peers
            && !self.peers.get(peer).is_some_and(|p| p.kind == PeerKind::Static)
        {
            Some(DisconnectReason::TooManyPeers)
        } else {
            None
        }
    }

    /// A session with `peer` started.
    pub(crate) fn on_session_established(&mut self, peer: PeerId) {
        if let Some(p) = self.peers.get_mut(&peer) {
            p.connected = true;
            p.dialing = false;
            p.failures = 0;
        }
    }

    /// The session with `peer` ended: a static peer is dialed again after
    /// [`REDIAL_INTERVAL`].
    pub(crate) fn on_session_closed(&mut self, peer: PeerId, now: Instant) {
        if let Some(p) = self.peers.get_mut(&peer) {
            p.connected = false;
            p.next_dial = now + REDIAL_INTERVAL;
        }
    }

    /// A dial of `peer` failed: a static peer is dialed again after [`REDIAL_INTERVAL`], a
    /// bootnode after [`BOOTNODE_REDIAL_INTERVAL`], a discovered one backs off.
    pub(crate) fn on_dial_failed(&mut self, peer: PeerId, now: Instant) {
        let Some(p) = self.peers.get_mut(&peer) else { return };
        p.dialing = false;
        p.failures = p.failures.saturating_add(1);
        p.next_dial = now
            + match p.kind {
                PeerKind::Static => REDIAL_INTERVAL,
                PeerKind::Bootnode => BOOTNODE_REDIAL_INTERVAL,
                PeerKind::Discovered => DISCOVERED_BACKOFF * (1 << p.failures.min(6) >> 1),
            };
    }

    /// Why `peer` is known, if it is.
    pub(crate) fn kind(&self, peer: &PeerId) -> Option<PeerKind> {
        self.peers.get(peer).map(|p| p.kind)
    }

    /// What to dial now that `sessions` are open, each marked as being dialed (a peer is never
    /// dialed twice at once, nor while in session): the static peers due; the bootnodes due
    /// while there is no session; discovered nodes due while sessions and dials stay below
    /// the limit.
    pub(crate) fn dials_due(&mut self, sessions: usize, now: Instant) -> Vec<NodeRecord> {
        let mut dials = Vec::new();
        let mut in_flight = self.peers.values().filter(|p| p.dialing).count();
        for peer in self.peers.values_mut() {
            if peer.connected || peer.dialing || peer.next_dial > now {
                continue;
            }
            if self.banned.contains(&peer.record.id) {
                continue;
            }
            let due = match peer.kind {
                PeerKind::Static => true,
                PeerKind::Bootnode => sessions == 0,
                PeerKind::Discovered => sessions + in_flight < self.max_peers,
            };
            if due {
                peer.dialing = true;
                in_flight += 1;
                dials.push(peer.record);
            }
        }
        dials
    }

    /// How many bootnodes there are.
    pub(crate) fn bootnode_count(&self) -> usize {
        self.peers.values().filter(|p| p.kind == PeerKind::Bootnode).count()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::net::{IpAddr, Ipv4Addr};

    fn record(n: u8) -> NodeRecord {
        NodeRecord {
            address: IpAddr::V4(Ipv4Addr::LOCALHOST),
            tcp_port: 30_300 + u16::from(n),
            udp_port: 30_300 + u16::from(n),
            id: PeerId::repeat_byte(n),
        }
    }

    #[test]
    fn static_peers_are_redialed_and_kept_beyond_the_limit() {
        let now = Instant::now();
        let mut peers = PeersManager::new(PeerId::repeat_byte(0), 1, &[record(1)], vec![], now);
        assert_eq!(peers.dials_due(5, now), vec![record(1)], "static beyond the limit");
        assert!(peers.dials_due(5, now).is_empty(), "a dial in flight is not repeated");
        peers.on_dial_failed(record(1).id, now);
        assert!(peers.dials_due(0, now + REDIAL_INTERVAL / 2).is_empty());
        assert_eq!(peers.dials_due(0, now + REDIAL_INTERVAL).len(), 1);
        peers.on_session_established(record(1).id);
        assert!(peers.dials_due(0, now + REDIAL_INTERVAL * 4).is_empty(), "in session");
        assert_eq!(peers.admit_inbound(&record(1).id, 9), None, "a static peer dials in when full");
        assert_eq!(peers.admit_inbound(&record(2).id, 1), Some(DisconnectReason::TooManyPeers));
        let later = now + REDIAL_INTERVAL * 4;
        peers.on_session_closed(record(1).id, later);
        assert!(peers.dials_due(0, later).is_empty());
        assert_eq!(peers.dials_due(0, later + REDIAL_INTERVAL).len(), 1);
    }

    #[test]
    fn discovered_nodes_fill_free_slots_back_off_and_banned_ones_stay_out() {
        let now = Instant::now();
        let mut peers = PeersManager::new(PeerId::repeat_byte(0), 2, &[], vec![], now);
        for n in 1..=3 {
            assert!(peers.add_discovered(record(n), now));
        }
        assert!(!peers.add_discovered(record(1), now), "known");
        assert!(!peers.add_discovered(NodeRecord { id: PeerId::repeat_byte(0), ..record(9) }, now));
        assert_eq!(peers.dials_due(1, now).len(), 1, "one free slot");
        assert_eq!(peers.dials_due(0, now).len(), 1, "the second slot, the first dial in flight");
        let dialed: Vec<_> =
            peers.peers.values().filter(|p| p.dialing).map(|p| p.record.id).collect();
        peers.on_dial_failed(dialed[0], now);
        peers.on_dial_failed(dialed[1], now);
        let due = peers.dials_due(0, now);
        assert_eq!(due.len(), 1, "the third node; the failed ones back off");
        assert!(!dialed.contains(&due[0].id));
        assert_eq!(peers.dials_due(0, now + DISCOVERED_BACKOFF).len(), 1, "one slot left");
        peers.ban(due[0].id);
        assert!(!peers.add_discovered(due[0], now), "banned");
        assert_eq!(peers.admit_inbound(&due[0].id, 0), Some(DisconnectReason::UselessPeer));
    }

    #[test]
    fn bootnodes_are_dialed_only_while_there_is_no_session() {
        let now = Instant::now();
        let mut peers =
            PeersManager::new(PeerId::repeat_byte(0), 5, &[], vec![record(7), record(8)], now);
        assert!(peers.dials_due(1, now).is_empty(), "a session: no bootnode");
        assert_eq!(peers.dials_due(0, now).len(), 2);
        // A bootnode that discovery finds too is not dialed a second time.
        assert!(!peers.add_discovered(record(7), now));
        assert!(peers.dials_due(0, now).is_empty(), "both in flight");
        peers.on_dial_failed(record(7).id, now);
        peers.on_dial_failed(record(8).id, now);
        assert!(peers.dials_due(0, now + BOOTNODE_REDIAL_INTERVAL / 2).is_empty());
        assert_eq!(peers.dials_due(0, now + BOOTNODE_REDIAL_INTERVAL).len(), 2);
        peers.on_session_established(record(8).id);
        assert!(peers.dials_due(1, now + BOOTNODE_REDIAL_INTERVAL * 4).is_empty());
    }
}
