//! Integration tests of the executor over the 52 mainnet blocks in `../shared/data/mainnet`.

mod common;
mod parallel;
mod sequential;
mod tamper;
