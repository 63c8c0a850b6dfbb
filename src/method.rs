//! Typed methods without macros: a type names a method and its params and result types, as
//! lsp-types does.
//!
//! ```
//! use sansrpc::method::Method;
//! use serde::{Deserialize, Serialize};
//!
//! #[derive(Serialize, Deserialize)]
//! struct AddParams { a: i64, b: i64 }
//!
//! enum Add {}
//! impl Method for Add {
//!     const NAME: &'static str = "math.add";
//!     type Params = AddParams;
//!     type Result = i64;
//! }
//! ```

use alloc::borrow::Cow;
use alloc::string::String;
use alloc::vec::Vec;
use core::fmt;

use serde::de::{self, DeserializeOwned, Visitor};
use serde::Serialize;

use crate::error::EndReason;
use crate::error::{code, ErrorObject};
use crate::raw::RawValue;

/// A request method: its name, what it takes and what it returns.
pub trait Method {
    /// The method name on the wire.
    const NAME: &'static str;
    /// The params, by name (a struct from an object) or by position (the same struct from an
    /// array, fields in declared order; or a tuple). Serving the method needs only
    /// `Deserialize`, calling it only `Serialize`.
    type Params;
    /// The result: `Serialize` to serve the method, `Deserialize` to call it.
    type Result;
}

/// A notification method: its name and what it takes.
pub trait NotificationMethod {
    /// The method name on the wire.
    const NAME: &'static str;
    /// The params: `Deserialize` to receive the notification, `Serialize` to send it.
    type Params;
}

/// Why a call produced no result.
#[derive(Debug)]
#[non_exhaustive]
pub enum CallError {
    /// The peer answered with an error object.
    Rpc(ErrorObject<'static>),
    /// The peer answered with a result that does not decode into the method's result type.
    Decode(serde_json::Error),
    /// The request ended without an answer (timed out, cancelled, connection closed, a
    /// malformed response).
    Ended(EndReason),
    /// The call was refused locally before it went out (params that do not serialize, too
    /// many requests pending, the connection already closed).
    Send(crate::error::SendError),
    /// A client interceptor refused the call before it went out (a client-side rate
    /// limit, for one); see [`crate::ext::interceptors`].
    Intercepted(ErrorObject<'static>),
}

impl CallError {
    /// True when the call's deadline passed.
    pub fn is_timeout(&self) -> bool {
        matches!(self, CallError::Ended(EndReason::TimedOut))
    }

    /// True when the connection closed before an answer came (or before the call went out).
    pub fn is_closed(&self) -> bool {
        matches!(
            self,
            CallError::Ended(EndReason::Closed) | CallError::Send(crate::error::SendError::Closed)
        )
    }

    /// The error object's code, when the peer answered with one or an interceptor refused
    /// the call with one.
    pub fn code(&self) -> Option<i64> {
        match self {
            CallError::Rpc(e) | CallError::Intercepted(e) => Some(e.code),
            _ => None,
        }
    }
}

impl fmt::Display for CallError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            CallError::Rpc(e) => write!(f, "the peer answered with an error: {e}"),
            CallError::Decode(e) => write!(f, "the result does not decode: {e}"),
            CallError::Ended(EndReason::TimedOut) => f.write_str("the request timed out"),
            CallError::Ended(EndReason::Closed) => {
                f.write_str("the connection closed before an answer came")
            }
            CallError::Ended(EndReason::Unanswered {
                status: Some(status),
            }) => write!(
                f,
                "the server answered HTTP {status} without an answer to the request"
            ),
            CallError::Ended(EndReason::Unanswered { status: None }) => {
                f.write_str("the request could not be sent, or its answer not read")
            }
            CallError::Ended(EndReason::Cancelled) => f.write_str("the request was cancelled"),
            CallError::Ended(EndReason::PeerError) => {
                f.write_str("the peer answered with an error whose id is null")
            }
            CallError::Ended(EndReason::MalformedResponse(e)) => {
                write!(f, "the peer's answer is malformed: {e}")
            }
            CallError::Send(e) => write!(f, "the request was not sent: {e}"),
            CallError::Intercepted(e) => write!(f, "an interceptor refused the call: {e}"),
        }
    }
}

