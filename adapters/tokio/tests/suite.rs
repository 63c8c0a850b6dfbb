//! The behaviour suite (`tests/behaviour/suite.rs`, shared by every driver) on the tokio
//! adapter, over real TCP sockets.

#[path = "../../../tests/behaviour/suite.rs"]
mod suite;

use std::sync::Arc;
use std::time::Duration;

use sansrpc::ext::keepalive::HeartbeatConfig;
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
                builder = builder.heartbeat(HeartbeatConfig::answer_only());
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
