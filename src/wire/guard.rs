//! Protection rules for a connection facing untrusted peers: a per-connection rate limit
//! (a token bucket fed by the time the caller passes in), the idle timeout and the
//! partial-frame (slowloris) timeout, and the write-stall timeout.
//!
//! All four are off by default ([`Config`](super::Config)); servers facing the internet
//! turn them on.

use alloc::vec::Vec;

use core::time::Duration;

use crate::codec::{self, Framing};
use crate::error::{code, ErrorObject};
use crate::id::Id;
use crate::message::{write_error_response, Version};
use crate::time::Instant;

use super::Wire;

/// A per-connection rate limit on the peer's requests and notifications: a token bucket
/// holding up to `burst` tokens, refilled at `per_second` tokens a second, starting full.
///
/// Each incoming request and notification (each entry of a batch counts) takes one
/// token. A request finding the bucket empty is answered by the wire itself with
/// [`RateLimit::code`] (default `-32002` "Server busy: rate limit exceeded") and never
/// surfaces as an event; a notification finding it empty is dropped and counted
/// ([`Connection::dropped_notifications`](crate::connection::Connection::dropped_notifications)). Responses and cancellation notifications are
/// never limited: they only end work already under way.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub struct RateLimit {
    /// Tokens added per second (0: the burst is all the connection ever gets).
    pub per_second: u32,
    /// Most tokens held; also the bucket's starting content. At least 1 is used.
    pub burst: u32,
    /// The error code a request over the limit is answered with (default `-32002`).
    pub code: i64,
}

impl RateLimit {
    /// `per_second` requests a second on average, bursts of up to `burst`, answered with
    /// `-32002` beyond.
    pub const fn new(per_second: u32, burst: u32) -> Self {
        RateLimit {
            per_second,
            burst,
            code: code::SERVER_BUSY,
        }
    }

    /// The same limit answering requests over it with `code` (an application code).
    pub const fn with_code(mut self, code: i64) -> Self {
        self.code = code;
        self
    }
}

/// Why the connection closed by itself ([`Event::Expired`](crate::connection::Event::Expired)).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Expiry {
    /// Nothing came from the peer for [`Config::idle_timeout`](super::Config) while
    /// nothing was in flight either way.
    Idle,
    /// A frame stayed partly received for [`Config::frame_timeout`](super::Config) (a
    /// slowloris peer).
    PartialFrame,
    /// Output waited to be written for [`Config::write_stall_timeout`](super::Config) with
    /// no byte written (a peer that does not read).
    WriteStall,
}

/// Bytes a peer must take, counted from when a write stall began, to restart its clock (or
/// all the output that waited at any time of the stall, when that is less). A peer that
/// does not read still lets its kernel take bytes: its receive queue of small segments,
/// compacted, frees room and the window reopens, once or a few times, whenever a window
/// probe or the next segment finds it (measured on loopback: 32-64 KiB taken two seconds
/// into a stall by a peer that never read, up to 127 KiB behind 39-byte writes; seconds
/// or more into the stall on a loaded machine, the close then slipping by as much). The
/// kernel's receive buffer bounds those trickles (128 KiB by default on Linux); a peer
/// that reads takes its whole buffer again and again.
pub(super) const STALL_PROGRESS: usize = 256 * 1024;

/// Output held, with writes blocked, beyond which input waits: a peer that does not read
/// gets no more answers computed for it than this while its write stall runs.
pub(super) const STALLED_OUTPUT: usize = 64 * 1024;

/// One micro-token: tokens are counted in millionths so refills need no floats.
const MICRO: u64 = 1_000_000;

/// Where the frame the decoder holds stands. Only the peer's time counts: while the
/// wire itself holds input back (its output or event queue full, its in-flight table
/// full), the clock is paused, and it goes on from where it stood once input is taken
/// again.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
enum FrameClock {
    /// No frame partly received.
    #[default]
    Whole,
    /// One is, and has been arriving for this long, noticed (or resumed after a pause) at
    /// an instant we were not told: the next time given stamps it.
    Unstamped(Duration),
    /// One is, and its clock runs as if it started at this instant.
    Since(Instant),
    /// One is, while the wire holds input back; it had been arriving for this long.
    Paused(Duration),
}

/// A write stall under way: since when, the output taken by then, and the most output
/// that waited since.
#[derive(Debug, Clone, Copy)]
struct Stall {
    since: Instant,
    taken: usize,
    most: usize,
}

