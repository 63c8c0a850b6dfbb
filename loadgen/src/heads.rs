//! Method subscriptions in the Ethereum shape: many WebSocket subscribers to `newHeads` on
//! one node process, sansrpc (`heads-sansrpc-server`) against jsonrpsee
//! (`heads-jsonrpsee-server`), both making a 1 KiB block every 100 ms (`chain.rs`); and the
//! same blocks through sansrpc's topic pub/sub (`heads-pubsub-server`: `rpc.subscribe` to
//! the topic `newHeads`, `rpc.notification` carrying each header as its `data`).
//!
//! Each subscriber opens its own connection, sends `eth_subscribe(["newHeads"])`, keeps the
//! id it is answered, and reads: every notification must be an `eth_subscription` carrying
//! that id and a header that parses, byte for byte the one `chain::header` makes for its
//! number, numbers one after the other (a gap counts its blocks as missed; a number not
//! after the last is an error). After a warm-up the measured window opens: the
//! notifications the subscribers count, and the server's CPU time (see [`cpu_time`]),
//! between its two ends; the server's `VmRSS` at its end. Then every
//! subscriber reads on until it has the newest block any subscriber had at the window's end
//! (what it never gets within 2 s is missed too), sends `eth_unsubscribe([id])`, and must
//! be answered `true`.

use std::cell::{Cell, RefCell};
use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::rc::Rc;
use std::time::{Duration, Instant};

use futures_util::future::join_all;
use futures_util::{SinkExt as _, StreamExt as _};
use serde::Deserialize;
use serde_json::value::RawValue;
use tokio::net::TcpStream;
use tokio::sync::watch;
use tokio_tungstenite::tungstenite::Message;
use tokio_tungstenite::WebSocketStream;

use crate::chain::{self, Header};
use crate::client::connect;

type Ws = WebSocketStream<TcpStream>;

fn io(e: impl std::fmt::Display) -> String {
    e.to_string()
}

/// One measured run against one server.
pub struct Outcome {
    /// Notifications the subscribers received within the window.
    pub delivered: u64,
    pub elapsed: Duration,
    /// The server's CPU time (user + system) within the window.
    pub cpu: Duration,
    /// The server's resident set at the window's end, in bytes.
    pub rss: u64,
    /// Blocks a subscriber never got (gaps, and what had not come 2 s after the window).
    pub missed: u64,
    /// Wrong notifications or answers, and subscribers that failed.
    pub errors: u64,
}

impl Outcome {
    pub fn per_second(&self) -> f64 {
        self.delivered as f64 / self.elapsed.as_secs_f64()
    }

    /// Server CPU microseconds per notification delivered.
    pub fn cpu_us(&self) -> f64 {
        self.cpu.as_secs_f64() * 1e6 / self.delivered.max(1) as f64
    }

    /// Notifications delivered per second of server CPU.
    pub fn per_cpu_second(&self) -> f64 {
        self.delivered as f64 / self.cpu.as_secs_f64().max(1e-9)
    }
}

/// What the subscribers of a run share: counters, and the expected bytes of recent blocks.
#[derive(Default)]
struct Shared {
    delivered: Cell<u64>,
    missed: Cell<u64>,
    errors: Cell<u64>,
    /// The newest block number any subscriber has received.
    highest: Cell<u64>,
    /// The newest block at the window's end: each subscriber reads up to it.
    target: Cell<u64>,
    /// Block number -> its header's JSON, for the blocks in flight.
    expected: RefCell<BTreeMap<u64, String>>,
}

impl Shared {
    fn error(&self, what: &str) {
        self.errors.set(self.errors.get() + 1);
        if self.errors.get() <= 3 {
            eprintln!("newHeads: {what}");
        }
    }

    /// True when `raw` is block `n`'s header exactly.
    fn is_block(&self, n: u64, raw: &str) -> bool {
        let mut expected = self.expected.borrow_mut();
        let json = expected.entry(n).or_insert_with(|| {
            serde_json::to_string(&chain::header(n)).expect("a header serializes")
        });
        let right = json == raw;
        if expected.len() > 64 {
            expected.pop_first();
        }
        right
    }
}

