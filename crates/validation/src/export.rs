//! geth's `export` / `import` file format: blocks back to back, each the RLP list
//! `[header, transactions, ommers, withdrawals?, blockAccessList?]` (go-ethereum 1.17.10
//! `cmd/utils/cmd.go`, `exportBlock`): the network block, with the EIP-7928 BAL of an Amsterdam
//! block as an optional trailing field. Files that end each block at the withdrawals (older
//! exports, gigagas-bench's chains before Amsterdam) are the same format without it.

use alloy_consensus::{Block, BlockBody, Header, TxEnvelope};
use alloy_eips::eip4895::Withdrawals;
use alloy_rlp::{Decodable, Encodable};
use gigagas_bal::BlockAccessList;

/// One entry of an export file: the block and the BAL written after it, if any.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ExportedBlock {
    /// The block (header, transactions, ommers, withdrawals).
    pub block: Block<TxEnvelope>,
    /// The EIP-7928 BAL the file carries after the block (geth writes it for Amsterdam blocks).
    pub bal: Option<BlockAccessList>,
}

impl ExportedBlock {
    /// `block`, followed in the file by `bal` when given.
    pub fn new(block: Block<TxEnvelope>, bal: Option<BlockAccessList>) -> Self {
        Self { block, bal }
    }

    fn payload_length(&self) -> usize {
        let body = &self.block.body;
        let mut n = self.block.header.length() + body.transactions.length() + body.ommers.length();
        match (&body.withdrawals, &self.bal) {
            (Some(w), _) => n += w.length(),
            // An optional field before a present one is written as an empty list (geth's rlp).
            (None, Some(_)) => n += 1,
            (None, None) => {}
        }
        if let Some(bal) = &self.bal {
            n += bal.length();
        }
        n
    }
}

impl Encodable for ExportedBlock {
    fn encode(&self, out: &mut dyn alloy_rlp::BufMut) {
        alloy_rlp::Header { list: true, payload_length: self.payload_length() }.encode(out);
        let body = &self.block.body;
        self.block.header.encode(out);
        body.transactions.encode(out);
        body.ommers.encode(out);
        match (&body.withdrawals, &self.bal) {
            (Some(w), _) => w.encode(out),
            (None, Some(_)) => out.put_u8(alloy_rlp::EMPTY_LIST_CODE),
            (None, None) => {}
        }
        if let Some(bal) = &self.bal {
            bal.encode(out);
        }
    }

    fn length(&self) -> usize {
        let payload_length = self.payload_length();
        alloy_rlp::length_of_length(payload_length) + payload_length
    }
}

impl Decodable for ExportedBlock {
    fn decode(buf: &mut &[u8]) -> alloy_rlp::Result<Self> {
        let list = alloy_rlp::Header::decode(buf)?;
        if !list.list {
            return Err(alloy_rlp::Error::UnexpectedString);
        }
        if buf.len() < list.payload_length {
            return Err(alloy_rlp::Error::InputTooShort);
        }
        let (mut payload, rest) = buf.split_at(list.payload_length);
        let header = Header::decode(&mut payload)?;
        let transactions = Vec::<TxEnvelope>::decode(&mut payload)?;
        let ommers = Vec::<Header>::decode(&mut payload)?;
        let withdrawals =
            if payload.is_empty() { None } else { Some(Withdrawals::decode(&mut payload)?) };
        let bal =
            if payload.is_empty() { None } else { Some(BlockAccessList::decode(&mut payload)?) };
        if !payload.is_empty() {
            return Err(alloy_rlp::Error::ListLengthMismatch {
                expected: list.payload_length,
                got: list.payload_length - payload.len(),
            });
        }
        *buf = rest;
        let body = BlockBody { transactions, ommers, withdrawals };
        Ok(Self { block: Block { header, body }, bal })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use alloy_eip7928::{AccountChanges, BalanceChange};
    use alloy_primitives::{Address, U256};

    fn block(withdrawals: Option<Withdrawals>) -> Block<TxEnvelope> {
        let header = Header { number: 7, gas_limit: 30_000_000, ..Default::default() };
        Block { header, body: BlockBody { transactions: vec![], ommers: vec![], withdrawals } }
    }

    #[test]
    fn round_trips_with_and_without_a_bal() {
        let account = AccountChanges {
            address: Address::repeat_byte(0x11),
            balance_changes: vec![BalanceChange::new(
                alloy_eip7928::BlockAccessIndex(1),
                U256::from(5),
            )],
            ..Default::default()
        };
        for entry in [
            ExportedBlock::new(block(None), None),
            ExportedBlock::new(block(Some(Withdrawals::default())), None),
            ExportedBlock::new(block(Some(Withdrawals::default())), Some(vec![account.clone()])),
        ] {
            let rlp = alloy_rlp::encode(&entry);
            assert_eq!(rlp.len(), entry.length());
            let mut buf = rlp.as_slice();
            assert_eq!(ExportedBlock::decode(&mut buf).expect("decodes"), entry);
            assert!(buf.is_empty());
        }
        // Without a BAL the entry is the network block's encoding.
        let plain = block(Some(Withdrawals::default()));
        assert_eq!(
            alloy_rlp::encode(ExportedBlock::new(plain.clone(), None)),
            alloy_rlp::encode(&plain)
        );
    }

    #[test]
    fn trailing_fields_after_the_bal_are_refused() {
        let b = block(Some(Withdrawals::default()));
        let mut payload = Vec::new();
        b.header.encode(&mut payload);
        b.body.transactions.encode(&mut payload);
        b.body.ommers.encode(&mut payload);
        Withdrawals::default().encode(&mut payload);
        BlockAccessList::default().encode(&mut payload);
        payload.push(alloy_rlp::EMPTY_LIST_CODE); // a sixth field
        let mut rlp = Vec::new();
        alloy_rlp::Header { list: true, payload_length: payload.len() }.encode(&mut rlp);
        rlp.extend_from_slice(&payload);
        assert!(ExportedBlock::decode(&mut rlp.as_slice()).is_err());
    }
}
