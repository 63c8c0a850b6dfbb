//! [`AuthLayer`]: refuses calls without a valid credential, without saying which methods
//! exist.

use alloc::borrow::Cow;
use alloc::string::{String, ToString};
use alloc::vec::Vec;
use core::fmt;

use super::credential::{take_credential, Credential};
use crate::error::ErrorObject;
use crate::router::{Admit, Call, Layer, Next, Outcome};

/// The error an unauthenticated call gets by default: `1000 Unauthorized` (seed 000
/// appendix B.3 puts authentication errors at 1000–1099).
pub const UNAUTHORIZED: ErrorObject<'static> = ErrorObject::fixed(1000, "Unauthorized");

/// A server layer that lets a call through only when its params carry a credential the
/// validator accepts (the `"$auth"` member, see
/// [`attach_credential`](super::attach_credential)); the credential is removed before the
/// call goes on, so handlers see the params the caller meant.
///
/// A refused call is answered with one fixed application error ([`UNAUTHORIZED`] unless
/// set with [`AuthLayer::error`]), whether the method exists or not, `rpc.discover`
/// included: an unauthenticated caller learns nothing about the method table (seed 000
/// §18.5). A refused notification is dropped. Register it before the layers that should
/// only see authenticated calls.
///
/// ```
/// use sansrpc::ext::interceptors::{attach_credential, AuthLayer};
/// use sansrpc::router::{Reply, Router};
/// use sansrpc::{Id, RawValue, Request, Version};
///
/// let mut router = Router::new();
/// router.raw_method("secret", |_, out| { out.extend_from_slice(b"42"); Ok(()) }).unwrap();
/// router.layer(AuthLayer::token("s3cret"));
///
/// let request = |params: Option<Box<RawValue>>| Request {
///     id: Id::number(1),
///     method: "secret".into(),
///     params: params.map(Into::into),
///     version: Version::V2,
/// };
/// let mut reply = Reply::default();
/// router.dispatch(&request(None), &mut reply);
/// assert_eq!(reply.error().unwrap().code, 1000);
/// router.dispatch(&request(Some(attach_credential(None, "s3cret"))), &mut reply);
/// assert_eq!(reply.result_json(), Some("42"));
/// ```
pub struct AuthLayer<V> {
    validate: V,
    error: ErrorObject<'static>,
    public: Vec<String>,
}

impl<V> fmt::Debug for AuthLayer<V> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("AuthLayer")
            .field("error", &self.error)
            .field("public", &self.public)
            .finish_non_exhaustive()
    }
}

impl<V> AuthLayer<V>
where
    V: Fn(&str) -> bool + Send + Sync,
{
    /// A layer that accepts the credentials `validate` returns `true` for.
    pub fn new(validate: V) -> Self {
        AuthLayer {
            validate,
            error: UNAUTHORIZED,
            public: Vec::new(),
        }
    }

    /// Answers refused calls with `error` instead of [`UNAUTHORIZED`].
    pub fn error(mut self, error: ErrorObject<'static>) -> Self {
        self.error = error;
        self
    }

    /// Lets calls to `method` through without a credential (a login method, a health
    /// check). Its existence is then visible to anyone.
    pub fn public(mut self, method: &str) -> Self {
        self.public.push(method.to_string());
        self
    }
}

impl AuthLayer<fn(&str) -> bool> {
    /// A layer that accepts exactly one bearer token, compared in constant time.
    pub fn token(expected: impl Into<String>) -> AuthLayer<impl Fn(&str) -> bool + Send + Sync> {
        let expected: String = expected.into();
        AuthLayer::new(move |token: &str| constant_time_eq(token.as_bytes(), expected.as_bytes()))
    }
}

/// Compares two byte strings in time that depends on their lengths only.
pub(crate) fn constant_time_eq(a: &[u8], b: &[u8]) -> bool {
    if a.len() != b.len() {
        return false;
    }
    a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

impl<V> AuthLayer<V>
where
    V: Fn(&str) -> bool + Send + Sync,
{
    /// The call's params without the credential, or the refusal.
    fn check<'a>(&self, call: &Call<'a>) -> Result<Credential<'a>, ErrorObject<'static>> {
        let credential = take_credential(call.params);
        let accepted = credential
            .token
            .as_deref()
            .is_some_and(|t| (self.validate)(t));
        if accepted || self.public.iter().any(|m| m == call.method) {
            Ok(credential)
        } else {
            Err(self.error.clone())
        }
    }
}

impl<V> Layer for AuthLayer<V>
where
    V: Fn(&str) -> bool + Send + Sync,
{
    fn call(&self, call: &Call<'_>, out: &mut Vec<u8>, next: Next<'_>) -> Outcome {
        let credential = self.check(call)?;
        if !credential.present {
            return next.run(call, out);
        }
        let inner = Call {
            method: call.method,
            params: credential.params.as_deref(),
            id: call.id,
        };
        next.run(&inner, out)
    }

    fn admit(&self, call: &Call<'_>) -> Result<Admit, ErrorObject<'static>> {
        let credential = self.check(call)?;
        if !credential.present {
            return Ok(Admit::Unchanged);
        }
        Ok(Admit::Params(credential.params.map(Cow::into_owned)))
    }
}
