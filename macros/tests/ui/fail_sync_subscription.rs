#[sansrpc_futures::rpc(sync, namespace = "eth")]
trait Api {
    #[subscription(name = "subscribe", item = u64, notification = "subscription", unsubscribe = "unsubscribe")]
    async fn heads(&self, pending: sansrpc_futures::PendingSubscription);
}

fn main() {}
