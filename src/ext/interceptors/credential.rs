//! Where a credential travels inside a call: a reserved `"$auth"` member of the params.

use alloc::borrow::Cow;
use alloc::boxed::Box;
use alloc::string::String;
use alloc::vec::Vec;

use crate::json::{self, Scanner, Span};
use crate::raw::RawValue;
use crate::Limits;

/// The params member that carries a caller's credential.
pub const CREDENTIAL_MEMBER: &str = "$auth";

/// The params member that carries the call's own params when they are not a non-empty
/// object (by position, absent-but-wrapped, or `{}`).
pub const PARAMS_MEMBER: &str = "$params";

/// Adds `token` to a call's params, the way [`take_credential`] (and so
/// [`AuthLayer`](super::AuthLayer)) reads it back.
///
/// - no params: `{"$auth": token}`;
/// - a non-empty object: `{"$auth": token, ...its members}`;
/// - anything else (an array, `{}`): `{"$auth": token, "$params": params}`.
///
/// The round trip is exact: [`take_credential`] gives back the params as they were, byte
/// for byte for positional params, member for member for named ones.
pub fn attach_credential(params: Option<&RawValue>, token: &str) -> Box<RawValue> {
    let extra = params.map_or(0, |p| p.get().len());
    let mut out = Vec::with_capacity(token.len() + extra + 24);
    out.extend_from_slice(b"{\"$auth\":");
    json::write_str(&mut out, token);
    if let Some(p) = params {
        let text = p.get().trim();
        match non_empty_object_body(text) {
            Some(rest) => {
                out.push(b',');
                out.extend_from_slice(rest.as_bytes());
            }
            None => {
                out.extend_from_slice(b",\"$params\":");
                out.extend_from_slice(text.as_bytes());
                out.push(b'}');
            }
        }
    } else {
        out.push(b'}');
    }
    // Built from a JSON string literal and a validated value, so it is valid JSON and UTF-8.
    let text = String::from_utf8(out).unwrap_or_default();
    RawValue::boxed_from_validated(text.into_boxed_str())
}

/// For a non-empty object, the text after its opening brace (closing brace included).
fn non_empty_object_body(text: &str) -> Option<&str> {
    let rest = text.strip_prefix('{')?;
    (!rest.trim_start().starts_with('}')).then_some(rest)
}

/// A call's params split into the credential and the params the handler should see.
#[derive(Debug)]
pub struct Credential<'a> {
    /// The `"$auth"` string, unescaped (borrowed when it has no escapes); `None` when
    /// absent or not a string.
    pub token: Option<Cow<'a, str>>,
    /// The params without the credential: the `"$params"` member when there is one, the
    /// remaining members otherwise (`None` when none remain).
    pub params: Option<Cow<'a, RawValue>>,
    /// True when the params carried a `"$auth"` member at all.
    pub present: bool,
}

/// Splits the credential out of `params` (see [`attach_credential`] for the layout).
///
/// Params that are not an object, or an object without `"$auth"`, come back unchanged
/// with no token. Every `"$auth"` member is removed; the first one that is a string is the
/// token. Never fails: the params were validated when they arrived.
pub fn take_credential(params: Option<&RawValue>) -> Credential<'_> {
    let unchanged = |token| Credential {
        token,
        params: params.map(Cow::Borrowed),
        present: false,
    };
    let Some(p) = params else {
        return unchanged(None);
    };
    let text = p.get();
    let mut s = Scanner::new(text.as_bytes());
    if s.peek_ws() != Some(b'{') {
        return unchanged(None);
    }
    s.pos += 1;
    if s.peek_ws() == Some(b'}') {
        return unchanged(None);
    }
    let mut token = None;
    let mut present = false;
    let mut inner: Option<Span> = None;
    let mut kept: Vec<Span> = Vec::new();
    loop {
        s.peek_ws();
        let member_start = s.pos;
        let Ok(key) = s.key() else {
            return unchanged(None);
        };
        let Ok(value) = s.value(1, Limits::MAX_DEPTH_CAP) else {
            return unchanged(None);
        };
        let name = key.span.of(text);
        if json::token_eq(name, key.escaped, CREDENTIAL_MEMBER) {
            present = true;
            if token.is_none() {
                token = string_value(value.of(text));
            }
        } else if json::token_eq(name, key.escaped, PARAMS_MEMBER) {
            inner = Some(value);
        } else {
            kept.push(Span {
                start: member_start,
                end: value.end,
            });
        }
        match s.peek_ws() {
            Some(b',') => s.pos += 1,
            Some(b'}') => break,
            _ => return unchanged(None),
        }
    }
    if !present {
        return unchanged(None);
    }
    let params = match inner {
        Some(v) => Some(Cow::Borrowed(RawValue::from_validated(v.of(text)))),
        None if kept.is_empty() => None,
        None => {
            let mut obj = String::with_capacity(text.len());
            obj.push('{');
            for (i, span) in kept.iter().enumerate() {
                if i > 0 {
                    obj.push(',');
                }
                obj.push_str(span.of(text));
            }
            obj.push('}');
            Some(Cow::Owned(RawValue::boxed_from_validated(
                obj.into_boxed_str(),
            )))
        }
    };
    Credential {
        token,
        params,
        present,
    }
}

/// The contents of a JSON string value, unescaped; `None` for any other value.
fn string_value(value: &str) -> Option<Cow<'_, str>> {
    let inner = value.strip_prefix('"')?.strip_suffix('"')?;
    if inner.contains('\\') {
        Some(Cow::Owned(json::Unescape::new(inner).collect()))
    } else {
        Some(Cow::Borrowed(inner))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn raw(s: &str) -> &RawValue {
        RawValue::from_json(s).unwrap()
    }

    fn round_trip(params: Option<&str>, token: &str) {
        let attached = attach_credential(params.map(raw), token);
        let taken = take_credential(Some(&attached));
        assert!(taken.present);
        assert_eq!(taken.token.as_deref(), Some(token));
        assert_eq!(taken.params.as_deref().map(RawValue::get), params);
    }

    #[test]
    fn the_credential_round_trips_with_every_params_shape() {
        round_trip(None, "t0k\"en\\");
        round_trip(Some("[1,2,{\"a\":1e3}]"), "x");
        round_trip(Some("{}"), "x");
        round_trip(Some("\"str\""), "x");
        round_trip(Some("{\"a\":1}"), "x");
        let attached = attach_credential(Some(raw(r#"{"a": 1, "b": [2]}"#)), "x");
        let taken = take_credential(Some(&attached));
        assert_eq!(taken.params.unwrap().get(), r#"{"a": 1,"b": [2]}"#);
    }

    #[test]
    fn params_without_a_credential_pass_unchanged() {
        for p in ["[1]", "{\"a\":1}", "{}", "{\"$params\":[1]}", "7"] {
            let taken = take_credential(Some(raw(p)));
            assert!(!taken.present);
            assert_eq!(taken.token, None);
            assert_eq!(taken.params.unwrap().get(), p);
        }
        assert!(take_credential(None).params.is_none());
    }

    #[test]
    fn a_non_string_credential_is_removed_but_gives_no_token() {
        let taken = take_credential(Some(raw(r#"{"$auth": 1, "a": 2}"#)));
        assert!(taken.present);
        assert_eq!(taken.token, None);
        assert_eq!(taken.params.unwrap().get(), r#"{"a": 2}"#);
    }
}
