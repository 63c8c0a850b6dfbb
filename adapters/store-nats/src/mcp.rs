//! [`McpFanout`]: MCP change fan-out across server processes over core NATS (feature `mcp`).

use std::sync::Arc;

use sansrpc_mcp::server::{Change, Fanout, ListKind, Server};

use crate::fanout::{Inbox, Link, Outbox};
use crate::{escape, Error, PUB_PREFIX};

/// How many announced changes may wait to be published; past it a change is dropped,
/// counted, and the other processes are asked to resync.
pub const MCP_QUEUE: usize = 1024;

/// Carries the changes an MCP [`Server`] announces ([`Server::list_changed`],
/// [`Server::resource_updated`]) to the other processes of the same server over core NATS,
/// and delivers theirs to this process's listeners: `subscriptions/listen` streams
/// (2026-07-28) and the GET streams of 2025-11-25 sessions (a resource update only to the
/// sessions subscribed to that URI).
///
/// ```no_run
/// use sansrpc_mcp::server::{Context, ListKind, McpError, ServerBuilder};
/// use sansrpc_store_nats::McpFanout;
///
/// let server = ServerBuilder::new("notes", "1.0")
///     .list_changed(ListKind::Tools)
///     .tool("ping", "Answers pong", |_: Context, ()| async {
///         Ok::<_, McpError>("pong")
///     })
///     .build();
/// // Every process of "notes" connects its server to the same NATS...
/// let fanout = McpFanout::connect("nats://127.0.0.1:4222", &server)?;
/// // ...and serves `server` as usual (`sansrpc_mcp::tokio::serve`). A change announced in
/// // any process now reaches the listeners of every process, once each:
/// server.list_changed(ListKind::Tools);
/// // The fan-out lasts as long as `fanout`: keep it while serving.
/// drop(fanout);
/// # Ok::<(), sansrpc_store_nats::Error>(())
/// ```
///
/// # Subjects
/// One subject per kind of change, under the bus's prefix ([`PUB_PREFIX`]) and the
/// server's name (its [`info`](Server::info) name, escaped as topics are: letters, digits
/// and `-` kept, every other byte `_XX`), so `sansrpc.pub.mcp.<name>.` followed by:
///
/// | suffix | payload | the change |
/// |---|---|---|
/// | `tools.list_changed` | `{}` | [`Server::list_changed`]`(Tools)` |
/// | `resources.list_changed` | `{}` | [`Server::list_changed`]`(Resources)` |
/// | `prompts.list_changed` | `{}` | [`Server::list_changed`]`(Prompts)` |
/// | `resources.updated` | `{"uri": "..."}` | [`Server::resource_updated`] (the URI in the payload: URIs hold dots) |
/// | `resync` | `{}` | a process may have lost changes: every process calls [`Server::resync`] |
///
/// Processes of one server (same name) on one NATS account hear each other; servers with
/// other names do not. A `sansrpc_pubsub` hub joined to the same NATS sees these as
/// ephemeral publishes to the topic `mcp.<name>.<suffix>`.
///
/// # Delivery
/// At most once per listener, no loop: a change is delivered locally by the announcing
/// call, published once with `no_echo` (this connection never hears its own publishes),
/// and applied by the others with [`Server::apply`], which never publishes. Core NATS does
/// not store messages: a process that is not connected when a change is published does
/// not get it.
///
/// What may be lost is covered by a resync ([`Server::resync`]: every local listener is
/// told that everything it listens to may have changed, each notification marked with
/// [`RESYNC_META`](sansrpc_mcp::server::RESYNC_META)):
/// - announced while this process is disconnected from NATS: not handed to NATS (dropped
///   and counted in [`dropped`](Self::dropped)); once connected again, this process
///   publishes `resync`, so every other process resyncs.
/// - published by others while this process was disconnected: once connected again (and
///   its subscription is registered at the server), this process resyncs its own listeners.
/// - more than [`MCP_QUEUE`] changes waiting to be published: the rest dropped and
///   counted, then `resync` published; NATS dropping messages for this slow subscriber
///   (`SlowConsumer`): this process resyncs.
///
/// A change announced just as the connection breaks, before the client noticed, is written
/// to the dead socket and lost; the resyncs that follow the reconnection cover it. So after
/// an outage every listener hears, at least once, of everything it listens to; while NATS
/// is unreachable it hears only of the changes made in its own process.
pub struct McpFanout {
    server: Server,
    hook: Arc<Hook>,
    // Last: dropping it stops the tasks (and their clones of the server).
    link: Link,
}

impl std::fmt::Debug for McpFanout {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("McpFanout")
            .field("subjects", &self.link.subject())
            .field("connected", &self.is_connected())
            .field("dropped", &self.dropped())
            .field("received", &self.received())
            .field("resyncs", &self.resyncs())
            .finish_non_exhaustive()
    }
}

/// What the server holds ([`Server::set_fanout`]): the publishing task's queue. It does
/// not own the runtime, so the server does not keep the fan-out alive.
struct Hook(Arc<Outbox>);

impl Fanout for Hook {
    fn announce(&self, change: &Change) {
        if let Some((suffix, payload)) = encode(change) {
            self.0.send(suffix, payload.into_bytes());
        }
    }
}

/// What the other processes' changes do here.
struct Listeners(Server);

