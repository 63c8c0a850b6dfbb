//! Transports: TCP (`std::net`), Unix sockets (`std::os::unix::net`), the process's stdio,
//! and a child process's stdio.

use std::fmt;
use std::io::{self, Read, Write};
use std::net::{Shutdown, SocketAddr, TcpListener, TcpStream, ToSocketAddrs};
#[cfg(unix)]
use std::os::unix::net::{UnixListener, UnixStream};
#[cfg(unix)]
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::mpsc::{Receiver, Sender};
use std::sync::{Arc, Mutex};
use std::thread::{self, JoinHandle};
use std::time::{Duration, Instant};

use sansrpc::codec::ReadSize;
use sansrpc::router::Router;

use crate::driver::{Cmd, Handlers};
use crate::pool::{join_by, Pool};
use crate::{Client, Direction, Options, Tap};

/// Connects to a JSON-RPC server over TCP. Requests the server sends back are answered
/// `-32601` Method not found.
pub fn connect_tcp(addr: impl ToSocketAddrs, config: Options) -> io::Result<Client> {
    let stream = TcpStream::connect(addr)?;
    tune(&stream)?;
    socket(stream, Handlers::none(), &config)
}

/// Sets up a TCP connection: Nagle's algorithm off (JSON-RPC writes whole messages), and
/// the kernel's unsent bytes bounded by [`UNSENT_LOW_WATER`](sansrpc::driver::UNSENT_LOW_WATER)
/// where the system has the option, so a peer that stops reading meets the write-stall
/// timeout soon after.
pub(crate) fn tune(stream: &TcpStream) -> io::Result<()> {
    stream.set_nodelay(true)?;
    #[cfg(any(target_os = "linux", target_os = "android"))]
    socket2::SockRef::from(stream).set_tcp_notsent_lowat(sansrpc::driver::UNSENT_LOW_WATER)?;
    Ok(())
}

/// A client over a TCP stream already connected (the reconnecting client's connector).
pub(crate) fn tcp_client(stream: TcpStream, config: &Options) -> io::Result<Client> {
    socket(stream, Handlers::none(), config)
}

/// Connects to a JSON-RPC server listening on the Unix socket at `path`. Requests the
/// server sends back are answered `-32601` Method not found.
#[cfg(unix)]
pub fn connect_unix(path: impl AsRef<Path>, config: Options) -> io::Result<Client> {
    socket(UnixStream::connect(path)?, Handlers::none(), &config)
}

/// A connected socket: TCP and Unix streams behave alike. Read and written through shared
/// references, so one descriptor serves the reader, the writer and the closer.
trait Socket: Send + Sync + Sized + 'static
where
    for<'a> &'a Self: Read + Write,
{
    fn shutdown(&self);
    /// Makes the close that follows a reset (nothing of what is queued is sent).
    fn reset(&self) {}
    fn set_write_timeout(&self, timeout: Option<Duration>) -> io::Result<()>;
}

impl Socket for TcpStream {
    fn shutdown(&self) {
        let _ = TcpStream::shutdown(self, Shutdown::Both);
    }
    fn reset(&self) {
        let _ = socket2::SockRef::from(self).set_linger(Some(Duration::ZERO));
    }
    fn set_write_timeout(&self, timeout: Option<Duration>) -> io::Result<()> {
        TcpStream::set_write_timeout(self, timeout)
    }
}

#[cfg(unix)]
impl Socket for UnixStream {
    fn shutdown(&self) {
        let _ = UnixStream::shutdown(self, Shutdown::Both);
    }
    fn set_write_timeout(&self, timeout: Option<Duration>) -> io::Result<()> {
        UnixStream::set_write_timeout(self, timeout)
    }
}

/// One socket shared by the driver's reader and writer: its descriptor closes when both
/// are dropped (the connection's end), not when the server next looks at its list.
struct Shared<S>(Arc<S>);

impl<S> Read for Shared<S>
where
    for<'a> &'a S: Read,
{
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        (&*self.0).read(buf)
    }
}

