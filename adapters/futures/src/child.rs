//! A child process's stdin that can be closed while the driver holds it, and MCP's stdio
//! shutdown: close stdin, keep reading until the child exits or a grace period ends, then
//! kill it.

use std::io;
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};

use futures::io::AsyncWrite;

/// A writer (a child's stdin) that [`WriterCloser::close`] can close from outside while a
/// driver holds it: the write end is dropped, which is the child's end of input, and later
/// writes are dropped too (the peer can no longer read them).
#[derive(Debug)]
pub struct ClosableWriter<W>(Arc<Mutex<Option<W>>>);

/// Closes its [`ClosableWriter`]; from [`ClosableWriter::new`].
#[derive(Debug, Clone)]
pub struct WriterCloser<W>(Arc<Mutex<Option<W>>>);

impl<W> ClosableWriter<W> {
    /// Wraps `writer`, with the handle that closes it.
    pub fn new(writer: W) -> (Self, WriterCloser<W>) {
        let shared = Arc::new(Mutex::new(Some(writer)));
        (ClosableWriter(shared.clone()), WriterCloser(shared))
    }
}

impl<W> WriterCloser<W> {
    /// Drops the writer (closing a pipe's write end); idempotent.
    pub fn close(&self) {
        drop(self.0.lock().unwrap_or_else(|e| e.into_inner()).take());
    }
}

impl<W: AsyncWrite + Unpin> ClosableWriter<W> {
    fn with<T>(
        &self,
        closed: T,
        f: impl FnOnce(Pin<&mut W>) -> Poll<io::Result<T>>,
    ) -> Poll<io::Result<T>> {
        let mut guard = self.0.lock().unwrap_or_else(|e| e.into_inner());
        match guard.as_mut() {
            Some(w) => f(Pin::new(w)),
            None => Poll::Ready(Ok(closed)),
        }
    }
}

impl<W: AsyncWrite + Unpin> AsyncWrite for ClosableWriter<W> {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        self.with(buf.len(), |w| w.poll_write(cx, buf))
    }
    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        self.with((), |w| w.poll_flush(cx))
    }
    fn poll_close(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        self.with((), |w| w.poll_close(cx))
    }
}

#[cfg(feature = "async-io")]
pub use process::{child_process, ChildProcess};

#[cfg(feature = "async-io")]
mod process {
    use std::io;
    use std::process::ExitStatus;
    use std::time::Duration;

    use async_process::{Child, ChildStdin, ChildStdout, Command};
    use futures::FutureExt;

    use super::{ClosableWriter, WriterCloser};
    use crate::ByteStream;

    /// A child process whose connection ends the way MCP's stdio transport asks; from
    /// [`child_process`].
    #[derive(Debug)]
    pub struct ChildProcess {
        child: Child,
        stdin: WriterCloser<ChildStdin>,
    }

    /// Spawns `command` with piped stdin and stdout: the child, to shut down with
    /// [`ChildProcess::shutdown`], and the transport to connect a driver over.
    pub fn child_process(
        command: &mut Command,
    ) -> io::Result<(
        ChildProcess,
        ByteStream<ChildStdout, ClosableWriter<ChildStdin>>,
    )> {
        let (child, stdout, stdin) = crate::transport::spawn_piped(command)?;
        let (writer, stdin) = ClosableWriter::new(stdin);
        Ok((
            ChildProcess { child, stdin },
            ByteStream::new(stdout, writer),
        ))
    }

    impl ChildProcess {
        /// The child's process id.
        pub fn id(&self) -> u32 {
            self.child.id()
        }

        /// Closes the child's stdin (nothing more is sent), waits for it to exit for up to
        /// `grace` while the driver keeps reading its answers, then kills it; returns its
        /// exit status. The driver ends by itself when the child's stdout closes.
        pub async fn shutdown(mut self, grace: Duration) -> io::Result<ExitStatus> {
            self.stdin.close();
            let timer = async_io::Timer::after(grace);
            let exited = match futures::future::select(self.child.status().boxed(), timer).await {
                futures::future::Either::Left((status, _)) => Some(status?),
                futures::future::Either::Right(_) => None,
            };
            match exited {
                Some(status) => Ok(status),
                None => {
                    self.child.kill()?;
                    self.child.status().await
                }
            }
        }
    }
}
