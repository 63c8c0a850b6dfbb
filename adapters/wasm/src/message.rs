//! `postMessage` as a message transport of the futures driver: a `MessagePort`, a dedicated
//! `Worker` seen from the page, or the worker's own global scope seen from inside it.

use std::cell::RefCell;
use std::fmt;
use std::io;
use std::rc::Rc;
use std::task::{Context, Poll};

use sansrpc::connection::Connection;
use sansrpc::{Instant, Limits};
use sansrpc_futures::{Received, Transport};
use wasm_bindgen::closure::Closure;
use wasm_bindgen::prelude::wasm_bindgen;
use wasm_bindgen::{JsCast, JsValue};
use web_sys::MessageEvent;

use crate::inbox::{Inbox, Over};
use crate::local::SingleThread;

#[wasm_bindgen]
extern "C" {
    /// What `postMessage` is sent to and `onmessage` read from: a `MessagePort`, a `Worker`,
    /// a `DedicatedWorkerGlobalScope` alike.
    #[derive(Clone)]
    type Target;

    #[wasm_bindgen(method, catch, js_name = postMessage)]
    fn post_message(this: &Target, message: &JsValue) -> Result<(), JsValue>;

    #[wasm_bindgen(method, setter = onmessage)]
    fn set_onmessage(this: &Target, handler: Option<&js_sys::Function>);
}

/// Which end the transport is on (for closing it, and for `Debug`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    Port,
    Worker,
    ThisWorker,
}

/// The target and its callbacks; the callbacks are taken off before they are dropped.
struct Channel {
    target: Target,
    kind: Kind,
    inbox: Rc<RefCell<Inbox>>,
    _on_message: Closure<dyn FnMut(MessageEvent)>,
    out: Vec<u8>,
    closed: bool,
}

impl Channel {
    /// Stops listening; a port is closed too.
    fn close(&mut self) {
        if self.closed {
            return;
        }
        self.closed = true;
        self.target.set_onmessage(None);
        if self.kind == Kind::Port {
            self.target.unchecked_ref::<web_sys::MessagePort>().close();
        }
    }
}

impl Drop for Channel {
    fn drop(&mut self) {
        self.close();
    }
}

/// A JSON-RPC connection over `postMessage`: a [`MessagePort`](web_sys::MessagePort) (one end
/// of a `MessageChannel`), a dedicated [`Worker`](web_sys::Worker) from the page that started
/// it, or, inside that worker, its own global scope ([`PostMessage::this_worker`]). The way
/// browser editors host a language server in a worker. The driver takes it with
/// [`Builder::connect`](sansrpc_futures::Builder::connect) and a
/// [`BrowserTimer`](crate::BrowserTimer), or [`spawn`](crate::spawn) does both.
///
/// One message is one JSON-RPC message or batch: sent as a string; received as a string, as
/// UTF-8 bytes (an `ArrayBuffer` or a typed array), or as a structured-cloned object (what
/// `vscode-jsonrpc`'s browser writer posts), which is read as `JSON.stringify` writes it. A
/// message that is none of these is answered as any frame that is not JSON (`-32700`).
///
/// Bounds, as on the [`WebSocket`](crate::WebSocket): a received message over the
/// connection's [`max_frame_bytes`](Limits::max_frame_bytes) ends the transport with an
/// error of kind [`io::ErrorKind::InvalidData`], and so do received messages the connection
/// has not taken once they hold 4 such messages' worth of bytes (`postMessage` has no back
/// pressure: this is the bound on what a peer that sends faster than this side handles
/// costs it). The transport then stops listening (and closes a port). A string is measured
/// before it is copied out of JavaScript.
///
/// `postMessage` tells nothing when the other side goes (a closed port, a terminated worker,
/// a page gone: Chromium 156 fires no `close` event on the port left): calls to a peer that
/// is gone wait for their deadline. End a session in the protocol (LSP's `shutdown` and
/// `exit`), give calls deadlines, or shut the connection down.
pub struct PostMessage(SingleThread<Channel>);

impl fmt::Debug for PostMessage {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("PostMessage")
            .field("kind", &self.0 .0.kind)
            .field("closed", &self.0 .0.closed)
            .finish()
    }
}

/// The bytes of a received message; the bound it crossed, if it did.
fn message_bytes(data: &JsValue, max: usize) -> Result<Vec<u8>, usize> {
    if let Some(text) = data.dyn_ref::<js_sys::JsString>() {
        return string_bytes(text, max);
    }
    if let Some(buffer) = data.dyn_ref::<js_sys::ArrayBuffer>() {
        return bounded(buffer.byte_length() as usize, max)
            .map(|()| js_sys::Uint8Array::new(buffer).to_vec());
    }
    if js_sys::ArrayBuffer::is_view(data) {
        let view = data.unchecked_ref::<js_sys::Uint8Array>();
        let bytes = js_sys::Uint8Array::new_with_byte_offset_and_length(
            &view.buffer(),
            view.byte_offset(),
            view.byte_length(),
        );
        return bounded(bytes.length() as usize, max).map(|()| bytes.to_vec());
    }
    match js_sys::JSON::stringify(data) {
        Ok(text) if text.is_string() => string_bytes(&text, max),
        // Not JSON (a function, a cycle, `undefined`): the connection answers -32700.
        _ => Ok(Vec::new()),
    }
}

