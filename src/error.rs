//! Error objects (data the peer sees) and protocol errors (Rust errors about the peer).

use alloc::borrow::Cow;
use core::fmt;

use crate::raw::RawValue;

/// The error codes JSON-RPC 2.0 reserves, and the server codes this crate uses.
///
/// Codes from -32768 to -32000 are reserved by the specification; -32099 to -32000 are left
/// to implementations for server errors. Application codes live outside that range.
pub mod code {
    /// Invalid JSON was received.
    pub const PARSE_ERROR: i64 = -32700;
    /// The JSON sent is not a valid Request object.
    pub const INVALID_REQUEST: i64 = -32600;
    /// The method does not exist or is not available.
    pub const METHOD_NOT_FOUND: i64 = -32601;
    /// Invalid method parameters.
    pub const INVALID_PARAMS: i64 = -32602;
    /// Internal JSON-RPC error.
    pub const INTERNAL_ERROR: i64 = -32603;
    /// Lowest code of the server-error range.
    pub const SERVER_ERROR_MIN: i64 = -32099;
    /// Highest code of the server-error range.
    pub const SERVER_ERROR_MAX: i64 = -32000;
    /// The request was cancelled (seed 000 appendix B).
    pub const REQUEST_CANCELLED: i64 = -32001;
    /// The server is overloaded (seed 000 appendix B).
    pub const SERVER_BUSY: i64 = -32002;
    /// A batch had more entries than allowed (seed 000 appendix B).
    pub const BATCH_TOO_LARGE: i64 = -32003;
    /// A frame was larger than allowed (seed 000 appendix B).
    pub const REQUEST_TOO_LARGE: i64 = -32004;
    /// The request timed out (seed 000 appendix B).
    pub const TIMEOUT: i64 = -32005;
    /// LSP's code for a request the client cancelled.
    pub const LSP_REQUEST_CANCELLED: i64 = -32800;
    /// A method subscription ended because its subscriber read too slowly
    /// ([`LagPolicy::Close`](crate::connection::subscriptions::LagPolicy::Close)).
    pub const SUBSCRIPTION_LAGGED: i64 = -32006;
    /// LSP's ServerNotInitialized: a request before `initialize` (the same number as
    /// [`SERVER_BUSY`]; LSP defines it, sansrpc's busy answer uses it outside LSP).
    pub const LSP_SERVER_NOT_INITIALIZED: i64 = -32002;

    /// True for codes the specification reserves (-32768..=-32000), which applications
    /// should not use for their own errors.
    pub const fn is_reserved(code: i64) -> bool {
        -32768 <= code && code <= -32000
    }

    /// True for the implementation-defined server-error range (-32099..=-32000).
    pub const fn is_server_error(code: i64) -> bool {
        SERVER_ERROR_MIN <= code && code <= SERVER_ERROR_MAX
    }
}

/// A JSON-RPC error object: an integer code, a message and optional data.
///
/// This is data that travels to or from the peer, not a Rust error. `ErrorObject<'a>`
/// borrows from the receive buffer; `ErrorObject<'static>` owns its parts.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ErrorObject<'a> {
    /// The error code (see [`code`]).
    pub code: i64,
    /// A short description.
    pub message: Cow<'a, str>,
    /// Optional additional information, any JSON value.
    pub data: Option<Cow<'a, RawValue>>,
}

impl<'a> ErrorObject<'a> {
    /// An error object without data.
    pub fn new(code: i64, message: impl Into<Cow<'a, str>>) -> Self {
        ErrorObject {
            code,
            message: message.into(),
            data: None,
        }
    }

    /// Attaches data.
    pub fn with_data(mut self, data: impl Into<Cow<'a, RawValue>>) -> Self {
        self.data = Some(data.into());
        self
    }

