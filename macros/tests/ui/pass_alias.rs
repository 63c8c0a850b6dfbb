// `Result` under another name: an alias with the error fixed, and a crate's own.
use sansrpc::ErrorObject;

pub type RpcResult<T> = Result<T, ErrorObject<'static>>;

mod errors {
    pub type Result<T> = std::result::Result<T, sansrpc::ErrorObject<'static>>;
}

#[sansrpc_futures::rpc(server, client, sync, namespace = "eth")]
pub trait Eth {
    #[method(name = "chainId")]
    async fn chain_id(&self) -> RpcResult<String>;
    #[method(name = "blockNumber")]
    async fn block_number(&self) -> errors::Result<u64>;
}

struct Node;

impl EthServer for Node {
    async fn chain_id(&self) -> RpcResult<String> {
        Ok("0x1".into())
    }
    async fn block_number(&self) -> errors::Result<u64> {
        Ok(1)
    }
}

impl EthSyncServer for Node {
    fn chain_id(&self) -> RpcResult<String> {
        Ok("0x1".into())
    }
    fn block_number(&self) -> errors::Result<u64> {
        Ok(1)
    }
}

fn main() {
    let _router = EthServer::into_router(Node).unwrap();
    let _core = EthSyncServer::into_sync_router(Node).unwrap();
    // The client gets the alias's `T`.
    async fn client_side(client: &sansrpc_futures::Client) {
        let _: String = client.chain_id().await.unwrap();
        let _: u64 = client.block_number().await.unwrap();
    }
    let _ = client_side;
}
