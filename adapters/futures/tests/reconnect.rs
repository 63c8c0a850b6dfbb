//! The reconnecting client off tokio: on smol and on async-std, over async-net TCP with the
//! async-io timer, a server task killed and started again on the same port under the
//! client; with the app-level heartbeat on both sides.

mod common;

use std::net::SocketAddr;
use std::time::Duration;

use common::{calculator, within, Add, Pair, LIMIT};
use sansrpc::connection::keepalive::HeartbeatConfig;
use sansrpc::ext::reconnect::{Backoff, PendingPolicy, ReconnectPolicy, State};
use sansrpc_futures::{transport, AsyncIoTimer, Builder, Reconnect};

/// Serves the calculator on `listener`; dropping the task drops the listener and every
/// connection with it.
fn serve(listener: async_net::TcpListener) -> smol::Task<()> {
    smol::spawn(async move {
        let builder = Builder::new()
            .configure(|c| c.heartbeat = Some(HeartbeatConfig::answer_only()))
            .router(calculator());
        let mut connections = Vec::new();
        while let Ok((stream, _)) = listener.accept().await {
            let (_, driver) = builder
                .clone()
                .connect(transport::tcp(stream), AsyncIoTimer);
            connections.push(smol::spawn(driver));
        }
    })
}

async fn rebind(addr: SocketAddr) -> async_net::TcpListener {
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    loop {
        match async_net::TcpListener::bind(addr).await {
            Ok(listener) => return listener,
            Err(e) if std::time::Instant::now() > deadline => panic!("rebinding {addr}: {e}"),
            Err(_) => {
                async_io::Timer::after(Duration::from_millis(50)).await;
            }
        }
    }
}

fn connector(
    addr: SocketAddr,
) -> impl FnMut() -> sansrpc_futures::BoxFuture<
    std::io::Result<transport::ByteStream<async_net::TcpStream, async_net::TcpStream>>,
> + Send
       + 'static {
    use futures::FutureExt;
    move || async move { Ok(transport::tcp(async_net::TcpStream::connect(addr).await?)) }.boxed()
}

/// The scenario; `spawn` runs the supervisor on the runtime under test.
async fn scenario<S>(spawn: S)
where
    S: FnOnce(std::pin::Pin<Box<dyn std::future::Future<Output = ()> + Send>>),
{
    let listener = async_net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let server = serve(listener);
    let policy = ReconnectPolicy {
        backoff: Backoff::Exponential {
            initial: Duration::from_millis(20),
            max: Duration::from_millis(250),
            multiplier: 2.0,
            max_attempts: 100,
        },
        pending: PendingPolicy::ResendIdempotent,
        ..ReconnectPolicy::default()
    };
    let heartbeat = HeartbeatConfig::ping(Duration::from_millis(50), Duration::from_secs(2));
    let builder = Builder::new().configure(|c| c.heartbeat = Some(heartbeat));
    let (client, supervisor) = Reconnect::connect(builder, policy, connector(addr), AsyncIoTimer);
    let (done_tx, done_rx) = futures::channel::oneshot::channel();
    spawn(Box::pin(async move {
        let _ = done_tx.send(supervisor.await);
    }));
    client.wait_open().await.unwrap();
    let pair = Pair { a: 1.0, b: 2.0 };
    assert_eq!(client.call::<Add>(&pair).await.unwrap(), 3.0);

    let mut watch = client.watch();
    drop(server); // Cancels the server task: the listener and the connection go.
    assert_eq!(
        watch.wait_for(|s| s == State::Connecting).await,
        State::Connecting
    );
    let _server = serve(rebind(addr).await);
    client.wait_open().await.unwrap();
    assert_eq!(client.call_idempotent::<Add>(&pair).await.unwrap(), 3.0);
    assert_eq!(client.connections(), 2);

    client.close().await;
    done_rx.await.unwrap().unwrap();
    assert_eq!(client.state(), State::Closed);
}

#[test]
fn a_server_restarted_under_the_client_on_smol() {
    smol::block_on(within(LIMIT, scenario(|f| smol::spawn(f).detach())));
}

#[test]
fn a_server_restarted_under_the_client_on_async_std() {
    async_std::task::block_on(within(
        LIMIT,
        scenario(|f| {
            async_std::task::spawn(f);
        }),
    ));
}
