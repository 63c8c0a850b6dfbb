//! A fixed pool of handler threads, and joining threads with a deadline.

use std::sync::mpsc::{self, Receiver, Sender};
use std::sync::{Arc, Mutex};
use std::thread::{self, JoinHandle};
use std::time::{Duration, Instant};

/// One unit of work for a handler thread.
pub(crate) type Job = Box<dyn FnOnce() + Send>;

/// `size` threads taking jobs from one queue.
#[derive(Debug)]
pub(crate) struct Pool {
    jobs: Option<Sender<Job>>,
    workers: Vec<JoinHandle<()>>,
}

impl Pool {
    pub fn new(size: usize) -> std::io::Result<Pool> {
        let (jobs, queue) = mpsc::channel::<Job>();
        let queue = Arc::new(Mutex::new(queue));
        let workers = (0..size.max(1))
            .map(|_| {
                let queue = Arc::clone(&queue);
                thread::Builder::new()
                    .name("rpc-worker".into())
                    .spawn(move || work(&queue))
            })
            .collect::<Result<_, _>>()?;
        Ok(Pool {
            jobs: Some(jobs),
            workers,
        })
    }

    /// A handle to queue jobs with; the pool ends once every handle is dropped.
    pub fn sender(&self) -> Sender<Job> {
        self.jobs.clone().expect("pool already shut down")
    }

    /// Lets the workers finish the queue and joins them by `deadline`.
    pub fn shutdown(mut self, deadline: Instant) {
        self.jobs = None;
        for worker in self.workers.drain(..) {
            let _ = join_by(worker, deadline);
        }
    }
}

fn work(queue: &Mutex<Receiver<Job>>) {
    loop {
        // The guard is a temporary: the lock is released before the job runs.
        let job = match queue.lock() {
            Ok(queue) => queue.recv(),
            Err(_) => return,
        };
        match job {
            Ok(job) => job(),
            Err(_) => return,
        }
    }
}

/// Joins `thread` if it ends by `deadline`; otherwise leaves it running, detached. A thread
/// blocked where nothing can reach it (a handler that ignores cancellation, a read of the
/// process's stdin) must not turn a shutdown into a hang.
/// Gives the thread back when it is still running at the deadline.
pub(crate) fn join_by(thread: JoinHandle<()>, deadline: Instant) -> Result<(), JoinHandle<()>> {
    while !thread.is_finished() {
        if Instant::now() >= deadline {
            return Err(thread);
        }
        thread::sleep(Duration::from_millis(2));
    }
    let _ = thread.join();
    Ok(())
}
