//! What the server keeps between messages: a session's negotiated state (2025-11-25), and
//! the sealed `requestState` of a multi round-trip request (2026-07-28).

use std::collections::{BTreeMap, BTreeSet};
use std::sync::{Arc, Mutex, MutexGuard, Weak};

use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use base64::Engine as _;
use hmac::{Hmac, Mac};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use sha2::Sha256;

use crate::types::{ClientCapabilities, Implementation, LoggingLevel};

/// The most resources one session may subscribe to; past it `resources/subscribe` is
/// refused with -32602.
pub const MAX_SUBSCRIPTIONS: usize = 1024;

/// The longest `requestState` the server accepts back (and writes): 64 KiB.
pub const MAX_REQUEST_STATE: usize = 64 * 1024;

/// The most input responses one request may carry (more is -32602).
pub const MAX_INPUT_RESPONSES: usize = 64;

/// What a 2025-11-25 session settled at `initialize`, and what the client asked for since.
/// One per connection (the adapters keep it in the connection's local state); a stateless
/// 2026-07-28 request has none that matters.
#[derive(Debug, Default)]
pub struct Session {
    inner: Mutex<SessionState>,
}

#[derive(Debug, Default)]
pub(crate) struct SessionState {
    /// The revision `initialize` settled on (one of `version::SUPPORTED`).
    pub version: Option<&'static str>,
    pub capabilities: Option<Arc<ClientCapabilities>>,
    pub client: Option<Arc<Implementation>>,
    /// `logging/setLevel`: messages below it are not sent. `None`: all are.
    pub level: Option<LoggingLevel>,
    /// `resources/subscribe`d URIs.
    pub subscriptions: BTreeSet<String>,
    /// The server holds this session in its list (for list-changed and updated
    /// notifications).
    pub registered: bool,
}

impl Session {
    pub(crate) fn lock(&self) -> MutexGuard<'_, SessionState> {
        self.inner.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The protocol revision `initialize` settled on, once it did.
    pub fn protocol_version(&self) -> Option<String> {
        self.lock().version.map(str::to_owned)
    }

    /// The level `logging/setLevel` set, if the client sent one.
    pub fn log_level(&self) -> Option<LoggingLevel> {
        self.lock().level
    }

    /// Whether the session subscribed to `uri`.
    pub fn is_subscribed(&self, uri: &str) -> bool {
        self.lock().subscriptions.contains(uri)
    }
}

/// Sends a notification to one session outside any request; false once the session is
/// gone (its connection closed).
pub trait Notifier: Send + Sync {
    /// Queues `method` with `params` for the session's client.
    fn notify(&self, method: &str, params: Value) -> bool;
    /// The session's connection is gone.
    fn is_closed(&self) -> bool;
}

/// The server's live sessions, for notifications that concern all of them.
#[derive(Default)]
pub(crate) struct Sessions {
    list: Mutex<Vec<Live>>,
}

/// A session the server may notify, while its connection lasts.
type Live = (Weak<Session>, Arc<dyn Notifier>);

impl Sessions {
    /// Adds `session`, dropping the ones whose connection is gone.
    pub fn register(&self, session: &Arc<Session>, notifier: Arc<dyn Notifier>) {
        let mut list = self.list.lock().unwrap_or_else(|e| e.into_inner());
        list.retain(|(s, n)| s.strong_count() > 0 && !n.is_closed());
        list.push((Arc::downgrade(session), notifier));
    }

    /// Sends to every live session `want` accepts; returns how many it reached.
    pub fn broadcast(
        &self,
        method: &str,
        params: &Value,
        want: impl Fn(&Session) -> bool,
    ) -> usize {
        // Notify from a snapshot, not under the lock: a notifier may run application code
        // (client interceptors) that comes back here.
        let live: Vec<Live> = {
            let mut list = self.list.lock().unwrap_or_else(|e| e.into_inner());
            list.retain(|(s, n)| s.strong_count() > 0 && !n.is_closed());
            list.clone()
        };
        let mut sent = 0;
        for (session, notifier) in live {
            if let Some(session) = session.upgrade() {
                if want(&session) && notifier.notify(method, params.clone()) {
                    sent += 1;
                }
            }
        }
        sent
    }

    /// Calls `f` with every live session and its notifier; the sum of what it returns.
    pub fn each(&self, f: impl Fn(&Session, &dyn Notifier) -> usize) -> usize {
        let live: Vec<Live> = {
            let mut list = self.list.lock().unwrap_or_else(|e| e.into_inner());
            list.retain(|(s, n)| s.strong_count() > 0 && !n.is_closed());
            list.clone()
        };
        live.iter()
            .filter_map(|(session, notifier)| Some(f(&*session.upgrade()?, &**notifier)))
            .sum()
    }

    pub fn len(&self) -> usize {
        self.list.lock().map_or(0, |l| l.len())
    }
}

/// What a sealed `requestState` carries: the request it belongs to, the input responses of
/// the rounds before, and the handler's own state.
#[derive(Debug, Default, Serialize, Deserialize)]
pub(crate) struct Carried {
    /// `tools/call:<name>`, `prompts/get:<name>` or `resources/read:<uri>`.
    #[serde(rename = "m")]
    pub request: String,
    #[serde(rename = "r", default, skip_serializing_if = "BTreeMap::is_empty")]
    pub responses: BTreeMap<String, Value>,
    #[serde(rename = "s", default, skip_serializing_if = "Option::is_none")]
    pub state: Option<Value>,
}

