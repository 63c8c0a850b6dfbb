//! Serving a [`Server`] in one call, with the LSP profile set and the LSP exit status
//! returned: on tokio (`tokio` feature) and on the blocking adapter's threads (`blocking`
//! feature). And what a server says when it runs on a connection without that profile.

#[cfg(any(feature = "futures", feature = "blocking", feature = "tokio"))]
use std::sync::Arc;

#[cfg(any(feature = "tokio", feature = "blocking"))]
use sansrpc::Config;
#[cfg(any(feature = "futures", feature = "blocking", feature = "tokio"))]
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

/// `config` under the LSP profile: its conventions (the lifecycle, ordered notifications,
/// `$/cancelRequest` and `$/progress`, Content-Length framing) set, everything else (limits,
/// timeouts, `max_inflight_incoming`…) as given. What the serve family does to the
/// configuration it is given, so `Config::default()` with a limit changed is enough.
#[cfg(any(feature = "tokio", feature = "blocking"))]
fn under_lsp(mut config: Config) -> Config {
    let lsp = Config::for_profile(Profile::Lsp);
    config.profile = lsp.profile;
    config.framing = lsp.framing;
    config.cancel_method = lsp.cancel_method;
    config.progress_method = lsp.progress_method;
    config.ordered_notifications = lsp.ordered_notifications;
    config
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
        self.serve_stdio_with(Config::default()).await
    }

    /// Serves as [`serve_stdio`](Self::serve_stdio) does, on a connection configured by
    /// `config` (limits, timeouts, `max_inflight_incoming`…) under the LSP profile's
    /// conventions, which the server sets itself:
    ///
    /// ```no_run
    /// # use sansrpc_lsp::server::ServerBuilder;
    /// # async fn run() -> i32 {
    /// # let server = ServerBuilder::new("mine", "1.0").build();
    /// let mut config = sansrpc::Config::default();
    /// config.limits.max_frame_bytes = 64 << 20; // files up to about 64 MiB
    /// server.serve_stdio_with(config).await
    /// # }
    /// ```
    pub async fn serve_stdio_with(&self, config: Config) -> i32 {
        self.serve_with(sansrpc_tokio::stdio(), config).await
    }

    /// Serves the server over `transport` (a socket, a pipe, an in-memory stream: see
    /// [`sansrpc_tokio::stream`]) as [`serve_stdio`](Self::serve_stdio) does; the exit
    /// status.
    pub async fn serve<T: sansrpc_tokio::Transport>(&self, transport: T) -> i32 {
        self.serve_with(transport, Config::default()).await
    }

    /// [`serve`](Self::serve) on a connection configured by `config`, as
    /// [`serve_stdio_with`](Self::serve_stdio_with) takes it.
    pub async fn serve_with<T: sansrpc_tokio::Transport>(
        &self,
        transport: T,
        config: Config,
    ) -> i32 {
        // Dropped frames told on stderr, and in the editor's log once it initialized.
        let frames = super::frames::FrameLog::default();
        let peer = Arc::new(std::sync::OnceLock::<sansrpc_tokio::Client>::new());
        let seen = Arc::clone(&peer);
        let builder = self.builder(config).on_event(move |event| {
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

    /// The tokio adapter's connection builder for this server: its router, on a connection
    /// configured by `config` under the LSP profile's conventions (as
    /// [`serve_stdio_with`](Self::serve_stdio_with) takes it). For a driver of your own (a
    /// listener, a connection you keep a handle to); [`serve`](Self::serve) uses it.
    pub fn builder(&self, config: Config) -> sansrpc_tokio::Builder {
        sansrpc_tokio::Builder::new()
            .config(under_lsp(config))
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
        self.serve_stdio_blocking_with(sansrpc_blocking::Options::new(Config::default()))
    }

    /// Serves as [`serve_stdio_blocking`](Self::serve_stdio_blocking) does, with the
    /// adapter's `options` (its workers, its connection's limits and timeouts…), the
    /// connection under the LSP profile's conventions, which the server sets itself. An
    /// event hook of `options` is called after the server's own (which tells dropped frames
    /// on stderr and in the editor's log).
    pub fn serve_stdio_blocking_with(&self, mut options: sansrpc_blocking::Options) -> i32 {
        options.connection = under_lsp(options.connection);
        let theirs = options.on_event.take();
        // Dropped frames told on stderr, and in the editor's log once it initialized.
        let frames = super::frames::FrameLog::default();
        options.on_event = Some(sansrpc_blocking::EventHook::new(move |peer, event| {
            if let Some(message) = frames.report(&event, std::time::Instant::now()) {
                let initialized = peer.local::<Session>().is_initialized();
                super::frames::tell(&message, initialized, |params| {
                    peer.notify_raw_queued(LOG_MESSAGE, Some(params));
                });
            }
            if let Some(theirs) = &theirs {
                theirs.call(peer, event);
            }
        }));
        match sansrpc_blocking::serve_stdio_status(Arc::new(self.blocking_router()), options) {
            Ok(status) => status,
            Err(e) => {
                eprintln!("sansrpc-lsp: the connection failed: {e}");
                1
            }
        }
    }
}
