// Trailing `Option` args: a client may leave them `None` (sent as `["newHeads"]`, not
// `["newHeads",null]`: tested over a socket in sansrpc-tokio's tests/rpc_trait.rs).
use sansrpc::ErrorObject;
use sansrpc_futures::PendingSubscription;

#[derive(serde::Serialize, serde::Deserialize)]
pub struct Filter {
    address: String,
}

#[sansrpc_futures::rpc(server, client, namespace = "eth")]
pub trait Eth {
    #[method(name = "getBalance")]
    async fn balance(&self, address: String, block: Option<String>) -> Result<String, ErrorObject<'static>>;
    // Only the trailing ones are left out: `first` is sent as `null` when `last` is not.
    #[method(name = "call")]
    async fn contract_call(&self, first: Option<u64>, middle: u64, last: Option<u64>) -> Result<u64, ErrorObject<'static>>;
    #[subscription(name = "subscribe", item = Filter, notification = "subscription", unsubscribe = "unsubscribe", lag = disconnect, capacity = 4 << 20)]
    async fn logs(&self, pending: PendingSubscription, kind: String, filter: Option<Filter>);
}

struct Node;

impl EthServer for Node {
    async fn balance(&self, _address: String, _block: Option<String>) -> Result<String, ErrorObject<'static>> {
        Ok("0x0".into())
    }
    async fn contract_call(&self, _first: Option<u64>, middle: u64, _last: Option<u64>) -> Result<u64, ErrorObject<'static>> {
        Ok(middle)
    }
    async fn logs(&self, pending: PendingSubscription, _kind: String, _filter: Option<Filter>) {
        pending.reject(ErrorObject::fixed(-32602, "none"));
    }
}

fn main() {
    let _router = Node.into_router().unwrap();
    fn client_side(client: &sansrpc_futures::Client) {
        let _ = client.balance("0x00".into(), None);
        let _ = client.contract_call(None, 1, None);
        let _ = client.logs("newHeads".into(), None);
    }
    let _ = client_side;
}
