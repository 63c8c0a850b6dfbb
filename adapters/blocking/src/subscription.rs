//! Method subscriptions in the Ethereum shape on threads
//! ([`sansrpc::connection::subscriptions`]): a client's [`Subscription`], an iterator of
//! items. The serving side is the core's
//! ([`SubscriptionRouter::subscription`], whose handler gets a
//! [`PendingSubscription`](sansrpc_runtime::subscriptions::PendingSubscription) and then a
//! [`SubscriptionSink`](sansrpc_runtime::subscriptions::SubscriptionSink) usable from any
//! thread); the driver thread moves the sinks' items into the connection.
//!
//! Every rule is the core's, and so is the state shared between threads (the sinks, the
//! client's inboxes: [`sansrpc_runtime::subscriptions`], shared with the futures adapter):
//! this file only waits.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{mpsc, Arc};

use sansrpc::connection::subscriptions::MethodSubscription;
use sansrpc::connection::Timeout;
use sansrpc::method::CallError;
use sansrpc::RawValue;
use sansrpc_runtime::subscriptions::{answer_false, decode, Inbox, Next, Reader};
use serde::de::DeserializeOwned;
use serde::Serialize;

pub use sansrpc_runtime::subscriptions::{
    Ended, Fanout, NotAccepted, PendingSubscription, SubscriptionError, SubscriptionRouter,
    SubscriptionSink,
};

use crate::client::{wait_answer, Client};

sansrpc_runtime::subscription_types! {
    /// A subscription to the peer, read as an [`Iterator`] of raw JSON items: from
    /// [`Client::subscribe_raw`]. Each `next` blocks until a notification comes; the iterator
    /// ends when the server ends the subscription (after [`SubscriptionError::Ended`] when it
    /// said why), when the connection ends, and after [`unsubscribe`](Self::unsubscribe).
    /// Dropping it unsubscribes (the answer is not waited for).
    ///
    /// It holds at most the declaration's [`max_bytes`](MethodSubscription::max_bytes) of items
    /// unread; past that the oldest are dropped and it yields [`SubscriptionError::Lagged`],
    /// as it does when the server said it dropped items for a slow reader.
    RawSubscription(Client);

    /// A [`RawSubscription`] whose items decode as `T`: from [`Client::subscribe`]. An
    /// [`Iterator`] of `Result<T, SubscriptionError>`.
    Subscription<T>;
}

impl RawSubscription {
    /// Unsubscribes and waits for the server's answer (`true` when it ended the
    /// subscription). The iterator is over either way.
    pub fn unsubscribe(mut self) -> Result<bool, CallError> {
        self.reader.finish();
        let key = self.reader.key();
        let (tx, rx) = mpsc::channel();
        self.client.run(Box::new(move |conn, now, waiters| {
            let token = waiters.token();
            match waiters.subs.unsubscribe(conn, key, token, now) {
                Ok(true) => waiters.callers.call(token, tx),
                // Never bound, or over already (the server ended it).
                Ok(false) => drop(tx.send(Ok(answer_false()))),
                Err(e) => drop(tx.send(Err(CallError::Send(e)))),
            }
        }))?;
        let answer = wait_answer(&rx, self.client.limit(Timeout::Default))?;
        answer.deserialize().map_err(CallError::Decode)
    }
}

impl Iterator for RawSubscription {
    type Item = Next;

    fn next(&mut self) -> Option<Next> {
        self.reader.next_blocking()
    }
}

impl Drop for RawSubscription {
    fn drop(&mut self) {
        if self.reader.finish() {
            let key = self.reader.key();
            let _ = self.client.run(Box::new(move |conn, now, waiters| {
                waiters.subs.abandon(conn, key, now);
            }));
        }
    }
}

impl<T> Subscription<T> {
    /// Unsubscribes ([`RawSubscription::unsubscribe`]).
    pub fn unsubscribe(self) -> Result<bool, CallError> {
        self.raw.unsubscribe()
    }
}

impl<T: DeserializeOwned> Iterator for Subscription<T> {
    type Item = Result<T, SubscriptionError>;

    fn next(&mut self) -> Option<Self::Item> {
        self.raw.next().map(decode)
    }
}

/// Method subscriptions ([`sansrpc::connection::subscriptions`]).
impl Client {
    /// Subscribes with `declaration`'s subscribe method and raw `params` (Ethereum's
    /// `["newHeads"]`), waiting for the server's answer: once it gives the id, its
    /// notifications come as a [`RawSubscription`]. [`CallError::Rpc`] when the server
    /// refused; [`CallError::Decode`] when the answer is not an id.
    pub fn subscribe_raw(
        &self,
        declaration: &MethodSubscription,
        params: Option<&RawValue>,
    ) -> Result<RawSubscription, CallError> {
        let inbox = Inbox::new(declaration.max_bytes);
        let (declaration, params) = (declaration.clone(), params.map(ToOwned::to_owned));
        // Set by the driver before the answer can come.
        let key = Arc::new(AtomicU64::new(0));
        let (tx, rx) = mpsc::channel();
        let (keyed, delivered) = (Arc::clone(&key), Arc::clone(&inbox));
        self.run(Box::new(move |conn, now, waiters| {
            let token = waiters.token();
            keyed.store(token, Ordering::Release);
            let timeout = Timeout::Default;
            let params = params.as_deref();
            match waiters
                .subs
                .subscribe(conn, token, &declaration, params, timeout, delivered, now)
            {
                Ok(()) => waiters.callers.call(token, tx),
                Err(e) => drop(tx.send(Err(CallError::Send(e)))),
            }
        }))?;
        let answer = wait_answer(&rx, self.limit(Timeout::Default));
        let key = key.load(Ordering::Acquire);
        if let Err(CallError::Ended(sansrpc::connection::EndReason::TimedOut)) = &answer {
            // Given up on before the driver reported it: what it makes is ended at once.
            let _ = self.run(Box::new(move |conn, now, waiters| {
                waiters.subs.abandon(conn, key, now);
            }));
        }
        Ok(RawSubscription {
            client: self.clone(),
            reader: Reader::new(key, answer?, inbox),
        })
    }

    /// [`subscribe_raw`](Self::subscribe_raw) with typed params and items:
    /// `client.subscribe::<_, Block>(&MethodSubscription::ethereum(), &("newHeads",))`.
    pub fn subscribe<P: Serialize + ?Sized, T: DeserializeOwned>(
        &self,
        declaration: &MethodSubscription,
        params: &P,
    ) -> Result<Subscription<T>, CallError> {
        let params = sansrpc::client::encode(params)?;
        let raw = self.subscribe_raw(declaration, params.as_deref())?;
        Ok(raw.typed())
    }
}
