//! An MCP client in the browser over Streamable HTTP with `fetch` (feature `wasm`, for
//! `wasm32-unknown-unknown`): the typed client of [`client`](crate::client)
//! ([`ClientBuilder`](crate::client::ClientBuilder),
//! [`McpClient`](crate::client::McpClient)) on a connection whose messages are `fetch`
//! requests, as `sansrpc_mcp::tokio::connect` gives it on tokio. The connection's driver is
//! `sansrpc-wasm`'s (its [`Builder`], its [`Spawned`] task of the page, its timers).
//!
//! Every rule of the transport is the sans-I/O machine's, [`HttpClient`]: each message the
//! connection sends is a `POST` whose headers it decides (`Accept`, `Content-Type`, `Mcp-Session-Id`,
//! `MCP-Protocol-Version`, the 2026-07-28 per-request headers); the answers come as one
//! JSON body or as Server-Sent Events; the session's `GET` stream opens after
//! `notifications/initialized`; a dropped event stream is resumed with `Last-Event-ID`
//! after the server's `retry` delay; on the stateless revision (2026-07-28) a cancelled
//! request's response is closed; closing ends the session with `DELETE`. This driver only
//! moves bytes: it sends what the machine decides with `fetch`, hands it each answer's
//! status and header fields, reads each body's `ReadableStream` chunk by chunk into it
//! (no more while the connection has [`ClientConfig::max_events`] messages to take),
//! drops the exchanges it no longer wants with their `AbortController`, and sleeps on
//! `setTimeout` until its deadlines.
//!
//! The page reads an answer of another origin only if the server lets it: the server must
//! list the page's origin ([`Config::origins`](crate::streamable::Config::origins)), which
//! also answers its preflight and exposes `Mcp-Session-Id` and `MCP-Protocol-Version` to it
//! (a server that does not expose `Mcp-Session-Id` leaves the page without a session). The browser
//! does not tell a page why a `fetch` failed (the server unreachable, or a CORS refusal
//! look the same): the call fails with
//! [`ClientError::Transport`](crate::client::ClientError::Transport) saying so, and
//! the browser's console says which.
//!
//! ```no_run
//! use sansrpc::connection::{Config, Profile};
//! use sansrpc_mcp::client::ClientBuilder;
//! use sansrpc_wasm::Builder;
//!
//! # async fn run() -> Result<(), Box<dyn std::error::Error>> {
//! let mcp = ClientBuilder::new("my-page", "1.0.0");
//! let builder = Builder::new().config(Config::for_profile(Profile::Mcp));
//! // What the client answers of the server (`ping`, sampling, elicitation, roots) and its
//! // notifications, with no router: the page carries none of the router's serving code.
//! let url = "http://127.0.0.1:3000/mcp";
//! let conn = sansrpc_mcp::wasm::connect_answering(url, builder, mcp.answers())?;
//! let server = mcp.initialize(&conn).await?;
//! let sum = server.call_tool("add", serde_json::json!({"a": 1, "b": 2})).await?;
//! server.close().await; // DELETE: the session ends
//! # Ok(()) }
//! ```

use std::cell::RefCell;
use std::future::Future;
use std::io;
use std::pin::Pin;
use std::rc::Rc;
use std::sync::{Arc, OnceLock};
use std::task::{Context, Poll, Waker};

use sansrpc::codec::http::HttpMethod;
use sansrpc::{Connection, Instant};
use sansrpc_futures::{Builder, Client, CloseWithSession, Received, Transport};
use sansrpc_runtime::Clock;
use sansrpc_wasm::{js_error, SingleThread, Sleep, Spawned};
use wasm_bindgen::prelude::wasm_bindgen;
use wasm_bindgen::{JsCast, JsValue};
use wasm_bindgen_futures::JsFuture;

use crate::client::TransportFailures;
use crate::streamable::client::{
    ClientConfig, ClientRequest, ExchangeFailure, ExtraHeaders, HandedOver, HttpClient, OWN_HEADERS,
};

