use std::time::Duration;

use sansrpc::connection::subscriptions::MethodSubscription;
use sansrpc::ErrorObject;
use sansrpc_tokio::{http, sansrpc, AsyncRouter, Builder, ServeOptions};
use serde_json::json;

#[tokio::main]
async fn main() -> std::io::Result<()> {
    let mut router = AsyncRouter::new();
    let eth = MethodSubscription::ethereum(); // eth_subscribe, eth_subscription, eth_unsubscribe
    router
        .subscription(eth, |pending, (kind,): (String,)| async move {
            if kind != "newHeads" {
                return pending.reject(ErrorObject::fixed(-32602, "newHeads only"));
            }
            let Ok(sink) = pending.accept().await else {
                return;
            };
            let mut blocks = tokio::time::interval(Duration::from_millis(200));
            for number in 0u64.. {
                blocks.tick().await;
                // Waits while its queue (1 MiB) is full; an error once the client left.
                if sink
                    .send(&json!({ "number": format!("{number:#x}") }))
                    .await
                    .is_err()
                {
                    break;
                }
            }
        })
        .unwrap();
    let port = std::env::var("PORT").unwrap_or_else(|_| "8545".into());
    let listener = tokio::net::TcpListener::bind(format!("127.0.0.1:{port}")).await?;
    println!("listening on {}", listener.local_addr()?);
    let shutdown = async { _ = tokio::signal::ctrl_c().await };
    let (builder, options) = (Builder::new().router(router), ServeOptions::default());
    let grace = Duration::from_secs(1);
    http::serve_upgrading_with(listener, builder, options, shutdown, grace).await
}
