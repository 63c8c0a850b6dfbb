//! [`LoopbackBrowser`]: the user's part in the user's own browser, the way a native
//! application does it (RFC 8252 §7.3): the authorization URL opened in the browser, the
//! redirect received on a loopback port the application listens on.

use std::sync::Arc;
use std::time::Duration;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use url::{Host, Url};

use super::{BoxFuture, UserAgent};
use crate::machine::AuthorizationRequest;

/// Shows the user an authorization URL (opens it in a browser).
type Opener = dyn Fn(&str) -> Result<(), String> + Send + Sync;

/// The longest request head the redirect listener reads.
const MAX_HEAD: usize = 16 * 1024;

/// How many requests to the redirect path with another `state` the listener answers 400
/// and ignores before it gives up (any local page can send them).
const MAX_STRAY: usize = 16;

/// The user's part in a browser: listens on the redirect URI's loopback address and port
/// (`http://127.0.0.1:8765/callback`: `http`, a loopback host, an explicit port), opens the
/// authorization URL, and waits for the browser to come back to the redirect URI; the
/// browser is answered a short page that says it may be closed. Requests to other paths
/// of the port are answered 404, and requests to the redirect path whose `state` is not
/// the one sent (any local page can send one) 400, and waiting goes on, up to the time
/// limit (five minutes by default); after 16 such requests to the redirect path it gives
/// up.
///
/// ```no_run
/// use sansrpc_oauth::driver::{Authorizer, LoopbackBrowser};
/// use sansrpc_oauth::Config;
///
/// # fn run() -> Result<(), sansrpc_oauth::Error> {
/// let config = Config::authorization_code(
///     "https://mcp.example.com/mcp",
///     "http://127.0.0.1:8765/callback",
/// )?;
/// let authorizer = Authorizer::builder(config)
///     .user_agent(LoopbackBrowser::system())
///     .build()?;
/// # drop(authorizer); Ok(()) }
/// ```
pub struct LoopbackBrowser {
    opener: Arc<Opener>,
    timeout: Duration,
}

impl std::fmt::Debug for LoopbackBrowser {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LoopbackBrowser")
            .field("timeout", &self.timeout)
            .finish_non_exhaustive()
    }
}

impl LoopbackBrowser {
    /// Opens the URL in the system's browser: the program `$BROWSER` names when it is set
    /// (given the URL as its argument), else `xdg-open` (Linux and the BSDs), `open`
    /// (macOS) or `rundll32.exe url.dll,FileProtocolHandler` (Windows, no shell). The URL
    /// is also printed on the standard error, for a user whose browser did not open.
    pub fn system() -> LoopbackBrowser {
        LoopbackBrowser::with_opener(|url| {
            eprintln!("Open this URL in a browser to authorize: {url}");
            let mut command = match std::env::var_os("BROWSER") {
                Some(browser) => std::process::Command::new(browser),
                None if cfg!(target_os = "macos") => std::process::Command::new("open"),
                None if cfg!(windows) => {
                    // Not `cmd /C start "" <url>`: std does not escape arguments for cmd,
                    // and the `&` of a query would end the command and start another.
                    // rundll32 hands the URL to the protocol handler without a shell.
                    let mut open = std::process::Command::new("rundll32.exe");
                    open.arg("url.dll,FileProtocolHandler");
                    open
                }
                None => std::process::Command::new("xdg-open"),
            };
            command
                .arg(url)
                .stdin(std::process::Stdio::null())
                .spawn()
                .map(drop)
                .map_err(|e| format!("the browser did not start: {e}"))
        })
    }

    /// Opens the URL with `opener`, which shows it to the user (a browser of the
    /// application's choosing, a message, a QR code); an error it gives ends the flow.
    pub fn with_opener(
        opener: impl Fn(&str) -> Result<(), String> + Send + Sync + 'static,
    ) -> LoopbackBrowser {
        LoopbackBrowser {
            opener: Arc::new(opener),
            timeout: Duration::from_secs(300),
        }
    }

    /// Gives up when the browser has not come back after `timeout` (default 5 minutes).
    pub fn timeout(mut self, timeout: Duration) -> LoopbackBrowser {
        self.timeout = timeout;
        self
    }

