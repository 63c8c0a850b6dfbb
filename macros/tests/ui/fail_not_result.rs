#[sansrpc_futures::rpc(client)]
trait Api {
    #[method(name = "x")]
    async fn x(&self) -> u64;
}

fn main() {}