/// `text` as UTF-8, when its UTF-8 length is within `max`: its length in UTF-16 code units
/// (never more than its UTF-8 length) is checked before it is copied.
fn string_bytes(text: &js_sys::JsString, max: usize) -> Result<Vec<u8>, usize> {
    bounded(text.length() as usize, max)?;
    let bytes = String::from(text).into_bytes();
    bounded(bytes.len(), max).map(|()| bytes)
}

fn bounded(len: usize, max: usize) -> Result<(), usize> {
    if len > max {
        Err(len)
    } else {
        Ok(())
    }
}

impl PostMessage {
    /// Over `port` (one end of a `MessageChannel`, kept by the page or transferred to a
    /// worker), with messages bounded by `limits` (the builder's:
    /// `builder.connection_config().limits`). The port is started here.
    pub fn port(port: web_sys::MessagePort, limits: &Limits) -> Self {
        PostMessage::over(port.unchecked_into(), Kind::Port, limits)
    }

    /// Over the dedicated `worker`, from the page (or worker) that started it: what it
    /// posts to its global scope arrives here, and what the connection sends goes to it.
    pub fn worker(worker: &web_sys::Worker, limits: &Limits) -> Self {
        let target = worker.clone().unchecked_into();
        PostMessage::over(target, Kind::Worker, limits)
    }

    /// Inside a dedicated worker: over its own global scope, to and from whoever started it
    /// (`self.postMessage`, `self.onmessage`). Fails with [`io::ErrorKind::Unsupported`]
    /// elsewhere (a page, a shared or service worker).
    pub fn this_worker(limits: &Limits) -> io::Result<Self> {
        let scope = js_sys::global()
            .dyn_into::<web_sys::DedicatedWorkerGlobalScope>()
            .map_err(|_| {
                io::Error::new(
                    io::ErrorKind::Unsupported,
                    "PostMessage::this_worker: not in a dedicated worker",
                )
            })?;
        Ok(PostMessage::over(
            scope.unchecked_into(),
            Kind::ThisWorker,
            limits,
        ))
    }

    fn over(target: Target, kind: Kind, limits: &Limits) -> Self {
        let inbox = Rc::new(RefCell::new(Inbox::new(limits)));
        let on_message = {
            let inbox = Rc::clone(&inbox);
            let target = target.clone();
            Closure::<dyn FnMut(MessageEvent)>::new(move |event: MessageEvent| {
                let mut inbox = inbox.borrow_mut();
                if inbox.is_refused() {
                    return;
                }
                let message = message_bytes(&event.data(), inbox.max_message);
                let over = match message {
                    Ok(bytes) => match inbox.check(bytes.len()) {
                        Ok(()) => return inbox.push(bytes),
                        Err(over) => over,
                    },
                    Err(len) => Over::Message(len),
                };
                let reason = match over {
                    Over::Message(n) => format!(
                        "a message of {n} bytes or more, over the limit of {}",
                        inbox.max_message
                    ),
                    Over::Backlog => "the peer sends faster than this side takes".to_owned(),
                };
                target.set_onmessage(None);
                if kind == Kind::Port {
                    target.unchecked_ref::<web_sys::MessagePort>().close();
                }
                inbox.refuse(format!("{reason}: postMessage transport closed"));
            })
        };
        // Setting `onmessage` starts a port's delivery.
        target.set_onmessage(Some(on_message.as_ref().unchecked_ref()));
        PostMessage(SingleThread(Channel {
            target,
            kind,
            inbox,
            _on_message: on_message,
            out: Vec::new(),
            closed: false,
        }))
    }
}

impl Transport for PostMessage {
    fn is_message_based(&self) -> bool {
        true
    }

    fn poll_receive(
        &mut self,
        cx: &mut Context<'_>,
        conn: &mut Connection,
        now: Instant,
    ) -> Poll<io::Result<Received>> {
        self.0 .0.inbox.borrow_mut().poll_receive(cx, conn, now)
    }

    fn poll_transmit(
        &mut self,
        _cx: &mut Context<'_>,
        conn: &mut Connection,
    ) -> Poll<io::Result<()>> {
        let channel = &mut self.0 .0;
        loop {
            channel.out.clear();
            if conn.poll_transmit(&mut channel.out).is_none() {
                return Poll::Ready(Ok(()));
            }
            if channel.closed {
                // Closed by a bound: the driver is told on its next receive.
                continue;
            }
            let text = std::str::from_utf8(&channel.out)
                .map_err(|e| io::Error::new(io::ErrorKind::InvalidData, e))?;
            channel
                .target
                .post_message(&JsValue::from_str(text))
                .map_err(|e| crate::js_error(io::ErrorKind::NotConnected, "postMessage", e))?;
        }
    }

    fn poll_close(&mut self, _cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        self.0 .0.close();
        Poll::Ready(Ok(()))
    }
}
