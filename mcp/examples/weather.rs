use sansrpc::connection::{Config, Profile};
use sansrpc_mcp::server::{Context, McpError, ServerBuilder};
use sansrpc_tokio::{sansrpc, spawn, stdio, Builder};

#[derive(serde::Deserialize, schemars::JsonSchema)]
struct Forecast {
    /// The city to forecast.
    city: String,
    /// How many days ahead, 1 to 7.
    days: u8,
}

async fn forecast(_: Context, f: Forecast) -> Result<String, McpError> {
    Ok(format!("{}: sunny for {} days", f.city, f.days))
}

#[tokio::main(flavor = "current_thread")]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let server = ServerBuilder::new("weather", "1.0").tool("forecast", "Forecasts", forecast);
    let mcp = Builder::new().config(Config::for_profile(Profile::Mcp));
    let conn = spawn(mcp.router(server.build().router()), stdio());
    conn.driver.await??;
    Ok(())
}
