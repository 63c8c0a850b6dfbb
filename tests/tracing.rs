//! With the `tracing` feature, every handled call runs inside an `rpc.handle` span that
//! names its method.
#![cfg(feature = "tracing")]

use std::sync::{Arc, Mutex};

use sansrpc::router::{Reply, Router};
use sansrpc::{Id, Request, Version};
use tracing::span::{Attributes, Id as SpanId, Record};
use tracing::{field::Visit, Event, Metadata, Subscriber};

/// Records the name and `method` field of every span created.
struct Spans(Arc<Mutex<Vec<(String, String)>>>);

struct MethodField(String);

impl Visit for MethodField {
    fn record_str(&mut self, field: &tracing::field::Field, value: &str) {
        if field.name() == "method" {
            self.0 = value.to_owned();
        }
    }

    fn record_debug(&mut self, field: &tracing::field::Field, value: &dyn std::fmt::Debug) {
        if field.name() == "method" {
            self.0 = format!("{value:?}");
        }
    }
}

impl Subscriber for Spans {
    fn enabled(&self, _: &Metadata<'_>) -> bool {
        true
    }

    fn new_span(&self, span: &Attributes<'_>) -> SpanId {
        let mut method = MethodField(String::new());
        span.record(&mut method);
        let mut spans = self.0.lock().unwrap();
        spans.push((span.metadata().name().to_owned(), method.0));
        SpanId::from_u64(spans.len() as u64)
    }

    fn record(&self, _: &SpanId, _: &Record<'_>) {}
    fn record_follows_from(&self, _: &SpanId, _: &SpanId) {}
    fn event(&self, _: &Event<'_>) {}
    fn enter(&self, _: &SpanId) {}
    fn exit(&self, _: &SpanId) {}
}

#[test]
fn each_call_gets_a_span_naming_its_method() {
    let spans = Arc::new(Mutex::new(Vec::new()));
    let mut router = Router::new();
    router
        .raw_method("math.add", |_, out| {
            out.extend_from_slice(b"3");
            Ok(())
        })
        .unwrap();
    let request = Request {
        id: Id::number(1),
        method: "math.add".into(),
        params: None,
        version: Version::V2,
    };
    let mut reply = Reply::default();
    tracing::subscriber::with_default(Spans(spans.clone()), || {
        router.dispatch(&request, &mut reply)
    });
    assert_eq!(reply.result_json(), Some("3"));
    assert_eq!(
        *spans.lock().unwrap(),
        [("rpc.handle".to_owned(), "math.add".to_owned())]
    );
}
