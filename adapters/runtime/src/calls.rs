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