#[wasm_bindgen]
extern "C" {
    // The global `fetch`, as a page and a worker both have it.
    #[wasm_bindgen(js_name = fetch)]
    fn fetch_with_init(input: &str, init: &web_sys::RequestInit) -> js_sys::Promise;
}

/// How to reach a Streamable HTTP MCP server from a page: its URL, the headers every request
/// carries (an `Authorization` of your own), the per-call headers of SEP-2243; then
/// [`connect`](Connect::connect). [`connect`] is the one-liner for a server that needs
/// none of it.
#[must_use = "a Connect does nothing until `connect`"]
pub struct Connect {
    url: String,
    headers: Vec<(String, String)>,
    per_frame: Option<Arc<ExtraHeaders>>,
}

impl std::fmt::Debug for Connect {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let names: Vec<&str> = self.headers.iter().map(|(n, _)| n.as_str()).collect();
        f.debug_struct("Connect")
            .field("url", &self.url)
            .field("headers", &names)
            .field("headers_for", &self.per_frame.is_some())
            .finish()
    }
}

impl Connect {
    /// The server at `url` (`http://` or `https://`, or a path of the page's own origin).
    pub fn new(url: &str) -> Connect {
        Connect {
            url: url.to_owned(),
            headers: Vec::new(),
            per_frame: None,
        }
    }

    /// A header field on every request of the session (the POSTs, the GET stream and its
    /// resumptions, the `DELETE`), e.g. `("authorization", "Bearer …")`. The server must
    /// allow it in its preflight answer. The fields the transport sets itself
    /// ([`OWN_HEADERS`]) are refused by [`connect`](Self::connect).
    pub fn header(mut self, name: &str, value: &str) -> Connect {
        self.headers.push((name.to_owned(), value.to_owned()));
        self
    }

    /// Extra headers for each POST, from its frame: on the stateless revision, the
    /// `Mcp-Param-*` headers of a `tools/call` (SEP-2243), from the typed client's
    /// [`ParamHeaders`](crate::client::ParamHeaders):
    /// `.headers_for(move |frame| headers.for_frame(frame))` with
    /// `let headers = mcp.param_headers();`.
    pub fn headers_for<F>(mut self, headers: F) -> Connect
    where
        F: Fn(&[u8]) -> Vec<(String, String)> + Send + Sync + 'static,
    {
        self.per_frame = Some(Arc::new(headers));
        self
    }

    /// Runs the connection's driver as a task of the page with `builder` (its router
    /// answers the server's requests: sampling, elicitation, roots). Nothing is sent until
    /// the first call (`initialize`, or `server/discover` on 2026-07-28).
    ///
    /// An error (`InvalidInput`) for a URL the browser cannot parse, or a header that is
    /// not one or that the transport sets itself.
    pub fn connect(self, builder: Builder) -> io::Result<Spawned> {
        self.open_with(builder, sansrpc_wasm::spawn)
    }

    /// Like [`connect`](Self::connect), for a page whose connection answers only what the
    /// MCP client does ([`ClientBuilder::answers`](crate::client::ClientBuilder::answers):
    /// the server's `ping`, sampling, elicitation and roots, and its notifications): a
    /// router set on `builder` is not used, and the page carries none of the router's
    /// serving code (about 90 KB of the example page).
    pub fn connect_answering(
        self,
        builder: Builder,
        answers: Arc<dyn sansrpc_futures::Answers>,
    ) -> io::Result<Spawned> {
        self.open_with(builder, move |builder, transport| {
            sansrpc_wasm::spawn_answering(builder, transport, answers)
        })
    }

