//! The open documents of a connection, keyed by URI.

use std::collections::BTreeMap;

use lsp_types::{
    DidChangeTextDocumentParams, DidCloseTextDocumentParams, DidOpenTextDocumentParams, Uri,
};

use super::encoding::PositionEncoding;
use super::text::TextDocument;
use super::warning::{DocumentError, Warning};

/// The documents a client has open, as `textDocument/didOpen`, `didChange` and `didClose`
/// leave them, with positions counted in the connection's encoding.
///
/// Feed it every text-document synchronisation notification, in the order they arrived and
/// before any request that came after them; read documents with [`get`](Self::get) or take
/// a [`snapshot`](Self::snapshot) (a cheap clone) for a handler that runs later. A client
/// keeps one too, fed the notifications it sends, and so agrees with the server by
/// construction.
///
/// No input makes it panic. What it had to adjust comes back as [`Warning`]s; what it
/// could not apply (a document that is not open) as a [`DocumentError`], with nothing
/// changed. URIs are compared as strings, exactly as the client sent them.
#[derive(Clone, Debug, Default)]
pub struct Documents {
    encoding: PositionEncoding,
    open: BTreeMap<Uri, TextDocument>,
}

impl Documents {
    /// No documents; positions count in `encoding` (the one negotiated at `initialize`, see
    /// [`PositionEncoding::negotiate`]).
    pub fn new(encoding: PositionEncoding) -> Documents {
        Documents {
            encoding,
            open: BTreeMap::new(),
        }
    }

    /// What positions count.
    pub fn encoding(&self) -> PositionEncoding {
        self.encoding
    }

    /// Counts positions in `encoding` from now on, in the open documents too (snapshots
    /// already taken keep theirs). Meant for a store made before `initialize`.
    pub fn set_encoding(&mut self, encoding: PositionEncoding) {
        self.encoding = encoding;
        for document in self.open.values_mut() {
            document.set_encoding(encoding);
        }
    }

    /// Applies `textDocument/didOpen`: the document is open with the given text, language
    /// and version. A document already open is replaced ([`Warning::AlreadyOpen`]): the
    /// client's latest word is what its editor shows.
    pub fn did_open(&mut self, params: &DidOpenTextDocumentParams) -> Vec<Warning> {
        let item = &params.text_document;
        if let Some(document) = self.open.get_mut(&item.uri) {
            let warning = Warning::AlreadyOpen {
                uri: item.uri.clone(),
                previous_version: document.version(),
            };
            document.reopen(item);
            return vec![warning];
        }
        let document = TextDocument::new(
            item.uri.clone(),
            item.language_id.clone(),
            item.version,
            &item.text,
            self.encoding,
        );
        self.open.insert(document.uri().clone(), document);
        Vec::new()
    }

    /// Applies `textDocument/didChange`: its content changes in order, each to the text the
    /// one before left, then its version (see [`TextDocument::apply_changes`] for what is
    /// adjusted and how). A document that is not open is an error, and nothing changes.
    pub fn did_change(
        &mut self,
        params: &DidChangeTextDocumentParams,
    ) -> Result<Vec<Warning>, DocumentError> {
        let identifier = &params.text_document;
        match self.open.get_mut(&identifier.uri) {
            Some(document) => {
                Ok(document.apply_changes(identifier.version, &params.content_changes))
            }
            None => Err(DocumentError::NotOpen {
                uri: identifier.uri.clone(),
            }),
        }
    }

    /// Applies `textDocument/didClose`: the document is no longer open, and is returned. A
    /// document that is not open is an error.
    pub fn did_close(
        &mut self,
        params: &DidCloseTextDocumentParams,
    ) -> Result<TextDocument, DocumentError> {
        let uri = &params.text_document.uri;
        self.open
            .remove(uri)
            .ok_or_else(|| DocumentError::NotOpen { uri: uri.clone() })
    }

    /// The open document `uri`, if it is open.
    pub fn get(&self, uri: &Uri) -> Option<&TextDocument> {
        self.open.get(uri)
    }

    /// A snapshot of the open document `uri`: a clone that shares the text (no text is
    /// copied) and that later changes do not reach.
    pub fn snapshot(&self, uri: &Uri) -> Option<TextDocument> {
        self.open.get(uri).cloned()
    }

    /// Whether `uri` is open.
    pub fn contains(&self, uri: &Uri) -> bool {
        self.open.contains_key(uri)
    }

    /// How many documents are open.
    pub fn len(&self) -> usize {
        self.open.len()
    }

    /// Whether no document is open.
    pub fn is_empty(&self) -> bool {
        self.open.is_empty()
    }

    /// The open documents, ordered by URI.
    pub fn iter(&self) -> impl Iterator<Item = &TextDocument> + '_ {
        self.open.values()
    }
}
