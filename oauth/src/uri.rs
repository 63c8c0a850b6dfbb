//! URLs the flow builds and compares: the canonical resource URI (RFC 8707, the MCP
//! specification's "Canonical Server URI"), the well-known metadata locations (RFC 9728
//! §3.1, RFC 8414 §3.1 and §5, OpenID Connect Discovery §4), and the comparisons the
//! specifications ask for (issuer identity, resource coverage, redirect endpoint).

use url::{Host, Url};

/// The protected-resource metadata suffix (RFC 9728 §3.1).
pub const PROTECTED_RESOURCE: &str = "/.well-known/oauth-protected-resource";
/// The authorization-server metadata suffix (RFC 8414 §3.1).
pub const AUTHORIZATION_SERVER: &str = "/.well-known/oauth-authorization-server";
/// The OpenID Connect discovery suffix.
pub const OPENID_CONFIGURATION: &str = "/.well-known/openid-configuration";

/// Parses an absolute `http`/`https` URL with a host; the reason when it is not one.
pub fn parse_http(url: &str) -> Result<Url, String> {
    let parsed = Url::parse(url).map_err(|e| format!("`{url}` is not a URL: {e}"))?;
    if !matches!(parsed.scheme(), "http" | "https") {
        return Err(format!("`{url}` is not an http or https URL"));
    }
    if parsed.host().is_none() {
        return Err(format!("`{url}` has no host"));
    }
    Ok(parsed)
}

/// The canonical URI of the resource at `url`: scheme and host in lowercase, no fragment,
/// no default port, and no lone trailing `/` (`https://MCP.example.com/` →
/// `https://mcp.example.com`); a path and query are kept as they are.
pub fn canonical_resource(url: &str) -> Result<String, String> {
    let mut parsed = parse_http(url)?;
    parsed.set_fragment(None);
    let mut s = parsed.to_string();
    if parsed.path() == "/" && parsed.query().is_none() {
        s.pop();
    }
    Ok(s)
}

/// `scheme://host[:port]` of `url` (the default port left out).
fn origin(url: &Url) -> String {
    url.origin().ascii_serialization()
}

/// `url`'s path without a trailing `/` (empty for the root).
fn trimmed_path(url: &Url) -> &str {
    url.path().trim_end_matches('/')
}

/// Where the protected-resource metadata of `resource` may be, in the order to try them
/// (RFC 9728 §3.1; MCP 2025-11-25 "Protected Resource Metadata Discovery Requirements"):
/// the path-aware location (`/.well-known/oauth-protected-resource/public/mcp`, when the
/// resource has a path), then the root one.
pub fn resource_metadata_urls(resource: &Url) -> Vec<String> {
    let origin = origin(resource);
    let path = trimmed_path(resource);
    let mut urls = Vec::with_capacity(2);
    if !path.is_empty() {
        let mut url = format!("{origin}{PROTECTED_RESOURCE}{path}");
        if let Some(query) = resource.query() {
            url.push('?');
            url.push_str(query);
        }
        urls.push(url);
    }
    urls.push(format!("{origin}{PROTECTED_RESOURCE}"));
    urls
}

/// Where the metadata of the authorization server `issuer` may be, in the order the MCP
/// specification (2025-11-25 and 2026-07-28) gives: for an issuer with a path, OAuth with
/// the path inserted, OpenID Connect with the path inserted, OpenID Connect with the path
/// appended; for one without, OAuth then OpenID Connect at the root.
pub fn authorization_server_metadata_urls(issuer: &Url) -> Vec<String> {
    let origin = origin(issuer);
    let path = trimmed_path(issuer);
    if path.is_empty() {
        vec![
            format!("{origin}{AUTHORIZATION_SERVER}"),
            format!("{origin}{OPENID_CONFIGURATION}"),
        ]
    } else {
        vec![
            format!("{origin}{AUTHORIZATION_SERVER}{path}"),
            format!("{origin}{OPENID_CONFIGURATION}{path}"),
            format!("{origin}{path}{OPENID_CONFIGURATION}"),
        ]
    }
}

