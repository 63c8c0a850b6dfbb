// An alias that is not a `Result`: said at the return type, with what to write.
type Answer<T> = Option<T>;

#[sansrpc_futures::rpc(server, client)]
trait Api {
    #[method(name = "x")]
    async fn x(&self) -> Answer<u64>;
}

fn main() {}
