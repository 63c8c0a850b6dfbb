use super::*;
use alloc::format;
use alloc::vec;
use proptest::prelude::*;

/// What decoding a stream gave: heads, bodies, and the fault that stopped it.
#[allow(clippy::large_enum_variant)]
#[derive(Debug, PartialEq)]
enum Seen {
    Head(Head),
    Body(Vec<u8>),
    Fault(HttpFault),
}

/// Decodes `stream` as a transport does, reading `chunk` bytes at a time (reclaiming a
/// chunked body's framing before each read); stops at a fault or when the stream is used
/// up. Also returns the most bytes the buffer held.
fn decode(stream: &[u8], max_body: usize, chunk: usize) -> (Vec<Seen>, usize) {
    let mut decoder = RequestDecoder::new(max_body);
    let (mut buffer, mut fed, mut seen, mut most) = (Vec::new(), 0, Vec::new(), 0);
    loop {
        most = most.max(buffer.len());
        match decoder.decode(&mut buffer) {
            Err(fault) => {
                seen.push(Seen::Fault(fault));
                return (seen, most);
            }
            Ok(HttpStep::Head(used, head)) => {
                seen.push(Seen::Head(head));
                buffer.drain(..used);
            }
            Ok(HttpStep::Body(used, body)) => {
                assert!(body.len() <= max_body);
                seen.push(Seen::Body(body.to_vec()));
                buffer.drain(..used);
            }
            Ok(HttpStep::Incomplete(need)) => {
                assert!(need > buffer.len());
                if fed == stream.len() {
                    return (seen, most);
                }
                let kept = decoder.reclaim(&mut buffer);
                buffer.truncate(kept);
                let take = chunk.min(stream.len() - fed);
                buffer.extend_from_slice(&stream[fed..fed + take]);
                fed += take;
            }
        }
    }
}

/// The bodies among what was seen.
fn bodies(seen: &[Seen]) -> Vec<&[u8]> {
    seen.iter()
        .filter_map(|s| match s {
            Seen::Body(b) => Some(b.as_slice()),
            _ => None,
        })
        .collect()
}

fn head_of(request: &str) -> Head {
    let mut wire = request.as_bytes().to_vec();
    match RequestDecoder::new(1 << 20).decode(&mut wire) {
        Ok(HttpStep::Head(used, head)) => {
            assert!(used <= wire.len());
            head
        }
        other => panic!("{other:?}"),
    }
}

fn fault_of(request: &str) -> HttpFault {
    let (seen, _) = decode(request.as_bytes(), 1 << 20, usize::MAX);
    match seen.last() {
        Some(Seen::Fault(fault)) => *fault,
        other => panic!("{request:?}: {other:?}"),
    }
}

/// Two requests in one buffer, the second chunked: each head and body in turn, the chunked
/// body joined at the start of its bytes.
#[test]
fn pipelined_requests_come_out_one_after_another() {
    let mut wire = b"POST / HTTP/1.1\r\nContent-Length: 2\r\n\r\n{}\
        POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n3\r\n[1,\r\n2\r\n2]\r\n0\r\n\r\n"
        .to_vec();
    let mut decoder = RequestDecoder::new(100);
    let mut at = 0;
    let mut bodies = Vec::new();
    while at < wire.len() {
        match decoder.decode(&mut wire[at..]).unwrap() {
            HttpStep::Head(used, _) => at += used,
            HttpStep::Body(used, body) => {
                bodies.push(body.to_vec());
                at += used;
            }
            HttpStep::Incomplete(_) => panic!("all of it is there"),
        }
    }
    assert_eq!(bodies, [b"{}".to_vec(), b"[1,2]".to_vec()]);
}

#[test]
fn a_length_body_is_borrowed_whole_and_waits_for_its_last_byte() {
    let request = b"POST /rpc HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\n\r\nhello";
    let mut decoder = RequestDecoder::new(100);
    let mut wire = request[..request.len() - 1].to_vec();
    let HttpStep::Head(used, head) = decoder.decode(&mut wire).unwrap() else {
        panic!()
    };
    assert_eq!(used, request.len() - 5);
    assert_eq!(head.body, BodyKind::Length(5));
    assert!(decoder.in_body());
    assert_eq!(
        decoder.decode(&mut wire[used..]).unwrap(),
        HttpStep::Incomplete(5)
    );
    let mut wire = request.to_vec();
    assert_eq!(
        decoder.decode(&mut wire[used..]).unwrap(),
        HttpStep::Body(5, b"hello")
    );
    assert!(!decoder.in_body());
}

#[test]
fn chunked_bodies_with_extensions_and_trailers_are_joined() {
    let stream = b"POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n\
        4;name=value\r\n{\"a\"\r\n9\r\n:[1,2,3]}\r\n0\r\nX-Trailer: yes\r\n\r\n";
    let (seen, _) = decode(stream, 100, usize::MAX);
    assert_eq!(bodies(&seen), [&b"{\"a\":[1,2,3]}"[..]]);
    // A byte at a time: the same.
    assert_eq!(decode(stream, 100, 1).0, seen);
    // Chunk sizes may be upper case hex.
    let (seen, _) = decode(
        b"POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\nB\r\nhello world\r\n0\r\n\r\n",
        100,
        3,
    );
    assert_eq!(bodies(&seen), [&b"hello world"[..]]);
}

