//! The floor of the newHeads workload: what any server must spend per notification, and
//! nothing more. The same chain and the same bytes on the wire as `heads-sansrpc-server`
//! and `heads-jsonrpsee-server` (a 1 KiB header every 100 ms in an `eth_subscription`
//! notification, text frames), but no JSON-RPC library, no task per subscriber and no
//! queue: each block's notification is encoded once, frame included, and one task writes it
//! to every subscribed socket with one non-blocking `write` each. What remains is the
//! kernel's cost of a send on loopback and a loop; no server that sends a notification per
//! subscriber per block can spend less.
//!
//! Written by hand for that purpose only: the WebSocket handshake (the accept key from
//! tungstenite), masked client frames of up to 64 KiB, `eth_subscribe("newHeads")`
//! answered `"0x1"` on every connection (ids are per connection), `eth_unsubscribe`
//! answered `true`, a close frame answered and the connection dropped. A socket a write
//! would block on (a subscriber that stopped reading) is dropped: the floor keeps nothing.
//!
//! `heads-floor-server [ADDR]` (default `127.0.0.1:0`): the first line on stdout is the
//! bound address; it serves until killed.

#[allow(dead_code)] // shared with the client, which uses the rest
#[path = "../chain.rs"]
mod chain;

use std::cell::RefCell;
use std::io::{self, Write as _};
use std::rc::Rc;

use tokio::net::{TcpListener, TcpStream};
use tokio_tungstenite::tungstenite::handshake::derive_accept_key;

/// A subscriber's socket: written by the producer and by its own reader.
type Subscribers = Rc<RefCell<Vec<Rc<TcpStream>>>>;

/// A server text frame around `payload` (unmasked).
fn frame(payload: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(payload.len() + 10);
    out.push(0x81);
    match payload.len() {
        n if n < 126 => out.push(n as u8),
        n if n <= 0xffff => {
            out.push(126);
            out.extend_from_slice(&(n as u16).to_be_bytes());
        }
        n => {
            out.push(127);
            out.extend_from_slice(&(n as u64).to_be_bytes());
        }
    }
    out.extend_from_slice(payload);
    out
}

/// Writes all of `bytes` without blocking; false when the socket would not take them.
fn send(stream: &TcpStream, bytes: &[u8]) -> bool {
    matches!(stream.try_write(bytes), Ok(n) if n == bytes.len())
}

/// Reads into `buf` until `done` says how much of it is whole; that many bytes.
async fn read_until(
    stream: &TcpStream,
    buf: &mut Vec<u8>,
    done: impl Fn(&[u8]) -> Option<usize>,
) -> io::Result<usize> {
    loop {
        if let Some(n) = done(buf) {
            return Ok(n);
        }
        if buf.len() > 1 << 16 {
            return Err(io::Error::other("too long"));
        }
        stream.readable().await?;
        let mut chunk = [0u8; 4096];
        match stream.try_read(&mut chunk) {
            Ok(0) => return Err(io::ErrorKind::UnexpectedEof.into()),
            Ok(n) => buf.extend_from_slice(&chunk[..n]),
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => {}
            Err(e) => return Err(e),
        }
    }
}

/// A whole client frame at the start of `buf`: (opcode, payload range end, frame length).
fn client_frame(buf: &[u8]) -> Option<(u8, usize, usize)> {
    let (&b0, &b1) = (buf.first()?, buf.get(1)?);
    let (len, at) = match b1 & 0x7f {
        126 => (u16::from_be_bytes([*buf.get(2)?, *buf.get(3)?]) as usize, 4),
        127 => return Some((0xff, 0, 0)),
        n => (n as usize, 2),
    };
    let total = at + 4 + len;
    (buf.len() >= total).then_some((b0 & 0x0f, len, total))
}

