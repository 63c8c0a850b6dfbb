//! The application-level heartbeat of WebSocket seed §3.3.2, for transports without
//! native pings (TCP, Unix sockets, pipes): a `ping` notification at an interval, a `pong`
//! notification expected within a timeout, and a peer's `ping` answered with `pong`.
//!
//! ```json
//! {"jsonrpc": "2.0", "method": "ping"}
//! {"jsonrpc": "2.0", "method": "pong"}
//! ```
//!
//! [`Heartbeat`] is a state machine with time as input: the driver asks it for its next
//! deadline ([`poll_timeout`](Heartbeat::poll_timeout)), tells it when that deadline passed
//! ([`handle_timeout`](Heartbeat::handle_timeout), which says whether to send a `ping` or
//! that the peer is dead), and offers it every incoming notification
//! ([`handle_notification`](Heartbeat::handle_notification), which consumes `ping` and
//! `pong` and says whether to answer).

use core::time::Duration;

use crate::Instant;

/// The method of the heartbeat's request notification.
pub const PING: &str = "ping";
/// The method of the heartbeat's answer notification.
pub const PONG: &str = "pong";

/// When to ping and how long to wait for the pong.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct HeartbeatConfig {
    /// Time from the start (or the last pong) to the next `ping`; `None` sends no pings
    /// and only answers the peer's (a server's usual setting).
    pub interval: Option<Duration>,
    /// How long a `ping` may wait for its `pong` before the connection counts as dead.
    pub timeout: Duration,
}

impl HeartbeatConfig {
    /// Pings every `interval`, the peer dead when a pong is `timeout` late.
    pub fn ping(interval: Duration, timeout: Duration) -> Self {
        HeartbeatConfig {
            interval: Some(interval),
            timeout,
        }
    }

    /// Only answers the peer's pings.
    pub fn answer_only() -> Self {
        HeartbeatConfig {
            interval: None,
            timeout: Duration::ZERO,
        }
    }
}

impl Default for HeartbeatConfig {
    /// A ping every 30 seconds, 10 seconds for its pong (seed 000 §10.6).
    fn default() -> Self {
        HeartbeatConfig::ping(Duration::from_secs(30), Duration::from_secs(10))
    }
}

/// What a passed deadline asks of the driver.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Beat {
    /// Send a `ping` notification now.
    SendPing,
    /// The last `ping` got no `pong` in time: the peer is dead; close the connection.
    Dead,
}

/// What an incoming notification was to the heartbeat.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Heard {
    /// Not a heartbeat notification: hand it to the application as usual.
    Other,
    /// The peer's `ping`: answer with a `pong` notification.
    Ping,
    /// A `pong`: consumed.
    Pong,
}

/// The heartbeat state machine of one connection.
#[derive(Debug, Clone)]
pub struct Heartbeat {
    config: HeartbeatConfig,
    next_ping: Option<Instant>,
    pong_due: Option<Instant>,
    dead: bool,
}

impl Heartbeat {
    /// A heartbeat for a connection that starts at `now`: the first ping is due one interval
    /// later.
    pub fn new(config: HeartbeatConfig, now: Instant) -> Self {
        Heartbeat {
            config,
            next_ping: config.interval.map(|i| now + i),
            pong_due: None,
            dead: false,
        }
    }

    /// The config.
    pub fn config(&self) -> &HeartbeatConfig {
        &self.config
    }

    /// True once a pong came too late: nothing more is scheduled.
    pub fn is_dead(&self) -> bool {
        self.dead
    }

    /// The next deadline: the pong's while one is awaited, else the next ping's; `None`
    /// when dead or when only answering.
    pub fn poll_timeout(&self) -> Option<Instant> {
        if self.dead {
            return None;
        }
        self.pong_due.or(self.next_ping)
    }

    /// Acts on the deadline if it has passed at `now`.
    pub fn handle_timeout(&mut self, now: Instant) -> Option<Beat> {
        if self.dead {
            return None;
        }
        if let Some(due) = self.pong_due {
            if now >= due {
                self.dead = true;
                return Some(Beat::Dead);
            }
            return None;
        }
        match self.next_ping {
            Some(at) if now >= at => {
                self.next_ping = None;
                self.pong_due = Some(now + self.config.timeout);
                Some(Beat::SendPing)
            }
            _ => None,
        }
    }

    /// Offers an incoming notification's method at `now`. A `pong` while one is awaited
    /// schedules the next ping one interval later; a `pong` nobody asked for is consumed
    /// all the same.
    pub fn handle_notification(&mut self, method: &str, now: Instant) -> Heard {
        match method {
            PING => Heard::Ping,
            PONG => {
                if self.pong_due.take().is_some() && !self.dead {
                    self.next_ping = self.config.interval.map(|i| now + i);
                }
                Heard::Pong
            }
            _ => Heard::Other,
        }
    }
}
