//! What one received chunk did to its block's state (the coded schemes' answer to the push
//! engine).

/// What a chunk did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Outcome {
    /// New information.
    Useful,
    /// Nothing new (dependent, duplicate, or the block is already decoded).
    Useless,
    /// New information that completed the block.
    Decoded,
    /// RLNC: independent of everything held or queued, and queued for its commitment check
    /// (useful or forged once the check has run).
    Queued,
}
