//! Servers in a Web Worker, the page as their client: this test module itself runs in the
//! worker (the page hands it its compiled `WebAssembly.Module` and the name of an entry point
//! exported here), the way an application ships one wasm module for its page and its worker.

use std::cell::RefCell;
use std::rc::Rc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use futures::channel::oneshot;
use sansrpc::router::{Call, Layer, Next, Outcome};
use sansrpc::{RawValue, Timeout};
use sansrpc_futures::Timer;
use sansrpc_wasm::{Builder, PostMessage};
use wasm_bindgen::closure::Closure;
use wasm_bindgen::prelude::wasm_bindgen;
use wasm_bindgen::{JsCast, JsValue};
use wasm_bindgen_test::wasm_bindgen_test;

use crate::calc::{self, Add, Divide, Multiply, Pair, Tick, Ticks};

#[wasm_bindgen(inline_js = r#"
export function start_worker(entry, module, port) {
  // wasm-bindgen-test-runner serves this module's glue as /wasm-bindgen-test.js; an
  // application's worker imports its own.
  const glue = JSON.stringify(new URL("wasm-bindgen-test.js", location.href).href);
  const source = `import { initSync } from ${glue};
import * as wasm from ${glue};
self.onmessage = (event) => {
  const [entry, module, port] = event.data;
  initSync({ module });
  wasm[entry](port);
};`;
  const url = URL.createObjectURL(new Blob([source], { type: "text/javascript" }));
  const worker = new Worker(url, { type: "module" });
  worker.postMessage([entry, module, port], [port]);
  return worker;
}
"#)]
extern "C" {
    /// Starts a dedicated module worker that instantiates `module` (this test module) and
    /// calls its export `entry` with `port` (transferred).
    fn start_worker(entry: &str, module: &JsValue, port: &web_sys::MessagePort) -> web_sys::Worker;
}

/// A worker running `entry`, and the page's end of the channel it was given.
pub(crate) fn worker(entry: &str) -> (web_sys::Worker, web_sys::MessagePort) {
    let channel = web_sys::MessageChannel::new().unwrap();
    let worker = start_worker(entry, &wasm_bindgen::module(), &channel.port2());
    (worker, channel.port1())
}

/// The next string posted to `target` (a port, or a worker: a status line from a worker,
/// outside JSON-RPC), through its `onmessage`.
pub(crate) async fn status(target: &JsValue) -> String {
    let (tx, rx) = oneshot::channel();
    let tx = RefCell::new(Some(tx));
    let on_message =
        Closure::<dyn FnMut(web_sys::MessageEvent)>::new(move |e: web_sys::MessageEvent| {
            if let Some(tx) = tx.borrow_mut().take() {
                let _ = tx.send(e.data().as_string().unwrap_or_default());
            }
        });
    js_sys::Reflect::set(target, &"onmessage".into(), on_message.as_ref()).unwrap();
    let line = rx.await.unwrap();
    js_sys::Reflect::set(target, &"onmessage".into(), &JsValue::NULL).unwrap();
    line
}

/// Posts `line` to `target` (a port, or a worker's own scope: to the page).
pub(crate) fn post_status(target: &JsValue, line: &str) {
    let post = js_sys::Reflect::get(target, &"postMessage".into()).unwrap();
    let post: &js_sys::Function = post.unchecked_ref();
    post.call1(target, &JsValue::from_str(line)).unwrap();
}

/// Counts the async calls the router's layers saw finish, and their longest run: timed on
/// the driver's clock (`performance.now()`, in the worker).
#[derive(Default)]
struct Finished {
    calls: AtomicU64,
    longest: Mutex<Duration>,
}

struct Observed(Arc<Finished>);

impl Layer for Observed {
    fn call(&self, call: &Call<'_>, out: &mut Vec<u8>, next: Next<'_>) -> Outcome {
        next.run(call, out)
    }

    fn finished(&self, _call: &Call<'_>, _outcome: &Outcome, elapsed: Duration) {
        self.0.calls.fetch_add(1, Ordering::SeqCst);
        let mut longest = self.0.longest.lock().unwrap();
        *longest = (*longest).max(elapsed);
    }
}

