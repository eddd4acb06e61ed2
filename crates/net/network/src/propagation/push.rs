//! The push engine of the coded protocols (RLNC and Reed-Solomon): per-block state, the
//! forwarding rule, decoded notices, peer scoring, and one uplink.
//!
//! Rules (those crates/netsim models, so that model and measurement can be compared):
//! - the proposer owes `per_peer` chunks to each of its mesh peers;
//! - a relay, on each of its first `per_peer` useful chunks of a block, owes one more chunk to
//!   every mesh peer but the sender;
//! - a node that decodes a block tells all its peers ("decoded"), who owe it nothing more of
//!   that block; chunks of a decoded block are dropped after reading the frame's header; the
//!   proposer tells each peer the same right after its first chunk to it (so that the peer
//!   knows the block by then), and a notice about a block not seen yet is remembered for when
//!   its first chunk comes;
//! - a node that decodes a block owes `per_peer` more chunks to every mesh peer that has not
//!   said it decoded (a completion wave: its chunks are now made from the whole block, so they
//!   are useful to any peer still short, which the relays' first-chunks rule cannot promise);
//! - what is owed is sent through one uplink, round-robin over (block, peer), and each chunk is
//!   made when the uplink takes it (RLNC recodes from everything held by then; RS picks a shard
//!   the peer has not exchanged with us);
//! - RLNC, with `skip_known`: a chunk owed to a peer waits while this node's rank is at most
//!   the chunks it exchanged with that peer (sent, or useful received): a recoded chunk would
//!   then lie in what the peer holds; it goes out when the rank grows (a progress notice
//!   lowers that count to the rank the peer holds plus the chunks still in flight to it);
//! - feedback: a node answers each chunk of a block it is still decoding with a progress
//!   notice to its sender (its rank, the chunks it has had from that sender, and how many peers
//!   send it the block); a sender keeps no more chunks in flight to a peer than its share of
//!   what the peer misses — the missing chunks divided among the peer's senders, rounded up (a
//!   chunk sent more than [`IN_FLIGHT`](super::feedback::IN_FLIGHT) ago counts as arrived or lost) — and parks the rest
//!   until the next notice or tick; a sender that owes a peer nothing more when a notice says
//!   it still misses chunks owes it its share again (so that a block cannot stall below full
//!   rank when the first pushes fall short, as they do when k·D is small against N);
//! - with a pace, the uplink hands frames to the streams no faster than the link carries them,
//!   so that what is owed is decided at the last moment (a decoded notice that arrives while a
//!   chunk would have sat in a transport buffer cancels it);
//! - RLNC chunks are checked against their commitments off this task: a chunk independent of
//!   what the node holds or has queued is queued, answered with a progress notice counting it
//!   (so that senders stop at what the node will hold), and verified with the block's other
//!   queued chunks in one folded batch on a blocking thread, one batch per block at a time;
//!   it becomes useful (forwarded, recoded from, counted in the rank) once verified; after a
//!   batch that held a forged chunk, every sender hears the rank held now (it stopped on one
//!   that counted the forged chunk);
//! - a frame that is malformed, forged or wrongly signed scores its sender down; at
//!   [`BAN_SCORE`] the peer is disconnected and refused from then on;
//! - a block the node found invalid ([`PushCommand::Report`]) is forwarded no more;
//! - a peer that disconnects loses what was owed and exchanged (chunks on a dead stream are
//!   lost); a peer that (re)connects is told which recent blocks this node decoded and, if in
//!   the mesh, is owed `per_peer` chunks of each recent block this node holds data of
//!   (otherwise a reconnect in the middle of a block would leave it out of that block).
//!
//! Tasks: the engine (this state), the uplink writer (`transport.rs`) (one long-lived stream per peer, opened
//! on first use) and one reader per inbound stream, all on the node's runtime; RLNC batch
//! checks on the runtime's blocking threads, their results back to the engine by channel.

use super::transport::{read_frames, stream_protocol, write_frames, Inbound};
use super::{
    decode_frame,
    feedback::Feedback,
    outcome::Outcome,
    rlnc::{Batch, RlncBlock},
    rs::RsBlock,
    BlockKey, Frame, GossipedBlock, PropagationConfig, PropagationStats, Protocol,
};
use crate::service::Command;
use futures::StreamExt;
use libp2p::PeerId;
use rand::{rngs::StdRng, Rng, SeedableRng};
use std::{
    collections::{HashMap, HashSet, VecDeque},
    sync::Arc,
    time::{Duration, Instant, SystemTime},
};
use tokio::sync::{mpsc, oneshot};

