//! The read and write buffers of the transports that frame a raw stream themselves
//! (WebSocket after its handshake, the HTTP server): small while the traffic is, grown on
//! demand, given back when idle.

use std::io;
use std::mem::MaybeUninit;
use std::pin::Pin;
use std::task::{Context, Poll};

use sansrpc::codec::ReadSize;
use tokio::io::{AsyncRead, ReadBuf};

/// Reads start at this size and grow while they fill the buffer; the largest buffer a thread
/// keeps for its connections (an idle one holds none to read into).
pub const SMALL: usize = 4 * 1024;

/// Most bytes read at a time past what the frame under way needs, and bytes buffered for
/// writing before the connection keeps the rest (a single larger message is still read and
/// written whole).
pub(crate) const CHUNK: usize = 64 * 1024;

/// The buffers of ended connections (and of quiet ones that gave theirs back), kept on
/// their thread for the next connection's reads and answers: a new connection then
/// allocates neither, nor grows one from nothing. At most [`SPARES`] are kept a thread, each
/// of at least [`MIN_SPARE`] and at most [`SMALL`] bytes of capacity (a larger one goes
/// back to the allocator, as a quiet connection's would).
pub(crate) mod spare {
    use std::cell::RefCell;

    use super::SMALL;

    /// Most buffers kept a thread.
    pub(crate) const SPARES: usize = 64;
    /// Smaller buffers are not worth keeping.
    pub(crate) const MIN_SPARE: usize = 256;

    thread_local! {
        static KEPT: RefCell<Vec<Vec<u8>>> = const { RefCell::new(Vec::new()) };
    }

    /// A kept buffer, empty, or a new one (no capacity) when the thread keeps none.
    // Once a connection: out of the paths each request takes.
    #[cold]
    #[inline(never)]
    pub(crate) fn take() -> Vec<u8> {
        KEPT.try_with(|kept| kept.borrow_mut().pop())
            .ok()
            .flatten()
            .unwrap_or_default()
    }

    /// Keeps `buf`'s capacity for [`take`], emptied, when it is of a size kept and the
    /// thread has room; drops it otherwise.
    #[cold]
    #[inline(never)]
    pub(crate) fn give(mut buf: Vec<u8>) {
        if !(MIN_SPARE..=SMALL).contains(&buf.capacity()) {
            return;
        }
        buf.clear();
        // On a thread ending (its keep gone), the buffer is dropped.
        let _ = KEPT.try_with(|kept| {
            let mut kept = kept.borrow_mut();
            if kept.len() < SPARES {
                kept.push(buf);
            }
        });
    }

    #[cfg(test)]
    mod tests {
        use super::*;

        #[test]
        fn a_buffer_given_back_is_taken_again_empty_within_the_bounds() {
            // On a thread of its own: the keep is the thread's.
            std::thread::spawn(|| {
                let mut buf = Vec::with_capacity(SMALL);
                buf.extend_from_slice(b"the last connection's bytes");
                let at = buf.as_ptr();
                give(buf);
                let again = take();
                assert_eq!(again.as_ptr(), at, "the same allocation comes back");
                assert!(again.is_empty() && again.capacity() >= SMALL);
                // None kept now: a new buffer, with no capacity.
                assert_eq!(take().capacity(), 0);
                // Too small or too large to keep.
                give(Vec::with_capacity(MIN_SPARE - 1));
                give(Vec::with_capacity(SMALL + 1));
                assert_eq!(take().capacity(), 0);
                // At most `SPARES` kept.
                for _ in 0..SPARES + 8 {
                    give(Vec::with_capacity(MIN_SPARE));
                }
                let taken = std::iter::from_fn(|| Some(take()))
                    .take_while(|b| b.capacity() > 0)
                    .count();
                assert_eq!(taken, SPARES);
            })
            .join()
            .unwrap();
        }
    }
}

/// Bytes read from the stream and not consumed yet.
#[derive(Debug)]
pub(crate) struct Input {
    /// What was read, `buf[start..]` not consumed yet; reads go into its spare capacity,
    /// which is sized by `size` (small while the traffic is, given back when idle) and never
    /// zeroed (a new connection's first read zeroed 16 KiB, a third of its setup's
    /// instructions).
    buf: Vec<u8>,
    size: ReadSize,
    start: usize,
}

