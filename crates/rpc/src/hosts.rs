//! Who may talk to the public JSON-RPC endpoints, checked on each HTTP request before
//! JSON-RPC sees it, as geth checks it:
//! - [`VirtualHosts`] (`--http.vhosts`, default `localhost`): the `Host` header must name an
//!   allowed host (an IP address is always allowed; `*` allows all), which stops DNS-rebinding
//!   pages from reaching a local node; refused: 403 "invalid host specified".
//! - [`WsOrigins`] (`--ws.origins`, default `http://localhost` and this machine's name): a
//!   WebSocket handshake with an `Origin` header (what browsers send) must come from an allowed
//!   origin (`*`: any); a request without one (not a browser) passes; refused: 403.
//! - `--http.corsdomain` (none by default): the origins a browser page may call the HTTP
//!   endpoint from, answered by tower-http's CORS layer ([`cors_layer`]).

use jsonrpsee::server::{HttpBody, HttpResponse};
use tower_http::validate_request::ValidateRequest;

/// A list of allowed names as a flag gives it: comma-separated, `*` for any.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct AllowList {
    any: bool,
    entries: Vec<String>,
}

impl AllowList {
    /// Every name.
    pub fn any() -> Self {
        Self { any: true, entries: Vec::new() }
    }

    /// Whether it allows every name.
    pub fn allows_any(&self) -> bool {
        self.any
    }

    /// The names, lowercase (empty when it allows any).
    pub fn entries(&self) -> &[String] {
        &self.entries
    }
}

impl std::str::FromStr for AllowList {
    type Err = std::convert::Infallible;

    /// `a,b,c` (spaces around names ignored, empty names skipped); `*` among them allows all.
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let mut list = Self::default();
        for entry in s.split(',').map(str::trim).filter(|e| !e.is_empty()) {
            if entry == "*" {
                list.any = true;
            } else {
                list.entries.push(entry.to_ascii_lowercase());
            }
        }
        Ok(list)
    }
}

/// A 403 answer with `reason`.
fn forbidden(reason: &'static str) -> HttpResponse {
    http::Response::builder()
        .status(http::StatusCode::FORBIDDEN)
        .body(HttpBody::from(reason))
        .expect("static response parts")
}

/// `--http.vhosts`: the hosts a request's `Host` header may name (geth's `virtualHostHandler`).
#[derive(Debug, Clone)]
pub struct VirtualHosts {
    allowed: AllowList,
}

impl VirtualHosts {
    /// Requests naming a host of `allowed` (or an IP address) pass.
    pub fn new(allowed: AllowList) -> Self {
        Self { allowed }
    }

    /// Whether a request whose `Host` header is `host` (`None`: none) passes.
    pub fn allows(&self, host: Option<&str>) -> bool {
        if self.allowed.any {
            return true;
        }
        // No Host header (HTTP/1.0 or a hand-made request): not a browser page.
        let Some(host) = host else { return true };
        let name = strip_port(host);
        if name.trim_matches(['[', ']']).parse::<std::net::IpAddr>().is_ok() {
            return true;
        }
        let name = name.to_ascii_lowercase();
        self.allowed.entries.contains(&name)
    }
}

/// `host` without its `:port` (an IPv6 literal keeps its brackets).
fn strip_port(host: &str) -> &str {
    if let Some(end) = host.rfind(']') {
        return &host[..=end];
    }
    match host.rsplit_once(':') {
        Some((name, port)) if port.chars().all(|c| c.is_ascii_digit()) => name,
        _ => host,
    }
}

impl<B> ValidateRequest<B> for VirtualHosts {
    type ResponseBody = HttpBody;

    fn validate(&mut self, request: &mut http::Request<B>) -> Result<(), HttpResponse> {
        let host = request.headers().get(http::header::HOST).and_then(|h| h.to_str().ok());
        // HTTP/2 names the host in the URI instead.
        let host = host.or_else(|| request.uri().host());
        if self.allows(host) {
            Ok(())
        } else {
            Err(forbidden("invalid host specified\n"))
        }
    }
}

/// `--ws.origins`: the origins a WebSocket handshake may come from (geth's
/// `wsHandshakeValidator`).
#[derive(Debug, Clone)]
pub struct WsOrigins {
    allowed: AllowList,
}

impl WsOrigins {
    /// Handshakes from an origin of `allowed` pass; an empty list allows geth's default:
    /// `http://localhost` and `http://<this machine's name>`.
    pub fn new(mut allowed: AllowList) -> Self {
        if !allowed.any && allowed.entries.is_empty() {
            allowed.entries.push("http://localhost".into());
            if let Some(name) = hostname() {
                allowed.entries.push(format!("http://{}", name.to_ascii_lowercase()));
            }
        }
        Self { allowed }
    }

