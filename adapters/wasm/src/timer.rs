//! Sleeping on the browser's `setTimeout`.

use std::cell::{Cell, RefCell};
use std::future::Future;
use std::pin::Pin;
use std::rc::Rc;
use std::task::{Context, Poll, Waker};
use std::time::Duration;

use sansrpc_futures::Timer;
use sansrpc_runtime::time::Instant;
use wasm_bindgen::closure::Closure;
use wasm_bindgen::prelude::wasm_bindgen;
use wasm_bindgen::{JsCast, JsValue};

use crate::local::SingleThread;

#[wasm_bindgen]
extern "C" {
    // The global functions, as a page and a worker both have them.
    #[wasm_bindgen(js_name = setTimeout)]
    fn set_timeout(handler: &js_sys::Function, ms: i32) -> JsValue;

    #[wasm_bindgen(js_name = clearTimeout)]
    fn clear_timeout(handle: &JsValue);
}

/// The longest delay `setTimeout` takes (2³¹ − 1 ms, about 24.8 days); a sleep beyond it
/// wakes then and sleeps again.
const MAX_DELAY_MS: u128 = i32::MAX as u128;

/// The driver's [`Timer`] in a browser (a page or a worker): each sleep is one
/// `setTimeout`, cleared when the sleep is dropped first; the clock it is measured on is
/// `performance.now()` ([`sansrpc_runtime::time::Instant`]).
#[derive(Debug, Clone, Copy, Default)]
pub struct BrowserTimer;

impl Timer for BrowserTimer {
    fn sleep_until(&self, deadline: Instant) -> impl Future<Output = ()> + Send + 'static {
        SingleThread(Sleep::until(deadline))
    }
}

/// A future done at or after its deadline on `performance.now()`, woken by `setTimeout`
/// (cleared when the sleep is dropped first): what [`BrowserTimer`] sleeps on, for a
/// transport that keeps its own deadlines (`sansrpc-mcp`'s over `fetch`). It is not `Send`
/// (it holds the callback); [`SingleThread`] carries it where the driver asks for `Send`.
pub struct Sleep {
    deadline: Instant,
    /// Set by the callback: the armed timeout has run.
    fired: Rc<Cell<bool>>,
    waker: Rc<RefCell<Option<Waker>>>,
    /// The armed timeout's handle and its callback (kept alive until it runs or is cleared).
    armed: Option<(JsValue, Closure<dyn FnMut()>)>,
}

impl std::fmt::Debug for Sleep {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Sleep")
            .field("deadline", &self.deadline)
            .field("armed", &self.armed.is_some())
            .finish()
    }
}

impl Sleep {
    /// A sleep until `deadline` (`performance.now()`); nothing is armed until it is first
    /// polled.
    pub fn until(deadline: Instant) -> Self {
        Sleep {
            deadline,
            fired: Rc::new(Cell::new(false)),
            waker: Rc::new(RefCell::new(None)),
            armed: None,
        }
    }

    pub(crate) fn after(delay: Duration) -> Self {
        Sleep::until(Instant::now() + delay)
    }

    fn arm(&mut self, left: Duration) {
        self.disarm();
        self.fired.set(false);
        // Rounded up: a timeout that runs a little before the deadline would only arm
        // another one.
        let ms = left.as_micros().div_ceil(1000).min(MAX_DELAY_MS);
        let (fired, waker) = (Rc::clone(&self.fired), Rc::clone(&self.waker));
        let callback = Closure::<dyn FnMut()>::new(move || {
            fired.set(true);
            if let Some(waker) = waker.borrow_mut().take() {
                waker.wake();
            }
        });
        let handle = set_timeout(callback.as_ref().unchecked_ref(), ms as i32);
        self.armed = Some((handle, callback));
    }

    fn disarm(&mut self) {
        if let Some((handle, _callback)) = self.armed.take() {
            if !self.fired.get() {
                clear_timeout(&handle);
            }
        }
    }
}

impl Future for Sleep {
    type Output = ();

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        let left = self.deadline.saturating_duration_since(Instant::now());
        if left.is_zero() {
            self.disarm();
            return Poll::Ready(());
        }
        *self.waker.borrow_mut() = Some(cx.waker().clone());
        if self.armed.is_none() || self.fired.get() {
            self.arm(left);
        }
        Poll::Pending
    }
}

impl Drop for Sleep {
    fn drop(&mut self) {
        self.disarm();
    }
}
