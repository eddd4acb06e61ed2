//! Discrete-event simulator of block propagation over a random mesh: gossipsub (every node
//! forwards the whole block once to each mesh peer, optionally skipping peers that sent
//! IDONTWANT) against RLNC (the block in `N` coded chunks; on each of its first `per_peer` useful
//! chunks a node relays a fresh recoded chunk to every peer, so it sends `per_peer` chunks per
//! peer in all; optionally a node that decoded tells its in-peers, who skip it from then on).
//!
//! Model: `nodes` nodes; node 0 proposes at time 0. Each node has `degree` out-peers drawn as
//! `degree` random permutations (so every node also has exactly `degree` in-peers, and the mesh
//! has no self-links or duplicate links). A message of `s` bytes sent at `t` arrives at
//! `t + s / bandwidth + latency`; with `upload_cap` a node's sends are serialized through one
//! uplink of that rate (queued; an RLNC chunk is recoded when its transmission starts, from
//! everything the node holds by then), otherwise every link has `bandwidth` of its own. A node spends `verify_ms`
//! of CPU on each received message it checks, one at a time, and `decode_ms` once when it decodes
//! (RLNC). RLNC linear algebra is simulated exactly over the prime field 2^61 − 1 (a chunk is
//! useful iff it raises the receiver's rank), so useless (dependent) chunks happen as they
//! would; chunks arriving after a node decoded are counted as unused.

use rand::{rngs::SmallRng, seq::SliceRandom, Rng, SeedableRng};
use serde::Serialize;
use std::{cmp::Reverse, collections::BinaryHeap};

/// Which protocol to simulate.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub enum Protocol {
    /// Whole-block gossip; `idontwant`: a node announces receipt to its peers, who then skip it.
    Gossipsub {
        /// Honour IDONTWANT.
        idontwant: bool,
    },
    /// RLNC with `chunks` chunks; each node sends at most `per_peer` chunks to each peer.
    Rlnc {
        /// N.
        chunks: usize,
        /// Chunks per peer (1 = "one chunk per peer").
        per_peer: usize,
        /// A node that decoded tells its in-peers (like IDONTWANT), who then skip it: no more
        /// chunks are relayed, queued or started towards a node known to have decoded.
        decoded_notice: bool,
    },
}

/// A simulation's parameters.
#[derive(Debug, Clone, Copy, Serialize)]
pub struct Config {
    /// Nodes in the network.
    pub nodes: usize,
    /// Mesh degree D (out-peers and in-peers per node).
    pub degree: usize,
    /// Block size (bytes).
    pub size_bytes: usize,
    /// Per-hop latency (ms).
    pub latency_ms: f64,
    /// Link bandwidth (bytes/s), per link.
    pub bandwidth: f64,
    /// Per-node upload cap (bytes/s): sends serialized through one uplink; `None`: per link.
    pub upload_cap: Option<f64>,
    /// CPU to check one received message (ms).
    pub verify_ms: f64,
    /// CPU to decode once all chunks are in (ms).
    pub decode_ms: f64,
    /// The protocol.
    pub protocol: Protocol,
    /// RNG seed (mesh and coefficients).
    pub seed: u64,
}

/// What a simulation measured.
#[derive(Debug, Clone, Serialize)]
pub struct Report {
    /// The parameters.
    pub config: Config,
    /// Hops (mesh links from the proposer) to the last node that decoded.
    pub hops: u32,
    /// Hops by which 99% of the nodes decoded.
    pub hops_99: u32,
    /// Nodes that decoded the block.
    pub decoded: usize,
    /// Time until 50% of the nodes can decode (ms).
    pub time_to_50_ms: f64,
    /// … 95% (ms).
    pub time_to_95_ms: f64,
    /// … 99% (ms).
    pub time_to_99_ms: f64,
    /// … 100% (ms); infinite when some node never decodes.
    pub time_to_100_ms: f64,
    /// Bytes sent per node, mean.
    pub bytes_per_node_mean: f64,
    /// Bytes sent per node, max.
    pub bytes_per_node_max: u64,
    /// Bytes sent by the proposer.
    pub bytes_proposer: u64,
    /// Messages that raised the receiver's knowledge.
    pub useful: u64,
    /// Messages that carried nothing new (duplicates of the block; dependent chunks).
    pub useless: u64,
    /// Messages that arrived after the receiver had decoded.
    pub unused: u64,
    /// Bytes of useless and unused messages.
    pub wasted_bytes: u64,
    /// When each node that decoded could decode (ms), ascending: the decode-time CDF.
    #[serde(skip)]
    pub decode_times_ms: Vec<f64>,
}

