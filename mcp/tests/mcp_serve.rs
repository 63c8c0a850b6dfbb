//! The MCP server on the listener every server of this crate shares (`sansrpc_mcp::tokio`
//! with `Options::serve`): the connection cap of `ServeOptions` and its `503`, the request
//! time limits of the builder's config, HTTPS with `ServeOptions::tls`, and the
//! `Mcp-Param-*` headers a `sansrpc_mcp` server derives from its tools' `x-mcp-header` marks
//! (`Server::streamable_config`). Raw HTTP/1.1 clients on loopback sockets.
#![cfg(not(target_arch = "wasm32"))]

use std::io::{Read, Write};
use std::net::TcpStream;
use std::time::Duration;

use sansrpc::connection::{Config, Profile};
use sansrpc_mcp::server::{Context, McpError, Server, ServerBuilder};
use sansrpc_mcp::streamable;
use sansrpc_mcp::tokio as mcp;
use sansrpc_tokio::{Builder, ServeOptions};

const INIT: &str = r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"x","version":"1"}}}"#;

/// An MCP server with one tool.
fn noop() -> Server {
    ServerBuilder::new("serve-test", "1")
        .tool("noop", "Does nothing", |_: Context, ()| async {
            Ok::<_, McpError>(String::new())
        })
        .build()
}

/// Serves `server` on a free loopback port, on a runtime of its own, with `options`, the
/// builder's `config` and `streamable`; the port.
fn serve(
    server: &Server,
    options: mcp::Options,
    config: Config,
    streamable: streamable::Config,
) -> u16 {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    listener.set_nonblocking(true).unwrap();
    let router = server.router();
    std::thread::spawn(move || {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        runtime.block_on(async move {
            let listener = tokio::net::TcpListener::from_std(listener).unwrap();
            let builder = Builder::new().config(config).router(router);
            let never = std::future::pending::<()>();
            mcp::serve_with(listener, builder, streamable, options, never)
                .await
                .unwrap();
        });
    });
    port
}

/// [`serve`] with the MCP profile and the default Streamable HTTP config.
fn serve_noop(options: mcp::Options) -> u16 {
    let config = Config::for_profile(Profile::Mcp);
    serve(&noop(), options, config, streamable::Config::default())
}

fn connect(port: u16) -> TcpStream {
    let s = TcpStream::connect(("127.0.0.1", port)).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    s
}

/// An `initialize` POST.
fn initialize(port: u16) -> String {
    format!(
        "POST /mcp HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nContent-Type: application/json\r\n\
         Accept: application/json, text/event-stream\r\nContent-Length: {}\r\n\r\n{INIT}",
        INIT.len()
    )
}

/// Reads one response with a `Content-Length` body: its head and body.
fn response(s: &mut impl Read) -> String {
    let mut seen = Vec::new();
    let mut byte = [0u8; 1];
    while !seen.ends_with(b"\r\n\r\n") {
        assert_eq!(s.read(&mut byte).unwrap(), 1, "cut short: {seen:?}");
        seen.push(byte[0]);
    }
    let head = String::from_utf8(seen).unwrap();
    let len: usize = head
        .lines()
        .find_map(|l| {
            let (name, value) = l.split_once(':')?;
            name.eq_ignore_ascii_case("content-length")
                .then(|| value.trim().parse().unwrap())
        })
        .unwrap_or(0);
    let mut body = vec![0u8; len];
    s.read_exact(&mut body).unwrap();
    head + &String::from_utf8(body).unwrap()
}

/// Reads until the server closes the connection (a reset counts).
fn until_closed(s: &mut TcpStream) -> String {
    let mut seen = Vec::new();
    let mut buf = [0u8; 1024];
    loop {
        match s.read(&mut buf) {
            Ok(0) | Err(_) => break,
            Ok(n) => seen.extend_from_slice(&buf[..n]),
        }
    }
    String::from_utf8_lossy(&seen).into_owned()
}

#[test]
fn a_connection_beyond_the_cap_gets_503_while_the_served_ones_keep_working() {
    let mut options = ServeOptions::default();
    options.max_connections = 2;
    let port = serve_noop(mcp::Options::default().serve_options(options));
    let mut served: Vec<TcpStream> = (0..2).map(|_| connect(port)).collect();
    for s in &mut served {
        s.write_all(initialize(port).as_bytes()).unwrap();
        let answer = response(s);
        assert!(answer.starts_with("HTTP/1.1 200"), "{answer}");
    }
    for _ in 0..5 {
        let mut refused = connect(port);
        let answer = until_closed(&mut refused);
        assert!(
            answer.starts_with("HTTP/1.1 503 Service Unavailable"),
            "{answer:?}"
        );
    }
    for s in &mut served {
        s.write_all(initialize(port).as_bytes()).unwrap();
        let answer = response(s);
        assert!(answer.starts_with("HTTP/1.1 200"), "{answer}");
    }
}

