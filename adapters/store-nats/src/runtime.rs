//! A small tokio runtime on a dedicated thread, so the synchronous [`Store`] methods can
//! be called from any thread, including a worker of another tokio runtime: the caller never
//! runs `block_on`, it waits on a std channel for the reply.
//!
//! [`Store`]: sansrpc_pubsub::store::Store

use std::future::Future;
use std::sync::mpsc;
use std::time::Duration;

use tokio::sync::oneshot;

use crate::Error;

pub(crate) struct Runtime {
    handle: tokio::runtime::Handle,
    shutdown: Option<oneshot::Sender<()>>,
    /// How long a caller waits for one operation before giving up with [`Error::Timeout`].
    pub(crate) timeout: Duration,
}

impl Runtime {
    pub(crate) fn start(name: &str, timeout: Duration) -> Result<Self, Error> {
        let (shutdown, stop) = oneshot::channel::<()>();
        let (ready, handle) = mpsc::sync_channel(1);
        std::thread::Builder::new()
            .name(name.into())
            .spawn(move || {
                let runtime = match tokio::runtime::Builder::new_current_thread()
                    .enable_all()
                    .build()
                {
                    Ok(runtime) => runtime,
                    Err(e) => {
                        let _ = ready.send(Err(e));
                        return;
                    }
                };
                let _ = ready.send(Ok(runtime.handle().clone()));
                // Runs every spawned operation until the owner is dropped; the runtime is
                // dropped here, on its own thread, never inside a caller's async context.
                let _ = runtime.block_on(stop);
            })
            .map_err(Error::Runtime)?;
        let handle = handle
            .recv()
            .map_err(|_| Error::Runtime(std::io::Error::other("runtime thread died")))?
            .map_err(Error::Runtime)?;
        Ok(Runtime {
            handle,
            shutdown: Some(shutdown),
            timeout,
        })
    }

    /// Runs `op` on the runtime thread and waits (at most the timeout) for its result.
    pub(crate) fn run<T, F>(&self, op: F) -> Result<T, Error>
    where
        F: Future<Output = Result<T, Error>> + Send + 'static,
        T: Send + 'static,
    {
        let (tx, rx) = mpsc::sync_channel(1);
        self.handle.spawn(async move {
            let _ = tx.send(op.await);
        });
        match rx.recv_timeout(self.timeout) {
            Ok(result) => result,
            Err(mpsc::RecvTimeoutError::Timeout) => Err(Error::Timeout(self.timeout)),
            Err(mpsc::RecvTimeoutError::Disconnected) => Err(Error::Runtime(
                std::io::Error::other("the runtime thread stopped"),
            )),
        }
    }

    /// Starts `task` on the runtime thread without waiting for it.
    pub(crate) fn spawn<F>(&self, task: F)
    where
        F: Future<Output = ()> + Send + 'static,
    {
        self.handle.spawn(task);
    }
}

impl Drop for Runtime {
    fn drop(&mut self) {
        if let Some(shutdown) = self.shutdown.take() {
            let _ = shutdown.send(());
        }
    }
}
