//! What every driver's client shares, whatever the runtime: the typed side of a call (params
//! encoded, the result decoded), the batch being built ([`Batch`]) and the slot of each of
//! its results, a batch handed to the connection, the table of callers waiting for answers
//! (a batch's results gathered in the order its calls were added), and what a handler knows
//! of the request it answers ([`PeerRequest`]).
//!
//! The futures and blocking adapters' `Client`s are each a thin layer over this module (and
//! `sansrpc_runtime::Observe` for their interceptors): they differ only in
//! how a caller waits. A client for a driver of your own can be too.
//!
//! ```
//! use sansrpc::client::{Answered, Batch, Callers};
//! use sansrpc::RawValue;
//!
//! sansrpc::method!(Add = "add", (i64, i64) => i64);
//!
//! let mut batch = Batch::new(());
//! let sum = batch.call::<Add>(&(1, 2));
//! batch.notify_raw("tick", None);
//! assert_eq!(batch.calls(), 1);
//!
//! // The driver waits for the batch's one call under token 7...
//! let mut callers: Callers<(), &str> = Callers::new();
//! callers.batch(7, batch.calls(), "reply");
//! // ...and the connection answers it.
//! let three = RawValue::from_json("3").unwrap().to_owned();
//! let Some(Answered::Batch("reply", mut results)) = callers.answer(7, 0, Ok(three), true) else {
//!     panic!()
//! };
//! assert_eq!(sum.take(&mut results).unwrap(), 3);
//! ```

use alloc::borrow::{Cow, ToOwned};
use alloc::boxed::Box;
use alloc::vec::Vec;
use core::fmt;
use core::marker::PhantomData;

use serde::de::DeserializeOwned;
use serde::Serialize;

use crate::connection::{Connection, EndReason, Profile, RequestOptions, SendError, Timeout};
use crate::error::ErrorObject;
use crate::id::Id;
use crate::method::{encode_params_owned, CallError, Method, NotificationMethod};
use crate::raw::RawValue;
use crate::time::Instant;
use crate::wire::SortedDeque;

/// What a raw call produces: the result JSON, or why there is none.
pub type RawResult = Result<Box<RawValue>, CallError>;

/// Encodes a call's typed params for the wire: `None` for `()`; a value that does not
/// serialize to an array or an object is [`CallError::Send`]`(`[`SendError::InvalidParams`]`)`.
pub fn encode<P: Serialize + ?Sized>(params: &P) -> Result<Option<Box<RawValue>>, CallError> {
    encode_params_owned(params).map_err(CallError::Send)
}

/// A raw call's or notification's method and params, owned, to cross to the driver:
/// what every client's `*_raw` methods hand to the part that queues them.
pub fn owned(
    method: &str,
    params: Option<&RawValue>,
) -> (Cow<'static, str>, Option<Box<RawValue>>) {
    (Cow::Owned(method.to_owned()), params.map(ToOwned::to_owned))
}

/// Decodes a result of `M`: [`CallError::Decode`] when it does not fit `M::Result`.
pub fn decode<M: Method<Result: DeserializeOwned>>(raw: &RawValue) -> Result<M::Result, CallError> {
    serde_json::from_str(raw.get()).map_err(CallError::Decode)
}

/// The result of an [`Event::Answer`](crate::connection::Event::Answer), owned: the result
/// JSON, or the peer's error object as [`CallError::Rpc`].
pub fn answer(result: Result<Cow<'_, RawValue>, ErrorObject<'_>>) -> RawResult {
    match result {
        Ok(raw) => Ok(raw.into_owned()),
        Err(e) => Err(CallError::Rpc(e.into_owned())),
    }
}

/// One call or notification of a batch, as a client hands it to its driver.
#[derive(Debug, Clone)]
pub struct BatchEntry {
    /// The method.
    pub method: Cow<'static, str>,
    /// The params, as they go on the wire.
    pub params: Option<Box<RawValue>>,
    /// A call (its result has a slot), else a notification.
    pub call: bool,
}