#[cfg(feature = "std")]
impl std::error::Error for CallError {}

/// Decodes the result of a call to `M` from a [`Event::Answer`](crate::connection::Event::Answer)'s
/// `result`: a typed error, never a panic, when the peer's answer does not fit.
pub fn decode_result<M: Method<Result: serde::de::DeserializeOwned>>(
    result: Result<Cow<'_, RawValue>, ErrorObject<'_>>,
) -> Result<M::Result, CallError> {
    match result {
        Ok(raw) => serde_json::from_str(raw.get()).map_err(CallError::Decode),
        Err(e) => Err(CallError::Rpc(e.into_owned())),
    }
}

/// Decodes params into `T` exactly as the [`Router`](crate::router::Router) does for typed
/// handlers: by name from an object, by position from an array (a struct's missing trailing
/// positions as if left out by name: an `Option` reads as `None`, a required one is named in
/// the error; a tuple's read as `null`), absent params as if every position were missing. For handlers that run
/// outside the router (an async adapter's); build it once per method, decode per call.
///
/// ```
/// use sansrpc::method::{encode_params, ParamsDecoder};
/// use sansrpc::RawValue;
/// use serde::Deserialize;
///
/// #[derive(Deserialize, PartialEq, Debug)]
/// struct Pair { a: i64, b: Option<i64> }
///
/// let decoder = ParamsDecoder::<Pair>::new();
/// let by_position = decoder.decode(Some(RawValue::from_json("[1]").unwrap()));
/// assert_eq!(by_position.unwrap(), Pair { a: 1, b: None });
/// let by_name = decoder.decode(Some(RawValue::from_json(r#"{"b":2,"a":1}"#).unwrap()));
/// assert_eq!(by_name.unwrap(), Pair { a: 1, b: Some(2) });
/// assert_eq!(decoder.decode(Some(RawValue::from_json("[1,2,3]").unwrap())).unwrap_err().code, -32602);
///
/// let mut buf = Vec::new();
/// assert_eq!(encode_params(&(1, 2), &mut buf).unwrap().unwrap().get(), "[1,2]");
/// assert!(encode_params(&(), &mut buf).unwrap().is_none());
/// assert!(encode_params(&5, &mut buf).is_err());
/// ```
pub struct ParamsDecoder<T> {
    shape: ParamShape,
    _params: core::marker::PhantomData<fn() -> T>,
}

impl<T: DeserializeOwned> ParamsDecoder<T> {
    /// Learns `T`'s shape (field names, arity) once.
    pub fn new() -> Self {
        ParamsDecoder {
            shape: param_shape::<T>(),
            _params: core::marker::PhantomData,
        }
    }

    /// Decodes one call's params; a mismatch is `-32602` with a message for the caller.
    pub fn decode(&self, params: Option<&RawValue>) -> Result<T, ErrorObject<'static>> {
        decode_params(params, &self.shape)
    }
}

impl<T: DeserializeOwned> Default for ParamsDecoder<T> {
    fn default() -> Self {
        ParamsDecoder::new()
    }
}

impl<T> fmt::Debug for ParamsDecoder<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ParamsDecoder")
            .field("names", &self.shape.names)
            .field("arity", &self.shape.arity)
            .finish()
    }
}

pub(crate) use crate::json::write_json;

/// Serializes typed params into `buf` (cleared first) and returns them as they go on the
/// wire: `None` for `()` or `None` (serialized as `null`: no params member at all), the
/// array or object otherwise. A scalar is not valid params in JSON-RPC 2.0 and is refused,
/// as is a value that fails to serialize.
pub fn encode_params<'b, P: Serialize + ?Sized>(
    params: &P,
    buf: &'b mut Vec<u8>,
) -> Result<Option<&'b RawValue>, crate::error::SendError> {
    use crate::error::SendError;
    buf.clear();
    write_json(buf, params).map_err(|_| SendError::InvalidParams)?;
    // serde_json wrote it, so it is one valid JSON value.
    let text = core::str::from_utf8(buf).map_err(|_| SendError::InvalidParams)?;
    match text.as_bytes().first() {
        Some(b'n') => Ok(None),
        Some(b'[' | b'{') => Ok(Some(RawValue::from_validated(text))),
        _ => Err(SendError::InvalidParams),
    }
}