#[test]
fn a_chunked_body_over_the_limit_is_refused_at_the_chunk_that_passes_it() {
    let stream = b"POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n6\r\n world\r\n0\r\n\r\n";
    let (seen, _) = decode(stream, 10, usize::MAX);
    assert_eq!(seen.last(), Some(&Seen::Fault(HttpFault::BodyTooLarge)));
    let (seen, _) = decode(stream, 11, usize::MAX);
    assert_eq!(bodies(&seen), [&b"hello world"[..]]);
}

/// Tiny chunks with long extensions: what the buffer holds stays within the body, a line
/// and a read, not the whole framing.
#[test]
fn a_chunked_body_holds_its_data_not_its_framing() {
    let mut stream = b"POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n".to_vec();
    let extension = "x".repeat(900);
    for _ in 0..2000 {
        stream.extend_from_slice(format!("1;{extension}\r\nz\r\n").as_bytes());
    }
    stream.extend_from_slice(b"0\r\n\r\n");
    let (seen, most) = decode(&stream, 4096, 4096);
    assert_eq!(bodies(&seen), [vec![b'z'; 2000].as_slice()]);
    assert!(stream.len() > 1_800_000);
    assert!(most < 2000 + 2 * 4096, "held {most} bytes");
}

#[test]
fn sizes_and_lengths_may_have_leading_zeros() {
    let chunked = "POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n\
                   00000000000000000002;name=\"v\"\t\r\n[]\r\n0000\r\n\r\n";
    let (seen, _) = decode(chunked.as_bytes(), 100, usize::MAX);
    assert_eq!(bodies(&seen), vec![&b"[]"[..]]);
    let length = "POST / HTTP/1.1\r\nContent-Length: 000000000000000000002\r\n\r\n[]";
    let (seen, _) = decode(length.as_bytes(), 100, usize::MAX);
    assert_eq!(bodies(&seen), vec![&b"[]"[..]]);
    // Twenty significant digits are still too many.
    let over = "POST / HTTP/1.1\r\nContent-Length: 10000000000000000000000\r\n\r\n";
    assert_eq!(fault_of(over), HttpFault::BadRequest);
}

#[test]
fn broken_chunk_framing_is_a_bad_request() {
    let start = "POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n";
    for body in [
        "zz\r\n",                         // not hex
        "\r\n",                           // no size
        "5\nhello\r\n0\r\n\r\n",          // bare LF
        "5\r\nhelloXY0\r\n\r\n",          // no CRLF after the data
        "5 x\r\nhello\r\n0\r\n\r\n",      // after the size: only an extension, after ';'
        "11111111111111111\r\n",          // 17 hex digits
        "5;a\rXX\r\nhello\r\n0\r\n\r\n",  // a bare CR in an extension
        "5;a=\x01\r\nhello\r\n0\r\n\r\n", // a control byte in one
    ] {
        assert_eq!(
            fault_of(&format!("{start}{body}")),
            HttpFault::BadRequest,
            "{body:?}"
        );
    }
    let long_line = format!("{start}1;{}\r\n", "e".repeat(2000));
    assert_eq!(fault_of(&long_line), HttpFault::BadRequest);
    let long_trailers = format!("{start}0\r\n{}", "X-T: y\r\n".repeat(5000));
    assert_eq!(fault_of(&long_trailers), HttpFault::HeadTooLarge);
}

/// Trailer fields are read past, but only if they are fields: a folded line, a line with
/// no name or a control byte is a bad request, as in a head.
#[test]
fn trailer_lines_must_be_fields() {
    let start = "POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n2\r\n[]\r\n0\r\n";
    let fine = format!("{start}X-Sum: 1\r\nEmpty:\r\nY-Obs: caf\u{e9} \t x\r\n\r\n");
    let (seen, _) = decode(fine.as_bytes(), 100, usize::MAX);
    assert_eq!(bodies(&seen), vec![&b"[]"[..]]);
    for bad in [
        " folded: 1",
        "no colon",
        ": no name",
        "Bad Name: 1",
        "X: a\x01b",
        "X: \x7f",
    ] {
        let request = format!("{start}X-Sum: 1\r\n{bad}\r\n\r\n");
        assert_eq!(fault_of(&request), HttpFault::BadRequest, "{bad:?}");
    }
}