/// How a client sends a batch: what the futures and blocking adapters' clients do
/// differently with one (the first returns a future of the results, the second waits for
/// them). Everything else about a batch is [`Batch`]'s.
pub trait SendBatch {
    /// What sending gives: the results, or a future of them.
    type Sent;

    /// Sends `entries` as one batch, every call with `timeout` (or fails with why the batch
    /// cannot go: an entry whose params did not serialize).
    fn send_batch(
        &self,
        entries: Result<Vec<BatchEntry>, CallError>,
        timeout: Timeout,
    ) -> Self::Sent;
}

/// An outgoing batch: calls and notifications sent as one JSON array, one result per call,
/// matched by id whatever order the peer answers in. Each call's result gets a slot among
/// the batch's results, in the order the calls were added (notifications take none). The
/// adapters' `Batch` is this type over their `Client` (`client.batch()`); a client of your
/// own takes the entries with [`into_parts`](Batch::into_parts).
#[derive(Debug, Clone)]
pub struct Batch<C> {
    client: C,
    entries: Vec<BatchEntry>,
    calls: usize,
    /// The first entry whose params did not serialize: the batch is refused whole.
    error: Option<SendError>,
}

impl<C> Batch<C> {
    /// An empty batch, to be sent by `client`.
    pub fn new(client: C) -> Self {
        Batch {
            client,
            entries: Vec::new(),
            calls: 0,
            error: None,
        }
    }

    /// Adds a call to `M`; its result is at the returned slot.
    pub fn call<M: Method<Params: Serialize, Result: DeserializeOwned>>(
        &mut self,
        params: &M::Params,
    ) -> BatchSlot<M> {
        let index = self.calls;
        self.push(Cow::Borrowed(M::NAME), encode_params_owned(params), true);
        BatchSlot {
            index,
            _method: PhantomData,
        }
    }

    /// Adds a call with raw params; returns the index of its result.
    pub fn call_raw(&mut self, method: &str, params: Option<&RawValue>) -> usize {
        let index = self.calls;
        let params = Ok(params.map(ToOwned::to_owned));
        self.push(Cow::Owned(method.to_owned()), params, true);
        index
    }

    /// Adds notification `N`.
    pub fn notify<N: NotificationMethod<Params: Serialize>>(
        &mut self,
        params: &N::Params,
    ) -> &mut Self {
        self.push(Cow::Borrowed(N::NAME), encode_params_owned(params), false);
        self
    }

    /// Adds a notification with raw params.
    pub fn notify_raw(&mut self, method: &str, params: Option<&RawValue>) -> &mut Self {
        let params = Ok(params.map(ToOwned::to_owned));
        self.push(Cow::Owned(method.to_owned()), params, false);
        self
    }

    fn push(
        &mut self,
        method: Cow<'static, str>,
        params: Result<Option<Box<RawValue>>, SendError>,
        call: bool,
    ) {
        self.calls += usize::from(call);
        match params {
            Ok(params) => self.entries.push(BatchEntry {
                method,
                params,
                call,
            }),
            Err(e) => {
                self.error.get_or_insert(e);
            }
        }
    }

    /// How many calls (results) the batch has so far.
    pub fn calls(&self) -> usize {
        self.calls
    }

    /// The client, and the entries to send or why the batch cannot go out (an entry's
    /// params did not serialize: nothing of it is sent).
    pub fn into_parts(self) -> (C, Result<Vec<BatchEntry>, CallError>) {
        let entries = match self.error {
            Some(e) => Err(CallError::Send(e)),
            None => Ok(self.entries),
        };
        (self.client, entries)
    }
}

impl<C: SendBatch> Batch<C> {
    /// Sends the batch with the connection's default deadline; every call's result, in the
    /// order the calls were added (none for a batch of notifications).
    pub fn send(self) -> C::Sent {
        self.send_with(Timeout::Default)
    }

    /// Sends the batch with its own deadline (for every call in it).
    pub fn send_with(self, timeout: Timeout) -> C::Sent {
        let (client, entries) = self.into_parts();
        client.send_batch(entries, timeout)
    }
}

