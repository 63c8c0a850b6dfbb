//! What a server keeps per connection: [`Session`].

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use lsp_types::{InitializeParams, Uri};

use super::versions::{Cached, Signal};
use crate::document::{Documents, PositionEncoding, TextDocument};

/// One connection's state: the client's `initialize` params, the position encoding
/// negotiated from them, and the text documents it has open. The adapters keep one per
/// connection (made with `Default` the first time a handler asks); handlers reach it
/// through [`Context::session`](super::Context::session).
#[derive(Debug, Default)]
pub struct Session {
    state: Mutex<State>,
}

#[derive(Debug, Default)]
struct State {
    initialize: Option<Arc<InitializeParams>>,
    /// Shared with the handlers' [`Context`](super::Context)s, each of which keeps the
    /// documents as they were when its request or notification was handed out: a change
    /// made while one of them still holds them copies the map first (the texts are ropes,
    /// shared, not copied).
    documents: Arc<Documents>,
    /// Per open document: the signal of the analysis of its latest version (set when a
    /// newer one arrives or it closes), and what was computed from its versions.
    versions: BTreeMap<Uri, (Signal, Cached)>,
}

impl Session {
    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// The position encoding every position is read and written in (UTF-16 until
    /// `initialize` negotiated another).
    pub fn encoding(&self) -> PositionEncoding {
        self.lock().documents.encoding()
    }

    /// Whether the client sent `initialize`.
    pub fn is_initialized(&self) -> bool {
        self.lock().initialize.is_some()
    }

    /// The client's `initialize` params, once it sent them.
    pub fn initialize_params(&self) -> Option<Arc<InitializeParams>> {
        self.lock().initialize.clone()
    }

    /// A snapshot of the open document `uri` as of the latest change applied (no copy of
    /// its text). A handler usually wants [`Context::document`](super::Context::document)
    /// instead: the document as its request saw it.
    pub fn document(&self, uri: &Uri) -> Option<TextDocument> {
        self.lock().documents.snapshot(uri)
    }

    /// Every open document as of now, for a handler's context: a reference count, no copy.
    pub(crate) fn documents_now(&self) -> Arc<Documents> {
        self.lock().documents.clone()
    }

    /// Snapshots of every open document, in URI order.
    pub fn documents(&self) -> Vec<TextDocument> {
        self.lock().documents.iter().cloned().collect()
    }

    /// Runs `f` on the documents with the session locked: how the server applies
    /// `didOpen`, `didChange` and `didClose` in arrival order. Keep `f` short.
    pub fn with_documents<T>(&self, f: impl FnOnce(&mut Documents) -> T) -> T {
        f(Arc::make_mut(&mut self.lock().documents))
    }

    /// Records `initialize`: its params and the encoding negotiated from them.
    pub(crate) fn initialized(&self, params: Arc<InitializeParams>, encoding: PositionEncoding) {
        let mut state = self.lock();
        state.initialize = Some(params);
        Arc::make_mut(&mut state.documents).set_encoding(encoding);
    }

    /// A new version of `uri` is in: the analysis of the one before is superseded; the
    /// signal of this one's.
    pub(crate) fn supersede(&self, uri: &Uri) -> Signal {
        let signal = Signal::default();
        let mut state = self.lock();
        let entry = state.versions.entry(uri.clone()).or_default();
        let old = std::mem::replace(&mut entry.0, signal.clone());
        // What was cached is of the text before: a version does not tell texts apart when
        // it does not grow (a document opened again at 1, a change whose version did not).
        entry.1 = Default::default();
        drop(state);
        old.set();
        signal
    }

    /// `uri` was closed: its analysis is superseded, and what was cached of it dropped.
    pub(crate) fn closed(&self, uri: &Uri) {
        let old = self.lock().versions.remove(uri);
        if let Some((signal, _)) = old {
            signal.set();
        }
    }

    /// The value of type `T` cached for `version` of `uri`; else the signal of `uri`'s text
    /// now, to cache a value computed from it with ([`cache`](Self::cache)).
    pub(crate) fn cached<T: Send + Sync + 'static>(
        &self,
        uri: &Uri,
        version: i32,
    ) -> Result<Arc<T>, Option<Signal>> {
        let state = self.lock();
        let entry = state.versions.get(uri).ok_or(None)?;
        entry.1.get(version).ok_or_else(|| Some(entry.0.clone()))
    }

    /// Caches `value` for `version` of `uri` while it is open (and no later version's is),
    /// if its text is still the one it was computed from (`text`: the signal
    /// [`cached`](Self::cached) gave); a value computed from a text replaced meanwhile is
    /// not kept.
    pub(crate) fn cache<T: Send + Sync + 'static>(
        &self,
        uri: &Uri,
        version: i32,
        value: Arc<T>,
        text: &Signal,
    ) {
        let mut state = self.lock();
        if !state.documents.contains(uri) {
            return;
        }
        if let Some(entry) = state.versions.get_mut(uri).filter(|e| e.0.same(text)) {
            entry.1.put(version, value);
        }
    }
}
