#[sansrpc_futures::rpc(server)]
trait Api {
    async fn x(&self) -> Result<u64, sansrpc::ErrorObject<'static>>;
}

fn main() {}
