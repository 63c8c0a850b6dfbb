//! What an HTTP transport knows of the request a JSON-RPC call came in, for its handler:
//! the principal its bearer token was validated as, and the request's header fields.
//! The transport records it per call ([`HttpRequests`], one per connection, kept with
//! [`Client::local`](crate::Client::local)); a handler reads its own with
//! [`RequestContext::http`](crate::RequestContext::http).

use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError};

use foldhash::fast::RandomState;

pub use sansrpc::codec::http::{HttpRequest, Principal};
use sansrpc::Id;

/// The most calls of one connection whose HTTP request is kept at once; beyond it a call's
/// request is not recorded (its handler sees `None`).
pub const MAX_RECORDED: usize = 4096;

/// The HTTP requests of a connection's calls in flight, by call id: the transport records
/// them as it hands the calls in and forgets them when their answer is written.
#[derive(Debug, Default)]
pub struct HttpRequests(Mutex<Table>);

/// Up to [`FEW`] calls in a list searched in order: a session's calls are most often one or
/// a few at a time, and comparing an id or two costs less than hashing it three times per
/// call. Beyond that, a map keyed with foldhash (seeded per process; SipHash cost more than
/// the rest of the table's work), until the connection has no call in flight again.
#[derive(Debug)]
enum Table {
    Few(Vec<(Id<'static>, Arc<HttpRequest>)>),
    Many(HashMap<Id<'static>, Arc<HttpRequest>, RandomState>),
}

/// The most calls [`Table::Few`] holds.
const FEW: usize = 8;

impl Default for Table {
    fn default() -> Self {
        Table::Few(Vec::new())
    }
}

impl Table {
    fn len(&self) -> usize {
        match self {
            Table::Few(few) => few.len(),
            Table::Many(many) => many.len(),
        }
    }

    fn get(&self, id: &Id<'_>) -> Option<&Arc<HttpRequest>> {
        match self {
            Table::Few(few) => few.iter().find(|(k, _)| k == id).map(|(_, r)| r),
            Table::Many(many) => many.get(&key(id)),
        }
    }
}

/// The id as a key: owned, inline (no allocation) for every number and short string.
fn key(id: &Id<'_>) -> Id<'static> {
    id.to_owned_id()
}

impl HttpRequests {
    /// Records `request` for the call `id`; false when [`MAX_RECORDED`] calls are
    /// recorded already.
    pub fn record(&self, id: &Id<'_>, request: Arc<HttpRequest>) -> bool {
        let mut table = self.0.lock().unwrap_or_else(PoisonError::into_inner);
        match &mut *table {
            Table::Few(few) => {
                if let Some((_, old)) = few.iter_mut().find(|(k, _)| k == id) {
                    *old = request;
                } else if few.len() < FEW {
                    few.push((key(id), request));
                } else {
                    let mut many: HashMap<_, _, RandomState> = few.drain(..).collect();
                    many.insert(key(id), request);
                    *table = Table::Many(many);
                }
            }
            Table::Many(many) => {
                let key = key(id);
                if many.len() >= MAX_RECORDED && !many.contains_key(&key) {
                    return false;
                }
                many.insert(key, request);
            }
        }
        true
    }

    /// Forgets the call `id`.
    pub fn forget(&self, id: &Id<'_>) {
        let mut table = self.0.lock().unwrap_or_else(PoisonError::into_inner);
        match &mut *table {
            Table::Few(few) => {
                if let Some(at) = few.iter().position(|(k, _)| k == id) {
                    few.swap_remove(at);
                }
            }
            Table::Many(many) => {
                many.remove(&key(id));
                if many.is_empty() {
                    *table = Table::default();
                }
            }
        }
    }

    /// The request of the call `id`.
    pub fn get(&self, id: &Id<'_>) -> Option<Arc<HttpRequest>> {
        let table = self.0.lock().unwrap_or_else(PoisonError::into_inner);
        table.get(id).cloned()
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

    #[test]
    fn a_few_calls_and_many_keep_the_same_table() {
        let calls = HttpRequests::default();
        // Past the few kept in a list and back: every call keeps its own request.
        for round in 0..2 {
            for n in 0..3 * FEW as i64 {
                assert!(calls.record(&Id::number(n), request(&n.to_string())));
                assert!(calls.record(&Id::from(n.to_string().as_str()), request("s")));
                assert_eq!(calls.len(), 2 * (n as usize + 1), "round {round}");
                for m in 0..=n {
                    let got = calls.get(&Id::number(m)).unwrap();
                    assert_eq!(got.header("x-tag"), Some(m.to_string().as_str()));
                }
            }
            // Recorded again: replaced, not added.
            assert!(calls.record(&Id::number(0), request("again")));
            assert_eq!(
                calls.get(&Id::number(0)).unwrap().header("x-tag"),
                Some("again")
            );
            assert_eq!(calls.len(), 6 * FEW);
            for n in 0..3 * FEW as i64 {
                calls.forget(&Id::number(n));
                assert_eq!(calls.get(&Id::number(n)), None);
                calls.forget(&Id::from(n.to_string().as_str()));
            }
            assert!(calls.is_empty());
            assert!(matches!(*calls.0.lock().unwrap(), Table::Few(_)));
        }
        // Forgetting a call never recorded changes nothing.
        calls.forget(&Id::number(1));
        assert!(calls.is_empty());
    }
}