impl Inbox for Listeners {
    fn heard(&self, suffix: &str, payload: &[u8]) -> bool {
        match decode(suffix, payload) {
            Ok(Some(change)) => {
                self.0.apply(&change);
                true
            }
            // `resync` is the link's own.
            Ok(None) | Err(()) => false,
        }
    }

    fn resync(&self) {
        self.0.resync();
    }
}

impl McpFanout {
    /// Connects to the NATS server at `url`, subscribes to the changes of `server`'s other
    /// processes (those with the same name) and sets itself as `server`'s fan-out
    /// ([`Server::set_fanout`]). Returns once the subscription is registered at the NATS
    /// server; fails when NATS is unreachable. Dropping the returned value removes the
    /// fan-out again.
    pub fn connect(url: &str, server: &Server) -> Result<Self, Error> {
        let subject = format!("{PUB_PREFIX}mcp.{}", escape(&server.info().name));
        let link = Link::connect(
            url,
            "sansrpc mcp fanout",
            subject,
            MCP_QUEUE,
            Arc::new(Listeners(server.clone())),
        )?;
        let hook = Arc::new(Hook(link.outbox.clone()));
        server.set_fanout(Some(hook.clone()));
        Ok(McpFanout {
            server: server.clone(),
            hook,
            link,
        })
    }

    /// The subjects' common prefix: `sansrpc.pub.mcp.<escaped server name>`.
    pub fn subject_prefix(&self) -> &str {
        self.link.subject()
    }

    /// Whether the connection to NATS is up.
    pub fn is_connected(&self) -> bool {
        self.link.is_connected()
    }

    /// How many changes this process announced that were not handed to NATS (announced
    /// while disconnected, or past [`MCP_QUEUE`] waiting, or refused by the client).
    pub fn dropped(&self) -> u64 {
        self.link.dropped()
    }

    /// How many changes from other processes this one delivered to its listeners.
    pub fn received(&self) -> u64 {
        self.link.received()
    }

    /// How many times this process resynced its listeners ([`Server::resync`]): after its
    /// own reconnections, at other processes' `resync`, and when NATS dropped messages for
    /// it.
    pub fn resyncs(&self) -> u64 {
        self.link.resyncs()
    }

    /// Waits until the NATS server processed everything this process published so far
    /// (and so passed it on to every connected process).
    pub fn flush(&self) -> Result<(), Error> {
        self.link.flush()
    }
}

impl Drop for McpFanout {
    fn drop(&mut self) {
        // Removes the hook only if it is still this one.
        if let Some(current) = self.server.set_fanout(None) {
            let ours: Arc<dyn Fanout> = self.hook.clone();
            if !Arc::ptr_eq(&current, &ours) {
                self.server.set_fanout(Some(current));
            }
        }
    }
}

/// The subject suffix and payload of `change`; `None` for a kind of change this version
/// does not carry.
fn encode(change: &Change) -> Option<(&'static str, String)> {
    Some(match change {
        Change::ListChanged(ListKind::Tools) => ("tools.list_changed", "{}".into()),
        Change::ListChanged(ListKind::Resources) => ("resources.list_changed", "{}".into()),
        Change::ListChanged(ListKind::Prompts) => ("prompts.list_changed", "{}".into()),
        Change::ResourceUpdated(uri) => (
            "resources.updated",
            serde_json::json!({ "uri": uri }).to_string(),
        ),
        _ => return None,
    })
}

/// What a message heard on `suffix` asks for: a change to apply, or (`None`) a resync.
/// `Err` for one this version does not know.
fn decode(suffix: &str, payload: &[u8]) -> Result<Option<Change>, ()> {
    let kind = match suffix {
        "tools.list_changed" => ListKind::Tools,
        "resources.list_changed" => ListKind::Resources,
        "prompts.list_changed" => ListKind::Prompts,
        "resync" => return Ok(None),
        "resources.updated" => {
            let value: serde_json::Value = serde_json::from_slice(payload).map_err(|_| ())?;
            let uri = value.get("uri").and_then(|u| u.as_str()).ok_or(())?;
            if uri.len() > sansrpc_mcp::server::MAX_URI {
                return Err(());
            }
            return Ok(Some(Change::ResourceUpdated(uri.to_owned())));
        }
        _ => return Err(()),
    };
    Ok(Some(Change::ListChanged(kind)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_fanout_can_move_between_threads() {
        fn send_sync<T: Send + Sync>() {}
        send_sync::<McpFanout>();
    }

    #[test]
    fn changes_encode_and_decode_back() {
        for change in [
            Change::ListChanged(ListKind::Tools),
            Change::ListChanged(ListKind::Resources),
            Change::ListChanged(ListKind::Prompts),
            Change::ResourceUpdated("file:///a.b/c d?x=1#y".into()),
        ] {
            let (suffix, payload) = encode(&change).unwrap();
            assert_eq!(decode(suffix, payload.as_bytes()), Ok(Some(change)));
        }
        assert_eq!(decode("resync", b"{}"), Ok(None));
        for (suffix, payload) in [
            ("resources.updated", &b"not json"[..]),
            ("resources.updated", b"{\"uri\":1}"),
            ("tools.removed", b"{}"),
            ("", b""),
        ] {
            assert_eq!(decode(suffix, payload), Err(()), "{suffix}");
        }
        let long = format!(
            r#"{{"uri":"{}"}}"#,
            "x".repeat(sansrpc_mcp::server::MAX_URI + 1)
        );
        assert_eq!(decode("resources.updated", long.as_bytes()), Err(()));
    }
}
