//! The connections a server runs, as their shutdown needs them: each connection's
//! [`ShutdownHandle`] goes in as the connection is set up and comes out as it ends, both in
//! constant time whatever the number of connections open (a slab: a slot freed is used
//! again), so that a server holding 10,000 connections sets up the next one as fast as its
//! first. At shutdown every handle still in is told to stop.

use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use crate::ShutdownHandle;

/// The shutdown handles of the connections a server runs.
#[derive(Debug, Default)]
pub(crate) struct Registry {
    slots: Mutex<Slots>,
}

#[derive(Debug, Default)]
struct Slots {
    /// A handle per connection running (`None`: a free slot).
    handles: Vec<Option<ShutdownHandle>>,
    /// The free slots of `handles`.
    free: Vec<usize>,
    /// Slots in use.
    len: usize,
    /// The server is shutting down: a connection set up now is told to stop at once.
    stopping: Option<Duration>,
    /// Slots looked at, over the registry's life: the work its operations did.
    #[cfg(test)]
    touched: u64,
}

impl Registry {
    fn slots(&self) -> MutexGuard<'_, Slots> {
        self.slots.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Registers the connection of `handle` until the [`Registered`] returned is dropped
    /// (when the connection ends). Once the server is stopping, the connection is told to
    /// stop at once instead (with the server's grace) and nothing is registered.
    pub(crate) fn register(self: &Arc<Self>, handle: ShutdownHandle) -> Option<Registered> {
        let mut slots = self.slots();
        if let Some(grace) = slots.stopping {
            drop(slots);
            handle.shutdown(grace);
            return None;
        }
        let slot = match slots.free.pop() {
            Some(slot) => {
                slots.handles[slot] = Some(handle);
                slot
            }
            None => {
                slots.handles.push(Some(handle));
                slots.handles.len() - 1
            }
        };
        slots.len += 1;
        #[cfg(test)]
        {
            slots.touched += 1;
        }
        Some(Registered {
            registry: Arc::clone(self),
            slot,
        })
    }

    /// Tells every connection registered to stop with `grace` for its handlers in flight;
    /// the connections set up from now on are told at once.
    pub(crate) fn stop(&self, grace: Duration) {
        let handles = {
            let mut slots = self.slots();
            slots.stopping = Some(grace);
            slots.free.clear();
            slots.len = 0;
            std::mem::take(&mut slots.handles)
        };
        for handle in handles.into_iter().flatten() {
            handle.shutdown(grace);
        }
    }

    /// How many connections are registered.
    #[cfg(test)]
    pub(crate) fn len(&self) -> usize {
        self.slots().len
    }

    /// How many slots the registry's operations have looked at so far.
    #[cfg(test)]
    pub(crate) fn touched(&self) -> u64 {
        self.slots().touched
    }
}

/// A connection's place in the [`Registry`]: freed when dropped (the connection ended, or
/// its task was aborted).
#[derive(Debug)]
pub(crate) struct Registered {
    registry: Arc<Registry>,
    slot: usize,
}