#[test]
fn framing_that_cannot_be_trusted_is_refused() {
    let both = "POST / HTTP/1.1\r\nContent-Length: 3\r\nTransfer-Encoding: chunked\r\n\r\n";
    assert_eq!(fault_of(both), HttpFault::BadRequest);
    let gzip = "POST / HTTP/1.1\r\nTransfer-Encoding: gzip\r\n\r\n";
    assert_eq!(fault_of(gzip), HttpFault::NotImplemented);
    let chunked_then_gzip = "POST / HTTP/1.1\r\nTransfer-Encoding: chunked, gzip\r\n\r\n";
    assert_eq!(fault_of(chunked_then_gzip), HttpFault::NotImplemented);
    let old = "POST / HTTP/1.0\r\nTransfer-Encoding: chunked\r\n\r\n";
    assert_eq!(fault_of(old), HttpFault::BadRequest);
    let conflicting = "POST / HTTP/1.1\r\nContent-Length: 3\r\nContent-Length: 4\r\n\r\n";
    assert_eq!(fault_of(conflicting), HttpFault::BadRequest);
    for length in ["12x", "-1", "", "+5", "99999999999999999999"] {
        let request = format!("POST / HTTP/1.1\r\nContent-Length: {length}\r\n\r\n");
        assert_eq!(fault_of(&request), HttpFault::BadRequest, "{length:?}");
    }
    assert_eq!(fault_of("NOT HTTP\r\n\r\n"), HttpFault::BadRequest);
    for twice in ["chunked, chunked", "chunked\r\nTransfer-Encoding: chunked"] {
        let request = format!("POST / HTTP/1.1\r\nTransfer-Encoding: {twice}\r\n\r\n");
        assert_eq!(fault_of(&request), HttpFault::BadRequest, "{twice:?}");
    }
    for nothing in ["", " , ,"] {
        let request = format!("POST / HTTP/1.1\r\nTransfer-Encoding:{nothing}\r\n\r\n");
        assert_eq!(fault_of(&request), HttpFault::BadRequest, "{nothing:?}");
    }
    let spaced = "POST / HTTP/1.1\r\nTransfer-Encoding: , chunked \r\n\r\n";
    assert_eq!(head_of(spaced).body, BodyKind::Chunked);
    let same_twice = "POST / HTTP/1.1\r\nContent-Length: 3\r\nContent-Length: 3\r\n\r\n";
    assert_eq!(head_of(same_twice).body, BodyKind::Length(3));
}

#[test]
fn a_declared_length_over_the_limit_is_told_in_the_head() {
    let mut wire = b"POST / HTTP/1.1\r\nContent-Length: 100000000\r\n\r\n".to_vec();
    let mut decoder = RequestDecoder::new(1000);
    let HttpStep::Head(_, head) = decoder.decode(&mut wire).unwrap() else {
        panic!()
    };
    assert_eq!(head.body, BodyKind::Length(100_000_000));
}

#[test]
fn heads_over_the_limit_are_431() {
    let long = format!(
        "POST / HTTP/1.1\r\nX-Long: {}\r\n\r\n",
        "a".repeat(MAX_HEAD)
    );
    assert_eq!(fault_of(&long), HttpFault::HeadTooLarge);
    // Partial, and already over the limit.
    let (seen, most) = decode(&long.as_bytes()[..MAX_HEAD + 10], 100, 1000);
    assert_eq!(seen, [Seen::Fault(HttpFault::HeadTooLarge)]);
    assert!(most < MAX_HEAD + 1000);
    let many = format!(
        "POST / HTTP/1.1\r\n{}\r\n",
        "X-A: b\r\n".repeat(MAX_HEADERS + 1)
    );
    assert_eq!(fault_of(&many), HttpFault::HeadTooLarge);
}

#[test]
fn keep_alive_follows_the_version_and_the_connection_header() {
    assert!(head_of("POST / HTTP/1.1\r\n\r\n").keep_alive);
    assert!(!head_of("POST / HTTP/1.1\r\nConnection: close\r\n\r\n").keep_alive);
    assert!(!head_of("POST / HTTP/1.1\r\nConnection: Upgrade, Close\r\n\r\n").keep_alive);
    let old = head_of("POST / HTTP/1.0\r\n\r\n");
    assert!(!old.keep_alive && old.http10);
    assert!(head_of("POST / HTTP/1.0\r\nConnection: Keep-Alive\r\n\r\n").keep_alive);
}

#[test]
fn expect_continue_methods_and_cors_headers_are_read() {
    let head = head_of(
        "OPTIONS / HTTP/1.1\r\nOrigin: https://app.example\r\n\
         Access-Control-Request-Method: POST\r\n\
         Access-Control-Request-Headers: content-type, x-id\r\n\r\n",
    );
    assert_eq!(head.method, HttpMethod::Options);
    assert_eq!(head.origin.as_deref(), Some("https://app.example"));
    assert!(head.cors_request_method);
    assert_eq!(
        head.cors_request_headers.as_deref(),
        Some("content-type, x-id")
    );
    assert!(head_of("POST / HTTP/1.1\r\nExpect: 100-Continue\r\n\r\n").expect_continue);
    // HTTP/1.0 clients cannot be sent 100 (RFC 9110 §10.1.1).
    assert!(!head_of("POST / HTTP/1.0\r\nExpect: 100-continue\r\n\r\n").expect_continue);
    assert_eq!(head_of("GET / HTTP/1.1\r\n\r\n").method, HttpMethod::Get);
    assert_eq!(
        head_of("DELETE / HTTP/1.1\r\n\r\n").method,
        HttpMethod::Delete
    );
    assert_eq!(head_of("PUT / HTTP/1.1\r\n\r\n").method, HttpMethod::Other);
    assert_eq!(head_of("post / HTTP/1.1\r\n\r\n").method, HttpMethod::Other);
    let plain = head_of("POST / HTTP/1.1\r\n\r\n");
    assert_eq!((plain.origin, plain.cors_request_method), (None, false));
}