/// Blocks whose state is kept (older ones are forgotten).
const KEEP_BLOCKS: usize = 64;
/// Score at or below which a peer is disconnected and refused.
pub const BAN_SCORE: i32 = -100;
/// Score lost for an invalid frame (malformed, forged, wrongly signed): one is enough.
const INVALID_FRAME: i32 = -100;
/// How often parked sends are looked at again.
const TICK: Duration = Duration::from_millis(200);
/// How recent a block must be for a peer that (re)connects to be offered it (one mainnet
/// slot; an older block is left to sync).
const REJOIN_WINDOW: Duration = Duration::from_secs(12);

/// Errors of the coded schemes.
#[derive(Debug, thiserror::Error)]
pub enum SchemeError {
    /// RLNC refused the message.
    #[error("rlnc: {0}")]
    Rlnc(#[from] gigagas_rlnc::MessageError),
    /// Reed-Solomon refused the message.
    #[error("rs: {0}")]
    Rs(#[from] super::rs::RsError),
}

enum Coder {
    Rlnc(Box<RlncBlock>),
    Rs(Box<RsBlock>),
}

impl Coder {
    fn receive(&mut self, peer: PeerId, body: &[u8]) -> Result<Outcome, SchemeError> {
        Ok(match self {
            Self::Rlnc(b) => b.receive(peer, body)?,
            Self::Rs(b) => b.receive(body)?,
        })
    }

    /// What this node tells its senders: the rank held (RLNC: or queued for verification)
    /// and the rank that decodes.
    fn admitted(&self) -> Option<(usize, usize)> {
        match self {
            Self::Rlnc(b) => b.admitted(),
            Self::Rs(b) => b.progress(),
        }
    }

    /// RLNC: the dimensions held; RS: `None` (its shards are tracked by index instead).
    fn rank(&self) -> Option<usize> {
        match self {
            Self::Rlnc(b) => Some(b.progress().map_or(0, |(rank, _)| rank)),
            Self::Rs(_) => None,
        }
    }

    /// The rank held and the rank that decodes, once the block's shape is known.
    fn progress(&self) -> Option<(usize, usize)> {
        match self {
            Self::Rlnc(b) => b.progress(),
            Self::Rs(b) => b.progress(),
        }
    }

    fn is_decoded(&self) -> bool {
        match self {
            Self::Rlnc(b) => b.is_decoded(),
            Self::Rs(b) => b.is_decoded(),
        }
    }

    fn payload(&self) -> Result<Option<Vec<u8>>, SchemeError> {
        Ok(match self {
            Self::Rlnc(b) => b.payload()?,
            Self::Rs(b) => b.payload(),
        })
    }
}

struct BlockEntry {
    coder: Coder,
    first_seen: SystemTime,
    started: Instant,
    useful: usize,
    owed: HashMap<PeerId, usize>,
    /// Peers that told us they decoded the block.
    done: HashSet<PeerId>,
    /// RS: shard indices exchanged with each peer (sent to or received from).
    exchanged: HashMap<PeerId, HashSet<usize>>,
    /// RLNC: chunks exchanged with each peer (sent to it, or useful from it).
    traded: HashMap<PeerId, usize>,
    /// Peers owed chunks that wait: for this node's rank to grow (RLNC `skip_known`), or for
    /// the peer's next progress notice (feedback).
    parked: HashSet<PeerId>,
    /// Chunks exchanged with each peer and their progress notices.
    feedback: Feedback,
    /// The node found the block invalid: no more forwarding.
    rejected: bool,
    /// This node proposed the block.
    proposed: bool,
}

/// Requests to the push engine.
#[derive(Debug)]
pub(crate) enum PushCommand {
    /// Publish a payload as the proposer.
    Publish(Vec<u8>, oneshot::Sender<Result<BlockKey, crate::NetError>>),
    /// The node's verdict on a delivered block.
    Report(BlockKey, bool),
    /// A peer connected.
    PeerUp(PeerId),
    /// A peer disconnected.
    PeerDown(PeerId),
}

/// A verified RLNC batch: the block, its chunks' senders, the chunks, the indices of the forged.
type Verified = (BlockKey, Vec<PeerId>, Vec<gigagas_rlnc::CodedChunk>, Vec<usize>);

/// Where the push engine's results go.
pub(crate) struct PushOutputs {
    /// Blocks decoded whole.
    pub(crate) delivered: mpsc::UnboundedSender<GossipedBlock>,
    /// Commands to the swarm's task (a forging peer to ban, say).
    pub(crate) swarm: mpsc::UnboundedSender<Command>,
    /// The propagation counters.
    pub(crate) stats: Arc<PropagationStats>,
}

/// Starts the push engine's stream tasks on `tasks` (the writer as the critical task
/// `propagation-writer`, each inbound stream's reader as a plain task); returns the engine's
/// command sender and the engine itself, for the caller to spawn.
pub(crate) fn spawn(
    config: PropagationConfig,
    mut control: libp2p_stream::Control,
    outputs: PushOutputs,
    degree: usize,
    faults: crate::faults::Faults,
    tasks: &gigagas_tasks::TaskExecutor,
) -> (mpsc::UnboundedSender<PushCommand>, impl std::future::Future<Output = ()> + Send + 'static) {
    let PushOutputs { delivered, swarm, stats } = outputs;
    let protocol = stream_protocol(config.protocol);
    let (inbound_tx, inbound_rx) = mpsc::unbounded_channel::<Inbound>();
    match control.accept(protocol.clone()) {
        Ok(mut incoming) => {
            let (inbound_tx, readers) = (inbound_tx.clone(), tasks.clone());
            drop(tasks.spawn_critical("propagation-accept", async move {
                while let Some((peer, stream)) = incoming.next().await {
                    drop(readers.spawn(read_frames(peer, stream, inbound_tx.clone())));
                }
            }));
        }
        Err(e) => tracing::error!(target: "net", error = %e, "cannot accept chunk streams"),
    }
    let (uplink_tx, uplink_rx) = mpsc::channel::<(PeerId, Vec<u8>)>(1);
    let pace = config.pace_bits_per_sec.filter(|b| *b > 0).map(|b| b as f64 / 8.0);
    drop(tasks.spawn_critical(
        "propagation-writer",
        write_frames(control, protocol, uplink_rx, pace, tasks.clone()),
    ));
    let (tx, rx) = mpsc::unbounded_channel();
    let (verified_tx, verified_rx) = mpsc::unbounded_channel();
    let engine = PushEngine {
        config,
        degree,
        faults,
        blocks: HashMap::new(),
        order: VecDeque::new(),
        peers: Vec::new(),
        scores: HashMap::new(),
        banned: HashSet::new(),
        queue: VecDeque::new(),
        urgent: VecDeque::new(),
        early_done: HashMap::new(),
        early_order: VecDeque::new(),
        delivered,
        swarm,
        stats,
        rng: StdRng::from_entropy(),
        verified: verified_tx,
    };
    (tx, engine.run(rx, inbound_rx, verified_rx, uplink_tx))
}

struct PushEngine {
    config: PropagationConfig,
    degree: usize,
    /// Injected faults: arriving frames dropped, chunks sent altered ([`crate::faults::Faults`]).
    faults: crate::faults::Faults,
    blocks: HashMap<BlockKey, BlockEntry>,
    order: VecDeque<BlockKey>,
    /// Connected peers, in this node's random order (the first `degree` are its mesh).
    peers: Vec<PeerId>,
    scores: HashMap<PeerId, i32>,
    banned: HashSet<PeerId>,
    /// What is owed, round-robin.
    queue: VecDeque<(BlockKey, PeerId)>,
    /// Decoded notices, sent before any chunk.
    urgent: VecDeque<(PeerId, Vec<u8>)>,
    /// Decoded notices about blocks not seen yet: the peers that sent them, by block.
    early_done: HashMap<BlockKey, HashSet<PeerId>>,
    /// The order `early_done` was filled in (the oldest forgotten past [`KEEP_BLOCKS`]).
    early_order: VecDeque<BlockKey>,
    delivered: mpsc::UnboundedSender<GossipedBlock>,
    swarm: mpsc::UnboundedSender<Command>,
    stats: Arc<PropagationStats>,
    rng: StdRng,
    /// Where batch checks send their results.
    verified: mpsc::UnboundedSender<Verified>,
}

impl PushEngine {
    async fn run(
        mut self,
        mut commands: mpsc::UnboundedReceiver<PushCommand>,
        mut inbound: mpsc::UnboundedReceiver<Inbound>,
        mut verified: mpsc::UnboundedReceiver<Verified>,
        uplink: mpsc::Sender<(PeerId, Vec<u8>)>,
    ) {
        let mut tick = tokio::time::interval(TICK);
        tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        loop {
            let sending = !self.urgent.is_empty() || !self.queue.is_empty();
            tokio::select! {
                _ = tick.tick() => self.unpark(),
                command = commands.recv() => match command {
                    Some(command) => self.command(command),
                    None => return,
                },
                Some((peer, frame)) = inbound.recv() => self.frame(peer, frame),
                Some((key, peers, chunks, forged)) = verified.recv() => {
                    self.settle(key, peers, chunks, forged)
                }
                permit = uplink.reserve(), if sending => {
                    let Ok(permit) = permit else { return };
                    if let Some((peer, frame)) = self.next_send() {
                        self.stats.sent(self.config.protocol, frame.len() + 4);
                        permit.send((peer, frame));
                    }
                }
            }
        }
    }

    /// Parked sends are looked at again (a chunk in flight may have expired).
    fn unpark(&mut self) {
        for (key, entry) in &mut self.blocks {
            if !entry.rejected {
                for peer in entry.parked.drain() {
                    self.queue.push_back((*key, peer));
                }
            }
        }
    }

    fn mesh(&self) -> &[PeerId] {
        &self.peers[..self.peers.len().min(self.degree)]
    }

    fn command(&mut self, command: PushCommand) {
        match command {
            PushCommand::Publish(payload, tx) => {
                let _ = tx.send(self.publish(&payload));
            }
            PushCommand::Report(key, valid) => {
                if let (false, Some(entry)) = (valid, self.blocks.get_mut(&key)) {
                    entry.rejected = true;
                    entry.owed.clear();
                }
            }
            PushCommand::PeerUp(peer) => {
                if !self.banned.contains(&peer) && !self.peers.contains(&peer) {
                    let at = rand::Rng::gen_range(&mut self.rng, 0..=self.peers.len());
                    self.peers.insert(at, peer);
                    self.rejoined(peer);
                }
            }
            PushCommand::PeerDown(peer) => {
                self.peers.retain(|p| *p != peer);
                for entry in self.blocks.values_mut() {
                    entry.owed.remove(&peer);
                    entry.exchanged.remove(&peer);
                    entry.traded.remove(&peer);
                    entry.parked.remove(&peer);
                    entry.feedback.forget(&peer);
                }
            }
        }
    }

    /// A peer (re)connected while blocks were still propagating: what was in flight to it
    /// before a disconnect is lost, and the forwarding rule owes nothing to a peer that was
    /// not there when the chunks came. For each block of the last [`REJOIN_WINDOW`] that this
    /// node holds data of, it is told at once if this node decoded it, and a mesh peer that
    /// has not said it decoded is owed `per_peer` chunks (its progress notices then ask for
    /// the rest).
    fn rejoined(&mut self, peer: PeerId) {
        let in_mesh = self.mesh().contains(&peer);
        let per_peer = self.config.per_peer;
        for key in &self.order {
            let Some(entry) = self.blocks.get_mut(key) else { continue };
            if entry.rejected || entry.started.elapsed() > REJOIN_WINDOW {
                continue;
            }
            let decoded = entry.coder.is_decoded();
            if decoded {
                self.urgent.push_back((peer, Frame::Decoded { key: *key }.encode()));
            }
            let holds = entry.proposed || decoded || entry.useful > 0;
            if in_mesh && holds && !entry.done.contains(&peer) {
                entry.owed.insert(peer, per_peer);
                self.queue.push_back((*key, peer));
            }
        }
    }

    fn publish(&mut self, payload: &[u8]) -> Result<BlockKey, crate::NetError> {
        let signer = self.config.signer.clone().ok_or(crate::NetError::NoSigner)?;
        let (key, coder) = match self.config.protocol {
            Protocol::Rs => RsBlock::propose(payload, self.config.chunks, &signer)
                .map(|(k, b)| (k, Coder::Rs(Box::new(b))))
                .map_err(|e| crate::NetError::Encode(e.into()))?,
            _ => RlncBlock::propose(payload, self.config.chunks, &signer, &mut self.rng)
                .map(|(k, b)| (k, Coder::Rlnc(Box::new(b))))
                .map_err(|e| crate::NetError::Encode(e.into()))?,
        };
        let mesh = self.mesh().to_vec();
        tracing::debug!(target: "net::push", key = %alloy_primitives::B256::from(key), peers = mesh.len(), "publish");
        let entry = Self::insert(&mut self.blocks, &mut self.order, key, coder);
        entry.proposed = true;
        for peer in mesh {
            entry.owed.insert(peer, self.config.per_peer);
            self.queue.push_back((key, peer));
        }
        self.stats.published(self.config.protocol);
        Ok(key)
    }

    fn insert<'a>(
        blocks: &'a mut HashMap<BlockKey, BlockEntry>,
        order: &mut VecDeque<BlockKey>,
        key: BlockKey,
        coder: Coder,
    ) -> &'a mut BlockEntry {
        if !blocks.contains_key(&key) {
            order.push_back(key);
            while order.len() > KEEP_BLOCKS {
                if let Some(old) = order.pop_front() {
                    blocks.remove(&old);
                }
            }
        }
        blocks.entry(key).or_insert_with(|| BlockEntry {
            coder,
            first_seen: SystemTime::now(),
            started: Instant::now(),
            useful: 0,
            owed: HashMap::new(),
            done: HashSet::new(),
            exchanged: HashMap::new(),
            traded: HashMap::new(),
            parked: HashSet::new(),
            feedback: Feedback::default(),
            rejected: false,
            proposed: false,
        })
    }