impl Input {
    /// A buffer holding `read` (bytes already read past a handshake).
    pub(crate) fn new(read: Vec<u8>) -> Self {
        Input {
            buf: read,
            size: ReadSize::new(SMALL, CHUNK),
            start: 0,
        }
    }

    /// The bytes read and not consumed.
    pub(crate) fn data(&mut self) -> &mut [u8] {
        &mut self.buf[self.start..]
    }

    /// How many bytes were read and not consumed.
    pub(crate) fn len(&self) -> usize {
        self.buf.len() - self.start
    }

    /// Only the first `n` bytes of [`data`](Input::data) are kept.
    pub(crate) fn keep(&mut self, n: usize) {
        self.buf.truncate(self.start + n);
    }

    /// The first `n` bytes of [`data`](Input::data) are consumed.
    pub(crate) fn consume(&mut self, n: usize) {
        self.start += n;
    }

    /// Reads more of `stream` so that [`data`](Input::data) can hold `need` bytes: `Ok(0)`
    /// at end of stream.
    pub(crate) fn poll_fill<S: AsyncRead + Unpin>(
        &mut self,
        stream: &mut S,
        cx: &mut Context<'_>,
        need: usize,
    ) -> Poll<io::Result<usize>> {
        if self.start == self.buf.len() {
            self.buf.clear();
            self.start = 0;
        } else if self.start > 0 && self.start + need > self.buf.capacity() {
            self.buf.drain(..self.start);
            self.start = 0;
        }
        // Room for the frame, but at most a chunk past what has arrived: a header that
        // declares a large message costs memory only as its bytes come. At least a byte
        // past it: the room is reserved here, exactly (a full `Vec` would grow by doubling
        // in `poll_read_buf`).
        let end = self.buf.len();
        let need = self.start + need;
        let want = self.size.get().max(need.min(end + CHUNK)).max(end + 1);
        if self.buf.capacity() == 0 {
            // Given back while idle: read into the stack first, so that a look at a quiet
            // connection (a subscriber's, woken to send) allocates nothing.
            let mut probe = [MaybeUninit::<u8>::uninit(); SMALL];
            let mut buf = ReadBuf::uninit(&mut probe);
            std::task::ready!(Pin::new(stream).poll_read(cx, &mut buf))?;
            let read = buf.filled();
            if !read.is_empty() {
                self.buf = spare::take();
                self.buf.reserve_exact(want.max(read.len()));
                self.buf.extend_from_slice(read);
                self.size.read(read.len());
            }
            return Poll::Ready(Ok(read.len()));
        }
        if self.buf.capacity() < want {
            self.buf.reserve_exact(want - end);
        }
        // Into the spare capacity, uninitialized: what the stream writes is what `len` then
        // takes in.
        let read = tokio_util::io::poll_read_buf(Pin::new(stream), cx, &mut self.buf);
        let Poll::Ready(n) = read else {
            // Idle with nothing buffered: the buffer goes back to the thread, for the next
            // read of this connection or another's. Held, a thousand keep-alive
            // connections' buffers were each cold in cache when its next request came
            // (callgrind, 2 MiB last level: 7.2 read misses a request, 1.3 given back).
            if self.start == self.buf.len() {
                self.size.idle();
                spare::give(std::mem::take(&mut self.buf));
                self.start = 0;
            }
            return Poll::Pending;
        };
        let n = n?;
        self.size.read(n);
        Poll::Ready(Ok(n))
    }
}

impl Drop for Input {
    /// The buffer is kept for the thread's next connection ([`spare`]).
    fn drop(&mut self) {
        spare::give(std::mem::take(&mut self.buf));
    }
}

/// Bytes to write to the stream: `buf[written..]` is still to go.
#[cfg(any(feature = "ws", feature = "http"))]
#[derive(Debug, Default)]
pub(crate) struct Output {
    pub(crate) buf: Vec<u8>,
    pub(crate) written: usize,
    unflushed: bool,
}