impl<S> Write for Shared<S>
where
    for<'a> &'a S: Write,
{
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        (&*self.0).write(buf)
    }
    fn flush(&mut self) -> io::Result<()> {
        (&*self.0).flush()
    }
}

fn socket<S: Socket>(stream: S, handlers: Handlers, config: &Options) -> io::Result<Client>
where
    for<'a> &'a S: Read + Write,
{
    socket_with(stream, handlers, config, ())
}

/// [`socket`], keeping `kept` until the connection's threads are done.
fn socket_with<S: Socket>(
    stream: S,
    handlers: Handlers,
    config: &Options,
    kept: impl Send + Sync + 'static,
) -> io::Result<Client>
where
    for<'a> &'a S: Read + Write,
{
    // A blocked write wakes the driver this often, whose endpoint decides (write stall).
    // Short, because a write that returns at its timeout says how much went out but not
    // when: 4 MiB taken at once and reported 30 s later would restart the stall clock.
    let wake = Duration::from_millis(250);
    stream.set_write_timeout(config.connection.write_stall_timeout.map(|t| t.min(wake)))?;
    let stream = Arc::new(stream);
    let closer = Arc::downgrade(&stream);
    let aborter = Arc::downgrade(&stream);
    let transport = Transport {
        reader: Box::new(Shared(Arc::clone(&stream))),
        writer: Box::new(Shared(stream)),
        // Makes the reader's blocking `read` return, on this side and the peer's.
        close: Box::new(move |reset| {
            let _ = &kept;
            if let Some(s) = closer.upgrade() {
                if reset {
                    s.reset();
                }
                s.shutdown();
            }
        }),
        join_reader: true,
    };
    let abort = Box::new(move || {
        if let Some(s) = aborter.upgrade() {
            s.shutdown();
        }
    });
    Client::spawn(transport, abort, handlers, config)
}

