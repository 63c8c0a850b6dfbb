//! The fixed cases of the compliance suite, each with the answer the specification
//! requires. None needs a method of the server's, except the section 7 examples.

use serde_json::{json, Value};

use crate::ProfileArg;
use sansrpc_compliance::{Expect, Item};

/// Where a case's rule lives in the JSON-RPC 2.0 specification.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Section {
    /// §4 The Request object.
    Request,
    /// §4.1 Notifications.
    Notification,
    /// §4.2 Parameter structures.
    Params,
    /// §5 The Response object: the id comes back exactly.
    Response,
    /// §5.1 The Error object: parse errors and unknown methods.
    Errors,
    /// §6 Batch.
    Batch,
    /// §7 Examples (with `--spec-methods`).
    Examples,
    /// Hostile input: not a rule of the specification, but a server must survive it.
    Robustness,
    /// Generated messages (`--fuzz`).
    Fuzz,
}

impl Section {
    /// The heading of the section in the report.
    pub fn title(self) -> &'static str {
        match self {
            Section::Request => "§4 Request object",
            Section::Notification => "§4.1 Notification",
            Section::Params => "§4.2 Parameter structures",
            Section::Response => "§5 Response object: the id comes back",
            Section::Errors => "§5.1 Error object: parse errors, unknown methods",
            Section::Batch => "§6 Batch",
            Section::Examples => "§7 Examples (--spec-methods)",
            Section::Robustness => "Robustness: hostile input",
            Section::Fuzz => "Fuzz (--fuzz)",
        }
    }

    /// The short name used in JSON output.
    pub fn key(self) -> &'static str {
        match self {
            Section::Request => "4",
            Section::Notification => "4.1",
            Section::Params => "4.2",
            Section::Response => "5",
            Section::Errors => "5.1",
            Section::Batch => "6",
            Section::Examples => "7",
            Section::Robustness => "robustness",
            Section::Fuzz => "fuzz",
        }
    }
}

/// One input and the answer it requires.
#[derive(Debug, Clone)]
pub struct Case {
    /// A stable name, `section.what`.
    pub id: String,
    /// Where the rule is.
    pub section: Section,
    /// What it checks, in words.
    pub title: String,
    /// The message body sent (framed by the connection).
    pub body: Vec<u8>,
    /// What must come back.
    pub expect: Expect,
    /// False for advice: a failure is reported but does not fail the run.
    pub required: bool,
}

/// A method no server implements.
pub const UNKNOWN: &str = "sansrpc.check.unknown";

fn case(section: Section, id: &str, title: &str, body: &str, expect: Expect) -> Case {
    Case {
        id: id.to_owned(),
        section,
        title: title.to_owned(),
        body: body.as_bytes().to_vec(),
        expect,
        required: true,
    }
}

fn error(code: i64, id: &str) -> Expect {
    Expect::Single(item(code, id))
}

fn item(code: i64, id: &str) -> Item {
    Item::Error {
        code,
        id: id.to_owned(),
    }
}

/// Any response with this id: for a request whose error code is another case's to judge
/// (each case judges the rule it is filed under; a wrong code is reported once, under the
/// error-code cases of §5.1).
fn any(id: &str) -> Item {
    Item::Any { id: id.to_owned() }
}

/// One response with this id, whatever it says: the id-echo cases judge the id alone.
fn echoes(id: &str) -> Expect {
    Expect::Any { id: id.to_owned() }
}

fn result(value: Value, id: &str) -> Item {
    Item::Result {
        value,
        id: id.to_owned(),
    }
}

