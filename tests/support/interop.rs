//! Shared by the tests that drive our examples with other projects' clients and servers
//! (vscode-jsonrpc, the MCP SDKs), in whichever crate they live: installing a Node project
//! from its lock file, finding an example binary, and the LSP clients' runs (vscode-jsonrpc,
//! pytest-lsp). Running the examples themselves is `processes.rs`, re-exported here.
#![allow(dead_code)]

#[path = "processes.rs"]
mod processes;
#[allow(unused_imports)] // Not every test that includes this runs an example.
pub use processes::*;

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

/// How long an install from a registry (npm ci, pip) may take.
pub const INSTALL_TIMEOUT: Duration = Duration::from_secs(600);
/// How long one run of another project's client or test suite may take.
pub const CLIENT_TIMEOUT: Duration = Duration::from_secs(300);

/// One install at a time, across processes: tests run side by side in one binary, and
/// under cargo-nextest each in a process of its own, several binaries at once; two installs
/// into one folder break each other. The lock is `flock(2)` on
/// `$CARGO_TARGET_TMPDIR/interop-install.lock` (`target/tmp/`; `flock(1)` takes the same in
/// `scripts/test`, which installs all of it ahead of the tests), released when the guard
/// drops or the process dies.
fn installing() -> InstallLock {
    static LOCK: std::sync::Mutex<()> = std::sync::Mutex::new(());
    let guard = LOCK.lock().unwrap_or_else(|e| e.into_inner());
    let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR"));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("interop-install.lock");
    let file = std::fs::OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .open(&path)
        .unwrap_or_else(|e| panic!("open {}: {e}", path.display()));
    // Tests build with the toolchain CI uses; `File::lock` is newer than the crates' MSRV,
    // which is about their library code.
    #[allow(clippy::incompatible_msrv)]
    file.lock()
        .unwrap_or_else(|e| panic!("lock {}: {e}", path.display()));
    InstallLock {
        _file: file,
        _guard: guard,
    }
}

/// Held while installing: the file's lock (released when it closes) and this process's.
struct InstallLock {
    _file: std::fs::File,
    _guard: std::sync::MutexGuard<'static, ()>,
}

/// `interop/<dir>` at the repository's root, from a crate at `crate_dir`.
pub fn interop(crate_dir: &str, dir: &str) -> PathBuf {
    let mut root = PathBuf::from(crate_dir);
    while !root.join("interop").is_dir() {
        assert!(root.pop(), "no interop/ folder above {crate_dir}");
    }
    root.join("interop").join(dir)
}

/// Installs the Node project in `dir` with `npm ci` (its lock file) unless `package` is
/// already there.
pub fn npm_ci(dir: &Path, package: &str) {
    // Tests of one binary run side by side: one installs, the others wait and find it.
    let _one = installing();
    if dir
        .join("node_modules")
        .join(package)
        .join("package.json")
        .exists()
    {
        return;
    }
    let out = output_within(
        Command::new("npm")
            .args(["ci", "--no-audit", "--no-fund"])
            .current_dir(dir),
        INSTALL_TIMEOUT,
    );
    assert!(
        out.status.success(),
        "npm (Node 20) ci failed in {}:\n{}",
        dir.display(),
        String::from_utf8_lossy(&out.stderr)
    );
}

/// Runs `interop/vscode-jsonrpc/lsp_client.js` against sansrpc-lsp's `todo_server` and
/// `context_server` examples (or their `_threads` variants on the blocking adapter) and checks its report: every step passed; todo_server spoke
/// UTF-16, published the diagnostics of versions 1 and 2 and exited 0; context_server's
/// progress went begin, report, end, the cancelled request was answered -32800, and it
/// exited 0.
pub fn vscode_jsonrpc_drives_lsp_examples(crate_dir: &str, todo: &Path, context: &Path) {
    let report = vscode_jsonrpc(crate_dir, "lsp_client.js", &[todo, context]);
    assert_eq!(
        report,
        serde_json::json!({
            "ok": true,
            "todo": {"encoding": "utf-16", "published": [1, 2], "exit": 0},
            "context": {"cancelled": -32800, "progress": ["begin", "report", "end"], "exit": 0},
        })
    );
}