#[cfg(any(feature = "ws", feature = "http"))]
impl Output {
    /// The buffer to write the next output into: one kept on the thread ([`spare`]) when it
    /// has none yet.
    #[cfg(feature = "http")]
    pub(crate) fn buffer(&mut self) -> &mut Vec<u8> {
        if self.buf.capacity() == 0 {
            self.buf = spare::take();
        }
        &mut self.buf
    }

    /// True while bytes wait to be written.
    pub(crate) fn pending(&self) -> bool {
        self.written < self.buf.len()
    }

    /// Everything was written: empties the buffer (giving a large one back once flushed)
    /// for the next output.
    pub(crate) fn reset(&mut self) {
        self.buf.clear();
        self.written = 0;
        if self.buf.capacity() > SMALL && !self.unflushed {
            // A burst is written: give its buffer back.
            self.buf = Vec::new();
        }
    }

    /// Everything was written: as [`reset`](Output::reset), but the first `room` bytes of
    /// the buffer stay, for the next output to write its front into from their end (HTTP's
    /// head room): they are not zero-filled again for each answer. Nothing is pending.
    #[cfg(feature = "http")]
    pub(crate) fn reset_keeping(&mut self, room: usize) {
        if self.buf.capacity() > SMALL && !self.unflushed {
            self.reset();
            return;
        }
        self.buf.truncate(room);
        self.written = self.buf.len();
    }

    /// Writes all of the buffer to `stream` (not flushed yet).
    pub(crate) fn poll_write_out<S: tokio::io::AsyncWrite + Unpin>(
        &mut self,
        stream: &mut S,
        cx: &mut Context<'_>,
    ) -> Poll<io::Result<()>> {
        while self.written < self.buf.len() {
            let pending = &self.buf[self.written..];
            let n = std::task::ready!(Pin::new(&mut *stream).poll_write(cx, pending))?;
            if n == 0 {
                return Poll::Ready(Err(io::ErrorKind::WriteZero.into()));
            }
            self.written += n;
            self.unflushed = true;
        }
        Poll::Ready(Ok(()))
    }

    /// Bytes were written to the stream past this buffer (straight from the connection's):
    /// they are flushed with the next [`poll_flushed`](Output::poll_flushed).
    pub(crate) fn wrote(&mut self) {
        self.unflushed = true;
    }

    /// Flushes what was written.
    pub(crate) fn poll_flushed<S: tokio::io::AsyncWrite + Unpin>(
        &mut self,
        stream: &mut S,
        cx: &mut Context<'_>,
    ) -> Poll<io::Result<()>> {
        if self.unflushed {
            std::task::ready!(Pin::new(stream).poll_flush(cx))?;
            self.unflushed = false;
        }
        Poll::Ready(Ok(()))
    }
}

#[cfg(any(feature = "ws", feature = "http"))]
impl Drop for Output {
    /// The buffer is kept for the thread's next connection ([`spare`]).
    fn drop(&mut self) {
        spare::give(std::mem::take(&mut self.buf));
    }
}

