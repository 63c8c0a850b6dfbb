//! Shared by the crate's tests: message builders, and a driver that runs an agent against
//! the task machine on virtual time (no thread, no sleep, no runtime).
#![allow(dead_code)]

pub mod shapes;

use std::collections::{BTreeMap, VecDeque};
use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll, Wake, Waker};
use std::time::Duration;

use sansrpc_a2a::agent::{Agent, BoxFuture, Host, Publisher};
use sansrpc_a2a::machine::{
    RunId, SeededIds, SendMode, Sent, StreamId, TaskConfig, TaskEvent, TaskMachine, Update,
    UpdateError, WaiterId,
};
use sansrpc_a2a::types::{
    Message, Role, SendMessageConfiguration, SendMessageRequest, SendMessageResponse,
    StreamResponse, Task, Timestamp,
};
use sansrpc_a2a::A2aError;

/// 2023-11-14T22:13:20Z: virtual time 0.
pub const BASE_MS: i64 = 1_700_000_000_000;

/// The instant `ms` virtual milliseconds in.
pub fn at(ms: u64) -> Timestamp {
    Timestamp::from_unix_millis(BASE_MS + ms as i64).unwrap()
}

/// A user's text message.
pub fn user(id: &str, text: &str) -> Message {
    Message::text(Role::User, id, text)
}

/// A user's text message continuing `task`.
pub fn follow_up(id: &str, text: &str, task: &Task) -> Message {
    let mut m = user(id, text);
    m.task_id = Some(task.id.clone());
    m.context_id = Some(task.context_id.clone());
    m
}

/// `SendMessage` params for `message`.
pub fn send(message: Message) -> SendMessageRequest {
    SendMessageRequest {
        message,
        ..SendMessageRequest::default()
    }
}

/// `SendMessage` params with a configuration.
pub fn send_with(message: Message, configuration: SendMessageConfiguration) -> SendMessageRequest {
    SendMessageRequest {
        message,
        configuration: Some(configuration),
        ..SendMessageRequest::default()
    }
}

/// Every event the machine has for its driver now.
pub fn drain(machine: &mut TaskMachine) -> Vec<TaskEvent> {
    std::iter::from_fn(|| machine.poll_event()).collect()
}

struct NoopWake;

impl Wake for NoopWake {
    fn wake(self: Arc<Self>) {}
}

/// The host of the virtual driver: updates queue up in order, timers are deadlines on
/// the virtual clock.
#[derive(Default)]
struct VirtualHost {
    state: Arc<Mutex<HostState>>,
}

#[derive(Default)]
struct HostState {
    now_ms: u64,
    updates: VecDeque<(RunId, Update)>,
    deadlines: Vec<u64>,
}

impl Host for VirtualHost {
    fn publish(&self, run: RunId, update: Update) {
        self.state.lock().unwrap().updates.push_back((run, update));
    }

    fn sleep(&self, duration: Duration) -> BoxFuture<()> {
        let mut state = self.state.lock().unwrap();
        let deadline = state.now_ms + duration.as_millis() as u64;
        state.deadlines.push(deadline);
        Box::pin(Sleep {
            clock: self.state.clone(),
            deadline,
        })
    }
}

/// A virtual sleep: ready once the virtual clock reaches its deadline.
struct Sleep {
    clock: Arc<Mutex<HostState>>,
    deadline: u64,
}

impl Future for Sleep {
    type Output = ();

    fn poll(self: Pin<&mut Self>, _: &mut Context<'_>) -> Poll<()> {
        if self.clock.lock().unwrap().now_ms >= self.deadline {
            Poll::Ready(())
        } else {
            Poll::Pending
        }
    }
}

/// What a stream received.
#[derive(Debug, Default, Clone, PartialEq)]
pub struct StreamLog {
    pub events: Vec<StreamResponse>,
    pub ended: bool,
}

/// An agent on the task machine, driven on virtual time: runs are futures polled in
/// turn, their updates fed to the machine in order, timers fired by moving the clock to
/// the earliest deadline.
pub struct Harness {
    pub machine: TaskMachine,
    agent: Arc<dyn Agent>,
    host: Arc<VirtualHost>,
    runs: Vec<(RunId, BoxFuture<()>)>,
    pub streams: BTreeMap<StreamId, StreamLog>,
    pub replies: BTreeMap<WaiterId, SendMessageResponse>,
    pub refused: Vec<UpdateError>,
    /// Runs started, stopped and finished, in order.
    pub started: Vec<RunId>,
    pub stopped: Vec<RunId>,
}

impl Harness {
    pub fn new(agent: impl Agent) -> Harness {
        Harness::with_config(agent, TaskConfig::default())
    }

    pub fn with_config(agent: impl Agent, config: TaskConfig) -> Harness {
        Harness {
            machine: TaskMachine::new(config, SeededIds::new(61)),
            agent: Arc::new(agent),
            host: Arc::new(VirtualHost::default()),
            runs: Vec::new(),
            streams: BTreeMap::new(),
            replies: BTreeMap::new(),
            refused: Vec::new(),
            started: Vec::new(),
            stopped: Vec::new(),
        }
    }

