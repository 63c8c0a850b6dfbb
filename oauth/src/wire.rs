//! The bodies the flow sends and reads: token and registration answers, OAuth error
//! objects, and the JSON documents, each parsed into what the flow uses or a reason.

use serde::Deserialize;
use serde_json::Value;

use crate::error::{Cause, ServerError};
use crate::http::{excerpt, HttpResponse};

/// A successful token answer (RFC 6749 §5.1).
#[derive(Debug, Deserialize)]
pub(crate) struct TokenAnswer {
    pub access_token: String,
    #[serde(default)]
    pub token_type: Option<String>,
    /// A number, or (from some servers) a string of digits.
    #[serde(default)]
    pub expires_in: Option<Value>,
    #[serde(default)]
    pub refresh_token: Option<String>,
    #[serde(default)]
    pub scope: Option<String>,
}

impl TokenAnswer {
    /// The answer in `body`, checked: a bearer token, an `expires_in` that is a count of
    /// seconds.
    pub(crate) fn parse(body: &[u8]) -> Result<(TokenAnswer, Option<u64>), Cause> {
        let answer: TokenAnswer = serde_json::from_slice(body)
            .map_err(|e| Cause::Invalid(format!("the token answer is not usable: {e}")))?;
        if answer.access_token.is_empty() {
            return Err(Cause::Invalid(
                "the token answer has an empty access_token".into(),
            ));
        }
        if let Some(kind) = &answer.token_type {
            if !kind.eq_ignore_ascii_case("bearer") {
                return Err(Cause::Invalid(format!(
                    "the token_type is `{kind}`; this client uses Bearer tokens only"
                )));
            }
        }
        let expires_in = match &answer.expires_in {
            None | Some(Value::Null) => None,
            Some(Value::Number(n)) => Some(n.as_u64().ok_or_else(|| {
                Cause::Invalid(format!("expires_in `{n}` is not a count of seconds"))
            })?),
            Some(Value::String(s)) => Some(s.trim().parse::<u64>().map_err(|_| {
                Cause::Invalid(format!("expires_in `{s}` is not a count of seconds"))
            })?),
            Some(other) => {
                return Err(Cause::Invalid(format!(
                    "expires_in `{other}` is not a count of seconds"
                )))
            }
        };
        Ok((answer, expires_in))
    }
}

/// A registration answer (RFC 7591 §3.2.1): what the flow uses of it.
#[derive(Debug, Deserialize)]
pub(crate) struct RegistrationAnswer {
    pub client_id: String,
    #[serde(default)]
    pub client_secret: Option<String>,
    #[serde(default)]
    pub token_endpoint_auth_method: Option<String>,
}

/// An OAuth error object, as the token and registration endpoints answer one.
#[derive(Debug, Deserialize)]
struct ErrorObject {
    error: String,
    #[serde(default)]
    error_description: Option<String>,
    #[serde(default)]
    error_uri: Option<String>,
}

/// Why `answer` is a failure: the server's OAuth error object when its body is one, else
/// its status and the start of its body.
pub(crate) fn failure(answer: &HttpResponse) -> Cause {
    match serde_json::from_slice::<ErrorObject>(&answer.body) {
        Ok(e) if !e.error.is_empty() => Cause::Server(ServerError {
            status: answer.status,
            error: e.error,
            error_description: e.error_description,
            error_uri: e.error_uri,
        }),
        _ => Cause::Status {
            status: answer.status,
            body: excerpt(&answer.body, 200),
        },
    }
}

/// `body` as the JSON document `T`, or why not (`what` names the document).
pub(crate) fn document<T: for<'de> Deserialize<'de>>(body: &[u8], what: &str) -> Result<T, Cause> {
    serde_json::from_slice(body).map_err(|e| Cause::Invalid(format!("{what} is not usable: {e}")))
}

/// `a` then the scopes of `b` not in it, space-separated (order kept, no repeats).
pub(crate) fn union_scopes(a: Option<&str>, b: Option<&str>) -> Option<String> {
    let mut out: Vec<&str> = Vec::new();
    for scope in a.into_iter().chain(b).flat_map(str::split_ascii_whitespace) {
        if !out.contains(&scope) {
            out.push(scope);
        }
    }
    (!out.is_empty()).then(|| out.join(" "))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scopes_union_in_order() {
        assert_eq!(
            union_scopes(Some("a b"), Some("b c")).as_deref(),
            Some("a b c")
        );
        assert_eq!(union_scopes(None, Some("x")).as_deref(), Some("x"));
        assert_eq!(union_scopes(Some(" "), None), None);
    }

    #[test]
    fn token_answers() {
        let (a, exp) =
            TokenAnswer::parse(br#"{"access_token":"t","token_type":"bearer","expires_in":"60"}"#)
                .unwrap();
        assert_eq!(a.access_token, "t");
        assert_eq!(exp, Some(60));
        assert!(TokenAnswer::parse(br#"{"access_token":"t","token_type":"DPoP"}"#).is_err());
        assert!(TokenAnswer::parse(br#"{"access_token":"t","expires_in":-1}"#).is_err());
        assert!(TokenAnswer::parse(br#"{"token_type":"Bearer"}"#).is_err());
        assert!(TokenAnswer::parse(b"<html>").is_err());
    }
}