/// The guard's state inside an [`Wire`]. Laid out in this order: what every write reads
/// (the write stall, the frame clock, whether something was in flight) in the first cache
/// line, the rate limit and idle clock after.
#[derive(Debug, Default)]
#[repr(C)]
pub(super) struct Guard {
    frame: FrameClock,
    /// Since when output has been waiting with too little of it written; `None` while none
    /// waits.
    write_stalled: Option<Stall>,
    /// Something was in flight when last looked at: the idle clock restarts once it is not.
    was_busy: bool,
    /// The last input from the peer, or the moment the connection last stopped being busy;
    /// `None` until the wire is first given the time.
    last_activity: Option<Instant>,
    /// Micro-tokens in the bucket, and when it was last refilled; `None` until first used.
    bucket: Option<(u64, Instant)>,
    dropped_notifications: u64,
    limited_requests: u64,
}

impl Guard {
    /// Applies `limit` to one incoming request (`is_request`) or notification.
    #[inline]
    pub(super) fn admit_call(
        &mut self,
        limit: Option<&RateLimit>,
        now: Instant,
        is_request: bool,
    ) -> Admission {
        match limit {
            None => Admission::Admit,
            Some(limit) => self.admit_limited(limit, now, is_request),
        }
    }

    /// [`admit_call`](Guard::admit_call) under a rate limit.
    fn admit_limited(&mut self, limit: &RateLimit, now: Instant, is_request: bool) -> Admission {
        if self.admit(limit, now) {
            Admission::Admit
        } else if is_request {
            self.limited_requests += 1;
            Admission::Refuse(limit.code)
        } else {
            self.dropped_notifications += 1;
            Admission::Drop
        }
    }

    /// The decoder handed out a frame (or an error): no frame is partly received now.
    pub(super) fn frame_done(&mut self) {
        self.frame = FrameClock::Whole;
    }

    /// Takes one token; false when the bucket is empty.
    fn admit(&mut self, limit: &RateLimit, now: Instant) -> bool {
        let cap = u64::from(limit.burst.max(1)) * MICRO;
        let (tokens, last) = self.bucket.get_or_insert((cap, now));
        let elapsed = now.saturating_duration_since(*last);
        let refill = elapsed.as_nanos() * u128::from(limit.per_second) / 1_000;
        *tokens = (u128::from(*tokens) + refill).min(u128::from(cap)) as u64;
        *last = now.max(*last);
        if *tokens >= MICRO {
            *tokens -= MICRO;
            true
        } else {
            false
        }
    }
}

/// What the wire decides about one incoming call under the rate limit.
pub(super) enum Admission {
    Admit,
    /// Answer the request with this code.
    Refuse(i64),
    /// Drop the notification.
    Drop,
}

impl Wire {
    /// How many of the peer's notifications the rate limit ([`Config::rate_limit`](super::Config::rate_limit)) dropped.
    pub(crate) fn dropped_notifications(&self) -> u64 {
        self.guard.dropped_notifications
    }

    /// How many of the peer's requests the rate limit ([`Config::rate_limit`](super::Config::rate_limit)) answered
    /// with its error.
    pub(crate) fn rate_limited_requests(&self) -> u64 {
        self.guard.limited_requests
    }

    /// Notes the driver's latest write attempt at `now`: `wrote` when at least one byte went
    /// out, `pending` when output (the wire's or the driver's own) still waits to be
    /// written. Output pending while less than 256 KiB of it (or of the most output that
    /// waited meanwhile, if less) is written for
    /// [`Config::write_stall_timeout`](super::Config::write_stall_timeout) closes the
    /// connection at [`Wire::handle_timeout`] ([`Expiry::WriteStall`]); drivers call
    /// this after every write attempt and sleep until [`Wire::poll_timeout`] as usual.
    /// A driver whose writes block calls it with `pending` before a write that may block.
    ///
    /// The bytes written are counted from the output the driver takes (what
    /// [`transmitted`](Wire::transmitted) counts); a driver that keeps output of its
    /// own should report `wrote` only for writes that emptied its buffer.
    pub(crate) fn handle_write(&mut self, wrote: bool, pending: bool, now: Instant) {
        self.now = self.now.max(now);
        // Nearly always nothing waits, before and after: no stall to start, keep or end.
        if pending || self.guard.write_stalled.is_some() {
            self.note_stall(wrote, pending, now);
        }
        // Output written may have made room for input held back: the frame clock resumes.
        // (Whether something is in flight is not asked: a request in flight comes with
        // input, and ours with a send, each noted where it comes. With many connections the
        // tables it reads are cache lines a write would read for nothing.)
        if !self.closed {
            self.guard_frame(Some(now));
        }
    }