/// [`encode_params`] into a fresh buffer, owning the result: for callers that hand the
/// params to an endpoint on another thread or task (the adapters' clients).
pub(crate) fn encode_params_owned<P: Serialize + ?Sized>(
    params: &P,
) -> Result<Option<alloc::boxed::Box<RawValue>>, crate::error::SendError> {
    let mut buf = Vec::new();
    Ok(encode_params(params, &mut buf)?.map(alloc::borrow::ToOwned::to_owned))
}

/// How params are laid out, learned once per method by asking its `Deserialize` impl.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct ParamShape {
    /// Field names in declared order, for a struct.
    pub names: Option<&'static [&'static str]>,
    /// Number of positions, for a struct or a tuple.
    pub arity: Option<usize>,
    /// True for `()`: no params at all.
    pub unit: bool,
}

/// Finds out what shape `T` deserializes from, without any input: the derive hands its field
/// names to `deserialize_struct`, tuples their length to `deserialize_tuple`.
pub(crate) fn param_shape<T: DeserializeOwned>() -> ParamShape {
    let mut shape = ParamShape::default();
    let _ = T::deserialize(Sniffer(&mut shape));
    shape
}

struct Sniffer<'s>(&'s mut ParamShape);

#[derive(Debug)]
struct Sniffed;

impl fmt::Display for Sniffed {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("shape sniffed")
    }
}

impl de::StdError for Sniffed {}

impl de::Error for Sniffed {
    fn custom<T: fmt::Display>(_: T) -> Self {
        Sniffed
    }
}

impl<'de> de::Deserializer<'de> for Sniffer<'_> {
    type Error = Sniffed;

    fn deserialize_any<V: Visitor<'de>>(self, _: V) -> Result<V::Value, Sniffed> {
        Err(Sniffed)
    }

    fn deserialize_struct<V: Visitor<'de>>(
        self,
        _name: &'static str,
        fields: &'static [&'static str],
        _: V,
    ) -> Result<V::Value, Sniffed> {
        self.0.names = Some(fields);
        self.0.arity = Some(fields.len());
        Err(Sniffed)
    }

    fn deserialize_unit<V: Visitor<'de>>(self, _: V) -> Result<V::Value, Sniffed> {
        self.0.unit = true;
        Err(Sniffed)
    }

    fn deserialize_tuple<V: Visitor<'de>>(self, len: usize, _: V) -> Result<V::Value, Sniffed> {
        self.0.arity = Some(len);
        Err(Sniffed)
    }

    fn deserialize_tuple_struct<V: Visitor<'de>>(
        self,
        _: &'static str,
        len: usize,
        _: V,
    ) -> Result<V::Value, Sniffed> {
        self.0.arity = Some(len);
        Err(Sniffed)
    }

    serde::forward_to_deserialize_any! {
        bool i8 i16 i32 i64 i128 u8 u16 u32 u64 u128 f32 f64 char str string bytes byte_buf
        option unit_struct newtype_struct seq map enum identifier ignored_any
    }
}

