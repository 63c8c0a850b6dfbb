//! Typed calls: `call::<M>(params)` and `notify::<N>(params)` on the endpoint.

use super::{Endpoint, RequestId, RequestOptions, SendError};
use crate::method::{encode_params, Method, NotificationMethod};
use crate::time::Instant;

impl Endpoint {
    /// Sends a request to `M`: the params are serialized straight into a reused buffer (no
    /// `serde_json::Value` between, see [`encode_params`]), then sent as
    /// [`send_request`](Endpoint::send_request) does. Decode the answer with
    /// [`decode_result::<M>`](crate::method::decode_result).
    pub fn call<M: Method>(
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

    /// Sends a notification to `N`, serializing the params as [`call`](Endpoint::call) does.
    pub fn notify<N: NotificationMethod>(&mut self, params: &N::Params) -> Result<(), SendError> {
        let mut buf = core::mem::take(&mut self.params);
        let result =
            encode_params(params, &mut buf).and_then(|raw| self.send_notification(N::NAME, raw));
        self.params = buf;
        result
    }
}
