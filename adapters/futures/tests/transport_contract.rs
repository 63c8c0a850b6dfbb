//! The driver's side of the [`Transport`] contract, over an in-memory message transport:
//! after [`Received::Drained`] the driver does not ask the transport again until it is
//! woken (a WebSocket would spend a whole read attempt finding nothing), and after
//! [`Received::Data`] it asks again in the same turn; a transport that
//! [wakes on input](Transport::wakes_on_input) is asked again only once the waker it was
//! given fired, however often the task is polled for other reasons; and a pass that left
//! the machine blank is followed by one that only asks for input.

use std::collections::VecDeque;
use std::future::Future;
use std::io;
use std::pin::Pin;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll, Waker};

use sansrpc::connection::Connection;
use sansrpc::method::NotificationMethod;
use sansrpc::Instant;
use sansrpc_futures::transport::{Received, Transport};
use sansrpc_futures::{AsyncIoTimer, AsyncRouter, Builder};

enum Record {}
impl NotificationMethod for Record {
    const NAME: &'static str = "record";
    type Params = (u64,);
}

/// Messages the test queues, handed in all at once per call, and the calls counted.
#[derive(Default)]
struct Inbox {
    messages: VecDeque<Vec<u8>>,
    waker: Option<Waker>,
    receives: usize,
    /// Calls of `poll_transmit`, and the frames it took.
    transmits: usize,
    sent: Vec<Vec<u8>>,
}

struct Memory {
    inbox: Arc<Mutex<Inbox>>,
    /// Report `Drained` (else `Data`) after handing messages in.
    drained: bool,
    /// What [`Transport::wakes_on_input`] says.
    wakes: bool,
}

impl Transport for Memory {
    fn is_message_based(&self) -> bool {
        true
    }

    fn wakes_on_input(&self) -> bool {
        self.wakes
    }

    fn poll_receive(
        &mut self,
        cx: &mut Context<'_>,
        conn: &mut Connection,
        now: Instant,
    ) -> Poll<io::Result<Received>> {
        let mut inbox = self.inbox.lock().unwrap();
        inbox.receives += 1;
        let mut taken = 0;
        while let Some(message) = inbox.messages.pop_front() {
            conn.handle_message(&message, now).expect("room");
            taken += 1;
        }
        inbox.waker = Some(cx.waker().clone());
        match taken {
            0 => Poll::Pending,
            _ if self.drained => Poll::Ready(Ok(Received::Drained)),
            _ => Poll::Ready(Ok(Received::Data)),
        }
    }

    fn poll_transmit(
        &mut self,
        _: &mut Context<'_>,
        conn: &mut Connection,
    ) -> Poll<io::Result<()>> {
        let mut inbox = self.inbox.lock().unwrap();
        inbox.transmits += 1;
        let mut frame = Vec::new();
        while conn.poll_transmit(&mut frame).is_some() {
            inbox.sent.push(std::mem::take(&mut frame));
        }
        Poll::Ready(Ok(()))
    }

    fn poll_close(&mut self, _: &mut Context<'_>) -> Poll<io::Result<()>> {
        Poll::Ready(Ok(()))
    }
}

