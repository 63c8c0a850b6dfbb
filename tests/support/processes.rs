//! Running the examples from the tests, with no dependency beyond std (so any crate's tests
//! can use it): finding an example binary, building it first when the test is run alone,
//! and running it with a bounded lifetime: every line it prints read as it comes, every
//! wait under a deadline, the process killed when the test ends however it ends.
//! `interop.rs` re-exports it.
#![allow(dead_code)]

use std::collections::HashSet;
use std::io::{BufRead, BufReader, Read};
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::sync::mpsc::{self, RecvTimeoutError};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// How long an example may take to print its next line, or to exit.
pub const EXAMPLE_TIMEOUT: Duration = Duration::from_secs(30);

/// The example binary `cargo test` builds beside the test binaries.
pub fn example(package: &str, name: &str) -> PathBuf {
    let path = profile_dir().join("examples").join(name);
    assert!(
        path.exists(),
        "{} is missing: `cargo test` builds examples; alone, run `cargo build -p {package} --example {name}`",
        path.display()
    );
    path
}

/// `target/<profile>`, where this test binary is (`target/<profile>/deps/<test>`).
fn profile_dir() -> PathBuf {
    let exe = std::env::current_exe().unwrap();
    exe.parent().unwrap().parent().unwrap().to_owned()
}

/// The example `name` of `package`, built now with cargo (once per test binary): `cargo test
/// --test <name>` builds no example, and a binary left from an earlier build would be
/// tested in place of the source. Same target folder and profile as this test binary.
///
/// Not built again when `SANSRPC_EXAMPLES_BUILT` is set: `scripts/test` sets it when its
/// own build (every target of the packages it tests) has just built the examples. Its
/// tests run side by side in processes of their own, and a build here would replace the
/// binary while another test starts it.
pub fn built_example(package: &str, name: &str) -> PathBuf {
    if std::env::var_os("SANSRPC_EXAMPLES_BUILT").is_some() {
        return example(package, name);
    }
    static BUILT: Mutex<Option<HashSet<String>>> = Mutex::new(None);
    // One build at a time in this test binary; each example once.
    let mut built = BUILT.lock().unwrap_or_else(|e| e.into_inner());
    let key = format!("{package}/{name}");
    if !built.get_or_insert_with(HashSet::new).contains(&key) {
        let dir = profile_dir();
        let mut build = Command::new(std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into()));
        build
            .args(["build", "--quiet", "-p", package, "--example", name])
            .arg("--target-dir")
            .arg(dir.parent().unwrap());
        // Not the variables cargo sets for this test: build scripts that watch one (ring
        // watches CARGO_MANIFEST_DIR) would rebuild here, and again in the next plain build.
        for (key, _) in std::env::vars_os() {
            let key = key.to_string_lossy();
            let set_for_tests = [
                "CARGO_MANIFEST_DIR",
                "CARGO_MANIFEST_PATH",
                "CARGO_CRATE_NAME",
                "CARGO_BIN_NAME",
                "CARGO_PRIMARY_PACKAGE",
                "CARGO_TARGET_TMPDIR",
                "CARGO_RUSTC_CURRENT_DIR",
            ]
            .contains(&&*key)
                || key.starts_with("CARGO_PKG_")
                || key.starts_with("CARGO_BIN_EXE_");
            if set_for_tests {
                build.env_remove(&*key);
            }
        }
        match dir.file_name().and_then(|n| n.to_str()) {
            Some("debug") => {}
            Some("release") => {
                build.arg("--release");
            }
            Some(profile) => {
                build.args(["--profile", profile]);
            }
            None => panic!("no profile folder above {}", dir.display()),
        }
        // A cold build of an example and its dependencies on a slow machine: minutes.
        let out = output_within(&mut build, Duration::from_secs(1800));
        assert!(
            out.status.success(),
            "cargo build -p {package} --example {name} failed:\n{}",
            String::from_utf8_lossy(&out.stderr)
        );
        built.as_mut().unwrap().insert(key);
    }
    example(package, name)
}

