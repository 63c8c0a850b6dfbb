#[sansrpc_futures::rpc(server)]
trait Api {
    #[method(name = "x")]
    fn x(&self) -> Result<u64, sansrpc::ErrorObject<'static>>;
}

fn main() {}
