//! How bytes (or whole messages) move between the endpoint and the peer.

use std::io;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{ready, Context, Poll};

use futures::io::{AsyncRead, AsyncReadExt, AsyncWrite, ReadHalf, WriteHalf};
use sansrpc::connection::Connection;
use sansrpc::driver::StreamIo;
use sansrpc::Instant;
use sansrpc_runtime::subscriptions::Bypass;

use crate::Machines;

/// What [`Transport::poll_receive`] did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum Received {
    /// Input reached the endpoint.
    Data,
    /// Input reached the endpoint, and then the transport found nothing more to read: it
    /// will wake the task when more comes (as after `Poll::Pending`). The driver does not
    /// ask it again until then (with [`Data`](Received::Data) it asks again at once, which
    /// for a WebSocket is a whole read attempt per message that finds nothing).
    Drained,
    /// Input is waiting but the endpoint took none of it (its events or output are backed
    /// up): the driver drains them before offering it again.
    Stalled,
    /// The peer ended its output; the endpoint has been told.
    End,
}

/// A connection to the peer as the driver sees it.
///
/// A byte stream ([`ByteStream`]) hands the connection bytes with
/// [`Connection::handle_input`] and writes what [`Connection::poll_transmit`] framed; a
/// message transport (WebSocket, HTTP: one message per frame) would use
/// [`Connection::handle_message`] and send each frame as one message, with
/// [`is_message_based`](Transport::is_message_based) true so the endpoint frames nothing.
pub trait Transport: Send + Unpin + 'static {
    /// True for transports that carry one message per frame; the driver then configures
    /// the endpoint with `framing: None`.
    fn is_message_based(&self) -> bool {
        false
    }

    /// Reads what the peer sent and hands it to `conn` at `now`; at end of input calls
    /// [`Connection::handle_end_of_input`] and returns [`Received::End`].
    fn poll_receive(
        &mut self,
        cx: &mut Context<'_>,
        conn: &mut Connection,
        now: Instant,
    ) -> Poll<io::Result<Received>>;

    /// Takes frames from [`Connection::poll_transmit`] and writes them, taking more only
    /// while its own buffer has room (so the endpoint's output bound pushes back on
    /// input). Ready once everything taken is written and flushed.
    fn poll_transmit(
        &mut self,
        cx: &mut Context<'_>,
        conn: &mut Connection,
    ) -> Poll<io::Result<()>>;

    /// True when [`poll_receive`](Transport::poll_receive) keeps the contract of a
    /// future's poll: it returns `Pending` (or [`Received::Drained`]) only after arranging
    /// for `cx`'s waker to be woken when it has more to do (the socket's readiness, a
    /// yield's `wake_by_ref`). The driver then polls it only after that waker fired, not
    /// on every wakeup of its task (a subscriber's connection woken for each notification
    /// it sends would look at a quiet socket each time). False by default: the driver asks
    /// again on every wakeup, for a transport whose input also waits on what it writes
    /// (its polls are then given the task's own waker: which source woke the task tells the
    /// driver nothing it would act on).
    fn wakes_on_input(&self) -> bool {
        false
    }

    /// True when the transport carries messages the peer did not ask for, outside
    /// answers (the default). Plain HTTP, one answer per POST, does not: the driver then
    /// sets [`Config::push`](sansrpc::Config::push) false, and method subscriptions are
    /// refused with a clear error on either side.
    fn can_push(&self) -> bool {
        true
    }

    /// A new turn of the driver begins (each poll of its future): a transport that limits
    /// what it reads per turn, so that one flooding peer cannot keep the executor's thread,
    /// starts counting again. Nothing by default.
    fn start_turn(&mut self) {}

    /// The waker the driver gives this transport (with every `cx` of its polls) fired since
    /// the last call, or the transport does not [wake on input](Transport::wakes_on_input)
    /// (then it is called every turn): what the transport waits on with that waker beside
    /// the socket (a keep-alive's timer) may be due. Until the next call nothing it
    /// registered with it has fired, so such a wait need not be polled. Nothing by
    /// default.
    fn woken(&mut self) {}

    /// The connection has no extension's hook (pub/sub): its output grows only when
    /// something is sent into it, never as it is looked at (a hook's notifications join the
    /// output when [`Connection::peek_messages`] and the like find it empty). A transport
    /// that writes straight from the connection's buffer can then stop once it has written
    /// all of it, without looking again. Called at most once, before the first poll;
    /// nothing by default.
    fn without_extension(&mut self) {}

    /// True when every [`poll_transmit`](Transport::poll_transmit) asks the connection for
    /// its output ([`Connection::peek_transmit`], [`Connection::peek_message_parts`],
    /// [`Connection::poll_transmit`] and the like), whatever its
    /// [`buffered_output`](Connection::buffered_output) shows: a hook's notifications then
    /// join the output there, and the driver need not look at the connection's events
    /// only to take them (a topic subscriber's connection woken for each publish). False
    /// by default: the driver looks at the events of a connection with a hook on every
    /// wakeup.
    fn takes_hook_output(&self) -> bool {
        false
    }

    /// What a fan-out may write a notification through, from the task that produced it,
    /// past the connection's output, while the driver is parked with nothing queued (the
    /// core's rule: [`Connection::may_bypass`]): a WebSocket server's plain TCP socket.
    /// `None` when the transport cannot, or holds bytes of its own not written yet; `None`
    /// by default. The driver asks as it parks.
    fn bypass(&mut self) -> Option<Arc<dyn Bypass>> {
        None
    }

    /// Where the driver lends its connection machine while it waits with nothing of an
    /// exchange in it ([`Connection::is_blank`]), taking one back on its next turn: for a
    /// transport whose exchanges are independent of each other, so that any blank machine
    /// of the server may serve any of its connections (an HTTP/1.1 server's). `None` by
    /// default: the driver keeps its own.
    fn machines(&self) -> Option<&Machines> {
        None
    }

    /// The bypass last handed out is closed, first thing on the driver's turn: the rest of
    /// a message it took only in part is written before anything else. Nothing by default.
    fn bypass_closed(&mut self) {}

    /// Flushes and closes the sending side.
    fn poll_close(&mut self, cx: &mut Context<'_>) -> Poll<io::Result<()>>;
}

