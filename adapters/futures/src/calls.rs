//! Our calls in the driver: commands from `Client`s handed to the connection, and the
//! callers waiting for each token's answers.

use futures::channel::oneshot;
use sansrpc::client::{send_batch, Answered, Callers};
use sansrpc::connection::{Connection, Event};
use sansrpc::connection::{RequestOptions, SendError};
use sansrpc::Instant;
use sansrpc_runtime::subscriptions::answer_false;

use crate::client::{CallError, Command, RawResult};
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
    pub(crate) fn apply(
        &mut self,
        conn: &mut Connection,
        command: Command,
        now: Instant,
    ) -> Option<Command> {
        match command {
            Command::Cancel(key) => {
                self.waiters.forget(key);
                // A subscribe is not cancelled (a node may not know how): its answer is
                // awaited, and the subscription it made ended at once.
                if !self.subs.abandon(conn, key, now) {
                    conn.cancel_call(key, now);
                }
            }
            Command::Subscribe { ref reply, .. } if reply.is_canceled() => {}
            Command::Subscribe {
                key,
                declaration,
                params,
                timeout,
                inbox,
                reply,
            } => {
                let sent = self.subs.subscribe(
                    conn,
                    key,
                    &declaration,
                    params.as_deref(),
                    timeout,
                    inbox.clone(),
                    now,
                );
                match sent {
                    Ok(()) => self.waiters.call(key, reply),
                    Err(SendError::OutputFull) => {
                        return Some(Command::Subscribe {
                            key,
                            declaration,
                            params,
                            timeout,
                            inbox,
                            reply,
                        })
                    }
                    Err(e) => {
                        let _ = reply.send(Err(CallError::Send(e)));
                    }
                }
            }
            Command::Unsubscribe { key, call, reply } => {
                match self.subs.unsubscribe(conn, key, call, now) {
                    Err(SendError::OutputFull) => {
                        return Some(Command::Unsubscribe { key, call, reply })
                    }
                    // Never bound, or over already (the server ended it).
                    Ok(false) => {
                        if let Some(reply) = reply {
                            let _ = reply.send(Ok(answer_false()));
                        }
                    }
                    Ok(true) => {
                        if let Some(reply) = reply {
                            self.waiters.call(call, reply);
                        }
                    }
                    Err(e) => {
                        if let Some(reply) = reply {
                            let _ = reply.send(Err(CallError::Send(e)));
                        }
                    }
                }
            }
            // The driver takes these itself; one left at the end drops (its caller's wait
            // is over).
            Command::Close(_) => {}
            // The caller left before it went out.
            Command::Call { ref reply, .. } if reply.is_canceled() => {}
            Command::Batch { ref reply, .. } if reply.is_canceled() => {}
            Command::Call {
                key,
                method,
                params,
                timeout,
                progress,
                on_behalf,
                reply,
            } => {
                let mut options = RequestOptions::timeout(timeout);
                options.progress = progress.clone();
                let sent = match on_behalf {
                    Some(handle) => {
                        conn.call_for(handle, key, &method, params.as_deref(), options, now)
                    }
                    None => conn.call(key, &method, params.as_deref(), options, now),
                };
                match sent {
                    Ok(()) => self.waiters.call(key, reply),
                    Err(SendError::OutputFull) => {
                        return Some(Command::Call {
                            key,
                            method,
                            params,
                            timeout,
                            progress,
                            on_behalf,
                            reply,
                        })
                    }
                    Err(e) => {
                        let _ = reply.send(Err(CallError::Send(e)));
                    }
                }
            }
            Command::Notify {
                method,
                params,
                on_behalf,
                ack,
            } => match match on_behalf {
                Some(handle) => conn.notify_for(handle, &method, params.as_deref()),
                None => conn.notify(&method, params.as_deref()),
            } {
                Err(SendError::OutputFull) => {
                    return Some(Command::Notify {
                        method,
                        params,
                        on_behalf,
                        ack,
                    })
                }
                r => {
                    let _ = ack.send(r.map_err(CallError::Send));
                }
            },
            Command::Progress {
                token,
                value,
                on_behalf,
                ack,
            } => match match on_behalf {
                Some(handle) => conn.send_progress_for(handle, &token, &value),
                None => conn.send_progress(&token, &value),
            } {
                Err(SendError::OutputFull) => {
                    return Some(Command::Progress {
                        token,
                        value,
                        on_behalf,
                        ack,
                    })
                }
                r => {
                    let _ = ack.send(r.map_err(CallError::Send));
                }
            },
            Command::Batch {
                key,
                entries,
                timeout,
                reply,
            } => {
                let options = RequestOptions::timeout(timeout);
                match send_batch(conn, key, &entries, &options, now) {
                    Err(SendError::OutputFull) => {
                        return Some(Command::Batch {
                            key,
                            entries,
                            timeout,
                            reply,
                        })
                    }
                    Err(e) => {
                        let _ = reply.send(Err(CallError::Send(e)));
                    }
                    Ok(0) => {
                        let _ = reply.send(Ok(Vec::new()));
                    }
                    Ok(n) => self.waiters.batch(key, n, reply),
                }
            }
        }
        None
    }

    /// Gives the answer of one call to whoever waits for its token.
    pub(crate) fn answer(
        &mut self,
        conn: &mut Connection,
        token: u64,
        index: usize,
        mut result: RawResult,
        last: bool,
        now: Instant,
    ) {
        self.subs.answer(conn, token, &mut result, now);
        match self.waiters.answer(token, index, result, last) {
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

/// Our call's answer (or its end) that `event` carries, owned, for [`Calls::answer`]:
/// `(token, index, result, last)` of an [`Event::Answer`] or an [`Event::Ended`], which both
/// sides of a driver hand over so; any other event is given back.
pub(crate) fn answer_in(event: Event<'_>) -> Result<(u64, usize, RawResult, bool), Event<'_>> {
    match event {
        Event::Answer {
            token,
            index,
            result,
            last,
        } => {
            let result = match result {
                Ok(raw) => Ok(raw.into_owned()),
                Err(e) => Err(CallError::Rpc(e.into_owned())),
            };
            Ok((token, index, result, last))
        }
        Event::Ended {
            token,
            index,
            reason,
            last,
        } => Ok((token, index, Err(CallError::Ended(reason)), last)),
        event => Err(event),
    }
}
