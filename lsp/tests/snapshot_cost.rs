//! What a snapshot and a small edit of a 10 MB document cost in heap: a snapshot copies no
//! text, and a one-character edit (after a snapshot, so the rope copies what it shares)
//! copies a path of the rope, not the document. Counted by a global allocator; one test in
//! this binary, so that nothing else allocates meanwhile.

use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicUsize, Ordering};

use sansrpc_lsp::document::{Documents, PositionEncoding};
use sansrpc_lsp::lsp_types::{
    DidChangeTextDocumentParams, DidOpenTextDocumentParams, Position, Range,
    TextDocumentContentChangeEvent, TextDocumentItem, Uri, VersionedTextDocumentIdentifier,
};

struct Counting;

static ALLOCATED: AtomicUsize = AtomicUsize::new(0);

unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        ALLOCATED.fetch_add(layout.size(), Ordering::Relaxed);
        System.alloc(layout)
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        System.dealloc(ptr, layout)
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        ALLOCATED.fetch_add(new_size, Ordering::Relaxed);
        System.realloc(ptr, layout, new_size)
    }
}

#[global_allocator]
static GLOBAL: Counting = Counting;

fn allocated_by<T>(f: impl FnOnce() -> T) -> (T, usize) {
    let before = ALLOCATED.load(Ordering::Relaxed);
    let value = f();
    (value, ALLOCATED.load(Ordering::Relaxed) - before)
}

#[test]
fn snapshots_copy_no_text_and_small_edits_copy_a_path_not_the_document() {
    let line = "let value = compute(42); // naïve café 😀 中文\n";
    let text = line.repeat(10_000_000 / line.len());
    assert!(text.len() > 9_900_000);
    let uri: Uri = "file:///big.rs".parse().unwrap();
    let mut documents = Documents::new(PositionEncoding::Utf16);
    documents.did_open(&DidOpenTextDocumentParams {
        text_document: TextDocumentItem::new(uri.clone(), "rust".into(), 1, text),
    });

    let (snapshot, bytes) = allocated_by(|| documents.snapshot(&uri).unwrap());
    assert!(bytes < 1024, "a snapshot allocated {bytes} bytes");

    // A hover: one line's text, read from the snapshot.
    let middle = snapshot.line_count() / 2;
    let (hover, bytes) = allocated_by(|| snapshot.line(middle).map(|l| l.len()));
    assert_eq!(hover, Some(line.len() - 1));
    assert!(
        bytes <= line.len(),
        "reading a line allocated {bytes} bytes"
    );

    for (version, text, end) in [(2, "x", 10), (3, "", 11)] {
        let params = DidChangeTextDocumentParams {
            text_document: VersionedTextDocumentIdentifier::new(uri.clone(), version),
            content_changes: vec![TextDocumentContentChangeEvent {
                range: Some(Range::new(
                    Position::new(middle, 10),
                    Position::new(middle, end),
                )),
                range_length: None,
                text: text.into(),
            }],
        };
        let (warnings, bytes) = allocated_by(|| documents.did_change(&params).unwrap());
        assert!(warnings.is_empty());
        assert!(
            bytes < 64 * 1024,
            "a one-character edit allocated {bytes} bytes"
        );
    }
    // The snapshot still has the text it had.
    assert_eq!(snapshot.line(middle).unwrap(), line.trim_end());
    // The "x" inserted at 10, then deleted.
    let now = documents.get(&uri).unwrap();
    assert_eq!(
        (now.version(), now.line(middle).unwrap()),
        (3, line.trim_end().into())
    );
}
