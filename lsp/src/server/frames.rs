//! Frames the connection dropped (a bad header, a body that is not JSON, a frame past the
//! size limit), told where someone looks: stderr, and the editor's log
//! (`window/logMessage`) once it has initialized; at most [`BURST`] in each [`WINDOW`].

use std::sync::{Mutex, PoisonError};
use std::time::{Duration, Instant};

use sansrpc::connection::Event;

/// How many dropped frames are told in one [`WINDOW`]; the rest are counted, and the count
/// told with the next one told.
pub(crate) const BURST: u32 = 5;
/// The window of the rate limit.
pub(crate) const WINDOW: Duration = Duration::from_secs(10);

/// One connection's reports of dropped frames, rate-limited.
#[derive(Debug, Default)]
pub(crate) struct FrameLog(Mutex<State>);

#[derive(Debug, Default)]
struct State {
    window: Option<Instant>,
    told: u32,
    suppressed: u64,
}

impl FrameLog {
    /// What to tell of `event` at `now`: `None` when it is not a dropped frame, or when
    /// this window's reports are spent (it is counted then).
    pub fn report(&self, event: &Event<'_>, now: Instant) -> Option<String> {
        let what = match event {
            Event::FrameError(e) => format!("a frame was dropped: {e}"),
            Event::Rejected(rejection) => format!("a frame was refused: {rejection:?}"),
            _ => return None,
        };
        let mut state = self.0.lock().unwrap_or_else(PoisonError::into_inner);
        if state
            .window
            .map_or(true, |start| now.duration_since(start) >= WINDOW)
        {
            state.window = Some(now);
            state.told = 0;
        }
        if state.told >= BURST {
            state.suppressed += 1;
            return None;
        }
        state.told += 1;
        let suppressed = std::mem::take(&mut state.suppressed);
        Some(match suppressed {
            0 => format!("sansrpc-lsp: {what}"),
            n => format!("sansrpc-lsp: {what} ({n} more not told since)"),
        })
    }
}

/// Tells `message` on stderr, and in the editor's log through `log` when `initialized`.
pub(crate) fn tell(message: &str, initialized: bool, log: impl FnOnce(&sansrpc::RawValue)) {
    eprintln!("{message}");
    if initialized {
        let params = lsp_types::LogMessageParams {
            typ: lsp_types::MessageType::WARNING,
            message: message.to_owned(),
        };
        if let Ok(params) = super::to_raw(&params) {
            log(&params);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use sansrpc::codec::FrameError;

    #[test]
    fn at_most_a_burst_per_window_then_the_count_of_the_rest() {
        let log = FrameLog::default();
        let t0 = Instant::now();
        let dropped = Event::FrameError(FrameError::MissingLength);
        let told: Vec<_> = (0..8).map(|_| log.report(&dropped, t0)).collect();
        assert!(told[..5].iter().all(Option::is_some), "{told:?}");
        assert!(told[5..].iter().all(Option::is_none), "{told:?}");
        let later = log.report(&dropped, t0 + WINDOW).unwrap();
        assert!(later.ends_with("(3 more not told since)"), "{later}");
        assert!(log
            .report(
                &Event::Closed {
                    reason: sansrpc::connection::CloseReason::Local
                },
                t0
            )
            .is_none());
    }
}
