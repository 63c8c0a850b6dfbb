//! Protocol versions, service parameters and well-known names (§3.6, §3.2.6, §8.2, §14).

use crate::{A2aError, ErrorKind};

/// The protocol version this crate speaks: `1.0`.
pub const PROTOCOL_VERSION: &str = "1.0";
/// The version a request without an `A2A-Version` header (or with an empty one) asks for
/// (§3.6.2): `0.3`, which this crate does not serve.
pub const LEGACY_PROTOCOL_VERSION: &str = "0.3";
/// `A2A-Version`: the request header (or query parameter, §3.6.1) naming the version the
/// client speaks.
pub const VERSION_HEADER: &str = "A2A-Version";
/// `A2A-Extensions`: the request header listing, comma-separated, the extension URIs the
/// client uses.
pub const EXTENSIONS_HEADER: &str = "A2A-Extensions";
/// Where an agent serves its card: `/.well-known/agent-card.json`.
pub const AGENT_CARD_PATH: &str = "/.well-known/agent-card.json";
/// `JSONRPC`: the [`AgentInterface::protocol_binding`](crate::types::AgentInterface) of the
/// JSON-RPC binding.
pub const JSONRPC_BINDING: &str = "JSONRPC";
/// `HTTP+JSON`: the REST binding's name.
pub const HTTP_JSON_BINDING: &str = "HTTP+JSON";
/// `GRPC`: the gRPC binding's name.
pub const GRPC_BINDING: &str = "GRPC";
/// `application/a2a+json`: the media type of the HTTP+JSON binding's payloads (the
/// JSON-RPC binding uses `application/json`).
pub const A2A_MEDIA_TYPE: &str = "application/a2a+json";

/// Checks the `A2A-Version` a request carries (`None` when it has no such header): `Ok`
/// for 1.0, `VersionNotSupportedError` for anything else.
///
/// Only `Major.Minor` counts (§3.6: a patch number must not be considered, so `1.0.2` is
/// 1.0); an absent or empty value is 0.3 (§3.6.2).
///
/// ```
/// use sansrpc_a2a::version::check_version;
///
/// assert!(check_version(Some("1.0")).is_ok());
/// assert!(check_version(Some(" 1.0.3 ")).is_ok());
/// assert_eq!(check_version(None).unwrap_err().code(), -32009);
/// assert!(check_version(Some("1.1")).is_err());
/// ```
pub fn check_version(header: Option<&str>) -> Result<(), A2aError> {
    let asked = header.map(str::trim).filter(|v| !v.is_empty());
    let supported = asked.is_some_and(|v| {
        let mut numbers = v.split('.').map(|n| n.parse::<u32>().ok());
        matches!(
            (
                numbers.next(),
                numbers.next(),
                numbers.next(),
                numbers.next()
            ),
            (Some(Some(1)), Some(Some(0)), None | Some(Some(_)), None)
        )
    });
    if supported {
        return Ok(());
    }
    let asked_for = asked.unwrap_or(LEGACY_PROTOCOL_VERSION);
    let mut shown: String = asked_for.chars().take(32).collect();
    if asked.is_none() {
        shown.push_str(" (no A2A-Version header)");
    }
    Err(A2aError::new(
        ErrorKind::VersionNotSupported,
        format!("A2A version {shown} is not supported: this agent speaks {PROTOCOL_VERSION}"),
    )
    .with_metadata(
        "requestedVersion",
        asked_for.chars().take(32).collect::<String>(),
    )
    .with_metadata("supportedVersions", PROTOCOL_VERSION))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_major_minor_one_zero_is_served() {
        for ok in ["1.0", "1.0.0", "1.0.17", "\t1.0 "] {
            assert!(check_version(Some(ok)).is_ok(), "{ok}");
        }
        for bad in [
            None,
            Some(""),
            Some("  "),
            Some("0.3"),
            Some("1"),
            Some("1.1"),
            Some("2.0"),
            Some("1.0.0.0"),
            Some("1.0.x"),
            Some("v1.0"),
        ] {
            let e = check_version(bad).unwrap_err();
            assert_eq!(e.kind(), ErrorKind::VersionNotSupported, "{bad:?}");
        }
        assert_eq!(
            check_version(None).unwrap_err().metadata()["requestedVersion"],
            "0.3"
        );
    }
}