const P: u64 = (1 << 61) - 1;

fn mul(a: u64, b: u64) -> u64 {
    let r = (a as u128) * (b as u128);
    let lo = (r as u64) & P;
    let hi = (r >> 61) as u64;
    let s = lo + hi;
    if s >= P {
        s - P
    } else {
        s
    }
}

fn add(a: u64, b: u64) -> u64 {
    let s = a + b;
    if s >= P {
        s - P
    } else {
        s
    }
}

fn sub(a: u64, b: u64) -> u64 {
    if a >= b {
        a - b
    } else {
        a + P - b
    }
}

fn inv(a: u64) -> u64 {
    // a^(P-2)
    let (mut base, mut e, mut r) = (a, P - 2, 1u64);
    while e > 0 {
        if e & 1 == 1 {
            r = mul(r, base);
        }
        base = mul(base, base);
        e >>= 1;
    }
    r
}

/// A node's knowledge of the chunk space: reduced echelon rows over GF(2^61 − 1).
#[derive(Debug, Clone, Default)]
struct Basis {
    rows: Vec<(usize, Vec<u64>)>,
}

impl Basis {
    /// Adds `v`; whether the rank grew.
    fn add(&mut self, mut v: Vec<u64>) -> bool {
        for (pivot, row) in &self.rows {
            let f = v[*pivot];
            if f != 0 {
                for (x, y) in v.iter_mut().zip(row) {
                    *x = sub(*x, mul(f, *y));
                }
            }
        }
        let Some(pivot) = v.iter().position(|x| *x != 0) else { return false };
        let i = inv(v[pivot]);
        v.iter_mut().for_each(|x| *x = mul(*x, i));
        for (_, row) in &mut self.rows {
            let f = row[pivot];
            if f != 0 {
                for (x, y) in row.iter_mut().zip(&v) {
                    *x = sub(*x, mul(f, *y));
                }
            }
        }
        self.rows.push((pivot, v));
        true
    }

    /// A random combination of the rows.
    fn recode(&self, n: usize, rng: &mut SmallRng) -> Vec<u64> {
        let mut out = vec![0u64; n];
        for (_, row) in &self.rows {
            let c = rng.gen_range(1..P);
            for (x, y) in out.iter_mut().zip(row) {
                *x = add(*x, mul(c, *y));
            }
        }
        out
    }
}

#[derive(Debug)]
enum Payload {
    Block,
    Chunk(Vec<u64>),
    DontWant,
    /// A node's uplink is free: send the next queued block (upload-cap mode).
    UplinkFree,
}

#[derive(Debug)]
struct Event {
    time: f64,
    seq: u64,
    to: usize,
    from: usize,
    hop: u32,
    payload: Payload,
}

impl PartialEq for Event {
    fn eq(&self, o: &Self) -> bool {
        self.seq == o.seq
    }
}
impl Eq for Event {}
impl PartialOrd for Event {
    fn partial_cmp(&self, o: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(o))
    }
}
impl Ord for Event {
    fn cmp(&self, o: &Self) -> std::cmp::Ordering {
        self.time.total_cmp(&o.time).then(self.seq.cmp(&o.seq))
    }
}

struct Sim {
    cfg: Config,
    peers: Vec<Vec<usize>>,
    queue: BinaryHeap<Reverse<Event>>,
    seq: u64,
    uplink_free: Vec<f64>,
    link_free: Vec<Vec<f64>>,
    cpu_free: Vec<f64>,
    sent_bytes: Vec<u64>,
    rng: SmallRng,
}

