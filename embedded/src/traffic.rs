//! The peer's input and the device's exact output for each step: `(input, output)`.
//! The bodies follow the specification's examples (JSON-RPC 2.0, section 7). A batch's
//! answers may come in any order (section 6): the invalid entry's is written as the batch
//! is read, the calls' as they are answered.

/// A call with positional params, answered.
pub const CALL: (&[u8], &[u8]) = (
    concat!(
        "Content-Length: 61\r\n\r\n",
        r#"{"jsonrpc":"2.0","method":"subtract","params":[42,23],"id":1}"#
    )
    .as_bytes(),
    concat!(
        "Content-Length: 36\r\n\r\n",
        r#"{"jsonrpc":"2.0","result":19,"id":1}"#
    )
    .as_bytes(),
);

/// A notification: no answer.
pub const NOTIFICATION: (&[u8], &[u8]) = (
    concat!(
        "Content-Length: 56\r\n\r\n",
        r#"{"jsonrpc":"2.0","method":"update","params":[1,2,3,4,5]}"#
    )
    .as_bytes(),
    b"",
);

/// A batch: two calls, a notification, an invalid entry and an unknown method.
pub const BATCH: (&[u8], &[u8]) = (
    concat!(
        "Content-Length: 260\r\n\r\n",
        r#"[{"jsonrpc":"2.0","method":"sum","params":[1,2,4],"id":"1"},"#,
        r#"{"jsonrpc":"2.0","method":"update","params":[7]},"#,
        r#"{"jsonrpc":"2.0","method":"subtract","params":[42,23],"id":"2"},"#,
        r#"{"foo":"boo"},"#,
        r#"{"jsonrpc":"2.0","method":"foo.get","params":{"name":"myself"},"id":"5"}]"#
    )
    .as_bytes(),
    concat!(
        "Content-Length: 254\r\n\r\n",
        r#"[{"jsonrpc":"2.0","error":{"code":-32600,"message":"Invalid Request: missing method"},"id":null},"#,
        r#"{"jsonrpc":"2.0","result":7,"id":"1"},"#,
        r#"{"jsonrpc":"2.0","result":19,"id":"2"},"#,
        r#"{"jsonrpc":"2.0","error":{"code":-32601,"message":"Method not found"},"id":"5"}]"#
    )
    .as_bytes(),
);

/// Invalid JSON in a well-formed frame: -32700, id null.
pub const PARSE_ERROR: (&[u8], &[u8]) = (
    concat!(
        "Content-Length: 54\r\n\r\n",
        r#"{"jsonrpc":"2.0","method":"foobar,"params":"bar","baz]"#
    )
    .as_bytes(),
    concat!(
        "Content-Length: 75\r\n\r\n",
        r#"{"jsonrpc":"2.0","error":{"code":-32700,"message":"Parse error"},"id":null}"#
    )
    .as_bytes(),
);

/// A frame whose length is not a number, then a good one.
pub const BROKEN_FRAME: (&[u8], &[u8]) = (
    concat!(
        "Content-Length: 4x\r\n\r\n{}\r\n",
        "Content-Length: 56\r\n\r\n",
        r#"{"jsonrpc":"2.0","method":"sum","params":[10,20],"id":3}"#
    )
    .as_bytes(),
    concat!(
        "Content-Length: 36\r\n\r\n",
        r#"{"jsonrpc":"2.0","result":30,"id":3}"#
    )
    .as_bytes(),
);

/// An unknown method: -32601.
pub const UNKNOWN: (&[u8], &[u8]) = (
    concat!(
        "Content-Length: 44\r\n\r\n",
        r#"{"jsonrpc":"2.0","method":"foobar","id":"1"}"#
    )
    .as_bytes(),
    concat!(
        "Content-Length: 79\r\n\r\n",
        r#"{"jsonrpc":"2.0","error":{"code":-32601,"message":"Method not found"},"id":"1"}"#
    )
    .as_bytes(),
);

/// The device's own call.
pub const OUR_CALL: &[u8] = concat!(
    "Content-Length: 45\r\n\r\n",
    r#"{"jsonrpc":"2.0","method":"host/time","id":1}"#
)
.as_bytes();

/// The peer's answer to it.
pub const OUR_CALL_ANSWER: &[u8] = concat!(
    "Content-Length: 44\r\n\r\n",
    r#"{"jsonrpc":"2.0","result":1700000000,"id":1}"#
)
.as_bytes();

/// The device's second call, never answered.
pub const OUR_TIMEOUT_CALL: &[u8] = concat!(
    "Content-Length: 45\r\n\r\n",
    r#"{"jsonrpc":"2.0","method":"host/ping","id":2}"#
)
.as_bytes();

/// What the device sends when that call times out.
pub const OUR_TIMEOUT_CANCEL: &[u8] = concat!(
    "Content-Length: 62\r\n\r\n",
    r#"{"jsonrpc":"2.0","method":"$/cancelRequest","params":{"id":2}}"#
)
.as_bytes();