/// Runs the Node script `interop/vscode-jsonrpc/<script>` with `args` (vscode-jsonrpc
/// installed first); the JSON line it prints.
fn vscode_jsonrpc(crate_dir: &str, script: &str, args: &[&Path]) -> serde_json::Value {
    let dir = interop(crate_dir, "vscode-jsonrpc");
    npm_ci(&dir, "vscode-jsonrpc");
    let out = output_within(
        Command::new("node").arg(dir.join(script)).args(args),
        CLIENT_TIMEOUT,
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{script} failed: {stderr}");
    serde_json::from_str(String::from_utf8_lossy(&out.stdout).trim()).unwrap()
}

/// Installs the pinned `interop/<dir>/requirements.txt` with pip into
/// `$CARGO_TARGET_TMPDIR/<dir>` once (again when the file changes); returns the folder,
/// for `PYTHONPATH`.
pub fn pip_install(crate_dir: &str, dir: &str) -> PathBuf {
    let _one = installing();
    let requirements = interop(crate_dir, dir).join("requirements.txt");
    let pinned = std::fs::read_to_string(&requirements).unwrap();
    let target = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join(dir);
    // Written last: a partial install is never taken for a whole one.
    let marker = target.join(".installed-requirements.txt");
    if std::fs::read_to_string(&marker).ok().as_deref() == Some(pinned.as_str()) {
        return target;
    }
    let _ = std::fs::remove_dir_all(&target);
    let mut pip = Command::new("python3");
    pip.args([
        "-m",
        "pip",
        "install",
        "--quiet",
        "--disable-pip-version-check",
        "--no-input",
        "--root-user-action=ignore",
    ])
    .arg("--target")
    .arg(&target)
    .arg("-r")
    .arg(&requirements);
    let out = output_within(&mut pip, INSTALL_TIMEOUT);
    assert!(
        out.status.success(),
        "pip install of interop/{dir} failed (python3 3.11 or later with pip is needed):\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    std::fs::write(&marker, pinned).unwrap();
    target
}

/// Runs `interop/pytest-lsp/test_lsp_server.py` with pytest against sansrpc-lsp's
/// `todo_server` and `context_server` examples (or their `_threads` variants); prints pytest's output when it fails.
pub fn pytest_lsp_drives_lsp_examples(crate_dir: &str, todo: &Path, context: &Path) {
    pytest_lsp(
        crate_dir,
        "test_lsp_server.py",
        &[
            ("SANSRPC_TODO_SERVER", todo),
            ("SANSRPC_CONTEXT_SERVER", context),
        ],
    );
}

/// Runs `interop/pytest-lsp/<file>` with pytest (pytest-lsp installed first), each server
/// named by its environment variable.
fn pytest_lsp(crate_dir: &str, file: &str, servers: &[(&str, &Path)]) {
    let dir = interop(crate_dir, "pytest-lsp");
    let root = dir.parent().and_then(Path::parent).unwrap();
    let mut pytest = Command::new("python3");
    pytest
        .args(["-m", "pytest", "-q", "-rA"])
        .arg(dir.join(file))
        .current_dir(root)
        .env("PYTHONPATH", pip_install(crate_dir, "pytest-lsp"))
        .env("PYTHONDONTWRITEBYTECODE", "1");
    for (variable, server) in servers {
        pytest.env(variable, shell_quote(&server.to_string_lossy()));
    }
    let out = output_within(&mut pytest, CLIENT_TIMEOUT);
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        out.status.success(),
        "pytest-lsp's {file} against {servers:?} failed ({}):\n{stdout}\n{stderr}",
        out.status
    );
    println!("{stdout}");
}

/// `s` as one word for Python's `shlex.split`.
fn shell_quote(s: &str) -> String {
    format!("'{}'", s.replace('\'', r"'\''"))
}
