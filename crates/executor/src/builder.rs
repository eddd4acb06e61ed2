//! Block building: the sequential reference run over candidate transactions that may not fit,
//! as a payload builder does (`engine_forkchoiceUpdated` with payload attributes).

pub use crate::sequential::BuiltBlock;
use crate::{
    sequential::{run_in_order, Beside},
    ExecutionError,
};
use alloy_consensus::TxEnvelope;
use alloy_primitives::Address;
use gigagas_primitives::{BlockInput, ChainSpec};
use gigagas_state::PreState;

/// Builds the block whose environment `draft` gives (number, timestamp, beneficiary, gas
/// limit, base fee, prevrandao, parent beacon block root, withdrawals; its transactions are
/// ignored): pre-execution system calls, then every candidate, in the order given, that fits
/// the remaining gas and that the EVM accepts, committed one by one with revm's EIP-7928 BAL
/// builder attached (index `i + 1` for the `i`-th included transaction), then the
/// post-execution changes (withdrawals, EIP-7685 requests). The caller fills the header's
/// roots from [`BuiltBlock::outcome`].
///
/// # Errors
/// [`ExecutionError`] when a system call fails; a candidate that fails is skipped, not an
/// error.
pub fn build_block<'t>(
    chain: &ChainSpec,
    draft: &BlockInput,
    candidates: impl IntoIterator<Item = (&'t TxEnvelope, Address)>,
    pre_state: &PreState,
) -> Result<BuiltBlock, ExecutionError> {
    run_in_order(chain, draft, candidates, pre_state, true, true, Beside::default())
}
