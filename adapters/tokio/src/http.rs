//! JSON-RPC over HTTP/1.1: one message per POST body, on the shared driver.
//!
//! The server reads and writes each connection's raw stream itself and frames it with the
//! core's sans-I/O [`sansrpc::codec::http`] codec: one loop per connection, one connection
//! machine for all of its exchanges. A body is handed to the machine where it lies in the
//! read buffer (a chunked one joined in place), as one message (it classifies it: parse
//! errors, batches, notifications), and the frame it sends back is the answer: a large
//! plain one (`200`, kept alive, no CORS) written with its head in one vectored write
//! straight from the connection's output, any other behind its head in the write buffer;
//! `204` when the body held no request (notifications only: answered once their handlers
//! are dispatched, not when they finish). HTTP/1.1 answers one request at a time per
//! connection, so ids from different exchanges never meet; a pipelined request waits in the
//! read buffer for the answer before it. Nothing is built or timed per request: the head,
//! body and handler time limits share one timer per connection, moved only when it fires
//! (or when a limit would end sooner than it is set), and the write-stall limit is the
//! machine's.
//!
//! The client ([`connect`]) is a transport under the ordinary [`Client`](crate::Client): one
//! POST per call, notification or batch, on HTTP/1.1 connections it keeps alive, made by
//! hyper's client (as the MCP and A2A clients' are); the response body goes back to the
//! connection.

use std::cell::RefCell;
use std::future::Future;
use std::io;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{ready, Context, Poll, Waker};
use std::time::{Duration, SystemTime};

use sansrpc::codec::http::{
    write_head, BodyKind, Exchange, Head, HttpFault, Refusal, RequestDecoder,
};
use sansrpc::connection::Connection;
use sansrpc::Instant;
use tokio::io::{AsyncRead, AsyncWrite};
use tokio::time::{Instant as Clock, Sleep};

use crate::request::{Handshake, Part, Requests, Times, CONTINUE};
use crate::wire::Output;
use crate::{Builder, Received};
use crate::{Origins, ServeOptions, Transport};

#[cfg(feature = "tls")]
pub use crate::http_client::connect_tls;
pub use crate::http_client::{connect, MAX_CONNECTIONS};

/// Room kept in front of an answer in the write buffer for its head, which is written
/// there once the answer's length is known (a longer head is moved in front).
const HEAD_ROOM: usize = 256;

/// The smallest answer written straight from the connection's output with its head in one
/// vectored write ([`HttpServer::write_plain_answer`]); a smaller one is copied behind its
/// head and sent from one buffer. Each piece of a vectored write costs the kernel about
/// what copying a small answer costs us: with 1,000 keep-alive connections and answers of
/// about 40 bytes, three pieces took 1-2 % more server CPU per request than one (loadgen,
/// paired turns), though 0.7 % fewer instructions and 5 % fewer cache misses in user
/// space. Copying 16 KiB costs far more than a piece.
const DIRECT_AT: usize = 16 * 1024;

/// The exchange before any head: nothing allowed, nothing refused.
const NO_EXCHANGE: Exchange = Exchange {
    refused: None,
    allow_origin: None,
    request_headers: None,
};

/// What every connection of one server shares.
#[derive(Debug)]
struct Serving {
    max_body: usize,
    /// The request head's and body's limits.
    times: Times,
    /// The TLS handshake, when configured.
    handshake: Handshake,
    handler_timeout: Duration,
    cors: Option<Origins>,
    cors_max_age: String,
    /// The connections' blank machines: one POST at a time on a connection, and none
    /// depends on another, so each exchange takes the machine used last on its thread.
    machines: sansrpc_futures::Machines,
}

impl Serving {
    fn new(options: &ServeOptions, config: &sansrpc::Config) -> Arc<Serving> {
        let times = Times::of(config);
        Arc::new(Serving {
            max_body: config.limits.max_frame_bytes,
            times,
            handshake: Handshake::new(options, times),
            handler_timeout: options.handler_timeout,
            cors: options.cors.clone(),
            cors_max_age: options.cors_max_age.as_secs().to_string(),
            machines: sansrpc_futures::Machines::new(),
        })
    }

    /// The timer's period: the shortest limit.
    fn period(&self) -> Duration {
        let limits = [self.times.head, self.times.body, Some(self.handler_timeout)];
        limits
            .into_iter()
            .flatten()
            .min()
            .unwrap_or(self.handler_timeout)
    }
}

/// Where the connection stands in its exchange.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Phase {
    /// Waiting for a request head (idle, or part of one read).
    Head,
    /// Reading a body: for the connection, or (`refused`) to be read past, the answer
    /// being the refusal.
    Body { refused: Option<Refusal> },
    /// The body, `input.data()[..len]`, waits for the connection to take it; `used` bytes
    /// of input are consumed once it has.
    Offer { used: usize, len: usize },
    /// The connection has the body; its answer is awaited.
    Await,
    /// An answer is being written; then the connection goes on, ends or is dropped.
    Write(After),
    /// The last answer is written: input ends.
    Ended,
}

/// What happens once an answer is written.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum After {
    /// The next request.
    Next,
    /// The connection ends: requests under way are still answered (to nobody).
    End,
    /// The connection is dropped with its handlers (they ran past their time).
    Drop,
}

