//! A client for a protected remote MCP server, the three ways docs/mcp.md's first hour
//! shows: a token the user already has (on every request), OAuth 2.1 in the user's browser
//! (the first 401 starts it), and OAuth with the credentials kept in a file of the
//! application's own (`TokenStore`), so the next run needs no browser. A server behind a
//! private CA is trusted by the certificates of a PEM file.
//!
//! It initializes, lists the tools, and calls `whoami` when the server has it; it prints
//! `tools: [...]` and `whoami: <the tool's text>`.
//!
//! ```sh
//! remote_client https://mcp.example.com/mcp --token "$MCP_TOKEN"
//! remote_client https://mcp.example.com/mcp --oauth
//! remote_client https://mcp.example.com/mcp --oauth --store ~/.config/me/mcp-credentials.json
//! remote_client https://mcp.internal:8443/mcp --ca company-ca.pem --oauth
//! ```
//!
//! The browser is `$BROWSER` when set, else the system's (`xdg-open`, `open`, `start`); the
//! redirect comes back to `http://127.0.0.1:8765/callback` (`--port` for another port).
//! mcp/tests/mcp_oauth.rs runs each way against this crate's protected server and the MCP
//! Python SDK's authorization server.

use std::collections::HashMap;
use std::path::PathBuf;

use sansrpc::connection::{Config, Profile};
use sansrpc_mcp::client::ClientBuilder;
use sansrpc_mcp::tokio::oauth::driver::{Authorizer, LoopbackBrowser};
use sansrpc_mcp::tokio::oauth::store::{Credentials, StoreError, TokenStore};
use sansrpc_mcp::tokio::{oauth, Connect};
use sansrpc_mcp::types::ContentBlock;
use sansrpc_tokio::tls::{
    self, rustls::pki_types::pem::PemObject, rustls::pki_types::CertificateDer,
};
use sansrpc_tokio::Builder;

type Error = Box<dyn std::error::Error>;

/// The credentials of every server, in one JSON file (a keychain does better: OAuth 2.1
/// asks for secure storage).
struct FileStore(PathBuf);

impl FileStore {
    fn all(&self) -> Result<HashMap<String, Credentials>, StoreError> {
        match std::fs::read(&self.0) {
            Ok(bytes) => serde_json::from_slice(&bytes).map_err(|e| StoreError(e.to_string())),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(HashMap::new()),
            Err(e) => Err(StoreError(format!("{}: {e}", self.0.display()))),
        }
    }
}

impl TokenStore for FileStore {
    fn load(&self, resource: &str) -> Result<Option<Credentials>, StoreError> {
        Ok(self.all()?.remove(resource))
    }

    fn save(&self, resource: &str, credentials: &Credentials) -> Result<(), StoreError> {
        let mut all = self.all()?;
        all.insert(resource.to_owned(), credentials.clone());
        let json = serde_json::to_vec_pretty(&all).map_err(|e| StoreError(e.to_string()))?;
        std::fs::write(&self.0, json).map_err(|e| StoreError(format!("{}: {e}", self.0.display())))
    }
}

/// What the command line asks for.
#[derive(Default)]
struct Args {
    url: String,
    ca: Option<PathBuf>,
    token: Option<String>,
    oauth: bool,
    store: Option<PathBuf>,
    port: u16,
}

fn args() -> Result<Args, Error> {
    let usage =
        "usage: remote_client URL [--ca PEM] (--token TOKEN | --oauth [--store FILE] [--port N])";
    let mut args = Args {
        port: 8765,
        ..Args::default()
    };
    let mut words = std::env::args().skip(1);
    args.url = words.next().ok_or(usage)?;
    while let Some(word) = words.next() {
        match word.as_str() {
            "--ca" => args.ca = Some(words.next().ok_or(usage)?.into()),
            "--token" => args.token = Some(words.next().ok_or(usage)?),
            "--oauth" => args.oauth = true,
            "--store" => args.store = Some(words.next().ok_or(usage)?.into()),
            "--port" => args.port = words.next().ok_or(usage)?.parse()?,
            _ => return Err(usage.into()),
        }
    }
    Ok(args)
}

#[tokio::main]
async fn main() -> Result<(), Error> {
    let Args {
        url,
        ca,
        token,
        oauth,
        store,
        port,
    } = args()?;
    let mcp = ClientBuilder::new("remote-client", "1.0");
    let builder = Builder::new()
        .config(Config::for_profile(Profile::Mcp))
        .router(mcp.router());
    let mut connect = Connect::new(&url);
    if let Some(pem) = ca {
        // A private CA: trust the certificates of its PEM file (the OAuth requests too).
        let roots: Vec<CertificateDer> =
            CertificateDer::pem_file_iter(pem)?.collect::<Result<_, _>>()?;
        connect = connect.tls(tls::client_config_with_roots(roots)?);
    }
    if let Some(token) = token {
        // A token the user already has: `Authorization: Bearer …` on every request.
        connect = connect.bearer(&token);
    } else if oauth {
        // OAuth 2.1: the first 401 runs discovery, registration and the code flow in the
        // user's browser, which comes back to this loopback redirect URI.
        let redirect = format!("http://127.0.0.1:{port}/callback");
        let config = oauth::Config::authorization_code(&url, &redirect)?;
        let mut authorizer = Authorizer::builder(config).user_agent(LoopbackBrowser::system());
        if let Some(file) = store {
            // The credentials kept where the application wants: the next run needs no
            // browser while the token (or its refresh token) is good.
            authorizer = authorizer.store(FileStore(file));
        }
        connect = connect.oauth(authorizer);
    }
    let conn = connect.connect(builder)?;
    let client = mcp.initialize(&conn).await?;
    let tools = client.all_tools().await?;
    let names: Vec<&str> = tools.iter().map(|t| t.name.as_str()).collect();
    println!("tools: {names:?}");
    if names.contains(&"whoami") {
        let me = client.call_tool("whoami", ()).await?;
        if let Some(ContentBlock::Text(text)) = me.content.first() {
            println!("whoami: {}", text.text);
        }
    }
    client.close().await;
    Ok(())
}
