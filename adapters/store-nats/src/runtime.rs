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

    /// Runs `op` on the runtime thread and waits for its result, at most the timeout: past
    /// it the operation is dropped there (not left running beside the operations after it,
    /// which the store's callers order), and the caller gets [`Error::Timeout`].
    pub(crate) fn run<T, F>(&self, op: F) -> Result<T, Error>
    where
        F: Future<Output = Result<T, Error>> + Send + 'static,
        T: Send + 'static,
    {
        let (tx, rx) = mpsc::sync_channel(1);
        let timeout = self.timeout;
        self.handle.spawn(async move {
            let result = match tokio::time::timeout(timeout, op).await {
                Ok(result) => result,
                Err(_) => Err(Error::Timeout(timeout)),
            };
            let _ = tx.send(result);
        });
        // The runtime's timer answers in time; this bound is only for a runtime thread that
        // cannot (it stopped, or something blocks it).
        match rx.recv_timeout(timeout.saturating_add(Duration::from_secs(5))) {
            Ok(result) => result,
            Err(mpsc::RecvTimeoutError::Timeout) => Err(Error::Timeout(timeout)),
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

#[cfg(test)]
mod tests {
    use std::sync::atomic::{AtomicBool, Ordering};
    use std::sync::Arc;

    use super::*;

    /// Was a bug: an operation past the timeout went on running on the runtime thread after
    /// its caller was told it failed, beside the operations after it (a save's later steps
    /// interleaved with the next save's; an append reported failed landed anyway).
    #[test]
    fn an_operation_past_the_timeout_is_dropped_not_left_running() {
        let runtime = Runtime::start("timeout-test", Duration::from_millis(50)).unwrap();
        let finished = Arc::new(AtomicBool::new(false));
        let flag = Arc::clone(&finished);
        let slow = async move {
            tokio::time::sleep(Duration::from_millis(200)).await;
            flag.store(true, Ordering::SeqCst);
            Ok(())
        };
        assert!(matches!(runtime.run(slow), Err(Error::Timeout(_))));
        // Well past when it would have finished: the runtime still runs (a quick operation
        // is answered), and the slow one never did.
        std::thread::sleep(Duration::from_millis(400));
        assert_eq!(runtime.run(async { Ok(7) }).unwrap(), 7);
        assert!(!finished.load(Ordering::SeqCst));
    }
}