    /// Checks the URL and headers, then runs the connection's driver with `spawn`.
    fn open_with(
        self,
        builder: Builder,
        spawn: impl FnOnce(Builder, Fetch) -> Spawned,
    ) -> io::Result<Spawned> {
        let invalid = |why: String| io::Error::new(io::ErrorKind::InvalidInput, why);
        // The browser's own parsing (a relative URL is of the page's origin).
        web_sys::Request::new_with_str(&self.url)
            .map_err(|e| js_error(io::ErrorKind::InvalidInput, &self.url, e))?;
        let check =
            web_sys::Headers::new().map_err(|e| js_error(io::ErrorKind::Other, "Headers", e))?;
        let mut headers = Vec::with_capacity(self.headers.len());
        for (name, value) in self.headers {
            let lower = name.to_ascii_lowercase();
            if OWN_HEADERS.contains(&lower.as_str()) {
                return Err(invalid(format!(
                    "the header `{name}` is set by the transport itself"
                )));
            }
            check.append(&name, &value).map_err(|e| {
                js_error(
                    io::ErrorKind::InvalidInput,
                    &format!("the header `{name}`"),
                    e,
                )
            })?;
            headers.push((lower, value));
        }
        let config = ClientConfig {
            headers,
            ..ClientConfig::default()
        };
        Ok(open(self.url, builder, config, self.per_frame, spawn))
    }
}

/// Connects to the Streamable HTTP MCP endpoint at `url` with `fetch` and runs the
/// connection's driver as a task of the page (or worker); nothing is sent until you call
/// `initialize`. Fails as [`Connect::connect`] does.
pub fn connect(url: &str, builder: Builder) -> io::Result<Spawned> {
    Connect::new(url).connect(builder)
}

/// Like [`connect`], with the connection answering only what the MCP client does
/// ([`Connect::connect_answering`]): `connect_answering(url, Builder::new(), mcp.answers())`.
pub fn connect_answering(
    url: &str,
    builder: Builder,
    answers: Arc<dyn sansrpc_futures::Answers>,
) -> io::Result<Spawned> {
    Connect::new(url).connect_answering(builder, answers)
}

/// The session of a connection [`connect`] made, as the connection's handles see it.
#[derive(Default)]
struct SessionOf(OnceLock<SingleThread<Rc<Shared>>>);

/// The `Mcp-Session-Id` the connection's requests carry now (the server's answer to the
/// last `initialize` set it), or `None` before a session started, on the stateless
/// revision, for a server without sessions (or one that does not expose the header to the
/// page), or for a connection [`connect`] did not make.
pub fn session_id(client: &Client) -> Option<String> {
    let of = client.local::<SessionOf>();
    let shared = of.0.get()?.get();
    let state = shared.state.borrow();
    state.machine.session_id().map(str::to_owned)
}

/// The reason the transport gave for the last exchange it could not make on `client`'s
/// connection (a `fetch` that failed), for a call that ended with
/// [`EndReason::Unanswered`](sansrpc::connection::EndReason::Unanswered); the typed client
/// gives it in its error by itself.
pub fn last_failure(client: &Client) -> Option<Arc<dyn std::error::Error + Send + Sync>> {
    client.local::<TransportFailures>().last()
}

/// What the transport and its exchanges share: the machine and what moves bytes.
struct Shared {
    url: String,
    /// Asked for the extra headers of each POST.
    extra: Option<Arc<ExtraHeaders>>,
    /// Where the causes of the exchanges that could not be made are told.
    failures: Arc<OnceLock<Arc<TransportFailures>>>,
    /// The machine's clock (`performance.now()`).
    clock: Clock,
    state: RefCell<State>,
}

struct State {
    machine: HttpClient,
    /// The exchanges under way, to abort one the machine no longer wants: a few (the
    /// session's GET stream, the POSTs in flight), so a list, not a hash map (whose code
    /// for it was 2.9 KB of the MCP page).
    exchanges: Vec<(u64, web_sys::AbortController)>,
    /// The transport's task, woken when the machine has events or a new deadline.
    waker: Option<Waker>,
    /// Body readers waiting for the connection to take messages.
    room: Vec<Waker>,
}

impl State {
    /// Forgets `exchange`: its controller, if it is still under way.
    fn end(&mut self, exchange: u64) -> Option<web_sys::AbortController> {
        let at = self.exchanges.iter().position(|(e, _)| *e == exchange)?;
        Some(self.exchanges.swap_remove(at).1)
    }
}

