//! A child process as a connection, with MCP's stdio shutdown: close its stdin, keep reading
//! until it exits or a grace period ends, then kill it.

use std::io;
use std::process::ExitStatus;
use std::time::Duration;

use sansrpc_futures::{ByteStream, ClosableWriter, WriterCloser};
use tokio::process::{Child, ChildStdin, Command};
use tokio::task::JoinHandle;
use tokio_util::compat::{Compat, TokioAsyncReadCompatExt, TokioAsyncWriteCompatExt};

use crate::{spawn, Builder, Client, ShutdownHandle};

/// How long the driver is given to finish after the child exited (its stdout closed).
const DRIVER_LINGER: Duration = Duration::from_secs(1);

/// A child process spoken to over its stdin and stdout, from [`spawn_child`].
#[derive(Debug)]
pub struct ChildProcess {
    /// Calls the child (as the `client` of every connection of this crate).
    pub client: Client,
    shutdown: ShutdownHandle,
    driver: JoinHandle<io::Result<()>>,
    child: Child,
    stdin: WriterCloser<Compat<ChildStdin>>,
}

/// Spawns `command` with piped stdin and stdout and runs a connection to it on the current
/// tokio runtime (the LSP and MCP client case); [`ChildProcess::shutdown`] ends it the way
/// MCP's stdio transport asks.
pub fn spawn_child(builder: Builder, command: &mut Command) -> io::Result<ChildProcess> {
    let (child, stdout, stdin) = crate::spawn_piped(command)?;
    let (writer, stdin) = ClosableWriter::new(stdin.compat_write());
    let spawned = spawn(builder, ByteStream::new(stdout.compat(), writer));
    Ok(ChildProcess {
        client: spawned.client,
        shutdown: spawned.shutdown,
        driver: spawned.driver,
        child,
        stdin,
    })
}

/// Lends the child's [`client`](ChildProcess::client), as every connection of this crate
/// does ([`Spawned`](crate::Spawned)).
impl AsRef<crate::Client> for ChildProcess {
    fn as_ref(&self) -> &crate::Client {
        &self.client
    }
}

impl ChildProcess {
    /// The child's process id, while it runs.
    pub fn id(&self) -> Option<u32> {
        self.child.id()
    }

    /// The child's stderr, when `command` piped it (`Stdio::piped()`); once.
    pub fn take_stderr(&mut self) -> Option<tokio::process::ChildStderr> {
        self.child.stderr.take()
    }

    /// The child's exit status if it has exited, without waiting.
    pub fn try_status(&mut self) -> io::Result<Option<ExitStatus>> {
        self.child.try_wait()
    }

    /// Shuts down gracefully and returns the child's exit status: closes the child's stdin
    /// (nothing more is sent), keeps reading its answers and notifications until it exits
    /// or `grace` passes, then kills it. Calls still pending when its output ends fail with
    /// [`CallError::is_closed`](sansrpc::method::CallError::is_closed).
    pub async fn shutdown(mut self, grace: Duration) -> io::Result<ExitStatus> {
        // Dropping the pipe's write end is the child's end of input.
        self.stdin.close();
        let status = match tokio::time::timeout(grace, self.child.wait()).await {
            Ok(status) => status?,
            Err(_) => {
                self.child.start_kill()?;
                self.child.wait().await?
            }
        };
        // The child's stdout is closed (unless it handed it to a process of its own): the
        // driver reads the rest and ends; it is stopped if it does not.
        let mut driver = self.driver;
        if tokio::time::timeout(DRIVER_LINGER, &mut driver)
            .await
            .is_err()
        {
            self.shutdown.shutdown(Duration::ZERO);
            if tokio::time::timeout(DRIVER_LINGER, &mut driver)
                .await
                .is_err()
            {
                driver.abort();
            }
        }
        Ok(status)
    }
}
