//! The report: readable text grouped by specification section, or JSON for machines.
//!
//! The text report works on any list of sections, so a new section of cases needs
//! nothing here.

use std::fmt::Write as _;
use std::time::Duration;

use serde_json::{json, Value};

use super::cases::Section;
use super::{CaseResult, Failure, Outcome, Violation};
use crate::target::{show_bytes, Kind};

/// How many bytes of a message the text report shows for a passing case; failing cases
/// show more.
const SHOW_PASS: usize = 240;
const SHOW_FAIL: usize = 4096;

/// What the report says about the run itself.
pub struct Header {
    /// The target, described.
    pub target: String,
    /// The framing name.
    pub framing: &'static str,
    /// Seconds per answer.
    pub timeout: f64,
    /// How long the run took.
    pub elapsed: Duration,
    /// How many times the server was restarted or reconnected to.
    pub restarts: u32,
}

/// How the report names a target.
pub fn describe(kind: &Kind) -> String {
    match kind {
        Kind::Stdio(words) => format!("stdio: {}", words.join(" ")),
        Kind::Tcp(addr) => format!("tcp: {addr}"),
        Kind::Unix(path) => format!("unix: {}", path.display()),
        Kind::Ws(url) | Kind::Http(url) => url.clone(),
    }
}

/// True when every required case passed, no generated message found a violation, and the
/// run was not cut short.
pub fn ok(outcome: &Outcome) -> bool {
    outcome.aborted.is_none()
        && outcome.violations.is_empty()
        && outcome.results.iter().all(|r| r.passed() || !r.required)
}

fn sections(outcome: &Outcome) -> Vec<(Section, Vec<&CaseResult>)> {
    let mut out: Vec<(Section, Vec<&CaseResult>)> = Vec::new();
    let mut results: Vec<&CaseResult> = outcome.results.iter().collect();
    results.sort_by_key(|r| r.section);
    for r in results {
        match out.last_mut() {
            Some((s, list)) if *s == r.section => list.push(r),
            _ => out.push((r.section, vec![r])),
        }
    }
    out
}

/// How the text report marks a case.
fn mark(r: &CaseResult) -> &'static str {
    match (r.failure, r.required) {
        (None, _) => "PASS",
        (Some(Failure::NotRun), _) => "NOT RUN",
        (Some(_), true) => "FAIL",
        (Some(_), false) => "WARN",
    }
}

fn case_text(out: &mut String, r: &CaseResult) {
    let limit = if r.passed() { SHOW_PASS } else { SHOW_FAIL };
    let _ = writeln!(out, "  {} {}: {}", mark(r), r.id, r.title);
    if !r.why.is_empty() {
        let label = if r.passed() { "note" } else { "why" };
        let _ = writeln!(
            out,
            "       {label}:{} {}",
            " ".repeat(8 - label.len()),
            r.why
        );
    }
    if r.failure == Some(Failure::NotRun) {
        return;
    }
    if !r.passed() {
        let _ = writeln!(out, "       expected: {}", r.expected);
    }
    let _ = writeln!(out, "       sent:     {}", show_bytes(&r.sent, limit));
    if r.received.is_empty() {
        let _ = writeln!(out, "       received: (nothing)");
    }
    for frame in &r.received {
        let _ = writeln!(out, "       received: {}", show_bytes(frame, limit));
    }
}

/// A section's tally: `12/13 passed, 1 advice, 2 not run`.
fn tally(results: &[&CaseResult]) -> String {
    let count = |f: &dyn Fn(&CaseResult) -> bool| results.iter().filter(|r| f(r)).count();
    let passed = count(&|r| r.passed());
    let mut line = format!("{passed:>3}/{:<3} passed", results.len());
    for (n, what) in [
        (count(&|r| mark(r) == "FAIL"), "failed"),
        (count(&|r| mark(r) == "WARN"), "advice"),
        (count(&|r| mark(r) == "NOT RUN"), "not run"),
    ] {
        if n > 0 {
            let _ = write!(line, ", {n} {what}");
        }
    }
    line
}