    async fn run(&self, request: &AuthorizationRequest) -> Result<String, String> {
        let redirect = Url::parse(&request.redirect_uri)
            .map_err(|e| format!("the redirect URI is not a URL: {e}"))?;
        let address = match (redirect.scheme(), redirect.host(), redirect.port()) {
            ("http", Some(Host::Ipv4(ip)), Some(port)) if ip.is_loopback() => {
                format!("{ip}:{port}")
            }
            ("http", Some(Host::Ipv6(ip)), Some(port)) if ip.is_loopback() => {
                format!("[{ip}]:{port}")
            }
            ("http", Some(Host::Domain(d)), Some(port)) if d.eq_ignore_ascii_case("localhost") => {
                format!("127.0.0.1:{port}")
            }
            _ => {
                return Err(format!(
                    "the redirect URI `{}` is not http on a loopback address with a port: a \
                     browser's redirect cannot reach this application there",
                    request.redirect_uri
                ))
            }
        };
        // Listening before the browser opens: its redirect finds the port open.
        let listener = TcpListener::bind(&address)
            .await
            .map_err(|e| format!("listening on {address} for the redirect: {e}"))?;
        (self.opener)(&request.url)?;
        let waited = tokio::time::timeout(self.timeout, async {
            let mut strays = 0;
            loop {
                let (stream, _) = listener
                    .accept()
                    .await
                    .map_err(|e| format!("accepting the redirect on {address}: {e}"))?;
                match answer(stream, redirect.path(), &request.state).await {
                    Request::Other => {}
                    Request::Stray => {
                        strays += 1;
                        if strays >= MAX_STRAY {
                            return Err(format!(
                                "{strays} requests came to {} without the state sent: given up",
                                request.redirect_uri
                            ));
                        }
                    }
                    Request::Redirect(target) => {
                        // The target is absolute (`/callback?code=…`): on the redirect's
                        // origin.
                        return redirect.join(&target).map(String::from).map_err(|e| {
                            let target = crate::uri::redacted(&target);
                            format!("the browser came back to `{target}`: {e}")
                        });
                    }
                }
            }
        })
        .await;
        waited.unwrap_or_else(|_| {
            Err(format!(
                "the browser did not come back to {} within {:?}",
                request.redirect_uri, self.timeout
            ))
        })
    }
}

/// A request the redirect listener read.
enum Request {
    /// To the redirect path with the `state` sent: its target.
    Redirect(String),
    /// To the redirect path without that `state` (answered 400).
    Stray,
    /// Anything else (answered 404), or not a request.
    Other,
}

/// Reads one request on `stream`: the redirect when its path is `path` and its `state` is
/// `state` (the browser is told it may close the window); a stray one (400) when its path
/// is `path` but its `state` is not; anything else (404).
async fn answer(mut stream: TcpStream, path: &str, state: &str) -> Request {
    let mut head = Vec::new();
    let mut buf = [0u8; 2048];
    while !head.windows(4).any(|w| w == b"\r\n\r\n") {
        let read = tokio::time::timeout(Duration::from_secs(10), stream.read(&mut buf)).await;
        match read {
            Ok(Ok(n)) if n > 0 && head.len() + n <= MAX_HEAD => head.extend_from_slice(&buf[..n]),
            _ => return Request::Other,
        }
    }
    let line = head.split(|&b| b == b'\r').next().unwrap_or_default();
    let line = String::from_utf8_lossy(line);
    let mut words = line.split(' ');
    let target = match (words.next(), words.next()) {
        (Some("GET"), Some(target)) => target.to_owned(),
        _ => String::new(),
    };
    let (target_path, query) = target.split_once('?').unwrap_or((&target, ""));
    let request = if target_path != path {
        Request::Other
    } else {
        let sent = url::form_urlencoded::parse(query.as_bytes())
            .find(|(name, _)| name == "state")
            .map(|(_, value)| value);
        if sent.as_deref() == Some(state) {
            Request::Redirect(target.clone())
        } else {
            Request::Stray
        }
    };
    let (status, body) = match request {
        Request::Redirect(_) => (
            "200 OK",
            "<!doctype html><title>Authorized</title><p>Authorized. You may close this window.",
        ),
        Request::Stray => (
            "400 Bad Request",
            "<!doctype html><title>Bad request</title><p>Not the authorization this \
             application waits for.",
        ),
        Request::Other => ("404 Not Found", "<!doctype html><title>Not found</title>"),
    };
    let response = format!(
        "HTTP/1.1 {status}\r\ncontent-type: text/html; charset=utf-8\r\ncontent-length: {}\r\n\
         connection: close\r\ncache-control: no-store\r\n\r\n{body}",
        body.len()
    );
    let _ = stream.write_all(response.as_bytes()).await;
    let _ = stream.shutdown().await;
    request
}

impl UserAgent for LoopbackBrowser {
    fn authorize<'a>(
        &'a self,
        request: &'a AuthorizationRequest,
    ) -> BoxFuture<'a, Result<String, String>> {
        Box::pin(self.run(request))
    }
}