/// Where a call's result lands among a batch's results (what a client's `Batch::send`
/// returns, one per call, in the order the calls were added).
pub struct BatchSlot<M> {
    index: usize,
    _method: PhantomData<fn() -> M>,
}

impl<M> fmt::Debug for BatchSlot<M> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("BatchSlot")
            .field("index", &self.index)
            .finish()
    }
}

impl<M> Clone for BatchSlot<M> {
    fn clone(&self) -> Self {
        *self
    }
}

impl<M> Copy for BatchSlot<M> {}

impl<M: Method<Result: DeserializeOwned>> BatchSlot<M> {
    /// The index of this call's result among the batch's results.
    pub fn index(self) -> usize {
        self.index
    }

    /// Takes and decodes this call's result from the batch's results (a slot taken twice,
    /// or out of range, is [`EndReason::Cancelled`]).
    pub fn take(self, results: &mut [RawResult]) -> Result<M::Result, CallError> {
        let missing = || Err(CallError::Ended(EndReason::Cancelled));
        let slot = results
            .get_mut(self.index)
            .map(|r| core::mem::replace(r, missing()));
        decode::<M>(&slot.unwrap_or_else(missing)?)
    }
}

/// Sends `entries` as one batch of ours under `token`, every call with `options`: its
/// calls' answers come with `token` and their index among the calls. Returns how many calls
/// wait for an answer; on an error nothing was sent.
pub fn send_batch(
    conn: &mut Connection,
    token: u64,
    entries: &[BatchEntry],
    options: &RequestOptions,
    now: Instant,
) -> Result<usize, SendError> {
    let mut batch = conn.batch(token, now);
    for e in entries {
        if e.call {
            batch.call(&e.method, e.params.as_deref(), options.clone())?;
        } else {
            batch.notify(&e.method, e.params.as_deref())?;
        }
    }
    // Dropping an unsent batch forgets the calls it registered.
    batch.send()
}

/// Who waits for the answers of one token.
enum Waiter<C, B> {
    Call(C),
    Batch {
        results: Vec<Option<RawResult>>,
        reply: B,
    },
}

/// What [`Callers::answer`] completed: a call with its result, or a batch with all of its
/// results in order (a call that ended unanswered holds its reason).
#[derive(Debug)]
pub enum Answered<C, B> {
    /// A single call's waiter and its result.
    Call(C, RawResult),
    /// A batch's waiter and every result.
    Batch(B, Vec<RawResult>),
}

/// The callers waiting for our calls' answers, by the token each call (or batch) went out
/// with: `C` is how a single call's caller is told (a channel's sender), `B` a batch's.
pub struct Callers<C, B> {
    /// By token: tokens mostly grow and answers mostly come in order, which a sorted ring
    /// takes with a push and a pop (and a B-tree of its own cost a page 6 KB of code).
    waiting: SortedDeque<u64, Waiter<C, B>>,
}

impl<C, B> fmt::Debug for Callers<C, B> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Callers")
            .field("waiting", &self.waiting.len())
            .finish()
    }
}

impl<C, B> Default for Callers<C, B> {
    fn default() -> Self {
        Callers {
            waiting: SortedDeque::default(),
        }
    }
}

impl<C, B> Callers<C, B> {
    /// No caller waiting.
    pub fn new() -> Self {
        Callers::default()
    }

    /// `reply` waits for the answer of the call sent with `token`.
    pub fn call(&mut self, token: u64, reply: C) {
        self.waiting.insert(token, Waiter::Call(reply));
    }

    /// `reply` waits for the `calls` answers of the batch sent with `token`.
    pub fn batch(&mut self, token: u64, calls: usize, reply: B) {
        let results = (0..calls).map(|_| None).collect();
        self.waiting.insert(token, Waiter::Batch { results, reply });
    }

