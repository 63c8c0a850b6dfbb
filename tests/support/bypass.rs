//! A socket for the tests of writing past a parked connection's output
//! (`sansrpc::connection::bypass`): it takes bytes while it has room, as a socket's send
//! buffer does, and keeps the rest of a message it took in part, as a transport keeps it.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use sansrpc::connection::bypass::{Bypass, Bypassed};
use sansrpc::RawValue;

/// Room for `room` more bytes (none at first); what it took, and the rest of the last
/// message it took in part.
#[derive(Default)]
pub struct Socket {
    pub took: Mutex<Vec<u8>>,
    pub rest: Mutex<Vec<u8>>,
    pub room: AtomicUsize,
}

impl Socket {
    /// Room for `bytes` more from now.
    pub fn room(&self, bytes: usize) {
        self.room.store(bytes, Ordering::Relaxed);
    }

    /// What it took since the last call, as text.
    pub fn took(&self) -> String {
        String::from_utf8(std::mem::take(&mut *self.took.lock().unwrap())).unwrap()
    }

    /// The rest it kept of a message it took in part, as text.
    pub fn rest(&self) -> String {
        String::from_utf8(std::mem::take(&mut *self.rest.lock().unwrap())).unwrap()
    }
}

impl Bypass for Socket {
    fn try_write(
        &self,
        head: &[u8],
        item: &RawValue,
        _: Option<&Arc<RawValue>>,
        tail: &[u8],
    ) -> Bypassed {
        let message = [head, item.get().as_bytes(), tail].concat();
        let n = message.len().min(self.room.load(Ordering::Relaxed));
        self.room.fetch_sub(n, Ordering::Relaxed);
        self.took.lock().unwrap().extend_from_slice(&message[..n]);
        match n {
            0 => Bypassed::Not,
            n if n == message.len() => Bypassed::Whole,
            n => {
                *self.rest.lock().unwrap() = message[n..].to_vec();
                Bypassed::Part
            }
        }
    }
}
