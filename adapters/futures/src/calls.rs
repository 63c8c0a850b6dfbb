//! Our calls in the driver: commands from `Client`s handed to the connection, and the
//! callers waiting for each token's answers.

use std::sync::Arc;

use futures::channel::oneshot;
use sansrpc::client::{send_batch, Answered, Callers};
use sansrpc::connection::Connection;
use sansrpc::connection::{RequestOptions, SendError};
use sansrpc::Instant;
use sansrpc_runtime::calls::Answer;
use sansrpc_runtime::subscriptions::answer_false;

use crate::client::{CallError, Command, RawResult};
use crate::side::sealed::Side;
use crate::subscription::Subscribed;

/// The callers waiting, by the token their call (or batch) went out with.
#[derive(Default)]
pub struct Calls {
    waiters:
        Callers<oneshot::Sender<RawResult>, oneshot::Sender<Result<Vec<RawResult>, CallError>>>,
    /// Our method subscriptions: their routes and streams.
    pub subs: Subscribed,
}

impl Calls {
    /// Hands one command to the connection; gives it back when the output buffer is full.
    /// On a driver of side `S` that serves nothing ([`ClientOnly`](crate::ClientOnly)) no
    /// handler runs, so no command is on behalf of a peer's request: the tagged sends are
    /// not in its program.
    pub(crate) fn apply<S: Side>(
        &mut self,
        conn: &mut Connection,
        command: Command,
        now: Instant,
    ) -> Option<Command> {
        // Sent from the command as it is (how many answers it waits for), so that one the
        // full output refuses goes back whole; its caller is told after.
        let sent = match &command {
            Command::Cancel(key) => {
                self.waiters.forget(*key);
                // A subscribe is not cancelled (a node may not know how): its answer is
                // awaited, and the subscription it made ended at once.
                if !self.subs.abandon(conn, *key, now) {
                    conn.cancel_call(*key, now);
                }
                return None;
            }
            // The driver takes these itself; one left at the end drops (its caller's wait
            // is over).
            Command::Close(_) => return None,
            // The caller left before it went out.
            Command::Call { reply, .. } | Command::Subscribe { reply, .. }
                if reply.is_canceled() =>
            {
                return None
            }
            Command::Batch { reply, .. } if reply.is_canceled() => return None,
            Command::Subscribe {
                key,
                declaration,
                params,
                timeout,
                inbox,
                ..
            } => {
                let (params, inbox) = (params.as_deref(), Arc::clone(inbox));
                let subs = &mut self.subs;
                subs.subscribe(conn, *key, declaration, params, *timeout, inbox, now)
                    .map(|()| 1)
            }
            Command::Unsubscribe { key, call, .. } => self
                .subs
                .unsubscribe(conn, *key, *call, now)
                .map(usize::from),
            Command::Call {
                key,
                method,
                params,
                options,
                on_behalf,
                ..
            } => {
                let (params, options) = (params.as_deref(), options.clone());
                match on_behalf.filter(|_| S::SERVES) {
                    Some(handle) => conn.call_for(handle, *key, method, params, options, now),
                    None => conn.call(*key, method, params, options, now),
                }
                .map(|()| 1)
            }
            Command::Notify {
                method,
                params,
                on_behalf,
                ..
            } => match on_behalf.filter(|_| S::SERVES) {
                Some(handle) => conn.notify_for(handle, method, params.as_deref()),
                None => conn.notify(method, params.as_deref()),
            }
            .map(|()| 0),
            Command::Progress {
                token,
                value,
                on_behalf,
                ..
            } => match on_behalf.filter(|_| S::SERVES) {
                Some(handle) => conn.send_progress_for(handle, token, value),
                None => conn.send_progress(token, value),
            }
            .map(|()| 0),
            Command::Batch {
                key,
                entries,
                timeout,
                ..
            } => send_batch(conn, *key, entries, &RequestOptions::timeout(*timeout), now),
        };
        if let Err(SendError::OutputFull) = sent {
            return Some(command);
        }
        self.settle(command, sent.map_err(CallError::Send));
        None
    }

    /// Tells a command's caller how it went out, or makes it wait for its answers (`sent`:
    /// how many).
    fn settle(&mut self, command: Command, sent: Result<usize, CallError>) {
        match command {
            Command::Call { key, reply, .. } | Command::Subscribe { key, reply, .. } => {
                match sent {
                    Ok(_) => self.waiters.call(key, reply),
                    Err(e) => drop(reply.send(Err(e))),
                }
            }
            Command::Unsubscribe {
                call,
                reply: Some(reply),
                ..
            } => match sent {
                // Never bound, or over already (the server ended it).
                Ok(0) => drop(reply.send(Ok(answer_false()))),
                Ok(_) => self.waiters.call(call, reply),
                Err(e) => drop(reply.send(Err(e))),
            },
            Command::Notify { ack, .. } | Command::Progress { ack, .. } => {
                drop(ack.send(sent.map(drop)));
            }
            Command::Batch { key, reply, .. } => match sent {
                Ok(0) => drop(reply.send(Ok(Vec::new()))),
                Ok(n) => self.waiters.batch(key, n, reply),
                Err(e) => drop(reply.send(Err(e))),
            },
            Command::Unsubscribe { reply: None, .. } | Command::Cancel(_) | Command::Close(_) => {}
        }
    }

    /// Gives `answer` to whoever waits for it ([`Answer::hand_over`]).
    pub(crate) fn hand_over(&mut self, conn: &mut Connection, answer: Answer, now: Instant) {
        match answer.hand_over(conn, &mut self.subs, &mut self.waiters, now) {
            Some(Answered::Call(reply, result)) => drop(reply.send(result)),
            Some(Answered::Batch(reply, results)) => drop(reply.send(Ok(results))),
            None => {}
        }
    }

    /// Forgets every caller (their senders drop: the calls fail as closed).
    pub(crate) fn clear(&mut self) {
        self.waiters.clear();
        self.subs.clear();
    }
}
