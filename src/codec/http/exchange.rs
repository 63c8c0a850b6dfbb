//! What a JSON-RPC-over-HTTP server answers from a request's head alone, and the header
//! fields of every answer it gives: one rule for every server that speaks it (the tokio
//! adapter's own HTTP/1.1 server and its tower service under hyper or axum).
//!
//! POST only (`405` with `Allow: POST` otherwise); `Content-Type: application/json`
//! (charset UTF-8 allowed) or `415`; with CORS on, a preflight (`OPTIONS` with
//! `Access-Control-Request-Method`) from an allowed origin is `204` with the CORS headers,
//! from another origin `403`. Every answer of a server with CORS carries `Vary: Origin`,
//! and `Access-Control-Allow-Origin` when the origin is allowed (the origin, or `*` for
//! [`Origins::Any`]).
//!
//! ```
//! use sansrpc::codec::http::{Exchange, HttpStep, Origins, Refusal, RequestDecoder};
//!
//! let mut wire = b"OPTIONS / HTTP/1.1\r\nHost: x\r\nOrigin: http://localhost:3000\r\n\
//!     Access-Control-Request-Method: POST\r\n\r\n".to_vec();
//! let HttpStep::Head(_, head) = RequestDecoder::new(1 << 20).decode(&mut wire).unwrap() else {
//!     panic!()
//! };
//! let exchange = Exchange::of(head, Some(&Origins::SameAsHosts));
//! assert_eq!(exchange.refused, Some(Refusal::Preflight));
//! let mut fields = Vec::new();
//! exchange.headers(204, true, "600", |name, value| fields.push((name, value.to_vec())));
//! assert!(fields.contains(&("access-control-allow-origin", b"http://localhost:3000".to_vec())));
//! assert!(fields.contains(&("access-control-allow-methods", b"POST".to_vec())));
//! ```

use alloc::borrow::ToOwned;
use alloc::string::String;

use super::{Head, Hosts, HttpMethod, Origins};

/// An answer given from the head, without the connection machine.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Refusal {
    /// A bare status (`415`, `413`, a fault's status, `408`, `503`, `204` for handlers
    /// past their time).
    Status(u16),
    /// `405` with `Allow: POST`.
    NotPost,
    /// A CORS preflight from an allowed origin: `204` with the CORS headers.
    Preflight,
    /// A CORS preflight from another origin: `403`.
    Forbidden,
}

impl Refusal {
    /// The status it is answered with.
    pub fn status(self) -> u16 {
        match self {
            Refusal::Status(status) => status,
            Refusal::NotPost => 405,
            Refusal::Preflight => 204,
            Refusal::Forbidden => 403,
        }
    }
}

/// One exchange's decision from its head: refused or not, and its CORS answer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Exchange {
    /// The answer when the head alone decides it; `None`: the body goes to the connection.
    pub refused: Option<Refusal>,
    /// `Access-Control-Allow-Origin`, when CORS allows the request's origin.
    pub allow_origin: Option<String>,
    /// A preflight's `Access-Control-Request-Headers`.
    pub request_headers: Option<String>,
}

impl Exchange {
    /// The decision for `head`, with CORS for `cors` (none: no CORS, `OPTIONS` is `405`);
    /// origins of [`Origins::SameAsHosts`] are those of a loopback host.
    pub fn of(head: Head, cors: Option<&Origins>) -> Self {
        let allow_origin = match (cors, head.origin) {
            (Some(origins), Some(origin)) if origins.allows(&origin, &Hosts::Loopback) => {
                Some(match origins {
                    Origins::Any => "*".to_owned(),
                    _ => origin,
                })
            }
            _ => None,
        };
        let mut request_headers = None;
        let refused =
            if cors.is_some() && head.method == HttpMethod::Options && head.cors_request_method {
                request_headers = head.cors_request_headers;
                Some(match allow_origin {
                    Some(_) => Refusal::Preflight,
                    None => Refusal::Forbidden,
                })
            } else if head.method != HttpMethod::Post {
                Some(Refusal::NotPost)
            } else if !head.json {
                Some(Refusal::Status(415))
            } else {
                None
            };
        Exchange {
            refused,
            allow_origin,
            request_headers,
        }
    }

    /// Calls `push` with each header field of this exchange's answer with `status` (the
    /// connection's own fields, `Date` and `Connection`, are the server's): the JSON type
    /// for `200`; with `cors` on, `Vary` and the allowed origin; `Allow` for a `405`; and a
    /// preflight's `-Allow-Methods`, `-Allow-Headers` (those requested, else
    /// `Content-Type`) and `-Max-Age` (`max_age`, in seconds).
    pub fn headers<'a>(
        &'a self,
        status: u16,
        cors: bool,
        max_age: &'a str,
        mut push: impl FnMut(&'static str, &'a [u8]),
    ) {
        if status == 200 {
            push("content-type", b"application/json");
        }
        if cors {
            push("vary", b"Origin");
            if let Some(origin) = &self.allow_origin {
                push("access-control-allow-origin", origin.as_bytes());
            }
        }
        match self.refused {
            Some(Refusal::NotPost) if status == 405 => push("allow", b"POST"),
            Some(Refusal::Preflight) if status == 204 => {
                let headers = self.request_headers.as_deref().unwrap_or("Content-Type");
                push("access-control-allow-methods", b"POST");
                push("access-control-allow-headers", headers.as_bytes());
                push("access-control-max-age", max_age.as_bytes());
            }
            _ => {}
        }
    }
}
