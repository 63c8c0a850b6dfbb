//! Method subscriptions on threads: a node's `newHeads` (Ethereum's `eth_subscribe`)
//! served by the blocking adapter and followed by its client, in one process over TCP on
//! 127.0.0.1. Prints the heads the client gets, the server's answer to its unsubscribe,
//! and how the server's sink saw the subscription end.

use std::sync::mpsc;
use std::sync::{Arc, Mutex};

use sansrpc::connection::subscriptions::MethodSubscription;
use sansrpc::router::Router;
use sansrpc::ErrorObject;
use sansrpc_blocking::{connect_tcp, serve_tcp, Options, SubscriptionRouter};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let (ended_tx, ended) = mpsc::channel();
    let ended_tx = Mutex::new(ended_tx);
    let mut router = Router::new();
    router.subscription(
        MethodSubscription::ethereum(),
        move |pending, (kind,): (String,)| {
            if kind != "newHeads" {
                return pending.reject(ErrorObject::fixed(-32602, "newHeads only"));
            }
            let Ok(sink) = pending.accept() else { return }; // the client has its id now
            let ended = ended_tx.lock().unwrap().clone();
            // A producer of its own: the handler's worker goes back to the pool.
            std::thread::spawn(move || {
                for number in 0u64..3 {
                    let head = serde_json::json!({ "number": format!("{number:#x}") });
                    if sink.send(&head).is_err() {
                        return; // unsubscribed or gone (send waits while the queue is full)
                    }
                }
                let _ = ended.send(sink.wait_closed());
            });
        },
    )?;
    let server = serve_tcp("127.0.0.1:0", Arc::new(router), Options::default())?;

    let client = connect_tcp(server.local_addr(), Options::default())?;
    let eth = MethodSubscription::ethereum();
    let mut heads = client.subscribe::<_, serde_json::Value>(&eth, &("newHeads",))?;
    for head in heads.by_ref().take(3) {
        println!("head {}", head?["number"]);
    }
    println!("unsubscribed: {}", heads.unsubscribe()?);
    println!("the server saw: {}", ended.recv()?);
    client.close();
    server.shutdown();
    Ok(())
}