/// A request for the unknown method with this id token.
fn unknown_with_id(id: &str) -> String {
    format!(r#"{{"jsonrpc":"2.0","method":"{UNKNOWN}","id":{id}}}"#)
}

/// The cases that need no method of the server's.
pub fn basic() -> Vec<Case> {
    use Section::*;
    const PARSE: i64 = -32700;
    const INVALID: i64 = -32600;
    const NOT_FOUND: i64 = -32601;
    let mut cases = vec![
        // §5.1: parse errors, always with id null.
        case(
            Errors,
            "parse.spec-example",
            "invalid JSON (the specification's example)",
            r#"{"jsonrpc": "2.0", "method": "foobar, "params": "bar", "baz]"#,
            error(PARSE, "null"),
        ),
        case(
            Errors,
            "parse.truncated",
            "an object cut short",
            r#"{"jsonrpc":"2.0","method":"foobar","id":1"#,
            error(PARSE, "null"),
        ),
        case(
            Errors,
            "parse.not-json",
            "plain text",
            "this is not JSON",
            error(PARSE, "null"),
        ),
        case(
            Errors,
            "parse.trailing-comma",
            "a trailing comma in an object",
            r#"{"jsonrpc":"2.0","method":"foobar","id":1,}"#,
            error(PARSE, "null"),
        ),
        case(
            Errors,
            "parse.single-quotes",
            "single-quoted strings",
            "{'jsonrpc':'2.0','method':'foobar','id':1}",
            error(PARSE, "null"),
        ),
        case(
            Errors,
            "parse.nan",
            "NaN is not a JSON number",
            r#"{"jsonrpc":"2.0","method":"foobar","id":NaN}"#,
            error(PARSE, "null"),
        ),
        case(
            Errors,
            "parse.trailing-garbage",
            "a second value after the message",
            r#"{"jsonrpc":"2.0","method":"foobar","id":1} x"#,
            error(PARSE, "null"),
        ),
        case(
            Errors,
            "parse.control-character",
            "a raw tab inside a string",
            "{\"jsonrpc\":\"2.0\",\"method\":\"foo\tbar\",\"id\":1}",
            error(PARSE, "null"),
        ),
        case(
            Errors,
            "parse.unclosed-string",
            "a string that never ends",
            r#"{"jsonrpc":"2.0","method":"foobar,"id":1}"#,
            error(PARSE, "null"),
        ),
        // §5.1: unknown methods.
        case(
            Errors,
            "method.unknown",
            "an unknown method",
            &unknown_with_id("1"),
            error(NOT_FOUND, "1"),
        ),
        case(
            Errors,
            "method.empty-name",
            "the empty method name",
            r#"{"jsonrpc":"2.0","method":"","id":1}"#,
            error(NOT_FOUND, "1"),
        ),
        case(
            Errors,
            "method.reserved-unknown",
            "an unknown rpc.-prefixed method",
            r#"{"jsonrpc":"2.0","method":"rpc.sansrpc-check-unknown","id":2}"#,
            error(NOT_FOUND, "2"),
        ),
        // §4: invalid requests, -32600 with the id when it is valid, null otherwise.
        case(
            Request,
            "invalid.jsonrpc-missing",
            "no \"jsonrpc\" member",
            r#"{"method":"foobar","id":1}"#,
            error(INVALID, "1"),
        ),
        case(
            Request,
            "invalid.jsonrpc-1.0",
            "\"jsonrpc\": \"1.0\"",
            r#"{"jsonrpc":"1.0","method":"foobar","id":1}"#,
            error(INVALID, "1"),
        ),
        case(
            Request,
            "invalid.jsonrpc-number",
            "\"jsonrpc\" as the number 2.0",
            r#"{"jsonrpc":2.0,"method":"foobar","id":"x"}"#,
            error(INVALID, "\"x\""),
        ),
        case(
            Request,
            "invalid.jsonrpc-null",
            "\"jsonrpc\": null",
            r#"{"jsonrpc":null,"method":"foobar","id":3}"#,
            error(INVALID, "3"),
        ),
        case(
            Request,
            "invalid.method-missing",
            "no \"method\" member",
            r#"{"jsonrpc":"2.0","id":1}"#,
            error(INVALID, "1"),
        ),
        case(
            Request,
            "invalid.method-number",
            "\"method\" is a number",
            r#"{"jsonrpc":"2.0","method":1,"id":1}"#,
            error(INVALID, "1"),
        ),
        case(
            Request,
            "invalid.method-null",
            "\"method\" is null",
            r#"{"jsonrpc":"2.0","method":null,"id":"m"}"#,
            error(INVALID, "\"m\""),
        ),
        case(
            Request,
            "invalid.method-array",
            "\"method\" is an array",
            r#"{"jsonrpc":"2.0","method":["foobar"],"id":4}"#,
            error(INVALID, "4"),
        ),
        case(
            Request,
            "invalid.id-true",
            "the id is a boolean",
            &unknown_with_id("true"),
            error(INVALID, "null"),
        ),
        case(
            Request,
            "invalid.id-object",
            "the id is an object",
            &unknown_with_id(r#"{"a":1}"#),
            error(INVALID, "null"),
        ),
        case(
            Request,
            "invalid.id-array",
            "the id is an array",
            &unknown_with_id("[1]"),
            error(INVALID, "null"),
        ),
        case(
            Request,
            "invalid.spec-example",
            "the specification's invalid Request object",
            r#"{"jsonrpc": "2.0", "method": 1, "params": "bar"}"#,
            error(INVALID, "null"),
        ),
        case(
            Request,
            "invalid.number",
            "a number instead of an object",
            "42",
            error(INVALID, "null"),
        ),
        case(
            Request,
            "invalid.string",
            "a string instead of an object",
            r#""hello""#,
            error(INVALID, "null"),
        ),
        case(
            Request,
            "invalid.null",
            "null instead of an object",
            "null",
            error(INVALID, "null"),
        ),
        case(
            Request,
            "invalid.empty-object",
            "an empty object",
            "{}",
            error(INVALID, "null"),
        ),
        // §4.2: params must be structured.
        case(
            Params,
            "params.string",
            "params is a string",
            r#"{"jsonrpc":"2.0","method":"foobar","params":"bar","id":1}"#,
            error(INVALID, "1"),
        ),
        case(
            Params,
            "params.number",
            "params is a number",
            r#"{"jsonrpc":"2.0","method":"foobar","params":42,"id":2}"#,
            error(INVALID, "2"),
        ),
        case(
            Params,
            "params.boolean",
            "params is a boolean",
            r#"{"jsonrpc":"2.0","method":"foobar","params":true,"id":3}"#,
            error(INVALID, "3"),
        ),
        case(
            Params,
            "params.null",
            "params is null",
            r#"{"jsonrpc":"2.0","method":"foobar","params":null,"id":4}"#,
            error(INVALID, "4"),
        ),
        case(
            Params,
            "params.notification-string",
            "a notification whose params is a string",
            r#"{"jsonrpc":"2.0","method":"foobar","params":"bar"}"#,
            error(INVALID, "null"),
        ),
        // §4.1: notifications are never answered.
        case(
            Notification,
            "notification.unknown",
            "a notification to an unknown method",
            &format!(r#"{{"jsonrpc":"2.0","method":"{UNKNOWN}"}}"#),
            Expect::Nothing,
        ),
        case(
            Notification,
            "notification.positional",
            "with positional params",
            &format!(r#"{{"jsonrpc":"2.0","method":"{UNKNOWN}","params":[1,2]}}"#),
            Expect::Nothing,
        ),
        case(
            Notification,
            "notification.named",
            "with named params",
            &format!(r#"{{"jsonrpc":"2.0","method":"{UNKNOWN}","params":{{"a":1}}}}"#),
            Expect::Nothing,
        ),
        case(
            Notification,
            "notification.reserved",
            "to an unknown rpc.-prefixed method",
            r#"{"jsonrpc":"2.0","method":"rpc.sansrpc-check-unknown"}"#,
            Expect::Nothing,
        ),
        // §6: batches.
        case(
            Batch,
            "batch.empty",
            "an empty array: one error, not an array",
            "[]",
            error(INVALID, "null"),
        ),
        case(
            Batch,
            "batch.one-invalid",
            "[1]: an array of one error",
            "[1]",
            Expect::Batch(vec![item(INVALID, "null")]),
        ),
        case(
            Batch,
            "batch.three-invalid",
            "[1,2,3]: an array of three errors",
            "[1,2,3]",
            Expect::Batch(vec![item(INVALID, "null"); 3]),
        ),
        case(
            Batch,
            "batch.nested",
            "an array inside the batch",
            "[[]]",
            Expect::Batch(vec![item(INVALID, "null")]),
        ),
        case(
            Batch,
            "batch.one-request",
            "a batch of one request: still an array",
            &format!("[{}]", unknown_with_id("7")),
            Expect::Batch(vec![any("7")]),
        ),
        case(
            Batch,
            "batch.mixed",
            "requests, a notification and invalid entries",
            &format!(
                r#"[{},{{"jsonrpc":"2.0","method":"{UNKNOWN}"}},{{"foo":"boo"}},{{"jsonrpc":"2.0","method":"foobar","params":"bad","id":2}},5]"#,
                unknown_with_id(r#""a""#)
            ),
            Expect::Batch(vec![
                any("\"a\""),
                item(INVALID, "null"),
                item(INVALID, "2"),
                item(INVALID, "null"),
            ]),
        ),
        case(
            Batch,
            "batch.same-value-ids",
            "ids 1 and \"1\" are different ids",
            &format!("[{},{}]", unknown_with_id("1"), unknown_with_id(r#""1""#)),
            Expect::Batch(vec![any("1"), any("\"1\"")]),
        ),
        case(
            Batch,
            "batch.all-notifications",
            "only notifications: no response at all",
            &format!(
                r#"[{{"jsonrpc":"2.0","method":"{UNKNOWN}","params":[1]}},{{"jsonrpc":"2.0","method":"{UNKNOWN}"}}]"#
            ),
            Expect::Nothing,
        ),
        case(
            Batch,
            "batch.invalid-json",
            "invalid JSON inside a batch (the specification's example)",
            r#"[{"jsonrpc": "2.0", "method": "sum", "params": [1,2,4], "id": "1"},{"jsonrpc": "2.0", "method"]"#,
            error(PARSE, "null"),
        ),
    ];
    // §5: ids of every type, echoed exactly (the id alone is judged: the unknown method's
    // code is §5.1's).
    let ids: &[(&str, &str)] = &[
        ("id.integer", "1"),
        ("id.zero", "0"),
        ("id.negative", "-7"),
        ("id.fraction", "1.5"),
        ("id.negative-zero", "-0"),
        ("id.exponent", "1e3"),
        ("id.exponent-signed", "2.5E-3"),
        ("id.big-integer", "123456789012345678901234567890"),
        ("id.beyond-u64", "18446744073709551616"),
        ("id.empty-string", r#""""#),
        ("id.string", r#""abc""#),
        ("id.numeric-string", r#""1""#),
        ("id.escaped-quote", r#""a\"b""#),
        ("id.escaped-backslash", r#""a\\b\/c""#),
        ("id.unicode-escape", r#""\u00e9""#),
        ("id.surrogate-pair-escape", r#""\ud83d\ude00""#),
        ("id.non-ascii", "\"é日本語🎉\""),
        ("id.null", "null"),
    ];
    for (id, token) in ids {
        cases.push(case(
            Response,
            id,
            &format!("id {token} comes back as the same value"),
            &unknown_with_id(token),
            echoes(token),
        ));
    }
    cases.push(case(
        Response,
        "id.spacing",
        "an id written with spaces around it comes back as its token",
        &format!(r#"{{"jsonrpc":"2.0","method":"{UNKNOWN}","id": 17 }}"#),
        echoes("17"),
    ));
    cases.push(case(
        Response,
        "id.member-order",
        "the id before the method",
        &format!(r#"{{"id":"first","method":"{UNKNOWN}","jsonrpc":"2.0"}}"#),
        echoes("\"first\""),
    ));
    // Advice: JSON texts must be UTF-8 (RFC 8259 §8.1); some servers decode leniently.
    let mut utf8 = case(
        Errors,
        "parse.invalid-utf8",
        "a byte that is not UTF-8 (advice)",
        "",
        error(PARSE, "null"),
    );
    utf8.body = b"{\"jsonrpc\":\"2.0\",\"method\":\"foo\xffbar\",\"id\":1}".to_vec();
    utf8.required = false;
    cases.push(utf8);
    cases.extend(hostile());
    cases
}

/// Input meant to break servers: each must be refused or answered, and the server must go
/// on answering.
fn hostile() -> Vec<Case> {
    use Section::Robustness;
    let depth = 100_000;
    let big = 16 * 1024 * 1024;
    let mut cases = Vec::new();
    let mut oversize = format!(r#"{{"jsonrpc":"2.0","method":"{UNKNOWN}","params":[""#);
    oversize.extend(std::iter::repeat_n('x', big));
    oversize.push_str(r#""],"id":"big"}"#);
    cases.push(case(
        Robustness,
        "hostile.oversize",
        "a 16 MiB request",
        &oversize,
        Expect::Tolerated {
            id: Some("\"big\"".into()),
        },
    ));
    // Valid JSON deeper than a server parses: refused as a parse error or an invalid
    // request (its depth limit), or answered as it would be with no limit.
    let deep = |normal: Expect| Expect::Deep {
        normal: Box::new(normal),
    };
    let closed = "[".repeat(depth) + &"]".repeat(depth);
    cases.push(case(
        Robustness,
        "hostile.deep-array",
        "100,000 nested arrays",
        &closed,
        // With no limit: a batch of one entry, an array, which is no request.
        deep(Expect::Batch(vec![item(-32600, "null")])),
    ));
    // Invalid JSON at any depth is a parse error.
    cases.push(case(
        Robustness,
        "hostile.deep-unclosed",
        "100,000 opening brackets, never closed: a parse error",
        &"[".repeat(depth),
        error(-32700, "null"),
    ));
    cases.push(case(
        Robustness,
        "hostile.deep-unclosed-objects",
        "[{\"\": repeated 50,000 times, never closed: a parse error",
        &r#"[{"":"#.repeat(depth / 2),
        error(-32700, "null"),
    ));
    let params = format!(
        r#"{{"jsonrpc":"2.0","method":"{UNKNOWN}","params":{}{},"id":"deep"}}"#,
        "[".repeat(depth),
        "]".repeat(depth)
    );
    cases.push(case(
        Robustness,
        "hostile.deep-params",
        "a request whose params nest 100,000 deep",
        &params,
        deep(error(-32601, "\"deep\"")),
    ));
    let objects = format!("{}1{}", r#"{"a":"#.repeat(depth), "}".repeat(depth));
    cases.push(case(
        Robustness,
        "hostile.deep-object",
        "100,000 nested objects",
        &objects,
        // With no limit: an object that is no request.
        deep(error(-32600, "null")),
    ));
    let long_id = format!("\"{}\"", "i".repeat(100_000));
    cases.push(case(
        Robustness,
        "hostile.long-id",
        "a 100,000-character string id",
        &unknown_with_id(&long_id),
        Expect::Tolerated { id: Some(long_id) },
    ));
    let many = format!("[{}]", vec![unknown_with_id("1"); 10_000].join(","));
    cases.push(case(
        Robustness,
        "hostile.large-batch",
        "a batch of 10,000 requests",
        &many,
        // Every request in it has id 1: an array of answers with id 1 is as good as a refusal.
        Expect::Tolerated {
            id: Some("1".into()),
        },
    ));
    cases
}

/// The specification's examples (section 7), for a server that implements its methods:
/// subtract, sum, update, get_data, notify_hello, notify_sum.
pub fn spec_examples() -> Vec<Case> {
    use Section::Examples;
    let one = |id: &str, title: &str, body: &str, value: Value, rid: &str| {
        case(
            Examples,
            id,
            title,
            body,
            Expect::Single(result(value, rid)),
        )
    };
    vec![
        one(
            "spec.subtract-positional",
            "subtract [42, 23] = 19",
            r#"{"jsonrpc": "2.0", "method": "subtract", "params": [42, 23], "id": 1}"#,
            json!(19),
            "1",
        ),
        one(
            "spec.subtract-positional-reversed",
            "subtract [23, 42] = -19",
            r#"{"jsonrpc": "2.0", "method": "subtract", "params": [23, 42], "id": 2}"#,
            json!(-19),
            "2",
        ),
        one(
            "spec.subtract-named",
            "subtract by name = 19",
            r#"{"jsonrpc": "2.0", "method": "subtract", "params": {"subtrahend": 23, "minuend": 42}, "id": 3}"#,
            json!(19),
            "3",
        ),
        one(
            "spec.subtract-named-reordered",
            "subtract by name, other order = 19",
            r#"{"jsonrpc": "2.0", "method": "subtract", "params": {"minuend": 42, "subtrahend": 23}, "id": 4}"#,
            json!(19),
            "4",
        ),
        case(
            Examples,
            "spec.notification-update",
            "the update notification: no response",
            r#"{"jsonrpc": "2.0", "method": "update", "params": [1,2,3,4,5]}"#,
            Expect::Nothing,
        ),
        case(
            Examples,
            "spec.notification-foobar",
            "the foobar notification: no response",
            r#"{"jsonrpc": "2.0", "method": "foobar"}"#,
            Expect::Nothing,
        ),
        case(
            Examples,
            "spec.non-existent-method",
            "foobar: -32601 with id \"1\"",
            r#"{"jsonrpc": "2.0", "method": "foobar", "id": "1"}"#,
            error_item(-32601, "\"1\""),
        ),
        one(
            "spec.get-data",
            "get_data = [\"hello\", 5]",
            r#"{"jsonrpc": "2.0", "method": "get_data", "id": "9"}"#,
            json!(["hello", 5]),
            "\"9\"",
        ),
        one(
            "spec.sum",
            "sum [1,2,4] = 7",
            r#"{"jsonrpc": "2.0", "method": "sum", "params": [1,2,4], "id": "1"}"#,
            json!(7),
            "\"1\"",
        ),
        case(
            Examples,
            "spec.batch",
            "the specification's batch",
            r#"[
        {"jsonrpc": "2.0", "method": "sum", "params": [1,2,4], "id": "1"},
        {"jsonrpc": "2.0", "method": "notify_hello", "params": [7]},
        {"jsonrpc": "2.0", "method": "subtract", "params": [42,23], "id": "2"},
        {"foo": "boo"},
        {"jsonrpc": "2.0", "method": "foo.get", "params": {"name": "myself"}, "id": "5"},
        {"jsonrpc": "2.0", "method": "get_data", "id": "9"}
    ]"#,
            Expect::Batch(vec![
                result(json!(7), "\"1\""),
                result(json!(19), "\"2\""),
                item(-32600, "null"),
                item(-32601, "\"5\""),
                result(json!(["hello", 5]), "\"9\""),
            ]),
        ),
        case(
            Examples,
            "spec.batch-all-notifications",
            "the specification's all-notification batch",
            r#"[
        {"jsonrpc": "2.0", "method": "notify_sum", "params": [1,2,4]},
        {"jsonrpc": "2.0", "method": "notify_hello", "params": [7]}
    ]"#,
            Expect::Nothing,
        ),
    ]
}

fn error_item(code: i64, id: &str) -> Expect {
    error(code, id)
}

/// True when a message uses what MCP forbids: a batch, or a request id that is null or
/// not an integer.
pub fn outside_mcp(body: &[u8]) -> bool {
    if body.trim_ascii_start().starts_with(b"[") {
        return true;
    }
    let Ok(Value::Object(message)) = serde_json::from_slice::<Value>(body) else {
        return false;
    };
    match message.get("id") {
        Some(Value::Null) => true,
        Some(Value::Number(n)) => !(n.is_i64() || n.is_u64()),
        _ => false,
    }
}

/// Makes advice of what the profile's protocol forbids: under MCP, batches and null or
/// fractional ids are not required to be answered as JSON-RPC 2.0 answers them.
pub fn apply_profile(cases: &mut [Case], profile: ProfileArg) {
    if profile != ProfileArg::Mcp {
        return;
    }
    for case in cases {
        if case.required && outside_mcp(&case.body) {
            case.required = false;
            case.title.push_str(" (advice: MCP forbids it)");
        }
    }
}
