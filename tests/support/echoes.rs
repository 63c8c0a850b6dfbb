//! A subscriber that reads in bursts and asks between them, for the tests of notifications
//! written past a parked driver: every 25 items it asks an `echo` of 3 KiB (which wakes
//! the server's driver between notifications, and whose answer a small receive buffer takes
//! in part), and now and then it stops reading for a while (so the server's writes meet a
//! full socket). The answers must come, in order.

use std::io::{Read, Write};
use std::time::Duration;

use sansrpc_tokio::ws::tungstenite::{Message, WebSocket};
use serde_json::Value;

/// One subscriber's requests: asked and answered so far.
pub struct Echoes {
    /// Which subscriber (its pauses fall at its own places).
    pub who: usize,
    pub asked: u64,
    pub answered: u64,
}

impl Echoes {
    pub fn new(who: usize) -> Echoes {
        Echoes {
            who,
            asked: 0,
            answered: 0,
        }
    }

    /// After the subscriber's `seen`-th item: an `echo` every 25, a pause of 15 ms every 200.
    pub fn after_item<S: Read + Write>(&mut self, ws: &mut WebSocket<S>, seen: usize) {
        if seen % 25 == 0 {
            self.asked += 1;
            let asked = self.asked;
            let echo = format!(
                r#"{{"jsonrpc":"2.0","id":{asked},"method":"echo","params":[{asked},"{}"]}}"#,
                "e".repeat(3000)
            );
            ws.send(Message::text(echo)).unwrap();
        }
        if seen % 200 == (self.who * 60) % 200 {
            std::thread::sleep(Duration::from_millis(15));
        }
    }

    /// An answer to one of the `echo`s: the next one, whole.
    pub fn answer(&mut self, v: &Value) {
        self.answered += 1;
        let who = self.who;
        assert_eq!(v["id"], self.answered, "answers in order, subscriber {who}");
        assert_eq!(v["result"][0], self.answered);
        assert_eq!(v["result"][1].as_str().map(str::len), Some(3000));
    }

    /// True while an `echo` waits for its answer.
    pub fn waiting(&self) -> bool {
        self.answered < self.asked
    }
}
