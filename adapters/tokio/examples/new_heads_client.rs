use futures::StreamExt;
use sansrpc::connection::subscriptions::MethodSubscription;
use sansrpc_tokio::{sansrpc, ws, Builder};

#[tokio::main(flavor = "current_thread")]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let url = std::env::args().nth(1);
    let conn = ws::connect(
        url.as_deref().unwrap_or("ws://127.0.0.1:8545"),
        Builder::new(),
    )
    .await?;
    let eth = MethodSubscription::ethereum();
    let mut heads = conn
        .client
        .subscribe::<_, serde_json::Value>(&eth, &("newHeads",))
        .await?;
    for _ in 0..3 {
        let head = heads.next().await.ok_or("the node went away")??;
        println!("block {}", head["number"]);
    }
    println!("unsubscribed: {}", heads.unsubscribe().await?);
    Ok(())
}