/// Writes `bufs` to `stream` as one vectored write. On Linux a plain TCP socket (tokio's
/// `TcpStream`, or a server's stream without TLS) is written with `send`, the pieces of a
/// small write gathered first, and with `sendmsg` past that (`linux_tcp::poll_send_vectored`):
/// tokio writes a vectored one with `writev`, which goes through the kernel's file layer
/// first (about a tenth more of the kernel's time per small write to a subscriber, measured
/// with perf on loopback, 1,000 WebSocket subscribers). Any other stream writes as it
/// writes.
#[cfg(any(feature = "ws", feature = "http"))]
///
/// `shared` is an item shared by many subscribers that one of `bufs` is, if one is
/// ([`Connection::peek_shared_item`](sansrpc::Connection::peek_shared_item)): a thread that
/// gathered the same bytes for the connection before sends them again as they are.
pub(crate) fn poll_write_vectored<S>(
    stream: &mut S,
    cx: &mut Context<'_>,
    bufs: &[io::IoSlice<'_>],
    shared: Option<&Shared>,
) -> Poll<io::Result<usize>>
where
    S: tokio::io::AsyncWrite + Unpin + 'static,
{
    #[cfg(any(target_os = "linux", target_os = "android"))]
    if let Some(tcp) = linux_tcp::plain_tcp(stream) {
        return linux_tcp::poll_send_vectored(tcp, cx, bufs, shared);
    }
    let _ = shared;
    Pin::new(stream).poll_write_vectored(cx, bufs)
}

/// An item shared by the notifications of many subscribers (a fan-out's).
#[cfg(any(feature = "ws", feature = "http"))]
pub(crate) type Shared = std::sync::Arc<sansrpc::RawValue>;

/// Writing a plain TCP socket on Linux: found under the stream's type, and written with
/// `send` (small writes gathered) or `sendmsg`.
#[cfg(all(
    any(feature = "ws", feature = "http"),
    any(target_os = "linux", target_os = "android")
))]
mod linux_tcp {
    use std::io;
    use std::task::{Context, Poll};

    use super::Shared;

