//! Serving a [`Server`] in one call, with the LSP profile set and the LSP exit status
//! returned: on tokio (`tokio` feature) and on the blocking adapter's threads (`blocking`
//! feature). And what a server says when it runs on a connection without that profile.

#[cfg(any(feature = "futures", feature = "blocking", feature = "tokio"))]
use std::sync::Arc;

#[cfg(feature = "tokio")]
use sansrpc::Config;
#[cfg(any(feature = "futures", feature = "blocking"))]
use sansrpc::Profile;

#[cfg(any(feature = "futures", feature = "blocking"))]
use super::context::{BoxFuture, Peer};
#[cfg(any(feature = "tokio", feature = "blocking"))]
use super::{Server, Session};

/// `window/logMessage`.
#[cfg(any(feature = "tokio", feature = "blocking"))]
const LOG_MESSAGE: &str = "window/logMessage";

/// What a server writes to stderr, and logs in the editor (`window/logMessage`), at
/// `initialize` when its connection is not under [`Profile::Lsp`].
#[cfg(any(feature = "futures", feature = "blocking"))]
pub(crate) const WITHOUT_PROFILE: &str = "sansrpc-lsp: this connection is not under the LSP \
     profile: requests before `initialize` are answered, `exit` is ignored (the process \
     stays until its input ends, with status 0), and a notification may overtake the request \
     behind it. Serve with `Server::serve_stdio` (tokio) or `Server::serve_stdio_blocking` \
     (threads), or give the connection `Config::for_profile(Profile::Lsp)`.";

/// At `initialize`, on a connection whose profile is `profile`: nothing under the LSP
/// profile; otherwise [`WITHOUT_PROFILE`] on stderr at once, and the future that logs it in
/// the editor.
#[cfg(any(feature = "futures", feature = "blocking"))]
pub(crate) fn check_profile(profile: Profile, host: &Arc<dyn Peer>) -> Option<BoxFuture<bool>> {
    use lsp_types::notification::{LogMessage, Notification};
    use lsp_types::{LogMessageParams, MessageType};
    if profile == Profile::Lsp {
        return None;
    }
    eprintln!("{WITHOUT_PROFILE}");
    let params = LogMessageParams {
        typ: MessageType::WARNING,
        message: WITHOUT_PROFILE.to_owned(),
    };
    let params = super::to_raw(&params).ok()?;
    Some(host.notify(LogMessage::METHOD, params))
}

#[cfg(feature = "tokio")]
impl Server {
    /// Serves the server on this process's stdin and stdout, on the current tokio runtime,
    /// under the LSP profile (the lifecycle, ordered notifications, `$/cancelRequest`,
    /// `"params": null` read as absent, Content-Length framing), until `exit` or the end of
    /// stdin; the status the process should exit with: 0 after `shutdown` was answered, 1
    /// otherwise (also when the editor's process died, or stdio failed: that error is
    /// written to stderr). Exit with it rather than return from `main`: tokio reads stdin
    /// on a thread that a return would wait for.
    ///
    /// ```no_run
    /// # use sansrpc_lsp::server::ServerBuilder;
    /// #[tokio::main(flavor = "current_thread")]
    /// async fn main() {
    ///     let server = ServerBuilder::new("mine", "1.0").build();
    ///     std::process::exit(server.serve_stdio().await)
    /// }
    /// ```
    pub async fn serve_stdio(&self) -> i32 {
        self.serve(sansrpc_tokio::stdio(), |_| {}).await
    }

    /// Serves as [`serve_stdio`](Self::serve_stdio) does, with the connection's
    /// configuration changed by `configure` first (limits, `max_inflight_incoming`…; it
    /// starts as `Config::for_profile(Profile::Lsp)`).
    pub async fn serve_stdio_with(&self, configure: impl FnOnce(&mut Config)) -> i32 {
        self.serve(sansrpc_tokio::stdio(), configure).await
    }