#[test]
fn json_is_told_by_the_media_type_and_charset() {
    let json = |value: &str| is_json(value.as_bytes());
    assert!(json("application/json"));
    assert!(json("Application/JSON"));
    assert!(json("application/json; charset=UTF-8"));
    assert!(json("application/json;charset=\"utf8\""));
    assert!(json("application/json; boundary=x"));
    assert!(!json("text/plain"));
    assert!(!json("application/json; charset=latin-1"));
    assert!(!json("application/jsonx"));
    assert!(!json(""));
    let head = head_of("POST / HTTP/1.1\r\nContent-Type: application/json\r\n\r\n");
    assert!(head.json);
}

#[test]
fn response_heads_carry_the_length_except_where_there_is_no_body() {
    let mut out = Vec::new();
    write_head(
        &mut out,
        200,
        Some(17),
        &[("content-type", b"application/json"), ("vary", b"Origin")],
    );
    assert_eq!(
        out,
        b"HTTP/1.1 200 OK\r\ncontent-type: application/json\r\nvary: Origin\r\ncontent-length: 17\r\n\r\n"
    );
    for (status, line) in [
        (204, &b"HTTP/1.1 204 No Content\r\n\r\n"[..]),
        (100, &b"HTTP/1.1 100 Continue\r\n\r\n"[..]),
    ] {
        out.clear();
        write_head(&mut out, status, Some(0), &[]);
        assert_eq!(out, line);
    }
    out.clear();
    write_head(&mut out, 413, Some(0), &[("connection", b"close")]);
    assert_eq!(
        out,
        b"HTTP/1.1 413 Content Too Large\r\nconnection: close\r\ncontent-length: 0\r\n\r\n"
    );
}

/// A chunked body as a client could send it: `data` cut at `cuts`, with an extension on
/// some chunks.
fn chunked(data: &[u8], cuts: &[usize], extension: bool) -> Vec<u8> {
    let mut wire = b"POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n".to_vec();
    let mut at = 0;
    let mut ends: Vec<usize> = cuts.iter().map(|c| c % (data.len() + 1)).collect();
    ends.push(data.len());
    ends.sort_unstable();
    for end in ends {
        if end > at {
            let ext = if extension { ";e=1" } else { "" };
            wire.extend_from_slice(format!("{:x}{ext}\r\n", end - at).as_bytes());
            wire.extend_from_slice(&data[at..end]);
            wire.extend_from_slice(b"\r\n");
            at = end;
        }
    }
    wire.extend_from_slice(b"0\r\n\r\n");
    wire
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    /// However the body is cut into chunks and however the stream arrives, the body comes
    /// out the same, followed by the next request.
    #[test]
    fn chunked_bodies_survive_any_cutting_and_any_reads(
        data in proptest::collection::vec(any::<u8>(), 0..600),
        cuts in proptest::collection::vec(any::<usize>(), 0..8),
        extension in any::<bool>(),
        read in 1usize..64,
    ) {
        let mut stream = chunked(&data, &cuts, extension);
        stream.extend_from_slice(b"POST / HTTP/1.1\r\nContent-Length: 2\r\n\r\n{}");
        let (whole, _) = decode(&stream, 1000, usize::MAX);
        let (pieces, _) = decode(&stream, 1000, read);
        prop_assert_eq!(&whole, &pieces);
        prop_assert_eq!(bodies(&whole), [data.as_slice(), &b"{}"[..]]);
    }

    /// Any bytes at all: no panic, the same outcome whole and in pieces.
    #[test]
    fn any_bytes_decode_the_same_whole_and_in_pieces(
        stream in proptest::collection::vec(any::<u8>(), 0..300),
        read in 1usize..32,
    ) {
        let mut input = b"POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n".to_vec();
        input.extend_from_slice(&stream);
        prop_assert_eq!(decode(&input, 64, usize::MAX).0, decode(&input, 64, read).0);
        prop_assert_eq!(decode(&stream, 64, usize::MAX).0, decode(&stream, 64, read).0);
    }
}

#[test]
fn a_request_line_alone_is_incomplete_until_its_empty_line() {
    let mut decoder = RequestDecoder::new(10);
    let mut wire = b"POST / HTTP/1.1\r\nHost: x\r\n".to_vec();
    let len = wire.len();
    assert_eq!(
        decoder.decode(&mut wire).unwrap(),
        HttpStep::Incomplete(len + 1)
    );
    wire.extend_from_slice(b"\r\n");
    let whole = wire.len();
    let step = decoder.decode(&mut wire).unwrap();
    assert!(matches!(step, HttpStep::Head(n, _) if n == whole));
}