sansrpc::method!(Repeat = "repeat", (usize,) => String);
sansrpc::method!(FinishedCalls = "finished_calls", () => u64);

/// In the worker: the calculator (and `repeat`, `finished_calls`) served to the page over
/// the worker's own `postMessage`, messages bounded at 4 KiB; the status port is told how
/// the connection ended.
#[wasm_bindgen]
pub fn sansrpc_test_calculator_worker(status: web_sys::MessagePort) {
    let finished = Arc::new(Finished::default());
    let mut router = calc::calculator();
    router.sync().layer(Observed(Arc::clone(&finished)));
    router
        .method::<Repeat, _, _>(|(n,)| async move { Ok("x".repeat(n)) })
        .unwrap();
    let seen = Arc::clone(&finished);
    router
        .method::<FinishedCalls, _, _>(move |()| {
            let seen = Arc::clone(&seen);
            async move { Ok(seen.calls.load(Ordering::SeqCst)) }
        })
        .unwrap();
    let builder = Builder::new()
        .router(router)
        .configure(|c| c.limits.max_frame_bytes = 4096);
    let spawned = sansrpc_wasm::serve_this_worker(builder).expect("in a dedicated worker");
    wasm_bindgen_futures::spawn_local(async move {
        let ended = spawned.driver.await;
        post_status(&status, &format!("ended: {ended:?}"));
    });
}

#[wasm_bindgen_test]
fn post_message_outside_a_worker_is_a_clear_error() {
    let err = sansrpc_wasm::serve_this_worker(Builder::new()).unwrap_err();
    assert_eq!(err.kind(), std::io::ErrorKind::Unsupported, "{err}");
    let err = PostMessage::this_worker(&sansrpc::Limits::default()).unwrap_err();
    assert!(
        err.to_string().contains("not in a dedicated worker"),
        "{err}"
    );
}

#[wasm_bindgen_test]
async fn a_router_in_a_worker_answers_the_page() {
    let (worker, status_port) = worker("sansrpc_test_calculator_worker");
    let spawned = sansrpc_wasm::connect_worker(&worker, Builder::new());
    let client = &spawned.client;

    // Typed calls, sync and async handlers, an error object, a batch.
    let sum = client.call::<Add>(&Pair { a: 1.5, b: 2.25 }).await.unwrap();
    assert_eq!(sum, 3.75);
    let product = client.call::<Multiply>(&Pair { a: 6.0, b: 7.0 });
    assert_eq!(product.await.unwrap(), 42.0);
    let err = client.call::<Divide>(&Pair { a: 1.0, b: 0.0 }).await;
    assert_eq!(err.unwrap_err().code(), Some(1001));
    let mut batch = client.batch();
    let add = batch.call::<Add>(&Pair { a: 1.0, b: 1.0 });
    let multiply = batch.call::<Multiply>(&Pair { a: 3.0, b: 4.0 });
    let mut results = batch.send().await.unwrap();
    assert_eq!(add.take(&mut results).unwrap(), 2.0);
    assert_eq!(multiply.take(&mut results).unwrap(), 12.0);

    // Notifications, in order, before the call sent after them.
    for _ in 0..5 {
        client.notify::<Tick>(&()).await.unwrap();
    }
    assert_eq!(client.call::<Ticks>(&()).await.unwrap(), 5);

    // The async calls were timed on the worker's clock by the router's layer: multiply
    // twice (once alone, once in the batch) and divide.
    let finished = client.call::<FinishedCalls>(&()).await.unwrap();
    assert!(finished >= 3, "{finished} async calls seen finished");

    // A message over the worker's 4 KiB: the worker's transport ends with a clear error and
    // stops listening. postMessage tells the page nothing, so its call waits for its
    // deadline.
    let big = client
        .call_raw_with(
            "repeat",
            Some(&RawValue::from_string(format!("[\"{}\"]", "y".repeat(5000))).unwrap()),
            Timeout::After(Duration::from_millis(300)),
        )
        .await
        .unwrap_err();
    assert!(big.is_timeout(), "{big}");
    let ended = status(&status_port).await;
    assert!(
        ended.contains("InvalidData") && ended.contains("over the limit of 4096"),
        "{ended}"
    );
    spawned.shutdown.shutdown(Duration::ZERO);
    spawned.driver.await.unwrap();
    worker.terminate();
}

