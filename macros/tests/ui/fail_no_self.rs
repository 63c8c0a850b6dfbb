#[sansrpc_futures::rpc(server)]
trait Api {
    #[method(name = "x")]
    async fn x(value: u64) -> Result<u64, sansrpc::ErrorObject<'static>>;
}

fn main() {}