/// A byte-stream transport over any futures-io reader and writer (TCP, Unix sockets, pipes,
/// stdio); the endpoint's [`Config::framing`](sansrpc::connection::Config) cuts it into
/// messages. The read buffer, input held back, the end of input and the read budget of a
/// turn are the core's [`StreamIo`]; output is written straight from the connection's
/// buffer.
#[derive(Debug)]
pub struct ByteStream<R, W> {
    reader: R,
    writer: W,
    io: StreamIo,
    unflushed: bool,
}

impl<R, W> ByteStream<R, W>
where
    R: AsyncRead + Send + Unpin + 'static,
    W: AsyncWrite + Send + Unpin + 'static,
{
    /// A transport reading from `reader` and writing to `writer`.
    pub fn new(reader: R, writer: W) -> Self {
        ByteStream {
            reader,
            writer,
            io: StreamIo::new(),
            unflushed: false,
        }
    }
}

impl<S> ByteStream<ReadHalf<S>, WriteHalf<S>>
where
    S: AsyncRead + AsyncWrite + Send + Unpin + 'static,
{
    /// A transport over one duplex stream, split in two halves. Prefer
    /// [`ByteStream::new`] with two clones for streams that are `Clone` (async-net's and
    /// async-std's sockets), which needs no lock between the halves.
    pub fn split(stream: S) -> Self {
        let (reader, writer) = stream.split();
        ByteStream::new(reader, writer)
    }
}