/// Spawns `command` with piped stdin and stdout and connects to it as a JSON-RPC server
/// over them (stderr is left as configured). Closing the client closes the child's stdin,
/// waits up to the shutdown grace for the child to exit, then kills it.
pub fn spawn_child(command: &mut Command, config: Options) -> io::Result<Client> {
    let mut child = command
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()?;
    let (Some(stdin), Some(stdout)) = (child.stdin.take(), child.stdout.take()) else {
        let _ = child.kill();
        let _ = child.wait();
        return Err(io::Error::other("child process without piped stdio"));
    };
    let child = Arc::new(Mutex::new(child));
    let (reaped, killed, grace) = (Arc::clone(&child), child, config.connection.end_grace);
    let transport = Transport {
        reader: Box::new(stdout),
        writer: Box::new(stdin),
        // The child sees its stdin end; when it exits, its stdout ends and so does our reader.
        close: Box::new(move |_| reap(&reaped, Instant::now() + grace)),
        join_reader: true,
    };
    let abort = Box::new(move || drop(lock(&killed).kill()));
    Client::spawn(transport, abort, Handlers::none(), &config)
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

/// Waits for the child to exit by `deadline`, then kills it.
fn reap(child: &Mutex<Child>, deadline: Instant) {
    while Instant::now() < deadline {
        if !matches!(lock(child).try_wait(), Ok(None)) {
            return;
        }
        thread::sleep(Duration::from_millis(5));
    }
    let mut child = lock(child);
    let _ = child.kill();
    let _ = child.wait();
}

/// Serves `router` on this process's stdin and stdout until stdin ends, then returns once
/// the handlers in flight have answered (within the shutdown grace).
///
/// Nothing else may write to stdout meanwhile: log to stderr. When the connection ends
/// for another reason (stdout closed), the thread reading stdin cannot be woken and is
/// left to end with the process.
pub fn serve_stdio(router: Arc<Router>, config: Options) -> io::Result<()> {
    serve_stdio_status(router, config).map(drop)
}

/// Serves as [`serve_stdio`] does and returns the status the process should exit with:
/// for an LSP server ([`Profile::Lsp`](sansrpc::connection::Profile::Lsp)), 0 when the
/// client sent `shutdown` before `exit` (or before it closed stdin), 1 otherwise (also
/// when the editor's process, `initialize`'s `processId`, died); 0 for other profiles.
///
/// ```no_run
/// # let router = std::sync::Arc::new(sansrpc::router::Router::new());
/// # let config = sansrpc_blocking::Options::default();
/// let status = sansrpc_blocking::serve_stdio_status(router, config)?;
/// std::process::exit(status);
/// # Ok::<(), std::io::Error>(())
/// ```
pub fn serve_stdio_status(router: Arc<Router>, config: Options) -> io::Result<i32> {
    let transport = Transport {
        reader: Box::new(io::stdin()),
        writer: Box::new(io::stdout()),
        close: Box::new(|_| {}),
        join_reader: false,
    };
    let handlers = Handlers::own_pool(router, config.workers)?;
    let client = Client::spawn(transport, Box::new(|| {}), handlers, &config)?;
    client.wait();
    Ok(client.exit_code().unwrap_or(0))
}

/// Listens on `addr` and serves `router` on every connection, each with its own driver and
/// reader threads, all sharing one pool of [`Options::workers`](crate::Options::workers) handler threads.
pub fn serve_tcp(
    addr: impl ToSocketAddrs,
    router: Arc<Router>,
    config: Options,
) -> io::Result<Server> {
    let listener = TcpListener::bind(addr)?;
    let addr = listener.local_addr()?;
    let accept = move || {
        let (stream, _) = listener.accept()?;
        tune(&stream)?;
        Ok(stream)
    };
    // Wakes the blocking `accept` with a connection of our own.
    let mut wake_addr = addr;
    if wake_addr.ip().is_unspecified() {
        wake_addr.set_ip(match wake_addr {
            SocketAddr::V4(_) => [127, 0, 0, 1].into(),
            SocketAddr::V6(_) => std::net::Ipv6Addr::LOCALHOST.into(),
        });
    }
    let wake = Box::new(move || {
        let _ = TcpStream::connect_timeout(&wake_addr, Duration::from_secs(1));
    });
    let inner = Listening::start(accept, wake, router, config)?;
    Ok(Server { addr, inner })
}

/// Listens on a Unix socket created at `path` and serves `router` on every connection, as
/// [`serve_tcp`] does. The socket file is removed when the server shuts down; a file
/// already at `path` makes binding fail (remove a stale one first).
#[cfg(unix)]
pub fn serve_unix(
    path: impl AsRef<Path>,
    router: Arc<Router>,
    config: Options,
) -> io::Result<UnixServer> {
    let path = path.as_ref().to_path_buf();
    let listener = UnixListener::bind(&path)?;
    let accept = move || listener.accept().map(|(stream, _)| stream);
    let wake_path = path.clone();
    let wake = Box::new(move || drop(UnixStream::connect(&wake_path)));
    let inner = Listening::start(accept, wake, router, config)?;
    Ok(UnixServer { path, inner })
}

/// What a listening server shares between its transports: the acceptor thread, the live
/// connections and the handler pool.
struct Listening {
    stop: Arc<AtomicBool>,
    acceptor: Option<JoinHandle<()>>,
    connections: Arc<Mutex<Vec<Client>>>,
    pool: Option<Pool>,
    grace: Duration,
    /// Makes the acceptor's blocking `accept` return.
    wake: Box<dyn Fn() + Send + Sync>,
}

impl fmt::Debug for Listening {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Listening")
            .field("stopped", &self.stop.load(Ordering::Relaxed))
            .finish()
    }
}

