//! Typed calls: `call::<M>(params)` and `notify::<N>(params)` on the endpoint.

use alloc::vec::Vec;

use super::{Endpoint, RequestId, RequestOptions, SendError};
use crate::method::{params_of, write_json, Method, NotificationMethod};
use crate::raw::RawValue;
use crate::time::Instant;

impl Endpoint {
    /// Sends a request to `M`: the params are serialized straight into a reused buffer (no
    /// `serde_json::Value` between), then sent as [`send_request`](Endpoint::send_request)
    /// does. Decode the answer with [`decode_result::<M>`](crate::method::decode_result).
    pub fn call<M: Method>(
        &mut self,
        params: &M::Params,
        options: RequestOptions,
        now: Instant,
    ) -> Result<RequestId, SendError> {
        let mut buf = core::mem::take(&mut self.params);
        let result = self.with_params(&mut buf, params, |ep, raw| {
            ep.send_request(M::NAME, raw, options, now)
        });
        self.params = buf;
        result
    }

    /// Sends a notification to `N`, serializing the params as [`call`](Endpoint::call) does.
    pub fn notify<N: NotificationMethod>(&mut self, params: &N::Params) -> Result<(), SendError> {
        let mut buf = core::mem::take(&mut self.params);
        let result = self.with_params(&mut buf, params, |ep, raw| {
            ep.send_notification(N::NAME, raw)
        });
        self.params = buf;
        result
    }

    fn with_params<P: serde::Serialize, T>(
        &mut self,
        buf: &mut Vec<u8>,
        params: &P,
        send: impl FnOnce(&mut Endpoint, Option<&RawValue>) -> Result<T, SendError>,
    ) -> Result<T, SendError> {
        buf.clear();
        write_json(buf, params).map_err(|_| SendError::InvalidParams)?;
        let raw = params_of(buf)?;
        send(self, raw)
    }
}
