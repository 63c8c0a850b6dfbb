//! The example page of `docs/browser.md`: calls the calculator (`sansrpc-tokio`'s
//! `ws_server` example) and shows the Ethereum node's `newHeads` (`eth_node`) as they arrive.
//!
//! Built as a `.wasm` (a `cdylib`) for wasm-bindgen's CLI, then shrunk with `wasm-opt`
//! (`scripts/wasm-page`, which CI runs with its size budget); `calculator_page.html` beside
//! it is the page. The servers' URLs are the `data-url` of the elements it writes into
//! (`ws://127.0.0.1:7701` and `ws://127.0.0.1:8545` without one). The browser test loads the
//! optimized module into its own page and waits for both lines.
#![cfg(target_arch = "wasm32")]

use futures::StreamExt;
use sansrpc_wasm::sansrpc::connection::subscriptions::MethodSubscription;
use sansrpc_wasm::sansrpc::method::Method;
use serde::{Deserialize, Serialize};
use wasm_bindgen::prelude::*;

/// The calculator's operands. It reads any JSON number (as an `f64`); the page's are
/// integers, written with `itoa`: an `f64` member would bring Rust's float printing into
/// the page (3 KB of its module) for `1.0` and `2.0`.
#[derive(Serialize)]
struct Pair {
    a: i32,
    b: i32,
}

/// What the page reads of a `newHeads` item (the node's other members are skipped).
#[derive(Deserialize)]
struct Head {
    number: String,
}

/// The calculator's `add`, by name: `{"a": 1, "b": 2}`.
enum Add {}
impl Method for Add {
    const NAME: &'static str = "add";
    type Params = Pair;
    type Result = f64;
}

/// The element `id` of the page.
fn element(id: &str) -> Result<web_sys::Element, JsError> {
    let document = web_sys::window()
        .and_then(|w| w.document())
        .ok_or_else(|| JsError::new("not in a page"))?;
    document
        .get_element_by_id(id)
        .ok_or_else(|| JsError::new(&format!("no element #{id}")))
}

/// The URL of the server whose answers go into element `id`: its `data-url`, or `default`.
fn url(id: &str, default: &str) -> Result<String, JsError> {
    Ok(element(id)?
        .get_attribute("data-url")
        .unwrap_or_else(|| default.to_owned()))
}

/// Writes `text` into the element `id`.
fn show(id: &str, text: &str) -> Result<(), JsError> {
    element(id)?.set_text_content(Some(text));
    Ok(())
}

#[wasm_bindgen(start)]
pub async fn start() -> Result<(), JsError> {
    let calculator = sansrpc_wasm::connect(&url("sum", "ws://127.0.0.1:7701")?).await?;
    let sum = calculator.call::<Add>(&Pair { a: 1, b: 2 }).await?;
    // Printed by JavaScript's `Number#toString`: Rust's `{sum}` would bring core's float
    // printing into the page (10 KB of its module).
    let sum = js_sys::Number::from(sum).to_string_with_radix(10);
    let sum = String::from(sum.map_err(|_| JsError::new("a sum not printable"))?);
    show("sum", &["1 + 2 = ", &sum].concat())?;

    let node = sansrpc_wasm::connect(&url("head", "ws://127.0.0.1:8545")?).await?;
    let eth = MethodSubscription::ethereum();
    let mut heads = node.subscribe::<_, Head>(&eth, &("newHeads",)).await?;
    while let Some(head) = heads.next().await {
        show("head", &["block \"", &head?.number, "\""].concat())?;
    }
    Ok(())
}
