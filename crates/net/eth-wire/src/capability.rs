//! Capabilities (`[name, version]` in `Hello`) and their negotiation as geth does it
//! (`p2p/peer.go` `matchProtocols`): for each protocol name both sides know, the highest
//! version both speak; the shared protocols take consecutive message-id ranges after the base
//! protocol's 16 ids, in the order of their names.

use alloy_rlp::{RlpDecodable, RlpEncodable};

/// Message ids the p2p base protocol reserves (`Hello` … `Pong` and room to grow).
pub const BASE_PROTOCOL_LENGTH: u8 = 16;

/// A capability as `Hello` lists it: a protocol name and one of its versions.
#[derive(Debug, Clone, PartialEq, Eq, Hash, RlpEncodable, RlpDecodable)]
pub struct Capability {
    /// The protocol's name (`eth`, `snap`, …).
    pub name: String,
    /// The version.
    pub version: u64,
}

impl Capability {
    /// `name/version`.
    pub fn new(name: &str, version: u64) -> Self {
        Self { name: name.to_string(), version }
    }
}

impl std::fmt::Display for Capability {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}/{}", self.name, self.version)
    }
}

/// A protocol this node speaks: its capability and how many message ids that version takes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Protocol {
    /// The capability.
    pub cap: Capability,
    /// Message ids it takes.
    pub messages: u8,
}

/// A capability both sides speak, at the message-id offset the session gave it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SharedCapability {
    /// The capability (the highest shared version of its name).
    pub cap: Capability,
    /// Its first message id in this session.
    pub offset: u8,
    /// How many ids it takes.
    pub messages: u8,
}

impl SharedCapability {
    /// Whether absolute message id `id` belongs to this capability.
    pub fn contains(&self, id: u8) -> bool {
        id >= self.offset && id - self.offset < self.messages
    }
}

/// The capabilities `ours` and `theirs` share, with their offsets: per name the highest
/// version both list, names in ascending order from [`BASE_PROTOCOL_LENGTH`].
pub fn negotiate(ours: &[Protocol], theirs: &[Capability]) -> Vec<SharedCapability> {
    let mut best: std::collections::BTreeMap<&str, &Protocol> = Default::default();
    for p in ours {
        if theirs.contains(&p.cap) {
            let entry = best.entry(p.cap.name.as_str()).or_insert(p);
            if p.cap.version > entry.cap.version {
                *entry = p;
            }
        }
    }
    let mut offset = BASE_PROTOCOL_LENGTH;
    best.into_values()
        .map(|p| {
            let shared = SharedCapability { cap: p.cap.clone(), offset, messages: p.messages };
            offset = offset.saturating_add(p.messages);
            shared
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_highest_shared_version_per_name_in_name_order() {
        let ours = [
            Protocol { cap: Capability::new("eth", 69), messages: 18 },
            Protocol { cap: Capability::new("eth", 71), messages: 20 },
            Protocol { cap: Capability::new("eth", 70), messages: 18 },
        ];
        // geth 1.17.10 lists eth/69-72 and snap/1.
        let geth = ["eth/72", "eth/71", "eth/70", "eth/69", "snap/1"].map(|c| {
            let (name, version) = c.split_once('/').unwrap();
            Capability::new(name, version.parse().unwrap())
        });
        let shared = negotiate(&ours, &geth);
        assert_eq!(
            shared,
            vec![SharedCapability { cap: Capability::new("eth", 71), offset: 16, messages: 20 }]
        );
        assert!(shared[0].contains(16) && shared[0].contains(35) && !shared[0].contains(36));
        assert!(negotiate(&ours, &[Capability::new("eth", 68)]).is_empty());
        let two = [
            Protocol { cap: Capability::new("snap", 1), messages: 8 },
            Protocol { cap: Capability::new("eth", 69), messages: 18 },
        ];
        let shared = negotiate(&two, &geth);
        assert_eq!((shared[0].cap.name.as_str(), shared[0].offset), ("eth", 16));
        assert_eq!((shared[1].cap.name.as_str(), shared[1].offset), ("snap", 34));
    }
}
