// A sync server with a subscription: mounted on the core Router (the blocking adapter
// serves it), its handler given the core's pending subscription.
use sansrpc_runtime::subscriptions::PendingSubscription;
use sansrpc::ErrorObject;

#[sansrpc_futures::rpc(sync, namespace = "eth")]
trait Api {
    #[method(name = "blockNumber")]
    async fn block_number(&self) -> Result<u64, ErrorObject<'static>>;
    #[subscription(name = "subscribe", item = u64, notification = "subscription", unsubscribe = "unsubscribe")]
    async fn heads(&self, pending: PendingSubscription, kind: String);
}

struct Node;

impl ApiSyncServer for Node {
    fn block_number(&self) -> Result<u64, ErrorObject<'static>> {
        Ok(7)
    }

    fn heads(&self, pending: PendingSubscription, kind: String) {
        if kind != "newHeads" {
            return pending.reject(ErrorObject::fixed(-32602, "newHeads only"));
        }
        if let Ok(sink) = pending.accept() {
            let _ = sink.send(&1u64);
        }
    }
}

fn main() {
    let router = Node.into_sync_router().unwrap();
    assert!(router.subscription_of("eth_subscribe").is_some());
}