    /// -32700 Parse error.
    pub const fn parse_error() -> ErrorObject<'static> {
        ErrorObject::fixed(code::PARSE_ERROR, "Parse error")
    }

    /// -32600 Invalid Request.
    pub const fn invalid_request() -> ErrorObject<'static> {
        ErrorObject::fixed(code::INVALID_REQUEST, "Invalid Request")
    }

    /// -32601 Method not found.
    pub const fn method_not_found() -> ErrorObject<'static> {
        ErrorObject::fixed(code::METHOD_NOT_FOUND, "Method not found")
    }

    /// -32602 Invalid params.
    pub const fn invalid_params() -> ErrorObject<'static> {
        ErrorObject::fixed(code::INVALID_PARAMS, "Invalid params")
    }

    /// -32603 Internal error.
    pub const fn internal_error() -> ErrorObject<'static> {
        ErrorObject::fixed(code::INTERNAL_ERROR, "Internal error")
    }

    /// An error object with a static message and no data, usable in `const` contexts.
    pub const fn fixed(code: i64, message: &'static str) -> ErrorObject<'static> {
        ErrorObject {
            code,
            message: Cow::Borrowed(message),
            data: None,
        }
    }

    /// An owned copy.
    pub fn into_owned(self) -> ErrorObject<'static> {
        ErrorObject {
            code: self.code,
            message: Cow::Owned(self.message.into_owned()),
            data: self.data.map(|d| Cow::Owned(d.into_owned())),
        }
    }

    /// Appends the object as JSON.
    pub fn write_json(&self, out: &mut alloc::vec::Vec<u8>) {
        out.extend_from_slice(b"{\"code\":");
        out.extend_from_slice(itoa::Buffer::new().format(self.code).as_bytes());
        out.extend_from_slice(b",\"message\":");
        crate::json::write_str(out, &self.message);
        if let Some(data) = &self.data {
            out.extend_from_slice(b",\"data\":");
            out.extend_from_slice(data.get().as_bytes());
        }
        out.push(b'}');
    }
}

impl fmt::Display for ErrorObject<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} ({})", self.message, self.code)
    }
}

/// Something the peer sent that breaks the protocol and is not answered on the wire: a
/// malformed response. (Malformed requests are answered with an error response instead;
/// see [`Invalid`](crate::message::Invalid).)
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum ProtocolError {
    /// A response carried both `result` and `error`.
    ResultAndError,
    /// A response carried neither `result` nor `error`.
    NoResultOrError,
    /// A response had no `id` member.
    MissingId,
    /// The response's `id` was not a number, string or null.
    InvalidId,
    /// The `error` member was not an object.
    ErrorNotObject,
    /// The error's `code` was missing.
    MissingErrorCode,
    /// The error's `code` was not an integer that fits in an `i64`.
    NonIntegerErrorCode,
    /// The error's `message` was missing.
    MissingErrorMessage,
    /// The error's `message` was not a string.
    NonStringErrorMessage,
    /// `jsonrpc` was missing or not exactly `"2.0"`.
    BadVersion,
    /// A member appeared twice.
    DuplicateMember,
    /// The string id was longer than [`Limits::max_id_len`](crate::Limits::max_id_len).
    IdTooLong,
}

impl fmt::Display for ProtocolError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            ProtocolError::ResultAndError => "response has both result and error",
            ProtocolError::NoResultOrError => "response has neither result nor error",
            ProtocolError::MissingId => "response has no id",
            ProtocolError::InvalidId => "response id is not a number, string or null",
            ProtocolError::ErrorNotObject => "response error is not an object",
            ProtocolError::MissingErrorCode => "error object has no code",
            ProtocolError::NonIntegerErrorCode => "error code is not an integer",
            ProtocolError::MissingErrorMessage => "error object has no message",
            ProtocolError::NonStringErrorMessage => "error message is not a string",
            ProtocolError::BadVersion => "jsonrpc member missing or not \"2.0\"",
            ProtocolError::DuplicateMember => "a member appears twice",
            ProtocolError::IdTooLong => "id longer than the limit",
        })
    }
}

#[cfg(feature = "std")]
impl std::error::Error for ProtocolError {}

/// What a handler or a layer returns: `Ok` once the result JSON is in the output buffer, or
/// the error object to answer with.
pub type Outcome = Result<(), ErrorObject<'static>>;