/// Regression: a head was parsed again whole after every read, so a peer sending it a byte
/// at a time made the server parse 32 KiB thousands of times. Now it is parsed once a line
/// ends: a head of a few lines read a byte at a time is parsed once per line.
#[test]
fn a_head_read_a_byte_at_a_time_is_parsed_once_per_line() {
    let head = format!(
        "POST / HTTP/1.1\r\nHost: x\r\nX-Long: {}\r\nContent-Length: 2\r\n\r\n",
        "v".repeat(20_000)
    );
    let mut decoder = RequestDecoder::new(10);
    let mut wire = Vec::new();
    for (i, &byte) in head.as_bytes().iter().enumerate() {
        wire.push(byte);
        match decoder.decode(&mut wire).unwrap() {
            HttpStep::Incomplete(n) => assert_eq!(n, wire.len() + 1),
            HttpStep::Head(used, h) => {
                assert_eq!((i + 1, used), (head.len(), head.len()));
                assert_eq!(h.body, BodyKind::Length(2));
            }
            other => panic!("{other:?}"),
        }
    }
    // Five line ends: the request line, three fields and the empty line.
    assert_eq!(decoder.parses, 5);
    // A line that never ends waits for its end (or the 32 KiB limit), then is judged.
    let mut decoder = RequestDecoder::new(10);
    let mut wire = b"NOT\x01HTTP".to_vec();
    assert!(matches!(
        decoder.decode(&mut wire),
        Ok(HttpStep::Incomplete(_))
    ));
    wire.extend_from_slice(b"\r\n");
    assert_eq!(decoder.decode(&mut wire), Err(HttpFault::BadRequest));
}

/// Regression: a head was parsed as far as the buffer went, so a fault past [`MAX_HEAD`]
/// was 400 when read whole and 431 when read in pieces. Now only the first [`MAX_HEAD`]
/// bytes are read: the same bytes give the same answer however they arrive.
#[test]
fn a_head_is_judged_on_its_first_max_head_bytes_however_it_arrives() {
    let mut long = b"POST / HTTP/1.1\r\nX-Long: ".to_vec();
    long.resize(MAX_HEAD + 100, b'a');
    long.extend_from_slice(b"\x01\r\n\r\n");
    for read in [usize::MAX, 4096, 1000] {
        assert_eq!(
            decode(&long, 100, read).0,
            [Seen::Fault(HttpFault::HeadTooLarge)],
            "read {read}"
        );
    }
    // A head of exactly MAX_HEAD bytes is read, one of a byte more is not, whole or in pieces,
    // with its body behind it.
    let request = |head_len: usize| {
        let mut wire = b"POST / HTTP/1.1\r\nContent-Length: 2\r\nX-Pad: ".to_vec();
        wire.resize(head_len - 4, b'p');
        wire.extend_from_slice(b"\r\n\r\n{}");
        wire
    };
    for read in [usize::MAX, 4096, 777] {
        let (seen, _) = decode(&request(MAX_HEAD), 100, read);
        assert!(
            matches!(seen.as_slice(), [Seen::Head(_), Seen::Body(b)] if b == b"{}"),
            "read {read}: {seen:?}"
        );
        assert_eq!(
            decode(&request(MAX_HEAD + 1), 100, read).0,
            [Seen::Fault(HttpFault::HeadTooLarge)],
            "read {read}"
        );
    }
}

/// Regression: with HTTP/1.0, a `keep-alive` after a `close` (in the same header or a later
/// one) kept the connection open; `close` always wins (RFC 9112 §9.6).
#[test]
fn connection_close_wins_over_keep_alive() {
    for request in [
        "POST / HTTP/1.0\r\nConnection: close, keep-alive\r\n\r\n",
        "POST / HTTP/1.0\r\nConnection: close\r\nConnection: keep-alive\r\n\r\n",
        "POST / HTTP/1.0\r\nConnection: keep-alive\r\nConnection: close\r\n\r\n",
        "POST / HTTP/1.1\r\nConnection: keep-alive, close\r\n\r\n",
    ] {
        assert!(!head_of(request).keep_alive, "{request:?}");
    }
    // Keep-alive on HTTP/1.1 is the default, and says nothing more.
    assert!(head_of("POST / HTTP/1.1\r\nConnection: keep-alive\r\n\r\n").keep_alive);
}

/// A chunked body comes out joined at the very start of the buffer it was decoded from,
/// `used` covering its framing up to the end of its trailers and not a byte of what follows;
/// fed a byte at a time into a buffer that only grows, the same.
#[test]
fn a_chunked_body_is_joined_in_place_at_the_start_of_the_buffer() {
    let head = &b"POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n"[..];
    let body = &b"3\r\nabc\r\n2;x=\"y\"\r\nde\r\n1 ;z\r\nf\r\n0\r\nX-T: t\r\n\r\n"[..];
    let mut wire = [head, body, b"GET / HTTP/1.1\r\n\r\n"].concat();
    let mut decoder = RequestDecoder::new(6);
    let HttpStep::Head(used, decoded) = decoder.decode(&mut wire).unwrap() else {
        panic!()
    };
    assert_eq!((used, decoded.body), (head.len(), BodyKind::Chunked));
    let rest = &mut wire[used..];
    let start = rest.as_ptr();
    let HttpStep::Body(used, joined) = decoder.decode(rest).unwrap() else {
        panic!()
    };
    assert_eq!((used, joined), (body.len(), &b"abcdef"[..]));
    assert_eq!(joined.as_ptr(), start);
    assert!(!decoder.in_body());
    let rest = &mut wire[head.len() + used..];
    assert!(
        matches!(decoder.decode(rest), Ok(HttpStep::Head(_, h)) if h.method == HttpMethod::Get)
    );

    let mut decoder = RequestDecoder::new(6);
    let mut wire = head.to_vec();
    assert!(matches!(decoder.decode(&mut wire), Ok(HttpStep::Head(..))));
    let mut grown = Vec::new();
    for &byte in body {
        grown.push(byte);
        match decoder.decode(&mut grown).unwrap() {
            HttpStep::Incomplete(need) => assert!(need > grown.len()),
            HttpStep::Body(used, joined) => {
                assert_eq!((used, joined), (body.len(), &b"abcdef"[..]));
                break;
            }
            HttpStep::Head(..) => panic!("a head inside a body"),
        }
    }
    assert!(!decoder.in_body(), "the body never ended");
    // A byte over the limit: refused.
    let over = [head, b"3\r\nabc\r\n4\r\ndefg\r\n0\r\n\r\n"].concat();
    for read in [usize::MAX, 1] {
        let (seen, _) = decode(&over, 6, read);
        assert_eq!(seen.last(), Some(&Seen::Fault(HttpFault::BodyTooLarge)));
    }
}

