//! A real editor: Neovim, headless, runs `interop/neovim/todo_server.lua` against the
//! `todo_server` example. The script starts the server with `vim.lsp.start_client`,
//! attaches a CRLF buffer with non-ASCII text, makes 20 quick incremental edits
//! (`nvim_buf_set_text`: non-BMP characters, CJK, a line split and a join across a CRLF, a
//! TODO typed letter by letter), then checks: the hover sent right after the last edit
//! answers `version V: LINE` for the final version and text (and `null` past the last
//! line); the TODO diagnostics Neovim keeps (`vim.diagnostic.get`, which Neovim converts
//! from the negotiated encoding to byte columns) are at the final text's TODOs; the server
//! exits 0 once the client stops it (`shutdown`, `exit`); Neovim's LSP log, at debug
//! level, has no WARN or ERROR line. Three runs: Neovim as it comes (UTF-16, its default
//! 150 ms didChange debounce, which sends the edits as one didChange flushed by the hover),
//! and offering UTF-8, then UTF-32, with no debounce (20 didChange notifications).
//!
//! Neovim 0.7 or later must be on PATH (`scripts/provision-neovim` installs Debian's
//! `neovim`; `scripts/test` runs it): without it these tests fail, they do not skip.

#[path = "../../tests/support/processes.rs"]
mod support;

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

/// One Neovim run, startup to exit; the script's own waits are 10 s each.
const LIMIT: Duration = Duration::from_secs(120);

fn script() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../interop/neovim/todo_server.lua")
}

/// `nvim --version`'s first line; fails the test when Neovim is not there.
fn neovim_version() -> String {
    let found = Command::new("nvim").arg("--version").output();
    let out = found.unwrap_or_else(|e| {
        panic!(
            "Neovim (nvim) is needed by this test and could not be run ({e}): \
             run scripts/provision-neovim (as root it installs Debian's neovim), \
             or install Neovim 0.7 or later on PATH"
        )
    });
    assert!(out.status.success(), "nvim --version failed: {out:?}");
    let text = String::from_utf8_lossy(&out.stdout);
    text.lines().next().unwrap_or_default().to_owned()
}

/// Runs the script in a headless Neovim with `encoding` offered (`None`: Neovim's own
/// capabilities) and `debounce` ms of didChange debounce (`None`: Neovim's default);
/// returns its `ok:` line.
fn neovim_drives_todo_server(name: &str, encoding: Option<&str>, debounce: Option<u32>) -> String {
    let version = neovim_version();
    let server = support::built_example("sansrpc-lsp", "todo_server");
    // Neovim's own folders (its LSP log is in the cache one) in a fresh folder per run.
    let home = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join(format!("neovim-{name}"));
    let _ = std::fs::remove_dir_all(&home);
    std::fs::create_dir_all(&home).unwrap();
    let mut nvim = Command::new("nvim");
    nvim.args(["--headless", "--clean", "-n"])
        .arg("-c")
        .arg(format!("luafile {}", script().display()))
        // Reached only if the script ended without quitting (it always quits).
        .args(["-c", "cquit 3"])
        .env("TODO_SERVER", &server)
        .env("TODO_DIR", &home)
        .env("TODO_ENCODING", encoding.unwrap_or(""))
        .env(
            "TODO_DEBOUNCE",
            debounce.map(|d| d.to_string()).unwrap_or_default(),
        )
        .env("HOME", &home);
    for (var, dir) in [
        ("XDG_CACHE_HOME", "cache"),
        ("XDG_CONFIG_HOME", "config"),
        ("XDG_DATA_HOME", "data"),
        ("XDG_STATE_HOME", "state"),
    ] {
        nvim.env(var, home.join(dir));
    }
    let out = support::output_within(&mut nvim, LIMIT);
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        out.status.success(),
        "{version} failed ({}):\n{stdout}\n{stderr}\nits LSP log: {}",
        out.status,
        home.join("cache/nvim/lsp.log").display()
    );
    let ok = stdout
        .lines()
        .find(|l| l.starts_with("ok: "))
        .unwrap_or_else(|| panic!("no ok line from {version}:\n{stdout}\n{stderr}"))
        .to_owned();
    println!("{ok}");
    ok
}

#[test]
fn neovim_as_it_comes_utf16_debounced() {
    let ok = neovim_drives_todo_server("utf16", None, None);
    assert!(ok.contains(", utf-16, 20 edits,"), "{ok}");
}

#[test]
fn neovim_offering_utf8_every_edit_its_own_did_change() {
    let ok = neovim_drives_todo_server("utf8", Some("utf-8"), Some(0));
    assert!(ok.contains(", utf-8, 20 edits,"), "{ok}");
    // didOpen, then one didChange per edit: 21 versions, each published unless a newer
    // one came within the server's debounce (the script checks the order).
    assert!((1..=21).contains(&published(&ok)), "{ok}");
}

/// How many `publishDiagnostics` the script saw, from its `ok:` line.
fn published(ok: &str) -> usize {
    let (before, _) = ok.split_once(" diagnostics published").expect("the count");
    before.rsplit(' ').next().unwrap().parse().unwrap()
}

#[test]
fn neovim_offering_utf32_every_edit_its_own_did_change() {
    let ok = neovim_drives_todo_server("utf32", Some("utf-32"), Some(0));
    assert!(ok.contains(", utf-32, 20 edits,"), "{ok}");
    assert!((1..=21).contains(&published(&ok)), "{ok}");
}
