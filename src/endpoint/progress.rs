//! `$/progress` (LSP's shape, `{"token": …, "value": …}`): requests sent with a progress
//! token have their deadline extended by progress on that token, up to a hard cap.

use alloc::collections::BTreeMap;
use core::time::Duration;

use crate::json::Scanner;
use crate::limits::Limits;
use crate::raw::RawValue;
use crate::time::Instant;

/// Progress reporting for one outgoing request: see [`RequestOptions::progress`].
///
/// [`RequestOptions::progress`]: super::RequestOptions::progress
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Progress {
    /// The token the peer reports progress on (an integer; put it in the request's params
    /// where the peer expects it, e.g. LSP's `workDoneToken`).
    pub token: i64,
    /// The hard cap: however much progress arrives, the request times out this long after
    /// it was sent.
    pub cap: Duration,
}

#[derive(Debug, Clone, Copy)]
struct Watch {
    id: u64,
    base: Duration,
    cap: Instant,
}

/// Requests watched for progress, by token.
#[derive(Debug, Default)]
pub(super) struct Watched {
    by_token: BTreeMap<i64, Watch>,
}

impl Watched {
    pub fn insert(&mut self, token: i64, id: u64, base: Duration, cap: Instant) {
        self.by_token.insert(token, Watch { id, base, cap });
    }

    /// The request watched under `token` and its new deadline after progress at `now`.
    pub fn extend(&self, token: i64, now: Instant) -> Option<(u64, Instant)> {
        let w = self.by_token.get(&token)?;
        Some((w.id, (now + w.base).min(w.cap)))
    }

    /// Forgets tokens whose request is no longer pending.
    pub fn retain(&mut self, mut pending: impl FnMut(u64) -> bool) {
        self.by_token.retain(|_, w| pending(w.id));
    }

    pub fn len(&self) -> usize {
        self.by_token.len()
    }

    pub fn clear(&mut self) {
        self.by_token.clear();
    }
}

/// The integer `token` member of `$/progress` params.
pub(super) fn progress_token(params: &RawValue) -> Option<i64> {
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
        let key = s.key().ok()?;
        let value = s.value(0, Limits::MAX_DEPTH_CAP).ok()?;
        if key.span.of(text) == "token" {
            return value.of(text).parse().ok();
        }
        match s.peek_ws()? {
            b',' => s.pos += 1,
            _ => return None,
        }
    }
}
