//! A calculator served on stdin and stdout, one JSON message per line (as MCP's stdio
//! transport), until stdin ends.
//!
//! ```sh
//! echo '{"jsonrpc":"2.0","method":"add","params":[1,2],"id":1}' \
//!     | cargo run -q -p sansrpc-blocking --example calculator_stdio_server
//! ```
mod calculator;

use std::sync::Arc;

use sansrpc::codec::Framing;
use sansrpc_blocking::{serve_stdio, Options};

fn main() -> std::io::Result<()> {
    let mut config = Options::default();
    config.connection.framing = Some(Framing::Newline);
    serve_stdio(Arc::new(calculator::router()), config)
}
