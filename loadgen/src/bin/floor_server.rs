//! The floor: the least a JSON-RPC server over TCP can do, hand-written on tokio and
//! serde_json, for the load generator to measure sansrpc against.
//!
//! Content-Length framing (LSP style: `Content-Length: N\r\n\r\n{json}`), one task per
//! connection, a `BufReader`/`BufWriter` pair, each request parsed into a borrowed envelope
//! (no allocation for the id, method or params) and each response written into a reused
//! buffer. Output is flushed only when no further request is already buffered, so a
//! pipelining client gets its answers in batches. No batches, no notifications, no limits,
//! no timeouts: what it leaves out is what a real server pays for.
//!
//! HTTP/1.1 (`floor-server http`): the least a JSON-RPC server over HTTP can do, the syscall
//! floor of the HTTP tables. One task per keep-alive connection, one read buffer: each
//! request head is found (`\r\n\r\n`) and only its `Content-Length` read; the answer
//! (`200`, `Content-Type`, `Content-Length`, the body) is written with one write into a
//! reused buffer, after every request already read is answered. No other header, no
//! `Date`, no chunked bodies, no limits, no timeouts, no `Connection: close`: the
//! connection ends when the client closes it.
//!
//! WebSocket (`floor-server ws`): the least a JSON-RPC server over WebSocket can do. One
//! task per connection: the opening handshake read up to its blank line, only
//! `Sec-WebSocket-Key` looked at (its accept value made by tungstenite's
//! `derive_accept_key`), answered `101`; then each masked text frame unmasked in place in
//! one read buffer and answered with one unmasked text frame, written with one write after
//! every frame already read is answered; a close frame ends the connection. No
//! fragmentation, no ping, no UTF-8 check, no limits, no timeouts.
//!
//! Methods: `echo` (returns its params) and `add` (`[a, b]` -> `a + b`, integers).
//!
//! `floor-server [tcp|http|ws] [ADDR]` (default `tcp`, `127.0.0.1:0`): the first line on
//! stdout is the bound address; it serves until killed. The listen backlog is 4,096 (see
//! `backlog.rs`).

#[path = "../backlog.rs"]
mod backlog;

use std::io::Write as _;

use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader, BufWriter};
use tokio::net::{TcpListener, TcpStream};

#[path = "../respond.rs"]
mod respond;

use respond::respond;

#[tokio::main(flavor = "current_thread")]
async fn main() -> std::io::Result<()> {
    let mut args: Vec<String> = std::env::args().skip(1).collect();
    let mode = match args.first().map(String::as_str) {
        Some(mode @ ("tcp" | "http" | "ws")) => {
            let mode = mode.to_string();
            args.remove(0);
            mode
        }
        _ => "tcp".to_string(),
    };
    serve(args.pop(), mode).await
}

async fn serve(addr: Option<String>, mode: String) -> std::io::Result<()> {
    let addr = addr.unwrap_or_else(|| "127.0.0.1:0".into());
    let listener = TcpListener::bind(&addr).await?;
    backlog::raise(&listener)?;
    println!("{}", listener.local_addr()?);
    std::io::stdout().flush()?;
    loop {
        let (stream, _) = listener.accept().await?;
        let mode = mode.clone();
        tokio::spawn(async move {
            let _ = match mode.as_str() {
                "http" => http_connection(stream).await,
                "ws" => ws_connection(stream).await,
                _ => connection(stream).await,
            };
        });
    }
}

