//! A connection that reads no socket of its own: its messages come from the HTTP requests
//! that carry them, each with its tag ([`Connection::handle_message_tagged`]; tag 0 is
//! none), and its frames go to an [`Outbox`] at every turn. The MCP server runs a session
//! (or a stateless request) on one.
//!
//! The connection is driven where its input comes from: the request that hands it a
//! message polls it in the request's own future ([`Engine::deliver`]), so a handler that
//! answers at once has its answer written before the request waits for it, with no switch
//! to another task. Every poll, wherever it runs, uses the waker of the connection's own
//! task ([`Engine::run`]): what the connection then waits for (a handler still running, a
//! timer, a message from another session's handler) wakes that task, which drives it until
//! the next request comes.

use std::collections::VecDeque;
use std::future::Future;
use std::io;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError, TryLockError, Weak};
use std::task::{Context, Poll, Waker};

use sansrpc::connection::Connection;
use sansrpc::message::Scanned;
use sansrpc::Instant;
use sansrpc_futures::{Client, Received, ShutdownHandle, Transport};
use tokio::sync::Notify;

use sansrpc_tokio::{Builder, TokioTimer};

/// A message (with what the machine that read it found in it) and its tag.
pub(crate) type Tagged = (Scanned, u64);

/// Where the frames of a connection go; it takes them at once, never waiting.
pub(crate) trait Outbox: Send + Unpin + 'static {
    /// Takes every frame `conn` has to send.
    fn take(&mut self, conn: &mut Connection);
}

/// The messages waiting for the connection, and whether its input ended.
struct Inbox {
    queue: VecDeque<Tagged>,
    closed: bool,
}

/// What [`Engine::hand`] did with a message.
pub(crate) enum Handed {
    /// Queued.
    Queued,
    /// The inbox was full: it waits for room.
    Full(Box<Tagged>),
    /// The connection's input had ended: dropped.
    Dropped,
}

/// The connection's driver, until it ends.
type Running = Pin<Box<dyn Future<Output = ()> + Send>>;

/// A connection and its input, driven by whoever has something for it: a request handing
/// it a message ([`deliver`](Self::deliver)), or its own task ([`run`](Self::run)).
pub(crate) struct Engine {
    inbox: Mutex<Inbox>,
    /// At most this many messages wait; a request with another waits for room.
    capacity: usize,
    /// Room was made in a full inbox.
    room: Notify,
    /// `None` once the connection ended.
    driver: Mutex<Option<Running>>,
    /// The waker of the connection's own task, once it ran: every poll of the driver uses
    /// it.
    task: Mutex<Option<Waker>>,
    /// A poll found the driver being polled elsewhere: the one polling it wakes the task
    /// when it lets go, so that nothing the refused poll came for is missed.
    missed: AtomicBool,
}

fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}

impl Engine {
    /// A connection made by `builder`, its frames going to `out`, up to `capacity`
    /// messages waiting: the engine (run it on a task of its own with [`run`](Self::run)),
    /// the connection's client, and its shutdown handle.
    pub(crate) fn start<O: Outbox>(
        builder: Builder,
        out: O,
        capacity: usize,
    ) -> (Arc<Engine>, Client, ShutdownHandle) {
        let engine = Arc::new(Engine {
            inbox: Mutex::new(Inbox {
                queue: VecDeque::new(),
                closed: false,
            }),
            capacity: capacity.max(1),
            room: Notify::new(),
            driver: Mutex::new(None),
            task: Mutex::new(None),
            missed: AtomicBool::new(false),
        });
        // The transport holds the engine weakly: the engine holds the driver, which holds
        // the transport.
        let transport = Inlet {
            engine: Arc::downgrade(&engine),
            held: None,
            out,
        };
        let (client, driver) = builder.connect(transport, TokioTimer);
        let shutdown = driver.shutdown_handle();
        *lock(&engine.driver) = Some(Box::pin(async move {
            let _ = driver.await;
        }));
        (engine, client, shutdown)
    }

    /// Drives the connection until it ends: the future of its own task.
    pub(crate) async fn run(self: Arc<Self>) {
        std::future::poll_fn(|cx| {
            {
                let mut task = lock(&self.task);
                if !task.as_ref().is_some_and(|w| w.will_wake(cx.waker())) {
                    *task = Some(cx.waker().clone());
                }
            }
            self.poll_driver(cx.waker())
        })
        .await
    }

    /// Hands `message` to the connection (waiting while its inbox is full; dropped when
    /// its input has ended), then drives it here when the connection's task has run once:
    /// a handler that answers at once has answered when this returns.
    #[cfg(test)]
    pub(crate) async fn deliver(&self, message: Tagged) {
        self.deliver_handed(self.hand(message)).await
    }

