//! sansrpc-wasm in a real browser: run by `tests/chromium.rs`, which starts the project's
//! own servers (the WebSocket calculator, `ws_server`; the Ethereum node, `eth_node`; a
//! sansrpc WebSocket server whose method `never` is never answered)
//! and builds this file for `wasm32-unknown-unknown` with their URLs, then runs it with
//! `wasm-bindgen-test-runner` in headless Chromium. Every call goes over the browser's
//! WebSocket, every deadline sleeps on `setTimeout`, every clock reading is
//! `performance.now()`.
#![cfg(target_arch = "wasm32")]

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use futures::future::join_all;
use futures::StreamExt;
use sansrpc::connection::subscriptions::MethodSubscription;
use sansrpc::ext::interceptors::{CallOutcome, Interceptor, Interceptors, Outgoing};
use sansrpc::{ErrorObject, Timeout};
use sansrpc_futures::{PendingSubscription, Timer};
use sansrpc_runtime::time::Instant;
use sansrpc_wasm::reconnect::{self, Backoff, ReconnectPolicy, State};
use sansrpc_wasm::{BrowserTimer, Builder, CallError, Client};
use serde_json::Value;
use wasm_bindgen_test::{wasm_bindgen_test, wasm_bindgen_test_configure};

#[path = "../../futures/fixtures/calculator.rs"]
mod calc;
#[path = "browser/lsp.rs"]
mod lsp;
#[path = "browser/worker.rs"]
mod worker;
use calc::{Add, AddPositional, Divide, Multiply, Pair, Subtract, Tick, Ticks};

wasm_bindgen_test_configure!(run_in_browser);

/// `ws://127.0.0.1:PORT` of the calculator and of the node, baked in by tests/chromium.rs.
const CALCULATOR: Option<&str> = option_env!("SANSRPC_WASM_CALCULATOR_URL");
const ETH_NODE: Option<&str> = option_env!("SANSRPC_WASM_ETH_NODE_URL");
/// A sansrpc WebSocket server whose method `never` is never answered; it lists this page's
/// origin among those it accepts.
const NEVER: Option<&str> = option_env!("SANSRPC_WASM_NEVER_URL");
/// The same server accepting only `https://app.example.com`: it refuses this page.
const REFUSING: Option<&str> = option_env!("SANSRPC_WASM_REFUSING_URL");
/// `http://127.0.0.1:PORT/`: the example page (`examples/calculator_page.rs`) as
/// `scripts/wasm-page` wrote it, after `wasm-opt -Oz`.
const PAGE: Option<&str> = option_env!("SANSRPC_WASM_PAGE_URL");