    /// Whether a handshake whose `Origin` header is `origin` (`None`: none) passes. An allowed
    /// entry matches an origin of its scheme (any when it names none), its host, and its port
    /// (any when it names none).
    pub fn allows(&self, origin: Option<&str>) -> bool {
        let Some(origin) = origin else { return true };
        if self.allowed.any {
            return true;
        }
        let origin = origin.to_ascii_lowercase();
        let origin = Origin::parse(&origin);
        self.allowed.entries.iter().any(|rule| {
            let rule = Origin::parse(rule);
            rule.scheme.is_none_or(|s| Some(s) == origin.scheme)
                && rule.host == origin.host
                && rule.port.is_none_or(|p| Some(p) == origin.port)
        })
    }
}

/// An origin's parts: `scheme://host:port`.
#[derive(Debug, PartialEq, Eq)]
struct Origin<'a> {
    scheme: Option<&'a str>,
    host: &'a str,
    port: Option<&'a str>,
}

impl<'a> Origin<'a> {
    fn parse(s: &'a str) -> Self {
        let (scheme, rest) = match s.split_once("://") {
            Some((scheme, rest)) => (Some(scheme), rest),
            None => (None, s),
        };
        let rest = rest.split('/').next().unwrap_or(rest);
        let host = strip_port(rest);
        let port = rest.get(host.len()..).and_then(|p| p.strip_prefix(':'));
        Self { scheme, host, port }
    }
}

/// This machine's name, as `/etc/hostname` or the kernel has it.
fn hostname() -> Option<String> {
    ["/proc/sys/kernel/hostname", "/etc/hostname"]
        .iter()
        .find_map(|p| std::fs::read_to_string(p).ok())
        .map(|s| s.trim().to_string())
        .filter(|s| !s.is_empty())
}

impl<B> ValidateRequest<B> for WsOrigins {
    type ResponseBody = HttpBody;

    fn validate(&mut self, request: &mut http::Request<B>) -> Result<(), HttpResponse> {
        let origin = request.headers().get(http::header::ORIGIN).map(|h| h.to_str().unwrap_or("?"));
        if self.allows(origin) {
            Ok(())
        } else {
            tracing::warn!(target: "rpc::ws", origin, "rejected WebSocket connection");
            Err(forbidden("origin not allowed\n"))
        }
    }
}

/// `--http.corsdomain`: CORS answers for the origins of `allowed` (`*`: any), or `None` when
/// it is empty (no CORS headers: browsers keep other origins' pages out, geth's default).
pub fn cors_layer(allowed: &AllowList) -> Option<tower_http::cors::CorsLayer> {
    use tower_http::cors::{AllowOrigin, Any, CorsLayer};
    let origins = if allowed.any {
        AllowOrigin::any()
    } else if allowed.entries.is_empty() {
        return None;
    } else {
        let values: Vec<http::HeaderValue> =
            allowed.entries.iter().filter_map(|o| http::HeaderValue::from_str(o).ok()).collect();
        AllowOrigin::list(values)
    };
    Some(
        CorsLayer::new()
            .allow_origin(origins)
            .allow_methods([http::Method::POST, http::Method::GET, http::Method::OPTIONS])
            .allow_headers(Any)
            .max_age(std::time::Duration::from_secs(600)),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn virtual_hosts_are_checked_as_geth_checks_them() {
        let hosts = VirtualHosts::new("localhost".parse().unwrap());
        assert!(hosts.allows(Some("localhost:8545")));
        assert!(hosts.allows(Some("LOCALHOST")));
        assert!(hosts.allows(Some("127.0.0.1:8545")));
        assert!(hosts.allows(Some("[::1]:8545")));
        assert!(hosts.allows(Some("10.1.2.3")));
        assert!(hosts.allows(None));
        assert!(!hosts.allows(Some("evil.example:8545")));
        assert!(!hosts.allows(Some("localhost.evil.example")));
        let any = VirtualHosts::new("*".parse().unwrap());
        assert!(any.allows(Some("evil.example")));
        let named = VirtualHosts::new("node.example, other".parse().unwrap());
        assert!(named.allows(Some("node.example:80")));
        assert!(!named.allows(Some("localhost")));
    }

    #[test]
    fn websocket_origins_are_checked_as_geth_checks_them() {
        let default = WsOrigins::new(AllowList::default());
        assert!(default.allows(None), "not a browser");
        assert!(default.allows(Some("http://localhost")));
        assert!(default.allows(Some("http://localhost:3000")), "a rule without a port");
        assert!(!default.allows(Some("https://localhost")), "the rule's scheme");
        assert!(!default.allows(Some("http://evil.example")));
        let listed = WsOrigins::new("https://app.example:8443,dapp.example".parse().unwrap());
        assert!(listed.allows(Some("https://app.example:8443")));
        assert!(!listed.allows(Some("https://app.example:9000")));
        assert!(listed.allows(Some("http://dapp.example")), "a rule without a scheme");
        assert!(listed.allows(Some("https://dapp.example:1")));
        assert!(!listed.allows(Some("http://localhost")), "the default is replaced");
        assert!(WsOrigins::new(AllowList::any()).allows(Some("http://evil.example")));
    }

    #[test]
    fn cors_is_off_unless_asked_for() {
        assert!(cors_layer(&AllowList::default()).is_none());
        assert!(cors_layer(&"*".parse().unwrap()).is_some());
        assert!(cors_layer(&"https://app.example".parse().unwrap()).is_some());
    }
}