impl Sim {
    /// Sends `payload` of `bytes` from `from` to its peer number `k` at `now`.
    fn send(&mut self, now: f64, from: usize, k: usize, hop: u32, bytes: usize, payload: Payload) {
        let to = self.peers[from][k];
        let start;
        let tx;
        match self.cfg.upload_cap {
            Some(cap) => {
                start = now.max(self.uplink_free[from]);
                tx = bytes as f64 / cap * 1e3;
                self.uplink_free[from] = start + tx;
            }
            None => {
                start = now.max(self.link_free[from][k]);
                tx = bytes as f64 / self.cfg.bandwidth * 1e3;
                self.link_free[from][k] = start + tx;
            }
        }
        self.sent_bytes[from] += bytes as u64;
        self.seq += 1;
        let event =
            Event { time: start + tx + self.cfg.latency_ms, seq: self.seq, to, from, hop, payload };
        self.queue.push(Reverse(event));
    }

    /// Node `v` tells each of `in_peers` (the nodes that send to it) that it has the block, at
    /// `at`; the notice is tiny and travels one latency.
    fn announce(&mut self, v: usize, at: f64, in_peers: &[usize]) {
        for &to in in_peers {
            self.seq += 1;
            let ev = Event {
                time: at + self.cfg.latency_ms,
                seq: self.seq,
                to,
                from: v,
                hop: 0,
                payload: Payload::DontWant,
            };
            self.queue.push(Reverse(ev));
        }
    }

    /// Wakes node `v`'s uplink at `at` (upload-cap mode) to start its next queued send.
    fn wake_uplink(&mut self, v: usize, at: f64) {
        self.seq += 1;
        let ev =
            Event { time: at, seq: self.seq, to: v, from: v, hop: 0, payload: Payload::UplinkFree };
        self.queue.push(Reverse(ev));
    }

    /// `to` learns from a notice that its out-peer `from` has the block.
    fn mark_done(&self, dont_want: &mut [Vec<bool>], to: usize, from: usize) {
        if let Some(k) = self.peers[to].iter().position(|&p| p == from) {
            dont_want[to][k] = true;
        }
    }

    /// CPU time for one check at node `v`, starting no earlier than `now`; returns when done.
    fn cpu(&mut self, v: usize, now: f64, ms: f64) -> f64 {
        let start = now.max(self.cpu_free[v]);
        self.cpu_free[v] = start + ms;
        start + ms
    }
}

fn mesh(nodes: usize, degree: usize, rng: &mut SmallRng) -> Vec<Vec<usize>> {
    let mut peers: Vec<Vec<usize>> = vec![Vec::with_capacity(degree); nodes];
    for _ in 0..degree {
        let mut perm: Vec<usize> = (0..nodes).collect();
        perm.shuffle(rng);
        // Repair self-links and duplicates by swapping with a random other position.
        for i in 0..nodes {
            let mut tries = 0;
            while (perm[i] == i || peers[i].contains(&perm[i])) && tries < 64 {
                let j = rng.gen_range(0..nodes);
                if perm[j] != i
                    && perm[i] != j
                    && !peers[i].contains(&perm[j])
                    && !peers[j].contains(&perm[i])
                {
                    perm.swap(i, j);
                }
                tries += 1;
            }
        }
        for (i, p) in perm.into_iter().enumerate() {
            if p != i && !peers[i].contains(&p) {
                peers[i].push(p);
            }
        }
    }
    peers
}