#[derive(Deserialize)]
struct Notification<'a> {
    jsonrpc: &'a str,
    method: &'a str,
    #[serde(borrow)]
    params: NotificationParams<'a>,
}

#[derive(Deserialize)]
struct NotificationParams<'a> {
    #[serde(borrow)]
    subscription: Option<&'a RawValue>,
    #[serde(borrow)]
    result: Option<&'a RawValue>,
    /// sansrpc's notice that the server dropped items for this subscriber.
    lagged: Option<u64>,
    /// Topic pub/sub: the topic, and the item.
    #[serde(borrow)]
    topic: Option<&'a str>,
    #[serde(borrow)]
    data: Option<&'a RawValue>,
}

/// How a subscriber subscribes, and how its notifications look.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Protocol {
    /// `eth_subscribe(["newHeads"])`, `eth_subscription` notifications with `{subscription,
    /// result}`, `eth_unsubscribe([id])` answered `true`.
    Ethereum,
    /// `rpc.subscribe({topic: "newHeads"})`, `rpc.notification` with `{topic, data}`,
    /// `rpc.unsubscribe({topic})` answered `{"unsubscribed": true}`.
    Topic,
}

impl Protocol {
    fn subscribe(self) -> &'static str {
        match self {
            Protocol::Ethereum => {
                r#"{"jsonrpc":"2.0","id":1,"method":"eth_subscribe","params":["newHeads"]}"#
            }
            Protocol::Topic => {
                r#"{"jsonrpc":"2.0","id":1,"method":"rpc.subscribe","params":{"topic":"newHeads"}}"#
            }
        }
    }

    fn unsubscribe(self, id: &str) -> String {
        match self {
            Protocol::Ethereum => format!(
                r#"{{"jsonrpc":"2.0","id":2,"method":"eth_unsubscribe","params":[{id}]}}"#
            ),
            Protocol::Topic => {
                r#"{"jsonrpc":"2.0","id":2,"method":"rpc.unsubscribe","params":{"topic":"newHeads"}}"#
                    .to_owned()
            }
        }
    }

    /// The answer to the unsubscribe, spaces left out.
    fn unsubscribed(self) -> &'static str {
        match self {
            Protocol::Ethereum => "true",
            Protocol::Topic => r#"{"unsubscribed":true}"#,
        }
    }
}

#[derive(Deserialize)]
struct Answer<'a> {
    jsonrpc: &'a str,
    id: Option<u64>,
    #[serde(borrow)]
    result: Option<&'a RawValue>,
}

/// One subscriber: its connection, its subscription id (as JSON), the last block it got.
struct Subscriber {
    ws: Ws,
    protocol: Protocol,
    id: String,
    last: Option<u64>,
}

impl Subscriber {
    /// Connects and subscribes to `newHeads`.
    async fn open(addr: SocketAddr, protocol: Protocol) -> Result<Subscriber, String> {
        let stream = connect(addr).await?;
        let (mut ws, _) = tokio_tungstenite::client_async(format!("ws://{addr}/"), stream)
            .await
            .map_err(io)?;
        ws.send(Message::text(protocol.subscribe()))
            .await
            .map_err(io)?;
        let text = next_text(&mut ws).await?;
        let answer: Answer = serde_json::from_str(&text).map_err(io)?;
        match (answer.jsonrpc, answer.id, answer.result) {
            ("2.0", Some(1), Some(id)) => Ok(Subscriber {
                id: id.get().to_owned(),
                ws,
                protocol,
                last: None,
            }),
            _ => Err(format!("the subscribe was answered {text}")),
        }
    }

