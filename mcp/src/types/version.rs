//! Protocol version strings.
//!
//! Versions up to and including [`LATEST`] (2025-11-25) negotiate once, with the
//! `initialize` handshake. From [`STATELESS`] (2026-07-28) on there is no handshake: every
//! request names its version in `_meta["io.modelcontextprotocol/protocolVersion"]` and the
//! server advertises what it supports through `server/discover`.

/// Protocol revision 2024-11-05 (handshake era, HTTP+SSE transport).
pub const V2024_11_05: &str = "2024-11-05";
/// Protocol revision 2025-03-26 (handshake era, Streamable HTTP).
pub const V2025_03_26: &str = "2025-03-26";
/// Protocol revision 2025-06-18 (handshake era).
pub const V2025_06_18: &str = "2025-06-18";
/// Protocol revision 2025-11-25 (handshake era; the last one with `initialize`).
pub const V2025_11_25: &str = "2025-11-25";
/// Protocol revision 2026-07-28 (stateless: per-request `_meta`, `server/discover`).
pub const V2026_07_28: &str = "2026-07-28";

/// The latest handshake-era revision: what an `initialize` request should offer.
pub const LATEST: &str = V2025_11_25;

/// The stateless revision: what a request's `_meta` protocol version should name.
pub const STATELESS: &str = V2026_07_28;

/// Every revision these types cover, oldest first.
pub const SUPPORTED: &[&str] = &[
    V2024_11_05,
    V2025_03_26,
    V2025_06_18,
    V2025_11_25,
    V2026_07_28,
];

/// The revisions negotiated with the `initialize` handshake, oldest first.
pub const HANDSHAKE: &[&str] = &[V2024_11_05, V2025_03_26, V2025_06_18, V2025_11_25];

/// The stateless revisions (no handshake), oldest first.
pub const STATELESS_VERSIONS: &[&str] = &[V2026_07_28];

/// The version a server assumes on Streamable HTTP when a request carries no
/// `MCP-Protocol-Version` header and nothing else tells it the version.
pub const HTTP_DEFAULT: &str = V2025_03_26;

/// Whether `version` is one of [`SUPPORTED`].
pub fn is_supported(version: &str) -> bool {
    SUPPORTED.contains(&version)
}

/// Whether `version` is a known handshake-era revision (negotiated with `initialize`).
pub fn is_handshake(version: &str) -> bool {
    HANDSHAKE.contains(&version)
}

/// Whether `version` is a known stateless revision (per-request `_meta`, no `initialize`).
pub fn is_stateless(version: &str) -> bool {
    STATELESS_VERSIONS.contains(&version)
}
