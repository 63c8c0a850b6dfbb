//! The driver's side of the [`Transport`] contract, over an in-memory message transport:
//! after [`Received::Drained`] the driver does not ask the transport again until it is
//! woken (a WebSocket would spend a whole read attempt finding nothing), and after
//! [`Received::Data`] it asks again in the same turn.

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
}

struct Memory {
    inbox: Arc<Mutex<Inbox>>,
    /// Report `Drained` (else `Data`) after handing messages in.
    drained: bool,
}

impl Transport for Memory {
    fn is_message_based(&self) -> bool {
        true
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
        while conn.poll_transmit(&mut Vec::new()).is_some() {}
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