fn url(url: Option<&'static str>) -> &'static str {
    url.expect("built without the servers' URLs: run it through tests/chromium.rs")
}

async fn calculator() -> Client {
    sansrpc_wasm::connect(url(CALCULATOR))
        .await
        .expect("connect to the calculator")
}

#[wasm_bindgen_test]
async fn a_call_is_answered() {
    let client = calculator().await;
    let sum = client.call::<Add>(&Pair { a: 1.5, b: 2.25 }).await.unwrap();
    assert_eq!(sum, 3.75);
    // The same method, params by position; and an async handler on the server.
    assert_eq!(
        client.call::<AddPositional>(&(2.0, 3.0)).await.unwrap(),
        5.0
    );
    let product = client
        .call::<Multiply>(&Pair { a: 6.0, b: 7.0 })
        .await
        .unwrap();
    assert_eq!(product, 42.0);
}

#[wasm_bindgen_test]
async fn calls_at_once_and_a_batch_are_answered_each_to_its_caller() {
    let client = calculator().await;
    // Twenty calls in flight together, each answered to its own caller.
    let calls = (0..20).map(|i| {
        let client = client.clone();
        async move {
            client
                .call::<Multiply>(&Pair {
                    a: i as f64,
                    b: 3.0,
                })
                .await
        }
    });
    let products: Vec<f64> = join_all(calls)
        .await
        .into_iter()
        .map(Result::unwrap)
        .collect();
    let expected: Vec<f64> = (0..20).map(|i| i as f64 * 3.0).collect();
    assert_eq!(products, expected);

    // One JSON array: two calls, a notification, and a call that fails, in their places.
    let mut batch = client.batch();
    let add = batch.call::<Add>(&Pair { a: 1.0, b: 1.0 });
    batch.notify::<Tick>(&());
    let subtract = batch.call::<Subtract>(&Pair { a: 10.0, b: 4.0 });
    let divide = batch.call::<Divide>(&Pair { a: 1.0, b: 0.0 });
    let mut results = batch.send().await.unwrap();
    assert_eq!(results.len(), 3);
    assert_eq!(add.take(&mut results).unwrap(), 2.0);
    assert_eq!(subtract.take(&mut results).unwrap(), 6.0);
    assert_eq!(divide.take(&mut results).unwrap_err().code(), Some(1001));
}

#[wasm_bindgen_test]
async fn an_error_object_reaches_the_caller() {
    let client = calculator().await;
    let err = client
        .call::<Divide>(&Pair { a: 1.0, b: 0.0 })
        .await
        .unwrap_err();
    match err {
        sansrpc::method::CallError::Rpc(e) => {
            assert_eq!(e.code, 1001);
            assert_eq!(e.message, "division by zero");
        }
        other => panic!("expected the server's error object, got {other}"),
    }
    // A method the server does not have: the core's -32601.
    let raw = client.call_raw("no_such_method", None).await.unwrap_err();
    assert_eq!(raw.code(), Some(-32601), "{raw}");
}

#[wasm_bindgen_test]
async fn notifications_reach_the_server_in_order() {
    let client = calculator().await;
    let before = client.call::<Ticks>(&()).await.unwrap();
    for _ in 0..5 {
        client.notify::<Tick>(&()).await.unwrap();
    }
    // The server handles a connection's messages in order: its count includes them by the
    // time it answers the call sent after them (other tests may tick too: at least 5).
    let after = client.call::<Ticks>(&()).await.unwrap();
    assert!(after >= before + 5, "ticks {before} then {after}");
}

#[wasm_bindgen_test]
async fn a_deadline_fires_on_set_timeout() {
    let client = sansrpc_wasm::connect(url(NEVER))
        .await
        .expect("connect to the server that never answers");
    let deadline = Duration::from_millis(200);
    let start = Instant::now();
    let err = client
        .call_raw_with("never", None, Timeout::After(deadline))
        .await
        .unwrap_err();
    assert!(err.is_timeout(), "{err}");
    // Not before its time (the clock is performance.now()).
    assert!(start.elapsed() >= deadline, "{:?}", start.elapsed());

    // A call answered long before its deadline: the sleep for it is cleared, and the
    // connection goes on.
    let client = calculator().await;
    let answered = client
        .call_with::<Add>(
            &Pair { a: 1.0, b: 2.0 },
            Timeout::After(Duration::from_secs(60)),
        )
        .await;
    assert_eq!(answered.unwrap(), 3.0);
}

/// Every path that reads the clock or sleeps on wasm32 runs in one of these tests, so none
/// traps at run time: the `BrowserTimer` (here), the driver's deadline sleep
/// (`a_deadline_fires_on_set_timeout`), the WebSocket's `bufferedAmount` re-check
/// (`output_waits_while_the_browser_holds_a_mebibyte_unsent`), the reconnect supervisor's
/// backoff and clock (`a_reconnecting_client_opens_a_new_socket_when_the_server_hangs_up`),
/// sansrpc-runtime's `Clock`, `system_clock` and timed client interceptors
/// (`the_runtime_clocks_read_performance_now`), the server's timing of async calls for its
/// router's layers (`worker::a_router_in_a_worker_answers_the_page`), and the
/// `BrowserExecutor`'s spawn and sleep under sansrpc-lsp's debounced analysis
/// (`lsp::a_language_server_in_a_worker_answers_a_hover_after_edits_with_emoji`).
#[wasm_bindgen_test]
async fn the_browser_timer_sleeps_until_its_deadline_and_a_dropped_sleep_is_cleared() {
    let timer = BrowserTimer;
    let deadline = Instant::now() + Duration::from_millis(30);
    timer.sleep_until(deadline).await;
    assert!(Instant::now() >= deadline);
    // A sleep dropped before it is due: its setTimeout is cleared (were it not, its
    // callback would run after being freed, which throws); a later one still wakes.
    let long = timer.sleep_until(Instant::now() + Duration::from_millis(20));
    let first = futures::future::select(Box::pin(long), Box::pin(std::future::ready(()))).await;
    drop(first);
    timer
        .sleep_until(Instant::now() + Duration::from_millis(60))
        .await;
    // A deadline already passed: done at once.
    timer.sleep_until(Instant::now()).await;
}

/// Counts the calls the interceptors saw end, and the time they took.
#[derive(Default)]
struct Timed {
    ended: AtomicUsize,
    longest: Mutex<Duration>,
}

struct Timing(Arc<Timed>);

impl Interceptor for Timing {
    fn before(&self, _call: &mut Outgoing<'_>) -> Result<(), ErrorObject<'static>> {
        Ok(())
    }

    fn after(&self, _method: &str, _outcome: CallOutcome<'_>, elapsed: Duration) {
        self.0.ended.fetch_add(1, Ordering::SeqCst);
        let mut longest = self.0.longest.lock().unwrap();
        *longest = (*longest).max(elapsed);
    }
}

#[wasm_bindgen_test]
async fn the_runtime_clocks_read_performance_now() {
    // The pieces of sansrpc-runtime that read the host's clock.
    let clock = sansrpc_runtime::Clock::new();
    let at = clock.now();
    assert_eq!(clock.instant(clock.to_std(at)), at);
    let system = sansrpc_runtime::system_clock();
    let (a, b) = (system(), system());
    assert!(b >= a);
    // Client interceptors time each call on it (sansrpc_runtime::Observe).
    let timed = Arc::new(Timed::default());
    let client = calculator()
        .await
        .with_interceptors(Interceptors::new().with(Timing(Arc::clone(&timed))));
    client.call::<Add>(&Pair { a: 1.0, b: 2.0 }).await.unwrap();
    let mut batch = client.batch();
    batch.call::<Add>(&Pair { a: 3.0, b: 4.0 });
    batch.send().await.unwrap();
    assert_eq!(timed.ended.load(Ordering::SeqCst), 2);
}

#[wasm_bindgen_test]
async fn new_heads_arrive_then_the_subscription_ends() {
    let spawned = sansrpc_wasm::connect_with(Builder::new(), url(ETH_NODE))
        .await
        .expect("connect to the node");
    let client = &spawned.client;
    let chain: String = client
        .call_raw("eth_chainId", None)
        .await
        .unwrap()
        .get()
        .into();
    assert_eq!(chain, "\"0x539\"");

    let eth = MethodSubscription::ethereum();
    let mut heads = client
        .subscribe::<_, Value>(&eth, &("newHeads",))
        .await
        .unwrap();
    let mut numbers = Vec::new();
    let mut parent = None;
    while numbers.len() < 3 {
        let head = heads.next().await.expect("the subscription ended").unwrap();
        let number = head["number"].as_str().unwrap();
        let number = u64::from_str_radix(number.trim_start_matches("0x"), 16).unwrap();
        // Each block follows the one before.
        if let Some(parent) = parent {
            assert_eq!(head["parentHash"], parent, "block {number}");
        }
        parent = Some(head["hash"].clone());
        numbers.push(number);
    }
    assert_eq!(numbers[1], numbers[0] + 1, "{numbers:?}");
    assert_eq!(numbers[2], numbers[0] + 2, "{numbers:?}");
    assert!(
        heads.unsubscribe().await.unwrap(),
        "eth_unsubscribe said false"
    );

    // Shut down: the driver's task ends cleanly.
    spawned.shutdown.shutdown(Duration::from_millis(100));
    spawned.driver.await.unwrap();
}

/// What the page calls of an Ethereum node: `EthClient`, on every `AsRef<Client>`, is
/// generated from it (the node implements the same methods with `#[rpc(server)]`), through
/// `sansrpc_wasm::rpc` (the `macros` feature).
#[sansrpc_wasm::rpc(client, namespace = "eth")]
trait Eth {
    #[method(name = "chainId")]
    async fn chain_id(&self) -> Result<String, ErrorObject<'static>>;

    #[method(name = "getBlockByNumber")]
    async fn block_by_number(
        &self,
        tag: String,
        full: bool,
    ) -> Result<Option<Value>, ErrorObject<'static>>;

    #[subscription(
        name = "subscribe",
        item = Value,
        notification = "subscription",
        unsubscribe = "unsubscribe",
        ids = hex
    )]
    async fn new_heads(&self, pending: PendingSubscription, kind: String);
}