/// One WebSocket connection: the opening handshake, then masked text frames.
async fn ws_connection(mut stream: TcpStream) -> std::io::Result<()> {
    use tokio_tungstenite::tungstenite::handshake::derive_accept_key;
    stream.set_nodelay(true)?;
    let mut input: Vec<u8> = Vec::with_capacity(4096);
    let end = loop {
        if let Some(end) = input.windows(4).position(|w| w == b"\r\n\r\n") {
            break end;
        }
        if stream.read_buf(&mut input).await? == 0 {
            return Ok(());
        }
    };
    let key = input[..end]
        .split(|&b| b == b'\n')
        .find_map(|line| {
            let colon = line.iter().position(|&b| b == b':')?;
            line[..colon]
                .eq_ignore_ascii_case(b"sec-websocket-key")
                .then(|| line[colon + 1..].trim_ascii())
        })
        .ok_or_else(|| std::io::Error::other("no Sec-WebSocket-Key"))?;
    let answer = format!(
        "HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n\
         Sec-WebSocket-Accept: {}\r\n\r\n",
        derive_accept_key(key)
    );
    stream.write_all(answer.as_bytes()).await?;
    input.drain(..end + 4);
    let (mut start, mut out, mut body) = (0, Vec::with_capacity(4096), Vec::new());
    loop {
        // Every complete frame already read, answered.
        loop {
            let data = &mut input[start..];
            if data.len() < 2 {
                break;
            }
            let (opcode, short) = (data[0] & 0x0f, usize::from(data[1] & 0x7f));
            let (length, at) = match short {
                126 if data.len() >= 4 => (usize::from(u16::from_be_bytes([data[2], data[3]])), 4),
                127 if data.len() >= 10 => {
                    let mut n = [0; 8];
                    n.copy_from_slice(&data[2..10]);
                    (u64::from_be_bytes(n) as usize, 10)
                }
                126 | 127 => break,
                n => (n, 2),
            };
            if data.len() < at + 4 + length {
                break;
            }
            let mut mask = [0; 4];
            mask.copy_from_slice(&data[at..at + 4]);
            let payload = &mut data[at + 4..at + 4 + length];
            for (i, b) in payload.iter_mut().enumerate() {
                *b ^= mask[i % 4];
            }
            match opcode {
                1 => {
                    body.clear();
                    respond(payload, &mut body);
                    out.push(0x81);
                    match body.len() {
                        n @ 0..=125 => out.push(n as u8),
                        n @ 126..=0xffff => {
                            out.push(126);
                            out.extend_from_slice(&(n as u16).to_be_bytes());
                        }
                        n => {
                            out.push(127);
                            out.extend_from_slice(&(n as u64).to_be_bytes());
                        }
                    }
                    out.extend_from_slice(&body);
                }
                8 => {
                    out.extend_from_slice(&[0x88, 0]);
                    stream.write_all(&out).await?;
                    return Ok(());
                }
                _ => {}
            }
            start += at + 4 + length;
        }
        if !out.is_empty() {
            stream.write_all(&out).await?;
            out.clear();
        }
        if start == input.len() {
            input.clear();
            start = 0;
        }
        if input.capacity() - input.len() < 1024 {
            input.reserve(4096);
        }
        if stream.read_buf(&mut input).await? == 0 {
            return Ok(());
        }
    }
}

async fn connection(stream: TcpStream) -> std::io::Result<()> {
    stream.set_nodelay(true)?;
    let (read, write) = stream.into_split();
    let mut reader = BufReader::new(read);
    let mut writer = BufWriter::new(write);
    let mut line = Vec::new();
    let mut body = Vec::new();
    let mut out = Vec::new();
    let mut head = Vec::new();
    loop {
        // The header block: `Content-Length` is the only header that matters.
        let mut length = None;
        loop {
            line.clear();
            if reader.read_until(b'\n', &mut line).await? == 0 {
                writer.flush().await?;
                return Ok(());
            }
            let text = std::str::from_utf8(&line).unwrap_or("").trim_end();
            if text.is_empty() {
                break;
            }
            if let Some((name, value)) = text.split_once(':') {
                if name.eq_ignore_ascii_case("content-length") {
                    length = value.trim().parse::<usize>().ok();
                }
            }
        }
        let Some(length) = length else {
            return Err(std::io::Error::other("a frame without Content-Length"));
        };
        body.resize(length, 0);
        reader.read_exact(&mut body).await?;

        out.clear();
        respond(&body, &mut out);
        head.clear();
        let _ = write!(head, "Content-Length: {}\r\n\r\n", out.len());
        writer.write_all(&head).await?;
        writer.write_all(&out).await?;
        if reader.buffer().is_empty() {
            writer.flush().await?;
        }
    }
}

/// One HTTP/1.1 keep-alive connection: POSTs with `Content-Length` bodies.
async fn http_connection(mut stream: TcpStream) -> std::io::Result<()> {
    stream.set_nodelay(true)?;
    let mut input: Vec<u8> = Vec::with_capacity(16 * 1024);
    let mut start = 0;
    let mut out = Vec::with_capacity(16 * 1024);
    let mut body = Vec::new();
    loop {
        // Every complete request already read, answered.
        loop {
            let data = &input[start..];
            let Some(end) = data.windows(4).position(|w| w == b"\r\n\r\n") else {
                break;
            };
            let length = data[..end]
                .split(|&b| b == b'\n')
                .find_map(|line| {
                    let colon = line.iter().position(|&b| b == b':')?;
                    line[..colon]
                        .eq_ignore_ascii_case(b"content-length")
                        .then(|| std::str::from_utf8(&line[colon + 1..]).ok())?
                        .and_then(|v| v.trim().parse::<usize>().ok())
                })
                .unwrap_or(0);
            if data.len() < end + 4 + length {
                break;
            }
            body.clear();
            respond(&data[end + 4..end + 4 + length], &mut body);
            let _ = write!(
                out,
                "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n",
                body.len()
            );
            out.extend_from_slice(&body);
            start += end + 4 + length;
        }
        if !out.is_empty() {
            stream.write_all(&out).await?;
            out.clear();
        }
        if start == input.len() {
            input.clear();
            start = 0;
        }
        if input.capacity() - input.len() < 4096 {
            input.reserve(16 * 1024);
        }
        if stream.read_buf(&mut input).await? == 0 {
            return Ok(());
        }
    }
}