/// The HTTP server side of one connection, as a message [`Transport`].
// In this order: what a request reads and writes first, the rest last (with many
// connections each is cold when its request comes, and each cache line touched is a miss),
// from a line's start.
#[repr(C, align(64))]
pub(crate) struct HttpServer<S> {
    phase: Phase,
    /// The exchange under way: the connection stays open after it.
    keep_alive: bool,
    /// HTTP/1.0 keep-alive asks for the header in the answer.
    http10: bool,
    /// The timer was looked at this turn of the driver: the turn's later passes need not.
    timer_polled: bool,
    /// A write of the answer under way found the socket full.
    write_blocked: bool,
    /// The sending side is shut down: the close lingers, reading what still comes.
    shut: bool,
    /// The peer closed its side (a read found the end): the close has nothing to read.
    peer_closed: bool,
    serving: Arc<Serving>,
    /// The timer's deadline, kept here: the timer's own state is another cache line.
    timer_due: Clock,
    /// The waker the timer was last polled with, which it holds until it fires (a reset
    /// keeps it), and it fires no earlier than its deadline: until then it need not be
    /// polled again.
    timer_waker: Option<Waker>,
    /// The driver's time at its latest pass, and the timer's clock at the driver's first
    /// time seen (so that the time the driver gives each pass serves for the timer too,
    /// without reading the clock again).
    now: Instant,
    anchor: Option<(Clock, Instant)>,
    /// The timer's clock at `now`, once asked for (an exchange asks up to four times, most
    /// in one pass).
    now_clock: Option<Clock>,
    /// When the body's head came, or the body was handed in.
    since: Clock,
    /// When the last exchange ended (or the connection opened).
    idle_since: Clock,
    output: Output,
    requests: Requests,
    stream: S,
    /// What the exchange's head decided (the core's rule, with its CORS answer).
    exchange: Exchange,
    /// One timer for the connection's limits, moved only when it fires early.
    timer: Pin<Box<Sleep>>,
    /// Where the head of an answer other than a plain one is written before it goes in
    /// front of the answer.
    head: Vec<u8>,
    /// Frames no exchange waits for, dropped.
    stray: Vec<u8>,
}

/// The `Date` header's value, and what is made from it: made once a second.
struct Date {
    /// Until when it holds.
    until: Option<Clock>,
    value: String,
    /// The head of a plain answer (`200`, JSON, kept alive, HTTP/1.1, no CORS) but for its
    /// length and the blank line: written whole for nearly every answer.
    ok: Vec<u8>,
}

thread_local! {
    static DATE: RefCell<Date> = const {
        RefCell::new(Date { until: None, value: String::new(), ok: Vec::new() })
    };
}

/// Calls `f` with the `Date` header's value at `at` (an origin server with a clock sends
/// it, RFC 9110 §6.6.1), reading the wall clock only when the second has changed.
fn with_date(at: Clock, f: impl FnOnce(&Date)) {
    DATE.with(|date| {
        let mut date = date.borrow_mut();
        let stale = match date.until {
            Some(until) => at >= until,
            None => true,
        };
        if stale {
            let wall = SystemTime::now();
            let into = wall
                .duration_since(SystemTime::UNIX_EPOCH)
                .map_or(0, |d| d.subsec_nanos());
            let left = Duration::from_nanos(u64::from(1_000_000_000 - into));
            // Into the last second's string: a new second allocates nothing (29 bytes).
            let mut value = std::mem::take(&mut date.value);
            value.clear();
            use std::fmt::Write as _;
            let _ = write!(value, "{}", httpdate::HttpDate::from(wall));
            // What `write_answer_head` writes for such an answer, without its length.
            let mut ok = std::mem::take(&mut date.ok);
            ok.clear();
            let fields: [(&str, &[u8]); 2] = [
                ("date", value.as_bytes()),
                ("content-type", b"application/json"),
            ];
            write_head(&mut ok, 200, None, &fields);
            ok.truncate(ok.len() - 2);
            *date = Date {
                until: Some(at + left),
                value,
                ok,
            };
        }
        f(&date);
    });
}

