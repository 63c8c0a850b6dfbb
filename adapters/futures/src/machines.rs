//! Blank connection machines shared by the connections of one server whose exchanges are
//! independent of each other (JSON-RPC over HTTP/1.1: one POST at a time on a connection).
//!
//! A driver of such a server lends its machine here as it waits with nothing of an exchange
//! left in it (the core's rule, [`Connection::is_blank`]), and takes one back first thing
//! on its next turn: the one lent last on its thread, whose state is still in the
//! processor's cache. With many keep-alive connections each request then touches its own
//! socket's state and the HTTP exchange's, and not a whole machine of its own, cold since
//! that connection's last request.

use std::cell::RefCell;
use std::sync::atomic::{AtomicU64, Ordering};

use sansrpc::connection::Connection;
use sansrpc::Instant;

/// Most machines kept on one thread, one a server; beyond it the oldest is dropped.
const KEPT_PER_THREAD: usize = 16;

/// Most machines of ended connections kept on one thread, of all servers; beyond it one
/// is dropped.
const SPARES_PER_THREAD: usize = 64;

thread_local! {
    /// The machine lent last on this thread, by the key of its server's [`Machines`].
    static KEPT: RefCell<Vec<(u64, Box<Connection>)>> = const { RefCell::new(Vec::new()) };
    /// Machines of ended connections, renewed ([`Connection::renew`]), by the key of their
    /// server's [`Machines`]: the server's next connection on this thread takes one rather
    /// than a new machine, its buffers grown already.
    static SPARES: RefCell<Vec<(u64, Box<Connection>)>> = const { RefCell::new(Vec::new()) };
}

/// Keeps `conn`, the machine of an ended connection of the server whose [`Machines`] have
/// `key`, for that server's next connection on this thread: renewed (nothing of its
/// connection is left but its buffers' capacity), unless this thread keeps enough of this
/// server's already (then it is dropped). A thread that keeps enough makes room by
/// dropping one of another server's (which may have stopped: its spares are never taken).
pub(crate) fn recycle(key: u64, mut conn: Box<Connection>) {
    let room = SPARES
        .try_with(|spares| {
            let mut spares = spares.borrow_mut();
            if spares.len() < SPARES_PER_THREAD {
                return true;
            }
            match spares.iter().position(|(other, _)| *other != key) {
                Some(at) => {
                    spares.swap_remove(at);
                    true
                }
                None => false,
            }
        })
        .unwrap_or(false);
    if !room {
        return;
    }
    let config = conn.config().clone();
    conn.renew(config, Instant::ZERO);
    let _ = SPARES.try_with(|spares| spares.borrow_mut().push((key, conn)));
}

/// The blank machines of one server's connections: a transport hands it to its driver
/// ([`Transport::machines`](crate::Transport::machines)) when any blank machine of the
/// server may serve any of its connections' exchanges.
///
/// Each thread keeps one, the one lent last. A driver lending its machine as it waits
/// takes the one kept in exchange (a machine lent before, whose state it does not touch),
/// and swaps them back first thing on its next turn: the exchange runs on the machine used
/// last on the thread. A driver woken on another thread, where none is kept, goes on with
/// the one it holds; every machine it may hold is blank.
#[derive(Debug)]
pub struct Machines {
    key: u64,
    /// The time base of every driver that lends and takes here: the machines' times are
    /// read from it.
    epoch: sansrpc_runtime::time::Instant,
}

impl Default for Machines {
    fn default() -> Self {
        Self::new()
    }
}

impl Machines {
    /// An empty set, for the connections of one server (of one builder and transport).
    pub fn new() -> Self {
        static NEXT: AtomicU64 = AtomicU64::new(0);
        Machines {
            key: NEXT.fetch_add(1, Ordering::Relaxed),
            epoch: sansrpc_runtime::time::Instant::now(),
        }
    }

    pub(crate) fn epoch(&self) -> sansrpc_runtime::time::Instant {
        self.epoch
    }

    /// What tells this server's machines from other servers' on a thread.
    pub(crate) fn key(&self) -> u64 {
        self.key
    }

    /// The machine of one of this server's ended connections kept on this thread
    /// ([`recycle`]), renewed: as new, its buffers grown already.
    pub(crate) fn spare(&self) -> Option<Box<Connection>> {
        SPARES
            .try_with(|spares| {
                let mut spares = spares.borrow_mut();
                let at = spares.iter().rposition(|(key, _)| *key == self.key)?;
                Some(spares.swap_remove(at).1)
            })
            .ok()
            .flatten()
    }

