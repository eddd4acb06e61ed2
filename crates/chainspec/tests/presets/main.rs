//! The named chains against what the networks and geth 1.17.10 say: genesis hashes computed
//! from the built-in files equal the well-known ones, and the EIP-2124 fork ids at each head
//! equal geth's `forkid` test vectors.

use gigagas_chainspec::{ChainArg, NamedChain};
use gigagas_validation::genesis_block;

mod forkids;
use forkids::{HOODI_FORK_IDS, MAINNET_FORK_IDS, SEPOLIA_FORK_IDS};

#[test]
fn built_in_genesis_files_give_the_well_known_genesis_hashes() {
    for (chain, chain_id, accounts) in [
        (NamedChain::Mainnet, 1, 8_893),
        (NamedChain::Sepolia, 11_155_111, 15),
        (NamedChain::Hoodi, 560_048, 335),
    ] {
        let json = chain.genesis_json().unwrap();
        let genesis: alloy_genesis::Genesis = serde_json::from_slice(&json).unwrap();
        assert_eq!(genesis.alloc.len(), accounts, "{chain}");
        let block = genesis_block(&json).unwrap_or_else(|e| panic!("{chain}: {e}"));
        assert_eq!(Some(block.hash), chain.genesis_hash(), "{chain}");
        assert_eq!(block.chain.chain_id, chain_id, "{chain}");
        assert!(!chain.bootnodes().is_empty(), "{chain}");
    }
    // The dev chain's file is ours; it still makes a block 0.
    let dev = genesis_block(&NamedChain::Dev.genesis_json().unwrap()).unwrap();
    assert_eq!(dev.chain.chain_id, 1337);
    assert!(NamedChain::Dev.bootnodes().is_empty());
}

#[test]
fn fork_ids_equal_geths_vectors() {
    for (chain, cases) in [
        (NamedChain::Mainnet, MAINNET_FORK_IDS),
        (NamedChain::Sepolia, SEPOLIA_FORK_IDS),
        (NamedChain::Hoodi, HOODI_FORK_IDS),
    ] {
        let block = genesis_block(&chain.genesis_json().unwrap()).unwrap();
        let spec = &block.chain;
        for &(number, time, hash, next) in cases {
            let id = spec.fork_id(block.hash, block.header.timestamp, number, time);
            assert_eq!(
                (u32::from_be_bytes(id.hash.0), id.next),
                (hash, next),
                "{chain}: block {number} at {time}"
            );
            let filter = spec.fork_filter(block.hash, block.header.timestamp, number, time);
            assert_eq!(filter.current(), id, "{chain}: block {number} at {time}");
        }
    }
    // Sepolia runs Glamsterdam from 1791294816 on.
    let sepolia = genesis_block(&NamedChain::Sepolia.genesis_json().unwrap()).unwrap().chain;
    assert!(!sepolia.is_amsterdam(1_791_294_815) && sepolia.is_amsterdam(1_791_294_816));
}

#[test]
fn chain_arguments_are_names_or_paths() {
    assert_eq!("Sepolia".parse::<ChainArg>().unwrap(), ChainArg::Named(NamedChain::Sepolia));
    assert_eq!("mainnet".parse::<ChainArg>().unwrap().named(), Some(NamedChain::Mainnet));
    let file: ChainArg = "target/chains/x/genesis.json".parse().unwrap();
    assert_eq!(file.named(), None);
    assert!(matches!(file.genesis_json(), Err(gigagas_chainspec::ChainSpecError::Read { .. })));
    assert!("goerli".parse::<NamedChain>().is_err());
}