    /// Serves the server over `transport` (a socket, a pipe, an in-memory stream: see
    /// [`sansrpc_tokio::stream`]) as [`serve_stdio_with`](Self::serve_stdio_with) does; the
    /// exit status.
    pub async fn serve<T: sansrpc_tokio::Transport>(
        &self,
        transport: T,
        configure: impl FnOnce(&mut Config),
    ) -> i32 {
        // Dropped frames told on stderr, and in the editor's log once it initialized.
        let frames = super::frames::FrameLog::default();
        let peer = Arc::new(std::sync::OnceLock::<sansrpc_tokio::Client>::new());
        let seen = Arc::clone(&peer);
        let builder = self.builder(configure).on_event(move |event| {
            let Some(message) = frames.report(&event, std::time::Instant::now()) else {
                return;
            };
            let peer = seen.get();
            let initialized = peer.is_some_and(|p| p.local::<Session>().is_initialized());
            super::frames::tell(&message, initialized, |params| {
                if let Some(peer) = peer {
                    // Queued now; its future only waits for the queue.
                    drop(peer.notify_raw(LOG_MESSAGE, Some(params)));
                }
            });
        });
        let conn = sansrpc_tokio::spawn(builder, transport);
        let _ = peer.set(conn.client.clone());
        let ended = match conn.driver.await {
            Ok(ended) => ended,
            Err(e) => Err(std::io::Error::other(e)),
        };
        if let Err(e) = &ended {
            eprintln!("sansrpc-lsp: the connection failed: {e}");
        }
        conn.client.exit_code().unwrap_or(i32::from(ended.is_err()))
    }

    /// The tokio adapter's connection builder for this server: its router, under
    /// `Config::for_profile(Profile::Lsp)` changed by `configure`. For a driver of your own
    /// (a listener, a connection you keep a handle to); [`serve`](Self::serve) uses it.
    pub fn builder(&self, configure: impl FnOnce(&mut Config)) -> sansrpc_tokio::Builder {
        let mut config = Config::for_profile(Profile::Lsp);
        configure(&mut config);
        sansrpc_tokio::Builder::new()
            .config(config)
            .router(self.router())
    }
}

#[cfg(feature = "blocking")]
impl Server {
    /// Serves the server on this process's stdin and stdout on the blocking adapter's
    /// threads (no async runtime; see [`blocking_router`](Self::blocking_router) for where
    /// handlers run), under the LSP profile, until `exit` or the end of stdin; the status
    /// the process should exit with, as `serve_stdio` (tokio) gives it.
    ///
    /// ```no_run
    /// # use sansrpc_lsp::server::ServerBuilder;
    /// let server = ServerBuilder::new("mine", "1.0").build();
    /// std::process::exit(server.serve_stdio_blocking())
    /// ```
    pub fn serve_stdio_blocking(&self) -> i32 {
        self.serve_stdio_blocking_with(|_| {})
    }

    /// Serves as [`serve_stdio_blocking`](Self::serve_stdio_blocking) does, with the
    /// adapter's options changed by `configure` first (they start as
    /// `Options::for_profile(Profile::Lsp)`).
    pub fn serve_stdio_blocking_with(
        &self,
        configure: impl FnOnce(&mut sansrpc_blocking::Options),
    ) -> i32 {
        let mut options = sansrpc_blocking::Options::for_profile(Profile::Lsp);
        // Dropped frames told on stderr, and in the editor's log once it initialized.
        let frames = super::frames::FrameLog::default();
        options.on_event = Some(sansrpc_blocking::EventHook::new(move |peer, event| {
            if let Some(message) = frames.report(&event, std::time::Instant::now()) {
                let initialized = peer.local::<Session>().is_initialized();
                super::frames::tell(&message, initialized, |params| {
                    peer.notify_raw_queued(LOG_MESSAGE, Some(params));
                });
            }
        }));
        configure(&mut options);
        match sansrpc_blocking::serve_stdio_status(Arc::new(self.blocking_router()), options) {
            Ok(status) => status,
            Err(e) => {
                eprintln!("sansrpc-lsp: the connection failed: {e}");
                1
            }
        }
    }
}
