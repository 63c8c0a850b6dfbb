//! A JSON-RPC server on your own event loop: one thread, mio, many TCP connections, each a
//! `Connection` driven through the core's byte-stream helper `StreamIo`.
//!
//! ```sh
//! cargo run --example mio_server -- 127.0.0.1:7600          # then, in another terminal:
//! cargo run -p sansrpc-cli -- check --tcp 127.0.0.1:7600 --spec-methods --strict
//! ```
//! A second argument sets the write-stall timeout in seconds (default: the network
//! defaults, 30 s). It prints `listening on ADDR` once bound.
use std::collections::{BTreeSet, HashMap};
use std::io::{ErrorKind, Read, Write};
use std::time::Duration;

use mio::net::{TcpListener, TcpStream};
use mio::{Events, Interest, Poll, Token};
use sansrpc::connection::{Config, Connection};
use sansrpc::driver::{self, StreamIo, Timers, UNSENT_LOW_WATER};
use sansrpc::router::{Reply, Router};
use sansrpc::Instant;

struct Peer {
    socket: TcpStream,
    conn: Connection,
    io: StreamIo,
}

const LISTENER: Token = Token(usize::MAX);

fn main() -> std::io::Result<()> {
    let mut args = std::env::args().skip(1);
    let addr = args.next().unwrap_or_else(|| "127.0.0.1:7600".into());
    let mut config = Config::default();
    config.write_stall_timeout = args.next().map(|s| Duration::from_secs(s.parse().unwrap()));
    let config = config.with_network_defaults();
    let (router, mut reply) = (router(), Reply::default());
    let (mut poll, mut events) = (Poll::new()?, Events::with_capacity(256));
    let mut listener = TcpListener::bind(addr.parse().expect("an address"))?;
    poll.registry()
        .register(&mut listener, LISTENER, Interest::READABLE)?;
    println!("listening on {}", listener.local_addr()?);
    // The core's time is what the loop hands it: here, the time since the loop started.
    let start = std::time::Instant::now();
    let clock = || Instant::from_duration(start.elapsed());
    let (mut timers, mut peers) = (Timers::new(), HashMap::new());
    let (mut next, mut ready) = (0, BTreeSet::new());
    loop {
        // Sleep until a socket is ready or the earliest deadline; not at all when a
        // connection asked for another turn (it is still in `ready`).
        let wait = timers
            .next_deadline()
            .map(|d| d.saturating_duration_since(clock()));
        let wait = if ready.is_empty() {
            wait
        } else {
            Some(Duration::ZERO)
        };
        poll.poll(&mut events, wait)?;
        let now = clock();
        ready.extend(events.iter().map(|e| e.token()));
        while let Some(token) = timers.pop_due(now) {
            ready.insert(token);
        }
        while let Ok((mut socket, _)) = listener.accept() {
            let (token, both) = (Token(next), Interest::READABLE | Interest::WRITABLE);
            next += 1;
            poll.registry().register(&mut socket, token, both)?;
            // Few unsent bytes in the kernel: a peer that stops reading meets the stall soon.
            #[cfg(target_os = "linux")]
            let _ = socket2::SockRef::from(&socket).set_tcp_notsent_lowat(UNSENT_LOW_WATER);
            let (conn, io) = (Connection::new(config.clone(), now), StreamIo::new());
            peers.insert(token, Peer { socket, conn, io });
            ready.insert(token);
        }
        for token in std::mem::take(&mut ready) {
            let Some(peer) = peers.get_mut(&token) else {
                continue;
            };
            let interest = turn(peer, &router, &mut reply, now);
            timers.set(token, interest.deadline);
            if interest.finished {
                let mut socket = peers.remove(&token).unwrap().socket;
                if interest.reset {
                    let _ = socket2::SockRef::from(&socket).set_linger(Some(Duration::ZERO));
                }
                poll.registry().deregister(&mut socket)?;
            } else if interest.again {
                ready.insert(token);
            }
        }
    }
}

/// One turn of one connection: read, serve, fire timers, write; what to wait for next.
fn turn(peer: &mut Peer, router: &Router, reply: &mut Reply, now: Instant) -> driver::Interest {
    let Peer { socket, conn, io } = peer;
    // Runs the handlers of what came, then offers the connection input it held back.
    let mut serve = |conn: &mut Connection, io: &mut StreamIo| {
        while router.serve(conn, reply, |_| {}) || io.feed(conn, now) {}
    };
    while let Some(buf) = io.read_buf(conn) {
        match socket.read(buf) {
            Ok(n) => io.handle_read(conn, n, now),
            Err(e) if e.kind() == ErrorKind::WouldBlock => {
                io.handle_read_idle();
                break;
            }
            Err(e) if e.kind() == ErrorKind::Interrupted => continue,
            Err(_) => conn.close(now),
        }
        serve(conn, io);
    }
    if conn.poll_timeout().is_some_and(|at| at <= now) {
        conn.handle_timeout(now);
    }
    serve(conn, io);
    while !io.transmit(conn).is_empty() {
        match socket.write(io.transmit(conn)) {
            Ok(n) => io.handle_written(conn, n, now),
            Err(e) if e.kind() == ErrorKind::WouldBlock => {
                io.handle_write_blocked(conn, now);
                break;
            }
            Err(e) if e.kind() == ErrorKind::Interrupted => {}
            Err(_) => {
                conn.close(now);
                break;
            }
        }
    }
    io.interest(conn)
}

#[derive(serde::Deserialize)]
struct Operands {
    minuend: i64,
    subtrahend: i64,
}
sansrpc::method!(Subtract = "subtract", Operands => i64);
sansrpc::method!(Sum = "sum", Vec<i64> => i64);
sansrpc::method!(GetData = "get_data", () => (&'static str, i64));

/// The specification's example methods (section 7), as `sansrpc check --spec-methods` calls.
fn router() -> Router {
    let mut router = Router::new();
    router
        .method::<Subtract, _>(|p| Ok(p.minuend - p.subtrahend))
        .unwrap();
    router.method::<Sum, _>(|n| Ok(n.iter().sum())).unwrap();
    router.method::<GetData, _>(|()| Ok(("hello", 5))).unwrap();
    for name in ["update", "notify_hello", "notify_sum"] {
        router.raw_notification(name, |_| {}).unwrap();
    }
    router
}