/// Runs one simulation.
// Peer indices are needed while `sim` is borrowed mutably by `send`: index loops, not iterators.
#[allow(clippy::needless_range_loop)]
pub fn simulate(cfg: Config) -> Report {
    let mut rng = SmallRng::seed_from_u64(cfg.seed);
    let peers = mesh(cfg.nodes, cfg.degree, &mut rng);
    let n = cfg.nodes;
    let link_free = peers.iter().map(|p| vec![0.0; p.len()]).collect();
    let mut sim = Sim {
        cfg,
        peers,
        queue: BinaryHeap::new(),
        seq: 0,
        uplink_free: vec![0.0; n],
        link_free,
        cpu_free: vec![0.0; n],
        sent_bytes: vec![0; n],
        rng,
    };
    let mut in_peers: Vec<Vec<usize>> = vec![Vec::new(); n];
    for (v, out) in sim.peers.iter().enumerate() {
        for &p in out {
            in_peers[p].push(v);
        }
    }
    let mut decoded_at: Vec<Option<(f64, u32)>> = vec![None; n];
    let (mut useful, mut useless, mut unused, mut wasted) = (0u64, 0u64, 0u64, 0u64);
    match cfg.protocol {
        Protocol::Gossipsub { idontwant } => {
            let mut dont_want: Vec<Vec<bool>> =
                sim.peers.iter().map(|p| vec![false; p.len()]).collect();
            let mut pending: Vec<std::collections::VecDeque<(usize, u32)>> =
                vec![Default::default(); n];
            let mut uplink_scheduled = vec![false; n];
            decoded_at[0] = Some((0.0, 0));
            for k in 0..sim.peers[0].len() {
                sim.send(0.0, 0, k, 1, cfg.size_bytes, Payload::Block);
            }
            while let Some(Reverse(e)) = sim.queue.pop() {
                match e.payload {
                    Payload::DontWant => sim.mark_done(&mut dont_want, e.to, e.from),
                    Payload::Block => {
                        if decoded_at[e.to].is_some() {
                            useless += 1;
                            wasted += cfg.size_bytes as u64;
                            continue;
                        }
                        useful += 1;
                        let done = sim.cpu(e.to, e.time, cfg.verify_ms);
                        decoded_at[e.to] = Some((done, e.hop));
                        if idontwant {
                            sim.announce(e.to, done, &in_peers[e.to]);
                        }
                        for k in 0..sim.peers[e.to].len() {
                            if sim.peers[e.to][k] == e.from || (idontwant && dont_want[e.to][k]) {
                                continue;
                            }
                            if cfg.upload_cap.is_some() {
                                // Through the uplink queue: IDONTWANT is honoured when the
                                // transmission would start.
                                pending[e.to].push_back((k, e.hop + 1));
                            } else {
                                sim.send(done, e.to, k, e.hop + 1, cfg.size_bytes, Payload::Block);
                            }
                        }
                        if cfg.upload_cap.is_some() && !uplink_scheduled[e.to] {
                            uplink_scheduled[e.to] = true;
                            let at = done.max(sim.uplink_free[e.to]);
                            sim.wake_uplink(e.to, at);
                        }
                    }
                    Payload::UplinkFree => {
                        let v = e.to;
                        uplink_scheduled[v] = false;
                        while let Some((k, hop)) = pending[v].pop_front() {
                            if idontwant && dont_want[v][k] {
                                continue;
                            }
                            sim.send(e.time, v, k, hop, cfg.size_bytes, Payload::Block);
                            uplink_scheduled[v] = true;
                            let at = sim.uplink_free[v];
                            sim.wake_uplink(v, at);
                            break;
                        }
                    }
                    Payload::Chunk(_) => {}
                }
            }
        }
        Protocol::Rlnc { chunks, per_peer, decoded_notice } => {
            let chunk_bytes = cfg.size_bytes.div_ceil(chunks) + 64 * chunks + 96 + 7;
            let mut basis: Vec<Basis> = vec![Basis::default(); n];
            let mut hop: Vec<u32> = vec![0; n];
            let mut sent_to: Vec<Vec<usize>> = sim.peers.iter().map(|p| vec![0; p.len()]).collect();
            let mut dont_want: Vec<Vec<bool>> =
                sim.peers.iter().map(|p| vec![false; p.len()]).collect();
            // Upload-cap mode: out-peers waiting for the uplink; the chunk is recoded from
            // everything the node holds when its transmission starts.
            let mut pending: Vec<std::collections::VecDeque<usize>> = vec![Default::default(); n];
            let mut uplink_scheduled = vec![false; n];
            // The proposer holds every source chunk and sends per_peer chunks to each peer.
            for i in 0..chunks {
                let mut e = vec![0u64; chunks];
                e[i] = 1;
                basis[0].add(e);
            }
            decoded_at[0] = Some((0.0, 0));
            for _ in 0..per_peer {
                for k in 0..sim.peers[0].len() {
                    sent_to[0][k] += 1;
                    if cfg.upload_cap.is_some() {
                        pending[0].push_back(k);
                    } else {
                        let v = basis[0].recode(chunks, &mut sim.rng);
                        sim.send(0.0, 0, k, 1, chunk_bytes, Payload::Chunk(v));
                    }
                }
            }
            if cfg.upload_cap.is_some() {
                uplink_scheduled[0] = true;
                sim.wake_uplink(0, 0.0);
            }
            while let Some(Reverse(e)) = sim.queue.pop() {
                let v_node = e.to;
                let v = match e.payload {
                    Payload::Chunk(v) => v,
                    Payload::DontWant => {
                        sim.mark_done(&mut dont_want, e.to, e.from);
                        continue;
                    }
                    Payload::UplinkFree => {
                        uplink_scheduled[v_node] = false;
                        while let Some(k) = pending[v_node].pop_front() {
                            if decoded_notice && dont_want[v_node][k] {
                                continue;
                            }
                            let c = basis[v_node].recode(chunks, &mut sim.rng);
                            let h = hop[v_node] + 1;
                            sim.send(e.time, v_node, k, h, chunk_bytes, Payload::Chunk(c));
                            uplink_scheduled[v_node] = true;
                            let at = sim.uplink_free[v_node];
                            sim.wake_uplink(v_node, at);
                            break;
                        }
                        continue;
                    }
                    Payload::Block => continue,
                };
                if decoded_at[v_node].is_some() {
                    unused += 1;
                    wasted += chunk_bytes as u64;
                    continue;
                }
                // Independence first (no curve work for a dependent chunk), then the check.
                if !basis[v_node].add(v) {
                    useless += 1;
                    wasted += chunk_bytes as u64;
                    continue;
                }
                useful += 1;
                let mut done = sim.cpu(v_node, e.time, cfg.verify_ms);
                hop[v_node] = hop[v_node].max(e.hop);
                if basis[v_node].rows.len() == chunks {
                    done = sim.cpu(v_node, done, cfg.decode_ms);
                    decoded_at[v_node] = Some((done, hop[v_node]));
                    if decoded_notice {
                        sim.announce(v_node, done, &in_peers[v_node]);
                    }
                }
                // Relay: on each of its first `per_peer` useful chunks, a node sends a fresh
                // combination of what it holds to every peer (but the sender and, with
                // notices, peers known to have decoded).
                if basis[v_node].rows.len() <= per_peer {
                    for k in 0..sim.peers[v_node].len() {
                        if sim.peers[v_node][k] == e.from
                            || sent_to[v_node][k] >= per_peer
                            || (decoded_notice && dont_want[v_node][k])
                        {
                            continue;
                        }
                        sent_to[v_node][k] += 1;
                        if cfg.upload_cap.is_some() {
                            pending[v_node].push_back(k);
                        } else {
                            let c = basis[v_node].recode(chunks, &mut sim.rng);
                            let h = hop[v_node] + 1;
                            sim.send(done, v_node, k, h, chunk_bytes, Payload::Chunk(c));
                        }
                    }
                    if cfg.upload_cap.is_some()
                        && !uplink_scheduled[v_node]
                        && !pending[v_node].is_empty()
                    {
                        uplink_scheduled[v_node] = true;
                        let at = done.max(sim.uplink_free[v_node]);
                        sim.wake_uplink(v_node, at);
                    }
                }
            }
        }
    }
    let mut times: Vec<f64> = decoded_at.iter().flatten().map(|(t, _)| *t).collect();
    times.sort_by(f64::total_cmp);
    let mut hops: Vec<u32> = decoded_at.iter().flatten().map(|(_, h)| *h).collect();
    hops.sort_unstable();
    let decoded = times.len();
    let at = |q: f64| -> f64 {
        let need = ((n as f64) * q).ceil() as usize;
        if need == 0 {
            0.0
        } else if need <= decoded {
            times[need - 1]
        } else {
            f64::INFINITY
        }
    };
    let hops_at = |q: f64| -> u32 {
        let need = ((n as f64) * q).ceil() as usize;
        hops.get(need.saturating_sub(1).min(hops.len().saturating_sub(1))).copied().unwrap_or(0)
    };
    Report {
        config: cfg,
        hops: hops.last().copied().unwrap_or(0),
        hops_99: hops_at(0.99),
        decoded,
        time_to_50_ms: at(0.5),
        time_to_95_ms: at(0.95),
        time_to_99_ms: at(0.99),
        time_to_100_ms: at(1.0),
        bytes_per_node_mean: sim.sent_bytes.iter().sum::<u64>() as f64 / n as f64,
        bytes_per_node_max: sim.sent_bytes.iter().copied().max().unwrap_or(0),
        bytes_proposer: sim.sent_bytes[0],
        useful,
        useless,
        unused,
        wasted_bytes: wasted,
        decode_times_ms: times,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cfg(protocol: Protocol, degree: usize) -> Config {
        Config {
            nodes: 2_000,
            degree,
            size_bytes: 121_600,
            latency_ms: 70.0,
            bandwidth: 20e6,
            upload_cap: None,
            verify_ms: 0.0,
            decode_ms: 0.0,
            protocol,
            seed: 1,
        }
    }

    #[test]
    fn every_node_gets_the_block_and_rlnc_sends_less() {
        let g = simulate(cfg(Protocol::Gossipsub { idontwant: false }, 8));
        let r =
            simulate(cfg(Protocol::Rlnc { chunks: 10, per_peer: 1, decoded_notice: false }, 40));
        assert_eq!(g.decoded, 2_000);
        assert_eq!(r.decoded, 2_000);
        assert!(g.time_to_100_ms.is_finite() && r.time_to_100_ms.is_finite());
        // Gossipsub sends the whole block to each of D peers but the sender: ~ (D-1)·B a node.
        assert!(g.bytes_per_node_mean > 6.0 * 121_600.0);
        assert!(r.bytes_per_node_mean < g.bytes_per_node_mean);
        assert!(r.hops < g.hops, "rlnc {} hops vs gossipsub {}", r.hops, g.hops);
    }

    /// IDONTWANT (announced to the in-peers, honoured when a transmission would start) cuts
    /// duplicates without slowing delivery, per link and through a capped uplink.
    #[test]
    fn idontwant_cuts_duplicates() {
        for cap in [None, Some(25e6 / 8.0)] {
            let plain = simulate(Config {
                upload_cap: cap,
                ..cfg(Protocol::Gossipsub { idontwant: false }, 8)
            });
            let idw = simulate(Config {
                upload_cap: cap,
                ..cfg(Protocol::Gossipsub { idontwant: true }, 8)
            });
            assert_eq!(idw.decoded, 2_000);
            assert!(idw.bytes_per_node_mean < 0.9 * plain.bytes_per_node_mean, "cap {cap:?}");
            assert!(idw.useless < plain.useless);
            assert!(idw.time_to_100_ms <= plain.time_to_100_ms);
        }
    }

    /// With one chunk per peer a node relays multiples of its first chunk, so a narrow mesh
    /// starves; several chunks per peer make it decode. Decoded notices through a capped
    /// uplink cut the bytes without delaying anyone.
    #[test]
    fn several_chunks_per_peer_and_decoded_notices() {
        let rlnc =
            |per_peer, decoded_notice| Protocol::Rlnc { chunks: 10, per_peer, decoded_notice };
        let one = simulate(cfg(rlnc(1, false), 8));
        let four = simulate(cfg(rlnc(4, false), 8));
        assert!(one.decoded < 100, "{} decoded with one chunk per peer", one.decoded);
        assert!(four.decoded >= 1_980, "{} decoded with four chunks per peer", four.decoded);
        let capped = |p| Config { upload_cap: Some(25e6 / 8.0), ..cfg(p, 40) };
        let plain = simulate(capped(rlnc(2, false)));
        let notice = simulate(capped(rlnc(2, true)));
        assert_eq!((plain.decoded, notice.decoded), (2_000, 2_000));
        assert!(notice.bytes_per_node_mean < 0.8 * plain.bytes_per_node_mean);
        assert!(notice.time_to_100_ms <= plain.time_to_100_ms);
    }

    #[test]
    fn field_arithmetic_is_exact() {
        let mut rng = SmallRng::seed_from_u64(3);
        for _ in 0..1000 {
            let a = rng.gen_range(1..P);
            assert_eq!(mul(a, inv(a)), 1);
            let b = rng.gen_range(0..P);
            assert_eq!(add(sub(a, b), b), a);
        }
    }
}
