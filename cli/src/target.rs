//! Where `call` and `check` find a server: a command to spawn (stdio), a TCP address, a
//! Unix socket, a WebSocket or HTTP URL; and small output helpers both verbs share.

use std::path::PathBuf;
use std::process::Command;

use clap::Args;

use crate::Fallible;

/// The server to talk to.
#[derive(Args, Debug, Clone, Default)]
#[group(id = "target", multiple = false)]
pub struct Target {
    /// Spawn this command (split as a shell would, without running a shell) and talk to it
    /// over its stdin and stdout.
    #[arg(long, value_name = "CMD")]
    pub stdio: Option<String>,
    /// Connect to this TCP address.
    #[arg(long, value_name = "ADDR")]
    pub tcp: Option<String>,
    /// Connect to the Unix socket at this path.
    #[arg(long, value_name = "PATH")]
    pub unix: Option<PathBuf>,
    /// Open a WebSocket: a `ws://` URL, or `HOST:PORT` for `ws://HOST:PORT/`.
    #[arg(long, value_name = "ADDR|URL")]
    pub ws: Option<String>,
    /// POST to an HTTP URL: an `http://` URL, or `HOST:PORT` for `http://HOST:PORT/`.
    #[arg(long, value_name = "ADDR|URL")]
    pub http: Option<String>,
}

/// A target, resolved.
#[derive(Debug, Clone)]
pub enum Kind {
    /// A program and its arguments.
    Stdio(Vec<String>),
    /// A TCP address.
    Tcp(String),
    /// A Unix socket path.
    Unix(PathBuf),
    /// A `ws://` or `wss://` URL.
    Ws(String),
    /// An `http://` or `https://` URL.
    Http(String),
}

/// `addr` as a URL of `scheme`: a bare `HOST:PORT` becomes `scheme://HOST:PORT/`; a URL
/// must have that scheme or its TLS form (`wss`, `https`).
pub fn url(addr: &str, scheme: &str) -> Fallible<String> {
    match addr.split_once("://") {
        None => Ok(format!("{scheme}://{addr}/")),
        Some((given, _))
            if given.eq_ignore_ascii_case(scheme)
                || given.eq_ignore_ascii_case(&format!("{scheme}s")) =>
        {
            Ok(addr.to_owned())
        }
        Some(_) => {
            Err(format!("{addr}: only {scheme}:// and {scheme}s:// URLs are supported").into())
        }
    }
}

impl Target {
    /// The target given, if any.
    pub fn kind(&self) -> Fallible<Option<Kind>> {
        if let Some(line) = &self.stdio {
            let words = shlex::split(line)
                .filter(|w| !w.is_empty())
                .ok_or_else(|| format!("cannot split the command {line:?} into words"))?;
            return Ok(Some(Kind::Stdio(words)));
        }
        if let Some(addr) = &self.tcp {
            return Ok(Some(Kind::Tcp(addr.clone())));
        }
        if let Some(addr) = &self.ws {
            return Ok(Some(Kind::Ws(url(addr, "ws")?)));
        }
        if let Some(addr) = &self.http {
            return Ok(Some(Kind::Http(url(addr, "http")?)));
        }
        Ok(self.unix.clone().map(Kind::Unix))
    }
}

/// The command for a program and its arguments.
pub fn command(words: &[String]) -> Command {
    let mut command = Command::new(&words[0]);
    command.args(&words[1..]);
    command
}

/// Re-indents one valid JSON text, keeping every token exactly as written (`1e3` stays
/// `1e3`, big integers keep their digits, escapes stay escaped).
pub fn pretty(json: &str) -> String {
    let mut out = String::with_capacity(json.len() * 2);
    let mut depth = 0usize;
    let mut chars = json.chars().peekable();
    let newline = |out: &mut String, depth: usize| {
        out.push('\n');
        out.extend(std::iter::repeat_n("  ", depth));
    };
    while let Some(c) = chars.next() {
        match c {
            '"' => {
                out.push('"');
                while let Some(c) = chars.next() {
                    out.push(c);
                    match c {
                        '\\' => out.extend(chars.next()),
                        '"' => break,
                        _ => {}
                    }
                }
            }
            '{' | '[' => {
                out.push(c);
                // Skip whitespace to see whether the container is empty.
                while chars.peek().is_some_and(|c| c.is_ascii_whitespace()) {
                    chars.next();
                }
                if matches!(chars.peek(), Some('}' | ']')) {
                    out.extend(chars.next());
                } else {
                    depth += 1;
                    newline(&mut out, depth);
                }
            }
            '}' | ']' => {
                depth = depth.saturating_sub(1);
                newline(&mut out, depth);
                out.push(c);
            }
            ',' => {
                out.push(',');
                newline(&mut out, depth);
            }
            ':' => out.push_str(": "),
            c if c.is_ascii_whitespace() => {}
            c => out.push(c),
        }
    }
    out
}

/// Bytes for a human: UTF-8 as is, other bytes as `\xNN`, control characters escaped;
/// at most `limit` bytes, then how many more there were.
pub fn show_bytes(bytes: &[u8], limit: usize) -> String {
    let shown = &bytes[..bytes.len().min(limit)];
    let mut out = String::new();
    for chunk in shown.utf8_chunks() {
        for c in chunk.valid().chars() {
            match c {
                '\n' => out.push_str("\\n"),
                '\r' => out.push_str("\\r"),
                '\t' => out.push_str("\\t"),
                c if c.is_control() => out.push_str(&format!("\\u{{{:x}}}", c as u32)),
                c => out.push(c),
            }
        }
        for b in chunk.invalid() {
            out.push_str(&format!("\\x{b:02x}"));
        }
    }
    if bytes.len() > limit {
        out.push_str(&format!(
            "… ({} bytes in all, {} not shown)",
            bytes.len(),
            bytes.len() - limit
        ));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pretty_keeps_tokens() {
        let text = r#"{"a":[1e3,-0, 123456789012345678901234567890],"b":"x\"{,}","c":{},"d":[ ]}"#;
        let out = pretty(text);
        assert!(out.contains("1e3") && out.contains("-0") && out.contains(r#""x\"{,}""#));
        assert!(out.contains("\"c\": {}") && out.contains("\"d\": []"));
        let reparsed: serde_json::Value = serde_json::from_str(&out).unwrap();
        assert_eq!(
            reparsed,
            serde_json::from_str::<serde_json::Value>(text).unwrap()
        );
    }

    #[test]
    fn urls() {
        assert_eq!(url("127.0.0.1:1", "ws").unwrap(), "ws://127.0.0.1:1/");
        assert_eq!(url("HTTP://h:2/rpc", "http").unwrap(), "HTTP://h:2/rpc");
        assert_eq!(url("https://h:2/", "http").unwrap(), "https://h:2/");
        assert!(url("ws://h:2/", "http").is_err());
    }

    #[test]
    fn show_bytes_escapes() {
        assert_eq!(show_bytes(b"a\n\xff\xc3\xa9", 10), "a\\n\\xffé");
        assert_eq!(
            show_bytes(b"abcdef", 2),
            "ab… (6 bytes in all, 4 not shown)"
        );
    }
}
