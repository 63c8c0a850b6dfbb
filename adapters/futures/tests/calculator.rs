//! The calculator over real sockets on 127.0.0.1 and Unix sockets, on smol and on async-std.

mod common;

use common::{calculator, exercise, within, LIMIT};
use sansrpc_futures::{transport, AsyncIoTimer, Builder, ByteStream};

#[test]
fn tcp_on_smol() {
    smol::block_on(within(LIMIT, async {
        let listener = async_net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let server = smol::spawn(async move {
            let (stream, _) = listener.accept().await.unwrap();
            let builder = Builder::new().router(calculator());
            builder
                .connect(transport::tcp(stream), AsyncIoTimer)
                .1
                .await
        });
        let stream = async_net::TcpStream::connect(addr).await.unwrap();
        let (client, driver) = Builder::new().connect(transport::tcp(stream), AsyncIoTimer);
        let driver = smol::spawn(driver);
        exercise(&client).await;
        drop(client);
        driver.await.unwrap();
        server.await.unwrap();
    }));
}

#[cfg(unix)]
#[test]
fn unix_on_smol() {
    smol::block_on(within(LIMIT, async {
        let dir = std::env::temp_dir().join(format!("sansrpc-futures-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("smol.sock");
        let _ = std::fs::remove_file(&path);
        let listener = async_net::unix::UnixListener::bind(&path).unwrap();
        let server = smol::spawn(async move {
            let (stream, _) = listener.accept().await.unwrap();
            let builder = Builder::new().router(calculator());
            builder
                .connect(transport::unix(stream), AsyncIoTimer)
                .1
                .await
        });
        let stream = async_net::unix::UnixStream::connect(&path).await.unwrap();
        let (client, driver) = Builder::new().connect(transport::unix(stream), AsyncIoTimer);
        let driver = smol::spawn(driver);
        exercise(&client).await;
        drop(client);
        driver.await.unwrap();
        server.await.unwrap();
        let _ = std::fs::remove_file(&path);
    }));
}

#[test]
fn tcp_on_async_std() {
    use async_std::net::{TcpListener, TcpStream};
    async_std::task::block_on(within(LIMIT, async {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let server = async_std::task::spawn(async move {
            let (stream, _) = listener.accept().await.unwrap();
            let transport = ByteStream::new(stream.clone(), stream);
            let builder = Builder::new().router(calculator());
            builder.connect(transport, AsyncIoTimer).1.await
        });
        let stream = TcpStream::connect(addr).await.unwrap();
        let transport = ByteStream::new(stream.clone(), stream);
        let (client, driver) = Builder::new().connect(transport, AsyncIoTimer);
        let driver = async_std::task::spawn(driver);
        exercise(&client).await;
        drop(client);
        driver.await.unwrap();
        server.await.unwrap();
    }));
}

#[cfg(unix)]
#[test]
fn unix_on_async_std() {
    use async_std::os::unix::net::{UnixListener, UnixStream};
    async_std::task::block_on(within(LIMIT, async {
        let dir = std::env::temp_dir().join(format!("sansrpc-futures-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("async-std.sock");
        let _ = std::fs::remove_file(&path);
        let listener = UnixListener::bind(&path).await.unwrap();
        let server = async_std::task::spawn(async move {
            let (stream, _) = listener.accept().await.unwrap();
            // One stream split in two halves, for streams that are not `Clone`.
            let builder = Builder::new().router(calculator());
            builder
                .connect(ByteStream::split(stream), AsyncIoTimer)
                .1
                .await
        });
        let stream = UnixStream::connect(&path).await.unwrap();
        let transport = ByteStream::new(stream.clone(), stream);
        let (client, driver) = Builder::new().connect(transport, AsyncIoTimer);
        let driver = async_std::task::spawn(driver);
        exercise(&client).await;
        drop(client);
        driver.await.unwrap();
        server.await.unwrap();
        let _ = std::fs::remove_file(&path);
    }));
}
