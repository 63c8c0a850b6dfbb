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
//! Methods: `echo` (returns its params) and `add` (`[a, b]` -> `a + b`, integers).
//!
//! `floor-server [tcp|http] [ADDR]` (default `tcp`, `127.0.0.1:0`): the first line on stdout
//! is the bound address; it serves until killed.

use std::io::Write as _;

use serde::Deserialize;
use serde_json::value::RawValue;
use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader, BufWriter};
use tokio::net::{TcpListener, TcpStream};

/// The request envelope, borrowed from the read buffer.
#[derive(Deserialize)]
#[allow(dead_code)]
struct Req<'a> {
    jsonrpc: &'a str,
    #[serde(borrow)]
    id: &'a RawValue,
    method: &'a str,
    #[serde(borrow)]
    params: Option<&'a RawValue>,
}

#[tokio::main(flavor = "current_thread")]
async fn main() -> std::io::Result<()> {
    let mut args: Vec<String> = std::env::args().skip(1).collect();
    let http = args.first().is_some_and(|a| a == "http");
    if matches!(args.first().map(String::as_str), Some("tcp" | "http")) {
        args.remove(0);
    }
    serve(args.pop(), http).await
}

async fn serve(addr: Option<String>, http: bool) -> std::io::Result<()> {
    let addr = addr.unwrap_or_else(|| "127.0.0.1:0".into());
    let listener = TcpListener::bind(&addr).await?;
    println!("{}", listener.local_addr()?);
    std::io::stdout().flush()?;
    loop {
        let (stream, _) = listener.accept().await?;
        tokio::spawn(async move {
            let _ = if http {
                http_connection(stream).await
            } else {
                connection(stream).await
            };
        });
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

/// Writes the response to one request body into `out`.
fn respond(body: &[u8], out: &mut Vec<u8>) {
    let req: Req = match serde_json::from_slice(body) {
        Ok(req) => req,
        Err(_) => {
            out.extend_from_slice(
                br#"{"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"Parse error"}}"#,
            );
            return;
        }
    };
    out.extend_from_slice(br#"{"jsonrpc":"2.0","id":"#);
    out.extend_from_slice(req.id.get().as_bytes());
    match req.method {
        "echo" => {
            out.extend_from_slice(br#","result":"#);
            out.extend_from_slice(req.params.map_or("null", |p| p.get()).as_bytes());
        }
        "add" => match req
            .params
            .and_then(|p| serde_json::from_str::<(i64, i64)>(p.get()).ok())
        {
            Some((a, b)) => {
                let _ = write!(out, r#","result":{}"#, a.wrapping_add(b));
            }
            None => {
                out.extend_from_slice(br#","error":{"code":-32602,"message":"Invalid params"}"#)
            }
        },
        _ => out.extend_from_slice(br#","error":{"code":-32601,"message":"Method not found"}"#),
    }
    out.push(b'}');
}
