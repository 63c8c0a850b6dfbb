//! Transports: TCP (`std::net`), the process's stdio, and a child process's stdio.

use std::io;
use std::net::{Shutdown, SocketAddr, TcpListener, TcpStream, ToSocketAddrs};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::{self, JoinHandle};
use std::time::{Duration, Instant};

use sansrpc::router::Router;

use crate::driver::{Handlers, Transport};
use crate::pool::{join_by, Pool};
use crate::{Client, Config};

/// Connects to a JSON-RPC server over TCP. Requests the server sends back are answered
/// `-32601` Method not found.
pub fn connect_tcp(addr: impl ToSocketAddrs, config: Config) -> io::Result<Client> {
    tcp(TcpStream::connect(addr)?, Handlers::none(), &config)
}

fn tcp(stream: TcpStream, handlers: Handlers, config: &Config) -> io::Result<Client> {
    stream.set_nodelay(true)?;
    let (reader, writer, closer) = (
        stream.try_clone()?,
        stream.try_clone()?,
        stream.try_clone()?,
    );
    let transport = Transport {
        reader: Box::new(reader),
        writer: Box::new(writer),
        // Makes the reader's blocking `read` return, on this side and the peer's.
        close: Box::new(move || drop(closer.shutdown(Shutdown::Both))),
        join_reader: true,
    };
    let abort = Box::new(move || drop(stream.shutdown(Shutdown::Both)));
    Client::spawn(transport, abort, handlers, config)
}

/// Spawns `command` with piped stdin and stdout and connects to it as a JSON-RPC server
/// over them (stderr is left as configured). Closing the client closes the child's stdin,
/// waits up to the shutdown grace for the child to exit, then kills it.
pub fn spawn_child(command: &mut Command, config: Config) -> io::Result<Client> {
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
    let (reaped, killed, grace) = (Arc::clone(&child), child, config.shutdown_grace);
    let transport = Transport {
        reader: Box::new(stdout),
        writer: Box::new(stdin),
        // The child sees its stdin end; when it exits, its stdout ends and so does our reader.
        close: Box::new(move || reap(&reaped, Instant::now() + grace)),
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
pub fn serve_stdio(router: Arc<Router>, config: Config) -> io::Result<()> {
    let transport = Transport {
        reader: Box::new(io::stdin()),
        writer: Box::new(io::stdout()),
        close: Box::new(|| {}),
        join_reader: false,
    };
    let handlers = Handlers::own_pool(router, config.workers)?;
    let client = Client::spawn(transport, Box::new(|| {}), handlers, &config)?;
    client.wait();
    Ok(())
}

/// Listens on `addr` and serves `router` on every connection, each with its own driver and
/// reader threads, all sharing one pool of [`Config::workers`] handler threads.
pub fn serve_tcp(
    addr: impl ToSocketAddrs,
    router: Arc<Router>,
    config: Config,
) -> io::Result<Server> {
    let listener = TcpListener::bind(addr)?;
    let addr = listener.local_addr()?;
    let pool = Pool::new(config.workers)?;
    let jobs = pool.sender();
    let stop = Arc::new(AtomicBool::new(false));
    let connections = Arc::new(Mutex::new(Vec::<Client>::new()));
    let (stopped, live, grace) = (
        Arc::clone(&stop),
        Arc::clone(&connections),
        config.shutdown_grace,
    );
    let acceptor = thread::Builder::new()
        .name("rpc-accept".into())
        .spawn(move || {
            for stream in listener.incoming() {
                if stopped.load(Ordering::SeqCst) {
                    return;
                }
                let Ok(stream) = stream else {
                    // Out of file descriptors, most likely: give connections time to end.
                    thread::sleep(Duration::from_millis(10));
                    continue;
                };
                let mut live = lock(&live);
                live.retain(|c: &Client| !c.is_closed());
                if live.len() >= config.max_connections {
                    continue; // dropping the stream closes it
                }
                let handlers = Handlers {
                    router: Arc::clone(&router),
                    jobs: Some(jobs.clone()),
                    pool: None,
                };
                if let Ok(client) = tcp(stream, handlers, &config) {
                    live.push(client);
                }
            }
        })?;
    Ok(Server {
        addr,
        stop,
        acceptor: Some(acceptor),
        connections,
        pool: Some(pool),
        grace,
    })
}

/// A running TCP server, from [`serve_tcp`]. Dropping it shuts it down.
#[derive(Debug)]
pub struct Server {
    addr: SocketAddr,
    stop: Arc<AtomicBool>,
    acceptor: Option<JoinHandle<()>>,
    connections: Arc<Mutex<Vec<Client>>>,
    pool: Option<Pool>,
    grace: Duration,
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
        self.stop();
    }

    fn stop(&mut self) {
        let Some(acceptor) = self.acceptor.take() else {
            return;
        };
        self.stop.store(true, Ordering::SeqCst);
        // Wake the blocking `accept` with a connection of our own.
        let mut wake = self.addr;
        if wake.ip().is_unspecified() {
            wake.set_ip(match wake {
                SocketAddr::V4(_) => [127, 0, 0, 1].into(),
                SocketAddr::V6(_) => std::net::Ipv6Addr::LOCALHOST.into(),
            });
        }
        let _ = TcpStream::connect_timeout(&wake, Duration::from_secs(1));
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

impl Drop for Server {
    fn drop(&mut self) {
        self.stop();
    }
}
