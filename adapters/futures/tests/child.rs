//! A real child process serving the calculator over its stdin/stdout.

mod common;

use common::{exercise, within, LIMIT};
use sansrpc::codec::Framing;
use sansrpc_futures::{transport, AsyncIoTimer, Builder};

fn calculator(args: &[&str], framing: Framing) {
    smol::block_on(within(LIMIT, async {
        let mut command =
            async_process::Command::new(env!("CARGO_BIN_EXE_sansrpc-futures-calculator"));
        command.args(args).kill_on_drop(true);
        let (mut child, transport) = transport::child(&mut command).unwrap();
        let (client, driver) = Builder::new()
            .configure(|c| c.framing = Some(framing))
            .connect(transport, AsyncIoTimer);
        let driver = smol::spawn(driver);
        exercise(&client).await;
        // Dropping the last client closes the child's stdin; it sees end of input and exits.
        drop(client);
        driver.await.unwrap();
        assert!(child.status().await.unwrap().success());
    }));
}

#[test]
fn content_length_child() {
    calculator(&[], Framing::ContentLength);
}

#[test]
fn newline_child() {
    calculator(&["--newline"], Framing::Newline);
}