fn notification(n: u64) -> Vec<u8> {
    format!(r#"{{"jsonrpc":"2.0","method":"record","params":[{n}]}}"#).into_bytes()
}

/// Polls the driver with `transport` once per message, the message queued before each
/// poll; how many times the driver asked the transport for input, and the notifications
/// the handler got.
fn run(drained: bool) -> (usize, usize) {
    let recorded = Arc::new(AtomicUsize::new(0));
    let mut router = AsyncRouter::new();
    let count = recorded.clone();
    router
        .notification::<Record, _, _>(move |_| {
            count.fetch_add(1, Ordering::SeqCst);
            async {}
        })
        .unwrap();
    let inbox = Arc::new(Mutex::new(Inbox::default()));
    let transport = Memory {
        inbox: inbox.clone(),
        drained,
        wakes: false,
    };
    let (_client, mut driver) = Builder::new()
        .router(router)
        .connect(transport, AsyncIoTimer);
    let waker = futures::task::noop_waker();
    let mut cx = Context::from_waker(&waker);
    for n in 0..3 {
        inbox.lock().unwrap().messages.push_back(notification(n));
        assert!(Pin::new(&mut driver).poll(&mut cx).is_pending());
    }
    let receives = inbox.lock().unwrap().receives;
    (receives, recorded.load(Ordering::SeqCst))
}

#[test]
fn after_drained_the_driver_waits_to_be_woken_before_reading_again() {
    // One look per poll: the message, then nothing until the next wake.
    assert_eq!(run(true), (3, 3));
    // With `Data`, the driver asks again in the same poll, and finds nothing.
    let (receives, recorded) = run(false);
    assert_eq!(recorded, 3);
    assert!(receives >= 6, "{receives} receives");
}

/// Polls with no wake in between (as a task woken by something else is): how many times
/// the transport was asked for input.
#[test]
fn a_transport_that_wakes_on_input_is_asked_only_after_its_waker_fired() {
    let asked = |wakes: bool| {
        let recorded = Arc::new(AtomicUsize::new(0));
        let mut router = AsyncRouter::new();
        let count = recorded.clone();
        router
            .notification::<Record, _, _>(move |_| {
                count.fetch_add(1, Ordering::SeqCst);
                async {}
            })
            .unwrap();
        let inbox = Arc::new(Mutex::new(Inbox::default()));
        let transport = Memory {
            inbox: inbox.clone(),
            drained: true,
            wakes,
        };
        let (_client, mut driver) = Builder::new()
            .router(router)
            .connect(transport, AsyncIoTimer);
        let waker = futures::task::noop_waker();
        let mut cx = Context::from_waker(&waker);
        assert!(Pin::new(&mut driver).poll(&mut cx).is_pending());
        let first = inbox.lock().unwrap().receives;
        // Polled again, its waker not woken: a message queued in between is not announced.
        inbox.lock().unwrap().messages.push_back(notification(1));
        for _ in 0..3 {
            assert!(Pin::new(&mut driver).poll(&mut cx).is_pending());
        }
        let unwoken = inbox.lock().unwrap().receives - first;
        let before = recorded.load(Ordering::SeqCst);
        // Its waker fires: the next poll asks, and the message is handled.
        let wake = inbox.lock().unwrap().waker.take().expect("a waker");
        wake.wake();
        assert!(Pin::new(&mut driver).poll(&mut cx).is_pending());
        assert_eq!(
            recorded.load(Ordering::SeqCst),
            1,
            "the message after the wake"
        );
        (unwoken, before)
    };
    // Asked on each of the three polls; the first found the message.
    assert_eq!(asked(false), (3, 1));
    // Never asked until woken.
    assert_eq!(asked(true), (0, 0));
}

enum Double {}
impl sansrpc::method::Method for Double {
    const NAME: &'static str = "double";
    type Params = (u64,);
    type Result = u64;
}

/// Polls a driver serving `double` once per request, the request queued before each poll,
/// with `configure`'s config: how many times the transport was asked for input and to
/// transmit, and the answers sent.
fn exchanges(
    configure: impl FnOnce(&mut sansrpc::connection::Config),
) -> (usize, usize, Vec<String>) {
    let mut router = AsyncRouter::new();
    router
        .method::<Double, _, _>(|(n,)| async move { Ok(n * 2) })
        .unwrap();
    let inbox = Arc::new(Mutex::new(Inbox::default()));
    let transport = Memory {
        inbox: inbox.clone(),
        drained: false,
        wakes: false,
    };
    let (_client, mut driver) = Builder::new()
        .router(router)
        .configure(configure)
        .connect(transport, AsyncIoTimer);
    let waker = futures::task::noop_waker();
    let mut cx = Context::from_waker(&waker);
    for n in 1..=3 {
        let request = format!(r#"{{"jsonrpc":"2.0","id":{n},"method":"double","params":[{n}]}}"#);
        inbox
            .lock()
            .unwrap()
            .messages
            .push_back(request.into_bytes());
        assert!(Pin::new(&mut driver).poll(&mut cx).is_pending());
    }
    let inbox = inbox.lock().unwrap();
    let sent = inbox
        .sent
        .iter()
        .map(|f| String::from_utf8(f.clone()).unwrap());
    (inbox.receives, inbox.transmits, sent.collect())
}

#[test]
fn a_pass_that_leaves_the_machine_blank_is_followed_only_by_a_look_for_input() {
    let answers: Vec<String> = (1..=3)
        .map(|n| format!(r#"{{"jsonrpc":"2.0","result":{},"id":{n}}}"#, n * 2))
        .collect();
    // Each poll: a pass takes the request, answers and writes it, and leaves the machine
    // blank; the next only asks for input, finds none, and the task waits.
    let (receives, transmits, sent) = exchanges(|_| {});
    assert_eq!(sent, answers);
    assert_eq!((receives, transmits), (6, 3));
    // A machine with state of its own between exchanges (a deadline: the idle timeout) is
    // never blank: the second pass looks at everything, as it always did.
    let idle = |c: &mut sansrpc::connection::Config| {
        c.idle_timeout = Some(std::time::Duration::from_secs(60))
    };
    let (receives, transmits, sent) = exchanges(idle);
    assert_eq!(sent, answers);
    assert_eq!((receives, transmits), (6, 6));
}
