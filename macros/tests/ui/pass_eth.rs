use sansrpc::ErrorObject;
use sansrpc_futures::PendingSubscription;

#[derive(serde::Serialize, serde::Deserialize)]
pub struct Header {
    number: String,
}

#[sansrpc_futures::rpc(server, client, namespace = "eth")]
pub trait Eth {
    #[method(name = "chainId")]
    async fn chain_id(&self) -> Result<String, ErrorObject<'static>>;
    #[method(name = "getBlockByNumber", param_kind = map)]
    async fn block(&self, number: String, full: bool) -> Result<Option<Header>, ErrorObject<'static>>;
    #[subscription(name = "subscribe", item = Header, unsubscribe = "unsubscribe", notification = "subscription")]
    async fn new_heads(&self, pending: PendingSubscription, kind: String);
}

// A client and a sync server, without a namespace.
#[sansrpc_futures::rpc(client, sync)]
trait Plain {
    #[method]
    async fn ping(&self) -> Result<(), ErrorObject<'static>>;
    // Arguments named as what the generated code holds.
    #[method(param_kind = map)]
    async fn echo(&self, client: String, params: u8, this: bool) -> Result<String, ErrorObject<'static>>;
}

impl PlainSyncServer for Node {
    fn ping(&self) -> Result<(), ErrorObject<'static>> {
        Ok(())
    }
    fn echo(&self, client: String, _params: u8, _this: bool) -> Result<String, ErrorObject<'static>> {
        Ok(client)
    }
}

struct Node;

impl EthServer for Node {
    async fn chain_id(&self) -> Result<String, ErrorObject<'static>> {
        Ok("0x1".into())
    }
    async fn block(&self, number: String, _full: bool) -> Result<Option<Header>, ErrorObject<'static>> {
        Ok(Some(Header { number }))
    }
    async fn new_heads(&self, pending: PendingSubscription, _kind: String) {
        pending.reject(ErrorObject::fixed(-32602, "none"));
    }
}

fn main() {
    let _router = Node.into_router().unwrap();
    let _core: sansrpc::router::Router = Node.into_sync_router().unwrap();
    fn client_side(client: &sansrpc_futures::Client) {
        let _ = client.chain_id();
        let _ = client.block("latest".into(), false);
        let _ = client.new_heads("newHeads".into());
        let _ = client.ping();
        let _ = client.echo("me".into(), 1, true);
    }
    let _ = client_side;
}
