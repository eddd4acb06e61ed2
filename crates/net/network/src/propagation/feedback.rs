//! Receiver feedback of the push engine, per block: what each peer has sent this node and what
//! this node has sent each peer, the peers' progress notices, and the two rules built on them
//! (the rules themselves are listed in [`super::push`]'s module documentation).
//!
//! Flow: a chunk received is counted ([`Feedback::received`]) and answered with a progress
//! notice ([`Feedback::notice`]); a chunk sent is timed ([`Feedback::sent`]); a notice received
//! is kept ([`Feedback::record`]) and may make the sender owe the peer its share again
//! ([`Feedback::share_missing`]); before each send, [`Feedback::holds_back`] tells whether the
//! peer already has its share of what it misses in flight.

use super::{BlockKey, Frame};
use libp2p::PeerId;
use std::{
    collections::HashMap,
    time::{Duration, Instant},
};

/// A chunk sent this long ago no longer counts in flight (it arrived and its notice was lost,
/// or it was lost). Long enough for a receiver that verifies late under CPU load.
pub(crate) const IN_FLIGHT: Duration = Duration::from_secs(3);

/// A peer's last progress notice.
#[derive(Debug, Clone, Copy)]
struct Progress {
    /// Its rank.
    rank: usize,
    /// Chunks of the block it had received from this node.
    received: usize,
    /// Peers sending it the block (at least 1).
    senders: usize,
}

/// One block's feedback state.
#[derive(Debug, Default)]
pub(crate) struct Feedback {
    /// Chunks of the block received from each peer, whatever their use.
    received_from: HashMap<PeerId, usize>,
    /// When each chunk sent to a peer left, in order.
    sent_at: HashMap<PeerId, Vec<Instant>>,
    /// Each peer's last progress notice.
    progress: HashMap<PeerId, Progress>,
}

impl Feedback {
    /// Counts a chunk received from `peer`.
    pub(crate) fn received(&mut self, peer: PeerId) {
        *self.received_from.entry(peer).or_default() += 1;
    }

    /// The progress notice for `peer` at `rank` of `needed`: `None` once decoded.
    pub(crate) fn notice(
        &self,
        key: BlockKey,
        peer: PeerId,
        rank: usize,
        needed: usize,
    ) -> Option<Vec<u8>> {
        let to_u16 = |v: usize| u16::try_from(v).unwrap_or(u16::MAX);
        (rank < needed).then(|| {
            Frame::Progress {
                key,
                rank: to_u16(rank),
                received: to_u16(self.received_from.get(&peer).copied().unwrap_or(0)),
                senders: to_u16(self.received_from.len()),
            }
            .encode()
        })
    }

    /// Times a chunk sent to `peer`; whether it was the first.
    pub(crate) fn sent(&mut self, peer: PeerId) -> bool {
        let sent = self.sent_at.entry(peer).or_default();
        sent.push(Instant::now());
        sent.len() == 1
    }

    /// The peers this node received chunks of the block from.
    pub(crate) fn senders(&self) -> impl Iterator<Item = &PeerId> {
        self.received_from.keys()
    }

    /// Forgets all of `peer` (it disconnected: what was in flight to it is lost).
    pub(crate) fn forget(&mut self, peer: &PeerId) {
        self.received_from.remove(peer);
        self.sent_at.remove(peer);
        self.progress.remove(peer);
    }

    /// Keeps `peer`'s notice.
    pub(crate) fn record(&mut self, peer: PeerId, rank: u16, received: u16, senders: u16) {
        let progress = Progress {
            rank: usize::from(rank),
            received: usize::from(received),
            senders: usize::from(senders).max(1),
        };
        self.progress.insert(peer, progress);
    }

    /// This node's share of what `peer` still misses of a block of `needed`, by its last
    /// notice: the missing chunks divided among its senders, rounded up (0 when it misses none
    /// or sent no notice).
    pub(crate) fn share_missing(&self, peer: &PeerId, needed: usize) -> usize {
        self.progress.get(peer).map_or(0, |p| needed.saturating_sub(p.rank).div_ceil(p.senders))
    }

    /// Chunks sent to `peer` after those its last notice counted, within [`IN_FLIGHT`]
    /// (`None` without a notice).
    pub(crate) fn in_flight(&self, peer: &PeerId) -> Option<usize> {
        let progress = self.progress.get(peer)?;
        Some(self.sent_at.get(peer).map_or(0, |sent| {
            sent.iter().skip(progress.received).filter(|t| t.elapsed() < IN_FLIGHT).count()
        }))
    }

    /// Whether `peer` already has this node's share of what it misses in flight (chunks sent
    /// after those its last notice counted, within [`IN_FLIGHT`]); `false` without a notice.
    pub(crate) fn holds_back(&self, peer: &PeerId, needed: usize) -> bool {
        let Some(in_flight) = self.in_flight(peer) else { return false };
        in_flight >= self.share_missing(peer, needed)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::propagation::decode_frame;

    #[test]
    fn a_sender_keeps_its_share_of_what_the_peer_misses_in_flight() {
        let (peer, other) = (PeerId::random(), PeerId::random());
        let mut f = Feedback::default();
        // No notice yet: nothing held back, no share owed again.
        assert!(!f.holds_back(&peer, 16));
        assert_eq!(f.share_missing(&peer, 16), 0);
        for _ in 0..5 {
            f.sent(peer);
        }
        // The peer holds 10 of 16, has had 3 of our 5 chunks, and has 3 senders: our share of
        // the 6 it misses is 2, and 2 of ours are in flight.
        f.record(peer, 10, 3, 3);
        assert_eq!(f.share_missing(&peer, 16), 2);
        assert!(f.holds_back(&peer, 16));
        // Both arrived: room for two more.
        f.record(peer, 12, 5, 3);
        assert!(!f.holds_back(&peer, 16));
        assert!(!f.sent(peer), "not the first chunk to this peer");
        assert!(f.sent(other), "the first chunk to another peer");
        // A notice saying the peer misses nothing: no share.
        f.record(peer, 16, 6, 3);
        assert_eq!(f.share_missing(&peer, 16), 0);
        assert!(f.holds_back(&peer, 16));
    }

    #[test]
    fn notices_count_what_each_sender_sent_until_decoded() {
        let (a, b) = (PeerId::random(), PeerId::random());
        let mut f = Feedback::default();
        f.received(a);
        f.received(a);
        f.received(b);
        let notice = f.notice([7; 32], a, 9, 16).expect("still decoding");
        assert_eq!(
            decode_frame(&notice).unwrap(),
            Frame::Progress { key: [7; 32], rank: 9, received: 2, senders: 2 }
        );
        assert!(f.notice([7; 32], a, 16, 16).is_none(), "decoded: a decoded notice instead");
    }
}
