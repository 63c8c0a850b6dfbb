//! The behaviour suite (`tests/behaviour/suite.rs`, shared by every driver) on the tokio
//! adapter, over real TCP sockets.

#[path = "../../../tests/behaviour/suite.rs"]
mod suite;

use std::sync::Arc;
use std::time::Duration;

use sansrpc::connection::keepalive::HeartbeatConfig;
use sansrpc::router::Router;
use sansrpc_tokio::{AsyncRouter, Builder};
use suite::{Options, Served};

fn serve(router: Router, options: Options) -> Served {
    let (addr_tx, addr_rx) = std::sync::mpsc::channel();
    let (stop_tx, stop_rx) = tokio::sync::oneshot::channel::<()>();
    let router = Arc::new(AsyncRouter::from_router(router));
    let thread = std::thread::spawn(move || {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        runtime.block_on(async move {
            let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
            addr_tx.send(listener.local_addr().unwrap()).unwrap();
            let mut builder = Builder::new().shared_router(router);
            if options.heartbeat {
                builder = builder.configure(|c| c.heartbeat = Some(HeartbeatConfig::answer_only()));
            }
            if let Some(n) = options.max_inflight {
                let mut config = builder.connection_config().clone();
                config.max_inflight_incoming = n;
                builder = builder.config(config);
            }
            let stop = async {
                let _ = stop_rx.await;
            };
            let grace = Duration::from_millis(100);
            sansrpc_tokio::serve_tcp(listener, builder, stop, grace)
                .await
                .unwrap();
        })
    });
    Served {
        addr: addr_rx.recv().unwrap(),
        stop: Box::new(move || {
            let _ = stop_tx.send(());
            thread.join().unwrap();
        }),
    }
}

behaviour_suite!(serve);

/// The tokio driver with async handlers and the default configuration: a burst of 10,000
/// pipelined requests, more than its handlers (64 at once) and its in-flight table (1,024)
/// hold, is answered in full with results.
#[test]
fn a_burst_beyond_the_in_flight_table_reaches_async_handlers_in_full() {
    use std::io::Write;
    const BURST: u64 = 10_000;
    let (addr_tx, addr_rx) = std::sync::mpsc::channel();
    let server = std::thread::spawn(move || {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        runtime.block_on(async move {
            let mut router = AsyncRouter::new();
            router
                .raw_method("inc", |params| async move {
                    tokio::task::yield_now().await;
                    let (n,): (u64,) = serde_json::from_str(params.unwrap().get()).unwrap();
                    Ok(sansrpc::RawValue::from_string((n + 1).to_string()).unwrap())
                })
                .unwrap();
            let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
            addr_tx.send(listener.local_addr().unwrap()).unwrap();
            let (stream, _) = listener.accept().await.unwrap();
            let connection =
                sansrpc_tokio::spawn(Builder::new().router(router), sansrpc_tokio::tcp(stream));
            connection.driver.await.unwrap().unwrap();
        })
    });
    let mut peer = suite::Peer::connect(addr_rx.recv().unwrap());
    let mut writer = peer.writer();
    let burst = suite::framed_burst(BURST as usize, |i| {
        format!(r#"{{"jsonrpc":"2.0","method":"inc","params":[{i}],"id":{i}}}"#)
    });
    let written = std::thread::spawn(move || writer.write_all(burst.as_bytes()));
    let mut busy = 0;
    for _ in 0..BURST {
        let answer = peer.expect();
        if answer["error"]["code"] == -32002 {
            busy += 1;
            continue;
        }
        assert_eq!(
            answer["result"],
            answer["id"].as_u64().unwrap() + 1,
            "{answer}"
        );
    }
    assert_eq!(busy, 0, "no request answered Server busy");
    written.join().unwrap().unwrap();
    peer.half_close();
    assert!(peer.recv().is_none());
    server.join().unwrap();
}