impl Listening {
    fn start<S: Socket>(
        mut accept: impl FnMut() -> io::Result<S> + Send + 'static,
        wake: Box<dyn Fn() + Send + Sync>,
        router: Arc<Router>,
        mut config: Options,
    ) -> io::Result<Listening>
    where
        for<'a> &'a S: Read + Write,
    {
        config = served(config);
        let pool = Pool::new(config.workers)?;
        let jobs = pool.sender();
        let stop = Arc::new(AtomicBool::new(false));
        let connections = Arc::new(Mutex::new(Vec::<Client>::new()));
        // Connections running: one more per connection served, one less as its threads end.
        let open = Arc::new(AtomicUsize::new(0));
        // The list's length when closed connections were last dropped from it.
        let mut pruned = 0;
        let mut refusal = Vec::new();
        sansrpc::connection::write_refusal(
            config.connection.profile,
            Some(config.connection.stream_framing()),
            &mut refusal,
        );
        let (stopped, live, grace) = (
            Arc::clone(&stop),
            Arc::clone(&connections),
            config.connection.end_grace,
        );
        let acceptor = thread::Builder::new()
            .name("rpc-accept".into())
            .spawn(move || loop {
                let stream = accept();
                if stopped.load(Ordering::SeqCst) {
                    return;
                }
                let Ok(stream) = stream else {
                    // Out of file descriptors, most likely: give connections time to end.
                    thread::sleep(Duration::from_millis(10));
                    continue;
                };
                let mut live = lock(&live);
                // The closed connections are dropped from the list once it has doubled since
                // they last were: constant work per connection, whatever the number open.
                if live.len() >= 2 * pruned.max(32) {
                    live.retain(|c: &Client| !c.is_closed());
                    pruned = live.len();
                }
                if open.load(Ordering::SeqCst) >= config.max_connections {
                    // Refused: one error (id null, -32002), then closed. The connections
                    // already served are not touched.
                    let _ = (&stream).write_all(&refusal);
                    stream.shutdown();
                    continue;
                }
                let handlers = Handlers {
                    router: Arc::clone(&router),
                    jobs: Some(jobs.clone()),
                    pool: None,
                };
                open.fetch_add(1, Ordering::SeqCst);
                let running = Running(Arc::clone(&open));
                if let Ok(client) = socket_with(stream, handlers, &config, running) {
                    live.push(client);
                }
            })?;
        Ok(Listening {
            stop,
            acceptor: Some(acceptor),
            connections,
            pool: Some(pool),
            grace,
            wake,
        })
    }

    /// Stops accepting, closes every connection as [`Client::close`] does (in parallel),
    /// then stops the handler pool. Idempotent.
    fn stop(&mut self) {
        let Some(acceptor) = self.acceptor.take() else {
            return;
        };
        self.stop.store(true, Ordering::SeqCst);
        (self.wake)();
        let _ = join_by(acceptor, Instant::now() + self.grace);
        let connections = std::mem::take(&mut *lock(&self.connections));
        connections.iter().for_each(Client::begin_close);
        // Each drop waits for its connection; all of them are closing at once.
        drop(connections);
        if let Some(pool) = self.pool.take() {
            pool.shutdown(Instant::now() + self.grace);
        }
    }
}

impl Drop for Listening {
    fn drop(&mut self) {
        self.stop();
    }
}

/// One connection a server counts as running, until dropped (its threads are done).
struct Running(Arc<AtomicUsize>);

impl Drop for Running {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::SeqCst);
    }
}

/// A running TCP server, from [`serve_tcp`]. Dropping it shuts it down.
#[derive(Debug)]
pub struct Server {
    addr: SocketAddr,
    inner: Listening,
}

impl Server {
    /// The address the server listens on (with the port picked when it was bound to 0).
    pub fn local_addr(&self) -> SocketAddr {
        self.addr
    }

    /// Shuts the server down gracefully and joins its threads: stops accepting, closes
    /// every connection as [`Client::close`] does (in parallel), then stops the handler
    /// pool.
    pub fn shutdown(mut self) {
        self.inner.stop();
    }
}