    /// Records the answer of call `index` of `token` (`last` as the connection's event
    /// says); returns the waiter to tell once its call, or its whole batch, is answered.
    pub fn answer(
        &mut self,
        token: u64,
        index: usize,
        result: RawResult,
        last: bool,
    ) -> Option<Answered<C, B>> {
        match self.waiting.get_mut(&token)? {
            Waiter::Call(_) => match self.waiting.remove(&token) {
                Some(Waiter::Call(reply)) => Some(Answered::Call(reply, result)),
                _ => None,
            },
            Waiter::Batch { results, .. } => {
                if let Some(slot) = results.get_mut(index) {
                    *slot = Some(result);
                }
                if !last {
                    return None;
                }
                let Some(Waiter::Batch { results, reply }) = self.waiting.remove(&token) else {
                    return None;
                };
                let missing = || Err(CallError::Ended(EndReason::Cancelled));
                let results = results.into_iter().map(|r| r.unwrap_or_else(missing));
                Some(Answered::Batch(reply, results.collect()))
            }
        }
    }

    /// Forgets the waiter of `token` (its caller left); true when there was one.
    pub fn forget(&mut self, token: u64) -> bool {
        self.waiting.remove(&token).is_some()
    }

    /// How many calls and batches are waited for.
    pub fn len(&self) -> usize {
        self.waiting.len()
    }

    /// True when no caller waits.
    pub fn is_empty(&self) -> bool {
        self.waiting.is_empty()
    }

    /// Forgets every waiter (their channels drop).
    pub fn clear(&mut self) {
        self.waiting.clear();
    }
}

/// The peer's request a handler answers, as every adapter's `RequestContext` shows it (the
/// context derefs to it): its id as the peer sent it, and the tokens it carried in the
/// connection's profile.
#[derive(Debug, Clone)]
pub struct PeerRequest {
    id: Id<'static>,
    progress: Option<Id<'static>>,
    partial: Option<Id<'static>>,
    /// The client handles `window/workDoneProgress/create` (LSP).
    creates: bool,
}

impl PeerRequest {
    /// The request `id` with `params`, on a connection with `profile` whose client does
    /// (`creates`) or does not handle `window/workDoneProgress/create`
    /// ([`Connection::client_creates_progress`]).
    pub fn new(id: &Id<'_>, params: Option<&RawValue>, profile: Profile, creates: bool) -> Self {
        PeerRequest {
            id: id.to_owned_id(),
            progress: profile.progress_token(params),
            partial: profile.partial_result_token(params),
            creates,
        }
    }

    /// The request's id, exactly as the peer sent it.
    pub fn id(&self) -> &Id<'static> {
        &self.id
    }

    /// The progress token the peer put in the request (LSP `workDoneToken`, MCP
    /// `_meta.progressToken`), if any.
    pub fn progress_token(&self) -> Option<&Id<'static>> {
        self.progress.as_ref()
    }

    /// The request's `partialResultToken` (LSP), if it carried one.
    pub fn partial_result_token(&self) -> Option<&Id<'static>> {
        self.partial.as_ref()
    }

    /// The work-done progress titled `title` a server may begin for this request
    /// ([`WorkDone::begin`]).
    pub fn work_done(&self, title: &str) -> Option<WorkDone> {
        WorkDone::begin(self.progress.as_ref(), self.creates, title)
    }
}

/// Tokens of the progress servers create (`window/workDoneProgress/create`), unique in the
/// process.
static CREATED: crate::sync::AtomicU64 = crate::sync::AtomicU64::new(1);

/// Work-done progress a server begins for a request (LSP; the adapters'
/// `RequestContext::begin_work_done`): the token, the `window/workDoneProgress/create`
/// params to call the client with first when the token is new, and the `begin` report.
#[derive(Debug, Clone)]
pub struct WorkDone {
    /// The progress token: the reports and the end that follow go on it.
    pub token: Id<'static>,
    /// The params of `window/workDoneProgress/create`, when the client must create the
    /// token before it is used (as the protocol requires of server-initiated progress).
    pub create: Option<Box<RawValue>>,
    /// `{"kind": "begin", "title": …}`, the first report.
    pub begin: Box<RawValue>,
}

