//! What a server keeps per connection: [`Session`].

use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use lsp_types::{InitializeParams, Uri};

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
}