/// Why one of our requests ended without a response.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum EndReason {
    /// Its deadline passed ([`Connection::handle_timeout`](crate::connection::Connection::handle_timeout)).
    TimedOut,
    /// The application cancelled it ([`Connection::cancel_call`](crate::connection::Connection::cancel_call)).
    Cancelled,
    /// The connection closed first.
    Closed,
    /// The peer sent an error with a `null` id under [`NullIdPolicy::FailAll`](crate::connection::NullIdPolicy::FailAll).
    PeerError,
    /// The peer answered it with a malformed response.
    MalformedResponse(ProtocolError),
    /// The transport's exchange that carried it ended without its answer
    /// ([`Connection::end_unanswered`](crate::connection::Connection::end_unanswered)): over
    /// HTTP, `status` is what the server answered instead (`413` for a body over its limit,
    /// `204`, a `502` from a proxy), `None` when the request could not be sent or the
    /// response not read (connection refused or reset, a malformed response).
    Unanswered {
        /// The HTTP status of the exchange, when one came.
        status: Option<u16>,
    },
}

/// Why a message could not be sent. The caller's mistake or the caller's back-pressure,
/// never the peer's fault.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum SendError {
    /// The endpoint is closed.
    Closed,
    /// [`Config::max_pending_outgoing`](crate::Config::max_pending_outgoing) requests are already pending.
    TooManyPending,
    /// More than [`Config::max_buffered_output`](crate::Config::max_buffered_output) bytes wait to be transmitted: drain
    /// [`Connection::poll_transmit`](crate::connection::Connection::poll_transmit) first.
    OutputFull,
    /// Typed params failed to serialize (a map with non-string keys, a failing `Serialize`).
    InvalidParams,
    /// The connection is not open yet (connecting, or waiting to reconnect): nothing may be
    /// sent ([`ext::reconnect::State`](crate::ext::reconnect::State)).
    Connecting,
    /// The transport cannot carry notifications outside answers (plain HTTP,
    /// [`Config::push`](crate::Config::push) false), so a subscription cannot be made over it.
    NoPush,
}

impl fmt::Display for SendError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            SendError::Closed => "the endpoint is closed",
            SendError::TooManyPending => "too many requests pending",
            SendError::OutputFull => "too much output waiting to be transmitted",
            SendError::InvalidParams => "params do not serialize to JSON",
            SendError::Connecting => "the connection is not open yet",
            SendError::NoPush => {
                "subscriptions need a transport that carries notifications (WebSocket, TCP, \
                 IPC, stdio), not plain HTTP"
            }
        })
    }
}

#[cfg(feature = "std")]
impl std::error::Error for SendError {}

/// [`Connection::respond`](crate::connection::Connection::respond) was given a handle with nothing to answer: already answered,
/// dropped by a close, or from another endpoint.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct UnknownRequest;

impl fmt::Display for UnknownRequest {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("no request in flight with this handle")
    }
}

#[cfg(feature = "std")]
impl std::error::Error for UnknownRequest {}

/// [`Connection::handle_message`](crate::connection::Connection::handle_message) refused a message because events or output are backed
/// up: drain [`Connection::poll_event`](crate::connection::Connection::poll_event) and [`Connection::poll_transmit`](crate::connection::Connection::poll_transmit), then hand it in again.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Backpressure;

impl fmt::Display for Backpressure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("events or output backed up; drain them first")
    }
}

#[cfg(feature = "std")]
impl std::error::Error for Backpressure {}

/// [`Connection::handle_input`](crate::connection::Connection::handle_input) was called on an endpoint configured for a message transport
/// (`framing: None`): a wiring mistake of the caller's. Nothing was taken; hand whole
/// messages to [`Connection::handle_message`](crate::connection::Connection::handle_message) instead.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct NotAByteStream;

impl fmt::Display for NotAByteStream {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("handle_input on an endpoint without framing; use handle_message")
    }
}

#[cfg(feature = "std")]
impl std::error::Error for NotAByteStream {}
