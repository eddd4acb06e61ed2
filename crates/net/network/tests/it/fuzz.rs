//! Fuzzing: the decoders of everything a peer sends, fed random and mutated input: none may panic, and a
//! mutated valid message is either refused with a typed error or decodes to something.
//!
//! `FUZZ_ITERATIONS` sets the inputs per decoder (default 20,000 in the test suite;
//! `make fuzz-net` runs 1,000,000 of each).

use gigagas_net::{
    propagation::{decode_frame, gossipsub, rs, BlockSigner, Frame},
    sync::{SyncRequest, SyncResponse},
};
use rand::{rngs::StdRng, Rng, RngCore, SeedableRng};

fn iterations() -> usize {
    std::env::var("FUZZ_ITERATIONS").ok().and_then(|v| v.parse().ok()).unwrap_or(20_000)
}

/// Random bytes, or a valid sample with a few bytes changed, cut or extended.
fn input(rng: &mut StdRng, samples: &[Vec<u8>]) -> Vec<u8> {
    if samples.is_empty() || rng.gen_bool(0.3) {
        let mut v = vec![0u8; rng.gen_range(0..512)];
        rng.fill_bytes(&mut v);
        return v;
    }
    let mut v = samples[rng.gen_range(0..samples.len())].clone();
    match rng.gen_range(0..4) {
        0 if !v.is_empty() => {
            for _ in 0..rng.gen_range(1..8) {
                let i = rng.gen_range(0..v.len());
                v[i] ^= 1 << rng.gen_range(0..8);
            }
        }
        1 => v.truncate(rng.gen_range(0..=v.len())),
        2 => v.extend((0..rng.gen_range(1..64)).map(|_| rng.gen::<u8>())),
        _ if !v.is_empty() => {
            let i = rng.gen_range(0..v.len());
            v[i] = rng.gen();
        }
        _ => {}
    }
    v
}

#[test]
fn peer_input_decoders_never_panic() {
    let mut rng = StdRng::seed_from_u64(20);
    let signer = BlockSigner::from_seed(&[5; 32]).unwrap();
    let n = iterations();

    let frames = vec![
        Frame::Chunk { key: [1; 32], body: vec![1, 2, 3] }.encode(),
        Frame::Decoded { key: [2; 32] }.encode(),
    ];
    for _ in 0..n {
        let _ = decode_frame(&input(&mut rng, &frames));
    }

    let mut payload = vec![0u8; 3000];
    rng.fill_bytes(&mut payload);
    let rs_samples = rs::sample_messages(&payload, 4, &signer);
    for _ in 0..n {
        let _ = rs::check_message(&input(&mut rng, &rs_samples));
    }

    let rlnc_samples = gigagas_net::propagation::rlnc::sample_messages(&payload[..600], 4, &signer);
    for _ in 0..n {
        let _ = gigagas_rlnc::Message::decode(&input(&mut rng, &rlnc_samples));
    }

    let gossip_samples = vec![gossipsub::sample_message(&payload, &signer)];
    for _ in 0..n / 10 {
        let _ = gossipsub::decode(&input(&mut rng, &gossip_samples), &signer.public());
    }

    let sync_samples = vec![
        SyncRequest::GetBlockBodies(vec![Default::default()]).encode(),
        SyncRequest::GetBlockHeaders { start: 5u64.into(), limit: 3, skip: 0, reverse: false }
            .encode(),
        SyncResponse::BlockHeaders(vec![Default::default()]).encode(),
        SyncResponse::BlockAccessLists(vec![None]).encode(),
        SyncRequest::Status.encode(),
        SyncResponse::Status(Some(gigagas_net::sync::ChainStatus {
            version: 69,
            network_id: 1,
            genesis: Default::default(),
            earliest: 0,
            latest: 9,
            latest_hash: Default::default(),
        }))
        .encode(),
    ];
    for _ in 0..n {
        let bytes = input(&mut rng, &sync_samples);
        let _ = SyncRequest::decode(&bytes);
        let _ = SyncResponse::decode(&bytes);
    }
}