/// Decodes params into `T`: by name from an object, by position from an array (missing
/// trailing positions of a struct as if left out by name, so `Option` fields may be left out
/// and a required one is named in the error; a tuple's read as `null`), and absent params
/// as if every position were missing. Errors are `-32602` with a message meant for the
/// caller: what was expected, never where in our code.
pub(crate) fn decode_params<T: DeserializeOwned>(
    params: Option<&RawValue>,
    shape: &ParamShape,
) -> Result<T, ErrorObject<'static>> {
    let text = params.map_or("", RawValue::get).trim_ascii();
    let padded;
    let text = match (text.as_bytes().first(), shape.arity) {
        // A method that takes no params: absent, `[]` and any object (MCP's `_meta`, members
        // it ignores) all mean that.
        (None | Some(b'{'), _) if shape.unit => "null",
        (Some(b'['), _) if shape.unit => match array_len(text) {
            Some(0) => "null",
            Some(len) => {
                let message = alloc::format!("Invalid params: expected no params, got {len}");
                return Err(ErrorObject::new(code::INVALID_PARAMS, message));
            }
            None => text,
        },
        // `_meta` (MCP) is accepted by every struct, even one that denies unknown members.
        (Some(b'{'), _)
            if crate::json::contains(text.as_bytes(), b"\"_meta\"")
                && shape.names.is_some_and(|names| !names.contains(&"_meta")) =>
        {
            padded = without_member(text, "_meta");
            padded.as_str()
        }
        // A struct's params left out: decoded by name, so a required one is named ("missing
        // field `to`") and the `Option` ones read as `None`.
        (None, Some(_)) if shape.names.is_some() => "{}",
        (None, Some(n)) => {
            padded = pad("[]", n);
            padded.as_str()
        }
        (None, None) => "null",
        // Positional params: the usual call has them all and decodes at once; only a
        // call that does not is counted, then padded or refused.
        (Some(b'['), Some(n)) => {
            let e = match decode(text) {
                Ok(value) => return Ok(value),
                Err(e) => e,
            };
            match array_len(text) {
                // A struct's: its trailing params by name (see above).
                Some(len) if len < n && shape.names.is_some() => {
                    let names = shape.names.unwrap_or_default();
                    padded = by_names(text, names).unwrap_or_else(|| pad(text, n - len));
                    padded.as_str()
                }
                Some(len) if len < n => {
                    padded = pad(text, n - len);
                    padded.as_str()
                }
                Some(len) if len > n => {
                    let message =
                        alloc::format!("Invalid params: expected at most {n} params, got {len}");
                    return Err(ErrorObject::new(code::INVALID_PARAMS, message));
                }
                _ => return Err(e),
            }
        }
        _ => text,
    };
    decode(text)
}

/// `text` decoded into `T`: with serde_json (feature `serde-json-params`), else with the
/// core's own decoder ([`crate::de`]), which leaves serde_json's parser, its float tables
/// and its message formatting out of a firmware.
#[cfg(feature = "serde-json-params")]
#[inline]
fn decode<T: DeserializeOwned>(text: &str) -> Result<T, ErrorObject<'static>> {
    serde_json::from_str(text).map_err(|e| invalid_params(&e))
}

/// `text` decoded into `T` with the core's own decoder ([`crate::de`]); with the feature
/// `serde-json-params`, with serde_json.
#[cfg(not(feature = "serde-json-params"))]
fn decode<T: DeserializeOwned>(text: &str) -> Result<T, ErrorObject<'static>> {
    crate::de::from_str(text).map_err(|e| {
        let mut message = String::from("Invalid params: ");
        message.push_str(e.message());
        ErrorObject::new(code::INVALID_PARAMS, message)
    })
}

/// The object `text` (already validated) without its member `key` (as written: the
/// caller looks for it unescaped).
fn without_member(text: &str, key: &str) -> String {
    let Some(members) = RawValue::from_validated(text).members() else {
        return String::from(text);
    };
    let mut out = String::with_capacity(text.len());
    out.push('{');
    for (name, value) in members.filter(|(name, _)| name.raw() != key) {
        if out.len() > 1 {
            out.push(',');
        }
        out.push('"');
        out.push_str(name.raw());
        out.push_str("\":");
        out.push_str(value.get());
    }
    out.push('}');
    out
}

/// `array` with `missing` nulls appended.
fn pad(array: &str, missing: usize) -> String {
    let inner = array
        .trim()
        .strip_prefix('[')
        .and_then(|s| s.strip_suffix(']'))
        .unwrap_or("")
        .trim();
    let mut out = String::with_capacity(inner.len() + 2 + missing * 5);
    out.push('[');
    out.push_str(inner);
    for i in 0..missing {
        if i > 0 || !inner.is_empty() {
            out.push(',');
        }
        out.push_str("null");
    }
    out.push(']');
    out
}

