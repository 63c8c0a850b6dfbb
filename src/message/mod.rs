//! The message model: requests, notifications, responses, in borrowed and owned forms, and
//! how they are written.
//!
//! Every type has a lifetime: `Request<'a>` borrows its method, params and id from the
//! receive buffer (zero-copy; a string with escapes is the one case that allocates), and
//! `Request<'static>` (see [`Request::into_owned`]) owns them. Writing appends JSON to a
//! caller-owned `Vec<u8>`.

mod classify;
mod encode;

use alloc::borrow::Cow;

pub(crate) use classify::{frame_str, Entries, RawEntry, Shape};
pub use classify::{BatchEntries, Classified, Classifier, Rejection, Scanned};
pub(crate) use encode::write_call;
#[cfg(feature = "subscriptions")]
pub(crate) use encode::write_call_with;
pub use encode::{
    leading_member, write_error_response, write_json_string, write_result_response, BatchWriter,
    Leading,
};

use crate::error::{ErrorObject, ProtocolError};
use crate::id::Id;
use crate::raw::RawValue;

/// Which protocol version a message was written in, so that answers match it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum Version {
    /// JSON-RPC 2.0: `"jsonrpc": "2.0"` on every message.
    #[default]
    V2,
    /// JSON-RPC 1.0 (only with [`Limits::accept_v1`](crate::Limits::accept_v1)): no
    /// `jsonrpc` member, `"id": null` for notifications, `result` and `error` both present.
    V1,
}

/// A request: a call that expects exactly one response carrying the same id.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Request<'a> {
    /// The id to echo in the response.
    pub id: Id<'a>,
    /// The method name.
    pub method: Cow<'a, str>,
    /// Positional (array) or named (object) parameters, if any.
    pub params: Option<Cow<'a, RawValue>>,
    /// The protocol version the request was written in.
    pub version: Version,
}

/// A notification: a call without an id, never answered.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Notification<'a> {
    /// The method name.
    pub method: Cow<'a, str>,
    /// Positional (array) or named (object) parameters, if any.
    pub params: Option<Cow<'a, RawValue>>,
    /// The protocol version the notification was written in.
    pub version: Version,
}

/// A response: the outcome of a request, with the request's id.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Response<'a> {
    /// The id of the request this answers; `null` when the peer could not tell which.
    pub id: Id<'a>,
    /// The result on success, the error object on failure (exactly one of them on the wire).
    pub result: Result<Cow<'a, RawValue>, ErrorObject<'a>>,
    /// The protocol version the response was written in.
    pub version: Version,
}

/// One classified entry of an incoming frame: a single message, or one element of a batch.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Incoming<'a> {
    /// A valid request: answer it exactly once.
    Request(Request<'a>),
    /// A valid notification: never answer it.
    Notification(Notification<'a>),
    /// A well-formed response to one of our requests.
    Response(Response<'a>),
    /// Not a valid request object: answer with [`Invalid::error`] and the id it carries.
    Invalid(Invalid<'a>),
    /// A malformed response: never answered on the wire (answering garbage with garbage
    /// makes error storms between two peers); the application hears of it as a protocol
    /// error.
    BadResponse {
        /// The response's id, when it had a valid one.
        id: Option<Id<'a>>,
        /// What was wrong.
        error: ProtocolError,
    },
}

/// An entry that is not a valid request; the peer gets error `-32600`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Invalid<'a> {
    /// The id to answer with: the entry's id when it had a valid one, else `null`.
    pub id: Id<'a>,
    /// What was wrong.
    pub reason: InvalidReason,
}

impl Invalid<'_> {
    /// The error object to answer with.
    pub fn error(&self) -> ErrorObject<'static> {
        self.reason.error()
    }

    /// Writes the whole error response.
    pub fn write_response(&self, out: &mut alloc::vec::Vec<u8>) {
        write_error_response(out, Version::V2, &self.id, &self.error());
    }
}

/// Why an entry is not a valid request.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum InvalidReason {
    /// A batch element or message that is not an object.
    NotAnObject,
    /// `jsonrpc` missing or not exactly `"2.0"`.
    BadVersion,
    /// No `method`, and no `result` or `error` either.
    MissingMethod,
    /// `method` is not a string.
    MethodNotString,
    /// `params` is neither an array nor an object.
    BadParams,
    /// `id` is a boolean, an object or an array (answered with id `null`).
    BadId,
    /// The id is longer than [`Limits::max_id_len`](crate::Limits::max_id_len)
    /// (answered with id `null`).
    IdTooLong,
    /// A protocol member (`jsonrpc`, `method`, `params`, `id`, `result`, `error`) appears
    /// twice; the message is refused rather than guessing which one counts.
    DuplicateMember,
}

