//! The echo agent of the `a2a_agent` example (`shared/contracts/a2a-echo-agent.md`).
//!
//! The command is the first text part of the user's message, trimmed:
//!
//! | command | what the agent does |
//! | --- | --- |
//! | `echo <text>` | one artifact with the text, then `TASK_STATE_COMPLETED` |
//! | `slow <n>` | `n` times: wait the step delay (100 ms), then `TASK_STATE_WORKING` with the message `step i`; then an artifact `done` and `TASK_STATE_COMPLETED` (`n` at most [`MAX_SLOW_STEPS`]) |
//! | `ask` | `TASK_STATE_INPUT_REQUIRED` with the message `what?`; the next message to the task is the answer: an artifact with its text, then `TASK_STATE_COMPLETED` |
//! | `wait` | `TASK_STATE_WORKING` until the task is canceled |
//! | anything else | `TASK_STATE_REJECTED`, saying why |
//!
//! The waits are [`Publisher::sleep`]: on the driver's clock, so a test with virtual time
//! runs `slow 1000` at once.

use std::time::Duration;

use crate::agent::{Agent, BoxFuture, Publisher};
use crate::machine::Run;
use crate::types::{AgentCapabilities, AgentCard, AgentInterface, AgentSkill, Artifact, TaskState};

/// The largest `n` of `slow <n>`; more is rejected.
pub const MAX_SLOW_STEPS: u32 = 1000;

/// The contract's echo agent.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EchoAgent {
    step_delay: Duration,
}

impl Default for EchoAgent {
    fn default() -> EchoAgent {
        EchoAgent::new()
    }
}

impl EchoAgent {
    /// The agent with `slow`'s steps 100 ms apart, as the contract has them.
    pub fn new() -> EchoAgent {
        EchoAgent::with_step_delay(Duration::from_millis(100))
    }

    /// The agent with `slow`'s steps `delay` apart (zero for load tests).
    pub fn with_step_delay(delay: Duration) -> EchoAgent {
        EchoAgent { step_delay: delay }
    }
}

/// A command of the contract.
#[derive(Debug, PartialEq, Eq)]
enum Command<'a> {
    Echo(&'a str),
    Slow(u32),
    Ask,
    Wait,
    Unknown(&'a str),
}

impl<'a> Command<'a> {
    fn parse(text: &'a str) -> Command<'a> {
        let (word, rest) = match text.find(char::is_whitespace) {
            Some(at) => (&text[..at], text[at..].trim_start()),
            None => (text, ""),
        };
        match (word, rest) {
            ("echo", text) => Command::Echo(text),
            ("slow", n) => match n.parse::<u32>() {
                Ok(n) if n <= MAX_SLOW_STEPS => Command::Slow(n),
                _ => Command::Unknown(text),
            },
            ("ask", "") => Command::Ask,
            ("wait", "") => Command::Wait,
            _ => Command::Unknown(text),
        }
    }
}

impl Agent for EchoAgent {
    fn execute(&self, run: Run, events: Publisher) -> BoxFuture<()> {
        let delay = self.step_delay;
        Box::pin(async move {
            let text = run.message.first_text().unwrap_or_default().trim();
            if run.task.status.state == TaskState::InputRequired {
                // The answer to `ask`.
                events.artifact(Artifact::text("", text));
                events.status(TaskState::Completed, None);
                return;
            }
            match Command::parse(text) {
                Command::Echo(text) => {
                    events.artifact(Artifact::text("", text));
                    events.status(TaskState::Completed, None);
                }
                Command::Slow(n) => {
                    for i in 1..=n {
                        events.sleep(delay).await;
                        events.status_text(TaskState::Working, format!("step {i}"));
                    }
                    events.artifact(Artifact::text("", "done"));
                    events.status(TaskState::Completed, None);
                }
                Command::Ask => events.status_text(TaskState::InputRequired, "what?"),
                Command::Wait => {
                    events.status(TaskState::Working, None);
                    std::future::pending::<()>().await;
                }
                Command::Unknown(text) => {
                    let shown: String = text.chars().take(64).collect();
                    events.status_text(
                        TaskState::Rejected,
                        format!(
                            "unknown command {shown:?}: try echo <text>, slow <n> (n up to {MAX_SLOW_STEPS}), ask or wait"
                        ),
                    );
                }
            }
        })
    }
}

/// The contract's agent card, with the JSON-RPC endpoint at `jsonrpc_url` (the absolute
/// URL, e.g. `http://127.0.0.1:3000/a2a`).
pub fn agent_card(jsonrpc_url: &str) -> AgentCard {
    let text = vec!["text/plain".to_owned()];
    AgentCard {
        name: "echo-agent".into(),
        description: "Echoes text, streams slow steps, asks a question and waits to be \
                      canceled: the sansrpc A2A example agent."
            .into(),
        supported_interfaces: vec![AgentInterface::jsonrpc(jsonrpc_url)],
        version: env!("CARGO_PKG_VERSION").into(),
        capabilities: AgentCapabilities {
            streaming: Some(true),
            push_notifications: Some(false),
            extensions: Vec::new(),
            extended_agent_card: Some(false),
        },
        default_input_modes: text.clone(),
        default_output_modes: text,
        skills: vec![AgentSkill {
            id: "echo".into(),
            name: "Echo".into(),
            description: "echo <text> answers the text; slow <n> works n steps; ask asks a \
                          question; wait works until canceled."
                .into(),
            tags: vec!["echo".into(), "test".into()],
            examples: vec![
                "echo hello".into(),
                "slow 3".into(),
                "ask".into(),
                "wait".into(),
            ],
            ..AgentSkill::default()
        }],
        ..AgentCard::default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn commands_parse_as_the_contract_writes_them() {
        assert_eq!(
            Command::parse("echo hello  world"),
            Command::Echo("hello  world")
        );
        assert_eq!(Command::parse("echo"), Command::Echo(""));
        assert_eq!(Command::parse("echo\t x"), Command::Echo("x"));
        assert_eq!(Command::parse("slow 3"), Command::Slow(3));
        assert_eq!(Command::parse("slow 0"), Command::Slow(0));
        assert_eq!(Command::parse("ask"), Command::Ask);
        assert_eq!(Command::parse("wait"), Command::Wait);
        for other in [
            "echoes",
            "slow",
            "slow x",
            "slow 1001",
            "slow -1",
            "ask me",
            "Wait",
            "",
        ] {
            assert_eq!(Command::parse(other), Command::Unknown(other), "{other}");
        }
    }
}
