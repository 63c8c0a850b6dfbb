#[sansrpc_futures::rpc(server, client, namespace = "eth")]
trait Api {
    #[method(name = "blockNumber")]
    async fn block_number(&self) -> Result<u64, sansrpc::ErrorObject<'static>>;
    #[method(name = "blockNumber")]
    async fn head(&self) -> Result<u64, sansrpc::ErrorObject<'static>>;
}

fn main() {}