    /// The write-stall part of [`handle_write`](Wire::handle_write).
    fn note_stall(&mut self, wrote: bool, pending: bool, now: Instant) {
        let total = self.out.total() as usize;
        let buffered = self.buffered_output();
        let start = Stall {
            since: now,
            taken: total,
            most: buffered,
        };
        self.guard.write_stalled = match (pending, self.guard.write_stalled) {
            (false, _) => None,
            (true, None) => Some(start),
            (true, Some(mut stall)) => {
                // Reading restarts the clock, not the kernel's trickle: 256 KiB taken, or as
                // much as ever waited during the stall (a peer that keeps up with small
                // output). The most is what waited before this write too: a stall that began
                // small and grew is judged by what it grew to.
                stall.most = stall.most.max(buffered);
                let taken = total.wrapping_sub(stall.taken);
                if wrote && taken >= STALL_PROGRESS.min(stall.most.max(1)) {
                    Some(start)
                } else {
                    Some(stall)
                }
            }
        };
    }

    /// True while writes wait with more than [`STALLED_OUTPUT`] queued: input is held back.
    pub(super) fn write_blocked(&self) -> bool {
        self.guard.write_stalled.is_some() && self.buffered_output() > STALLED_OUTPUT
    }

    fn busy(&self) -> bool {
        !self.outgoing.is_empty() || !self.incoming.is_empty()
    }

    /// Notes input from the peer (`any`: at least one byte or message) at `now`.
    pub(super) fn guard_input(&mut self, any: bool, now: Instant) {
        if any || self.guard.last_activity.is_none() {
            self.guard.last_activity = Some(now);
        }
        self.guard_note(Some(now));
    }

    /// Notes whether something is in flight, and whether a frame is partly received (only
    /// once the decoder's complete frames are all processed: frames waiting on us are not
    /// the peer's delay). `now` is `None` when the caller gave no time. While the wire
    /// holds input back, the partial frame's clock is paused.
    #[inline(always)]
    pub(super) fn guard_note(&mut self, now: Option<Instant>) {
        self.note_busy();
        self.guard_frame(now);
    }

    /// Notes whether something is in flight (the idle clock restarts once nothing is).
    #[inline(always)]
    pub(super) fn note_busy(&mut self) {
        if !self.guard.was_busy {
            self.guard.was_busy = self.busy();
        }
    }

    /// The partial frame's part of [`guard_note`](Wire::guard_note).
    #[inline(always)]
    fn guard_frame(&mut self, now: Option<Instant>) {
        // Nearly always, no frame is partly received: then nothing else is asked.
        if self.decoder.as_ref().is_some_and(|d| d.in_frame()) {
            self.note_partial_frame(now);
        } else {
            self.guard.frame = FrameClock::Whole;
        }
    }

    /// [`guard_note`](Wire::guard_note) with a frame partly received.
    #[inline(never)]
    fn note_partial_frame(&mut self, now: Option<Instant>) {
        let held = !self.has_room();
        self.guard.frame = match (held, self.guard.frame) {
            (true, FrameClock::Since(t)) => {
                // Paused now; without the time, at the last instant known (the peer gets
                // the difference, never loses it).
                let at = now.unwrap_or(self.now);
                FrameClock::Paused(at.saturating_duration_since(t))
            }
            (true, FrameClock::Unstamped(e) | FrameClock::Paused(e)) => FrameClock::Paused(e),
            (true, FrameClock::Whole) => FrameClock::Paused(Duration::ZERO),
            (false, FrameClock::Since(t)) => FrameClock::Since(t),
            (false, FrameClock::Whole) => resume(Duration::ZERO, now),
            (false, FrameClock::Unstamped(e) | FrameClock::Paused(e)) => resume(e, now),
        };
    }

    /// Marks the connection busy (a request of ours is registered).
    pub(super) fn guard_busy(&mut self) {
        self.guard.was_busy = true;
    }

    /// True when the guard learned something without being told the time, and wants
    /// [`Wire::handle_timeout`] called at once to be told.
    fn needs_stamp(&self) -> bool {
        let idle = self.config.idle_timeout.is_some()
            && (self.guard.last_activity.is_none() || (self.guard.was_busy && !self.busy()));
        let frame = self.config.frame_timeout.is_some()
            && matches!(self.guard.frame, FrameClock::Unstamped(_));
        idle || frame
    }

