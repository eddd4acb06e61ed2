//! Which JSON-RPC namespaces a public port serves (geth's and reth's `--http.api`): `eth`,
//! `net` and `web3` unless told otherwise; `admin` (peers added on request), `debug`, `txpool`, `trace`
//! and `testing` (blocks built on request) only when named. A method of a namespace not served
//! is answered -32601, as geth answers. The authenticated port serves every namespace beside
//! the Engine API (its JWT is the guard).

use std::{collections::BTreeSet, fmt, str::FromStr};

/// A JSON-RPC namespace (geth's and reth's names).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum RpcNamespace {
    /// `eth_*`: chain, state, calls, transactions, logs, fees.
    Eth,
    /// `net_*`: network id, peer count, listening.
    Net,
    /// `web3_*`: client version, Keccak-256.
    Web3,
    /// `admin_*`: node info, peers, `admin_addPeer`.
    Admin,
    /// `debug_*`: raw blocks, receipts and transactions, traces.
    Debug,
    /// `txpool_*`: the pool's content and status.
    Txpool,
    /// `trace_*`: the parity traces (reth's `trace` namespace).
    Trace,
    /// `testing_*`: `testing_buildBlockV1` (the engine builds a block on request).
    Testing,
}

impl RpcNamespace {
    /// Every namespace.
    pub const ALL: [Self; 8] = [
        Self::Eth,
        Self::Net,
        Self::Web3,
        Self::Admin,
        Self::Debug,
        Self::Txpool,
        Self::Trace,
        Self::Testing,
    ];

    /// Its name, as in `--http.api` and before the method's `_`.
    pub const fn name(self) -> &'static str {
        match self {
            Self::Eth => "eth",
            Self::Net => "net",
            Self::Web3 => "web3",
            Self::Admin => "admin",
            Self::Debug => "debug",
            Self::Txpool => "txpool",
            Self::Trace => "trace",
            Self::Testing => "testing",
        }
    }
}

impl fmt::Display for RpcNamespace {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// A name in `--http.api` that is no namespace gigagas serves.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown JSON-RPC namespace {0:?} (known: eth, net, web3, admin, debug, txpool, trace, testing)")]
pub struct UnknownModule(pub String);

impl FromStr for RpcNamespace {
    type Err = UnknownModule;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Self::ALL
            .into_iter()
            .find(|m| m.name().eq_ignore_ascii_case(s.trim()))
            .ok_or_else(|| UnknownModule(s.trim().to_string()))
    }
}

/// The namespaces a port serves.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RpcModuleSelection(BTreeSet<RpcNamespace>);

impl RpcModuleSelection {
    /// geth's default for `--http.api`: `eth`, `net`, `web3`.
    pub fn standard() -> Self {
        Self([RpcNamespace::Eth, RpcNamespace::Net, RpcNamespace::Web3].into())
    }

    /// Every namespace (the authenticated port's).
    pub fn all() -> Self {
        Self(RpcNamespace::ALL.into())
    }

    /// What the IPC socket serves, as geth's: every namespace but `testing` (the socket is
    /// this machine's user's alone).
    pub fn ipc() -> Self {
        let mut all = Self::all();
        all.0.remove(&RpcNamespace::Testing);
        all
    }

    /// Whether `module` is served.
    pub fn contains(&self, module: RpcNamespace) -> bool {
        self.0.contains(&module)
    }

    /// The namespaces, in [`RpcNamespace`]'s order.
    pub fn iter(&self) -> impl Iterator<Item = RpcNamespace> + '_ {
        self.0.iter().copied()
    }
}

impl Default for RpcModuleSelection {
    fn default() -> Self {
        Self::standard()
    }
}

impl fmt::Display for RpcModuleSelection {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let names: Vec<&str> = self.iter().map(RpcNamespace::name).collect();
        f.write_str(&names.join(","))
    }
}

impl FromStr for RpcModuleSelection {
    type Err = UnknownModule;

    /// A comma-separated list of namespaces (case-insensitive; `all` for every one; empty
    /// entries ignored).
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let mut modules = BTreeSet::new();
        for name in s.split(',').map(str::trim).filter(|n| !n.is_empty()) {
            if name.eq_ignore_ascii_case("all") {
                return Ok(Self::all());
            }
            modules.insert(name.parse()?);
        }
        Ok(Self(modules))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn selections_parse_as_geth_writes_them() {
        let standard: RpcModuleSelection = "eth,net,web3".parse().unwrap();
        assert_eq!(standard, RpcModuleSelection::standard());
        assert_eq!(standard.to_string(), "eth,net,web3");
        let mixed: RpcModuleSelection = " ETH , admin,,debug ".parse().unwrap();
        assert!(mixed.contains(RpcNamespace::Admin) && mixed.contains(RpcNamespace::Debug));
        assert!(!mixed.contains(RpcNamespace::Testing) && !mixed.contains(RpcNamespace::Net));
        assert_eq!("all".parse::<RpcModuleSelection>().unwrap(), RpcModuleSelection::all());
        assert_eq!(
            "eth,personal".parse::<RpcModuleSelection>(),
            Err(UnknownModule("personal".into()))
        );
    }
}
