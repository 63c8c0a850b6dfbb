#[sansrpc_futures::rpc(server)]
trait Api {
    #[method(name = "x")]
    async fn x(&self) -> Result<u64, std::io::Error>;
}

fn main() {}