impl InvalidReason {
    /// The error object to answer with: `-32600`, and a message saying what was wrong.
    pub fn error(self) -> ErrorObject<'static> {
        ErrorObject::fixed(crate::error::code::INVALID_REQUEST, self.message())
    }

    /// The message of the error object.
    pub const fn message(self) -> &'static str {
        match self {
            InvalidReason::NotAnObject => "Invalid Request: expected a request object",
            InvalidReason::BadVersion => "Invalid Request: jsonrpc must be exactly \"2.0\"",
            InvalidReason::MissingMethod => "Invalid Request: missing method",
            InvalidReason::MethodNotString => "Invalid Request: method must be a string",
            InvalidReason::BadParams => "Invalid Request: params must be an array or an object",
            InvalidReason::BadId => "Invalid Request: id must be a number, a string or null",
            InvalidReason::IdTooLong => "Invalid Request: id too long",
            InvalidReason::DuplicateMember => "Invalid Request: duplicate member",
        }
    }
}

impl Request<'_> {
    /// True when the method name starts with `rpc.`, which JSON-RPC 2.0 reserves for
    /// system extensions.
    pub fn is_reserved(&self) -> bool {
        self.method.starts_with("rpc.")
    }

    /// Converts into the owned form.
    pub fn into_owned(self) -> Request<'static> {
        Request {
            id: self.id.into_owned(),
            method: Cow::Owned(self.method.into_owned()),
            params: self.params.map(|p| Cow::Owned(p.into_owned())),
            version: self.version,
        }
    }

    /// Appends the request as JSON.
    pub fn write_json(&self, out: &mut alloc::vec::Vec<u8>) {
        encode::write_call(
            out,
            self.version,
            Some(&self.id),
            &self.method,
            self.params.as_deref(),
        );
    }
}

impl Notification<'_> {
    /// True when the method name starts with `rpc.`.
    pub fn is_reserved(&self) -> bool {
        self.method.starts_with("rpc.")
    }

    /// Converts into the owned form.
    pub fn into_owned(self) -> Notification<'static> {
        Notification {
            method: Cow::Owned(self.method.into_owned()),
            params: self.params.map(|p| Cow::Owned(p.into_owned())),
            version: self.version,
        }
    }

    /// Appends the notification as JSON.
    pub fn write_json(&self, out: &mut alloc::vec::Vec<u8>) {
        encode::write_call(
            out,
            self.version,
            None,
            &self.method,
            self.params.as_deref(),
        );
    }
}

impl Response<'_> {
    /// Converts into the owned form.
    pub fn into_owned(self) -> Response<'static> {
        Response {
            id: self.id.into_owned(),
            result: match self.result {
                Ok(r) => Ok(Cow::Owned(r.into_owned())),
                Err(e) => Err(e.into_owned()),
            },
            version: self.version,
        }
    }

    /// Appends the response as JSON.
    pub fn write_json(&self, out: &mut alloc::vec::Vec<u8>) {
        match &self.result {
            Ok(r) => write_result_response(out, self.version, &self.id, r),
            Err(e) => write_error_response(out, self.version, &self.id, e),
        }
    }
}

impl Incoming<'_> {
    /// Converts into the owned form.
    pub fn into_owned(self) -> Incoming<'static> {
        match self {
            Incoming::Request(r) => Incoming::Request(r.into_owned()),
            Incoming::Notification(n) => Incoming::Notification(n.into_owned()),
            Incoming::Response(r) => Incoming::Response(r.into_owned()),
            Incoming::Invalid(i) => Incoming::Invalid(Invalid {
                id: i.id.into_owned(),
                reason: i.reason,
            }),
            Incoming::BadResponse { id, error } => Incoming::BadResponse {
                id: id.map(Id::into_owned),
                error,
            },
        }
    }

    /// True when this entry must be answered: a request, or an invalid entry.
    pub fn needs_response(&self) -> bool {
        matches!(self, Incoming::Request(_) | Incoming::Invalid(_))
    }
}
