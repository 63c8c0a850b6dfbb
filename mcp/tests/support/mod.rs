//! What the MCP tests share: two routers connected over one loopback TCP socket on the
//! futures driver (smol), with the MCP profile, and a bounded run.

use std::time::Duration;

use futures::future::Either;
use sansrpc::connection::{Config, Profile};
use sansrpc_futures::{transport, AsyncIoTimer, AsyncRouter, Builder, Client};

/// `server` on one end of a loopback connection and `client` on the other; the client
/// end's connection. Both drivers run on smol's global executor.
pub async fn loopback(server: AsyncRouter, client: AsyncRouter) -> Client {
    let listener = async_net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    smol::spawn(async move {
        let (stream, _) = listener.accept().await.unwrap();
        let builder = Builder::new()
            .config(Config::for_profile(Profile::Mcp))
            .router(server);
        let (_, driver) = builder.connect(transport::tcp(stream), AsyncIoTimer);
        let _ = driver.await;
    })
    .detach();
    let stream = async_net::TcpStream::connect(addr).await.unwrap();
    let builder = Builder::new()
        .config(Config::for_profile(Profile::Mcp))
        .router(client);
    let (client, driver) = builder.connect(transport::tcp(stream), AsyncIoTimer);
    smol::spawn(driver).detach();
    client
}

/// Runs `f` to completion on smol; fails the test after 20 s.
pub fn run<F: std::future::Future<Output = ()>>(f: F) {
    smol::block_on(async {
        let f = std::pin::pin!(f);
        let limit = std::pin::pin!(async_io::Timer::after(Duration::from_secs(20)));
        if let Either::Right(_) = futures::future::select(f, limit).await {
            panic!("not done within 20 s");
        }
    });
}
