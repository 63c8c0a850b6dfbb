//! Our calls' answers in a driver: taken from the connection's events, and handed to the
//! callers waiting, the same way on every driver (the futures and the blocking adapters').

use sansrpc::client::{self as shared, Answered, Callers, RawResult};
use sansrpc::connection::{Connection, Event};
use sansrpc::method::CallError;
use sansrpc::Instant;

use crate::subscriptions::Subscribed;

/// The answer to one of our calls, or its end unanswered, owned: what an
/// [`Event::Answer`] or an [`Event::Ended`] carries.
#[derive(Debug)]
pub struct Answer {
    /// The token the call (or its batch) went out with.
    pub token: u64,
    /// The call's place in its batch (0 for a single call).
    pub index: usize,
    /// The result, the peer's error object ([`CallError::Rpc`]), or why the call ended
    /// unanswered ([`CallError::Ended`]).
    pub result: RawResult,
    /// True on the last answer of the token's batch (always on a single call's).
    pub last: bool,
}

impl Answer {
    /// The answer `event` carries, owned; any other event is given back.
    #[inline]
    pub fn take(event: Event<'_>) -> Result<Answer, Event<'_>> {
        match event {
            Event::Answer {
                token,
                index,
                result,
                last,
            } => Ok(Answer {
                token,
                index,
                result: shared::answer(result),
                last,
            }),
            Event::Ended {
                token,
                index,
                reason,
                last,
            } => Ok(Answer {
                token,
                index,
                result: Err(CallError::Ended(reason)),
                last,
            }),
            event => Err(event),
        }
    }

    /// Hands the answer over: a subscribe's id is bound in `subs` first, before any later
    /// notification is read ([`Subscribed::answer`]); then the caller waiting for it in
    /// `callers` is returned with it, once its call (or its whole batch) is answered. `None`
    /// when nobody waits (the caller gave up) or the batch waits for more.
    pub fn hand_over<C, B>(
        mut self,
        conn: &mut Connection,
        subs: &mut Subscribed,
        callers: &mut Callers<C, B>,
        now: Instant,
    ) -> Option<Answered<C, B>> {
        subs.answer(conn, self.token, &mut self.result, now);
        callers.answer(self.token, self.index, self.result, self.last)
    }
}

/// Declares a driver client's raw calls, alike on every driver but for what a call gives
/// (`$answer`: the futures adapter's `PendingCall`, the blocking adapter's `RawResult`):
/// `call_raw`, `call_raw_with` and `call_raw_with_progress`, each a set of
/// [`RequestOptions`](sansrpc::connection::RequestOptions) for the client's own
/// `fn call_raw_options(&self, method: &str, params: Option<&RawValue>, options:
/// RequestOptions) -> $answer`. Used inside the client's `impl` block.
#[doc(hidden)]
#[macro_export]
macro_rules! raw_calls {
    ($answer:ty) => {
        /// Calls `method` with raw params, with the connection's default deadline.
        pub fn call_raw(
            &self,
            method: &str,
            params: Option<&$crate::__private::RawValue>,
        ) -> $answer {
            self.call_raw_with(method, params, $crate::__private::Timeout::Default)
        }

        /// Calls `method` with raw params and its own deadline.
        pub fn call_raw_with(
            &self,
            method: &str,
            params: Option<&$crate::__private::RawValue>,
            timeout: $crate::__private::Timeout,
        ) -> $answer {
            let options = $crate::__private::RequestOptions::timeout(timeout);
            self.call_raw_options(method, params, options)
        }

        /// Calls `method` with raw params, a deadline, and a progress token (an integer or
        /// a string): each progress notification on `token` extends the deadline by
        /// `timeout` again, never past `cap` after sending
        /// ([`RequestOptions::with_progress`](sansrpc::connection::RequestOptions::with_progress)).
        /// Put the token in the params where the peer expects it.
        pub fn call_raw_with_progress(
            &self,
            method: &str,
            params: Option<&$crate::__private::RawValue>,
            timeout: ::core::time::Duration,
            token: impl Into<$crate::__private::Id<'static>>,
            cap: ::core::time::Duration,
        ) -> $answer {
            let deadline = $crate::__private::Timeout::After(timeout);
            let options =
                $crate::__private::RequestOptions::timeout(deadline).with_progress(token, cap);
            self.call_raw_options(method, params, options)
        }
    };
}