/// Seals and opens `requestState` with HMAC-SHA256 under the server's key: a client can
/// carry it but not change it, and a state made for one request (method, name or URI,
/// arguments) is refused on another. It is signed, not encrypted: the client can read it.
/// It does not expire (the server keeps no clock); a handler that needs expiry puts a
/// time in its own state.
#[derive(Clone)]
pub(crate) struct Sealer {
    key: [u8; 32],
}

/// SHA-256 of `bytes`, hex: binds a sealed state to the request's arguments.
pub(crate) fn digest(bytes: &[u8]) -> String {
    use sha2::Digest;
    let hash = Sha256::digest(bytes);
    hash.iter().map(|b| format!("{b:02x}")).collect()
}

/// Why a `requestState` was refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Unsealed {
    TooLong,
    Malformed,
    Tampered,
    OtherRequest,
}

impl Unsealed {
    pub fn message(self) -> &'static str {
        match self {
            Unsealed::TooLong => "requestState is longer than this server accepts",
            Unsealed::Malformed => "requestState is not one this server issued",
            Unsealed::Tampered => "requestState failed its integrity check",
            Unsealed::OtherRequest => "requestState belongs to another request",
        }
    }
}

impl Sealer {
    pub fn new(key: [u8; 32]) -> Self {
        Sealer { key }
    }

    /// A key from the operating system's random source.
    ///
    /// # Panics
    /// When the system has no random source: a known key would let clients forge state,
    /// so the server does not start without one (`ServerBuilder::state_key` sets a key).
    pub fn random() -> Self {
        let mut key = [0u8; 32];
        getrandom::fill(&mut key)
            .expect("no random source for the requestState key; set ServerBuilder::state_key");
        Sealer { key }
    }

    fn mac(&self) -> Hmac<Sha256> {
        <Hmac<Sha256> as Mac>::new_from_slice(&self.key).expect("HMAC takes any key length")
    }

    pub fn seal(&self, carried: &Carried) -> Option<String> {
        let payload = serde_json::to_vec(carried).ok()?;
        let mut mac = self.mac();
        mac.update(&payload);
        let tag = mac.finalize().into_bytes();
        let sealed = format!(
            "{}.{}",
            URL_SAFE_NO_PAD.encode(&payload),
            URL_SAFE_NO_PAD.encode(tag)
        );
        (sealed.len() <= MAX_REQUEST_STATE).then_some(sealed)
    }

    pub fn open(&self, sealed: &str, request: &str) -> Result<Carried, Unsealed> {
        if sealed.len() > MAX_REQUEST_STATE {
            return Err(Unsealed::TooLong);
        }
        let (payload, tag) = sealed.split_once('.').ok_or(Unsealed::Malformed)?;
        let payload = URL_SAFE_NO_PAD
            .decode(payload)
            .map_err(|_| Unsealed::Tampered)?;
        let tag = URL_SAFE_NO_PAD
            .decode(tag)
            .map_err(|_| Unsealed::Tampered)?;
        let mut mac = self.mac();
        mac.update(&payload);
        mac.verify_slice(&tag).map_err(|_| Unsealed::Tampered)?;
        let carried: Carried = serde_json::from_slice(&payload).map_err(|_| Unsealed::Malformed)?;
        if carried.request != request {
            return Err(Unsealed::OtherRequest);
        }
        Ok(carried)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_sealed_state_opens_only_unchanged_and_for_its_own_request() {
        let sealer = Sealer::new([7; 32]);
        let mut carried = Carried {
            request: "tools/call:t".into(),
            ..Carried::default()
        };
        carried
            .responses
            .insert("k".into(), serde_json::json!({"a": 1}));
        carried.state = Some(serde_json::json!("mine"));
        let sealed = sealer.seal(&carried).unwrap();
        let back = sealer.open(&sealed, "tools/call:t").unwrap();
        assert_eq!(back.responses["k"], serde_json::json!({"a": 1}));
        assert_eq!(back.state, Some(serde_json::json!("mine")));
        assert_eq!(
            sealer.open(&sealed, "tools/call:u").unwrap_err(),
            Unsealed::OtherRequest
        );
        // Any changed character is caught.
        for i in 0..sealed.len() {
            let mut bytes = sealed.clone().into_bytes();
            bytes[i] = if bytes[i] == b'A' { b'B' } else { b'A' };
            let changed = String::from_utf8(bytes).unwrap();
            if changed != sealed {
                assert!(sealer.open(&changed, "tools/call:t").is_err(), "{i}");
            }
        }
        // Another server's key does not open it.
        assert_eq!(
            Sealer::new([8; 32])
                .open(&sealed, "tools/call:t")
                .unwrap_err(),
            Unsealed::Tampered
        );
        assert_eq!(
            sealer
                .open(&"x".repeat(MAX_REQUEST_STATE + 1), "tools/call:t")
                .unwrap_err(),
            Unsealed::TooLong
        );
        assert_eq!(
            sealer.open("nodot", "tools/call:t").unwrap_err(),
            Unsealed::Malformed
        );
    }
}
