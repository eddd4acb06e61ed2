//! Peer scores: what each peer's answers were worth, so that the downloader asks the best
//! first and stops asking the bad ones.

use std::{collections::HashMap, hash::Hash, sync::Mutex};

/// Score a peer gains for a range it delivered.
pub const SUCCESS_REWARD: i64 = 1;
/// Score a peer loses for a request that failed (transport error, timeout, nothing to give).
pub const FAILED_REQUEST_PENALTY: i64 = 4;
/// Score a peer loses for an answer that cannot be right (it is also reported to the
/// transport).
pub const BAD_ANSWER_PENALTY: i64 = 100;

/// Scores by peer, starting at 0.
#[derive(Debug)]
pub struct PeerScores<P> {
    scores: Mutex<HashMap<P, i64>>,
}

impl<P> Default for PeerScores<P> {
    fn default() -> Self {
        Self { scores: Mutex::new(HashMap::new()) }
    }
}

impl<P: Copy + Eq + Hash + Ord> PeerScores<P> {
    /// `peer`'s score.
    pub fn score(&self, peer: &P) -> i64 {
        self.scores.lock().unwrap_or_else(|p| p.into_inner()).get(peer).copied().unwrap_or(0)
    }

    /// Adds `delta` to `peer`'s score.
    pub fn adjust(&self, peer: P, delta: i64) {
        *self.scores.lock().unwrap_or_else(|p| p.into_inner()).entry(peer).or_insert(0) += delta;
    }

    /// `peers` best first (ties in a rotation by `turn`, so that equal peers share the load),
    /// without those at or below `floor`.
    pub fn ranked(&self, peers: &[P], turn: usize, floor: i64) -> Vec<P> {
        let mut peers: Vec<P> = peers.to_vec();
        peers.sort();
        if !peers.is_empty() {
            let n = turn % peers.len();
            peers.rotate_left(n);
        }
        let scores = self.scores.lock().unwrap_or_else(|p| p.into_inner());
        let score = |p: &P| scores.get(p).copied().unwrap_or(0);
        peers.retain(|p| score(p) > floor);
        peers.sort_by_key(|p| std::cmp::Reverse(score(p)));
        peers
    }
}
