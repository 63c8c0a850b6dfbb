//! The floor's answer to one request body: the least a JSON-RPC server does (the envelope
//! parsed borrowed from the body by serde_json, the answer written into a reused buffer),
//! shared by `floor-server` and `rpc-axum-floor-server`.

use std::io::Write as _;

use serde::Deserialize;
use serde_json::value::RawValue;

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

/// Writes the response to one request body into `out`.
pub fn respond(body: &[u8], out: &mut Vec<u8>) {
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