impl<S> HttpServer<S>
where
    S: AsyncRead + AsyncWrite + Send + Unpin + 'static,
{
    fn new(stream: S, serving: Arc<Serving>) -> Self {
        let now = Clock::now();
        HttpServer {
            stream,
            requests: Requests::new(RequestDecoder::new(serving.max_body)),
            output: Output::default(),
            phase: Phase::Head,
            keep_alive: true,
            http10: false,
            exchange: NO_EXCHANGE,
            timer: Box::pin(tokio::time::sleep_until(now + serving.period())),
            timer_due: now + serving.period(),
            timer_waker: None,
            timer_polled: false,
            idle_since: now,
            since: now,
            now: Instant::from_duration(Duration::ZERO),
            anchor: None,
            now_clock: None,
            head: Vec::new(),
            stray: Vec::new(),
            shut: false,
            peer_closed: false,
            write_blocked: false,
            serving,
        }
    }

    /// The timer's clock at the driver's latest time.
    fn clock(&mut self) -> Clock {
        if let Some(clock) = self.now_clock {
            return clock;
        }
        let now = self.now;
        let (clock, at) = *self.anchor.get_or_insert_with(|| (Clock::now(), now));
        let clock = clock + now.saturating_duration_since(at);
        self.now_clock = Some(clock);
        clock
    }

    /// Starts an exchange at its head: the phase it begins with.
    fn begin(&mut self, head: Head) -> Phase {
        let over = self.requests.too_large(&head);
        self.keep_alive = head.keep_alive;
        self.http10 = head.http10;
        let (body, expect_continue) = (head.body, head.expect_continue);
        self.exchange = Exchange::of(head, self.serving.cors.as_ref());
        let refused = self.exchange.refused;
        match (body, refused) {
            (BodyKind::None, Some(refusal)) => self.refuse(refusal),
            (BodyKind::None, None) => Phase::Offer { used: 0, len: 0 },
            // A body declared over the limit is refused without being read, and so is one
            // the client holds back for `100 Continue`: the connection then closes (what
            // follows on it is unknown).
            _ if over => {
                self.keep_alive = false;
                self.refuse(Refusal::Status(413))
            }
            (_, Some(refusal)) if expect_continue => {
                self.keep_alive = false;
                self.refuse(refusal)
            }
            (_, refused) => {
                if expect_continue && refused.is_none() {
                    self.output.buf.extend_from_slice(CONTINUE);
                }
                self.since = self.clock();
                self.arm(self.serving.times.body);
                Phase::Body { refused }
            }
        }
    }

    /// Moves the timer earlier when `limit` from [`since`](Self::since) ends before it.
    fn arm(&mut self, limit: Option<Duration>) {
        if let Some(limit) = limit {
            let due = self.since + limit;
            if due < self.timer_due {
                self.reset_timer(due);
            }
        }
    }

    /// Moves the timer to `due`.
    fn reset_timer(&mut self, due: Clock) {
        self.timer.as_mut().reset(due);
        self.timer_due = due;
    }

    /// Writes `refusal` as the exchange's answer.
    fn refuse(&mut self, refusal: Refusal) -> Phase {
        let status = refusal.status();
        let after = self.after();
        // A `100 Continue` not yet begun is dropped; one half written goes out whole first.
        if self.output.written == 0 || !self.output.pending() {
            self.output.reset();
        }
        let mut out = std::mem::take(&mut self.output.buf);
        self.write_answer_head(&mut out, status, Some(0), after);
        self.output.buf = out;
        Phase::Write(after)
    }

    /// What follows the exchange's answer.
    fn after(&self) -> After {
        if self.keep_alive {
            After::Next
        } else {
            After::End
        }
    }

    /// True when the answer with `status` followed by `after` has the plain head that
    /// [`with_date`] keeps made (`200`, JSON, kept alive, HTTP/1.1, no CORS) but for its
    /// length.
    fn plain(&self, status: u16, after: After) -> bool {
        status == 200 && after == After::Next && !self.http10 && self.serving.cors.is_none()
    }

    /// Appends the answer's head: `status`, the date, `Connection` as `after` says, the
    /// exchange's fields ([`Exchange::headers`]: the JSON type for `200`, CORS, `Allow`),
    /// the length.
    fn write_answer_head(
        &mut self,
        out: &mut Vec<u8>,
        status: u16,
        length: Option<usize>,
        after: After,
    ) {
        let at = self.clock();
        if self.plain(status, after) {
            if let Some(length) = length {
                // The plain answer's head, made once a second.
                return with_date(at, |date| {
                    out.extend_from_slice(&date.ok);
                    out.extend_from_slice(b"content-length: ");
                    out.extend_from_slice(itoa::Buffer::new().format(length).as_bytes());
                    out.extend_from_slice(b"\r\n\r\n");
                });
            }
        }
        with_date(at, |date| {
            let date = date.value.as_bytes();
            const MOST: usize = 10;
            let mut headers: [(&str, &[u8]); MOST] = [("", b""); MOST];
            let mut n = 0;
            let mut push = |header| {
                headers[n] = header;
                n += 1;
            };
            push(("date", date));
            match after {
                After::Next if self.http10 => push(("connection", b"keep-alive")),
                After::Next => {}
                After::End | After::Drop => push(("connection", b"close")),
            }
            let cors = self.serving.cors.is_some();
            let max_age = self.serving.cors_max_age.as_str();
            self.exchange.headers(status, cors, max_age, |name, value| {
                push((name, value));
            });
            write_head(out, status, length, &headers[..n]);
        });
    }

    /// Writes the answer to the body handed in straight from the connection's output when
    /// it is a plain one (`200`, JSON, kept alive, HTTP/1.1, no CORS) of at least
    /// [`DIRECT_AT`] bytes, the connection has it and the socket takes vectored writes: one
    /// write of the head made once a second (the date's), the length and the body, with
    /// nothing copied; what the socket does not take is copied into the write buffer and
    /// goes out as any answer does. True when the answer is taken so; false when
    /// [`take_answer`](Self::take_answer) is to take it (a smaller answer, or the socket
    /// was not ready: it copies the answer and waits for it).
    fn write_plain_answer(
        &mut self,
        conn: &mut Connection,
        cx: &mut Context<'_>,
    ) -> io::Result<bool> {
        let after = self.after();
        if self.phase != Phase::Await || !self.plain(200, after) || !self.stream.is_write_vectored()
        {
            return Ok(false);
        }
        // Less output than that: no message of it is (and a look costs more than this).
        if conn.buffered_output() < DIRECT_AT {
            return Ok(false);
        }
        // What a handler sent before the answer (a notification) is not it: plain HTTP has
        // no way to send it.
        conn.skip_to_answer();
        let Some(body) = conn.peek_messages().next().filter(|b| b.len() >= DIRECT_AT) else {
            return Ok(false);
        };
        let len = body.len();
        let mut digits = itoa::Buffer::new();
        let mut length = [0u8; 48];
        let length = {
            let mut at = 0;
            for part in [
                b"content-length: ".as_slice(),
                digits.format(len).as_bytes(),
                b"\r\n\r\n",
            ] {
                length[at..at + part.len()].copy_from_slice(part);
                at += part.len();
            }
            &length[..at]
        };
        let at = self.clock();
        let mut sent = Poll::Pending;
        let output = &mut self.output;
        let stream = &mut self.stream;
        with_date(at, |date| {
            let parts = [date.ok.as_slice(), length, body];
            let bufs = parts.map(io::IoSlice::new);
            sent = crate::wire::poll_write_vectored(stream, cx, &bufs, None);
            match sent {
                Poll::Ready(Ok(n)) if n < parts.iter().map(|p| p.len()).sum() => {
                    // What the socket did not take goes out from the write buffer.
                    output.buf.clear();
                    output.written = 0;
                    let mut n = n;
                    for part in parts {
                        let skip = n.min(part.len());
                        output.buf.extend_from_slice(&part[skip..]);
                        n -= skip;
                    }
                }
                _ => {}
            }
        });
        match sent {
            Poll::Pending => Ok(false),
            Poll::Ready(Err(e)) => Err(e),
            Poll::Ready(Ok(_)) => {
                self.output.wrote();
                conn.consume_transmit(len);
                self.phase = Phase::Write(after);
                Ok(true)
            }
        }
    }

    /// Takes the answer to the body handed in, when the connection has it: true when an
    /// answer is now in the write buffer.
    fn take_answer(&mut self, conn: &mut Connection) -> bool {
        if self.phase != Phase::Await {
            while conn.poll_transmit(&mut self.stray).is_some() {
                self.stray.clear();
            }
            return false;
        }
        let after = self.after();
        let out = self.output.buffer();
        // The room for the head in front of the answer: kept from the last answer (its
        // bytes are never sent), zero-filled only when the buffer is new.
        if out.len() != HEAD_ROOM {
            out.clear();
            out.resize(HEAD_ROOM, 0);
        }
        conn.skip_to_answer();
        if conn.poll_transmit(out).is_some() {
            let length = out.len() - HEAD_ROOM;
            if let Some(at) = self.put_plain_head(length, after) {
                self.output.written = at;
                self.phase = Phase::Write(after);
                return true;
            }
            let mut out = std::mem::take(&mut self.output.buf);
            let mut head = std::mem::take(&mut self.head);
            head.clear();
            self.write_answer_head(&mut head, 200, Some(out.len() - HEAD_ROOM), after);
            self.output.written = match HEAD_ROOM.checked_sub(head.len()) {
                Some(at) => {
                    out[at..HEAD_ROOM].copy_from_slice(&head);
                    at
                }
                None => {
                    out.splice(..HEAD_ROOM, head.iter().copied());
                    0
                }
            };
            self.head = head;
            self.output.buf = out;
            self.phase = Phase::Write(after);
            return true;
        }
        if conn.requests_in_flight() != 0 {
            // Not answered yet: the room stays for the answer, and nothing is to be written.
            self.output.written = self.output.buf.len();
            return false;
        }
        // The body is handled, its events routed, and no request of it is left to answer:
        // notifications only, which get no answer.
        let mut out = std::mem::take(&mut self.output.buf);
        out.clear();
        self.write_answer_head(&mut out, 204, None, after);
        self.output.buf = out;
        self.output.written = 0;
        self.phase = Phase::Write(after);
        true
    }

    /// Writes the head of a plain answer (`200`, JSON, kept alive, HTTP/1.1, no CORS) of
    /// `length` bytes at the end of the write buffer's head room, where it goes out from:
    /// where it begins, or `None` when the answer is not a plain one.
    fn put_plain_head(&mut self, length: usize, after: After) -> Option<usize> {
        if !self.plain(200, after) {
            return None;
        }
        let at = self.clock();
        let mut digits = itoa::Buffer::new();
        let digits = digits.format(length).as_bytes();
        let room = &mut self.output.buf[..HEAD_ROOM];
        let mut start = None;
        // The plain answer's head, made once a second.
        with_date(at, |date| {
            let parts = [&date.ok[..], b"content-length: ", digits, b"\r\n\r\n"];
            let len = parts.iter().map(|p| p.len()).sum();
            let Some(mut at) = HEAD_ROOM.checked_sub(len) else {
                return;
            };
            start = Some(at);
            for part in parts {
                room[at..at + part.len()].copy_from_slice(part);
                at += part.len();
            }
        });
        start
    }

    /// Fires the connection's limits: the phase to go on with, or the error ending the
    /// connection at once.
    fn poll_limits(&mut self, cx: &mut Context<'_>) -> io::Result<()> {
        // Once a turn: a timer that fires wakes the task, whose next turn polls it again.
        if std::mem::replace(&mut self.timer_polled, true) {
            return Ok(());
        }
        // Armed with this waker, and not due: it has not fired (a tokio timer fires once the
        // clock has reached its deadline), and still holds the waker.
        let armed = self
            .timer_waker
            .as_ref()
            .is_some_and(|w| w.will_wake(cx.waker()));
        if armed && Clock::now() < self.timer_due {
            return Ok(());
        }
        if !armed {
            self.timer_waker = Some(cx.waker().clone());
        }
        while self.timer.as_mut().poll(cx).is_ready() {
            let now = Clock::now();
            let serving = self.serving.clone();
            let (due, expired) = match self.phase {
                Phase::Head => (serving.times.head.map(|t| self.idle_since + t), None),
                Phase::Body { .. } => (
                    serving.times.body.map(|t| self.since + t),
                    Some(Refusal::Status(408)),
                ),
                Phase::Offer { .. } | Phase::Await => (
                    Some(self.since + serving.handler_timeout),
                    Some(Refusal::Status(204)),
                ),
                Phase::Write(_) | Phase::Ended => (None, None),
            };
            match due {
                Some(due) if due <= now => {
                    let Some(refusal) = expired else {
                        let e = "no request head within the time limit";
                        return Err(io::Error::new(io::ErrorKind::TimedOut, e));
                    };
                    // A body trickling in (slowloris), or handlers past their time: the
                    // answer says so, and the connection is dropped after it (a late
                    // answer cannot meet a later exchange).
                    self.keep_alive = false;
                    self.refuse(refusal);
                    self.phase = Phase::Write(After::Drop);
                    self.reset_timer(now + serving.period());
                }
                Some(due) => self.reset_timer(due),
                None => self.reset_timer(now + serving.period()),
            }
        }
        Ok(())
    }

    /// The answer is written: the next exchange, or the end.
    fn answered(&mut self, after: After, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        match after {
            After::Next => {
                self.phase = Phase::Head;
                self.idle_since = self.clock();
                // A pipelined request waits in the buffer: read it. Or the answer took
                // more than one turn to write: its last bytes were this buffer's, which
                // the driver does not count as the connection's output going out, so it
                // would not offer the input it left unread again.
                if self.requests.read_ahead() > 0 || std::mem::take(&mut self.write_blocked) {
                    cx.waker().wake_by_ref();
                }
            }
            After::End => {
                self.phase = Phase::Ended;
                cx.waker().wake_by_ref();
            }
            After::Drop => {
                ready!(self.output.poll_flushed(&mut self.stream, cx))?;
                let _ = Pin::new(&mut self.stream).poll_shutdown(cx);
                let e = "the connection was closed after its time limit";
                return Poll::Ready(Err(io::Error::new(io::ErrorKind::TimedOut, e)));
            }
        }
        Poll::Ready(Ok(()))
    }

    /// The connection is shutting down: answers still due say `Connection: close`, and a
    /// request not handed in yet (its body arriving, or waiting to be offered) will never
    /// be: it is refused `503` (not processed, so safe to send again elsewhere) rather than
    /// left unanswered when the connection closes.
    fn closing(&mut self) {
        self.keep_alive = false;
        if matches!(self.phase, Phase::Body { .. } | Phase::Offer { .. }) {
            self.phase = self.refuse(Refusal::Status(503));
        }
    }

    /// The peer's input ended (or is over): the connection is told.
    fn end(&mut self, conn: &mut Connection, now: Instant) -> Received {
        self.phase = Phase::Ended;
        conn.handle_end_of_input(now);
        Received::End
    }
}

