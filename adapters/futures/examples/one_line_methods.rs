//! Methods declared in one line with `sansrpc::method!`, served and called without a
//! turbofish, over TCP on 127.0.0.1 (smol): the README's `method!` snippet, compiled and run.
//!
//! `cargo run -p sansrpc-futures --example one_line_methods`

use sansrpc_futures::{transport, AsyncIoTimer, AsyncRouter, Builder};

#[derive(serde::Serialize, serde::Deserialize)]
pub struct AddParams {
    a: i64,
    b: i64,
}

sansrpc::method!(pub Add = "tools/add", AddParams => i64);
sansrpc::method!(pub Initialized = "notifications/initialized", ());

fn main() -> std::io::Result<()> {
    smol::block_on(async {
        let listener = async_net::TcpListener::bind("127.0.0.1:0").await?;
        let addr = listener.local_addr()?;
        // The server tells `main` once it has handled `Initialized`.
        let (handled, initialized) = smol::channel::bounded(1);
        smol::spawn(async move {
            let Ok((stream, _)) = listener.accept().await else {
                return;
            };
            let mut router = AsyncRouter::new();
            router
                .handle(Add, |p| async move { Ok(p.a + p.b) })
                .unwrap();
            router
                .notification::<Initialized, _, _>(move |()| {
                    let handled = handled.clone();
                    async move {
                        println!("initialized");
                        let _ = handled.send(()).await;
                    }
                })
                .unwrap();
            let (_client, driver) = Builder::new()
                .router(router)
                .connect(transport::tcp(stream), AsyncIoTimer);
            let _ = driver.await;
        })
        .detach();

        let stream = async_net::TcpStream::connect(addr).await?;
        let (client, driver) = Builder::new().connect(transport::tcp(stream), AsyncIoTimer);
        smol::spawn(driver).detach();
        client.notify::<Initialized>(&()).await.unwrap();
        initialized.recv().await.unwrap();
        let sum = client
            .request(Add, &AddParams { a: 1, b: 2 })
            .await
            .unwrap();
        println!("1 + 2 = {sum}");
        assert_eq!(sum, 3);
        Ok(())
    })
}
