//! `--nat`: which IP a node tells others it is reached on (reth's `net/nat`, cut to the forms
//! that need no router protocol).

use std::{fmt, net::IpAddr, str::FromStr};

/// How the node's external address is found.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum NatResolver {
    /// No translation: the listening address (loopback when it is every interface).
    #[default]
    None,
    /// A fixed public IP (`extip:<IP>`), with the ports forwarded by the operator.
    ExternalIp(IpAddr),
}

impl NatResolver {
    /// The IP to announce, if fixed.
    pub fn external_ip(&self) -> Option<IpAddr> {
        match self {
            Self::None => None,
            Self::ExternalIp(ip) => Some(*ip),
        }
    }
}

/// A `--nat` value that is not `none` or `extip:<IP>`.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum NatParseError {
    /// A router protocol this node does not speak.
    #[error("--nat {0}: UPnP, NAT-PMP and address discovery are not supported; give extip:<IP> (forward the ports) or none")]
    Unsupported(String),
    /// `extip:` with something that is not an IP.
    #[error("--nat extip:{0}: not an IP address")]
    BadIp(String),
    /// Anything else.
    #[error("--nat {0}: expected none or extip:<IP>")]
    Unknown(String),
}

impl FromStr for NatResolver {
    type Err = NatParseError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let lower = s.to_ascii_lowercase();
        if lower == "none" {
            return Ok(Self::None);
        }
        if let Some(ip) = lower.strip_prefix("extip:") {
            return ip.parse().map(Self::ExternalIp).map_err(|_| NatParseError::BadIp(ip.into()));
        }
        if ["any", "upnp", "pmp", "natpmp", "publicip"].contains(&lower.as_str())
            || lower.starts_with("extaddr:")
            || lower.starts_with("stun:")
        {
            return Err(NatParseError::Unsupported(s.into()));
        }
        Err(NatParseError::Unknown(s.into()))
    }
}

impl fmt::Display for NatResolver {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::None => f.write_str("none"),
            Self::ExternalIp(ip) => write!(f, "extip:{ip}"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_none_and_extip_and_refuses_the_rest_typed() {
        assert_eq!("none".parse(), Ok(NatResolver::None));
        assert_eq!(
            "extip:203.0.113.7".parse::<NatResolver>().unwrap().external_ip(),
            Some("203.0.113.7".parse().unwrap())
        );
        assert_eq!(
            "extip:203.0.113.7".parse::<NatResolver>().unwrap().to_string(),
            "extip:203.0.113.7"
        );
        assert!(matches!("extip:nope".parse::<NatResolver>(), Err(NatParseError::BadIp(_))));
        assert!(matches!("upnp".parse::<NatResolver>(), Err(NatParseError::Unsupported(_))));
        assert!(matches!("bogus".parse::<NatResolver>(), Err(NatParseError::Unknown(_))));
    }
}