    /// Queues `message` now when there is room: what is left to do
    /// ([`deliver_handed`](Self::deliver_handed)). Done before a request's future waits,
    /// that future does not carry the message.
    pub(crate) fn hand(&self, message: Tagged) -> Handed {
        let mut inbox = lock(&self.inbox);
        if inbox.closed {
            return Handed::Dropped;
        }
        if inbox.queue.len() < self.capacity {
            inbox.queue.push_back(message);
            return Handed::Queued;
        }
        Handed::Full(Box::new(message))
    }

    /// Finishes handing a message in ([`hand`](Self::hand)): waits for room when the inbox
    /// was full, then drives the connection here when its task has run once.
    pub(crate) async fn deliver_handed(&self, handed: Handed) {
        match handed {
            Handed::Queued => {}
            Handed::Dropped => return,
            // Rare: its future (with a `Notified` in it) is boxed, so that a request's
            // future does not carry it.
            Handed::Full(message) => {
                if !Box::pin(self.offer_when_room(message)).await {
                    return;
                }
            }
        }
        let task = lock(&self.task).clone();
        // Before its task's first turn, that turn reads the inbox.
        if let Some(task) = task {
            if self.poll_driver(&task).is_ready() {
                // Ended here: its task finishes it.
                task.wake();
            }
        }
    }

    /// Waits for room in the inbox and queues `message`; false when the input ended first.
    async fn offer_when_room(&self, message: Box<Tagged>) -> bool {
        let mut message = message;
        loop {
            let room = self.room.notified();
            tokio::pin!(room);
            room.as_mut().enable();
            // Room made between the first offer and `enable` is seen here.
            match self.hand(*message) {
                Handed::Queued => return true,
                Handed::Dropped => return false,
                Handed::Full(back) => message = back,
            }
            room.await;
        }
    }

    /// Ends the connection's input: it ends once it has read what waits.
    pub(crate) fn close(&self) {
        lock(&self.inbox).closed = true;
        self.room.notify_waiters();
        if let Some(task) = lock(&self.task).as_ref() {
            task.wake_by_ref();
        }
    }

    /// Polls the driver with `task` (the connection task's waker), unless it is being
    /// polled elsewhere; ready once the connection ended.
    fn poll_driver(&self, task: &Waker) -> Poll<()> {
        let mut slot = match self.driver.try_lock() {
            Ok(slot) => slot,
            Err(TryLockError::Poisoned(poisoned)) => poisoned.into_inner(),
            Err(TryLockError::WouldBlock) => {
                self.missed.store(true, Ordering::SeqCst);
                // Let go of in the meantime: polled here after all. Else the one polling
                // it sees `missed` once it lets go.
                match self.driver.try_lock() {
                    Ok(slot) => slot,
                    Err(TryLockError::Poisoned(poisoned)) => poisoned.into_inner(),
                    Err(TryLockError::WouldBlock) => return Poll::Pending,
                }
            }
        };
        let ended = match slot.as_mut() {
            Some(driver) => driver
                .as_mut()
                .poll(&mut Context::from_waker(task))
                .is_ready(),
            None => true,
        };
        if ended {
            *slot = None;
        }
        drop(slot);
        if self.missed.swap(false, Ordering::SeqCst) {
            task.wake_by_ref();
        }
        match ended {
            true => Poll::Ready(()),
            false => Poll::Pending,
        }
    }
}

/// The transport: messages from the engine's inbox (one held back while the connection
/// cannot take it), frames to `out`; the inbox closed is the end of the input.
struct Inlet<O> {
    engine: Weak<Engine>,
    held: Option<Tagged>,
    out: O,
}

impl<O: Outbox> Transport for Inlet<O> {
    fn is_message_based(&self) -> bool {
        true
    }

    fn poll_receive(
        &mut self,
        _: &mut Context<'_>,
        conn: &mut Connection,
        now: Instant,
    ) -> Poll<io::Result<Received>> {
        let (mut message, tag) = match self.held.take() {
            Some(held) => held,
            None => {
                let next = match self.engine.upgrade() {
                    Some(engine) => {
                        let mut inbox = lock(&engine.inbox);
                        let next = inbox.queue.pop_front();
                        if next.is_some() && inbox.queue.len() + 1 == engine.capacity {
                            engine.room.notify_waiters();
                        }
                        match next {
                            Some(next) => Some(next),
                            // Whoever hands it the next message drives it, or wakes its
                            // task ([`Engine::deliver`], [`Engine::close`]).
                            None if !inbox.closed => return Poll::Pending,
                            None => None,
                        }
                    }
                    None => None,
                };
                let Some(next) = next else {
                    conn.handle_end_of_input(now);
                    return Poll::Ready(Ok(Received::End));
                };
                next
            }
        };
        if conn.handle_scanned_tagged(&mut message, tag, now).is_err() {
            self.held = Some((message, tag));
            return Poll::Ready(Ok(Received::Stalled));
        }
        Poll::Ready(Ok(Received::Data))
    }