#[wasm_bindgen_test]
async fn the_rpc_traits_client_calls_and_subscribes() {
    let node = sansrpc_wasm::connect(url(ETH_NODE))
        .await
        .expect("connect to the node");
    assert_eq!(node.chain_id().await.unwrap(), "0x539");
    let genesis = node
        .block_by_number("0x0".to_owned(), false)
        .await
        .unwrap()
        .expect("the genesis block");
    assert_eq!(genesis["number"], "0x0", "{genesis}");
    // Past the head: `null`.
    let future = node.block_by_number("0xffffffff".to_owned(), false).await;
    assert_eq!(future.unwrap(), None);

    let mut heads = node.new_heads("newHeads".to_owned()).await.unwrap();
    let mut numbers = Vec::new();
    while numbers.len() < 3 {
        let head = heads.next().await.expect("the subscription ended").unwrap();
        let number = head["number"].as_str().unwrap().to_owned();
        numbers.push(u64::from_str_radix(number.trim_start_matches("0x"), 16).unwrap());
    }
    assert_eq!(numbers[2], numbers[0] + 2, "{numbers:?}");
    assert!(heads.unsubscribe().await.unwrap());
    // The node refuses a kind it does not serve, with its error object.
    let refused = node.new_heads("pendingTransactions".to_owned()).await;
    assert_eq!(refused.unwrap_err().code(), Some(-32602));
}

