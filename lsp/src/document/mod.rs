//! Text documents: the store of open documents, and positions in the negotiated encoding.
//!
//! - [`PositionEncoding`]: what a position's `character` counts (UTF-8, UTF-16, UTF-32),
//!   and its negotiation from the client's `general.positionEncodings` (LSP 3.17).
//! - [`Documents`]: the open documents, fed `didOpen`, `didChange` and `didClose` as
//!   lsp-types gives them.
//! - [`TextDocument`]: one document, in a rope: a snapshot is a cheap clone, and an edit
//!   costs O(log n) and the length of its text, not the size of the document. Every
//!   conversion a server needs: position to byte offset or `char` index and back, a
//!   range's text, a line's text.
//!
//! Lines end with LF, CRLF or CR, and with nothing else (U+2028, form feed and NEL are
//! characters of a line). A position is resolved as the specification says where it says
//! anything (past a line's end: the end of its text; past the last line: the end of the
//! document), and otherwise as [`Adjustment`] describes (inside a character: its start;
//! between CR and LF: before the CR). Malformed notifications get a defined outcome and a
//! [`Warning`] (a range given end first, a version that does not increase, a second
//! `didOpen`), or a [`DocumentError`] with nothing changed (a document that is not open).
//! No input panics; a fuzz target and a property test against an independent model hold
//! the store to it.

mod encoding;
mod store;
mod text;
mod warning;

pub use encoding::{PositionEncoding, UnknownPositionEncoding};
pub use store::Documents;
pub use text::{DocumentLine, Resolved, ResolvedRange, TextDocument};
pub use warning::{Adjustment, DocumentError, Endpoint, Warning};