impl<R, W> Transport for ByteStream<R, W>
where
    R: AsyncRead + Send + Unpin + 'static,
    W: AsyncWrite + Send + Unpin + 'static,
{
    fn start_turn(&mut self) {
        self.io.end_turn();
    }

    fn wakes_on_input(&self) -> bool {
        true
    }

    fn takes_hook_output(&self) -> bool {
        true
    }

    fn poll_receive(
        &mut self,
        cx: &mut Context<'_>,
        conn: &mut Connection,
        now: Instant,
    ) -> Poll<io::Result<Received>> {
        if self.io.buffered_input() > 0 {
            let took = self.io.feed(conn, now);
            return Poll::Ready(Ok(if took {
                Received::Data
            } else {
                Received::Stalled
            }));
        }
        if self.io.input_ended() {
            self.io.feed(conn, now);
            return Poll::Ready(Ok(Received::End));
        }
        let Some(buf) = self.io.read_buf(conn) else {
            if self.io.turn_spent() {
                // This turn read its share: the task yields, and reads on at its next turn.
                cx.waker().wake_by_ref();
                return Poll::Pending;
            }
            return Poll::Ready(Ok(Received::Stalled));
        };
        let n = match Pin::new(&mut self.reader).poll_read(cx, buf) {
            Poll::Ready(n) => n?,
            Poll::Pending => {
                self.io.handle_read_idle();
                return Poll::Pending;
            }
        };
        self.io.handle_read(conn, n, now);
        Poll::Ready(Ok(if n == 0 {
            Received::End
        } else {
            Received::Data
        }))
    }

    fn poll_transmit(
        &mut self,
        cx: &mut Context<'_>,
        conn: &mut Connection,
    ) -> Poll<io::Result<()>> {
        loop {
            let pending = self.io.transmit(conn);
            if pending.is_empty() {
                if self.unflushed {
                    ready!(Pin::new(&mut self.writer).poll_flush(cx))?;
                    self.unflushed = false;
                }
                return Poll::Ready(Ok(()));
            }
            // Written straight from the connection's buffer; the driver reports the write
            // (the buffer shrank) for the write-stall timeout.
            let n = ready!(Pin::new(&mut self.writer).poll_write(cx, pending))?;
            if n == 0 {
                return Poll::Ready(Err(io::ErrorKind::WriteZero.into()));
            }
            conn.consume_transmit(n);
            self.unflushed = true;
        }
    }

    fn poll_close(&mut self, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.writer).poll_close(cx)
    }
}

/// A TCP connection as a transport (async-net's stream, cloned into its two halves).
#[cfg(feature = "async-io")]
pub fn tcp(stream: async_net::TcpStream) -> ByteStream<async_net::TcpStream, async_net::TcpStream> {
    ByteStream::new(stream.clone(), stream)
}

/// A Unix socket connection as a transport.
#[cfg(all(feature = "async-io", unix))]
pub fn unix(
    stream: async_net::unix::UnixStream,
) -> ByteStream<async_net::unix::UnixStream, async_net::unix::UnixStream> {
    ByteStream::new(stream.clone(), stream)
}

/// This process's stdin and stdout as a transport (a server spawned by its client, as LSP
/// and MCP servers are). Reads and writes run on a blocking thread pool.
#[cfg(feature = "async-io")]
pub fn stdio() -> ByteStream<blocking::Unblock<std::io::Stdin>, blocking::Unblock<std::io::Stdout>>
{
    ByteStream::new(
        blocking::Unblock::new(std::io::stdin()),
        blocking::Unblock::new(std::io::stdout()),
    )
}

/// Spawns `command` with piped stdin and stdout and speaks to it over them (the LSP and
/// MCP client case). Keep the [`Child`](async_process::Child) to wait for or kill it;
/// closing the transport closes the child's stdin.
#[cfg(feature = "async-io")]
pub fn child(
    command: &mut async_process::Command,
) -> io::Result<(
    async_process::Child,
    ByteStream<async_process::ChildStdout, async_process::ChildStdin>,
)> {
    let (child, stdout, stdin) = spawn_piped(command)?;
    Ok((child, ByteStream::new(stdout, stdin)))
}

/// Spawns `command` with piped stdin and stdout, and takes them.
#[cfg(feature = "async-io")]
pub(crate) fn spawn_piped(
    command: &mut async_process::Command,
) -> io::Result<(
    async_process::Child,
    async_process::ChildStdout,
    async_process::ChildStdin,
)> {
    use async_process::Stdio;
    let mut child = command
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()?;
    let (Some(stdin), Some(stdout)) = (child.stdin.take(), child.stdout.take()) else {
        return Err(io::Error::other("child spawned without piped stdio"));
    };
    Ok((child, stdout, stdin))
}