impl Shared {
    /// After any input: sends the requests the machine gives, aborts the exchanges it no
    /// longer wants, and wakes the transport for its events and deadline.
    fn pump(self: &Rc<Self>, state: &mut State) {
        while let Some(request) = state.machine.poll_request() {
            let exchange = request.exchange;
            match web_sys::AbortController::new() {
                Ok(controller) => {
                    let signal = controller.signal();
                    state.exchanges.push((exchange, controller));
                    wasm_bindgen_futures::spawn_local(run(Rc::clone(self), request, signal));
                }
                Err(e) => {
                    let cause = js_error(io::ErrorKind::Other, "AbortController", e);
                    let now = self.clock.now();
                    if state
                        .machine
                        .handle_failure(exchange, ExchangeFailure::Unsent, now)
                    {
                        self.record(Arc::new(cause));
                    }
                }
            }
        }
        while let Some(exchange) = state.machine.poll_abort() {
            if let Some(controller) = state.end(exchange) {
                controller.abort();
            }
        }
        if let Some(waker) = &state.waker {
            waker.wake_by_ref();
        }
    }

    fn record(&self, cause: Arc<dyn std::error::Error + Send + Sync>) {
        if let Some(failures) = self.failures.get() {
            failures.record(cause);
        }
    }
}

fn open(
    url: String,
    builder: Builder,
    config: ClientConfig,
    extra: Option<Arc<ExtraHeaders>>,
    spawn: impl FnOnce(Builder, Fetch) -> Spawned,
) -> Spawned {
    let failures: Arc<OnceLock<Arc<TransportFailures>>> = Arc::default();
    let shared = Rc::new(Shared {
        url,
        extra,
        failures: Arc::clone(&failures),
        clock: Clock::new(),
        state: RefCell::new(State {
            machine: HttpClient::new(config),
            exchanges: Vec::new(),
            waker: None,
            room: Vec::new(),
        }),
    });
    let transport = Fetch(SingleThread::new(Messages {
        shared: Rc::clone(&shared),
        held: None,
        buf: Vec::new(),
        timer: None,
        closing: false,
    }));
    let spawned = spawn(builder, transport);
    // The typed client's last handle ends the session (DELETE) when it goes.
    spawned.client.local::<CloseWithSession>().set();
    let _ = spawned
        .client
        .local::<SessionOf>()
        .0
        .set(SingleThread::new(shared));
    let _ = failures.set(spawned.client.local::<TransportFailures>());
    spawned
}

/// The connection's transport over `fetch` (see the [module](self)).
struct Fetch(SingleThread<Messages>);

/// Frames into the machine, its messages out to the connection; it sleeps until the
/// machine's next deadline.
struct Messages {
    shared: Rc<Shared>,
    held: Option<Vec<u8>>,
    buf: Vec<u8>,
    /// Until the machine's next deadline (that deadline, and the sleep).
    timer: Option<(Instant, Sleep)>,
    closing: bool,
}

/// The connection is over: the exchanges still under way (the session's GET stream, a
/// resumption) are aborted, not left to the browser.
impl Drop for Messages {
    fn drop(&mut self) {
        if let Ok(mut state) = self.shared.state.try_borrow_mut() {
            for (_, controller) in state.exchanges.drain(..) {
                controller.abort();
            }
        }
    }
}

impl Messages {
    /// Runs the machine's timers due, and arms the sleep until its next deadline.
    fn poll_timer(&mut self, cx: &mut Context<'_>, state: &mut State) {
        loop {
            let Some(at) = state.machine.poll_timeout() else {
                self.timer = None;
                return;
            };
            let now = self.shared.clock.now();
            if at > now {
                let sleep = match &mut self.timer {
                    Some((armed, sleep)) if *armed == at => sleep,
                    slot => {
                        let sleep = Sleep::until(self.shared.clock.to_std(at));
                        &mut slot.insert((at, sleep)).1
                    }
                };
                if Pin::new(sleep).poll(cx).is_pending() {
                    return;
                }
            }
            // Due (the sleep may wake a little before the clock, on its rounding).
            self.timer = None;
            state.machine.handle_timeout(now.max(at));
            self.shared.pump(state);
        }
    }
}

