//! The Language Server Protocol for sansrpc.
//!
//! [`lsp_types`] is re-exported as it is: its request, notification and parameter types
//! are the ones this crate takes and gives.
//!
//! [`server`] is a language server over them: lsp-types' own request and notification
//! types register as they are, every handler (notifications included) gets a
//! [`Context`](server::Context) that reaches the editor, the capabilities follow from what
//! is registered, and the documents are kept for it, in the negotiated position encoding.
//! One definition runs on tokio, smol and async-std (`futures` feature, on by default) and
//! on the blocking adapter's threads (`blocking` feature). `server.serve_stdio().await`
//! (`tokio` feature) and `server.serve_stdio_blocking()` (`blocking`) serve it on stdio in
//! one call, under the LSP profile, and return the exit status.
//!
//! `client` (the module of the `client` feature) is a typed language client: it starts a server as a
//! child process on tokio, initializes it with given capabilities (VS Code's and
//! Neovim's ship with it), opens and edits documents through the same document store,
//! sends lsp-types' requests, collects diagnostics per document and version, and shuts
//! the server down with its exit status.
//!
//! [`document`] keeps the text documents a server (or a client) has open: it applies
//! `textDocument/didOpen`, `didChange` (full and incremental, several changes in one
//! notification applied in order) and `didClose`, and converts every position in the
//! `positionEncoding` negotiated at `initialize` (UTF-8, UTF-16 or UTF-32). It does no
//! I/O: notifications in, documents and warnings out.
//!
//! ```
//! use sansrpc_lsp::document::{Documents, PositionEncoding};
//! use sansrpc_lsp::lsp_types::{
//!     DidChangeTextDocumentParams, DidOpenTextDocumentParams, Position, Range,
//!     TextDocumentContentChangeEvent, TextDocumentItem, Uri, VersionedTextDocumentIdentifier,
//! };
//!
//! // The client offered nothing: positions count UTF-16 code units.
//! let encoding = PositionEncoding::negotiate(None, &PositionEncoding::ALL);
//! assert_eq!(encoding, PositionEncoding::Utf16);
//! let mut documents = Documents::new(encoding);
//!
//! let uri: Uri = "file:///notes.txt".parse().unwrap();
//! documents.did_open(&DidOpenTextDocumentParams {
//!     text_document: TextDocumentItem::new(uri.clone(), "plaintext".into(), 1, "a😀b\r\nline two".into()),
//! });
//!
//! // 😀 is two UTF-16 code units: "b" is at character 3 of line 0.
//! let at = |line, character| Position::new(line, character);
//! let warnings = documents.did_change(&DidChangeTextDocumentParams {
//!     text_document: VersionedTextDocumentIdentifier::new(uri.clone(), 2),
//!     content_changes: vec![
//!         // Replace "b" with "c 𝄞", then insert "!" after the 𝄞 (applied to the result).
//!         TextDocumentContentChangeEvent {
//!             range: Some(Range::new(at(0, 3), at(0, 4))),
//!             range_length: None,
//!             text: "c 𝄞".into(),
//!         },
//!         TextDocumentContentChangeEvent {
//!             range: Some(Range::new(at(0, 7), at(0, 7))),
//!             range_length: None,
//!             text: "!".into(),
//!         },
//!     ],
//! });
//! assert!(warnings.unwrap().is_empty());
//!
//! // A snapshot for a hover: shares the text, copies none of it.
//! let doc = documents.snapshot(&uri).unwrap();
//! assert_eq!(doc.version(), 2);
//! assert_eq!(doc.line(0).unwrap(), "a😀c 𝄞!");
//! assert_eq!(doc.line(1).unwrap(), "line two");
//! assert_eq!(doc.text_in(Range::new(at(0, 1), at(0, 5))), "😀c ");
//! // Byte offsets, and back: "!" is at byte 11 (1 + 4 + 1 + 1 + 4).
//! assert_eq!(doc.offset_at(at(0, 7)), 11);
//! assert_eq!(doc.position_at(11), at(0, 7));
//! ```
#![deny(missing_docs)]

#[cfg(feature = "client")]
pub mod client;
pub mod document;
pub mod server;

pub use lsp_types;