    /// Virtual milliseconds since the start.
    pub fn now_ms(&self) -> u64 {
        self.host.state.lock().unwrap().now_ms
    }

    pub fn now(&self) -> Timestamp {
        at(self.now_ms())
    }

    /// `SendMessage` or `SendStreamingMessage`, then everything that follows at once.
    pub fn send(&mut self, request: SendMessageRequest, mode: SendMode) -> Result<Sent, A2aError> {
        let sent = self.machine.handle_send(self.now(), request, mode);
        if let Ok(Sent::Stream(s)) = &sent {
            self.streams.entry(*s).or_default();
        }
        self.pump();
        sent
    }

    /// `SendMessage` run to its answer (moving the clock as far as needed).
    pub fn send_blocking(&mut self, message: Message) -> Task {
        self.answer(send(message))
    }

    /// The answer to a blocking `SendMessage` with `request`.
    pub fn answer(&mut self, request: SendMessageRequest) -> Task {
        let Ok(Sent::Waiting(waiter)) = self.send(request, SendMode::Blocking) else {
            panic!("not a waiting send");
        };
        while !self.replies.contains_key(&waiter) {
            assert!(
                self.advance(),
                "the clock cannot move and {waiter:?} has no answer"
            );
        }
        match self.replies.remove(&waiter).unwrap() {
            SendMessageResponse::Task(t) => t,
            other => panic!("not a task: {other:?}"),
        }
    }

    pub fn subscribe(&mut self, task_id: &str) -> Result<StreamId, A2aError> {
        let request = sansrpc_a2a::types::SubscribeToTaskRequest {
            id: task_id.into(),
            ..Default::default()
        };
        let s = self.machine.handle_subscribe(&request)?;
        self.streams.entry(s).or_default();
        self.pump();
        Ok(s)
    }

    pub fn cancel(&mut self, task_id: &str) -> Result<Task, A2aError> {
        let request = sansrpc_a2a::types::CancelTaskRequest {
            id: task_id.into(),
            ..Default::default()
        };
        let t = self.machine.handle_cancel(self.now(), &request);
        self.pump();
        t
    }

    pub fn task(&self, id: &str) -> Task {
        self.machine.task(id).expect("task kept").clone()
    }

    /// Runs everything that can run without the clock moving.
    pub fn pump(&mut self) {
        let waker = Waker::from(Arc::new(NoopWake));
        loop {
            let mut progress = false;
            while let Some(event) = self.machine.poll_event() {
                progress = true;
                self.on_event(event);
            }
            let mut finished = Vec::new();
            let mut cx = Context::from_waker(&waker);
            self.runs.retain_mut(|(run, future)| {
                if future.as_mut().poll(&mut cx).is_ready() {
                    finished.push(*run);
                    false
                } else {
                    true
                }
            });
            let updates: Vec<_> = self.host.state.lock().unwrap().updates.drain(..).collect();
            let now = self.now();
            for (run, update) in updates {
                progress = true;
                if let Err(e) = self.machine.handle_update(now, run, update) {
                    self.refused.push(e);
                }
            }
            for run in finished {
                progress = true;
                self.machine.handle_run_end(run);
            }
            if !progress {
                break;
            }
        }
    }

    fn on_event(&mut self, event: TaskEvent) {
        match event {
            TaskEvent::Run(run) => {
                self.started.push(run.id);
                let publisher = Publisher::new(&run, self.host.clone());
                let future = self.agent.execute(*run.clone(), publisher);
                self.runs.push((run.id, future));
            }
            TaskEvent::Stop { run, .. } => {
                self.stopped.push(run);
                self.runs.retain(|(r, _)| *r != run);
            }
            TaskEvent::Reply { waiter, response } => {
                assert!(
                    self.replies.insert(waiter, response).is_none(),
                    "two answers"
                );
            }
            TaskEvent::Stream {
                streams,
                response,
                last,
            } => {
                for s in streams {
                    let log = self.streams.get_mut(&s).expect("a stream the test opened");
                    assert!(!log.ended, "{s:?} got an event after its end");
                    log.events.push(response.clone());
                    log.ended = last;
                }
            }
        }
    }

    /// Moves the clock to the next deadline and runs what it wakes; false when no timer
    /// is set.
    pub fn advance(&mut self) -> bool {
        {
            let mut state = self.host.state.lock().unwrap();
            let now = state.now_ms;
            let Some(next) = state.deadlines.iter().copied().filter(|d| *d > now).min() else {
                state.deadlines.clear();
                return false;
            };
            state.now_ms = next;
            state.deadlines.retain(|d| *d > next);
        }
        self.pump();
        true
    }

    /// Runs until no timer is left (a run that waits forever stays).
    pub fn run_until_idle(&mut self) {
        self.pump();
        while self.advance() {}
    }

    /// How many agent runs are still going.
    pub fn running(&self) -> usize {
        self.runs.len()
    }
}
