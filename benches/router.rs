//! Finding the handler: `Router::dispatch` among the 64 method names of an LSP server
//! (long shared prefixes such as `textDocument/`), each request answered by a raw handler
//! that writes `1`, so the lookup is most of what is measured.
//!
//! `cargo bench --bench router`; instructions per dispatch:
//! `valgrind --tool=callgrind` on the bench binary with `--bench --profile-time 1`.

use std::hint::black_box;
use std::time::Duration;

use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use sansrpc::router::{Reply, Router};
use sansrpc::{Id, RawValue, Request, Version};

/// The requests and notifications of LSP 3.17, as a server registers them.
const LSP: &[&str] = &[
    "initialize",
    "initialized",
    "shutdown",
    "exit",
    "$/cancelRequest",
    "$/progress",
    "$/setTrace",
    "$/logTrace",
    "window/showMessage",
    "window/logMessage",
    "window/workDoneProgress/cancel",
    "telemetry/event",
    "workspace/didChangeConfiguration",
    "workspace/didChangeWatchedFiles",
    "workspace/didChangeWorkspaceFolders",
    "workspace/symbol",
    "workspace/executeCommand",
    "workspace/willCreateFiles",
    "workspace/didCreateFiles",
    "workspace/willRenameFiles",
    "workspace/didRenameFiles",
    "workspace/willDeleteFiles",
    "workspace/didDeleteFiles",
    "textDocument/didOpen",
    "textDocument/didChange",
    "textDocument/willSave",
    "textDocument/willSaveWaitUntil",
    "textDocument/didSave",
    "textDocument/didClose",
    "textDocument/completion",
    "completionItem/resolve",
    "textDocument/hover",
    "textDocument/signatureHelp",
    "textDocument/declaration",
    "textDocument/definition",
    "textDocument/typeDefinition",
    "textDocument/implementation",
    "textDocument/references",
    "textDocument/documentHighlight",
    "textDocument/documentSymbol",
    "textDocument/codeAction",
    "codeAction/resolve",
    "textDocument/codeLens",
    "codeLens/resolve",
    "textDocument/documentLink",
    "documentLink/resolve",
    "textDocument/documentColor",
    "textDocument/colorPresentation",
    "textDocument/formatting",
    "textDocument/rangeFormatting",
    "textDocument/onTypeFormatting",
    "textDocument/rename",
    "textDocument/prepareRename",
    "textDocument/foldingRange",
    "textDocument/selectionRange",
    "textDocument/semanticTokens/full",
    "textDocument/semanticTokens/full/delta",
    "textDocument/semanticTokens/range",
    "textDocument/linkedEditingRange",
    "textDocument/moniker",
    "textDocument/inlayHint",
    "inlayHint/resolve",
    "textDocument/diagnostic",
    "workspace/diagnostic",
];

/// The methods an editor calls most while typing.
const ASKED: &[&str] = &[
    "textDocument/hover",
    "textDocument/completion",
    "textDocument/didChange",
    "$/cancelRequest",
    "textDocument/semanticTokens/full",
    "textDocument/inlayHint",
];

#[inline(never)]
fn dispatch_all(router: &Router, requests: &[Request<'static>], reply: &mut Reply) -> usize {
    let mut answered = 0;
    for request in requests {
        router.dispatch(request, reply);
        answered += reply.result_json().map_or(0, str::len);
    }
    answered
}

fn lookup(c: &mut Criterion) {
    let mut router = Router::new();
    for &name in LSP {
        router
            .raw_method(name, |_, out| {
                out.extend_from_slice(b"1");
                Ok(())
            })
            .unwrap();
    }
    let requests: Vec<Request<'static>> = ASKED
        .iter()
        .map(|&method| Request {
            id: Id::number(1),
            method: method.to_string().into(),
            params: Some(RawValue::from_string("[]".into()).unwrap().into()),
            version: Version::V2,
        })
        .collect();
    let mut reply = Reply::default();
    assert_eq!(dispatch_all(&router, &requests, &mut reply), ASKED.len());
    let mut group = c.benchmark_group("router_lookup_64_lsp_methods");
    group.throughput(Throughput::Elements(ASKED.len() as u64));
    group.warm_up_time(Duration::from_millis(500));
    group.measurement_time(Duration::from_secs(2));
    group.bench_function("dispatch", |b| {
        b.iter(|| dispatch_all(&router, black_box(&requests), &mut reply))
    });
    group.finish();
}

criterion_group!(benches, lookup);
criterion_main!(benches);
