//! A2A under load: sansrpc-a2a's echo agent (`a2a-sansrpc-server`) against a2a-sdk 1.3.0's
//! and @a2a-js/sdk 1.3.0's own servers running the same contract (`interop/a2a-python/
//! server.py` and `interop/a2a-js/server.mjs`, with `STEP_MS=0`: no wait between `slow`'s
//! steps). Each server is one process on one thread (uvicorn's event loop, Node's).
//!
//! For each server, a fresh process: 100 `echo` tasks to warm it, its resident set
//! (`VmRSS`), then `--stored N` (default 5,000) more `echo` tasks from 64 clients, and the
//! growth of its resident set per task it now stores. Then `--clients C` (default 64)
//! clients, each sending `echo hi` (`SendMessage`, answered with the completed task) and
//! streaming `slow 3` (`SendStreamingMessage`, read to the completed status) in turn; over
//! a window of `--seconds S` (default 10, after 1 s of warm-up) the tasks completed per
//! second and the server's CPU time per task (its threads' run time,
//! `/proc/<pid>/task/*/schedstat`). Every answer is checked; an error ends the run.
//!
//! The client is sansrpc-a2a's, on its own runtime thread. Needs a2a-sdk installed where
//! the interop tests install it (`<workspace target>/tmp/a2a-python`, or `A2A_PYTHONPATH`)
//! and `npm ci` in `interop/a2a-js`.
//!
//! `a2a-load [--seconds S] [--clients C] [--stored N] [--only NAME]`

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use sansrpc_a2a::tokio::Client;
use sansrpc_a2a::types::{
    Message, Role, SendMessageRequest, SendMessageResponse, StreamResponse, TaskState,
};

struct Opts {
    seconds: u64,
    clients: usize,
    stored: usize,
    only: Option<String>,
}

fn main() {
    let mut opts = Opts {
        seconds: 10,
        clients: 64,
        stored: 5_000,
        only: None,
    };
    let mut args = std::env::args().skip(1);
    while let Some(arg) = args.next() {
        let mut value = || args.next().unwrap_or_else(|| usage());
        match arg.as_str() {
            "--seconds" => opts.seconds = value().parse().unwrap_or_else(|_| usage()),
            "--clients" => opts.clients = value().parse().unwrap_or_else(|_| usage()),
            "--stored" => opts.stored = value().parse().unwrap_or_else(|_| usage()),
            "--only" => opts.only = Some(value()),
            _ => usage(),
        }
    }
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    println!(
        "| server | tasks/s | server CPU µs/task | tasks per CPU-second | RSS growth per stored task |"
    );
    println!("|---|---:|---:|---:|---:|");
    for name in ["sansrpc-a2a", "a2a-sdk", "a2a-js"] {
        if opts.only.as_deref().is_some_and(|o| o != name) {
            continue;
        }
        let mut server = start(name, &root);
        let result = runtime.block_on(measure(&opts, &server.base, server.child.id()));
        let _ = server.child.kill();
        let _ = server.child.wait();
        match result {
            Ok(m) => println!(
                "| {name} | {:.0} | {:.0} | {:.0} | {:.1} KiB |",
                m.tasks as f64 / m.window.as_secs_f64(),
                m.cpu.as_secs_f64() * 1e6 / m.tasks as f64,
                m.tasks as f64 / m.cpu.as_secs_f64(),
                m.rss_per_task / 1024.0,
            ),
            Err(e) => {
                eprintln!("{name}: {e}");
                std::process::exit(1);
            }
        }
    }
}

fn usage() -> ! {
    eprintln!(
        "a2a-load [--seconds S] [--clients C] [--stored N] [--only sansrpc-a2a|a2a-sdk|a2a-js]"
    );
    std::process::exit(2);
}

struct Server {
    child: Child,
    base: String,
}

/// Starts server `name` and reads its base URL from its first line.
fn start(name: &str, root: &Path) -> Server {
    let mut command = match name {
        "sansrpc-a2a" => {
            let exe = std::env::current_exe().unwrap();
            Command::new(exe.with_file_name("a2a-sansrpc-server"))
        }
        "a2a-sdk" => {
            let site = std::env::var_os("A2A_PYTHONPATH")
                .map(PathBuf::from)
                .unwrap_or_else(|| root.join("target/tmp/a2a-python"));
            let mut c = Command::new("python3");
            c.arg(root.join("interop/a2a-python/server.py"))
                .env("PYTHONPATH", site)
                .env("PYTHONDONTWRITEBYTECODE", "1");
            c
        }
        _ => {
            let mut c = Command::new("node");
            c.arg(root.join("interop/a2a-js/server.mjs"));
            c
        }
    };
    let mut child = command
        .env("PORT", "0")
        .env("STEP_MS", "0")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap_or_else(|e| panic!("start {name}: {e}"));
    let mut line = String::new();
    let stdout = child.stdout.take().unwrap();
    std::io::BufRead::read_line(&mut std::io::BufReader::new(stdout), &mut line).unwrap();
    let base = line
        .trim()
        .strip_prefix("listening on ")
        .unwrap_or_else(|| panic!("{name}'s first line: {line:?}"))
        .to_owned();
    Server { child, base }
}