/// Whether two issuer identifiers are the same (RFC 8414 §3.3: simple string comparison),
/// with one tolerance: a root issuer with and without its trailing `/`
/// (`https://as.example` and `https://as.example/`), which URL libraries add or drop.
pub fn same_issuer(a: &str, b: &str) -> bool {
    if a == b {
        return true;
    }
    let (short, long) = if a.len() < b.len() { (a, b) } else { (b, a) };
    long.len() == short.len() + 1
        && long.ends_with('/')
        && long.starts_with(short)
        && Url::parse(short).is_ok_and(|u| u.path() == "/" && origin(&u) == short)
}

/// Whether the resource identifier `configured` (from protected-resource metadata) covers
/// the canonical URI `requested`: same scheme, host and port (any case), and `configured`'s
/// path equal to `requested`'s or a parent of it at a `/` boundary. This is how the MCP
/// SDKs read RFC 9728 §3.3 (a server at `/mcp` may name its origin as the resource).
pub fn resource_covers(configured: &str, requested: &str) -> bool {
    let (Ok(configured), Ok(requested)) = (Url::parse(configured), Url::parse(requested)) else {
        return false;
    };
    if configured.scheme() != requested.scheme()
        || configured.host() != requested.host()
        || configured.port_or_known_default() != requested.port_or_known_default()
    {
        return false;
    }
    let parent = trimmed_path(&configured);
    let child = trimmed_path(&requested);
    child == parent || (child.starts_with(parent) && child.as_bytes()[parent.len()] == b'/')
}

/// Whether `url`'s host is a loopback one: `localhost`, `127.0.0.0/8` or `::1`.
pub fn is_loopback(url: &Url) -> bool {
    match url.host() {
        Some(Host::Domain(d)) => d.eq_ignore_ascii_case("localhost"),
        Some(Host::Ipv4(ip)) => ip.is_loopback(),
        Some(Host::Ipv6(ip)) => ip.is_loopback(),
        None => false,
    }
}

/// Whether `url` is `https`, or `http` to a loopback host, as OAuth 2.1 §1.5 and RFC 8252
/// §7.3 allow.
pub fn secure_or_loopback(url: &Url) -> bool {
    url.scheme() == "https" || url.scheme() == "http" && is_loopback(url)
}

/// Whether `a` and `b` name the same endpoint: scheme, host, port and path (the query and
/// fragment aside), as a redirect is matched against the redirect URI.
pub fn same_endpoint(a: &Url, b: &Url) -> bool {
    a.scheme() == b.scheme()
        && a.host() == b.host()
        && a.port_or_known_default() == b.port_or_known_default()
        && a.path() == b.path()
}

/// Parameters of a redirect or authorization URL whose values are secrets or bind one,
/// left out of messages.
const SECRET_PARAMETERS: [&str; 5] = ["code", "state", "access_token", "id_token", "refresh_token"];

