//! A calculator served over stdin/stdout: the child process of the child-process tests and
//! example. `--newline` switches from Content-Length to newline framing.

use sansrpc::codec::Framing;
use sansrpc_futures::{transport, AsyncIoTimer, Builder};

#[path = "../../fixtures/calculator.rs"]
mod calc;

fn main() -> std::io::Result<()> {
    let newline = std::env::args().any(|a| a == "--newline");
    let router = calc::calculator();
    let framing = if newline {
        Framing::Newline
    } else {
        Framing::ContentLength
    };
    let builder = Builder::new()
        .configure(|c| c.framing = Some(framing))
        .router(router);
    let (_client, driver) = builder.connect(transport::stdio(), AsyncIoTimer);
    async_io::block_on(driver)
}
