//! The behaviour suite (`tests/behaviour/suite.rs`, shared by every driver) on the blocking
//! driver (threads, no async runtime), over real TCP sockets.

#[path = "../../../tests/behaviour/suite.rs"]
mod suite;

use std::sync::Arc;

use sansrpc::connection::keepalive::HeartbeatConfig;
use sansrpc::router::Router;
use sansrpc_blocking::serve_tcp;
use suite::{Options, Served};

fn serve(router: Router, options: Options) -> Served {
    let mut config = sansrpc_blocking::Options::default();
    if options.heartbeat {
        config.connection.heartbeat = Some(HeartbeatConfig::answer_only());
    }
    if let Some(n) = options.max_inflight {
        config.connection.max_inflight_incoming = n;
    }
    let server = serve_tcp("127.0.0.1:0", Arc::new(router), config).unwrap();
    Served {
        addr: server.local_addr(),
        stop: Box::new(move || server.shutdown()),
    }
}

behaviour_suite!(serve);
