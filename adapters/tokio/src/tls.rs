//! TLS with rustls (feature `tls`, on by default): `wss://` and `https://` for the clients,
//! and a TLS acceptor for the WebSocket, HTTP and MCP servers.
//!
//! - Clients: `ws::connect`, `http::connect` and `sansrpc_mcp::tokio::connect` take `wss://` and
//!   `https://` URLs and trust
//!   the Mozilla root certificates (webpki-roots). For a private CA or a self-signed
//!   certificate, build a config with [`client_config_with_roots`] and use
//!   `ws::connect_tls`, `http::connect_tls` or `sansrpc_mcp::tokio::Connect::tls`; for the system's
//!   own store, [`client_config_with_native_roots`].
//! - Servers: set [`ServeOptions::tls`](crate::ServeOptions::tls) to a config from
//!   [`server_config`]; every accepted connection does the TLS handshake first, within the
//!   same time limit as the WebSocket handshake or an HTTP request head (the MCP server:
//!   `sansrpc_mcp::tokio::Options::serve`).
//!
//! The crypto is `ring`; rustls is re-exported as [`rustls`] to build configs with.

use std::io;
use std::sync::Arc;

pub use rustls;
use rustls::pki_types::{CertificateDer, PrivateKeyDer};
use rustls::{ClientConfig, RootCertStore, ServerConfig};
use tokio::net::TcpStream;

/// A client config that trusts the Mozilla root certificates (what `wss://` and `https://`
/// use by default).
pub fn client_config() -> Arc<ClientConfig> {
    let mut roots = RootCertStore::empty();
    roots.extend(webpki_roots::TLS_SERVER_ROOTS.iter().cloned());
    Arc::new(
        ClientConfig::builder()
            .with_root_certificates(roots)
            .with_no_client_auth(),
    )
}

/// A client config that trusts the certificates of the system's store (what the platform
/// trusts: `/etc/ssl/certs` and the like, the macOS keychain, the Windows store), read now.
/// Certificates of the store that do not parse are skipped; an error when none is usable.
pub fn client_config_with_native_roots() -> io::Result<Arc<ClientConfig>> {
    let mut roots = RootCertStore::empty();
    let found = rustls_native_certs::load_native_certs()?;
    let (added, _) = roots.add_parsable_certificates(found);
    if added == 0 {
        let e = "no usable certificate in the system's store";
        return Err(io::Error::new(io::ErrorKind::NotFound, e));
    }
    Ok(Arc::new(
        ClientConfig::builder()
            .with_root_certificates(roots)
            .with_no_client_auth(),
    ))
}

/// A client config that trusts exactly `roots` (a private CA, a self-signed certificate).
pub fn client_config_with_roots(
    roots: impl IntoIterator<Item = CertificateDer<'static>>,
) -> Result<Arc<ClientConfig>, rustls::Error> {
    let mut store = RootCertStore::empty();
    for root in roots {
        store.add(root)?;
    }
    Ok(Arc::new(
        ClientConfig::builder()
            .with_root_certificates(store)
            .with_no_client_auth(),
    ))
}

/// A server config from a certificate chain (leaf first) and its private key.
pub fn server_config(
    chain: Vec<CertificateDer<'static>>,
    key: PrivateKeyDer<'static>,
) -> Result<Arc<ServerConfig>, rustls::Error> {
    let config = ServerConfig::builder()
        .with_no_client_auth()
        .with_single_cert(chain, key)?;
    Ok(Arc::new(config))
}

/// An accepted connection: plain TCP, or TLS over it (after the handshake).
pub type ServerStream = crate::tcp::PlainOrTls<tokio_rustls::server::TlsStream<TcpStream>>;

/// Does the server side of the TLS handshake on `stream` when `tls` is set.
pub(crate) async fn accept(
    tls: Option<&Arc<ServerConfig>>,
    stream: TcpStream,
) -> io::Result<ServerStream> {
    match tls {
        None => Ok(ServerStream::Plain(stream)),
        Some(config) => {
            let acceptor = tokio_rustls::TlsAcceptor::from(Arc::clone(config));
            Ok(ServerStream::Tls(Box::new(acceptor.accept(stream).await?)))
        }
    }
}