    fn penalize(&mut self, peer: PeerId, reason: &str) {
        let score = self.scores.entry(peer).or_default();
        *score += INVALID_FRAME;
        tracing::warn!(target: "net", %peer, score = *score, reason, "invalid frame");
        if *score <= BAN_SCORE && self.banned.insert(peer) {
            tracing::warn!(target: "net", %peer, "peer banned");
            self.peers.retain(|p| *p != peer);
            let _ = self.swarm.send(Command::Ban(peer));
        }
    }

    fn frame(&mut self, peer: PeerId, frame: Result<Vec<u8>, usize>) {
        let protocol = self.config.protocol;
        if self.banned.contains(&peer) {
            return;
        }
        let bytes = match frame {
            Ok(bytes) => bytes,
            Err(len) => {
                self.stats.chunk(protocol, "invalid");
                return self.penalize(peer, &format!("frame of {len} bytes"));
            }
        };
        self.stats.received(protocol, bytes.len() + 4);
        if self.faults.lose(&mut self.rng) {
            return self.stats.chunk(protocol, "lost");
        }
        let (key, body) = match decode_frame(&bytes) {
            Ok(Frame::Decoded { key }) => {
                if let Some(entry) = self.blocks.get_mut(&key) {
                    entry.done.insert(peer);
                    entry.owed.remove(&peer);
                } else {
                    if !self.early_done.contains_key(&key) {
                        self.early_order.push_back(key);
                        while self.early_order.len() > KEEP_BLOCKS {
                            if let Some(old) = self.early_order.pop_front() {
                                self.early_done.remove(&old);
                            }
                        }
                    }
                    self.early_done.entry(key).or_default().insert(peer);
                }
                return;
            }
            Ok(Frame::Progress { key, rank, received, senders }) => {
                if let Some(entry) = self.blocks.get_mut(&key) {
                    entry.feedback.record(peer, rank, received, senders);
                    // What this node shares with the peer is at most what the peer holds
                    // plus what is still on its way: chunks lost on a dead stream, or
                    // refused there as dependent on a forged chunk it later dropped, no
                    // longer count (else `skip_known` would park this peer for good).
                    if let (Some(traded), Some(in_flight)) =
                        (entry.traded.get_mut(&peer), entry.feedback.in_flight(&peer))
                    {
                        *traded = (*traded).min(usize::from(rank) + in_flight);
                    }
                    let owed = entry.owed.get(&peer).copied().unwrap_or(0);
                    let share = entry
                        .coder
                        .progress()
                        .map_or(0, |(_, needed)| entry.feedback.share_missing(&peer, needed));
                    let owe_again =
                        owed == 0 && share > 0 && !entry.rejected && !entry.done.contains(&peer);
                    if owe_again {
                        entry.owed.insert(peer, share);
                    }
                    if entry.parked.remove(&peer) || owe_again {
                        self.queue.push_back((key, peer));
                    }
                }
                return;
            }
            Ok(Frame::Chunk { key, body }) => (key, body),
            Err(e) => {
                self.stats.chunk(protocol, "invalid");
                return self.penalize(peer, &e.to_string());
            }
        };
        if let Some(entry) = self.blocks.get(&key) {
            if entry.coder.is_decoded() || entry.rejected {
                self.stats.chunk(protocol, "late");
                return;
            }
        }
        let Some(proposer) = self.config.proposer else {
            // No proposer key: nothing can be checked, nothing is accepted.
            return;
        };
        let fresh = !self.blocks.contains_key(&key);
        let coder = match protocol {
            Protocol::Rs => Coder::Rs(Box::new(RsBlock::receive_as(key, proposer))),
            _ => Coder::Rlnc(Box::new(RlncBlock::receive_as(key, proposer))),
        };
        let entry = Self::insert(&mut self.blocks, &mut self.order, key, coder);
        if fresh {
            if let Some(done) = self.early_done.remove(&key) {
                entry.done.extend(done);
            }
        }
        if let (Coder::Rs(_), Some(index)) = (&entry.coder, RsBlock::index_of(&body)) {
            entry.exchanged.entry(peer).or_default().insert(index);
        }
        let outcome = entry.coder.receive(peer, &body);
        if outcome.is_ok() {
            entry.feedback.received(peer);
            let notice = entry
                .coder
                .admitted()
                .filter(|_| self.config.feedback)
                .and_then(|(rank, needed)| entry.feedback.notice(key, peer, rank, needed));
            if let Some(notice) = notice {
                self.urgent.push_back((peer, notice));
            }
        }
        match outcome {
            Ok(Outcome::Useless) => self.stats.chunk(protocol, "useless"),
            Ok(Outcome::Queued) => self.check(key),
            Ok(outcome) => self.useful(key, peer, outcome == Outcome::Decoded),
            Err(e) => {
                self.stats.chunk(protocol, "invalid");
                if fresh {
                    self.blocks.remove(&key);
                    self.order.retain(|k| *k != key);
                }
                self.penalize(peer, &e.to_string());
            }
        }
    }

