//! Typed calls: `call::<M>(params)`, `notify::<N>(params)` and `respond_typed(id, &result)`
//! on the wire.

use super::{IncomingId, RequestId, RequestOptions, SendError, UnknownRequest, Wire};
use crate::error::ErrorObject;
use crate::method::{encode_params, write_json, Method, NotificationMethod};
use crate::raw::RawValue;
use crate::time::Instant;

impl Wire {
    /// Sends a request to `M`: the params are serialized straight into a reused buffer (no
    /// `serde_json::Value` between, see [`encode_params`]), then sent as
    /// [`send_request`](Wire::send_request) does. Decode the answer with
    /// [`decode_result::<M>`](crate::method::decode_result).
    pub(crate) fn call<M: Method<Params: serde::Serialize, Result: serde::de::DeserializeOwned>>(
        &mut self,
        params: &M::Params,
        options: RequestOptions,
        now: Instant,
    ) -> Result<RequestId, SendError> {
        let mut buf = core::mem::take(&mut self.params);
        let result = encode_params(params, &mut buf)
            .and_then(|raw| self.send_request(M::NAME, raw, options, now));
        self.params = buf;
        result
    }

    /// Sends a notification to `N`, serializing the params as [`call`](Wire::call) does.
    pub(crate) fn notify<N: NotificationMethod<Params: serde::Serialize>>(
        &mut self,
        params: &N::Params,
    ) -> Result<(), SendError> {
        let mut buf = core::mem::take(&mut self.params);
        let result =
            encode_params(params, &mut buf).and_then(|raw| self.send_notification(N::NAME, raw));
        self.params = buf;
        result
    }

    /// Answers a request the peer sent with a typed result (serialized straight into a
    /// reused buffer) or an error object, as [`respond`](Wire::respond) does. A result
    /// that fails to serialize is answered with `-32603` Internal error: the request is
    /// answered either way.
    pub(crate) fn respond_typed<T: serde::Serialize + ?Sized>(
        &mut self,
        id: IncomingId,
        result: Result<&T, &ErrorObject<'_>>,
    ) -> Result<(), UnknownRequest> {
        let value = match result {
            Ok(value) => value,
            Err(e) => return self.respond(id, Err(e)),
        };
        let mut buf = core::mem::take(&mut self.params);
        buf.clear();
        let answer = match write_json(&mut buf, value) {
            // serde_json wrote one JSON value.
            Ok(()) => match core::str::from_utf8(&buf) {
                Ok(text) => self.respond(id, Ok(RawValue::from_validated(text))),
                Err(_) => self.respond(id, Err(&ErrorObject::internal_error())),
            },
            Err(_) => self.respond(id, Err(&ErrorObject::internal_error())),
        };
        self.params = buf;
        answer
    }
}