/// The readable report: by default one line per section with every failure and advice
/// in full under it; `verbose` shows every case.
pub fn text(header: &Header, outcome: &Outcome, verbose: bool) -> String {
    let mut out = String::new();
    let _ = writeln!(out, "sansrpc check: {}", header.target);
    let _ = writeln!(
        out,
        "framing {}, timeout {} s per answer, {} cases in {:.1} s, {} restarts/reconnections",
        header.framing,
        header.timeout,
        outcome.results.len(),
        header.elapsed.as_secs_f64(),
        header.restarts
    );
    if !verbose {
        out.push('\n');
    }
    let grouped = sections(outcome);
    for (section, results) in &grouped {
        if verbose {
            let _ = writeln!(out, "\n{}", section.title());
        } else {
            let _ = writeln!(out, "{:<54} {}", section.title(), tally(results));
        }
        for r in results {
            let shown = match r.failure {
                _ if verbose => true,
                None | Some(Failure::NotRun) => false,
                Some(_) => true,
            };
            if shown {
                case_text(&mut out, r);
            }
        }
    }
    if let Some((seed, count, passed)) = outcome.fuzz {
        let _ = writeln!(
            out,
            "{}{}: seed {seed}, {count} generated messages, {passed} answered as required, {} violations",
            if verbose { "\n" } else { "" },
            Section::Fuzz.title(),
            outcome.violations.len()
        );
        for (i, v) in outcome.violations.iter().enumerate() {
            violation_text(&mut out, i + 1, v);
        }
    }
    if verbose {
        let _ = writeln!(out, "\nSummary");
        for (section, results) in &grouped {
            let _ = writeln!(out, "  {:<52} {}", section.title(), tally(results));
        }
        if let Some((_, count, passed)) = outcome.fuzz {
            let _ = writeln!(
                out,
                "  {:<52} {passed:>3}/{count:<3} passed",
                Section::Fuzz.title()
            );
        }
    } else {
        out.push('\n');
    }
    let count = |m: &str| outcome.results.iter().filter(|r| mark(r) == m).count();
    let _ = writeln!(
        out,
        "  cases: {} passed, {} required failed, {} advisory failed, {} not run; fuzz violations: {}",
        count("PASS"),
        count("FAIL"),
        count("WARN"),
        count("NOT RUN"),
        outcome.violations.len()
    );
    if let Some(abort) = &outcome.aborted {
        let _ = writeln!(out, "  the run ended early: {abort}");
    }
    let verdict = if ok(outcome) {
        "PASS: every required case passed"
    } else if verbose {
        "FAIL: see the cases marked FAIL above"
    } else {
        "FAIL: see the cases marked FAIL above (-v shows every case)"
    };
    let _ = writeln!(out, "  {verdict}");
    out
}

fn violation_text(out: &mut String, n: usize, v: &Violation) {
    let _ = writeln!(
        out,
        "  VIOLATION {n} ({}): {}",
        v.original.id, v.original.why
    );
    let _ = writeln!(out, "       expected: {}", v.original.expected);
    let _ = writeln!(
        out,
        "       sent:     {}",
        show_bytes(&v.original.sent, SHOW_FAIL)
    );
    for frame in &v.original.received {
        let _ = writeln!(out, "       received: {}", show_bytes(frame, SHOW_FAIL));
    }
    if v.minimal.sent == v.original.sent {
        let _ = writeln!(
            out,
            "       minimal:  the input as sent (no smaller input fails the same way)"
        );
        return;
    }
    let same = v
        .same_as
        .map(|k| format!(", the same as violation {k}'s"))
        .unwrap_or_default();
    let _ = writeln!(
        out,
        "       minimal:  {} (after {} shrinking runs{same})",
        show_bytes(&v.minimal.sent, SHOW_FAIL),
        v.shrink_runs
    );
    let _ = writeln!(out, "       its why:  {}", v.minimal.why);
    let _ = writeln!(out, "       expected: {}", v.minimal.expected);
    for frame in &v.minimal.received {
        let _ = writeln!(out, "       received: {}", show_bytes(frame, SHOW_FAIL));
    }
}

fn case_json(r: &CaseResult) -> Value {
    json!({
        "id": r.id,
        "section": r.section.key(),
        "title": r.title,
        "required": r.required,
        "status": if r.passed() { "pass" } else { "fail" },
        "why": r.why,
        "expected": r.expected,
        "sent": show_bytes(&r.sent, SHOW_FAIL),
        "sent_bytes": r.sent.len(),
        "received": r.received.iter().map(|f| show_bytes(f, SHOW_FAIL)).collect::<Vec<_>>(),
    })
}

/// The report as JSON.
pub fn json(header: &Header, outcome: &Outcome) -> Value {
    let failed: Vec<&str> = outcome
        .results
        .iter()
        .filter(|r| !r.passed() && r.required)
        .map(|r| r.id.as_str())
        .collect();
    let fuzz = outcome.fuzz.map(|(seed, count, passed)| {
        json!({
            "seed": seed,
            "messages": count,
            "passed": passed,
            "violations": outcome.violations.iter().map(|v| json!({
                "original": case_json(&v.original),
                "minimal": case_json(&v.minimal),
                "shrink_runs": v.shrink_runs,
                "same_as": v.same_as,
            })).collect::<Vec<_>>(),
        })
    });
    json!({
        "target": header.target,
        "framing": header.framing,
        "timeout_secs": header.timeout,
        "elapsed_secs": header.elapsed.as_secs_f64(),
        "restarts": header.restarts,
        "ok": ok(outcome),
        "aborted": outcome.aborted.as_ref().map(ToString::to_string),
        // After which case the server stopped, and what became of it ("gone": the process
        // exited or nothing accepts connections; "closed": it closed the connection;
        // "silent": it answers nothing; "restarts": it failed too often).
        "stopped": outcome.aborted.as_ref().map(|a| json!({
            "after": a.after,
            "server": a.fate.key(),
        })),
        "passed": outcome.results.iter().filter(|r| r.passed()).count(),
        "failed": outcome.results.iter().filter(|r| !r.passed()).count(),
        "failed_required": failed,
        "cases": outcome.results.iter().map(case_json).collect::<Vec<_>>(),
        "fuzz": fuzz,
    })
}
