//! What an HTTP transport knows of the request a JSON-RPC call came in, for its handler:
//! the principal its bearer token was validated as, and the request's header fields.
//! The transport records it per call ([`HttpRequests`], one per connection, kept with
//! [`Client::local`](crate::Client::local)); a handler reads its own with
//! [`RequestContext::http`](crate::RequestContext::http).

use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError};

use foldhash::fast::RandomState;

pub use sansrpc::streamable::{HttpRequest, Principal};
use sansrpc::Id;

/// The most calls of one connection whose HTTP request is kept at once; beyond it a call's
/// request is not recorded (its handler sees `None`).
pub const MAX_RECORDED: usize = 4096;

/// The HTTP requests of a connection's calls in flight, by call id: the transport records
/// them as it hands the calls in and forgets them when their answer is written. Keyed with
/// foldhash (seeded per process): a call's id is hashed three times per call, and SipHash
/// cost more than the rest of the table's work.
#[derive(Debug, Default)]
pub struct HttpRequests(Mutex<HashMap<Id<'static>, Arc<HttpRequest>, RandomState>>);

/// The id as a key: owned, inline (no allocation) for every number and short string.
fn key(id: &Id<'_>) -> Id<'static> {
    id.to_owned_id()
}

impl HttpRequests {
    /// Records `request` for the call `id`; false when [`MAX_RECORDED`] calls are
    /// recorded already.
    pub fn record(&self, id: &Id<'_>, request: Arc<HttpRequest>) -> bool {
        let key = key(id);
        let mut map = self.0.lock().unwrap_or_else(PoisonError::into_inner);
        if map.len() >= MAX_RECORDED && !map.contains_key(&key) {
            return false;
        }
        map.insert(key, request);
        true
    }

    /// Forgets the call `id`.
    pub fn forget(&self, id: &Id<'_>) {
        self.0
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .remove(&key(id));
    }

    /// The request of the call `id`.
    pub fn get(&self, id: &Id<'_>) -> Option<Arc<HttpRequest>> {
        let map = self.0.lock().unwrap_or_else(PoisonError::into_inner);
        map.get(&key(id)).cloned()
    }

    /// How many calls are recorded.
    pub fn len(&self) -> usize {
        self.0.lock().unwrap_or_else(PoisonError::into_inner).len()
    }

    /// True when none is.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn request(tag: &str) -> Arc<HttpRequest> {
        Arc::new(HttpRequest {
            principal: None,
            headers: [("x-tag", tag)].into_iter().collect(),
            ..HttpRequest::default()
        })
    }

    #[test]
    fn at_most_max_recorded_calls_are_kept_and_a_forgotten_one_frees_its_place() {
        let calls = HttpRequests::default();
        for n in 0..MAX_RECORDED {
            assert!(calls.record(&Id::number(n as i64), request("a")));
        }
        assert_eq!(calls.len(), MAX_RECORDED);
        // Full: a new call is not recorded, its handler sees None.
        let late = Id::from("late");
        assert!(!calls.record(&late, request("b")));
        assert_eq!(calls.get(&late), None);
        assert_eq!(calls.len(), MAX_RECORDED);
        // A call already recorded may be recorded again (its request replaced).
        assert!(calls.record(&Id::number(7), request("c")));
        let seven = calls.get(&Id::number(7)).unwrap();
        assert_eq!(seven.header("X-Tag"), Some("c"));
        // Forgetting one makes room for the next.
        calls.forget(&Id::number(0));
        assert!(calls.record(&late, request("b")));
        assert_eq!(calls.get(&late).unwrap().header("x-tag"), Some("b"));
        assert_eq!(calls.len(), MAX_RECORDED);
        // Ids of different kinds with the same text are different calls.
        calls.forget(&late);
        assert!(calls.record(&Id::from("1"), request("s")));
        let one = calls.get(&Id::number(1)).unwrap();
        assert_eq!(one.header("x-tag"), Some("a"));
    }
}