impl Drop for Registered {
    fn drop(&mut self) {
        let mut slots = self.registry.slots();
        // After `stop` the slots are gone: nothing to free.
        if let Some(handle) = slots.handles.get_mut(self.slot) {
            if handle.take().is_some() {
                slots.free.push(self.slot);
                slots.len -= 1;
                #[cfg(test)]
                {
                    slots.touched += 1;
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use std::io::{BufRead, BufReader, Write};
    use std::net::TcpStream;
    use std::process::{Command, Stdio};
    use std::sync::Arc;
    use std::time::{Duration, Instant};

    use super::Registry;
    use crate::{AsyncRouter, Builder, Listener, ServeOptions};

    /// Where the connections' process connects (set for it by the test that starts it).
    const HOLD: &str = "SANSRPC_TEST_HOLD_CONNECTIONS";

    /// Raises this process's limit on open files to its hard limit: 10,000 connections and
    /// more are held.
    fn raise_fd_limit() -> u64 {
        // SAFETY: getrlimit/setrlimit with a pointer to a local struct.
        unsafe {
            let mut limit = std::mem::zeroed::<libc::rlimit>();
            if libc::getrlimit(libc::RLIMIT_NOFILE, &mut limit) != 0 {
                return 0;
            }
            if limit.rlim_cur < limit.rlim_max {
                limit.rlim_cur = limit.rlim_max;
                libc::setrlimit(libc::RLIMIT_NOFILE, &limit);
            }
            libc::getrlimit(libc::RLIMIT_NOFILE, &mut limit);
            limit.rlim_cur
        }
    }

    /// The other end of the connections of the test below, in a process of its own (a
    /// process holding both ends of 10,000 connections needs 20,000 descriptors, more than
    /// many systems allow one process): reads `open N` or `close N` lines on stdin, opens
    /// or closes that many connections to the server, and answers `held TOTAL`.
    #[test]
    #[ignore = "the connections' side of connection_setup_and_end_cost_the_same_at_100_and_10_000_open"]
    fn holds_connections() {
        let Ok(addr) = std::env::var(HOLD) else {
            return;
        };
        raise_fd_limit();
        let mut held = Vec::new();
        for line in std::io::stdin().lines() {
            let line = line.expect("a line from the test");
            let (verb, n) = line.split_once(' ').expect("a verb and a count");
            let n: usize = n.parse().expect("a count");
            match verb {
                "open" => {
                    for _ in 0..n {
                        held.push(TcpStream::connect(&addr).expect("connect"));
                    }
                }
                "close" => held.truncate(held.len().saturating_sub(n)),
                other => panic!("unknown verb {other:?}"),
            }
            println!("held {}", held.len());
        }
    }

    /// A real `serve_tcp` loop with 100 and then 10,000 connections open (each opened by
    /// another process): setting up 100 more connections, and ending them, does the same
    /// work per connection in its registry at both sizes (counted in slots looked at; the
    /// registry it replaced looked at every open connection at each setup).
    #[test]
    fn connection_setup_and_end_cost_the_same_at_100_and_10_000_open() {
        const MANY: usize = 10_000;
        const STEP: usize = 100;
        let limit = raise_fd_limit();
        assert!(
            limit > (MANY + 2 * STEP) as u64,
            "this test holds {MANY} connections: raise the limit on open files (now {limit})"
        );
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        let listener = runtime
            .block_on(tokio::net::TcpListener::bind("127.0.0.1:0"))
            .unwrap();
        let addr = listener.local_addr().unwrap();
        let registry = Arc::new(Registry::default());
        let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
        let served = Arc::clone(&registry);
        let server = std::thread::spawn(move || {
            runtime.block_on(async move {
                let options = ServeOptions {
                    max_connections: 2 * MANY,
                    ..ServeOptions::default()
                };
                let builder = options.builder(Builder::new().router(AsyncRouter::new()));
                let accept = || async { listener.accept().await.map(|(s, _)| s) };
                let setup = |s| std::future::ready(Ok(crate::tcp(s)));
                let on = Listener {
                    refusal: crate::HTTP_BUSY.into(),
                    max_connections: options.max_connections,
                    drain: Duration::from_secs(1),
                };
                let shutdown = async move {
                    let _ = stopped.await;
                };
                crate::serve_in(served, on, accept, setup, builder, shutdown, Duration::ZERO).await
            })
        });

        let mut holder = Command::new(std::env::current_exe().unwrap())
            .args(["--exact", "registry::tests::holds_connections", "--ignored"])
            .args(["--nocapture", "--test-threads", "1"])
            .env(HOLD, addr.to_string())
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .spawn()
            .expect("start the connections' process");
        let mut orders = holder.stdin.take().unwrap();
        let mut answers = BufReader::new(holder.stdout.take().unwrap()).lines();
        // Orders the holder to open or close `n` connections; waits until it holds them and
        // the server has registered (or freed) them all: the slots looked at meanwhile.
        let mut step = |verb: &str, n: usize, open: usize| -> u64 {
            let before = registry.touched();
            writeln!(orders, "{verb} {n}").unwrap();
            loop {
                let line = answers.next().expect("the holder answers").unwrap();
                // libtest's "test ... " may lead the first answer's line.
                if let Some((_, held)) = line.split_once("held ") {
                    assert_eq!(held.trim().parse::<usize>().unwrap(), open);
                    break;
                }
            }
            let deadline = Instant::now() + Duration::from_secs(120);
            while registry.len() != open {
                assert!(
                    Instant::now() < deadline,
                    "{} connections registered, {open} expected",
                    registry.len()
                );
                std::thread::sleep(Duration::from_millis(10));
            }
            registry.touched() - before
        };

        step("open", STEP, STEP);
        let setup_at_100 = step("open", STEP, 2 * STEP);
        let end_at_100 = step("close", STEP, STEP);
        // A hundred at a time: the listen backlog (128) never overflows (a connection
        // refused its SYN tries again a second later).
        for open in (2 * STEP..=MANY).step_by(STEP) {
            step("open", STEP, open);
        }
        let setup_at_many = step("open", STEP, MANY + STEP);
        let end_at_many = step("close", STEP, MANY);

        eprintln!(
            "slots looked at per connection: setup {} at 100 open, {} at {MANY}; end {} and {}",
            setup_at_100 as f64 / STEP as f64,
            setup_at_many as f64 / STEP as f64,
            end_at_100 as f64 / STEP as f64,
            end_at_many as f64 / STEP as f64,
        );
        assert_eq!(setup_at_100, STEP as u64, "one slot per connection set up");
        assert_eq!(setup_at_many, setup_at_100, "setup at {MANY} open");
        assert_eq!(end_at_100, STEP as u64, "one slot per connection ended");
        assert_eq!(end_at_many, end_at_100, "end at {MANY} open");

        drop(orders);
        holder.wait().unwrap();
        let _ = stop.send(());
        server.join().unwrap().unwrap();
        assert_eq!(registry.len(), 0);
    }
}