/// Decodes a chunked body from `stream` (the bytes after its head) fed into a buffer that
/// only grows, as far as each of `ends` in turn, calling decode with the buffer from the
/// body's start each time (no reclaim). Returns `used` and the body, or the fault.
fn decode_growing(
    stream: &[u8],
    max_body: usize,
    ends: &[usize],
) -> Result<(usize, Vec<u8>), HttpFault> {
    let mut decoder = RequestDecoder::new(max_body);
    let mut head = b"POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n".to_vec();
    assert!(matches!(decoder.decode(&mut head), Ok(HttpStep::Head(..))));
    let mut grown = Vec::new();
    for &end in ends.iter().chain([&stream.len()]) {
        if end < grown.len() {
            continue;
        }
        grown.extend_from_slice(&stream[grown.len()..end]);
        match decoder.decode(&mut grown)? {
            HttpStep::Incomplete(need) => assert!(need > end),
            HttpStep::Body(used, body) => {
                assert!(used <= end && body.len() <= max_body);
                return Ok((used, body.to_vec()));
            }
            HttpStep::Head(..) => panic!("a head inside a body"),
        }
    }
    panic!("the whole body was fed and did not end")
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    /// However a chunked body is cut into chunks (with extensions and trailers or not) and
    /// however its bytes arrive into a growing buffer, it comes out as when fed whole: the
    /// data, `used` up to the end of its trailers.
    #[test]
    fn a_chunked_body_fed_into_a_growing_buffer_is_the_body_fed_whole(
        data in proptest::collection::vec(any::<u8>(), 0..1500),
        chunk_cuts in proptest::collection::vec(any::<usize>(), 0..12),
        extension in any::<bool>(),
        trailers in any::<bool>(),
        feed_cuts in proptest::collection::vec(any::<usize>(), 0..40),
    ) {
        let wire = chunked(&data, &chunk_cuts, extension);
        let head_len = b"POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n".len();
        let mut stream = wire[head_len..wire.len() - 2].to_vec();
        if trailers {
            stream.extend_from_slice(b"X-Checksum: 1\r\nX-More: ;\r\n");
        }
        stream.extend_from_slice(b"\r\n");
        let body_len = stream.len();
        stream.extend_from_slice(b"POST / HTTP/1.1\r\n\r\n");

        let whole = decode_growing(&stream, data.len(), &[]);
        prop_assert_eq!(whole.as_ref().ok(), Some(&(body_len, data.clone())));
        let mut ends: Vec<usize> = feed_cuts.iter().map(|c| c % (stream.len() + 1)).collect();
        ends.sort_unstable();
        prop_assert_eq!(decode_growing(&stream, data.len(), &ends), whole);
        // A byte less of room: refused, in pieces as whole.
        if let Some(less) = data.len().checked_sub(1) {
            prop_assert_eq!(decode_growing(&stream, less, &ends), Err(HttpFault::BodyTooLarge));
        }
    }
}

#[test]
fn malformed_request_lines_are_bad_requests() {
    for request in [
        "NOT HTTP\r\n\r\n",
        "POST /\r\n\r\n",
        "POST / HTTP/2.0\r\n\r\n",
        "POST / HTTP/1.1 extra\r\n\r\n",
        "POST  / HTTP/1.1\r\n\r\n",
        "PO ST / HTTP/1.1\r\n\r\n",
        "POST / HTTP/1.1\r\nNo-Colon\r\n\r\n",
        "POST / HTTP/1.1\r\nBad Name: x\r\n\r\n",
    ] {
        assert_eq!(fault_of(request), HttpFault::BadRequest, "{request:?}");
    }
    // A bare LF ends a head's line (httparse follows RFC 9112 §2.2), not a chunk's.
    assert!(head_of("POST / HTTP/1.1\nHost: x\n\n").keep_alive);
}

