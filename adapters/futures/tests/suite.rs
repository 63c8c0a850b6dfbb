//! The behaviour suite (`tests/behaviour/suite.rs`, shared by every driver) on the futures
//! driver under smol, over real TCP sockets.

#[path = "../../../tests/behaviour/suite.rs"]
mod suite;

use std::sync::{Arc, Mutex};
use std::time::Duration;

use futures::future::Either;
use sansrpc::connection::keepalive::HeartbeatConfig;
use sansrpc::router::Router;
use sansrpc_futures::{transport, AsyncIoTimer, AsyncRouter, Builder, ShutdownHandle};
use suite::{Options, Served};

fn serve(router: Router, options: Options) -> Served {
    let (addr_tx, addr_rx) = std::sync::mpsc::channel();
    let (stop_tx, stop_rx) = futures::channel::oneshot::channel::<()>();
    let router = Arc::new(AsyncRouter::from_router(router));
    let thread = std::thread::spawn(move || {
        smol::block_on(async move {
            let listener = async_net::TcpListener::bind("127.0.0.1:0").await.unwrap();
            addr_tx.send(listener.local_addr().unwrap()).unwrap();
            let handles: Arc<Mutex<Vec<ShutdownHandle>>> = Arc::default();
            let tasks = Arc::new(Mutex::new(Vec::new()));
            let accept = {
                let (handles, tasks) = (handles.clone(), tasks.clone());
                async move {
                    while let Ok((stream, _)) = listener.accept().await {
                        let mut builder = Builder::new().shared_router(router.clone());
                        if options.heartbeat {
                            builder = builder
                                .configure(|c| c.heartbeat = Some(HeartbeatConfig::answer_only()));
                        }
                        if let Some(n) = options.max_inflight {
                            let mut config = builder.connection_config().clone();
                            config.max_inflight_incoming = n;
                            builder = builder.config(config);
                        }
                        let (_, driver) = builder.connect(transport::tcp(stream), AsyncIoTimer);
                        handles.lock().unwrap().push(driver.shutdown_handle());
                        tasks.lock().unwrap().push(smol::spawn(driver));
                    }
                }
            };
            let accept = std::pin::pin!(accept);
            if let Either::Left(_) = futures::future::select(stop_rx, accept).await {
                for handle in handles.lock().unwrap().iter() {
                    handle.shutdown(Duration::from_millis(100));
                }
                let tasks = std::mem::take(&mut *tasks.lock().unwrap());
                for task in tasks {
                    let _ = task.await;
                }
            }
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
