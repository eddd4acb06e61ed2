//! Fuzzing the decoders of everything a devp2p peer sends: the ECIES handshake packets (auth,
//! ack), RLPx frames, `Hello`, `Disconnect`, every eth/69–72 message and every snap/1–2
//! message, each fed random input
//! and valid samples with bits flipped, bytes changed, cut or extended. None may panic; a
//! frame with a changed byte must fail its MAC.
//!
//! `FUZZ_ITERATIONS` sets the inputs per decoder (default 20,000 in the test suite;
//! `make fuzz-net` runs 1,000,000 of each).

use alloy_primitives::B256;
use alloy_rlp::{Decodable, Encodable};
use bytes::{Bytes, BytesMut};
use gigagas_eth_wire::{DisconnectReason, HelloMessage};
use gigagas_eth_wire_types::{
    BlockAccessLists, BlockRangeUpdate, Cells, CustodyBitmap, EthMessage, EthVersion, GetCells,
    HeadersRequest, NetworkTransactions, NewPooledTransactionHashes, RequestPair,
};
use gigagas_net_ecies::{peer_id, random_secret_key, FrameCodec, Handshake};
use rand::{rngs::StdRng, Rng, RngCore, SeedableRng};
use tokio_util::codec::{Decoder, Encoder};

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
fn fuzz_devp2p_decoders_never_panic() {
    let mut rng = StdRng::seed_from_u64(71);
    let n = iterations();

    // The handshake: auth packets to a recipient, ack packets to an initiator.
    let (a, b) = (random_secret_key(), random_secret_key());
    let b_id = peer_id(&b.public_key());
    let mut initiator = Handshake::initiator(a.clone(), &b_id).unwrap();
    let auth = initiator.auth();
    let mut recipient = Handshake::recipient(b.clone());
    recipient.read_auth(&auth).unwrap();
    let ack = recipient.ack();
    let mut done = Handshake::initiator(a.clone(), &b_id).unwrap();
    let _ = done.auth();
    // The handshake is too slow (ECDH) for a million rounds each: a tenth of them.
    for _ in 0..n / 10 {
        let _ = Handshake::recipient(b.clone())
            .read_auth(&input(&mut rng, std::slice::from_ref(&auth)));
        let mut fresh = Handshake::initiator(a.clone(), &b_id).unwrap();
        let _ = fresh.auth();
        let _ = fresh.read_ack(&input(&mut rng, std::slice::from_ref(&ack)));
    }

    // Frames: sealed by the initiator's codec, opened by a fresh recipient codec each time.
    initiator.read_ack(&ack).unwrap();
    let (sending, receiving) = (initiator.secrets().unwrap(), recipient.secrets().unwrap());
    let mut sealed = Vec::new();
    for data in [vec![0x80u8], vec![7u8; 100], vec![1u8; 3000]] {
        let mut out = BytesMut::new();
        FrameCodec::from_secrets(sending.clone()).encode(Bytes::from(data), &mut out).unwrap();
        sealed.push(out.to_vec());
    }
    let mut changed_passed = 0;
    for _ in 0..n {
        let bytes = input(&mut rng, &sealed);
        let mut codec = FrameCodec::from_secrets(receiving.clone());
        let mut buf = BytesMut::from(&bytes[..]);
        if let Ok(Some(_)) = codec.decode(&mut buf) {
            if !sealed.iter().any(|s| bytes.starts_with(s)) {
                changed_passed += 1;
            }
        }
    }
    assert_eq!(changed_passed, 0, "a changed frame passed its MAC");

    // The p2p messages.
    let hello = HelloMessage {
        protocol_version: 5,
        client_version: "fuzz".into(),
        capabilities: gigagas_eth_wire::eth_protocols().into_iter().map(|p| p.cap).collect(),
        port: 30303,
        id: b_id,
    };
    let mut hello_rlp = Vec::new();
    hello.encode(&mut hello_rlp);
    let mut disconnect = Vec::new();
    DisconnectReason::TooManyPeers.encode(&mut disconnect);
    for _ in 0..n {
        let _ = HelloMessage::decode(&mut &input(&mut rng, &[hello_rlp.clone()])[..]);
        let _ = DisconnectReason::decode(&mut &input(&mut rng, &[disconnect.clone()])[..]);
    }

    // Every eth message of every version, from samples of each.
    let hash = B256::repeat_byte(3);
    let samples = [
        EthMessage::GetBlockHeaders(RequestPair {
            request_id: 1,
            message: HeadersRequest { origin: 5u64.into(), amount: 3, skip: 1, reverse: true },
        }),
        EthMessage::BlockHeaders(RequestPair { request_id: 2, message: vec![Default::default()] }),
        EthMessage::GetBlockBodies(RequestPair { request_id: 3, message: vec![hash, hash] }),
        EthMessage::BlockBodies(RequestPair { request_id: 4, message: vec![Default::default()] }),
        EthMessage::NewPooledTransactionHashes(NewPooledTransactionHashes {
            types: vec![2u8, 3].into(),
            sizes: vec![100, 200],
            hashes: vec![hash, hash],
            mask: None,
        }),
        EthMessage::NewPooledTransactionHashes(NewPooledTransactionHashes {
            types: vec![3u8].into(),
            sizes: vec![300],
            hashes: vec![hash],
            mask: Some(CustodyBitmap::ALL),
        }),
        EthMessage::GetCells(GetCells {
            request_id: 13,
            hashes: vec![hash],
            mask: CustodyBitmap::from_columns(0..64),
        }),
        EthMessage::Cells(Cells {
            request_id: 14,
            hashes: vec![hash],
            cells: vec![vec![vec![7u8; 2048].into()]],
            mask: CustodyBitmap::from_columns([3]),
        }),
        EthMessage::GetPooledTransactions(RequestPair { request_id: 5, message: vec![hash] }),
        EthMessage::PooledTransactions(RequestPair {
            request_id: 6,
            message: NetworkTransactions(vec![
                vec![2u8, 0xc1, 0x80].into(),
                vec![0xc1, 0x80].into(),
            ]),
        }),
        EthMessage::Transactions(NetworkTransactions(vec![vec![2u8, 0xc0].into()])),
        EthMessage::GetBlockAccessLists(RequestPair { request_id: 7, message: vec![hash] }),
        EthMessage::BlockAccessLists(RequestPair {
            request_id: 8,
            message: BlockAccessLists(vec![None, Some(Default::default())]),
        }),
        EthMessage::BlockRangeUpdate(BlockRangeUpdate {
            earliest: 0,
            latest: 9,
            latest_hash: hash,
        }),
        EthMessage::GetReceipts {
            request_id: 9,
            first_block_receipt_index: None,
            hashes: vec![hash],
        },
        EthMessage::GetReceipts {
            request_id: 10,
            first_block_receipt_index: Some(2),
            hashes: vec![hash],
        },
        EthMessage::Receipts {
            request_id: 11,
            last_block_incomplete: None,
            receipts: vec![vec![], vec![]],
        },
        EthMessage::Receipts {
            request_id: 12,
            last_block_incomplete: Some(true),
            receipts: vec![vec![]],
        },
    ];
    for version in EthVersion::ALL {
        let encoded: Vec<(u8, Vec<u8>)> = samples
            .iter()
            .filter_map(|m| Some((m.id() as u8, m.encode_payload(version).ok()?)))
            .collect();
        assert!(encoded.len() >= 11, "eth/{}: {} samples", version.number(), encoded.len());
        let payloads: Vec<Vec<u8>> = encoded.iter().map(|(_, p)| p.clone()).collect();
        for _ in 0..n {
            let id = if rng.gen_bool(0.9) {
                encoded[rng.gen_range(0..encoded.len())].0
            } else {
                rng.gen()
            };
            let _ = EthMessage::decode(id, version, &input(&mut rng, &payloads));
        }
        // Each sample the version carries decodes to a message of its kind that encodes to
        // the same bytes (eth/70's receipts requests always carry the first index).
        for sample in &samples {
            if let Ok(payload) = sample.encode_payload(version) {
                let decoded = EthMessage::decode(sample.id() as u8, version, &payload).unwrap();
                assert_eq!(decoded.id(), sample.id());
                assert_eq!(decoded.encode_payload(version).unwrap(), payload);
            }
        }
    }

    // Every snap message of both versions, from samples of each.
    use gigagas_eth_wire_types::snap::*;
    let root = B256::repeat_byte(9);
    let snap_samples = [
        SnapMessage::GetAccountRange(GetAccountRange {
            request_id: 1,
            root,
            origin: B256::ZERO,
            limit: B256::repeat_byte(0xff),
            bytes: 4000,
        }),
        SnapMessage::AccountRange(AccountRange {
            request_id: 1,
            accounts: vec![AccountData {
                hash: root,
                body: vec![0xc4, 0x01, 0x02, 0x80, 0x80].into(),
            }],
            proof: vec![vec![0xc2, 0x80, 0x80].into()],
        }),
        SnapMessage::GetStorageRanges(GetStorageRanges {
            request_id: 2,
            root,
            accounts: vec![root, root],
            origin: vec![1u8; 32].into(),
            limit: Default::default(),
            bytes: 500,
        }),
        SnapMessage::StorageRanges(StorageRanges {
            request_id: 2,
            slots: vec![vec![StorageData { hash: root, body: vec![0x02].into() }]],
            proof: vec![],
        }),
        SnapMessage::GetByteCodes(GetByteCodes { request_id: 3, hashes: vec![root], bytes: 9 }),
        SnapMessage::ByteCodes(ByteCodes { request_id: 3, codes: vec![vec![0x60, 0x00].into()] }),
        SnapMessage::GetTrieNodes(GetTrieNodes {
            request_id: 4,
            root,
            paths: vec![vec![vec![0x00].into()], vec![root.to_vec().into(), vec![0x1b].into()]],
            bytes: 5000,
        }),
        SnapMessage::TrieNodes(TrieNodes { request_id: 4, nodes: vec![vec![0xc0].into()] }),
        SnapMessage::GetBlockAccessLists(GetBlockAccessLists {
            request_id: 5,
            hashes: vec![root],
            bytes: 1,
        }),
        SnapMessage::BlockAccessLists(SnapBlockAccessLists {
            request_id: 5,
            lists: vec![None, Some(vec![0xc0].into())],
        }),
    ];
    for version in SnapVersion::ALL {
        let encoded: Vec<(u8, Vec<u8>)> = snap_samples
            .iter()
            .map(|m| (m.id() as u8, m.encode_payload()))
            .filter(|(id, _)| SnapMessage::defined(*id, version))
            .collect();
        let payloads: Vec<Vec<u8>> = encoded.iter().map(|(_, p)| p.clone()).collect();
        for _ in 0..n {
            let id = if rng.gen_bool(0.9) {
                encoded[rng.gen_range(0..encoded.len())].0
            } else {
                rng.gen_range(0..16)
            };
            let _ = SnapMessage::decode(id, version, &input(&mut rng, &payloads));
        }
        for (id, payload) in &encoded {
            let decoded = SnapMessage::decode(*id, version, payload).unwrap();
            assert_eq!(&decoded.encode_payload(), payload);
        }
    }
}