    /// A chunk from `peer` brought new information (and completed the block when `decoded`):
    /// parked sends go again, and a relay owes its mesh one more chunk for each of its first
    /// `per_peer` useful chunks.
    fn useful(&mut self, key: BlockKey, peer: PeerId, decoded: bool) {
        let Some(entry) = self.blocks.get_mut(&key) else { return };
        self.stats.chunk(self.config.protocol, "useful");
        entry.useful += 1;
        *entry.traded.entry(peer).or_default() += 1;
        for p in entry.parked.drain() {
            self.queue.push_back((key, p));
        }
        if entry.useful <= self.config.per_peer && !entry.rejected {
            let mesh: Vec<PeerId> = self.peers[..self.peers.len().min(self.degree)]
                .iter()
                .copied()
                .filter(|p| *p != peer && !entry.done.contains(p))
                .collect();
            for p in mesh {
                *entry.owed.entry(p).or_default() += 1;
                self.queue.push_back((key, p));
            }
        }
        if decoded {
            self.decoded(key);
        }
    }

    /// Starts the commitment check of block `key`'s queued RLNC chunks on a blocking thread,
    /// unless one is running for that block.
    fn check(&mut self, key: BlockKey) {
        let Some(entry) = self.blocks.get_mut(&key) else { return };
        let Coder::Rlnc(block) = &mut entry.coder else { return };
        let Some(Batch { verifier, chunks, peers }) = block.take_batch() else { return };
        let (tx, seed) = (self.verified.clone(), self.rng.gen::<[u8; 32]>());
        tokio::task::spawn_blocking(move || {
            let forged = verifier.verify_batch(&chunks, &mut StdRng::from_seed(seed));
            let _ = tx.send((key, peers, chunks, forged));
        });
    }