    /// The TCP socket under `stream` when it is one with nothing between (the type is known
    /// when the stream's generic code is made: no cost at run time).
    pub(super) fn plain_tcp<S: 'static>(stream: &mut S) -> Option<&tokio::net::TcpStream> {
        let stream: &dyn std::any::Any = stream;
        if let Some(tcp) = stream.downcast_ref::<tokio::net::TcpStream>() {
            return Some(tcp);
        }
        #[cfg(feature = "tls")]
        if let Some(crate::tls::ServerStream::Plain(tcp)) =
            stream.downcast_ref::<crate::tls::ServerStream>()
        {
            return Some(tcp);
        }
        // A connection of `http::serve_upgrading_with`: its head's bytes put back in front.
        #[cfg(all(feature = "http", feature = "ws"))]
        if let Some(rewind) = stream.downcast_ref::<crate::http::Rewind<tokio::net::TcpStream>>() {
            return Some(rewind.get_ref());
        }
        #[cfg(all(feature = "http", feature = "ws", feature = "tls"))]
        if let Some(crate::tls::ServerStream::Plain(tcp)) = stream
            .downcast_ref::<crate::http::Rewind<crate::tls::ServerStream>>()
            .map(crate::http::Rewind::get_ref)
        {
            return Some(tcp);
        }
        None
    }

    /// Frames up to this size are gathered into one buffer and sent with `send`, larger ones
    /// with `sendmsg` of their pieces (see [`poll_send_vectored`]).
    pub(super) const GATHER: usize = 4 * 1024;

    /// The thread's buffer that small vectored writes are gathered into: one for all the
    /// connections a thread serves, so it stays in the cache from one write to the next (a
    /// connection's own buffer would be cold with many connections).
    struct Gathered {
        bytes: Vec<u8>,
        /// The shared item one of the pieces gathered in `bytes` was, kept so that its address
        /// names it (no other item can be at that address while it is kept).
        item: Option<Shared>,
    }

    impl Gathered {
        /// True when `bytes` holds `bufs` already: `item` is the one kept, and every other
        /// piece has the same bytes (a subscriber's notification after another's of the same
        /// item: the frame's header, the prefix with the subscription's id and the tail are
        /// most often the same, and only they are compared).
        fn holds(&self, bufs: &[io::IoSlice<'_>], len: usize, item: &Shared) -> bool {
            if len != self.bytes.len()
                || !self.item.as_ref().is_some_and(|i| Shared::ptr_eq(i, item))
            {
                return false;
            }
            let item = item.get().as_bytes();
            let mut at = 0;
            for b in bufs {
                let n = b.len();
                let is_item = b.as_ptr() == item.as_ptr() && n == item.len();
                if !is_item && self.bytes[at..at + n] != **b {
                    return false;
                }
                at += n;
            }
            true
        }
    }

    thread_local! {
        static GATHERED: std::cell::RefCell<Gathered> = const {
            std::cell::RefCell::new(Gathered { bytes: Vec::new(), item: None })
        };
    }

    /// Sends `bufs` on `tcp` once it is writable, with `MSG_NOSIGNAL` (a peer gone is an
    /// error, not a signal), as std's `send` does: what the socket took of their concatenation.
    ///
    /// Up to [`GATHER`] bytes in all (a subscriber's notification, most often: a frame head, a
    /// prefix and an item shared by every subscriber) are copied into the thread's buffer and
    /// sent with `send`; more, or one piece alone, are sent as they lie, with `sendmsg` for
    /// several. The kernel's `sendmsg` costs more than its `send` whatever the number of pieces
    /// (on loopback, a 1.1 KiB write to one of 200 sockets: 3.70-3.84 µs of CPU with
    /// `sendmsg`, one piece or four, against 3.51-3.57 µs copied and sent with `send`, the
    /// copy included; 4 KiB: 3.71-3.87 against 3.62-3.63). Past a few KiB the copy costs what
    /// the call saves.
    ///
    /// Tried first without asking tokio whether the socket is writable: a socket that takes
    /// the bytes (almost every write: a subscriber's socket has room for the next notification)
    /// costs the call alone, not the readiness look, the task budget's and the registration's
    /// bookkeeping around it (about 140 instructions per write, a twentieth of a subscriber's
    /// notification). One that would block is written the ordinary way: tokio's readiness,
    /// still set from before, lets the write be tried again under `try_io`, whose
    /// `WouldBlock` clears it, and the next look registers the task's waker.
    ///
    /// A write with a piece that is `shared`, an item many subscribers are sent, is not
    /// gathered again when the thread's last gathered write was of the same item with the
    /// same bytes around it (the next subscriber's notification of a fan-out): those bytes are
    /// sent as they are, and the item is framed once per thread, not once per subscriber.
    /// The buffer keeps that item (at most [`GATHER`] bytes) until the next gathered write.
    pub(super) fn poll_send_vectored(
        tcp: &tokio::net::TcpStream,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
        shared: Option<&Shared>,
    ) -> Poll<io::Result<usize>> {
        poll_send(tcp, cx, |socket| send_vectored(socket, bufs, shared))
    }

    /// A peer gone is an error, not a signal; a socket with no room says so, whatever
    /// the descriptor's mode (a fan-out's write past the driver never waits).
    const FLAGS: libc::c_int = libc::MSG_NOSIGNAL | libc::MSG_DONTWAIT;

    /// One attempt of [`poll_send_vectored`]'s write, not waiting: `WouldBlock` when the
    /// socket has no room.
    pub(super) fn send_vectored(
        socket: socket2::SockRef<'_>,
        bufs: &[io::IoSlice<'_>],
        shared: Option<&Shared>,
    ) -> io::Result<usize> {
        let len: usize = bufs.iter().map(|b| b.len()).sum();
        if bufs.len() > 1 && len <= GATHER {
            // Not re-entered: nothing below calls back into a write.
            return GATHERED.with_borrow_mut(|gathered| {
                if !shared.is_some_and(|item| gathered.holds(bufs, len, item)) {
                    gathered.item = shared.cloned();
                    let bytes = &mut gathered.bytes;
                    bytes.clear();
                    bytes.reserve(GATHER);
                    bufs.iter().for_each(|b| bytes.extend_from_slice(b));
                }
                socket.send_with_flags(&gathered.bytes, FLAGS)
            });
        }
        match bufs {
            [one] => socket.send_with_flags(one, FLAGS),
            _ => socket.send_vectored_with_flags(bufs, FLAGS),
        }
    }

    /// `send` on `tcp`, tried at once and then once it is writable (see
    /// [`poll_send_vectored`]).
    fn poll_send(
        tcp: &tokio::net::TcpStream,
        cx: &mut Context<'_>,
        send: impl Fn(socket2::SockRef<'_>) -> io::Result<usize>,
    ) -> Poll<io::Result<usize>> {
        match send(socket2::SockRef::from(tcp)) {
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => {}
            sent => return Poll::Ready(sent),
        }
        loop {
            std::task::ready!(tcp.poll_write_ready(cx))?;
            let sent = tcp.try_io(tokio::io::Interest::WRITABLE, || {
                send(socket2::SockRef::from(tcp))
            });
            match sent {
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => continue,
                sent => return Poll::Ready(sent),
            }
        }
    }

    /// The plain TCP socket under `stream` (see [`plain_tcp`]), as a descriptor.
    #[cfg(feature = "ws")]
    pub(crate) fn plain_tcp_fd<S: 'static>(stream: &mut S) -> Option<std::os::fd::RawFd> {
        plain_tcp(stream).map(std::os::fd::AsRawFd::as_raw_fd)
    }

    /// A transport's plain TCP socket as the task of a fan-out writes to it, past the
    /// connection's driver parked with nothing queued
    /// ([`Bypass`](sansrpc_futures::Bypass)): one attempt, not waiting, gathered as the
    /// driver's own writes are. The rest of a message the socket took in part is kept for
    /// the transport to write first.
    #[cfg(feature = "ws")]
    #[derive(Debug)]
    pub(crate) struct Bypassing {
        state: std::sync::Mutex<BypassState>,
    }

    #[cfg(feature = "ws")]
    #[derive(Debug)]
    struct BypassState {
        /// The transport's socket, while it holds it: cleared, under the lock, before the
        /// transport lets the socket go.
        fd: Option<std::os::fd::RawFd>,
        /// What the socket did not take of the last message written.
        rest: Vec<u8>,
    }

    #[cfg(feature = "ws")]
    impl Bypassing {
        pub(crate) fn new(fd: std::os::fd::RawFd) -> Self {
            Bypassing {
                state: std::sync::Mutex::new(BypassState {
                    fd: Some(fd),
                    rest: Vec::new(),
                }),
            }
        }

        fn state(&self) -> std::sync::MutexGuard<'_, BypassState> {
            self.state.lock().unwrap_or_else(|e| e.into_inner())
        }

        /// Writes `parts` (one message, framed) without waiting.
        pub(crate) fn write(
            &self,
            parts: &[&[u8]],
            shared: Option<&Shared>,
        ) -> sansrpc_futures::Bypassed {
            use sansrpc_futures::Bypassed;
            let mut state = self.state();
            let Some(fd) = state.fd.filter(|_| state.rest.is_empty()) else {
                return Bypassed::Not;
            };
            let slices: smallvec::SmallVec<[io::IoSlice<'_>; 6]> = parts
                .iter()
                .filter(|p| !p.is_empty())
                .map(|p| io::IoSlice::new(p))
                .collect();
            let len: usize = parts.iter().map(|p| p.len()).sum();
            // SAFETY: `fd` is the transport's socket, open while `state.fd` holds it: the
            // transport clears it under this lock, held here, before it lets the socket go.
            let socket = unsafe { std::os::fd::BorrowedFd::borrow_raw(fd) };
            match send_vectored(socket2::SockRef::from(&socket), &slices, shared) {
                Ok(n) if n >= len => Bypassed::Whole,
                Ok(n) if n > 0 => {
                    let mut skip = n;
                    for part in parts {
                        state
                            .rest
                            .extend_from_slice(part.get(skip..).unwrap_or_default());
                        skip = skip.saturating_sub(part.len());
                    }
                    Bypassed::Part
                }
                // No room, or failed: the driver's own write meets it.
                _ => Bypassed::Not,
            }
        }

        /// What the socket did not take of the last message written (empty when none).
        pub(crate) fn take_rest(&self) -> Vec<u8> {
            std::mem::take(&mut self.state().rest)
        }

        /// The transport lets its socket go: nothing more is written through this.
        pub(crate) fn forget(&self) {
            self.state().fd = None;
        }
    }
}

#[cfg(all(feature = "ws", any(target_os = "linux", target_os = "android")))]
pub(crate) use linux_tcp::{plain_tcp_fd, Bypassing};

#[cfg(all(
    test,
    any(feature = "ws", feature = "http"),
    any(target_os = "linux", target_os = "android")
))]
mod tests {
    use std::io::IoSlice;

