//! The browser's `WebSocket` as a message transport of the futures driver.

use std::cell::RefCell;
use std::fmt;
use std::future::Future;
use std::io;
use std::pin::Pin;
use std::rc::Rc;
use std::task::{Context, Poll};
use std::time::Duration;

use sansrpc::connection::Connection;
use sansrpc::{Instant, Limits};
use sansrpc_futures::{Received, Transport};
use wasm_bindgen::closure::Closure;
use wasm_bindgen::JsCast;
use web_sys::{BinaryType, CloseEvent, MessageEvent};

use crate::inbox::{Inbox, Over};
use crate::local::SingleThread;
use crate::timer::Sleep;

/// Bytes the browser may hold unsent (`bufferedAmount`) before the transport takes no more
/// output from the connection, whose own output bound then pushes back on its callers.
const SEND_HIGH_WATER: u32 = 1 << 20;

/// How often a transport waiting for `bufferedAmount` to fall looks again (the browser has
/// no event for it).
const SEND_RECHECK: Duration = Duration::from_millis(10);

/// The close code when a received message is over the limit: RFC 6455's 1009 (message too
/// big, §7.4.1) in the private-use range (§7.4.2). A page cannot send 1009 itself: the
/// browser's `WebSocket.close()` takes only 1000 and 3000-4999 and throws for any other
/// code (the socket then closed with 1000 when dropped, a normal closure to the server).
const CLOSE_TOO_BIG: u16 = 4009;

/// The close code when the received messages not taken yet are over their bound: 1008
/// (policy violation, RFC 6455 §7.4.1) in the private-use range, as [`CLOSE_TOO_BIG`].
const CLOSE_BACKLOG: u16 = 4008;

/// What the browser told the socket's callbacks, for the driver to take.
struct Shared {
    opened: bool,
    /// The socket closed (or failed): its close code and reason.
    closed: Option<(u16, String)>,
    inbox: Inbox,
}

/// The socket and its callbacks; the callbacks are taken off the socket before they are
/// dropped (a dropped callback that JavaScript calls would throw).
struct Socket {
    socket: web_sys::WebSocket,
    shared: Rc<RefCell<Shared>>,
    _on_open: Closure<dyn FnMut()>,
    _on_message: Closure<dyn FnMut(MessageEvent)>,
    _on_close: Closure<dyn FnMut(CloseEvent)>,
    /// A frame the connection wrote, reused.
    out: Vec<u8>,
    /// Waiting for `bufferedAmount` to fall.
    recheck: Option<Sleep>,
    close_sent: bool,
}

impl Drop for Socket {
    fn drop(&mut self) {
        self.socket.set_onopen(None);
        self.socket.set_onmessage(None);
        self.socket.set_onclose(None);
        if !self.close_sent {
            let _ = self.socket.close_with_code(1000);
        }
    }
}

/// A JSON-RPC connection over the browser's `WebSocket` (in a page or a worker): one
/// message per JSON-RPC message or batch, sent as text frames; text and binary frames
/// received alike (binary ones as UTF-8 JSON). Made with [`WebSocket::connect`]; the
/// driver takes it with [`Builder::connect`](sansrpc_futures::Builder::connect) and a
/// [`BrowserTimer`](crate::BrowserTimer), or [`spawn`](crate::spawn) does both.
///
/// Bounds: a received message over the connection's
/// [`max_frame_bytes`](Limits::max_frame_bytes) closes the socket (code 4009); received
/// messages the connection has not taken may hold 4 such messages' worth of bytes, beyond
/// which the socket is closed (4008): the browser reads whatever the page does, so this is
/// the bound on what a peer sending faster than the page handles costs. The codes are
/// RFC 6455's 1009 (too big) and 1008 (policy) moved to the private-use range, the only
/// one besides 1000 a page may close with. Output waits while the browser holds 1 MiB
/// unsent.
pub struct WebSocket(SingleThread<Socket>);

impl fmt::Debug for WebSocket {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let socket = &self.0 .0;
        f.debug_struct("WebSocket")
            .field("url", &socket.socket.url())
            .field("ready_state", &socket.socket.ready_state())
            .finish()
    }
}

