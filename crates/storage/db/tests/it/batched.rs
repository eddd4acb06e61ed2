//! Batched reads of the flat state, codes and trie nodes: one RocksDB multi-get (through
//! io_uring where the kernel allows it) or one lookup a key (`Storage::with_batched_reads(false)`,
//! each block by a `pread` a tracer sees): the same answers, in the order asked, as single reads.

use alloy_primitives::{keccak256, Address, Bytes, B256, U256};
use gigagas_state::StateSource;
use gigagas_storage::{AccountRecord, Storage};
use gigagas_storage_api::{HashedBatch, HashedStateWriter, StateWriter};
use gigagas_trie::{EncodedNode, NodeSource};

#[test]
fn batched_and_key_by_key_reads_answer_as_single_reads() {
    let dir = tempfile::tempdir().unwrap();
    let code: Vec<u8> = vec![0x60, 0x00, 0x60, 0x00, 0xf3];
    let code_hash = keccak256(&code);
    let accounts: Vec<(Address, AccountRecord)> = (1..=300u64)
        .map(|i| {
            let hash = if i % 3 == 0 { code_hash } else { B256::ZERO };
            (
                Address::left_padding_from(&i.to_be_bytes()),
                AccountRecord { nonce: i, balance: U256::from(i * 7), code_hash: hash },
            )
        })
        .collect();
    let slots: Vec<(Address, U256, U256)> = accounts
        .iter()
        .step_by(3)
        .flat_map(|(a, _)| (0..5u64).map(move |s| (*a, U256::from(s), U256::from(s + 1))))
        .collect();
    let nodes: Vec<EncodedNode> = (0..400u64)
        .map(|i| {
            let rlp = Bytes::from(alloy_rlp::encode(vec![i; 3]));
            (keccak256(&rlp), rlp)
        })
        .collect();
    {
        let store = Storage::open(dir.path()).unwrap();
        store.write_state(&accounts, &slots, &[(code_hash, &code[..])]).unwrap();
        store.write_hashed(&HashedBatch { trie_nodes: &nodes, ..Default::default() }).unwrap();
    }
    // Asked: every account, absent ones among them; every slot, absent ones too; the code and
    // an unknown code; every other node and an absent one.
    let mut addresses: Vec<Address> = accounts.iter().rev().map(|(a, _)| *a).collect();
    addresses.insert(5, Address::repeat_byte(0xee));
    let mut keys: Vec<(Address, U256)> = slots.iter().map(|(a, s, _)| (*a, *s)).collect();
    keys.insert(3, (accounts[0].0, U256::from(99)));
    keys.push((Address::repeat_byte(0xee), U256::ZERO));
    let codes = [B256::repeat_byte(0xcd), code_hash];
    let mut hashes: Vec<B256> = nodes.iter().step_by(2).map(|(h, _)| *h).collect();
    hashes.insert(11, B256::repeat_byte(0xab));

    for batched in [true, false] {
        // A fresh open each time: no node cached.
        let store = Storage::open(dir.path()).unwrap().with_batched_reads(batched);
        let many = StateSource::accounts(&store, &addresses).unwrap();
        let single: Vec<_> =
            addresses.iter().map(|a| StateSource::account(&store, a).unwrap()).collect();
        assert_eq!(many, single, "accounts, batched {batched}");
        assert_eq!(many.iter().flatten().count(), accounts.len());
        assert_eq!(many[0].as_ref().unwrap().nonce, 300);

        let many = StateSource::slots(&store, &keys).unwrap();
        let single: Vec<U256> =
            keys.iter().map(|(a, s)| StateSource::storage(&store, a, s).unwrap()).collect();
        assert_eq!(many, single, "slots, batched {batched}");
        assert_eq!(many[3], U256::ZERO);
        assert_eq!(many.iter().filter(|v| !v.is_zero()).count(), slots.len());

        let many = StateSource::codes(&store, &codes).unwrap();
        assert!(many[0].is_none(), "batched {batched}");
        assert_eq!(many[1].as_ref().unwrap().original_bytes().as_ref(), &code[..]);

        let many: Vec<Option<Bytes>> =
            store.nodes(&hashes).into_iter().map(|r| r.unwrap()).collect();
        let single: Vec<Option<Bytes>> = hashes.iter().map(|h| store.node(h).unwrap()).collect();
        assert_eq!(many, single, "trie nodes, batched {batched}");
        assert_eq!(many[11], None);
        assert_eq!(many.iter().flatten().count(), hashes.len() - 1);
    }
}
