//! One process of an A2A agent that several processes serve behind a balancer: the echo
//! agent (`sansrpc_a2a::echo`), its tasks in a NATS JetStream key-value bucket
//! (`NatsTaskStore`), their events carried to the other processes over core NATS
//! (`A2aFanout`). Any process answers any request about any task.
//!
//! ```text
//! nats-server -js &
//! PORT=3001 A2A_PUBLIC_URL=http://127.0.0.1:3000/a2a cargo run -p sansrpc-store-nats --features a2a --example a2a_cluster &
//! PORT=3002 A2A_PUBLIC_URL=http://127.0.0.1:3000/a2a cargo run -p sansrpc-store-nats --features a2a --example a2a_cluster &
//! A2A_LB_PORT=3000 A2A_PORT_1=3001 A2A_PORT_2=3002 haproxy -db -f deploy/haproxy/a2a.cfg
//! ```
//!
//! Environment: `PORT` (default 3000; 0 picks a free one), `NATS_URL` (default
//! `nats://127.0.0.1:4222`), `A2A_PUBLIC_URL` (the JSON-RPC URL its card names: the
//! balancer's; default its own). It prints `a2a_cluster listening on <its URL>` first.
//!
//! Besides the echo agent's commands, `whoami` completes with an artifact `port <P>` (the
//! port of the process that ran it). Every other run first publishes an artifact `where`
//! (`port <P>`), and prints `run <task id> stopped` when it is stopped before its end (a
//! `CancelTask`, through any process).

use sansrpc_a2a::agent::{Agent, BoxFuture, Publisher};
use sansrpc_a2a::echo::{agent_card, EchoAgent};
use sansrpc_a2a::http::Config;
use sansrpc_a2a::machine::Run;
use sansrpc_a2a::tokio::{Options, Peers};
use sansrpc_a2a::types::{Artifact, TaskState};
use sansrpc_store_nats::{A2aFanout, NatsTaskStore};

/// The name every process of the agent shares: its bucket and its subjects.
const AGENT: &str = "echo";

struct ClusterAgent {
    echo: EchoAgent,
    port: u16,
}

/// Prints that the run of its task was stopped, unless defused at the run's end.
struct Stopped(Option<String>);

impl Drop for Stopped {
    fn drop(&mut self) {
        if let Some(task) = &self.0 {
            println!("run {task} stopped");
        }
    }
}

impl Agent for ClusterAgent {
    fn execute(&self, run: Run, events: Publisher) -> BoxFuture<()> {
        let here = format!("port {}", self.port);
        if run.message.first_text().map(str::trim) == Some("whoami") {
            return Box::pin(async move {
                events.artifact(Artifact::text("", here));
                events.status(TaskState::Completed, None);
            });
        }
        let stopped = Stopped(Some(run.task.id.clone()));
        let echo = self.echo.clone();
        Box::pin(async move {
            let mut stopped = stopped;
            events.artifact(Artifact::text("where", here));
            echo.execute(run, events).await;
            stopped.0 = None;
        })
    }
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let port: u16 = std::env::var("PORT")
        .ok()
        .and_then(|p| p.parse().ok())
        .unwrap_or(3000);
    let nats = std::env::var("NATS_URL").unwrap_or_else(|_| "nats://127.0.0.1:4222".into());
    let listener = tokio::net::TcpListener::bind(("127.0.0.1", port)).await?;
    let port = listener.local_addr()?.port();
    let own = format!("http://127.0.0.1:{port}/a2a");
    let card = agent_card(&std::env::var("A2A_PUBLIC_URL").unwrap_or_else(|_| own.clone()));

    // The link to the other processes: the fan-out carries the tasks' events both ways, the
    // store holds the tasks for all of them.
    let peers = Peers::new();
    let fanout = A2aFanout::connect(&nats, AGENT, &peers)?;
    let store = NatsTaskStore::connect(&nats, AGENT)?;
    let options = Options::default().task_store(store).peers(peers);

    println!("a2a_cluster listening on {own}");
    let agent = ClusterAgent {
        echo: EchoAgent::new(),
        port,
    };
    let stop = async {
        let _ = tokio::signal::ctrl_c().await;
    };
    sansrpc_a2a::tokio::serve_with(listener, agent, card, Config::default(), options, stop).await?;
    drop(fanout);
    Ok(())
}
