//! The `web3_` namespace (geth's): the client's version and Keccak-256.

use alloy_primitives::{keccak256, Bytes, B256};
use jsonrpsee::{core::RpcResult, proc_macros::rpc};

/// The client version `web3_clientVersion` answers, in geth's shape
/// (`Geth/v1.17.10-stable/linux-amd64/go1.24.1`): `gigagas/v<version>/<os>-<arch>/<rustc>`, the
/// compiler's version as the build saw it.
pub fn client_version() -> String {
    format!(
        "gigagas/v{}/{}-{}/rustc{}",
        env!("CARGO_PKG_VERSION"),
        std::env::consts::OS,
        std::env::consts::ARCH,
        env!("GIGAGAS_RUSTC_VERSION"),
    )
}

/// The `web3_` namespace.
#[rpc(server, client, namespace = "web3")]
pub trait Web3Api {
    /// [`client_version`].
    #[method(name = "clientVersion")]
    fn client_version(&self) -> RpcResult<String>;

    /// Keccak-256 of `data` (not the standardized SHA3-256).
    #[method(name = "sha3")]
    fn sha3(&self, data: Bytes) -> RpcResult<B256>;
}

/// Serves [`Web3Api`]; it needs nothing of the node.
#[derive(Debug, Clone, Copy, Default)]
pub struct Web3Rpc;

impl Web3ApiServer for Web3Rpc {
    fn client_version(&self) -> RpcResult<String> {
        Ok(client_version())
    }

    fn sha3(&self, data: Bytes) -> RpcResult<B256> {
        Ok(keccak256(&data))
    }
}