    /// Swaps `conn` with the machine kept on this thread: false when none is kept.
    #[inline]
    pub(crate) fn swap(&self, conn: &mut Box<Connection>) -> bool {
        KEPT.with_borrow_mut(|kept| {
            let slot = match kept.last_mut() {
                Some((key, slot)) if *key == self.key => slot,
                // Another server's was lent since, on this thread.
                _ => match kept.iter_mut().rev().find(|(key, _)| *key == self.key) {
                    Some((_, slot)) => slot,
                    None => return false,
                },
            };
            std::mem::swap(slot, conn);
            true
        })
    }

    /// Keeps `conn`, blank, for the next exchange on this thread, and puts in its place
    /// the one kept before (or, the first time, a new one).
    #[inline]
    pub(crate) fn lend(&self, conn: &mut Box<Connection>) {
        debug_assert!(conn.is_blank());
        if !self.swap(conn) {
            self.keep(conn);
        }
    }

    #[cold]
    fn keep(&self, conn: &mut Box<Connection>) {
        let spare = Box::new(Connection::new(conn.config().clone(), Instant::ZERO));
        let lent = std::mem::replace(conn, spare);
        KEPT.with_borrow_mut(|kept| {
            if kept.len() >= KEPT_PER_THREAD {
                kept.remove(0);
            }
            kept.push((self.key, lent));
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use sansrpc::connection::Config;

    fn blank() -> Box<Connection> {
        let mut config = Config::default();
        (config.framing, config.idle_timeout, config.frame_timeout) = (None, None, None);
        Box::new(Connection::new(config, Instant::ZERO))
    }

    fn kept() -> usize {
        KEPT.with_borrow(Vec::len)
    }

    #[test]
    fn an_ended_machine_is_renewed_for_its_servers_next_connection_within_a_bound() {
        let (ours, theirs) = (Machines::new(), Machines::new());
        let spares = || SPARES.with_borrow(Vec::len);
        assert!(ours.spare().is_none());
        // Another server's fill the thread's room.
        for _ in 0..SPARES_PER_THREAD {
            recycle(theirs.key(), blank());
        }
        assert_eq!(spares(), SPARES_PER_THREAD);
        // Ours take the room of theirs, one by one, never beyond the bound.
        let mut ended = blank();
        ended.handle_end_of_input(Instant::ZERO);
        assert!(!ended.is_blank());
        let kept: *const Connection = &*ended;
        recycle(ours.key(), ended);
        assert_eq!(spares(), SPARES_PER_THREAD);
        for _ in 1..SPARES_PER_THREAD {
            recycle(ours.key(), blank());
        }
        assert!(theirs.spare().is_none(), "all of theirs made room");
        // Full of ours: one more is dropped.
        recycle(ours.key(), blank());
        assert_eq!(spares(), SPARES_PER_THREAD);
        let mut taken = Vec::new();
        while let Some(conn) = ours.spare() {
            assert!(conn.is_blank(), "renewed");
            taken.push(conn);
        }
        assert_eq!(taken.len(), SPARES_PER_THREAD);
        assert!(
            taken.iter().any(|c| std::ptr::eq(&**c, kept)),
            "the ended one, reused"
        );
    }

    #[test]
    fn a_machine_lent_is_the_one_taken_back_on_its_thread() {
        let machines = Machines::new();
        let mut conn = blank();
        let lent: *const Connection = &*conn;
        assert!(!machines.swap(&mut conn), "none kept yet");
        machines.lend(&mut conn);
        assert!(!std::ptr::eq(&*conn, lent), "a spare held in its place");
        assert!(conn.is_blank());
        assert!(machines.swap(&mut conn));
        assert!(std::ptr::eq(&*conn, lent), "the one lent, back");

        // Another server's lent since: each takes back its own.
        let other = Machines::new();
        let mut theirs = blank();
        let their_lent: *const Connection = &*theirs;
        machines.lend(&mut conn);
        other.lend(&mut theirs);
        assert!(machines.swap(&mut conn));
        assert!(std::ptr::eq(&*conn, lent));
        assert!(other.swap(&mut theirs));
        assert!(std::ptr::eq(&*theirs, their_lent));
    }

    #[test]
    fn a_thread_keeps_at_most_its_bound_of_machines_whatever_the_servers() {
        let servers: Vec<Machines> = (0..KEPT_PER_THREAD + 4).map(|_| Machines::new()).collect();
        for machines in &servers {
            machines.lend(&mut blank());
            assert!(kept() <= KEPT_PER_THREAD);
        }
        assert_eq!(kept(), KEPT_PER_THREAD);
        // The oldest were dropped; the newest are kept.
        assert!(!servers[0].swap(&mut blank()));
        assert!(servers[KEPT_PER_THREAD + 3].swap(&mut blank()));
    }
}
