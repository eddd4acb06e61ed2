//! The discv4 wire against geth 1.17.10's `v4wire` test vectors (EIP-8's, fields past the known
//! ones included), round trips of every packet type, and broken packets refused with a typed
//! error.

use alloy_primitives::{hex, Bytes};
use gigagas_discv4::{
    decode, encode, DecodeError, Endpoint, EnrRequest, EnrResponse, FindNode, Message, Neighbours,
    Ping, Pong,
};
use gigagas_net_peers::{Enr, NodeRecord, PeerId};
use k256::ecdsa::SigningKey;
use rand::{Rng, RngCore, SeedableRng};
use std::net::IpAddr;

/// geth's `TestForwardCompatibility` packets, in order: Ping, Ping with ENR sequence and an
/// extra field, FindNode with two extra fields, Neighbours with three.
const GETH_PACKETS: [&str; 4] = [
    "71dbda3a79554728d4f94411e42ee1f8b0d561c10e1e5f5893367948c6a7d70bb87b235fa28a77070271b6c164a2dce8c7e13a5739b53b5e96f2e5acb0e458a02902f5965d55ecbeb2ebb6cabb8b2b232896a36b737666c55265ad0a68412f250001ea04cb847f000001820cfa8215a8d790000000000000000000000000000000018208ae820d058443b9a355",
    "e9614ccfd9fc3e74360018522d30e1419a143407ffcce748de3e22116b7e8dc92ff74788c0b6663aaa3d67d641936511c8f8d6ad8698b820a7cf9e1be7155e9a241f556658c55428ec0563514365799a4be2be5a685a80971ddcfa80cb422cdd0101ec04cb847f000001820cfa8215a8d790000000000000000000000000000000018208ae820d058443b9a3550102",
    "c7c44041b9f7c7e41934417ebac9a8e1a4c6298f74553f2fcfdcae6ed6fe53163eb3d2b52e39fe91831b8a927bf4fc222c3902202027e5e9eb812195f95d20061ef5cd31d502e47ecb61183f74a504fe04c51e73df81f25c4d506b26db4517490103f84eb840ca634cae0d49acb401d8a4c6b6fe8c55b70d115bf400769cc1400f3258cd31387574077f301b421bc84df7266c44e9e6d569fc56be00812904767bf5ccd1fc7f8443b9a35582999983999999280dc62cc8255c73471e0a61da0c89acdc0e035e260add7fc0c04ad9ebf3919644c91cb247affc82b69bd2ca235c71eab8e49737c937a2c396",
    "c679fc8fe0b8b12f06577f2e802d34f6fa257e6137a995f6f4cbfc9ee50ed3710faf6e66f932c4c8d81d64343f429651328758b47d3dbc02c4042f0fff6946a50f4a49037a72bb550f3a7872363a83e1b9ee6469856c24eb4ef80b7535bcf99c0004f9015bf90150f84d846321163782115c82115db8403155e1427f85f10a5c9a7755877748041af1bcd8d474ec065eb33df57a97babf54bfd2103575fa829115d224c523596b401065a97f74010610fce76382c0bf32f84984010203040101b840312c55512422cf9b8a4097e9a6ad79402e87a15ae909a4bfefa22398f03d20951933beea1e4dfa6f968212385e829f04c2d314fc2d4e255e0d3bc08792b069dbf8599020010db83c4d001500000000abcdef12820d05820d05b84038643200b172dcfef857492156971f0e6aa2c538d8b74010f8e140811d53b98c765dd2d96126051913f44582e8c199ad7c6d6819e9a56483f637feaac9448aacf8599020010db885a308d313198a2e037073488203e78203e8b8408dcab8618c3253b558d459da53bd8fa68935a719aff8b811197101a4b2b47dd2d47295286fc00cc081bb542d760717d1bdd6bec2c37cd72eca367d6dd3b9df738443b9a355010203b525a138aa34383fec3d2719a0",
];

fn peer(hex_id: &str) -> PeerId {
    hex_id.parse().unwrap()
}

fn ip(s: &str) -> IpAddr {
    s.parse().unwrap()
}