/// The array `text` (already validated, at most as long as `names`) as an object: its
/// elements under the first of `names`, in order. A struct's params given short by position
/// then decode as by name: a required one left out is named by the decoder ("missing field
/// `to`"), an `Option` one reads as `None`.
fn by_names(text: &str, names: &[&str]) -> Option<String> {
    let mut s = crate::json::Scanner::new(text.as_bytes());
    s.expect(b'[').ok()?;
    let mut out = alloc::vec::Vec::with_capacity(text.len() + 16 * names.len());
    out.push(b'{');
    if s.peek_ws()? != b']' {
        for (i, name) in names.iter().enumerate() {
            s.peek_ws()?;
            let start = s.pos;
            s.value(1, crate::Limits::MAX_DEPTH_CAP).ok()?;
            if i > 0 {
                out.push(b',');
            }
            crate::json::write_str(&mut out, name);
            out.push(b':');
            out.extend_from_slice(&text.as_bytes()[start..s.pos]);
            match s.peek_ws()? {
                b',' => s.pos += 1,
                _ => break,
            }
        }
    }
    out.push(b'}');
    String::from_utf8(out).ok()
}

/// Number of elements of a JSON array text (already validated).
fn array_len(text: &str) -> Option<usize> {
    let mut s = crate::json::Scanner::new(text.as_bytes());
    s.expect(b'[').ok()?;
    if s.peek_ws()? == b']' {
        return Some(0);
    }
    let mut n = 0;
    loop {
        s.value(1, crate::Limits::MAX_DEPTH_CAP).ok()?;
        n += 1;
        match s.peek_ws()? {
            b',' => s.pos += 1,
            _ => return Some(n),
        }
    }
}

#[cfg(feature = "serde-json-params")]
/// `-32602` with serde's description of what was wrong, without the line and column of a
/// text the caller never saw in that form.
pub(crate) fn invalid_params(e: &serde_json::Error) -> ErrorObject<'static> {
    let text = alloc::string::ToString::to_string(e);
    let detail = match text.rfind(" at line ") {
        Some(i) => &text[..i],
        None => &text,
    };
    let mut message = String::from("Invalid params: ");
    message.push_str(detail);
    ErrorObject::new(code::INVALID_PARAMS, message)
}

/// Declares a method in one line: a unit struct that implements [`Method`] (with `=>`) or
/// [`NotificationMethod`] (without). The struct is also a value, for calls that take the
/// method as an argument (`client.request(Add, &params)` in the adapters).
///
/// ```
/// use serde::{Deserialize, Serialize};
///
/// #[derive(Serialize, Deserialize)]
/// pub struct AddParams { a: i64, b: i64 }
///
/// sansrpc::method!(pub Add = "tools/add", AddParams => i64);
/// sansrpc::method!(
///     /// Sent once the client is ready.
///     Initialized = "notifications/initialized", ()
/// );
///
/// use sansrpc::method::{Method, NotificationMethod};
/// assert_eq!(<Add as Method>::NAME, "tools/add");
/// assert_eq!(<Initialized as NotificationMethod>::NAME, "notifications/initialized");
/// ```
#[macro_export]
macro_rules! method {
    ($(#[$attr:meta])* $vis:vis $name:ident = $wire:literal, $params:ty => $result:ty $(,)?) => {
        $(#[$attr])*
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
        $vis struct $name;
        impl $crate::method::Method for $name {
            const NAME: &'static str = $wire;
            type Params = $params;
            type Result = $result;
        }
    };
    ($(#[$attr:meta])* $vis:vis $name:ident = $wire:literal, $params:ty $(,)?) => {
        $(#[$attr])*
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
        $vis struct $name;
        impl $crate::method::NotificationMethod for $name {
            const NAME: &'static str = $wire;
            type Params = $params;
        }
    };
}
