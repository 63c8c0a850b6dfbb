//! Progress notifications (LSP's `$/progress {token, value}`, MCP's `notifications/progress
//! {progressToken, …}`): requests sent with a progress token have their deadline extended
//! by progress on that token, up to a hard cap.

#[cfg(feature = "progress")]
use core::time::Duration;

use crate::id::{Id, IdKind};
use crate::json::Scanner;
use crate::limits::Limits;
use crate::raw::RawValue;
#[cfg(feature = "progress")]
use crate::time::Instant;

#[cfg(feature = "progress")]
/// Progress reporting for one outgoing request: see [`RequestOptions::progress`].
///
/// [`RequestOptions::progress`]: super::RequestOptions::progress
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Progress {
    /// The token the peer reports progress on, an integer or a string; put it in the
    /// request's params where the peer expects it (LSP's `workDoneToken`, MCP's
    /// `_meta.progressToken`).
    pub token: Id<'static>,
    /// The hard cap: however much progress arrives, the request times out this long after
    /// it was sent.
    pub cap: Duration,
}

#[cfg(feature = "progress")]
#[derive(Debug, Clone, Copy)]
struct Watch {
    id: u64,
    base: Duration,
    cap: Instant,
}

/// Requests watched for progress, by token (a sorted ring, as the wire's other tables:
/// a B-tree of its own cost a page 5 KB of code).
#[cfg(feature = "progress")]
#[derive(Debug, Default)]
pub(super) struct Watched {
    by_token: super::SortedDeque<Id<'static>, Watch>,
}

#[cfg(feature = "progress")]
impl Watched {
    pub(super) fn insert(&mut self, token: Id<'static>, id: u64, base: Duration, cap: Instant) {
        self.by_token.insert(token, Watch { id, base, cap });
    }

    /// The request watched under `token` and its new deadline after progress at `now`.
    pub(super) fn extend(&self, token: &Id<'_>, now: Instant) -> Option<(u64, Instant)> {
        let w = self.by_token.get(&token.to_owned_id())?;
        Some((w.id, (now + w.base).min(w.cap)))
    }

    /// Forgets tokens whose request is no longer pending.
    pub(super) fn retain(&mut self, mut pending: impl FnMut(u64) -> bool) {
        self.by_token.retain(|_, w| pending(w.id));
    }

    pub(super) fn len(&self) -> usize {
        self.by_token.len()
    }

    pub(super) fn clear(&mut self) {
        self.by_token.clear();
    }
}

/// The id-like member `key` (a number or a string) of an object of params: the token of a
/// progress notification, the request named by a cancellation.
pub(super) fn member_id<'a>(params: &'a RawValue, key: &str) -> Option<Id<'a>> {
    let text = params.get();
    let mut s = Scanner::new(text.as_bytes());
    if s.peek_ws()? != b'{' {
        return None;
    }
    s.pos += 1;
    if s.peek_ws()? == b'}' {
        return None;
    }
    loop {
        let name = s.key().ok()?;
        let first = s.peek_ws()?;
        let value = s.value(0, Limits::MAX_DEPTH_CAP).ok()?;
        if name.span.of(text) == key {
            let token = value.of(text);
            return match first {
                b'"' => Some(Id::from_token(IdKind::String, &token[1..token.len() - 1])),
                b'-' | b'0'..=b'9' => Id::from_number_text(token),
                _ => None,
            };
        }
        match s.peek_ws()? {
            b',' => s.pos += 1,
            _ => return None,
        }
    }
}
