//! Which `Host` names and `Origin`s a server accepts: one rule for every HTTP server of
//! sansrpc (MCP's Streamable HTTP, the WebSocket handshake, CORS).

use alloc::string::String;
use alloc::vec::Vec;

/// Which `Host` names a server accepts (DNS-rebinding protection).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
#[non_exhaustive]
pub enum Hosts {
    /// `localhost`, `127.0.0.1` and `[::1]`, any port: the default, right for a server
    /// bound to a loopback address (a page on another site that resolves its own name to
    /// 127.0.0.1 still sends its own name as `Host`).
    #[default]
    Loopback,
    /// These names (with or without a port; compared ignoring ASCII case), and the
    /// loopback ones.
    List(Vec<String>),
    /// Any host (a server behind a proxy that checks it, or on a public address).
    Any,
}

/// Which `Origin`s a server accepts. Browsers send one; a request without one (not from a
/// browser) is not judged by it.
///
/// The default, [`Origins::SameAsHosts`], protects a local server from the pages of other
/// sites (DNS rebinding, cross-site requests and WebSocket hijacking): only a page served
/// from a host the server accepts may call it.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
#[non_exhaustive]
pub enum Origins {
    /// An origin whose host is one [`Hosts`] accepts (`http://localhost:3000` for
    /// [`Hosts::Loopback`]): the default.
    #[default]
    SameAsHosts,
    /// These exact origins (`https://app.example.com`: scheme and host, and port when not
    /// the default; compared ignoring ASCII case).
    List(Vec<String>),
    /// Any origin.
    Any,
}

/// The host part of a `Host` value or an origin's authority: without the port, and
/// without the brackets of an IPv6 literal.
fn host_name(authority: &str) -> &str {
    let authority = authority.trim();
    if let Some(rest) = authority.strip_prefix('[') {
        return rest.split(']').next().unwrap_or_default();
    }
    match authority.rsplit_once(':') {
        Some((host, port)) if port.bytes().all(|b| b.is_ascii_digit()) => host,
        _ => authority,
    }
}

fn loopback(host: &str) -> bool {
    host.eq_ignore_ascii_case("localhost") || host == "127.0.0.1" || host == "::1"
}

impl Hosts {
    /// True when a request with `Host: host` may be served.
    pub fn allows(&self, host: &str) -> bool {
        let name = host_name(host);
        match self {
            Hosts::Any => true,
            Hosts::Loopback => loopback(name),
            Hosts::List(list) => {
                loopback(name)
                    || list.iter().any(|h| {
                        h.eq_ignore_ascii_case(host.trim()) || h.eq_ignore_ascii_case(name)
                    })
            }
        }
    }
}

impl Origins {
    /// True when a request with `Origin: origin` may be served (`hosts` for
    /// [`Origins::SameAsHosts`]).
    pub fn allows(&self, origin: &str, hosts: &Hosts) -> bool {
        let origin = origin.trim();
        match self {
            Origins::Any => true,
            Origins::List(list) => list.iter().any(|o| o.eq_ignore_ascii_case(origin)),
            Origins::SameAsHosts => {
                let authority = origin
                    .strip_prefix("http://")
                    .or_else(|| origin.strip_prefix("https://"));
                authority.is_some_and(|a| hosts.allows(a.trim_end_matches('/')))
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use alloc::vec;

    #[test]
    fn hosts_and_origins() {
        let hosts = Hosts::Loopback;
        for ok in [
            "localhost",
            "localhost:3000",
            "127.0.0.1:80",
            "[::1]:9",
            "LOCALHOST",
        ] {
            assert!(hosts.allows(ok), "{ok}");
        }
        for no in ["evil.example.com", "127.0.0.1.evil.com", "evil.com:127"] {
            assert!(!hosts.allows(no), "{no}");
        }
        let origins = Origins::default();
        assert_eq!(origins, Origins::SameAsHosts);
        assert!(origins.allows("http://127.0.0.1:3000", &hosts));
        assert!(origins.allows("https://localhost", &hosts));
        assert!(!origins.allows("http://evil.example.com", &hosts));
        assert!(!origins.allows("null", &hosts));
        let listed = Origins::List(vec!["https://app.example".into()]);
        assert!(listed.allows(" https://APP.example ", &hosts));
        assert!(!listed.allows("http://localhost:3000", &hosts));
        assert!(Origins::Any.allows("null", &hosts));
    }
}
