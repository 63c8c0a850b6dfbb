// Several namespaces in one trait: the trait's, and each method's own.
use sansrpc::ErrorObject;
use sansrpc_futures::PendingSubscription;

#[sansrpc_futures::rpc(server, client, namespace = "eth")]
pub trait Node {
    // eth_chainId
    #[method(name = "chainId")]
    async fn chain_id(&self) -> Result<String, ErrorObject<'static>>;
    // net_version
    #[method(name = "version", namespace = "net")]
    async fn net_version(&self) -> Result<String, ErrorObject<'static>>;
    // web3_clientVersion
    #[method(name = "clientVersion", namespace = "web3")]
    async fn client_version(&self) -> Result<String, ErrorObject<'static>>;
    // rpc_modules, no namespace: written whole.
    #[method(name = "rpc_modules", namespace = "")]
    async fn modules(&self) -> Result<Vec<String>, ErrorObject<'static>>;
    // parity_subscribe / parity_subscription / parity_unsubscribe
    #[subscription(name = "subscribe", namespace = "parity", item = u64, notification = "subscription", unsubscribe = "unsubscribe")]
    async fn parity(&self, pending: PendingSubscription, kind: String);
    // eth_subscribe / eth_subscription / eth_unsubscribe
    #[subscription(name = "subscribe", item = u64, notification = "subscription", unsubscribe = "unsubscribe")]
    async fn eth(&self, pending: PendingSubscription, kind: String);
}

struct Dev;

impl NodeServer for Dev {
    async fn chain_id(&self) -> Result<String, ErrorObject<'static>> {
        Ok("0x539".into())
    }
    async fn net_version(&self) -> Result<String, ErrorObject<'static>> {
        Ok("1337".into())
    }
    async fn client_version(&self) -> Result<String, ErrorObject<'static>> {
        Ok("dev".into())
    }
    async fn modules(&self) -> Result<Vec<String>, ErrorObject<'static>> {
        Ok(vec!["eth".into(), "net".into(), "web3".into()])
    }
    async fn parity(&self, pending: PendingSubscription, _kind: String) {
        pending.reject(ErrorObject::fixed(-32602, "none"));
    }
    async fn eth(&self, pending: PendingSubscription, _kind: String) {
        pending.reject(ErrorObject::fixed(-32602, "none"));
    }
}

fn main() {
    let mut router = Dev.into_router().unwrap();
    // Each wire name is taken: registering it again is refused.
    for name in [
        "eth_chainId",
        "net_version",
        "web3_clientVersion",
        "rpc_modules",
        "parity_subscribe",
        "parity_unsubscribe",
        "eth_subscribe",
        "eth_unsubscribe",
    ] {
        let again = router.raw_method(name, |_| async { Err(ErrorObject::internal_error()) });
        assert!(again.is_err(), "{name} is registered");
    }
    let free = router.raw_method("eth_version", |_| async { Err(ErrorObject::internal_error()) });
    assert!(free.is_ok());
}
