//! Our calls in the driver: commands from `Client`s handed to the connection, and the
//! callers waiting for each token's answers.

use std::collections::BTreeMap;

use futures::channel::oneshot;
use sansrpc::connection::Connection;
use sansrpc::connection::{EndReason, RequestOptions, SendError};
use sansrpc::Instant;

use crate::client::{CallError, Command, RawResult};

/// Who waits for the answers of one token.
enum Waiter {
    Single(oneshot::Sender<RawResult>),
    Batch {
        results: Vec<Option<RawResult>>,
        reply: oneshot::Sender<Result<Vec<RawResult>, CallError>>,
    },
}

/// The callers waiting, by the token their call (or batch) went out with.
#[derive(Default)]
pub(crate) struct Calls {
    waiters: BTreeMap<u64, Waiter>,
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
                self.waiters.remove(&key);
                conn.cancel_call(key, now);
            }
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
                    Ok(()) => {
                        self.waiters.insert(key, Waiter::Single(reply));
                    }
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
                let mut batch = conn.batch(key, now);
                let mut sent = Ok(());
                for e in &entries {
                    sent = if e.call {
                        batch.call(&e.method, e.params.as_deref(), options.clone())
                    } else {
                        batch.notify(&e.method, e.params.as_deref())
                    };
                    if sent.is_err() {
                        break;
                    }
                }
                // Dropping an unsent batch forgets the calls it registered.
                match sent.and_then(|()| batch.send()) {
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
                    Ok(n) => {
                        let results = (0..n).map(|_| None).collect();
                        self.waiters.insert(key, Waiter::Batch { results, reply });
                    }
                }
            }
        }
        None
    }

    /// Gives the answer of one call to whoever waits for its token.
    pub(crate) fn answer(&mut self, token: u64, index: usize, result: RawResult, last: bool) {
        match self.waiters.get_mut(&token) {
            Some(Waiter::Batch { results, .. }) => {
                if let Some(slot) = results.get_mut(index) {
                    *slot = Some(result);
                }
            }
            Some(Waiter::Single(_)) => {
                if let Some(Waiter::Single(reply)) = self.waiters.remove(&token) {
                    let _ = reply.send(result);
                }
                return;
            }
            None => return,
        }
        if last {
            if let Some(Waiter::Batch { results, reply }) = self.waiters.remove(&token) {
                let missing = || Err(CallError::Ended(EndReason::Cancelled));
                let results = results.into_iter().map(|r| r.unwrap_or_else(missing));
                let _ = reply.send(Ok(results.collect()));
            }
        }
    }

    /// Forgets every caller (their senders drop: the calls fail as closed).
    pub(crate) fn clear(&mut self) {
        self.waiters.clear();
    }
}