    /// A batch check of block `key` finished: verified chunks count, forged ones score their
    /// senders down, and the chunks queued meanwhile are checked next.
    fn settle(
        &mut self,
        key: BlockKey,
        peers: Vec<PeerId>,
        chunks: Vec<gigagas_rlnc::CodedChunk>,
        forged: Vec<usize>,
    ) {
        let protocol = self.config.protocol;
        let Some(entry) = self.blocks.get_mut(&key) else { return };
        let Coder::Rlnc(block) = &mut entry.coder else { return };
        self.stats.batch(chunks.len());
        let settled = block.settle(peers, chunks, &forged);
        let decoded = block.is_decoded();
        let last = settled.useful.len();
        for (i, peer) in settled.useful.into_iter().enumerate() {
            self.useful(key, peer, decoded && i + 1 == last);
        }
        for _ in settled.useless {
            self.stats.chunk(protocol, "useless");
        }
        let forged_any = !settled.forged.is_empty();
        for peer in settled.forged {
            self.stats.chunk(protocol, "invalid");
            self.penalize(peer, "forged chunk: data is not the claimed combination");
        }
        if forged_any && self.config.feedback {
            self.renotice_senders(key);
        }
        self.check(key);
    }

    /// The forged chunks of block `key` were counted in the rank told to its senders, who may
    /// have stopped on it: each (not banned) hears the rank held or queued now.
    fn renotice_senders(&mut self, key: BlockKey) {
        let Some(entry) = self.blocks.get(&key) else { return };
        let Some((rank, needed)) = entry.coder.admitted() else { return };
        for peer in entry.feedback.senders().filter(|p| !self.banned.contains(p)) {
            if let Some(notice) = entry.feedback.notice(key, *peer, rank, needed) {
                self.urgent.push_back((*peer, notice));
            }
        }
    }

