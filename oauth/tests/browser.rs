//! The loopback browser's redirect listener over real loopback connections: the redirect
//! with the `state` sent ends the wait; requests to the redirect path with another `state`
//! (any local page can send them) are answered 400 and ignored, up to a bound.

use std::sync::Arc;
use std::time::Duration;

use sansrpc_oauth::driver::{LoopbackBrowser, UserAgent};
use sansrpc_oauth::AuthorizationRequest;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;
use tokio::sync::Notify;

/// A free port of 127.0.0.1 (bound, then released for the listener).
fn free_port() -> u16 {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    listener.local_addr().unwrap().port()
}

/// The user's part started on a free port with the state `state`; the request, its
/// answer to come, and the port (listening once it returns).
async fn waiting(
    state: &str,
) -> (
    tokio::task::JoinHandle<Result<String, String>>,
    AuthorizationRequest,
    u16,
) {
    let port = free_port();
    let request = AuthorizationRequest {
        url: "https://auth.example.com/authorize?state=x".into(),
        redirect_uri: format!("http://127.0.0.1:{port}/callback"),
        state: state.into(),
    };
    let opened = Arc::new(Notify::new());
    let notify = Arc::clone(&opened);
    let browser = LoopbackBrowser::with_opener(move |_| {
        notify.notify_one();
        Ok(())
    })
    .timeout(Duration::from_secs(20));
    let asked = request.clone();
    let task = tokio::spawn(async move { browser.authorize(&asked).await });
    // The opener runs once the listener is bound.
    opened.notified().await;
    (task, request, port)
}

/// `GET target` on the port; the answer's status line.
async fn get(port: u16, target: &str) -> String {
    let mut stream = TcpStream::connect(("127.0.0.1", port)).await.unwrap();
    let head = format!("GET {target} HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\n\r\n");
    stream.write_all(head.as_bytes()).await.unwrap();
    let mut answer = String::new();
    stream.read_to_string(&mut answer).await.unwrap();
    answer.lines().next().unwrap_or_default().to_owned()
}

#[tokio::test]
async fn a_request_with_another_state_is_answered_400_and_the_wait_goes_on() {
    let (task, request, port) = waiting("the-state").await;
    assert_eq!(
        get(port, "/callback?code=evil&state=forged").await,
        "HTTP/1.1 400 Bad Request"
    );
    assert_eq!(
        get(port, "/callback?code=evil").await,
        "HTTP/1.1 400 Bad Request"
    );
    assert_eq!(get(port, "/favicon.ico").await, "HTTP/1.1 404 Not Found");
    assert!(!task.is_finished());
    assert_eq!(
        get(port, "/callback?code=good&state=the-state").await,
        "HTTP/1.1 200 OK"
    );
    let redirect = task.await.unwrap().unwrap();
    assert_eq!(
        redirect,
        format!("{}?code=good&state=the-state", request.redirect_uri)
    );
}

#[tokio::test]
async fn sixteen_requests_with_another_state_end_the_wait() {
    let (task, _, port) = waiting("the-state").await;
    for n in 0..16 {
        assert_eq!(
            get(port, &format!("/callback?code=c{n}&state=s{n}")).await,
            "HTTP/1.1 400 Bad Request",
            "{n}"
        );
    }
    let error = tokio::time::timeout(Duration::from_secs(5), task)
        .await
        .expect("the wait ended")
        .unwrap()
        .unwrap_err();
    assert!(error.contains("without the state sent"), "{error}");
}
