//! TLS (feature `tls`): the WebSocket and HTTP servers behind rustls with a certificate
//! generated here for `localhost`, called over `wss://` and `https://` by clients that
//! trust it; a client that does not trust it, and a plain client, are refused.
#![cfg(feature = "tls")]

#[path = "../../../tests/support/common.rs"]
mod common;

use std::sync::Arc;
use std::time::Duration;

use common::{calculator, within, Add, Pair, LIMIT};
use sansrpc_tokio::tls::rustls::pki_types::{CertificateDer, PrivateKeyDer, PrivatePkcs8KeyDer};
use sansrpc_tokio::tls::rustls::{ClientConfig, ServerConfig};
use sansrpc_tokio::{http, tls, ws, Builder, ServeOptions};
use tokio::net::TcpListener;
use tokio::sync::oneshot;

/// A self-signed certificate for `localhost`: the server's config, and a client config that
/// trusts it.
fn certificate() -> (Arc<ServerConfig>, Arc<ClientConfig>) {
    let generated = rcgen::generate_simple_self_signed(vec!["localhost".to_owned()]).unwrap();
    let cert: CertificateDer<'static> = generated.cert.der().clone();
    let key = PrivateKeyDer::Pkcs8(PrivatePkcs8KeyDer::from(
        generated.signing_key.serialize_der(),
    ));
    let server = tls::server_config(vec![cert.clone()], key).unwrap();
    let client = tls::client_config_with_roots([cert]).unwrap();
    (server, client)
}

fn options(server: Arc<ServerConfig>) -> ServeOptions {
    let mut options = ServeOptions::default();
    options.tls = Some(server);
    options
}

#[tokio::test]
async fn websocket_over_tls() {
    within(LIMIT, async {
        let (server, trusted) = certificate();
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let port = listener.local_addr().unwrap().port();
        let (stop, stopped) = oneshot::channel::<()>();
        let serving = tokio::spawn(ws::serve_with(
            listener,
            Builder::new().router(calculator()),
            options(server),
            async move {
                let _ = stopped.await;
            },
            Duration::from_secs(1),
        ));
        let url = format!("wss://localhost:{port}");
        let conn = ws::connect_tls(url.as_str(), Builder::new(), trusted)
            .await
            .unwrap();
        let sum = conn
            .client
            .call::<Add>(&Pair { a: 2.0, b: 3.0 })
            .await
            .unwrap();
        assert_eq!(sum, 5.0);

        // The Mozilla roots do not include our certificate; plain ws:// speaks no TLS.
        assert!(ws::connect(url.as_str(), Builder::new()).await.is_err());
        let plain = format!("ws://localhost:{port}");
        assert!(ws::connect(plain.as_str(), Builder::new()).await.is_err());

        // The server still serves the trusting client.
        let sum = conn
            .client
            .call::<Add>(&Pair { a: 1.0, b: 1.0 })
            .await
            .unwrap();
        assert_eq!(sum, 2.0);
        let _ = stop.send(());
        serving.await.unwrap().unwrap();
    })
    .await;
}

#[tokio::test]
async fn http_over_tls() {
    within(LIMIT, async {
        let (server, trusted) = certificate();
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let port = listener.local_addr().unwrap().port();
        let (stop, stopped) = oneshot::channel::<()>();
        let serving = tokio::spawn(http::serve_with(
            listener,
            Builder::new().router(calculator()),
            options(server),
            async move {
                let _ = stopped.await;
            },
            Duration::from_secs(1),
        ));
        let url = format!("https://localhost:{port}");
        let client = http::connect_tls(&url, Builder::new(), trusted)
            .await
            .unwrap()
            .client;
        let sum = client
            .call::<Add>(&Pair { a: 20.0, b: 22.0 })
            .await
            .unwrap();
        assert_eq!(sum, 42.0);

        // Untrusted certificate: refused as it connects, as over WebSocket. Plain HTTP to a
        // TLS port: connected, and no answer.
        let untrusting = http::connect(&url, Builder::new()).await.unwrap_err();
        assert!(
            untrusting.to_string().contains("certificate"),
            "{untrusting}"
        );
        let plain = http::connect(&format!("http://localhost:{port}"), Builder::new())
            .await
            .unwrap()
            .client;
        assert!(plain.call::<Add>(&Pair { a: 1.0, b: 1.0 }).await.is_err());

        let sum = client.call::<Add>(&Pair { a: 1.0, b: 2.0 }).await.unwrap();
        assert_eq!(sum, 3.0);
        let _ = stop.send(());
        serving.await.unwrap().unwrap();
    })
    .await;
}