/// Runs `command` to its end like [`Command::output`] (stdin closed, stdout and stderr
/// collected), but at most `limit`: past it the command and everything it started (its
/// process group) are killed and the test panics with what they printed so far. Also
/// bounded: the wait for the pipes to close, which a leftover grandchild could hold open.
pub fn output_within(command: &mut Command, limit: Duration) -> Output {
    use std::os::unix::process::CommandExt;
    enum Done {
        Pipe,
        Exited(std::process::ExitStatus),
    }
    let deadline = Instant::now() + limit;
    let mut child = command
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        // Its own process group, so a timeout kills what it started too.
        .process_group(0)
        .spawn()
        .unwrap_or_else(|e| panic!("start {command:?}: {e}"));
    let (tx, done) = mpsc::channel();
    let collect = |mut pipe: Box<dyn Read + Send>| {
        let kept = Arc::new(Mutex::new(Vec::new()));
        let (into, tx) = (kept.clone(), tx.clone());
        std::thread::spawn(move || {
            let mut chunk = [0; 8192];
            while let Ok(n @ 1..) = pipe.read(&mut chunk) {
                into.lock().unwrap().extend_from_slice(&chunk[..n]);
            }
            let _ = tx.send(Done::Pipe);
        });
        kept
    };
    let stdout = collect(Box::new(child.stdout.take().unwrap()));
    let stderr = collect(Box::new(child.stderr.take().unwrap()));
    let pid = child.id();
    std::thread::spawn(move || {
        if let Ok(status) = child.wait() {
            let _ = tx.send(Done::Exited(status));
        }
    });
    // Done when it exited and both pipes closed, by the deadline.
    let (mut status, mut closed) = (None, 0);
    while status.is_none() || closed < 2 {
        match done.recv_timeout(deadline.saturating_duration_since(Instant::now())) {
            Ok(Done::Pipe) => closed += 1,
            Ok(Done::Exited(exit)) => status = Some(exit),
            Err(_) => break,
        }
    }
    let taken = |kept: &Arc<Mutex<Vec<u8>>>| std::mem::take(&mut *kept.lock().unwrap());
    match status {
        Some(status) if closed == 2 => Output {
            status,
            stdout: taken(&stdout),
            stderr: taken(&stderr),
        },
        _ => {
            // The whole group; the waiting thread reaps the child. The shell's own `kill`:
            // no procps needed.
            let _ = Command::new("sh")
                .args(["-c", &format!("kill -9 -{pid}")])
                .status();
            panic!(
                "{command:?} {} within {limit:?}\n--- stdout:\n{}\n--- stderr:\n{}",
                if status.is_some() {
                    "exited but left its output open"
                } else {
                    "did not finish"
                },
                String::from_utf8_lossy(&taken(&stdout)),
                String::from_utf8_lossy(&taken(&stderr)),
            )
        }
    }
}

/// A child process killed (and reaped) when dropped, however the test ends.
pub struct Running(pub std::process::Child);

impl Drop for Running {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// Starts the example `name` of `package` with `env`, and waits for the first line it
/// prints on stdout (`listening on …`); returns it with the process.
pub fn start_example(package: &str, name: &str, env: &[(&str, &str)]) -> (Running, String) {
    let mut child = Command::new(example(package, name))
        .envs(env.iter().copied())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .unwrap_or_else(|e| panic!("start the {name} example: {e}"));
    // Read on a thread, so a server that never prints is killed after EXAMPLE_TIMEOUT.
    let stdout = child.stdout.take().unwrap();
    let (tx, first) = mpsc::channel();
    std::thread::spawn(move || {
        let mut line = String::new();
        let _ = BufReader::new(stdout).read_line(&mut line);
        let _ = tx.send(line);
    });
    let mut child = Running(child);
    match first.recv_timeout(EXAMPLE_TIMEOUT) {
        Ok(line) if !line.is_empty() => (child, line.trim().to_owned()),
        Ok(_) => panic!(
            "the {name} example closed its stdout before its first line (exit: {:?})",
            child.0.try_wait()
        ),
        Err(_) => panic!("the {name} example printed no line within {EXAMPLE_TIMEOUT:?}"),
    }
}

/// An example started by [`Example::start`]: its stdout read line by line as it prints,
/// its stderr kept for the failure messages, the process killed when this is dropped.
pub struct Example {
    name: String,
    child: Running,
    lines: mpsc::Receiver<String>,
    stderr: Arc<Mutex<String>>,
}

impl Example {
    /// Builds (see [`built_example`]) and starts the example `name` of `package` with
    /// `args`, stdin closed.
    pub fn start(package: &str, name: &str, args: &[&str]) -> Example {
        Example::start_path(&built_example(package, name), args)
    }

    /// [`Example::start`] with these environment variables set.
    pub fn start_with_env(package: &str, name: &str, env: &[(&str, &str)]) -> Example {
        Example::start_path_env(&built_example(package, name), &[], env)
    }

    /// Starts the program at `path` with `args`, stdin closed.
    pub fn start_path(path: &Path, args: &[&str]) -> Example {
        Example::start_path_env(path, args, &[])
    }