#[test]
fn a_stalled_request_head_is_closed_at_the_config_frame_timeout() {
    let mut config = Config::for_profile(Profile::Mcp);
    config.frame_timeout = Some(Duration::from_millis(300));
    let port = serve(
        &noop(),
        mcp::Options::default(),
        config,
        streamable::Config::default(),
    );
    let mut s = connect(port);
    s.write_all(b"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\n")
        .unwrap();
    let started = std::time::Instant::now();
    let answer = until_closed(&mut s);
    assert_eq!(answer, "", "closed without an answer");
    let waited = started.elapsed();
    assert!(
        waited >= Duration::from_millis(250) && waited < Duration::from_secs(5),
        "{waited:?}"
    );
    // A request in time is served.
    let mut s = connect(port);
    s.write_all(initialize(port).as_bytes()).unwrap();
    assert!(response(&mut s).starts_with("HTTP/1.1 200"));
}

/// HTTPS with `ServeOptions::tls`: a client that trusts the certificate is served, a plain
/// one is not.
#[test]
fn mcp_over_tls() {
    use std::sync::Arc;

    use sansrpc_tokio::tls::{self, rustls};
    use tls::rustls::pki_types::{CertificateDer, PrivateKeyDer, PrivatePkcs8KeyDer};

    let generated = rcgen::generate_simple_self_signed(vec!["localhost".to_owned()]).unwrap();
    let cert: CertificateDer<'static> = generated.cert.der().clone();
    let key = PrivateKeyDer::Pkcs8(PrivatePkcs8KeyDer::from(
        generated.signing_key.serialize_der(),
    ));
    let mut options = ServeOptions::default();
    options.tls = Some(tls::server_config(vec![cert.clone()], key).unwrap());
    let port = serve_noop(mcp::Options::default().serve_options(options));
    let trusted = tls::client_config_with_roots([cert]).unwrap();
    let name = "localhost".try_into().unwrap();
    let connection = rustls::ClientConnection::new(Arc::clone(&trusted), name).unwrap();
    let mut secure = rustls::StreamOwned::new(connection, connect(port));
    secure.write_all(initialize(port).as_bytes()).unwrap();
    let answer = response(&mut secure);
    assert!(answer.starts_with("HTTP/1.1 200"), "{answer}");
    assert!(answer.contains(r#""serverInfo""#), "{answer}");

    // Plain HTTP to the TLS port: no answer.
    let mut plain = connect(port);
    plain.write_all(initialize(port).as_bytes()).unwrap();
    let answer = until_closed(&mut plain);
    assert!(!answer.contains("HTTP/1.1 200"), "{answer:?}");
}

/// The arguments of the `forecast` tool: `region` is mirrored in `Mcp-Param-Region`.
#[derive(serde::Deserialize, schemars::JsonSchema)]
struct Forecast {
    #[schemars(extend("x-mcp-header" = "Region"))]
    region: String,
    days: u8,
}

/// A stateless `tools/call` of `forecast` with `headers` beside the revision's own.
fn forecast_call(port: u16, region: &str, headers: &str) -> String {
    let body = format!(
        r#"{{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{{"name":"forecast","arguments":{{"region":"{region}","days":2}},"_meta":{{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{{}}}}}}}}"#
    );
    format!(
        "POST /mcp HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nContent-Type: application/json\r\n\
         Accept: application/json, text/event-stream\r\nMCP-Protocol-Version: 2026-07-28\r\n\
         Mcp-Method: tools/call\r\nMcp-Name: forecast\r\n{headers}Content-Length: {}\r\n\r\n{body}",
        body.len()
    )
}

#[test]
fn the_server_checks_the_param_headers_its_tools_mark() {
    let server = ServerBuilder::new("forecast-test", "1")
        .tool(
            "forecast",
            "Forecasts",
            |_: Context, f: Forecast| async move {
                Ok::<_, McpError>(format!("{}: sunny for {} days", f.region, f.days))
            },
        )
        .build();
    let marks = server.param_headers();
    assert_eq!(
        marks,
        [sansrpc_mcp::streamable::ParamHeader::new(
            "forecast", "Region", "region"
        )]
    );
    let config = server.streamable_config();
    assert_eq!(config.param_headers, marks);

    let mcp = Config::for_profile(Profile::Mcp);
    let port = serve(&server, mcp::Options::default(), mcp, config);
    let call = |region: &str, headers: &str| {
        let mut s = connect(port);
        s.write_all(forecast_call(port, region, headers).as_bytes())
            .unwrap();
        response(&mut s)
    };
    let sent = call("Paris", "Mcp-Param-Region: Paris\r\n");
    assert!(sent.starts_with("HTTP/1.1 200"), "{sent}");
    assert!(sent.contains("Paris: sunny for 2 days"), "{sent}");
    let missing = call("Paris", "");
    assert!(missing.starts_with("HTTP/1.1 400"), "{missing}");
    assert!(missing.contains("-32020"), "{missing}");
    let other = call("Paris", "Mcp-Param-Region: Lyon\r\n");
    assert!(other.starts_with("HTTP/1.1 400"), "{other}");
    assert!(other.contains("-32020"), "{other}");
}

/// A tool whose marks break SEP-2243's rules is a programming error, caught when it is
/// declared.
#[test]
#[should_panic(expected = "x-mcp-header")]
fn a_tool_whose_marks_break_the_rules_is_refused_when_declared() {
    let schema = serde_json::json!({"type": "object", "properties": {
        "region": {"type": "object", "x-mcp-header": "Region"}}});
    let serde_json::Value::Object(schema) = schema else {
        unreachable!()
    };
    let tool = sansrpc_mcp::types::Tool::new("bad", "Has an object header", schema);
    let _ = ServerBuilder::new("bad", "1").tool_with(tool, |_, _| async {
        Ok(sansrpc_mcp::types::CallToolResult::text("never"))
    });
}

/// The JSON-RPC error in a response's body (after its head).
fn json_error(answer: &str) -> serde_json::Value {
    let body = answer.split_once("\r\n\r\n").map_or("", |(_, b)| b);
    let v: serde_json::Value =
        serde_json::from_str(body).unwrap_or_else(|e| panic!("{e}: {answer:?}"));
    assert_eq!(v["id"], serde_json::Value::Null, "{answer}");
    v["error"].clone()
}

/// Every refusal of the server, those of the HTTP reading (413, 431) included, carries a
/// JSON-RPC error with a null id, on a real socket.
#[test]
fn refusals_carry_a_json_rpc_error_body() {
    let port = serve_noop(mcp::Options::default());
    let ask = |raw: String| {
        let mut s = connect(port);
        s.write_all(raw.as_bytes()).unwrap();
        response(&mut s)
    };
    let answer = ask(format!(
        "GET /elsewhere HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\n\r\n"
    ));
    assert!(answer.starts_with("HTTP/1.1 404"), "{answer}");
    assert!(json_error(&answer)["message"]
        .as_str()
        .unwrap()
        .contains("Not Found"));
    let answer = ask(format!(
        "PUT /mcp HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nContent-Length: 0\r\n\r\n"
    ));
    assert!(answer.starts_with("HTTP/1.1 405"), "{answer}");
    assert!(json_error(&answer)["message"]
        .as_str()
        .unwrap()
        .contains("Method Not Allowed"));
    // A body over the limit (4 MiB), announced: refused before it is read.
    let answer = ask(format!(
        "POST /mcp HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nContent-Type: application/json\r\nAccept: application/json, text/event-stream\r\nContent-Length: {}\r\n\r\n",
        5 << 20
    ));
    assert!(answer.starts_with("HTTP/1.1 413"), "{answer}");
    assert_eq!(json_error(&answer)["code"], -32600);
    // A head over the limit.
    let answer = ask(format!(
        "POST /mcp HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nX-Big: {}\r\n\r\n",
        "a".repeat(64 << 10)
    ));
    assert!(answer.starts_with("HTTP/1.1 431"), "{answer}");
    assert!(json_error(&answer)["message"]
        .as_str()
        .unwrap()
        .starts_with("Request Header Fields Too Large"));
}

/// A browser page of an allowed origin reaches the standalone server: its preflight is
/// answered `204`, and its `initialize` answer lets it read the session's id; a page of
/// another site gets `403` with no CORS field.
#[test]
fn a_page_of_a_loopback_origin_gets_cors_and_another_site_does_not() {
    let port = serve_noop(mcp::Options::default());
    let mut s = connect(port);
    write!(
        s,
        "OPTIONS /mcp HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nOrigin: http://localhost:5173\r\n\
         Access-Control-Request-Method: POST\r\n\
         Access-Control-Request-Headers: content-type, authorization\r\n\r\n"
    )
    .unwrap();
    let preflight = response(&mut s);
    assert!(preflight.starts_with("HTTP/1.1 204"), "{preflight}");
    let lower = preflight.to_ascii_lowercase();
    assert!(lower.contains("access-control-allow-origin: http://localhost:5173\r\n"));
    assert!(lower.contains("access-control-allow-methods: get, post, delete\r\n"));
    assert!(lower.contains("access-control-allow-headers: content-type, authorization\r\n"));

    let init = initialize(port).replacen(
        "Content-Type",
        "Origin: http://localhost:5173\r\nContent-Type",
        1,
    );
    s.write_all(init.as_bytes()).unwrap();
    let answer = response(&mut s).to_ascii_lowercase();
    assert!(answer.starts_with("http/1.1 200"), "{answer}");
    assert!(answer.contains("mcp-session-id: "), "{answer}");
    assert!(answer.contains("access-control-allow-origin: http://localhost:5173\r\n"));
    assert!(answer.contains(
        "access-control-expose-headers: mcp-session-id, mcp-protocol-version, www-authenticate\r\n"
    ));

    let mut other = connect(port);
    let init = initialize(port).replacen(
        "Content-Type",
        "Origin: https://evil.example\r\nContent-Type",
        1,
    );
    other.write_all(init.as_bytes()).unwrap();
    let refused = response(&mut other).to_ascii_lowercase();
    assert!(refused.starts_with("http/1.1 403"), "{refused}");
    assert!(
        !refused.contains("access-control-allow-origin"),
        "{refused}"
    );
}
