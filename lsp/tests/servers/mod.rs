//! What the tests of the client against real language servers share.

use std::path::{Path, PathBuf};

use sansrpc_lsp::document::TextDocument;
use sansrpc_lsp::lsp_types::{Range, Uri};

/// A folder of its own for the workspace.
pub fn workspace(name: &str) -> PathBuf {
    let dir =
        PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join(format!("{name}-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

pub fn uri(path: &Path) -> Uri {
    format!("file://{}", path.display()).parse().unwrap()
}

/// The range of the first `needle` in `doc`, in the document's encoding.
pub fn range_of(doc: &TextDocument, needle: &str) -> Range {
    let text = doc.to_string();
    let at = text
        .find(needle)
        .unwrap_or_else(|| panic!("{needle:?} in {text:?}"));
    doc.range_of(at..at + needle.len())
}
