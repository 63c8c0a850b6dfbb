//! [`HeadlessUserAgent`]: the user's part without a user, for tests and conformance
//! clients against authorization servers that approve at once.

use std::sync::Arc;

use url::Url;

use super::{BoxFuture, HttpTransport, UserAgent};
use crate::http::{excerpt, HttpRequest};
use crate::machine::AuthorizationRequest;
use crate::uri;

/// Follows the authorization URL's redirects with GETs until one points at the redirect
/// URI, and returns that URL without fetching it. An authorization server that shows a
/// page (a login, a consent) instead of redirecting is an error: nobody is there to use it.
pub struct HeadlessUserAgent {
    transport: Arc<dyn HttpTransport>,
    max_redirects: usize,
}

impl std::fmt::Debug for HeadlessUserAgent {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("HeadlessUserAgent")
            .field("max_redirects", &self.max_redirects)
            .finish_non_exhaustive()
    }
}

impl HeadlessUserAgent {
    /// A user agent sending its GETs with `transport`, following at most 10 redirects.
    pub fn new(transport: impl HttpTransport) -> HeadlessUserAgent {
        HeadlessUserAgent {
            transport: Arc::new(transport),
            max_redirects: 10,
        }
    }

    /// Follows at most `n` redirects.
    pub fn max_redirects(mut self, n: usize) -> HeadlessUserAgent {
        self.max_redirects = n;
        self
    }

    async fn follow(&self, request: &AuthorizationRequest) -> Result<String, String> {
        let target = Url::parse(&request.redirect_uri)
            .map_err(|e| format!("the redirect URI is not a URL: {e}"))?;
        let mut at = Url::parse(&request.url)
            .map_err(|e| format!("the authorization URL is not a URL: {e}"))?;
        for _ in 0..=self.max_redirects {
            let answer = self
                .transport
                .send(HttpRequest::get(at.as_str()).header("accept", "text/html, application/json"))
                .await
                .map_err(|why| format!("GET {at}: {why}"))?;
            match answer.status {
                300..=399 => {
                    let location = answer.header("location").ok_or_else(|| {
                        format!("{at} answered {} without a Location", answer.status)
                    })?;
                    let next = at.join(location).map_err(|e| {
                        let location = uri::redacted(location);
                        format!("{at} redirected to `{location}`, not a URL: {e}")
                    })?;
                    if uri::same_endpoint(&next, &target) {
                        return Ok(next.into());
                    }
                    at = next;
                }
                200..=299 => {
                    return Err(format!(
                        "{at} answered {} with a page, not a redirect: a headless user agent \
                         cannot log in or consent",
                        answer.status
                    ))
                }
                status => {
                    return Err(format!(
                        "{at} answered {status}: {}",
                        excerpt(&answer.body, 300)
                    ))
                }
            }
        }
        Err(format!(
            "more than {} redirects without reaching the redirect URI",
            self.max_redirects
        ))
    }
}

impl UserAgent for HeadlessUserAgent {
    fn authorize<'a>(
        &'a self,
        request: &'a AuthorizationRequest,
    ) -> BoxFuture<'a, Result<String, String>> {
        Box::pin(self.follow(request))
    }
}