    /// Checks and counts a notification.
    fn notification(&mut self, text: &str, shared: &Shared) {
        let Ok(n) = serde_json::from_str::<Notification>(text) else {
            return shared.error(&format!("not a notification: {text:.200}"));
        };
        let params = n.params;
        let (ours, item) = match self.protocol {
            Protocol::Ethereum => (
                n.method == "eth_subscription"
                    && params.subscription.map(RawValue::get) == Some(&*self.id),
                params.result,
            ),
            Protocol::Topic => (
                n.method == "rpc.notification" && params.topic == Some("newHeads"),
                params.data,
            ),
        };
        if n.jsonrpc != "2.0" || !ours {
            return shared.error(&format!("not this subscription's: {text:.200}"));
        }
        let Some(result) = item else {
            if params.lagged.is_none() {
                shared.error(&format!("a notification without a result: {text:.200}"));
            }
            return; // A lag notice: the gap counts what was dropped.
        };
        let number = serde_json::from_str::<Header>(result.get())
            .ok()
            .and_then(|h| chain::number(&h));
        let Some(number) = number else {
            return shared.error(&format!("not a header: {:.200}", result.get()));
        };
        if !shared.is_block(number, result.get()) {
            return shared.error(&format!("block {number} is not the chain's"));
        }
        match self.last {
            Some(last) if number <= last => {
                return shared.error(&format!("block {number} after block {last}"))
            }
            Some(last) => shared.missed.set(shared.missed.get() + (number - last - 1)),
            None => {}
        }
        self.last = Some(number);
        shared.delivered.set(shared.delivered.get() + 1);
        shared.highest.set(shared.highest.get().max(number));
    }

    /// Reads and checks notifications until `stop` changes; then up to the target block
    /// (within 2 s); then unsubscribes.
    async fn follow(
        mut self,
        shared: Rc<Shared>,
        mut stop: watch::Receiver<bool>,
    ) -> Result<(), String> {
        loop {
            tokio::select! {
                biased;
                _ = stop.changed() => break,
                text = next_text(&mut self.ws) => self.notification(&text?, &shared),
            }
        }
        let target = shared.target.get();
        let deadline = tokio::time::Instant::now() + Duration::from_secs(2);
        while self.last.is_none_or(|last| last < target) {
            match tokio::time::timeout_at(deadline, next_text(&mut self.ws)).await {
                Ok(text) => self.notification(&text?, &shared),
                Err(_) => {
                    let behind = target - self.last.unwrap_or(target);
                    shared.missed.set(shared.missed.get() + behind.max(1));
                    break;
                }
            }
        }
        let unsubscribe = self.protocol.unsubscribe(&self.id);
        self.ws.send(Message::text(unsubscribe)).await.map_err(io)?;
        let unsubscribed = self.protocol.unsubscribed();
        let answered = async {
            loop {
                let text = next_text(&mut self.ws).await?;
                if let Ok(answer) = serde_json::from_str::<Answer>(&text) {
                    if answer.id.is_some() {
                        let right = answer.id == Some(2)
                            && answer.result.map(|r| r.get().replace(' ', ""))
                                == Some(unsubscribed.to_owned());
                        return Ok::<_, String>((right, text));
                    }
                }
                self.notification(&text, &shared);
            }
        };
        match tokio::time::timeout(Duration::from_secs(5), answered).await {
            Ok(Ok((true, _))) => {}
            Ok(Ok((false, text))) => shared.error(&format!("the unsubscribe was answered {text}")),
            Ok(Err(e)) => return Err(e),
            Err(_) => return Err("no answer to the unsubscribe within 5 s".into()),
        }
        let _ = self.ws.close(None).await;
        Ok(())
    }
}

/// The next text message (pings and pongs skipped).
async fn next_text(ws: &mut Ws) -> Result<String, String> {
    loop {
        match ws.next().await {
            Some(Ok(Message::Text(text))) => return Ok(text.as_str().to_owned()),
            Some(Ok(Message::Ping(_) | Message::Pong(_) | Message::Frame(_))) => {}
            Some(Ok(other)) => return Err(format!("unexpected message {other:?}")),
            Some(Err(e)) => return Err(io(e)),
            None => return Err("closed by the server".into()),
        }
    }
}

