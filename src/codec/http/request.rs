//! What a handler sees of the HTTP request its call came in: the principal of its bearer
//! token, its header fields, and what a layer in front of the server attached to it. An
//! adapter records one per call; `sansrpc_futures::RequestContext::http` reads it. Shared
//! by every protocol served over HTTP (JSON-RPC over POST, MCP's Streamable HTTP).

use alloc::string::String;
use alloc::vec::Vec;

#[cfg(feature = "std")]
pub use super::extensions::Extensions;
use super::Fields;

/// Who a validated bearer token belongs to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Principal {
    /// The token's subject (a user or client id), as the validator names it.
    pub subject: String,
    /// The scopes the token grants.
    pub scopes: Vec<String>,
}

impl Principal {
    /// A principal `subject` with `scopes`.
    pub fn new(subject: impl Into<String>, scopes: Vec<String>) -> Self {
        Principal {
            subject: subject.into(),
            scopes,
        }
    }

    /// True when the token grants `scope`.
    pub fn has_scope(&self, scope: &str) -> bool {
        self.scopes.iter().any(|s| s == scope)
    }
}

/// The HTTP request a call came in, as an adapter hands it to the call's handler (the
/// tokio adapter records it per call; `sansrpc_futures::RequestContext::http` reads it).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct HttpRequest {
    /// The principal of its bearer token, when the server checks tokens.
    pub principal: Option<Principal>,
    /// Its header fields, names in lower case, in the order sent (the `Authorization`
    /// field is left out).
    pub headers: Headers,
    /// What a layer in front of the server attached to the request (the tokio adapter's
    /// tower services: its `http::Extensions`); empty otherwise.
    #[cfg(feature = "std")]
    pub extensions: Extensions,
}

impl HttpRequest {
    /// The first value of header `name` (any case).
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers.get(name)
    }
}

/// The header fields a call's handler sees ([`HttpRequest::headers`]): names in lower case,
/// values as text, `Authorization` left out. Kept as the request head's [`Fields`] were
/// read (one buffer), not as a string per name and value.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Headers(Fields);

impl Headers {
    /// What the handlers see of a request head's `fields`: `Authorization` left out, names
    /// lowered in place, a value that is not UTF-8 replaced by its lossy conversion.
    pub fn from_fields(mut fields: Fields) -> Self {
        fields.make_text_without("authorization");
        Headers(fields)
    }

    /// The first value of header `name` (any case).
    pub fn get(&self, name: &str) -> Option<&str> {
        self.0.get(name).map(text)
    }

    /// Every field (name, value), in the order sent.
    pub fn iter(&self) -> impl Iterator<Item = (&str, &str)> + '_ {
        self.0.iter().map(|(n, v)| (n, text(v)))
    }

    /// How many fields there are.
    pub fn len(&self) -> usize {
        self.0.len()
    }

    /// True when there are none.
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
}

impl<'a> FromIterator<(&'a str, &'a str)> for Headers {
    /// Headers from (name, value) pairs, with the rules of [`Headers::from_fields`].
    fn from_iter<I: IntoIterator<Item = (&'a str, &'a str)>>(pairs: I) -> Self {
        let mut fields = Fields::new();
        for (name, value) in pairs {
            fields.push(name, value.as_bytes());
        }
        Headers::from_fields(fields)
    }
}

/// A value [`Headers::from_fields`] made text.
fn text(value: &[u8]) -> &str {
    core::str::from_utf8(value).unwrap_or_default()
}