    use tokio::io::AsyncReadExt as _;
    use tokio::net::{TcpListener, TcpStream};

    use super::linux_tcp::GATHER;
    use super::poll_write_vectored;

    /// A connected pair on loopback: the writing end and the reading end.
    async fn pair() -> (TcpStream, TcpStream) {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let writer = TcpStream::connect(listener.local_addr().unwrap())
            .await
            .unwrap();
        let (reader, _) = listener.accept().await.unwrap();
        (writer, reader)
    }

    /// The pieces' bytes, each piece filled with a byte of its own.
    fn pieces(sizes: &[usize]) -> Vec<Vec<u8>> {
        sizes
            .iter()
            .enumerate()
            .map(|(i, &n)| (0..n).map(|j| (i * 31 + j) as u8).collect())
            .collect()
    }

    /// Writes `sizes`' pieces `times` over, each time with vectored writes until all are
    /// taken; the reader receives their concatenation, in order, whichever way (gathered or
    /// not) they went. The reader runs only while the writer waits (one thread): once the
    /// socket's buffers fill, writes are taken in part.
    async fn round_trip(sizes: &[usize], times: usize) {
        let (mut writer, mut reader) = pair().await;
        let pieces = pieces(sizes);
        let whole: Vec<u8> = pieces.concat().repeat(times);
        let reading = tokio::spawn(async move {
            let mut got = vec![0; whole.len()];
            reader.read_exact(&mut got).await.unwrap();
            assert!(got == whole, "the bytes received differ from those written");
        });
        let total: usize = sizes.iter().sum();
        let mut partial = 0;
        for _ in 0..times {
            let mut done = 0;
            while done < total {
                // What is left of the pieces after `done` bytes.
                let mut skip = done;
                let rest: Vec<IoSlice<'_>> = pieces
                    .iter()
                    .filter_map(|p| {
                        let from = skip.min(p.len());
                        skip -= from;
                        (from < p.len()).then(|| IoSlice::new(&p[from..]))
                    })
                    .collect();
                let n =
                    std::future::poll_fn(|cx| poll_write_vectored(&mut writer, cx, &rest, None))
                        .await
                        .unwrap();
                assert!(n > 0 && n <= total - done);
                partial += usize::from(n < total - done);
                done += n;
            }
        }
        reading.await.unwrap();
        if times > 1 {
            assert!(partial > 0, "no write was taken in part");
        }
    }