#[wasm_bindgen_test]
async fn a_socket_that_never_opens_is_a_clear_error() {
    // Nothing listens on port 9 (discard) of the loopback: the browser's 1006.
    let err = sansrpc_wasm::connect("ws://127.0.0.1:9").await.unwrap_err();
    assert_eq!(err.kind(), std::io::ErrorKind::ConnectionRefused, "{err}");
    assert!(err.to_string().contains("closed before it opened"), "{err}");
    // A scheme the browser's WebSocket refuses (it throws a SyntaxError).
    let err = sansrpc_wasm::connect("ftp://127.0.0.1/").await.unwrap_err();
    assert_eq!(err.kind(), std::io::ErrorKind::InvalidInput, "{err}");
}

#[wasm_bindgen_test]
async fn a_server_that_does_not_list_the_page_origin_refuses_it() {
    // Its handshake answer is 403; the page sees only a socket that closed (1006).
    let err = sansrpc_wasm::connect(url(REFUSING)).await.unwrap_err();
    assert_eq!(err.kind(), std::io::ErrorKind::ConnectionRefused, "{err}");
    assert!(err.to_string().contains("code 1006"), "{err}");
    // The same server, listing this page's origin, accepts it (the deadline test calls it).
    sansrpc_wasm::connect(url(NEVER)).await.unwrap();
}

#[wasm_bindgen_test]
async fn a_reconnecting_client_opens_a_new_socket_when_the_server_hangs_up() {
    let policy = ReconnectPolicy {
        backoff: Backoff::Exponential {
            initial: Duration::from_millis(50),
            max: Duration::from_secs(1),
            multiplier: 2.0,
            max_attempts: 5,
        },
        ..ReconnectPolicy::default()
    };
    let conn = reconnect::connect(url(NEVER), Builder::new(), policy);
    let client = &conn.client;
    client.wait_open().await.unwrap();
    assert_eq!(client.connections(), 1);
    let pong = client.call_raw("ping", None).await.unwrap();
    assert_eq!(pong.get(), "\"pong\"");

    let mut watch = client.watch();
    // The server answers and closes the socket; the answer may lose the race with the close.
    let hung_up = client.call_raw("hang_up", None).await;
    assert!(
        hung_up
            .as_ref()
            .map_or_else(CallError::is_closed, |r| r.get() == "true"),
        "{hung_up:?}"
    );
    // Lost, then open again on a new socket (after a backoff on setTimeout).
    loop {
        let state = watch.changed().await;
        assert_ne!(state, State::Closed, "the client gave up");
        if state == State::Open && client.connections() == 2 {
            break;
        }
    }
    let pong = client.call_raw("ping", None).await.unwrap();
    assert_eq!(pong.get(), "\"pong\"");

    client.close().await;
    conn.task.await.unwrap();
    assert_eq!(client.state(), State::Closed);
}