    fn poll_transmit(
        &mut self,
        _: &mut Context<'_>,
        conn: &mut Connection,
    ) -> Poll<io::Result<()>> {
        self.out.take(conn);
        Poll::Ready(Ok(()))
    }

    fn poll_close(&mut self, _: &mut Context<'_>) -> Poll<io::Result<()>> {
        Poll::Ready(Ok(()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use sansrpc_tokio::AsyncRouter;
    use std::time::Duration;

    /// Frames written, each as text.
    struct Written(Arc<Mutex<Vec<String>>>);

    impl Outbox for Written {
        fn take(&mut self, conn: &mut Connection) {
            let mut out = Vec::new();
            while let Some((len, _)) = conn.poll_transmit_tagged(&mut out) {
                let frame = out.split_off(out.len() - len);
                lock(&self.0).push(String::from_utf8(frame).unwrap());
            }
        }
    }

    fn request(id: u64, method: &str) -> Tagged {
        let text = format!(r#"{{"jsonrpc":"2.0","id":{id},"method":"{method}"}}"#);
        (Scanned::new(text.into_bytes()), 0)
    }

    /// A handler that answers at once has answered when `deliver` returns (driven in the
    /// caller's task); one that waits is finished by the connection's own task once what
    /// it waits for comes, with no message to drive it; closing the input ends the task.
    #[tokio::test]
    async fn the_request_drives_the_connection_and_its_task_finishes_what_waits() {
        let (release, gate) = tokio::sync::watch::channel(false);
        let mut router = AsyncRouter::new();
        router
            .raw_method("now", |_| async { Ok(sansrpc::RawValue::NULL.to_owned()) })
            .unwrap();
        router
            .raw_method("later", move |_| {
                let mut gate = gate.clone();
                async move {
                    let _ = gate.wait_for(|open| *open).await;
                    Ok(sansrpc::RawValue::NULL.to_owned())
                }
            })
            .unwrap();
        let written = Arc::new(Mutex::new(Vec::new()));
        let out = Written(Arc::clone(&written));
        let (engine, _client, _shutdown) = Engine::start(Builder::new().router(router), out, 4);
        let task = tokio::spawn(Arc::clone(&engine).run());
        // The task's first turn: its waker is known from then on.
        tokio::task::yield_now().await;
        engine.deliver(request(1, "now")).await;
        assert_eq!(
            lock(&written).len(),
            1,
            "answered inline: {:?}",
            lock(&written)
        );
        assert!(lock(&written)[0].contains(r#""id":1"#));
        engine.deliver(request(2, "later")).await;
        assert_eq!(lock(&written).len(), 1);
        release.send(true).unwrap();
        tokio::time::timeout(Duration::from_secs(5), async {
            while lock(&written).len() < 2 {
                tokio::task::yield_now().await;
            }
        })
        .await
        .expect("the connection's task answers the call that waited");
        assert!(lock(&written)[1].contains(r#""id":2"#));
        engine.close();
        tokio::time::timeout(Duration::from_secs(5), task)
            .await
            .expect("the input's end ends the connection")
            .unwrap();
    }

    /// A message handed to a full inbox waits for room, outside the request's future until
    /// then (boxed), and is read once the connection takes what waits; one handed after the
    /// input ended is dropped.
    #[tokio::test]
    async fn a_full_inbox_makes_the_next_message_wait_for_room() {
        let mut router = AsyncRouter::new();
        router
            .raw_method("now", |_| async { Ok(sansrpc::RawValue::NULL.to_owned()) })
            .unwrap();
        let written = Arc::new(Mutex::new(Vec::new()));
        let out = Written(Arc::clone(&written));
        let (engine, _client, _shutdown) = Engine::start(Builder::new().router(router), out, 1);
        // Its task has not run: nothing reads the inbox yet.
        assert!(matches!(engine.hand(request(1, "now")), Handed::Queued));
        let full = engine.hand(request(2, "now"));
        assert!(matches!(full, Handed::Full(_)));
        let waiting = {
            let engine = Arc::clone(&engine);
            tokio::spawn(async move { engine.deliver_handed(full).await })
        };
        tokio::task::yield_now().await;
        assert!(!waiting.is_finished(), "no room yet");
        let task = tokio::spawn(Arc::clone(&engine).run());
        tokio::time::timeout(Duration::from_secs(5), waiting)
            .await
            .expect("room made once the connection read the first")
            .unwrap();
        tokio::time::timeout(Duration::from_secs(5), async {
            while lock(&written).len() < 2 {
                tokio::task::yield_now().await;
            }
        })
        .await
        .expect("both answered");
        assert!(lock(&written)[1].contains(r#""id":2"#));
        engine.close();
        assert!(matches!(engine.hand(request(3, "now")), Handed::Dropped));
        tokio::time::timeout(Duration::from_secs(5), task)
            .await
            .expect("the input's end ends the connection")
            .unwrap();
    }
}