/// One connection: the handshake, then the client's frames.
async fn serve(stream: TcpStream, subscribers: Subscribers) -> io::Result<()> {
    let stream = Rc::new(stream);
    let mut buf = Vec::new();
    let head = read_until(&stream, &mut buf, |b| {
        b.windows(4).position(|w| w == b"\r\n\r\n").map(|p| p + 4)
    })
    .await?;
    let text = String::from_utf8_lossy(&buf[..head]).into_owned();
    let key = text
        .lines()
        .find_map(|l| {
            let (name, value) = l.split_once(':')?;
            name.eq_ignore_ascii_case("sec-websocket-key")
                .then(|| value.trim().to_owned())
        })
        .ok_or_else(|| io::Error::other("no Sec-WebSocket-Key"))?;
    let accept = format!(
        "HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n\
         Sec-WebSocket-Accept: {}\r\n\r\n",
        derive_accept_key(key.as_bytes())
    );
    stream.writable().await?;
    if !send(&stream, accept.as_bytes()) {
        return Err(io::Error::other("handshake not sent"));
    }
    buf.drain(..head);
    loop {
        let total = read_until(&stream, &mut buf, |b| client_frame(b).map(|f| f.2)).await?;
        let (opcode, len, _) = client_frame(&buf).unwrap_or((0xff, 0, 0));
        let at = total - len;
        let mask = [buf[at - 4], buf[at - 3], buf[at - 2], buf[at - 1]];
        let payload: Vec<u8> = buf[at..total]
            .iter()
            .enumerate()
            .map(|(i, b)| b ^ mask[i % 4])
            .collect();
        buf.drain(..total);
        match opcode {
            0x1 => {
                let text = String::from_utf8_lossy(&payload);
                let id = text
                    .split("\"id\":")
                    .nth(1)
                    .and_then(|r| r.split([',', '}']).next())
                    .unwrap_or("null")
                    .trim()
                    .to_owned();
                let answer = if text.contains("\"eth_subscribe\"") {
                    subscribers.borrow_mut().push(Rc::clone(&stream));
                    format!(r#"{{"jsonrpc":"2.0","id":{id},"result":"0x1"}}"#)
                } else if text.contains("\"eth_unsubscribe\"") {
                    subscribers.borrow_mut().retain(|s| !Rc::ptr_eq(s, &stream));
                    format!(r#"{{"jsonrpc":"2.0","id":{id},"result":true}}"#)
                } else {
                    format!(
                        r#"{{"jsonrpc":"2.0","id":{id},"error":{{"code":-32601,"message":"no such method"}}}}"#
                    )
                };
                if !send(&stream, &frame(answer.as_bytes())) {
                    break;
                }
            }
            0x8 => {
                let _ = send(&stream, &[0x88, 0]);
                break;
            }
            0x9 => {
                let mut pong = frame(&payload);
                pong[0] = 0x8a;
                let _ = send(&stream, &pong);
            }
            0xa => {}
            _ => break,
        }
    }
    subscribers.borrow_mut().retain(|s| !Rc::ptr_eq(s, &stream));
    Ok(())
}

#[tokio::main(flavor = "current_thread")]
async fn main() -> io::Result<()> {
    let addr = std::env::args()
        .nth(1)
        .unwrap_or_else(|| "127.0.0.1:0".into());
    let listener = TcpListener::bind(addr).await?;
    println!("{}", listener.local_addr()?);
    std::io::stdout().flush()?;
    let subscribers: Subscribers = Rc::default();
    let local = tokio::task::LocalSet::new();
    let producer = Rc::clone(&subscribers);
    local.spawn_local(async move {
        let mut ticks = tokio::time::interval(chain::block_time());
        for n in 0u64.. {
            ticks.tick().await;
            let header = serde_json::to_string(&chain::header(n)).expect("a header serializes");
            let notification = format!(
                r#"{{"jsonrpc":"2.0","method":"eth_subscription","params":{{"subscription":"0x1","result":{header}}}}}"#
            );
            let bytes = frame(notification.as_bytes());
            // A socket that does not take the whole frame at once is dropped.
            producer.borrow_mut().retain(|s| send(s, &bytes));
        }
    });
    local
        .run_until(async move {
            loop {
                let (stream, _) = listener.accept().await?;
                stream.set_nodelay(true)?;
                tokio::task::spawn_local(serve(stream, Rc::clone(&subscribers)));
            }
        })
        .await
}