struct Measured {
    tasks: u64,
    window: Duration,
    cpu: Duration,
    rss_per_task: f64,
}

async fn measure(opts: &Opts, base: &str, pid: u32) -> Result<Measured, String> {
    let client = Arc::new(Client::resolve(base).await.map_err(|e| e.to_string())?);
    for i in 0..100 {
        echo(&client, i).await?;
    }
    let rss0 = rss(pid)?;
    let next = Arc::new(AtomicU64::new(0));
    let mut storing = Vec::new();
    for _ in 0..64 {
        let (client, next, stored) = (client.clone(), next.clone(), opts.stored as u64);
        storing.push(tokio::spawn(async move {
            loop {
                let i = next.fetch_add(1, Ordering::Relaxed);
                if i >= stored {
                    return Ok::<(), String>(());
                }
                echo(&client, i).await?;
            }
        }));
    }
    for task in storing {
        task.await.map_err(|e| e.to_string())??;
    }
    let rss_per_task = (rss(pid)? as f64 - rss0 as f64) / opts.stored as f64;

    let done = Arc::new(AtomicU64::new(0));
    let stop = Arc::new(AtomicBool::new(false));
    let mut clients = Vec::new();
    for _ in 0..opts.clients {
        let (client, done, stop) = (Client::resolve(base).await, done.clone(), stop.clone());
        let client = client.map_err(|e| e.to_string())?;
        clients.push(tokio::spawn(async move {
            let mut i = 0;
            while !stop.load(Ordering::Relaxed) {
                echo(&client, i).await?;
                slow(&client, i).await?;
                done.fetch_add(2, Ordering::Relaxed);
                i += 1;
            }
            Ok::<(), String>(())
        }));
    }
    tokio::time::sleep(Duration::from_secs(1)).await;
    let (tasks0, cpu0, at0) = (done.load(Ordering::Relaxed), cpu_time(pid)?, Instant::now());
    tokio::time::sleep(Duration::from_secs(opts.seconds)).await;
    let (tasks1, cpu1, at1) = (done.load(Ordering::Relaxed), cpu_time(pid)?, Instant::now());
    stop.store(true, Ordering::Relaxed);
    for client in clients {
        client.await.map_err(|e| e.to_string())??;
    }
    Ok(Measured {
        tasks: tasks1 - tasks0,
        window: at1 - at0,
        cpu: cpu1 - cpu0,
        rss_per_task,
    })
}

fn request(text: &str, i: u64) -> SendMessageRequest {
    SendMessageRequest {
        message: Message::text(Role::User, format!("m-{i}-{text}"), text),
        ..Default::default()
    }
}

/// `echo hi`: the completed task with the artifact `hi`.
async fn echo(client: &Client, i: u64) -> Result<(), String> {
    match client.send_message(&request("echo hi", i)).await {
        Ok(SendMessageResponse::Task(task))
            if task.status.state == TaskState::Completed
                && task.artifacts.first().and_then(|a| a.parts[0].as_text()) == Some("hi") =>
        {
            Ok(())
        }
        other => Err(format!("echo: {other:?}")),
    }
}

/// `slow 3` streamed: the task, three working steps, the artifact `done`, completed.
async fn slow(client: &Client, i: u64) -> Result<(), String> {
    let mut stream = client
        .send_streaming_message(&request("slow 3", i))
        .await
        .map_err(|e| format!("slow: {e}"))?;
    let (mut steps, mut artifact, mut completed) = (0, false, false);
    while let Some(event) = stream.next().await {
        match event.map_err(|e| format!("slow: {e}"))? {
            StreamResponse::StatusUpdate(u) if u.status.state == TaskState::Working => steps += 1,
            StreamResponse::StatusUpdate(u) if u.status.state == TaskState::Completed => {
                completed = true
            }
            StreamResponse::ArtifactUpdate(a) => {
                artifact = a.artifact.parts.first().and_then(|p| p.as_text()) == Some("done")
            }
            _ => {}
        }
    }
    match (steps, artifact, completed) {
        (3, true, true) => Ok(()),
        got => Err(format!("slow 3: (steps, artifact, completed) = {got:?}")),
    }
}

/// The run time of process `pid`'s threads.
fn cpu_time(pid: u32) -> Result<Duration, String> {
    let mut ns = 0u64;
    let tasks = std::fs::read_dir(format!("/proc/{pid}/task")).map_err(|e| e.to_string())?;
    for task in tasks.flatten() {
        let stat = std::fs::read_to_string(task.path().join("schedstat")).unwrap_or_default();
        ns += stat
            .split_whitespace()
            .next()
            .and_then(|n| n.parse::<u64>().ok())
            .unwrap_or(0);
    }
    Ok(Duration::from_nanos(ns))
}

/// Process `pid`'s resident set, in bytes.
fn rss(pid: u32) -> Result<u64, String> {
    let status =
        std::fs::read_to_string(format!("/proc/{pid}/status")).map_err(|e| e.to_string())?;
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<u64>().ok())
        .map(|kib| kib * 1024)
        .ok_or_else(|| "no VmRSS".to_owned())
}