#[wasm_bindgen_test]
async fn a_message_over_the_limit_closes_the_socket_with_a_clear_error() {
    // Headers of about 1.5 KB against a limit of 1 KiB on one message.
    let builder = Builder::new().configure(|c| c.limits.max_frame_bytes = 1024);
    let spawned = sansrpc_wasm::connect_with(builder, url(ETH_NODE))
        .await
        .expect("connect to the node");
    let eth = MethodSubscription::ethereum();
    let mut heads = spawned
        .client
        .subscribe::<_, Value>(&eth, &("newHeads",))
        .await
        .unwrap();
    // The first header is refused: the subscription ends with the connection.
    match heads.next().await {
        None | Some(Err(_)) => {}
        Some(Ok(head)) => panic!("a header over the limit was delivered: {head}"),
    }
    let err = spawned.driver.await.unwrap_err();
    assert_eq!(err.kind(), std::io::ErrorKind::InvalidData, "{err}");
    // Closed with the code the browser sent (it refuses 1009 from a page: 4009 stands for
    // it).
    assert!(err.to_string().contains("closed with 4009"), "{err}");
    assert!(spawned
        .client
        .call::<Add>(&Pair { a: 1.0, b: 1.0 })
        .await
        .unwrap_err()
        .is_closed());
}

#[wasm_bindgen_test]
async fn output_waits_while_the_browser_holds_a_mebibyte_unsent() {
    let client = sansrpc_wasm::connect(url(NEVER)).await.expect("connect");
    // Two calls queued before the driver runs: the first, 2 MiB, leaves the browser's
    // `bufferedAmount` over the transport's 1 MiB mark within the same turn, so the second
    // waits on the transport's setTimeout re-check before it is sent.
    let big = format!("[\"{}\"]", "x".repeat(2 << 20));
    let big = sansrpc::RawValue::from_string(big).unwrap();
    let first = client.call_raw("ping", Some(&big));
    let second = client.call_raw("ping", None);
    let (first, second) = futures::future::join(first, second).await;
    assert_eq!(first.unwrap().get(), "\"pong\"");
    assert_eq!(second.unwrap().get(), "\"pong\"");
}

#[wasm_bindgen::prelude::wasm_bindgen(inline_js = r#"
export async function load_page(base, calculator, node) {
  for (const [id, url] of [["sum", calculator], ["head", node]]) {
    const p = document.createElement("p");
    p.id = id;
    p.dataset.url = url;
    document.body.appendChild(p);
  }
  const glue = await import(base + "calculator_page.js");
  await glue.default({ module_or_path: base + "calculator_page_bg.wasm" });
}

export function text_of(id) {
  return document.getElementById(id).textContent;
}
"#)]
extern "C" {
    /// Adds the page's two elements (with the servers' URLs) to this page, and loads the
    /// example page's module from `base`, which starts it.
    async fn load_page(base: &str, calculator: &str, node: &str);

    /// The text of the element `id`.
    fn text_of(id: &str) -> String;
}

#[wasm_bindgen_test]
async fn the_example_page_runs_as_wasm_opt_left_it() {
    load_page(url(PAGE), url(CALCULATOR), url(ETH_NODE)).await;
    // It writes its sum, then each new block: wait for both (the test's timeout bounds it).
    let timer = BrowserTimer;
    while !(text_of("sum") == "1 + 2 = 3" && text_of("head").starts_with("block \"0x")) {
        timer
            .sleep_until(Instant::now() + Duration::from_millis(20))
            .await;
    }
}