    #[tokio::test]
    async fn small_writes_are_gathered_and_large_ones_sent_in_pieces_all_in_order() {
        // A subscriber's notification: head, prefix, item, tail (gathered).
        round_trip(&[4, 90, 1050, 2], 1).await;
        // Exactly the gathering bound, and one byte past it (sent in pieces).
        round_trip(&[GATHER - 10, 10], 1).await;
        round_trip(&[GATHER - 10, 11], 1).await;
        // One piece alone, small and large; empty pieces among others.
        round_trip(&[700], 1).await;
        round_trip(&[3 * GATHER], 1).await;
        round_trip(&[0, 5, 0, 7], 1).await;
        // More than the socket takes at once: partial writes, the rest written after.
        round_trip(&[4, 8 << 20, 2], 1).await;
    }

    /// Writes `pieces` whole to `writer` in one vectored write, `shared` being one of them;
    /// what `reader` then reads.
    async fn write_shared(
        writer: &mut TcpStream,
        reader: &mut TcpStream,
        pieces: &[&[u8]],
        shared: Option<&super::Shared>,
    ) -> Vec<u8> {
        let bufs: Vec<IoSlice<'_>> = pieces.iter().map(|p| IoSlice::new(p)).collect();
        let total = pieces.iter().map(|p| p.len()).sum();
        let n = std::future::poll_fn(|cx| poll_write_vectored(writer, cx, &bufs, shared))
            .await
            .unwrap();
        assert_eq!(n, total, "a small write is taken whole");
        let mut got = vec![0; total];
        reader.read_exact(&mut got).await.unwrap();
        got
    }