impl<S> Transport for HttpServer<S>
where
    S: AsyncRead + AsyncWrite + Send + Unpin + 'static,
{
    fn is_message_based(&self) -> bool {
        true
    }

    /// One answer per POST: nothing reaches the peer unasked, so no subscription.
    fn can_push(&self) -> bool {
        false
    }

    /// Exchanges are independent of each other: a blank machine of the server's may serve
    /// any of its connections.
    fn machines(&self) -> Option<&sansrpc_futures::Machines> {
        Some(&self.serving.machines)
    }

    fn poll_receive(
        &mut self,
        cx: &mut Context<'_>,
        conn: &mut Connection,
        now: Instant,
    ) -> Poll<io::Result<Received>> {
        if now != self.now {
            (self.now, self.now_clock) = (now, None);
        }
        loop {
            let part = match self.phase {
                // One exchange at a time: what the peer sends next waits until the answer
                // is written. Not `Pending`, which would promise a wake when input comes
                // (no read is pending to give one: the last read may have taken the body's
                // last byte): input left unread, which the driver offers again once a
                // write has gone out (the answer's last byte among them).
                Phase::Await | Phase::Write(_) => return Poll::Ready(Ok(Received::Stalled)),
                Phase::Ended => return Poll::Ready(Ok(self.end(conn, now))),
                Phase::Offer { used, len } => {
                    if conn.handle_message(self.requests.body(len), now).is_err() {
                        return Poll::Ready(Ok(Received::Stalled));
                    }
                    self.requests.consume(used);
                    self.phase = Phase::Await;
                    self.since = self.clock();
                    self.arm(Some(self.serving.handler_timeout));
                    return Poll::Ready(Ok(Received::Data));
                }
                Phase::Head | Phase::Body { .. } => {
                    ready!(self.requests.poll_part(&mut self.stream, cx))?
                }
            };
            match part {
                Part::Fault(fault) => {
                    self.keep_alive = false;
                    self.exchange = NO_EXCHANGE;
                    let status = match fault {
                        HttpFault::BadRequest => 400,
                        other => other.status(),
                    };
                    self.phase = self.refuse(Refusal::Status(status));
                    return Poll::Ready(Ok(Received::Data));
                }
                Part::Head(head) => {
                    self.phase = self.begin(head);
                    if matches!(self.phase, Phase::Write(_)) {
                        return Poll::Ready(Ok(Received::Data));
                    }
                }
                Part::Body { used, len } => match self.phase {
                    Phase::Body {
                        refused: Some(refusal),
                    } => {
                        self.requests.consume(used);
                        self.phase = self.refuse(refusal);
                        return Poll::Ready(Ok(Received::Data));
                    }
                    _ => self.phase = Phase::Offer { used, len },
                },
                // The peer closed: a request cut short is not answered.
                Part::End => {
                    self.peer_closed = true;
                    return Poll::Ready(Ok(self.end(conn, now)));
                }
            }
        }
    }

    fn start_turn(&mut self) {
        self.timer_polled = false;
    }

    fn poll_transmit(
        &mut self,
        cx: &mut Context<'_>,
        conn: &mut Connection,
    ) -> Poll<io::Result<()>> {
        self.poll_limits(cx)?;
        if conn.is_closing() {
            self.closing();
        }
        loop {
            if self.output.pending() {
                if self
                    .output
                    .poll_write_out(&mut self.stream, cx)?
                    .is_pending()
                {
                    self.write_blocked = true;
                    return Poll::Pending;
                }
                continue;
            }
            if let Phase::Write(after) = self.phase {
                ready!(self.answered(after, cx))?;
            }
            self.output.reset_keeping(HEAD_ROOM);
            if self.write_plain_answer(conn, cx)? {
                continue;
            }
            if !self.take_answer(conn) {
                return self.output.poll_flushed(&mut self.stream, cx);
            }
        }
    }

    fn poll_close(&mut self, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        ready!(self.output.poll_write_out(&mut self.stream, cx))?;
        ready!(self.output.poll_flushed(&mut self.stream, cx))?;
        if self.peer_closed {
            // Its end was read: no byte can follow it, and closing resets nothing (nor
            // needs a shutdown first: the close sends our end).
            return Poll::Ready(Ok(()));
        }
        if !self.shut {
            ready!(Pin::new(&mut self.stream).poll_shutdown(cx))?;
            self.shut = true;
            self.requests.release();
        }
        // A lingering close: what the peer still sends (a body refused from its head, a
        // request pipelined behind the last answer) is read and dropped until it closes its
        // side. Closing with unread input would reset the connection, and the peer's stack
        // may then drop the answer before its application reads it (and the peer's writes
        // fail). The driver bounds the wait (its linger period, a second).
        let mut sink = [0; 2048];
        for _ in 0..16 {
            let mut buf = tokio::io::ReadBuf::new(&mut sink);
            match Pin::new(&mut self.stream).poll_read(cx, &mut buf) {
                Poll::Ready(Ok(())) if buf.filled().is_empty() => return Poll::Ready(Ok(())),
                Poll::Ready(Ok(())) => {}
                Poll::Ready(Err(_)) => return Poll::Ready(Ok(())),
                Poll::Pending => return Poll::Pending,
            }
        }
        // A peer that floods: the driver's other work and its deadline get their turn.
        cx.waker().wake_by_ref();
        Poll::Pending
    }
}