#[test]
fn geths_forward_compatibility_vectors_decode() {
    let key = SigningKey::from_slice(&hex!(
        "b71c71a67e1177ad4e901695e1b4b9ee17ae16c6668d313eac2f96dbcda3f291"
    ))
    .unwrap();
    let id = PeerId::from_slice(&key.verifying_key().to_encoded_point(false).as_bytes()[1..]);
    let decoded: Vec<Message> = GETH_PACKETS
        .iter()
        .map(|p| {
            let (message, sender, hash) = decode(&hex::decode(p).unwrap()).unwrap();
            assert_eq!(sender, id);
            assert_eq!(hash.as_slice(), &hex::decode(p).unwrap()[..32]);
            message
        })
        .collect();
    let ping = Ping {
        version: 4,
        from: Endpoint { address: ip("127.0.0.1"), udp_port: 3322, tcp_port: 5544 },
        to: Endpoint { address: ip("::1"), udp_port: 2222, tcp_port: 3333 },
        expire: 1_136_239_445,
        enr_seq: None,
    };
    assert_eq!(decoded[0], Message::Ping(ping.clone()));
    assert_eq!(decoded[1], Message::Ping(Ping { enr_seq: Some(1), ..ping }));
    assert_eq!(
        decoded[2],
        Message::FindNode(FindNode {
            target: peer("ca634cae0d49acb401d8a4c6b6fe8c55b70d115bf400769cc1400f3258cd31387574077f301b421bc84df7266c44e9e6d569fc56be00812904767bf5ccd1fc7f"),
            expire: 1_136_239_445,
        })
    );
    let node = |id: &str, address: &str, udp_port, tcp_port| NodeRecord {
        address: ip(address),
        udp_port,
        tcp_port,
        id: peer(id),
    };
    assert_eq!(
        decoded[3],
        Message::Neighbours(Neighbours {
            nodes: vec![
                node("3155e1427f85f10a5c9a7755877748041af1bcd8d474ec065eb33df57a97babf54bfd2103575fa829115d224c523596b401065a97f74010610fce76382c0bf32", "99.33.22.55", 4444, 4445),
                node("312c55512422cf9b8a4097e9a6ad79402e87a15ae909a4bfefa22398f03d20951933beea1e4dfa6f968212385e829f04c2d314fc2d4e255e0d3bc08792b069db", "1.2.3.4", 1, 1),
                node("38643200b172dcfef857492156971f0e6aa2c538d8b74010f8e140811d53b98c765dd2d96126051913f44582e8c199ad7c6d6819e9a56483f637feaac9448aac", "2001:db8:3c4d:15::abcd:ef12", 3333, 3333),
                node("8dcab8618c3253b558d459da53bd8fa68935a719aff8b811197101a4b2b47dd2d47295286fc00cc081bb542d760717d1bdd6bec2c37cd72eca367d6dd3b9df73", "2001:db8:85a3:8d3:1319:8a2e:370:7348", 999, 1000),
            ],
            expire: 1_136_239_445,
        })
    );
}

#[test]
fn every_packet_type_round_trips_and_names_its_sender() {
    let mut rng = rand::rngs::StdRng::seed_from_u64(4);
    let mut secret = [0u8; 32];
    rng.fill_bytes(&mut secret);
    let key = SigningKey::from_slice(&secret).unwrap();
    let id = PeerId::from_slice(&key.verifying_key().to_encoded_point(false).as_bytes()[1..]);
    let here = Endpoint { address: ip("10.0.0.1"), udp_port: 30303, tcp_port: 30303 };
    let enr = Enr::builder()
        .ip4("10.0.0.1".parse().unwrap())
        .tcp4(30303)
        .udp4(30303)
        .build(&key)
        .unwrap();
    let messages = [
        Message::Ping(Ping { version: 4, from: here, to: here, expire: 9, enr_seq: Some(3) }),
        Message::Pong(Pong {
            to: here,
            ping_hash: Bytes::from(vec![7; 32]),
            expire: 9,
            enr_seq: None,
        }),
        Message::FindNode(FindNode { target: id, expire: 9 }),
        Message::Neighbours(Neighbours {
            nodes: vec![NodeRecord { address: ip("::2"), udp_port: 1, tcp_port: 2, id }; 12],
            expire: 9,
        }),
        Message::EnrRequest(EnrRequest { expire: 9 }),
        Message::EnrResponse(EnrResponse { request_hash: Bytes::from(vec![1; 32]), enr }),
    ];
    for message in messages {
        let (packet, hash) = encode(&key, &message);
        assert!(packet.len() <= gigagas_discv4::MAX_PACKET_SIZE, "{} bytes", packet.len());
        assert_eq!(decode(&packet), Ok((message, id, hash)));
    }
}

#[test]
fn broken_packets_are_typed_errors() {
    let key = SigningKey::from_slice(&[7u8; 32]).unwrap();
    let (packet, _) = encode(&key, &Message::EnrRequest(EnrRequest { expire: 1 }));
    assert_eq!(decode(&packet[..50]), Err(DecodeError::Size(50)));
    let mut bad = packet.clone();
    bad[0] ^= 1;
    assert_eq!(decode(&bad), Err(DecodeError::BadHash));
    let mut rng = rand::rngs::StdRng::seed_from_u64(8);
    let samples: Vec<Vec<u8>> = GETH_PACKETS.iter().map(|p| hex::decode(p).unwrap()).collect();
    for _ in 0..20_000 {
        let mut input = samples[rng.gen_range(0..samples.len())].clone();
        match rng.gen_range(0..3) {
            0 => {
                let i = rng.gen_range(0..input.len());
                input[i] ^= 1 << rng.gen_range(0..8);
            }
            1 => input.truncate(rng.gen_range(0..input.len())),
            _ => input.extend((0..rng.gen_range(1..40)).map(|_| rng.gen::<u8>())),
        }
        // A changed packet is refused (its hash no longer matches), never a panic.
        assert!(decode(&input).is_err());
        // With its hash recomputed, whatever the body: a typed answer, never a panic.
        if input.len() > 32 {
            let hash = alloy_primitives::keccak256(&input[32..]);
            input[..32].copy_from_slice(hash.as_slice());
            let _ = decode(&input);
        }
    }
}