    #[tokio::test]
    async fn a_shared_item_gathered_once_is_sent_again_only_with_the_same_bytes_around_it() {
        let shared = |json: &str| -> super::Shared {
            sansrpc::RawValue::from_string(json.into()).unwrap().into()
        };
        let (item, other) = (shared("[1,2,3]"), shared("[4,5,6]"));
        let copy = item.get().as_bytes().to_vec();
        let mut sockets = [pair().await, pair().await];
        // Writes in turn, to one socket then the other: the bytes before the item, the item
        // (named shared or not), the bytes after it; what the reader gets; the item's count of
        // holders after it (the one the thread keeps included).
        type Write<'a> = (&'a [&'a [u8]], Option<&'a super::Shared>, &'a [u8], usize);
        let writes: [Write<'_>; 7] = [
            // The first subscriber's frame is gathered, and the item kept with it.
            (&[b"<", b"a"], Some(&item), b">", 2),
            // The same item with the same bytes around it, to another socket.
            (&[b"<", b"a"], Some(&item), b">", 2),
            // The same item under another prefix, another tail, or other pieces around it.
            (&[b"<", b"b"], Some(&item), b">", 2),
            (&[b"<", b"b"], Some(&item), b")", 2),
            (&[b"<<"], Some(&item), b">", 2),
            // Another item of the same length with the same bytes around it: the first is
            // let go.
            (&[b"<<"], Some(&other), b">", 1),
            // The item's bytes as a piece of their own, not named: no item kept.
            (&[b"<<"], None, b">", 1),
        ];
        for (i, (before, shared, after, holders)) in writes.into_iter().enumerate() {
            let middle = shared.map_or(&copy[..], |s| s.get().as_bytes());
            let mut pieces = before.to_vec();
            pieces.extend([middle, after]);
            let (writer, reader) = &mut sockets[i % 2];
            let got = write_shared(writer, reader, &pieces, shared).await;
            assert_eq!(got, pieces.concat(), "write {i}");
            assert_eq!(std::sync::Arc::strong_count(&item), holders, "write {i}");
        }
        assert_eq!(
            std::sync::Arc::strong_count(&other),
            1,
            "a write of no item keeps none"
        );
    }

    #[tokio::test]
    async fn gathered_writes_taken_in_part_go_on_where_they_stopped() {
        // 16 MiB of notifications to a reader that reads only while the writer waits.
        round_trip(&[4, 90, 1050, 2], 16 << 10).await;
    }
}

#[cfg(test)]
mod input_tests {
    use std::future::poll_fn;
    use std::task::Poll;

    use tokio::io::AsyncWriteExt as _;

    use super::Input;

    /// A connection waiting for its peer's next message with nothing buffered holds no read
    /// buffer: it goes back to the thread, and the next read (this connection's or
    /// another's) is made into one the thread keeps. A thousand keep-alive connections would
    /// otherwise hold a thousand, each cold in cache by the time its next request comes.
    #[tokio::test]
    async fn an_idle_connection_gives_its_read_buffer_back_to_the_thread() {
        let (mut peer, mut stream) = tokio::io::duplex(1 << 16);
        let mut input = Input::new(Vec::new());
        let mut last = None;
        for message in [&b"{\"jsonrpc\":\"2.0\",\"method\":\"a\"}"[..], b"[]", b"{}"] {
            peer.write_all(message).await.unwrap();
            let n = poll_fn(|cx| input.poll_fill(&mut stream, cx, 1))
                .await
                .unwrap();
            assert_eq!((n, &*input.data()), (message.len(), message));
            if let Some(at) = last {
                assert_eq!(
                    input.buf.as_ptr(),
                    at,
                    "read into the buffer the thread kept"
                );
            }
            input.consume(n);
            last = Some(input.buf.as_ptr());
            let waiting = poll_fn(|cx| Poll::Ready(input.poll_fill(&mut stream, cx, 1))).await;
            assert!(waiting.is_pending(), "nothing more was sent");
            assert_eq!(
                input.buf.capacity(),
                0,
                "an idle connection holds no buffer"
            );
        }
    }
}
