//! geth's call overrides (`override.StateOverride`, `override.BlockOverrides`) applied to the
//! state and the header a call, an estimate, a trace or a simulated block runs on.

use crate::blocks::BlockHeader;
use alloy_primitives::{keccak256, Address};
use alloy_rpc_types_eth::{state::StateOverride, BlockOverrides};
use gigagas_state::PreState;
use jsonrpsee::types::ErrorObjectOwned;
use revm::{
    bytecode::Bytecode,
    database::{CacheDB, WrapDatabaseRef},
    primitives::KECCAK_EMPTY,
    Database,
};
use std::collections::BTreeMap;

/// A block's state with what overrides or simulated blocks wrote over it.
pub(crate) type OverlayDb<'a> = CacheDB<WrapDatabaseRef<&'a PreState>>;

/// `state`, nothing written over it yet.
pub(crate) fn overlay(state: &PreState) -> OverlayDb<'_> {
    CacheDB::new(WrapDatabaseRef(state))
}

fn error(code: i32, message: impl Into<String>) -> ErrorObjectOwned {
    ErrorObjectOwned::owned(code, message.into(), None::<()>)
}

fn internal(message: String) -> ErrorObjectOwned {
    ErrorObjectOwned::owned(jsonrpsee::types::error::INTERNAL_ERROR_CODE, message, None::<()>)
}

/// What `eth_call`, `eth_estimateGas` and `debug_traceCall` may override besides the request.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct CallOverrides<'a> {
    /// Accounts' balance, nonce, code and storage.
    pub(crate) state: Option<&'a StateOverride>,
    /// The header's fields the call sees.
    pub(crate) block: Option<&'a BlockOverrides>,
}

impl CallOverrides<'_> {
    /// `block` with the block overrides applied (geth's `BlockOverrides.Apply` for a call:
    /// number, difficulty, time, gas limit, fee recipient, prevRandao, base fee, blob base
    /// fee).
    ///
    /// # Errors
    /// -32602 for the overrides a call does not take (the beacon root, block hashes), as geth
    /// refuses them, and a base fee past 64 bits.
    pub(crate) fn header(&self, block: &BlockHeader) -> Result<BlockHeader, ErrorObjectOwned> {
        let mut out = BlockHeader {
            number: block.number,
            header: block.header.clone(),
            blob_base_fee: block.blob_base_fee,
        };
        let Some(o) = self.block else { return Ok(out) };
        if o.beacon_root.is_some() {
            return Err(error(
                -32602,
                "block override BeaconRoot is not supported for this RPC method",
            ));
        }
        if o.block_hash.is_some() {
            return Err(error(
                -32602,
                "block override BlockHash is not supported for this RPC method",
            ));
        }
        let h = &mut out.header;
        if let Some(number) = o.number {
            h.number =
                u64::try_from(number).map_err(|_| error(-32602, "block number exceeds 64 bits"))?;
            out.number = h.number;
        }
        if let Some(difficulty) = o.difficulty {
            h.difficulty = difficulty;
        }
        if let Some(time) = o.time {
            h.timestamp = time;
        }
        if let Some(gas_limit) = o.gas_limit {
            h.gas_limit = gas_limit;
        }
        if let Some(coinbase) = o.coinbase {
            h.beneficiary = coinbase;
        }
        if let Some(random) = o.random {
            h.mix_hash = random;
        }
        if let Some(fee) = o.blob_base_fee {
            out.blob_base_fee = Some(fee.saturating_to());
        }
        let h = &mut out.header;
        if let Some(fee) = o.base_fee {
            h.base_fee_per_gas = Some(
                u64::try_from(fee).map_err(|_| error(-32602, "baseFeePerGas exceeds 64 bits"))?,
            );
        }
        Ok(out)
    }

    /// `state` with the state overrides applied (a precompile's move is refused: it needs a
    /// precompile set of the call's own, which `eth_simulateV1` builds).
    ///
    /// # Errors
    /// As [`apply_state`]; -32602 for `movePrecompileToAddress`.
    pub(crate) fn state<'s>(&self, state: &'s PreState) -> Result<OverlayDb<'s>, ErrorObjectOwned> {
        let mut db = overlay(state);
        if let Some(o) = self.state {
            if o.values().any(|a| a.move_precompile_to.is_some()) {
                return Err(error(
                    -32602,
                    "movePrecompileToAddress is served by eth_simulateV1 only",
                ));
            }
            apply_state(&mut db, o, |_| false)?;
        }
        Ok(db)
    }
}

/// Applies `overrides` (geth's `StateOverride`: balance, nonce, code, whole storage or a
/// storage diff, a precompile's move) to `db`; returns the precompile moves (source,
/// destination) and the precompile addresses that lose their precompile (`is_precompile` says
/// which are).
///
/// # Errors
/// -32602 for an account with both `state` and `stateDiff`; -32000 for a move of what is not
/// a precompile; -38022 for a move onto itself; an internal error when the state cannot be read.
#[allow(clippy::type_complexity)]
pub(crate) fn apply_state(
    db: &mut OverlayDb<'_>,
    overrides: &StateOverride,
    is_precompile: impl Fn(&Address) -> bool,
) -> Result<(Vec<(Address, Address)>, Vec<Address>), ErrorObjectOwned> {
    let sorted: BTreeMap<&Address, _> = overrides.iter().collect();
    let mut moves: Vec<(Address, Address)> = Vec::new();
    let mut removed = Vec::new();
    for (address, o) in sorted {
        if o.state.is_some() && o.state_diff.is_some() {
            return Err(error(
                -32602,
                format!("account {address} has both 'state' and 'stateDiff'"),
            ));
        }
        let precompile = is_precompile(address);
        if let Some(to) = o.move_precompile_to {
            if !precompile {
                return Err(error(-32000, format!("account {address} is not a precompile")));
            }
            if to == *address {
                return Err(error(
                    -38022,
                    format!("account {address} is already referenced by movePrecompileToAddress"),
                ));
            }
            moves.push((*address, to));
        }
        if precompile {
            removed.push(*address);
        }
        let db_err = |e: gigagas_state::StateError| internal(e.to_string());
        if o.nonce.is_some() || o.code.is_some() || o.balance.is_some() {
            let mut info = db.basic(*address).map_err(db_err)?.unwrap_or_default();
            if let Some(nonce) = o.nonce {
                info.nonce = nonce;
            }
            if let Some(code) = &o.code {
                info.code_hash = if code.is_empty() { KECCAK_EMPTY } else { keccak256(code) };
                info.code = Some(Bytecode::new_raw(code.clone()));
            }
            if let Some(balance) = o.balance {
                info.balance = balance;
            }
            db.insert_account_info(*address, info);
        }
        if let Some(state) = &o.state {
            let slots = state.iter().map(|(k, v)| ((*k).into(), (*v).into())).collect();
            db.replace_account_storage(*address, slots).map_err(db_err)?;
        }
        for (k, v) in o.state_diff.iter().flatten() {
            db.insert_account_storage(*address, (*k).into(), (*v).into()).map_err(db_err)?;
        }
    }
    Ok((moves, removed))
}