/// A decoder keeping fields keeps the target and every field, in order and as received
/// (one buffer for all of them); the handlers' view lowers the names, leaves out
/// `Authorization` and reads a value that is not UTF-8 lossily.
#[test]
fn kept_fields_are_the_target_and_every_field_as_received() {
    let mut wire = b"POST /mcp?x=1 HTTP/1.1\r\nHost: a:1\r\nX-Tag:  two words \r\n\
        Authorization: Bearer t\r\nX-Raw: \xff!\r\nx-tag: again\r\nContent-Length: 0\r\n\r\n"
        .to_vec();
    let mut decoder = RequestDecoder::keeping_fields(1 << 20);
    let Ok(HttpStep::Head(used, head)) = decoder.decode(&mut wire) else {
        panic!("not a head")
    };
    assert_eq!(used, wire.len());
    assert_eq!(head.target(), "/mcp?x=1");
    let fields: Vec<(&str, &[u8])> = head.fields.iter().collect();
    assert_eq!(
        fields,
        [
            ("Host", &b"a:1"[..]),
            ("X-Tag", b"two words"),
            ("Authorization", b"Bearer t"),
            ("X-Raw", b"\xff!"),
            ("x-tag", b"again"),
            ("Content-Length", b"0"),
        ]
    );
    assert_eq!(head.field("x-TAG"), Some(&b"two words"[..]));
    assert_eq!(head.field("origin"), None);

    let headers = crate::codec::http::Headers::from_fields(head.fields.clone());
    let seen: Vec<(&str, &str)> = headers.iter().collect();
    assert_eq!(
        seen,
        [
            ("host", "a:1"),
            ("x-tag", "two words"),
            ("x-raw", "\u{fffd}!"),
            ("x-tag", "again"),
            ("content-length", "0"),
        ]
    );
    assert_eq!(headers.get("X-Tag"), Some("two words"));
    assert_eq!(headers.get("authorization"), None);
    let built: crate::codec::http::Headers = [("Host", "a:1"), ("X-Tag", "two words")]
        .into_iter()
        .collect();
    assert_eq!(built.iter().collect::<Vec<_>>(), seen[..2]);
    // `http`'s fields (names in lower case, not lowered again): the same view.
    let checked = Head::from_checked_parts(
        "POST",
        "/mcp",
        [
            ("host", &b"a:1"[..]),
            ("authorization", b"Bearer t"),
            ("x-raw", b"\xff!"),
        ],
        true,
    )
    .unwrap();
    let headers = crate::codec::http::Headers::from_fields(checked.fields);
    let seen_checked: Vec<(&str, &str)> = headers.iter().collect();
    assert_eq!(seen_checked, [("host", "a:1"), ("x-raw", "\u{fffd}!")]);

    // A decoder that does not keep them keeps nothing.
    let plain = head_of("POST /mcp HTTP/1.1\r\nHost: a\r\nContent-Length: 0\r\n\r\n");
    assert!(plain.fields.is_empty());
    assert_eq!(plain.target(), "");
}

/// The head of `fields` read by `Head::from_parts` and by the decoder from the same fields
/// written out as HTTP/1.1: one set of rules, the same head or the same refusal.
fn both_ways(method: &str, target: &str, fields: &[(&str, &[u8])]) -> Result<Head, HttpFault> {
    let parts = Head::from_parts(method, target, fields.iter().copied(), true);
    let mut wire = format!("{method} {target} HTTP/1.1\r\n").into_bytes();
    for (name, value) in fields {
        wire.extend_from_slice(name.as_bytes());
        wire.extend_from_slice(b": ");
        wire.extend_from_slice(value);
        wire.extend_from_slice(b"\r\n");
    }
    wire.extend_from_slice(b"\r\n");
    let decoded = match RequestDecoder::keeping_fields(1 << 20).decode(&mut wire) {
        Ok(HttpStep::Head(_, head)) => Ok(head),
        Ok(other) => panic!("{other:?}"),
        Err(fault) => Err(fault),
    };
    assert_eq!(parts, decoded, "{method} {target} {fields:?}");
    // Fields an `http::HeaderMap` could hold: read the same without their checks.
    if fields
        .iter()
        .all(|(n, v)| is_token(n.as_bytes()) && is_field_value(v))
    {
        let checked = Head::from_checked_parts(method, target, fields.iter().copied(), true);
        assert_eq!(checked, parts, "{method} {target} {fields:?}");
    }
    parts
}

