//! A router whose handlers send the client more than their answers, for the transports
//! that carry only answers (plain HTTP).

/// A router whose `noisy` sends the client two notifications, waits once, then answers its
/// params; and whose `keep` hands its client handle to the test (which sends through it
/// after the answer) and answers `true`.
pub fn router() -> (
    sansrpc_tokio::AsyncRouter,
    tokio::sync::mpsc::UnboundedReceiver<sansrpc_tokio::Client>,
) {
    let mut router = sansrpc_tokio::AsyncRouter::new();
    router
        .raw_method_with_context("noisy", |cx, params| {
            let params = params.map(ToOwned::to_owned);
            async move {
                cx.notify_raw("log", None).await.unwrap();
                cx.peer().notify_raw("log", None).await.unwrap();
                tokio::task::yield_now().await;
                params.ok_or_else(sansrpc::ErrorObject::invalid_params)
            }
        })
        .unwrap();
    let (keep, kept) = tokio::sync::mpsc::unbounded_channel();
    router
        .raw_method_with_context("keep", move |cx, _| {
            let _ = keep.send(cx.peer().clone());
            async { Ok(sansrpc::RawValue::from_string("true".to_owned()).unwrap()) }
        })
        .unwrap();
    (router, kept)
}
