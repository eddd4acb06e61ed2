//! The network's block encoding (`gigagas_node::NetworkBlock`, `RLP([block, bal])`): a round
//! trip, and trailing, truncated or malformed bytes refused as typed errors.

use gigagas_node::NetworkBlock;

#[test]
fn network_blocks_round_trip_and_garbage_is_an_error() {
    let block = NetworkBlock { block: Default::default(), bal: None };
    let bytes = block.encode();
    assert_eq!(NetworkBlock::decode(&bytes).unwrap(), block);
    let mut longer = bytes.clone();
    longer.push(0);
    assert!(NetworkBlock::decode(&longer).is_err());
    assert!(NetworkBlock::decode(&bytes[..bytes.len() - 1]).is_err());
    assert!(NetworkBlock::decode(&[0xc0]).is_err());
}
