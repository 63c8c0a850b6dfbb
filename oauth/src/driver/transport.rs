//! [`HyperTransport`]: hyper-util's legacy client with rustls (ring), HTTP/1.1, keeping
//! connections alive; every request bounded in time and every body in size.

use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use http_body_util::{BodyExt, Full, Limited};
use hyper::header::{HeaderName, HeaderValue};
use hyper_rustls::HttpsConnector;
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::client::legacy::Client;
use hyper_util::rt::TokioExecutor;
use rustls::pki_types::CertificateDer;

use super::{BoxFuture, HttpTransport};
use crate::http::{HttpRequest, HttpResponse};

/// An [`HttpTransport`] on hyper-util's client with rustls. Cheap to clone (the clones
/// share the connection pool).
#[derive(Clone)]
pub struct HyperTransport {
    client: Client<HttpsConnector<HttpConnector>, Full<Bytes>>,
    timeout: Duration,
    max_body: usize,
}

impl std::fmt::Debug for HyperTransport {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("HyperTransport")
            .field("timeout", &self.timeout)
            .field("max_body", &self.max_body)
            .finish_non_exhaustive()
    }
}

impl Default for HyperTransport {
    fn default() -> HyperTransport {
        HyperTransport::new()
    }
}

fn provider() -> Arc<rustls::crypto::CryptoProvider> {
    Arc::new(rustls::crypto::ring::default_provider())
}

impl HyperTransport {
    /// A transport trusting Mozilla's root certificates (webpki-roots).
    pub fn new() -> HyperTransport {
        let roots = rustls::RootCertStore {
            roots: webpki_roots::TLS_SERVER_ROOTS.to_vec(),
        };
        HyperTransport::with_tls(client_config(roots))
    }

    /// A transport trusting only `roots` (a private CA: load its PEM with
    /// `rustls::pki_types::CertificateDer::pem_file_iter`). An error names a certificate
    /// that is not one.
    pub fn with_roots(
        roots: impl IntoIterator<Item = CertificateDer<'static>>,
    ) -> Result<HyperTransport, String> {
        let mut store = rustls::RootCertStore::empty();
        for cert in roots {
            store
                .add(cert)
                .map_err(|e| format!("a root certificate is not usable: {e}"))?;
        }
        Ok(HyperTransport::with_tls(client_config(store)))
    }

    /// A transport with this rustls configuration (its ALPN is set to HTTP/1.1).
    pub fn with_tls(config: rustls::ClientConfig) -> HyperTransport {
        let connector = hyper_rustls::HttpsConnectorBuilder::new()
            .with_tls_config(config)
            .https_or_http()
            .enable_http1()
            .build();
        HyperTransport {
            client: Client::builder(TokioExecutor::new()).build(connector),
            timeout: Duration::from_secs(30),
            max_body: 1024 * 1024,
        }
    }

    /// Gives up on a request after `timeout` (default 30 s).
    pub fn timeout(mut self, timeout: Duration) -> HyperTransport {
        self.timeout = timeout;
        self
    }

    /// Refuses an answer whose body is longer than `bytes` (default 1 MiB).
    pub fn max_body(mut self, bytes: usize) -> HyperTransport {
        self.max_body = bytes;
        self
    }

    async fn exchange(&self, request: HttpRequest) -> Result<HttpResponse, String> {
        let mut builder = hyper::Request::builder()
            .method(request.method.as_str())
            .uri(&request.url);
        for (name, value) in &request.headers {
            let name = HeaderName::from_bytes(name.as_bytes())
                .map_err(|e| format!("the header name `{name}` is not one: {e}"))?;
            let value = HeaderValue::from_str(value)
                .map_err(|e| format!("the value of the header `{name}` is not one: {e}"))?;
            builder = builder.header(name, value);
        }
        let outgoing = builder
            .body(Full::new(Bytes::from(request.body)))
            .map_err(|e| format!("the request is not one: {e}"))?;
        let answer = self
            .client
            .request(outgoing)
            .await
            .map_err(|e| causes(&e))?;
        let status = answer.status().as_u16();
        let headers = answer
            .headers()
            .iter()
            .map(|(n, v)| {
                (
                    n.as_str().to_owned(),
                    String::from_utf8_lossy(v.as_bytes()).into_owned(),
                )
            })
            .collect();
        let body = Limited::new(answer.into_body(), self.max_body)
            .collect()
            .await
            .map_err(|e| {
                if e.is::<http_body_util::LengthLimitError>() {
                    format!("the answer's body is longer than {} bytes", self.max_body)
                } else {
                    format!(
                        "the answer's body could not be read: {}",
                        causes(e.as_ref())
                    )
                }
            })?
            .to_bytes()
            .to_vec();
        Ok(HttpResponse {
            status,
            headers,
            body,
        })
    }
}

fn client_config(roots: rustls::RootCertStore) -> rustls::ClientConfig {
    rustls::ClientConfig::builder_with_provider(provider())
        .with_safe_default_protocol_versions()
        .expect("ring supports the default protocol versions")
        .with_root_certificates(roots)
        .with_no_client_auth()
}

/// `error` and its sources, each said once (`client error (Connect): invalid peer
/// certificate: UnknownIssuer`).
fn causes(error: &(dyn std::error::Error + 'static)) -> String {
    let mut out = error.to_string();
    let mut source = error.source();
    while let Some(cause) = source {
        let text = cause.to_string();
        if !out.contains(&text) {
            out.push_str(": ");
            out.push_str(&text);
        }
        source = cause.source();
    }
    out
}

impl HttpTransport for HyperTransport {
    fn send(&self, request: HttpRequest) -> BoxFuture<'_, Result<HttpResponse, String>> {
        Box::pin(async move {
            match tokio::time::timeout(self.timeout, self.exchange(request)).await {
                Ok(result) => result,
                Err(_) => Err(format!("no answer within {:?}", self.timeout)),
            }
        })
    }
}