impl Transport for Fetch {
    fn is_message_based(&self) -> bool {
        true
    }

    fn poll_receive(
        &mut self,
        cx: &mut Context<'_>,
        conn: &mut Connection,
        now: Instant,
    ) -> Poll<io::Result<Received>> {
        let this = self.0.get_mut();
        let shared = Rc::clone(&this.shared);
        let mut state = shared.state.borrow_mut();
        state.waker = Some(cx.waker().clone());
        this.poll_timer(cx, &mut state);
        let record = |fault| shared.record(Arc::new(fault));
        match state.machine.hand_over(conn, &mut this.held, now, record) {
            HandedOver::Taken => {
                wake_readers(&mut state);
                Poll::Ready(Ok(Received::Data))
            }
            HandedOver::Stalled => Poll::Ready(Ok(Received::Stalled)),
            HandedOver::Nothing => Poll::Pending,
        }
    }

    fn poll_transmit(
        &mut self,
        _: &mut Context<'_>,
        conn: &mut Connection,
    ) -> Poll<io::Result<()>> {
        let this = self.0.get_mut();
        let mut state = this.shared.state.borrow_mut();
        let now = this.shared.clock.now();
        let extra = this.shared.extra.as_deref();
        if state.machine.send_queued(conn, &mut this.buf, extra, now) {
            this.shared.pump(&mut state);
        }
        Poll::Ready(Ok(()))
    }

    /// Ends the session with `DELETE` (when there is one) and waits for the answer, at
    /// most the machine's `close_wait`.
    fn poll_close(&mut self, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        let this = self.0.get_mut();
        let shared = Rc::clone(&this.shared);
        let mut state = shared.state.borrow_mut();
        state.waker = Some(cx.waker().clone());
        if !std::mem::replace(&mut this.closing, true) {
            let now = shared.clock.now();
            state.machine.close(now);
            shared.pump(&mut state);
        }
        this.poll_timer(cx, &mut state);
        if state.machine.is_closed() {
            return Poll::Ready(Ok(()));
        }
        Poll::Pending
    }
}

/// The connection took messages: the body readers waiting for room look again.
fn wake_readers(state: &mut State) {
    for waker in state.room.drain(..) {
        waker.wake();
    }
}

/// Ready when the machine is not backed up (a server that floods waits on its stream).
struct Room<'a>(&'a Shared);

impl Future for Room<'_> {
    type Output = ();

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        let mut state = self.0.state.borrow_mut();
        if !state.machine.is_backed_up() {
            return Poll::Ready(());
        }
        state.room.push(cx.waker().clone());
        Poll::Pending
    }
}

/// One exchange the machine asked for: the request sent with `fetch`, its answer's head,
/// body (chunk by chunk) and end (or failure) handed back to the machine.
async fn run(shared: Rc<Shared>, request: ClientRequest, signal: web_sys::AbortSignal) {
    let exchange = request.exchange;
    let response = match send(&shared.url, &request, &signal).await {
        Ok(response) => response,
        Err(cause) => {
            let mut state = shared.state.borrow_mut();
            let now = shared.clock.now();
            if state
                .machine
                .handle_failure(exchange, ExchangeFailure::Unsent, now)
            {
                shared.record(Arc::new(cause));
            }
            state.end(exchange);
            shared.pump(&mut state);
            return;
        }
    };
    let body = {
        let mut state = shared.state.borrow_mut();
        let fields = header_fields(&response.headers());
        let fields = fields
            .iter()
            .map(|(name, value)| (name.as_str(), value.as_bytes()));
        let now = shared.clock.now();
        state
            .machine
            .handle_head(exchange, response.status(), fields, now);
        shared.pump(&mut state);
        response.body()
    };
    let reader = body.and_then(|body| body.get_reader().dyn_into().ok());
    let end = match reader {
        Some(reader) => read_body(&shared, exchange, &reader).await,
        None => Ok(()),
    };
    let mut state = shared.state.borrow_mut();
    let now = shared.clock.now();
    match end {
        Ok(()) => state.machine.handle_end(exchange, now),
        Err(()) => {
            state
                .machine
                .handle_failure(exchange, ExchangeFailure::Cut, now);
        }
    }
    state.end(exchange);
    shared.pump(&mut state);
}

