//! The browser's objects on the driver's `Send` bounds.

use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};

// A browser page or worker without shared memory runs one thread: nothing can move a value
// to another. With shared memory (`+atomics`, wasm threads) that no longer holds.
#[cfg(target_feature = "atomics")]
compile_error!(
    "sansrpc-wasm holds JavaScript objects in the driver's `Send` values, sound only where \
     the module runs one thread: build without `+atomics`"
);

/// A value the driver's `Send + 'static` bounds (a [`Transport`](sansrpc_futures::Transport),
/// a [`Timer`](sansrpc_futures::Timer)'s sleep, a [`Client::local`](crate::Client::local))
/// can hold although it is not `Send`: a WebSocket, a `setTimeout` callback, an `Rc` of a
/// transport's state (`sansrpc-mcp`'s `fetch` transport holds its own in one).
///
/// Sound because a wasm32 module built without the `atomics` target feature has one thread
/// (no `std::thread::spawn`, no shared memory): a value never leaves the thread that made
/// it. Builds with `atomics` are refused at compile time, and [`new`](Self::new) panics
/// on any other target (where this crate builds only for its documentation's examples).
pub struct SingleThread<T>(pub(crate) T);

impl<T> SingleThread<T> {
    /// Wraps `value`.
    ///
    /// # Panics
    ///
    /// Outside wasm32 (on the host, where this crate builds only for its docs' examples):
    /// there, another thread could take the value.
    pub fn new(value: T) -> Self {
        if cfg!(not(target_arch = "wasm32")) {
            panic!("SingleThread is only for the browser's one thread (wasm32)");
        }
        SingleThread(value)
    }

    /// The value.
    pub fn get(&self) -> &T {
        &self.0
    }

    /// The value, to change.
    pub fn get_mut(&mut self) -> &mut T {
        &mut self.0
    }

    /// Unwraps the value.
    pub fn into_inner(self) -> T {
        self.0
    }
}

impl<T> std::fmt::Debug for SingleThread<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("SingleThread(..)")
    }
}

// SAFETY: see the type's documentation: there is no other thread to send it to.
unsafe impl<T> Send for SingleThread<T> {}
// SAFETY: as above, no other thread can share it.
unsafe impl<T> Sync for SingleThread<T> {}

impl<F: Future + Unpin> Future for SingleThread<F> {
    type Output = F::Output;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<F::Output> {
        Pin::new(&mut self.0).poll(cx)
    }
}