    fn decoded(&mut self, key: BlockKey) {
        let protocol = self.config.protocol;
        let Some(entry) = self.blocks.get_mut(&key) else { return };
        let seconds = entry.started.elapsed().as_secs_f64();
        match entry.coder.payload() {
            Ok(Some(payload)) => {
                self.stats.decoded(protocol, seconds);
                let _ = self.delivered.send(GossipedBlock {
                    key,
                    payload,
                    protocol,
                    first_seen: entry.first_seen,
                    decoded: SystemTime::now(),
                });
                let notice = Frame::Decoded { key }.encode();
                for peer in &self.peers {
                    self.urgent.push_back((*peer, notice.clone()));
                }
                let wave = self.config.wave();
                let mesh = &self.peers[..self.peers.len().min(self.degree)];
                for peer in mesh.iter().filter(|p| wave > 0 && !entry.done.contains(p)) {
                    *entry.owed.entry(*peer).or_default() += wave;
                    self.queue.push_back((key, *peer));
                }
            }
            Ok(None) => {}
            Err(e) => {
                // Full rank, but the data is not a packed payload: the proposer signed garbage.
                tracing::warn!(target: "net", error = %e, "decoded block is malformed");
                entry.rejected = true;
                entry.owed.clear();
            }
        }
    }

