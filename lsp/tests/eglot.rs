//! A second real editor: Emacs's eglot (Debian's `emacs-nox` and `elpa-eglot`: Emacs 28,
//! eglot 1.9) runs `interop/eglot/todo_server.el` in batch mode against the `todo_server`
//! example, and against `todo_server_threads`. The script visits a file in text-mode,
//! starts the server with `eglot`, and edits the buffer: insertions with emoji, CJK and
//! TODOs, a line split and a join, a replacement, some edits one `didChange` each and some
//! several to one. Midway and after the last edit it waits for the diagnostics of the
//! buffer's version and checks, with eglot's own conversion of LSP positions, that they
//! cover exactly the buffer's TODOs, and that no version was published after a newer one;
//! a hover on each line answers `version V: LINE`. Then `shutdown` and `exit` as eglot 1.9
//! sends them, with `"params": null`: the server answers and exits by itself with status 0.
//!
//! eglot 1.9 offers no `general.positionEncodings`: positions are UTF-16, the default (the
//! script checks it offers none and the server chose UTF-16).
//!
//! Emacs with eglot must be there (`scripts/provision-eglot` installs the Debian packages;
//! `scripts/test` and `.ci/run` run it): without it these tests fail, they do not skip.

#[path = "../../tests/support/processes.rs"]
mod support;

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

/// One Emacs run, startup to exit; the script's own waits are 20 s each.
const LIMIT: Duration = Duration::from_secs(120);

fn script() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../interop/eglot/todo_server.el")
}

/// Runs the script against `example`; its `ok:` line.
fn eglot_drives(example: &str) -> String {
    let found = Command::new("emacs").arg("--version").output();
    if let Err(e) = found {
        panic!(
            "Emacs is needed by this test and could not be run ({e}): run \
             scripts/provision-eglot (as root it installs Debian's emacs-nox and elpa-eglot)"
        );
    }
    let server = support::built_example("sansrpc-lsp", example);
    // Emacs's home and the edited file in a fresh folder per run.
    let home = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join(format!("eglot-{example}"));
    let _ = std::fs::remove_dir_all(&home);
    std::fs::create_dir_all(&home).unwrap();
    let mut emacs = Command::new("emacs");
    emacs
        .args(["--batch", "-Q", "-l"])
        .arg(script())
        .current_dir(&home)
        .env("TODO_SERVER", &server)
        .env("TODO_DIR", &home)
        .env("HOME", &home);
    let out = support::output_within(&mut emacs, LIMIT);
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        out.status.success(),
        "eglot against {example} failed ({}):\n{stdout}\n{stderr}",
        out.status
    );
    let ok = stdout
        .lines()
        .find(|l| l.starts_with("ok: "))
        .unwrap_or_else(|| panic!("no ok line:\n{stdout}\n{stderr}"))
        .to_owned();
    println!("{ok}");
    ok
}

fn checks(ok: &str) {
    assert!(ok.contains(", eglot 1."), "{ok}");
    assert!(
        ok.contains(", utf-16, 15 edits in 12 didChange, version 15,"),
        "{ok}"
    );
    assert!(ok.contains(", 6 TODOs, 4 lines hovered, exit 0,"), "{ok}");
}

#[test]
fn eglot_edits_with_emoji_and_gets_diagnostics_hovers_and_exit_0() {
    checks(&eglot_drives("todo_server"));
}

#[test]
fn eglot_against_the_same_server_on_threads() {
    checks(&eglot_drives("todo_server_threads"));
}