/// Serves JSON-RPC over HTTP/1.1 on `listener` with `builder` (give it a router) until
/// `shutdown` completes; then stops accepting, lets requests in flight finish for up to
/// `grace` (their answers say `Connection: close`; a request whose body is still arriving
/// is answered `503`, as it will not be processed; idle connections are closed), and
/// returns. Each request's handlers may run for up to 60 seconds: past that
/// the request is answered `204` with `Connection: close`, and the connection's handlers
/// are dropped with it.
///
/// POST only (405 with `Allow: POST` otherwise); `Content-Type: application/json`
/// (charset UTF-8 allowed) or 415; a body over the endpoint's
/// [`max_frame_bytes`](sansrpc::Limits::max_frame_bytes) gets 413, read no further than the
/// limit; the endpoint's answer with 200, or 204 when there is none (notifications). What
/// a handler sends the client besides its answer (a notification, a call) has no way over
/// plain HTTP and is dropped. A malformed request gets 400, a head over 32 KiB 431, a
/// transfer coding other than `chunked` 501, and the connection is closed after them.
pub async fn serve(
    listener: tokio::net::TcpListener,
    builder: Builder,
    shutdown: impl Future<Output = ()>,
    grace: Duration,
) -> io::Result<()> {
    serve_with(listener, builder, ServeOptions::default(), shutdown, grace).await
}