impl WebSocket {
    /// Opens a WebSocket to `url` (`ws://` or `wss://`) and waits until it is open, with
    /// messages bounded by `limits` (the builder's:
    /// `builder.connection_config().limits`).
    ///
    /// Fails with [`io::ErrorKind::InvalidInput`] for a URL the browser refuses, and with
    /// [`io::ErrorKind::ConnectionRefused`] when the socket closes before it opens. The
    /// browser does not tell a page why a handshake failed: a server that refused the
    /// page's `Origin` (`403`), one that is not there and one that is not a WebSocket
    /// server all look the same (close code 1006); the browser's console says which.
    pub async fn connect(url: &str, limits: &Limits) -> io::Result<WebSocket> {
        let socket = web_sys::WebSocket::new(url)
            .map_err(|e| crate::js_error(io::ErrorKind::InvalidInput, url, e))?;
        socket.set_binary_type(BinaryType::Arraybuffer);
        let shared = Rc::new(RefCell::new(Shared {
            opened: false,
            closed: None,
            inbox: Inbox::new(limits),
        }));

        let on_open = {
            let shared = Rc::clone(&shared);
            Closure::<dyn FnMut()>::new(move || {
                let mut shared = shared.borrow_mut();
                shared.opened = true;
                shared.inbox.wake();
            })
        };
        let on_message = {
            let shared = Rc::clone(&shared);
            let socket = socket.clone();
            Closure::<dyn FnMut(MessageEvent)>::new(move |event: MessageEvent| {
                let data = event.data();
                let bytes = match data.as_string() {
                    Some(text) => text.into_bytes(),
                    None => match data.dyn_ref::<js_sys::ArrayBuffer>() {
                        Some(buffer) => js_sys::Uint8Array::new(buffer).to_vec(),
                        None => return,
                    },
                };
                let inbox = &mut shared.borrow_mut().inbox;
                if inbox.is_refused() {
                    return;
                }
                match inbox.check(bytes.len()) {
                    Ok(()) => inbox.push(bytes),
                    Err(over) => {
                        let (code, reason) = match over {
                            Over::Message(n) => (
                                CLOSE_TOO_BIG,
                                format!("message of {n} bytes over the limit"),
                            ),
                            Over::Backlog => (CLOSE_BACKLOG, "client not keeping up".to_owned()),
                        };
                        // The browser throws for a code it does not send; the socket
                        // would then close with 1000 when dropped, as if all was well.
                        let why = match socket.close_with_code_and_reason(code, &reason) {
                            Ok(()) => format!("{reason} (closed with {code})"),
                            Err(e) => {
                                let what = format!("closing with {code}");
                                let e = crate::js_error(io::ErrorKind::Other, &what, e);
                                format!("{reason} ({e})")
                            }
                        };
                        inbox.refuse(why);
                    }
                }
            })
        };
        let on_close = {
            let shared = Rc::clone(&shared);
            Closure::<dyn FnMut(CloseEvent)>::new(move |event: CloseEvent| {
                let mut shared = shared.borrow_mut();
                shared.closed = Some((event.code(), event.reason()));
                shared.inbox.end();
            })
        };
        socket.set_onopen(Some(on_open.as_ref().unchecked_ref()));
        socket.set_onmessage(Some(on_message.as_ref().unchecked_ref()));
        socket.set_onclose(Some(on_close.as_ref().unchecked_ref()));
        let socket = WebSocket(SingleThread(Socket {
            socket,
            shared,
            _on_open: on_open,
            _on_message: on_message,
            _on_close: on_close,
            out: Vec::new(),
            recheck: None,
            close_sent: false,
        }));
        Opening(Some(socket)).await.map_err(|(code, reason)| {
            let reason = if reason.is_empty() {
                String::new()
            } else {
                format!(": {reason}")
            };
            io::Error::new(
                io::ErrorKind::ConnectionRefused,
                format!("the WebSocket to {url} closed before it opened (code {code}{reason})"),
            )
        })
    }
}

/// Done when the socket opened, or closed first.
struct Opening(Option<WebSocket>);

impl Future for Opening {
    type Output = Result<WebSocket, (u16, String)>;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let socket = self.0.as_ref().expect("polled after it was done");
        let mut shared = socket.0 .0.shared.borrow_mut();
        if let Some(closed) = shared.closed.clone() {
            drop(shared);
            self.0 = None;
            return Poll::Ready(Err(closed));
        }
        if !shared.opened {
            shared.inbox.wait(cx);
            return Poll::Pending;
        }
        drop(shared);
        Poll::Ready(Ok(self.0.take().expect("checked above")))
    }
}

impl Transport for WebSocket {
    fn is_message_based(&self) -> bool {
        true
    }

    fn poll_receive(
        &mut self,
        cx: &mut Context<'_>,
        conn: &mut Connection,
        now: Instant,
    ) -> Poll<io::Result<Received>> {
        self.0
             .0
            .shared
            .borrow_mut()
            .inbox
            .poll_receive(cx, conn, now)
    }

    fn poll_transmit(
        &mut self,
        cx: &mut Context<'_>,
        conn: &mut Connection,
    ) -> Poll<io::Result<()>> {
        let socket = &mut self.0 .0;
        loop {
            if socket.socket.buffered_amount() > SEND_HIGH_WATER {
                let recheck = socket
                    .recheck
                    .get_or_insert_with(|| Sleep::after(SEND_RECHECK));
                if Pin::new(recheck).poll(cx).is_pending() {
                    return Poll::Pending;
                }
                socket.recheck = None;
                continue;
            }
            socket.out.clear();
            if conn.poll_transmit(&mut socket.out).is_none() {
                return Poll::Ready(Ok(()));
            }
            // A message, not the `Utf8Error`: its `Debug` would come into the page.
            let text = std::str::from_utf8(&socket.out).map_err(|_| {
                io::Error::new(io::ErrorKind::InvalidData, "a frame to send is not UTF-8")
            })?;
            socket
                .socket
                .send_with_str(text)
                .map_err(|e| crate::js_error(io::ErrorKind::NotConnected, "WebSocket send", e))?;
        }
    }

    fn poll_close(&mut self, _cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        let socket = &mut self.0 .0;
        if !socket.close_sent {
            socket.close_sent = true;
            socket
                .socket
                .close_with_code(1000)
                .map_err(|e| crate::js_error(io::ErrorKind::Other, "WebSocket close", e))?;
        }
        Poll::Ready(Ok(()))
    }
}