#[wasm_bindgen_test]
async fn an_answer_over_the_pages_limit_ends_its_connection_with_a_clear_error() {
    let (worker, _status) = worker("sansrpc_test_calculator_worker");
    let builder = Builder::new().configure(|c| c.limits.max_frame_bytes = 1024);
    let spawned = sansrpc_wasm::connect_worker(&worker, builder);
    // Within the limit, then an answer of 2000 bytes.
    let small = spawned.client.call::<Repeat>(&(10,)).await.unwrap();
    assert_eq!(small, "x".repeat(10));
    let big = spawned.client.call::<Repeat>(&(2000,)).await.unwrap_err();
    assert!(big.is_closed(), "{big}");
    let err = spawned.driver.await.unwrap_err();
    assert_eq!(err.kind(), std::io::ErrorKind::InvalidData, "{err}");
    assert!(err.to_string().contains("over the limit of 1024"), "{err}");
    worker.terminate();
}

#[wasm_bindgen_test]
async fn a_message_port_carries_a_connection_and_posted_objects_are_read_as_json() {
    // Both ends on the page: a server with the calculator on one, a client on the other.
    let channel = web_sys::MessageChannel::new().unwrap();
    let server =
        sansrpc_wasm::connect_port(channel.port1(), Builder::new().router(calc::calculator()));
    let client = sansrpc_wasm::connect_port(channel.port2(), Builder::new());
    let sum = client.client.call::<Add>(&Pair { a: 2.0, b: 3.0 }).await;
    assert_eq!(sum.unwrap(), 5.0);
    // Posted objects (vscode-jsonrpc's browser writer posts them) are read as JSON; a value
    // that is not JSON is answered -32700, and the connection goes on.
    let raw = web_sys::MessageChannel::new().unwrap();
    let answers = Rc::new(RefCell::new(Vec::<String>::new()));
    let seen = Rc::clone(&answers);
    let on_message =
        Closure::<dyn FnMut(web_sys::MessageEvent)>::new(move |e: web_sys::MessageEvent| {
            seen.borrow_mut()
                .push(e.data().as_string().unwrap_or_default());
        });
    raw.port2()
        .set_onmessage(Some(on_message.as_ref().unchecked_ref()));
    let _raw_server =
        sansrpc_wasm::connect_port(raw.port1(), Builder::new().router(calc::calculator()));
    let request =
        js_sys::JSON::parse(r#"{"jsonrpc":"2.0","id":7,"method":"add","params":{"a":1,"b":2}}"#)
            .unwrap();
    raw.port2().post_message(&request).unwrap();
    raw.port2().post_message(&JsValue::UNDEFINED).unwrap();
    raw.port2()
        .post_message(&JsValue::from_str(
            r#"{"jsonrpc":"2.0","id":8,"method":"add","params":[4,5]}"#,
        ))
        .unwrap();
    sansrpc_wasm::BrowserTimer
        .sleep_until(sansrpc_runtime::time::Instant::now() + Duration::from_millis(100))
        .await;
    let answers = answers.borrow().clone();
    assert_eq!(answers.len(), 3, "{answers:?}");
    assert!(
        answers[0].contains(r#""id":7"#) && answers[0].contains(r#""result":3"#),
        "{answers:?}"
    );
    assert!(answers[1].contains("-32700"), "{answers:?}");
    assert!(
        answers[2].contains(r#""id":8"#) && answers[2].contains(r#""result":9"#),
        "{answers:?}"
    );

    // Each end shuts down on its own: postMessage tells neither when the other goes.
    client.shutdown.shutdown(Duration::ZERO);
    client.driver.await.unwrap();
    server.shutdown.shutdown(Duration::ZERO);
    server.driver.await.unwrap();
}