/// [`serve`] with its [`ServeOptions`]: the connection limit (a connection beyond it is
/// answered `503` and closed), the handlers' time ([`ServeOptions::handler_timeout`]: how
/// long each request's handlers may run before they are dropped), and CORS.
///
/// With [`ServeOptions::cors`] set, a preflight (`OPTIONS` with
/// `Access-Control-Request-Method`) from an allowed origin is answered `204` with
/// `Access-Control-Allow-Origin` (the origin, or `*` for [`Origins::Any`]),
/// `-Allow-Methods: POST`, `-Allow-Headers` (those requested, else `Content-Type`) and
/// `-Max-Age`; from any other origin `403`. Every answer carries `Vary: Origin`, and
/// `Access-Control-Allow-Origin` when the origin is allowed; a disallowed origin gets no
/// CORS header (the browser then hides the answer).
///
/// The endpoint config's timeouts bound slow clients: a request head must arrive within
/// the shorter of [`frame_timeout`](sansrpc::connection::Config::frame_timeout) and
/// [`idle_timeout`](sansrpc::connection::Config::idle_timeout), counted from the end of the
/// connection's last exchange (or its opening), so a keep-alive connection waiting that long
/// for its next request is closed as well; a body within `frame_timeout` (else `408` and the
/// connection is closed). A connection whose answer the peer takes no byte of for
/// [`write_stall_timeout`](sansrpc::connection::Config::write_stall_timeout) (a peer that
/// sends and never reads) is closed.
pub async fn serve_with(
    listener: tokio::net::TcpListener,
    builder: Builder,
    options: ServeOptions,
    shutdown: impl Future<Output = ()>,
    grace: Duration,
) -> io::Result<()> {
    let builder = options.builder(builder);
    let config = builder.connection_config();
    let serving = Serving::new(&options, config);
    // The transport keeps the head, body and handler limits; the machine keeps the write
    // stall (an idle keep-alive connection is the head limit's).
    let mut quiet = config.clone();
    (quiet.idle_timeout, quiet.frame_timeout) = (None, None);
    let builder = builder.config(quiet);
    let accept = || async { listener.accept().await.map(crate::no_delay) };
    let setup = move |stream: tokio::net::TcpStream| {
        let serving = serving.clone();
        async move {
            let stream = serving.handshake.run(stream).await?;
            Ok(HttpServer::new(stream, serving))
        }
    };
    crate::serve(
        accept,
        setup,
        crate::HTTP_BUSY.into(),
        builder,
        &options,
        shutdown,
        grace,
    )
    .await
}