/// The CPU time of process `pid` (user + system): the sum over its threads of the
/// scheduler's run time (`/proc/<pid>/task/*/schedstat`, in nanoseconds), or where the
/// kernel has no schedstat, `utime + stime` from `/proc/<pid>/stat` (in clock ticks, 10 ms
/// on most systems: too coarse for a run of a second or less).
pub fn cpu_time(pid: u32) -> Result<Duration, String> {
    match run_time(pid) {
        Some(ns) => Ok(Duration::from_nanos(ns)),
        None => stat_time(pid),
    }
}

/// The summed `schedstat` run time of `pid`'s threads, in nanoseconds.
fn run_time(pid: u32) -> Option<u64> {
    let mut total = 0;
    for task in std::fs::read_dir(format!("/proc/{pid}/task")).ok()? {
        // A thread that ended since the listing counts no more.
        let Ok(stat) = std::fs::read_to_string(task.ok()?.path().join("schedstat")) else {
            continue;
        };
        total += stat.split_whitespace().next()?.parse::<u64>().ok()?;
    }
    Some(total)
}

/// `utime + stime` of process `pid`.
fn stat_time(pid: u32) -> Result<Duration, String> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).map_err(io)?;
    // The fields after the command name, which is in parentheses: utime and stime are the
    // 14th and 15th of the whole line.
    let after = stat.rsplit_once(')').ok_or("no ')' in /proc/pid/stat")?.1;
    let fields: Vec<&str> = after.split_whitespace().collect();
    let ticks = |i: usize| fields.get(i).and_then(|f| f.parse::<u64>().ok());
    let (utime, stime) = ticks(11).zip(ticks(12)).ok_or("no utime/stime")?;
    // SAFETY: sysconf has no preconditions.
    let hz = unsafe { libc::sysconf(libc::_SC_CLK_TCK) }.max(1) as f64;
    Ok(Duration::from_secs_f64((utime + stime) as f64 / hz))
}

/// Runs the workload against the server `pid` at `addr`: `subscribers` subscriptions,
/// `warmup`, then the measured `window`.
#[allow(clippy::too_many_arguments)]
pub async fn run(
    addr: SocketAddr,
    pid: u32,
    rss: impl Fn() -> Result<u64, String>,
    protocol: Protocol,
    subscribers: usize,
    warmup: Duration,
    window: Duration,
) -> Result<Outcome, String> {
    // 50 handshakes at a time, well within any listen backlog.
    let mut subs = Vec::with_capacity(subscribers);
    let all: Vec<usize> = (0..subscribers).collect();
    for chunk in all.chunks(50) {
        for sub in join_all(chunk.iter().map(|_| Subscriber::open(addr, protocol))).await {
            subs.push(sub?);
        }
    }
    let shared = Rc::new(Shared::default());
    let (stop, stopped) = watch::channel(false);
    let follow = join_all(
        subs.into_iter()
            .map(|sub| sub.follow(shared.clone(), stopped.clone())),
    );
    let measure = async {
        tokio::time::sleep(warmup).await;
        let window = async {
            let (delivered, cpu, start) = (shared.delivered.get(), cpu_time(pid)?, Instant::now());
            tokio::time::sleep(window).await;
            Ok::<_, String>(Outcome {
                delivered: shared.delivered.get() - delivered,
                cpu: cpu_time(pid)?.saturating_sub(cpu),
                elapsed: start.elapsed(),
                rss: rss()?,
                missed: 0,
                errors: 0,
            })
        };
        let outcome = window.await;
        // The subscribers move on (to the target, then unsubscribe) whatever happened.
        shared.target.set(shared.highest.get());
        let _ = stop.send(true);
        outcome
    };
    let (results, outcome) = futures_util::join!(follow, measure);
    let mut outcome = outcome?;
    for result in results {
        if let Err(why) = result {
            shared.error(&why);
        }
    }
    outcome.missed = shared.missed.get();
    outcome.errors = shared.errors.get();
    Ok(outcome)
}