    fn start_path_env(path: &Path, args: &[&str], env: &[(&str, &str)]) -> Example {
        let name = path.file_name().unwrap().to_string_lossy().into_owned();
        let mut child = Command::new(path)
            .args(args)
            .envs(env.iter().copied())
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap_or_else(|e| panic!("start the {name} example: {e}"));
        let (tx, lines) = mpsc::channel();
        let stdout = child.stdout.take().unwrap();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines() {
                let Ok(line) = line else { break };
                if tx.send(line).is_err() {
                    break;
                }
            }
        });
        let stderr = Arc::new(Mutex::new(String::new()));
        let mut pipe = child.stderr.take().unwrap();
        let kept = stderr.clone();
        std::thread::spawn(move || {
            let mut chunk = [0; 4096];
            while let Ok(n @ 1..) = pipe.read(&mut chunk) {
                let text = String::from_utf8_lossy(&chunk[..n]);
                kept.lock().unwrap().push_str(&text);
            }
        });
        Example {
            name,
            child: Running(child),
            lines,
            stderr,
        }
    }

    /// The process id.
    pub fn id(&self) -> u32 {
        self.child.0.id()
    }

    /// Kills the example with SIGKILL (no clean shutdown) and reaps it; the lines it
    /// printed before stay readable ([`drain`](Self::drain)).
    pub fn kill(&mut self) {
        let _ = self.child.0.kill();
        let _ = self.child.0.wait();
    }

    /// The lines the example printed on stdout that were not read yet, without waiting.
    pub fn drain(&mut self) -> Vec<String> {
        self.lines.try_iter().collect()
    }

    /// The next line the example prints on stdout, waiting at most [`EXAMPLE_TIMEOUT`];
    /// panics (the example killed) if none comes.
    pub fn line(&mut self) -> String {
        match self.lines.recv_timeout(EXAMPLE_TIMEOUT) {
            Ok(line) => line,
            Err(RecvTimeoutError::Timeout) => self.fail("printed no line in time"),
            Err(RecvTimeoutError::Disconnected) => {
                let status = self.child.0.try_wait().unwrap();
                self.fail(&format!(
                    "closed its stdout (exit: {status:?}) before the line expected"
                ))
            }
        }
    }

    /// Waits (at most [`EXAMPLE_TIMEOUT`]) for the example to exit, checks that it exited
    /// with status 0, and returns the lines it printed after those already read.
    pub fn finish(mut self) -> Vec<String> {
        let deadline = Instant::now() + EXAMPLE_TIMEOUT;
        let mut rest = Vec::new();
        loop {
            match self
                .lines
                .recv_timeout(deadline.saturating_duration_since(Instant::now()))
            {
                Ok(line) => rest.push(line),
                Err(RecvTimeoutError::Disconnected) => break,
                Err(RecvTimeoutError::Timeout) => {
                    self.fail(&format!("did not exit in time; it printed {rest:#?}"))
                }
            }
        }
        // Its stdout is closed: it is exiting. Polled until the same deadline.
        let status = loop {
            if let Some(status) = self.child.0.try_wait().unwrap() {
                break status;
            }
            if Instant::now() >= deadline {
                self.fail("closed its stdout but did not exit in time");
            }
            std::thread::sleep(Duration::from_millis(5));
        };
        if !status.success() {
            self.fail(&format!("exited with {status}; it printed {rest:#?}"));
        }
        rest
    }

    /// Kills the example and panics with `what` (after "the NAME example") and its stderr.
    pub fn fail(&mut self, what: &str) -> ! {
        let _ = self.child.0.kill();
        panic!(
            "the {} example {what}\n--- its stderr:\n{}",
            self.name,
            self.stderr.lock().unwrap()
        )
    }
}

/// Builds and runs the example `name` of `package` with `args` to its end (status 0, within
/// [`EXAMPLE_TIMEOUT`]); returns every line it printed on stdout.
pub fn run_example(package: &str, name: &str, args: &[&str]) -> Vec<String> {
    Example::start(package, name, args).finish()
}

/// HAProxy's binary: `$HAPROXY`, else `haproxy` on `PATH`, in `/usr/sbin` or
/// `/usr/local/sbin` (`scripts/test` and `.ci/run` install Debian's package when it is
/// missing). The tests that start it fail without it: they never skip.
pub fn haproxy() -> PathBuf {
    if let Some(path) = std::env::var_os("HAPROXY") {
        return path.into();
    }
    let path = std::env::var_os("PATH").unwrap_or_default();
    std::env::split_paths(&path)
        .chain([PathBuf::from("/usr/sbin"), PathBuf::from("/usr/local/sbin")])
        .map(|dir| dir.join("haproxy"))
        .find(|p| p.is_file())
        .expect(
            "haproxy not found ($HAPROXY, PATH, /usr/sbin): run scripts/test, which installs \
             Debian's haproxy package as root, or install it (apt-get install haproxy)",
        )
}

/// A port free on loopback now (for a program that must be given its port, as HAProxy).
pub fn free_port() -> u16 {
    let socket = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    socket.local_addr().unwrap().port()
}

/// HAProxy in the foreground (`-db`) with the config at `config` and `env` (the config's
/// `"${VAR}"`s), killed when dropped; returns once it accepts connections on `port` (10 s
/// at most).
pub fn start_haproxy(config: &Path, env: &[(String, String)], port: u16) -> Running {
    let mut haproxy = Running(
        Command::new(haproxy())
            .arg("-db")
            .arg("-f")
            .arg(config)
            .envs(env.iter().map(|(k, v)| (k.as_str(), v.as_str())))
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::inherit())
            .spawn()
            .unwrap_or_else(|e| panic!("start haproxy: {e}")),
    );
    let deadline = Instant::now() + Duration::from_secs(10);
    while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
        if let Some(status) = haproxy.0.try_wait().unwrap() {
            panic!("haproxy exited ({status}) with {}", config.display());
        }
        assert!(Instant::now() < deadline, "haproxy did not listen in 10 s");
        std::thread::sleep(Duration::from_millis(20));
    }
    haproxy
}
