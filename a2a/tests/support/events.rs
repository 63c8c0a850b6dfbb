//! What a test sees of a stream's events, one line each (shared with other crates' tests by
//! `#[path]`: std and sansrpc-a2a only).

use sansrpc_a2a::types::{Part, StreamResponse};

/// One line per event: its kind, state and texts (`status <state> <message's texts>`,
/// `artifact <texts>`, `task <state>`, `message <texts>`).
pub fn describe(event: &StreamResponse) -> String {
    let texts = |parts: &[Part]| {
        parts
            .iter()
            .filter_map(|p| p.as_text())
            .collect::<Vec<_>>()
            .join(",")
    };
    match event {
        StreamResponse::Task(t) => format!("task {}", t.status.state.as_str()),
        StreamResponse::StatusUpdate(s) => format!(
            "status {} {}",
            s.status.state.as_str(),
            s.status
                .message
                .as_ref()
                .map_or(String::new(), |m| texts(&m.parts))
        ),
        StreamResponse::ArtifactUpdate(a) => format!("artifact {}", texts(&a.artifact.parts)),
        StreamResponse::Message(m) => format!("message {}", texts(&m.parts)),
    }
}