impl WorkDone {
    /// Progress titled `title` for a request that carried `token` (its `workDoneToken`), on
    /// a connection whose client does (`creates`) or does not handle
    /// `window/workDoneProgress/create`: the request's own token when it has one, else a
    /// new one the client is asked to create; `None` when neither (the client cannot show
    /// progress for this request).
    pub fn begin(token: Option<&Id<'static>>, creates: bool, title: &str) -> Option<WorkDone> {
        let (token, create) = match token {
            Some(token) => (token.clone(), None),
            None if creates => {
                let n = CREATED.fetch_add(1, core::sync::atomic::Ordering::Relaxed);
                let token = Id::string(alloc::format!("sansrpc-progress-{n}"));
                let mut params = b"{\"token\":".to_vec();
                token.write_json(&mut params);
                params.push(b'}');
                (token, Some(owned_json(params)))
            }
            None => return None,
        };
        let mut begin = b"{\"kind\":\"begin\",\"title\":".to_vec();
        crate::json::write_str(&mut begin, title);
        begin.push(b'}');
        Some(WorkDone {
            token,
            create,
            begin: owned_json(begin),
        })
    }
}

/// JSON this module wrote, owned.
fn owned_json(json: Vec<u8>) -> Box<RawValue> {
    let text = alloc::string::String::from_utf8(json).unwrap_or_default();
    RawValue::from_validated(&text).to_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    crate::method!(Add = "add", (i64, i64) => i64);
    crate::method!(Tick = "tick", ());

    #[test]
    fn a_batch_with_params_that_do_not_serialize_is_refused_whole() {
        let mut batch = Batch::new(());
        let ok = batch.call::<Add>(&(1, 2));
        batch.notify::<Tick>(&());
        batch.call_raw("scalar", None);
        assert_eq!((ok.index(), batch.calls()), (0, 2));
        assert_eq!(batch.clone().into_parts().1.unwrap().len(), 3);
        enum Scalar {}
        impl Method for Scalar {
            const NAME: &'static str = "scalar";
            type Params = i64;
            type Result = i64;
        }
        let slot = batch.call::<Scalar>(&5);
        assert_eq!(slot.index(), 2);
        let refused = batch.into_parts().1.unwrap_err();
        assert!(matches!(refused, CallError::Send(SendError::InvalidParams)));
    }

    #[test]
    fn a_batch_is_answered_once_its_last_call_is() {
        let mut callers: Callers<u8, u8> = Callers::new();
        callers.call(1, 10);
        callers.batch(2, 2, 20);
        let two = || Ok(RawValue::from_json("2").unwrap().to_owned());
        assert!(callers.answer(2, 1, two(), false).is_none());
        assert!(matches!(
            callers.answer(1, 0, two(), true),
            Some(Answered::Call(10, Ok(_)))
        ));
        let ended = Err(CallError::Ended(EndReason::TimedOut));
        let Some(Answered::Batch(20, mut results)) = callers.answer(2, 0, ended, true) else {
            panic!("the batch is complete");
        };
        assert!(callers.is_empty());
        let slot = Batch::new(()).call::<Add>(&(0, 0));
        assert!(slot.take(&mut results).unwrap_err().is_timeout());
        assert_eq!(results[1].as_ref().unwrap().get(), "2");
        // Taken twice: cancelled, not a panic.
        assert!(matches!(
            slot.take(&mut results),
            Err(CallError::Ended(EndReason::Cancelled))
        ));
        assert!(callers.answer(3, 0, two(), true).is_none());
    }

    #[test]
    fn work_done_uses_the_requests_token_or_asks_for_one() {
        let token = Id::number(7);
        let own = WorkDone::begin(Some(&token), true, "Indexing \"x\"").unwrap();
        assert_eq!(own.token, token);
        assert!(own.create.is_none());
        assert_eq!(
            own.begin.get(),
            r#"{"kind":"begin","title":"Indexing \"x\""}"#
        );
        let new = WorkDone::begin(None, true, "t").unwrap();
        let create = new.create.unwrap();
        assert!(create.get().starts_with(r#"{"token":"sansrpc-progress-"#));
        assert!(WorkDone::begin(None, false, "t").is_none());
    }
}
