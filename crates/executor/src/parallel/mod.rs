//! The parallel executor: every transaction runs against the pre-state positioned at its BAL
//! index, without waiting for the transactions before it.
pub mod run;