/// A running Unix-socket server, from [`serve_unix`]. Dropping it shuts it down and
/// removes its socket file.
#[cfg(unix)]
#[derive(Debug)]
pub struct UnixServer {
    path: PathBuf,
    inner: Listening,
}

#[cfg(unix)]
impl UnixServer {
    /// The path of the socket the server listens on.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Shuts the server down as [`Server::shutdown`] does, and removes the socket file.
    pub fn shutdown(self) {
        // Drop does it.
    }
}

#[cfg(unix)]
impl Drop for UnixServer {
    fn drop(&mut self) {
        self.inner.stop();
        let _ = std::fs::remove_file(&self.path);
    }
}

/// A byte stream, and how to unblock its reader once we are done with it.
pub(crate) struct Transport {
    pub reader: Box<dyn Read + Send>,
    pub writer: Box<dyn Write + Send>,
    /// Run after the writer is dropped; must make the reader's `read` return (shut a socket
    /// down, reap a child process). With `true` the close is a reset
    /// ([`Connection::resets_on_close`](sansrpc::connection::Connection::resets_on_close)).
    pub close: Box<dyn FnOnce(bool) + Send>,
    /// False when nothing can unblock the reader (the process's stdin): it is left behind.
    pub join_reader: bool,
}

/// Hands a copy of what passes through to a [`Tap`].
pub(crate) struct Tapped<T> {
    pub inner: T,
    pub tap: Tap,
}

impl<R: Read> Read for Tapped<R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let n = self.inner.read(buf)?;
        self.tap.see(Direction::Received, &buf[..n]);
        Ok(n)
    }
}

impl<W: Write> Write for Tapped<W> {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        let n = self.inner.write(buf)?;
        self.tap.see(Direction::Sent, &buf[..n]);
        Ok(n)
    }

    fn flush(&mut self) -> io::Result<()> {
        self.inner.flush()
    }
}

/// The smallest read, where every connection starts.
const SMALL_READ: usize = 4 * 1024;

/// The reader thread: reads only with a free chunk in hand, so it stays at most the
/// driver's chunk count ahead of the endpoint.
pub(crate) fn read(
    mut reader: Box<dyn Read + Send>,
    tx: &Sender<Cmd>,
    free: &Receiver<Vec<u8>>,
    size: usize,
) {
    // Small reads for small traffic: only what a read may fill is zeroed.
    let mut sizer = ReadSize::new(SMALL_READ.min(size), size);
    while let Ok(mut chunk) = free.recv() {
        if chunk.capacity() > 2 * sizer.get() {
            chunk.shrink_to(sizer.get());
        }
        chunk.resize(sizer.get(), 0);
        let n = loop {
            match reader.read(&mut chunk) {
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                // A read error ends the input as the end of the stream does.
                result => break result.unwrap_or(0),
            }
        };
        if n == 0 {
            break;
        }
        sizer.read(n);
        chunk.truncate(n);
        if tx.send(Cmd::Input(chunk)).is_err() {
            return;
        }
    }
    let _ = tx.send(Cmd::Eof);
}

/// The config a listening server serves with: the network defaults filled in when on.
fn served(mut config: Options) -> Options {
    if config.network_defaults {
        config.connection = config.connection.with_network_defaults();
    }
    config
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use sansrpc::connection::NETWORK_WRITE_STALL_TIMEOUT;

    use super::served;
    use crate::Options;

    #[test]
    fn listening_servers_fill_unset_timeouts_with_the_network_defaults() {
        let mut config = Options::default();
        config.connection.frame_timeout = Some(Duration::from_secs(2));
        let config = served(config);
        assert_eq!(
            config.connection.frame_timeout,
            Some(Duration::from_secs(2))
        );
        assert_eq!(
            config.connection.write_stall_timeout,
            Some(NETWORK_WRITE_STALL_TIMEOUT)
        );
        assert!(config.connection.idle_timeout.is_some());
        let off = Options {
            network_defaults: false,
            ..Options::default()
        };
        assert_eq!(served(off).connection.idle_timeout, None);
    }
}