/// JSON-RPC over HTTP and over WebSocket on one port, as geth and Hardhat serve them
/// (`http://127.0.0.1:8545` and `ws://127.0.0.1:8545`): a connection whose first request
/// asks for `Upgrade: websocket` becomes a WebSocket connection (as [`ws::serve_with`]
/// serves it: its `Origin` rule, keep-alive), any other is served as [`serve_with`]
/// serves it (one message per POST; no subscriptions). Both run with `builder`'s router,
/// under one connection limit and one shutdown; the first request head is due within the
/// HTTP head limit. `options` as both take them (`_with`, as every `serve*_with`: the
/// [`ServeOptions`]).
///
/// [`ws::serve_with`]: crate::ws::serve_with
#[cfg(feature = "ws")]
pub async fn serve_upgrading_with(
    listener: tokio::net::TcpListener,
    builder: Builder,
    options: ServeOptions,
    shutdown: impl Future<Output = ()>,
    grace: Duration,
) -> io::Result<()> {
    let builder = options.builder(builder);
    let serving = Serving::new(&options, builder.connection_config());
    let upgrade = Arc::new(crate::ws::Upgrade::new(&options, &builder));
    let accept = || async { listener.accept().await.map(crate::no_delay) };
    let setup = move |stream: tokio::net::TcpStream| {
        let (serving, upgrade) = (serving.clone(), upgrade.clone());
        async move {
            let stream = serving.handshake.run(stream).await?;
            let head = crate::request::within(serving.times.head, "request head", sniff(stream));
            let (stream, websocket) = head.await?;
            Ok(if websocket {
                let limit = serving.times.head;
                let ws = upgrade.accept(stream);
                OnePort::Ws(crate::request::within(limit, "handshake timed out", ws).await?)
            } else {
                OnePort::Http(HttpServer::new(stream, serving))
            })
        }
    };
    crate::serve(
        accept,
        setup,
        crate::HTTP_BUSY.into(),
        builder,
        &options,
        shutdown,
        grace,
    )
    .await
}

/// Reads `stream` up to the end of its first request head (16 KiB at most): the stream
/// with what was read put back in front, and whether the head asks for a WebSocket.
#[cfg(feature = "ws")]
async fn sniff<S: AsyncRead + Unpin>(mut stream: S) -> io::Result<(Rewind<S>, bool)> {
    use tokio::io::AsyncReadExt;
    const MAX_HEAD: usize = 16 * 1024;
    let mut read = Vec::new();
    // Where the search for the head's end goes on from: each byte is looked at once.
    let mut scanned = 0;
    let end = loop {
        if let Some(at) = head_end(&read, scanned) {
            break at;
        }
        // The last two bytes may begin the blank line.
        scanned = read.len().saturating_sub(2);
        if read.len() >= MAX_HEAD {
            // Left to the HTTP server, which answers it 431.
            break read.len();
        }
        let mut chunk = [0u8; 2048];
        let n = stream.read(&mut chunk).await?;
        if n == 0 {
            break read.len();
        }
        read.extend_from_slice(&chunk[..n]);
    };
    let websocket = read[..end].split(|&b| b == b'\n').skip(1).any(|line| {
        let Some(colon) = line.iter().position(|&b| b == b':') else {
            return false;
        };
        let (name, value) = (&line[..colon], &line[colon + 1..]);
        name.trim_ascii().eq_ignore_ascii_case(b"upgrade")
            && value
                .split(|&b| b == b',')
                .any(|v| v.trim_ascii().eq_ignore_ascii_case(b"websocket"))
    });
    let rewind = Rewind {
        read,
        at: 0,
        stream,
    };
    Ok((rewind, websocket))
}