    /// The next frame for the uplink, made now.
    fn next_send(&mut self) -> Option<(PeerId, Vec<u8>)> {
        if let Some(urgent) = self.urgent.pop_front() {
            return Some(urgent);
        }
        while let Some((key, peer)) = self.queue.pop_front() {
            let Some(entry) = self.blocks.get_mut(&key) else { continue };
            let Some(owed) = entry.owed.get_mut(&peer) else { continue };
            if *owed == 0 || entry.rejected || entry.done.contains(&peer) {
                continue;
            }
            if let (true, Some(rank)) = (self.config.skip_known, entry.coder.rank()) {
                if rank <= entry.traded.get(&peer).copied().unwrap_or(0) {
                    entry.parked.insert(peer);
                    continue;
                }
            }
            if let Some((_, needed)) = entry.coder.progress() {
                if entry.feedback.holds_back(&peer, needed) {
                    entry.parked.insert(peer);
                    continue;
                }
            }
            *owed -= 1;
            if *owed > 0 {
                self.queue.push_back((key, peer));
            }
            let body = match &mut entry.coder {
                Coder::Rlnc(b) => b.next_body(&mut self.rng),
                Coder::Rs(b) => b.next_body(entry.exchanged.entry(peer).or_default()),
            };
            if let Some(mut body) = body {
                if entry.feedback.sent(peer) && entry.proposed {
                    self.urgent.push_back((peer, Frame::Decoded { key }.encode()));
                }
                if let Coder::Rlnc(_) = entry.coder {
                    *entry.traded.entry(peer).or_default() += 1;
                }
                self.faults.forge(&mut body);
                return Some((peer, Frame::Chunk { key, body }.encode()));
            }
        }
        None
    }
}
