//! What an outer layer attached to an HTTP request, carried to the handlers of the calls it
//! brought ([`HttpRequest::extensions`](super::HttpRequest::extensions)).

use core::any::Any;
use core::fmt;
use std::sync::Arc;

/// A value the adapter attached to a request for its handlers, opaque to the core: the
/// tokio adapter's tower services put the request's `http::Extensions` here (what an auth
/// or tracing layer in front of them inserted); a handler takes it back with
/// [`get`](Self::get). Empty by default. Two are equal when they hold the same value (the
/// same allocation) or are both empty.
#[derive(Clone, Default)]
pub struct Extensions(Option<Arc<dyn Any + Send + Sync>>);

impl Extensions {
    /// Extensions holding `value`.
    pub fn new(value: impl Any + Send + Sync) -> Self {
        Extensions(Some(Arc::new(value)))
    }

    /// The value held, when it is a `T`.
    pub fn get<T: Any>(&self) -> Option<&T> {
        self.0.as_deref().and_then(|v| v.downcast_ref())
    }

    /// True when nothing is held.
    pub fn is_empty(&self) -> bool {
        self.0.is_none()
    }
}

impl fmt::Debug for Extensions {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(if self.0.is_some() {
            "Extensions(..)"
        } else {
            "Extensions(none)"
        })
    }
}

impl PartialEq for Extensions {
    fn eq(&self, other: &Self) -> bool {
        match (&self.0, &other.0) {
            (Some(a), Some(b)) => Arc::ptr_eq(a, b),
            (None, None) => true,
            _ => false,
        }
    }
}

impl Eq for Extensions {}