/// Where the head in `read` ends (the blank line after its fields), looking from `from` on:
/// lines end with CRLF or, as RFC 9112 §2.2 lets a server accept and the HTTP server does,
/// a bare LF.
#[cfg(feature = "ws")]
fn head_end(read: &[u8], from: usize) -> Option<usize> {
    let mut at = from;
    while let Some(lf) = read[at..].iter().position(|&b| b == b'\n') {
        let after = &read[at + lf + 1..];
        if after.starts_with(b"\n") || after.starts_with(b"\r\n") {
            return Some(at + lf);
        }
        at += lf + 1;
    }
    None
}

/// A stream with bytes already read from it put back in front.
#[cfg(feature = "ws")]
#[derive(Debug)]
pub(crate) struct Rewind<S> {
    read: Vec<u8>,
    at: usize,
    stream: S,
}

#[cfg(feature = "ws")]
impl<S: AsyncRead + Unpin> AsyncRead for Rewind<S> {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        out: &mut tokio::io::ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        if this.at < this.read.len() {
            let n = (this.read.len() - this.at).min(out.remaining());
            out.put_slice(&this.read[this.at..this.at + n]);
            this.at += n;
            if this.at == this.read.len() {
                this.read = Vec::new();
                this.at = 0;
            }
            return Poll::Ready(Ok(()));
        }
        Pin::new(&mut this.stream).poll_read(cx, out)
    }
}

#[cfg(feature = "ws")]
impl<S: AsyncWrite + Unpin> AsyncWrite for Rewind<S> {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.get_mut().stream).poll_write(cx, buf)
    }

    // Passed on: the HTTP answer and the WebSocket frames go out in one vectored write
    // only on a stream that says it takes them.
    fn poll_write_vectored(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.get_mut().stream).poll_write_vectored(cx, bufs)
    }

    fn is_write_vectored(&self) -> bool {
        self.stream.is_write_vectored()
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.get_mut().stream).poll_flush(cx)
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.get_mut().stream).poll_shutdown(cx)
    }
}

#[cfg(feature = "ws")]
impl<S> Rewind<S> {
    /// The stream under the bytes put back.
    pub(crate) fn get_ref(&self) -> &S {
        &self.stream
    }
}

/// A connection of [`serve_upgrading_with`]: HTTP or WebSocket, every hook of the
/// transport passed on to the one it is (a WebSocket's keep-alive timer is looked at
/// when the driver's wake says it may be due: `woken`).
#[cfg(feature = "ws")]
enum OnePort<S> {
    Http(HttpServer<S>),
    Ws(crate::ws::WebSocket<S>),
}

#[cfg(feature = "ws")]
impl<S> Transport for OnePort<S>
where
    S: AsyncRead + AsyncWrite + Send + Unpin + 'static,
{
    fn is_message_based(&self) -> bool {
        true
    }

    fn can_push(&self) -> bool {
        matches!(self, OnePort::Ws(_))
    }

    fn wakes_on_input(&self) -> bool {
        match self {
            OnePort::Http(t) => t.wakes_on_input(),
            OnePort::Ws(t) => t.wakes_on_input(),
        }
    }

    fn woken(&mut self) {
        match self {
            OnePort::Http(t) => t.woken(),
            OnePort::Ws(t) => t.woken(),
        }
    }

    fn without_extension(&mut self) {
        match self {
            OnePort::Http(t) => t.without_extension(),
            OnePort::Ws(t) => t.without_extension(),
        }
    }

    fn machines(&self) -> Option<&sansrpc_futures::Machines> {
        match self {
            OnePort::Http(t) => t.machines(),
            OnePort::Ws(_) => None,
        }
    }

    fn poll_receive(
        &mut self,
        cx: &mut Context<'_>,
        conn: &mut Connection,
        now: Instant,
    ) -> Poll<io::Result<Received>> {
        match self {
            OnePort::Http(t) => t.poll_receive(cx, conn, now),
            OnePort::Ws(t) => t.poll_receive(cx, conn, now),
        }
    }

    fn poll_transmit(
        &mut self,
        cx: &mut Context<'_>,
        conn: &mut Connection,
    ) -> Poll<io::Result<()>> {
        match self {
            OnePort::Http(t) => t.poll_transmit(cx, conn),
            OnePort::Ws(t) => t.poll_transmit(cx, conn),
        }
    }

    fn start_turn(&mut self) {
        match self {
            OnePort::Http(t) => t.start_turn(),
            OnePort::Ws(t) => t.start_turn(),
        }
    }

    fn poll_close(&mut self, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        match self {
            OnePort::Http(t) => t.poll_close(cx),
            OnePort::Ws(t) => t.poll_close(cx),
        }
    }
}