/// `url` (a URL or not) for a message: the values of its `code`, `state` and token
/// parameters, in the query or the fragment, replaced with `<redacted>`
/// (`…/callback?code=<redacted>&state=<redacted>`), the rest as it is.
pub fn redacted(url: &str) -> String {
    let Some(start) = url.find(['?', '#']) else {
        return url.to_owned();
    };
    let mut out = String::with_capacity(url.len());
    out.push_str(&url[..start]);
    let mut rest = &url[start..];
    while let Some(separator) = rest.chars().next() {
        out.push(separator);
        rest = &rest[separator.len_utf8()..];
        let end = rest.find(['&', '#', ';']).unwrap_or(rest.len());
        let pair = &rest[..end];
        match pair.split_once('=') {
            Some((name, _)) if SECRET_PARAMETERS.contains(&name) => {
                out.push_str(name);
                out.push_str("=<redacted>");
            }
            _ => out.push_str(pair),
        }
        rest = &rest[end..];
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn redacted_urls() {
        assert_eq!(
            redacted("http://127.0.0.1:9/cb?code=abc&state=xyz&iss=https%3A%2F%2Fas"),
            "http://127.0.0.1:9/cb?code=<redacted>&state=<redacted>&iss=https%3A%2F%2Fas"
        );
        assert_eq!(
            redacted("cb#access_token=t;state=s&x"),
            "cb#access_token=<redacted>;state=<redacted>&x"
        );
        assert_eq!(redacted("https://h.example/p"), "https://h.example/p");
        assert_eq!(redacted("?codex=1&code"), "?codex=1&code");
    }

    #[test]
    fn canonical_resources() {
        let c = |s| canonical_resource(s).unwrap();
        assert_eq!(c("https://MCP.Example.com/"), "https://mcp.example.com");
        assert_eq!(c("HTTPS://mcp.example.com"), "https://mcp.example.com");
        assert_eq!(
            c("https://mcp.example.com:443/mcp"),
            "https://mcp.example.com/mcp"
        );
        assert_eq!(
            c("https://mcp.example.com:8443"),
            "https://mcp.example.com:8443"
        );
        assert_eq!(
            c("https://mcp.example.com/server/mcp#frag"),
            "https://mcp.example.com/server/mcp"
        );
        assert!(canonical_resource("mcp.example.com").is_err());
        assert!(canonical_resource("ftp://mcp.example.com").is_err());
    }

    #[test]
    fn protected_resource_locations() {
        let u = |s| Url::parse(s).unwrap();
        assert_eq!(
            resource_metadata_urls(&u("https://example.com/public/mcp")),
            [
                "https://example.com/.well-known/oauth-protected-resource/public/mcp",
                "https://example.com/.well-known/oauth-protected-resource",
            ]
        );
        assert_eq!(
            resource_metadata_urls(&u("https://example.com:8443/")),
            ["https://example.com:8443/.well-known/oauth-protected-resource"]
        );
    }

    #[test]
    fn authorization_server_locations_in_the_specified_order() {
        let u = |s| Url::parse(s).unwrap();
        assert_eq!(
            authorization_server_metadata_urls(&u("https://auth.example.com/tenant1")),
            [
                "https://auth.example.com/.well-known/oauth-authorization-server/tenant1",
                "https://auth.example.com/.well-known/openid-configuration/tenant1",
                "https://auth.example.com/tenant1/.well-known/openid-configuration",
            ]
        );
        assert_eq!(
            authorization_server_metadata_urls(&u("https://auth.example.com")),
            [
                "https://auth.example.com/.well-known/oauth-authorization-server",
                "https://auth.example.com/.well-known/openid-configuration",
            ]
        );
    }

    #[test]
    fn issuers_resources_and_endpoints() {
        assert!(same_issuer("https://as.example", "https://as.example/"));
        assert!(!same_issuer(
            "https://as.example/t",
            "https://as.example/t/"
        ));
        assert!(!same_issuer(
            "https://attacker.example",
            "https://honest.example"
        ));
        assert!(!same_issuer("https://AS.example", "https://as.example"));

        assert!(resource_covers(
            "https://h.example",
            "https://h.example/mcp"
        ));
        assert!(resource_covers(
            "https://H.example/mcp/",
            "https://h.example/mcp"
        ));
        assert!(!resource_covers(
            "https://h.example/api",
            "https://h.example/api123"
        ));
        assert!(!resource_covers(
            "https://other.example",
            "https://h.example/mcp"
        ));
        assert!(!resource_covers(
            "http://h.example",
            "https://h.example/mcp"
        ));

        let u = |s| Url::parse(s).unwrap();
        assert!(secure_or_loopback(&u("http://127.0.0.1:9/cb")));
        assert!(secure_or_loopback(&u("http://[::1]/cb")));
        assert!(!secure_or_loopback(&u("http://as.example/token")));
        assert!(same_endpoint(
            &u("http://127.0.0.1:9/cb?code=x"),
            &u("http://127.0.0.1:9/cb")
        ));
        assert!(!same_endpoint(
            &u("http://127.0.0.1:9/cb2"),
            &u("http://127.0.0.1:9/cb")
        ));
    }
}