#[test]
fn a_head_from_parts_follows_the_decoders_rules() {
    let head = both_ways(
        "POST",
        "/mcp?x=1",
        &[
            ("host", b"a:1"),
            ("content-type", b"application/json; charset=utf-8"),
            ("origin", b"http://a:1"),
            ("content-length", b"12"),
            ("expect", b"100-continue"),
            ("x-raw", b"caf\xc3\xa9"),
        ],
    )
    .expect("a good head");
    assert!(head.json && head.expect_continue && head.keep_alive);
    assert_eq!(head.body, BodyKind::Length(12));
    assert_eq!(head.origin.as_deref(), Some("http://a:1"));
    assert_eq!(head.target(), "/mcp?x=1");
    assert_eq!(head.field("X-RAW"), Some(&b"caf\xc3\xa9"[..]));
    let preflight = both_ways(
        "OPTIONS",
        "/",
        &[
            ("access-control-request-method", b"POST"),
            ("access-control-request-headers", b"content-type"),
            ("connection", b"close"),
        ],
    )
    .expect("a preflight");
    assert_eq!(preflight.method, HttpMethod::Options);
    assert!(preflight.cors_request_method && !preflight.keep_alive);
    // Refusals: both framings, a second differing length, an unknown coding, a control
    // byte in a value; too many fields, too many bytes.
    type Fields<'a> = &'a [(&'a str, &'a [u8])];
    let refused: [(Fields, HttpFault); 5] = [
        // The parser's refusal of a later field comes first.
        (
            &[("transfer-encoding", b"gzip"), ("x-bad", b"a\x7f")],
            HttpFault::BadRequest,
        ),
        (
            &[("content-length", b"1"), ("transfer-encoding", b"chunked")],
            HttpFault::BadRequest,
        ),
        (
            &[("content-length", b"1"), ("content-length", b"2")],
            HttpFault::BadRequest,
        ),
        (&[("transfer-encoding", b"gzip")], HttpFault::NotImplemented),
        (&[("x-bad", b"a\x01b")], HttpFault::BadRequest),
    ];
    for (fields, fault) in refused {
        assert_eq!(
            both_ways("POST", "/", fields).err(),
            Some(fault),
            "{fields:?}"
        );
    }
    let many: Vec<(String, Vec<u8>)> = (0..65).map(|i| (format!("x-{i}"), vec![b'v'])).collect();
    let many: Vec<(&str, &[u8])> = many.iter().map(|(n, v)| (n.as_str(), &v[..])).collect();
    assert_eq!(
        both_ways("GET", "/", &many).err(),
        Some(HttpFault::HeadTooLarge)
    );
    let long = vec![b'v'; MAX_HEAD];
    assert_eq!(
        both_ways("GET", "/", &[("x-long", &long)]).err(),
        Some(HttpFault::HeadTooLarge)
    );
    // What only a library could hand over (no wire could carry it): a name that is no
    // token, a target with a space.
    assert_eq!(
        Head::from_parts("POST", "/", [("bad name", &b"v"[..])], false).err(),
        Some(HttpFault::BadRequest)
    );
    assert_eq!(
        Head::from_parts("POST", "/a b", [], false).err(),
        Some(HttpFault::BadRequest)
    );
}

#[test]
fn field_values_are_judged_a_word_at_a_time_as_byte_by_byte() {
    let bytewise = |v: &[u8]| v.iter().all(|&b| b == b'\t' || (b >= 0x20 && b != 0x7f));
    for len in 0..20 {
        for at in 0..len {
            for b in 0..=255u8 {
                let mut value = vec![b'a'; len];
                value[at] = b;
                assert_eq!(is_field_value(&value), bytewise(&value), "{value:?}");
            }
        }
    }
}

/// A field's bytes as text: the same verdict as `from_utf8` whatever the length and
/// wherever a byte above ASCII sits (in an eight-byte step or in the remainder).
#[test]
fn field_bytes_read_as_text_as_from_utf8_reads_them() {
    let mut cases: Vec<Vec<u8>> = Vec::new();
    for len in 0..20 {
        let ascii: Vec<u8> = (0..len).map(|i| b'a' + (i % 26) as u8).collect();
        cases.push(ascii.clone());
        for at in 0..len {
            let mut bad = ascii.clone();
            bad[at] = 0xff;
            cases.push(bad);
            let mut two = ascii.clone();
            two.splice(at..at + 1, "é".bytes());
            cases.push(two);
            let mut cut = ascii.clone();
            cut[at] = 0xc3;
            cases.push(cut);
        }
    }
    for bytes in &cases {
        assert_eq!(
            super::as_text(bytes),
            core::str::from_utf8(bytes).ok(),
            "{bytes:?}"
        );
    }
}

/// `token_is` tells a field name as `eq_ignore_ascii_case` does, for every token: each name
/// the head reads, with every byte in turn replaced by every token byte, in both cases.
#[test]
fn a_field_name_is_told_as_a_case_blind_compare_tells_it() {
    let names: [&[u8]; 8] = [
        b"content-length",
        b"transfer-encoding",
        b"content-type",
        b"connection",
        b"expect",
        b"origin",
        b"access-control-request-method",
        b"access-control-request-headers",
    ];
    let mut compared = 0;
    for lower in names {
        assert!(token_is(lower, lower));
        assert!(token_is(&lower.to_ascii_uppercase(), lower));
        assert!(!token_is(&lower[1..], lower) && !token_is(&[lower, b"x"].concat(), lower));
        for at in 0..lower.len() {
            for byte in 0..=255u8 {
                let mut name = lower.to_vec();
                name[at] = byte;
                if !is_token(&name) {
                    continue;
                }
                for name in [name.clone(), name.to_ascii_uppercase()] {
                    assert_eq!(
                        token_is(&name, lower),
                        name.eq_ignore_ascii_case(lower),
                        "{:?} against {:?}",
                        String::from_utf8_lossy(&name),
                        String::from_utf8_lossy(lower),
                    );
                    compared += 1;
                }
            }
        }
    }
    // Every token byte (77 of them) at each of the names' 124 places, in two cases.
    assert_eq!(compared, 124 * 77 * 2);
}
