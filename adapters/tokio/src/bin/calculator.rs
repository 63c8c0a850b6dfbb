//! The calculator served over this process's stdin/stdout on tokio: the child process of
//! the child-process tests and examples. `--newline` switches to newline framing.

use sansrpc::codec::Framing;
use sansrpc_tokio::Builder;

#[path = "../../../futures/fixtures/calculator.rs"]
mod calc;

#[tokio::main(flavor = "current_thread")]
async fn main() -> std::io::Result<()> {
    let framing = if std::env::args().any(|a| a == "--newline") {
        Framing::Newline
    } else {
        Framing::ContentLength
    };
    let builder = Builder::new()
        .configure(|c| c.framing = Some(framing))
        .router(calc::calculator());
    let conn = sansrpc_tokio::spawn(builder, sansrpc_tokio::stdio());
    conn.driver.await?
}