/// Hands the body to the machine as it comes, chunk by chunk; `Err` when it was cut off
/// (or aborted).
async fn read_body(
    shared: &Rc<Shared>,
    exchange: u64,
    reader: &web_sys::ReadableStreamDefaultReader,
) -> Result<(), ()> {
    loop {
        Room(shared).await;
        let chunk = JsFuture::from(reader.read()).await.map_err(|_| ())?;
        let done = js_sys::Reflect::get(&chunk, &JsValue::from_str("done"))
            .map_err(|_| ())?
            .as_bool()
            .unwrap_or(true);
        if done {
            return Ok(());
        }
        let value = js_sys::Reflect::get(&chunk, &JsValue::from_str("value")).map_err(|_| ())?;
        let Some(bytes) = value.dyn_ref::<js_sys::Uint8Array>() else {
            return Err(());
        };
        let bytes = bytes.to_vec();
        let mut state = shared.state.borrow_mut();
        if !state.exchanges.iter().any(|(e, _)| *e == exchange) {
            // Aborted by the machine meanwhile: nothing more of it is wanted.
            let _ = reader.cancel();
            return Err(());
        }
        let now = shared.clock.now();
        state.machine.handle_body(exchange, &bytes, now);
        shared.pump(&mut state);
    }
}

/// Sends one request the machine decided with `fetch`; the response (its head), or why
/// none came.
async fn send(
    url: &str,
    request: &ClientRequest,
    signal: &web_sys::AbortSignal,
) -> Result<web_sys::Response, io::Error> {
    let failed = |e: JsValue| {
        let e = js_error(io::ErrorKind::ConnectionRefused, "fetch", e);
        io::Error::new(
            e.kind(),
            format!(
                "{e} ({} {url}; the browser does not tell a page why: the server unreachable, \
                 or its CORS answer not allowing this page's origin; the console says which)",
                method_name(request.method)
            ),
        )
    };
    let init = web_sys::RequestInit::new();
    init.set_method(method_name(request.method));
    let headers =
        web_sys::Headers::new().map_err(|e| js_error(io::ErrorKind::Other, "Headers", e))?;
    for (name, value) in &request.headers {
        headers.append(name, value).map_err(|e| {
            js_error(
                io::ErrorKind::InvalidInput,
                &format!("the header `{name}`"),
                e,
            )
        })?;
    }
    init.set_headers(&headers);
    if let Some(body) = &request.body {
        init.set_body(&js_sys::Uint8Array::from(body.as_slice()));
    }
    init.set_signal(Some(signal));
    // Each answer is the server's, never the browser's cache.
    init.set_cache(web_sys::RequestCache::NoStore);
    let response = JsFuture::from(fetch_with_init(url, &init))
        .await
        .map_err(failed)?;
    response
        .dyn_into::<web_sys::Response>()
        .map_err(|e| js_error(io::ErrorKind::InvalidData, "fetch's answer", e))
}

fn method_name(method: HttpMethod) -> &'static str {
    match method {
        HttpMethod::Get => "GET",
        HttpMethod::Delete => "DELETE",
        _ => "POST",
    }
}

/// The header fields of an answer the page may read (CORS hides the others).
fn header_fields(headers: &web_sys::Headers) -> Vec<(String, String)> {
    let mut fields = Vec::new();
    let Ok(Some(entries)) = js_sys::try_iter(headers) else {
        return fields;
    };
    for entry in entries.flatten() {
        let pair = js_sys::Array::from(&entry);
        if let (Some(name), Some(value)) = (pair.get(0).as_string(), pair.get(1).as_string()) {
            fields.push((name, value));
        }
    }
    fields
}