    fn idle_deadline(&self) -> Option<Instant> {
        let timeout = self.config.idle_timeout?;
        // Whatever comes in flight is noted as it comes (`was_busy`, cleared only once
        // nothing is): a connection that was not busy is not, and its tables, cache lines a
        // driver's every turn would read for nothing with many connections, are not asked.
        debug_assert!(self.guard.was_busy || !self.busy());
        if self.guard.was_busy && self.busy() {
            return None;
        }
        Some(self.guard.last_activity? + timeout)
    }

    fn frame_deadline(&self) -> Option<Instant> {
        match self.guard.frame {
            FrameClock::Since(t) => Some(t + self.config.frame_timeout?),
            _ => None,
        }
    }

    fn write_deadline(&self) -> Option<Instant> {
        Some(self.guard.write_stalled?.since + self.config.write_stall_timeout?)
    }

    /// No deadline of the guard's is armed or can arm by itself: no idle timeout, no frame
    /// partly received, no output stalled.
    pub(super) fn guard_at_rest(&self) -> bool {
        self.config.idle_timeout.is_none()
            && matches!(self.guard.frame, FrameClock::Whole)
            && self.guard.write_stalled.is_none()
    }

    /// The earliest of the guard's deadlines (the last instant the wire was given
    /// when it needs the time at once).
    pub(super) fn guard_deadline(&self) -> Option<Instant> {
        if self.closed {
            None
        } else if self.needs_stamp() {
            Some(self.now)
        } else {
            let reading = min(self.idle_deadline(), self.frame_deadline());
            min(reading, self.write_deadline())
        }
    }

    /// Fires the guard's deadlines at `now`: records the time where it was missing, then
    /// closes the wire when a timeout passed (records [`Expired`](super::Record::Expired), then
    /// [`Closed`](super::Record::Closed)).
    pub(super) fn guard_timeout(&mut self, now: Instant) {
        if self.closed {
            return;
        }
        self.guard_note(Some(now));
        if self.guard.last_activity.is_none() || (self.guard.was_busy && !self.busy()) {
            // Still busy (the first stamp, with work in flight): noted, so the idle clock
            // restarts once the work is over.
            self.guard.was_busy = self.busy();
            self.guard.last_activity = Some(now);
        }
        let expiry = if self.write_deadline().is_some_and(|d| d <= now) {
            Expiry::WriteStall
        } else if self.frame_deadline().is_some_and(|d| d <= now) {
            Expiry::PartialFrame
        } else if self.idle_deadline().is_some_and(|d| d <= now) {
            Expiry::Idle
        } else {
            return;
        };
        self.events.push_back(super::Record::Expired(expiry));
        self.close(now);
    }
}

/// Writes what a server at its connection limit sends on a connection it refuses before
/// giving it a connection: one error response with id `null`, `-32002` "Server busy: too
/// many connections" (its code as `profile` has it: [`Profile::own_code`]), framed with
/// `framing` (`None`: the bare message).
///
/// [`Profile::own_code`]: super::Profile::own_code
pub fn write_refusal(profile: super::Profile, framing: Option<Framing>, out: &mut Vec<u8>) {
    let code = profile.own_code(code::SERVER_BUSY);
    let error = ErrorObject::fixed(code, "Server busy: too many connections");
    let mut body = Vec::new();
    write_error_response(&mut body, Version::V2, &Id::NULL, &error);
    match framing {
        Some(f) => codec::encode_frame(f, &body, out),
        None => out.extend_from_slice(&body),
    }
}

/// The clock of a partial frame that had been arriving for `elapsed` and goes on now (or,
/// without the time, as soon as the wire is told it).
fn resume(elapsed: Duration, now: Option<Instant>) -> FrameClock {
    match now {
        Some(now) => FrameClock::Since(Instant::from_duration(
            now.since_epoch().saturating_sub(elapsed),
        )),
        None => FrameClock::Unstamped(elapsed),
    }
}

/// The earlier of two optional instants.
pub(super) fn min(a: Option<Instant>, b: Option<Instant>) -> Option<Instant> {
    match (a, b) {
        (Some(a), Some(b)) => Some(a.min(b)),
        (a, b) => a.or(b),
    }
}
