//! Pull-based streams (`sansrpc::connection::stream`): async producers on the serving side, and a
//! client [`Stream`] that pipelines its pulls.

use std::collections::VecDeque;
use std::future::Future;
use std::marker::PhantomData;
use std::pin::Pin;
use std::task::{Context, Poll};

use futures::Stream;
pub use sansrpc::connection::stream::StreamOptions;
use sansrpc::connection::stream::{
    BoxSource, Produced, ReadItem, StreamReader, CANCEL_METHOD, NEXT_METHOD,
};
use sansrpc::connection::Timeout;
use sansrpc::method::CallError;
use sansrpc::{ErrorObject, RawValue};
use serde::de::DeserializeOwned;
use serde::Serialize;

use crate::client::{Client, PendingCall};

/// A stream's items as the driver asks for them: written straight into the pull answer.
pub(crate) trait AsyncSource: Send {
    fn poll_item(&mut self, cx: &mut Context<'_>, out: &mut Vec<u8>) -> Produced;
}

/// What the driver's stream table holds per stream.
pub(crate) type Producer = Box<dyn AsyncSource>;

struct Typed<S>(Pin<Box<S>>);

impl<S, T> AsyncSource for Typed<S>
where
    S: Stream<Item = Result<T, ErrorObject<'static>>> + Send,
    T: Serialize,
{
    fn poll_item(&mut self, cx: &mut Context<'_>, out: &mut Vec<u8>) -> Produced {
        match self.0.as_mut().poll_next(cx) {
            Poll::Pending => Produced::Pending,
            Poll::Ready(None) => Produced::End,
            Poll::Ready(Some(Err(e))) => Produced::Error(e),
            Poll::Ready(Some(Ok(item))) => match serde_json::to_writer(&mut *out, &item) {
                Ok(()) => Produced::Item,
                Err(_) => Produced::Error(ErrorObject::internal_error()),
            },
        }
    }
}

pub(crate) fn typed<S, T>(stream: S) -> Producer
where
    S: Stream<Item = Result<T, ErrorObject<'static>>> + Send + 'static,
    T: Serialize + 'static,
{
    Box::new(Typed(Box::pin(stream)))
}

/// A core router's iterator stream: always ready.
struct FromIter(BoxSource);

impl AsyncSource for FromIter {
    fn poll_item(&mut self, _: &mut Context<'_>, out: &mut Vec<u8>) -> Produced {
        self.0.next_item(out)
    }
}

pub(crate) fn sync(source: BoxSource) -> Producer {
    Box::new(FromIter(source))
}

/// A stream the peer produces, read item by item: a [`Stream`] of raw JSON items, from
/// [`Client::stream_raw`]. It keeps [`StreamOptions::window`] pulls in flight and holds at
/// most that many answers. It ends after the last item; an error item is the last one.
/// Dropping it before the end cancels the stream (`rpc.stream.cancel`).
#[derive(Debug)]
pub struct RawStream {
    client: Client,
    reader: StreamReader,
    pulls: VecDeque<(u64, PendingCall)>,
    timeout: Timeout,
}

impl RawStream {
    pub(crate) fn new(client: Client, stream: u64, options: StreamOptions) -> Self {
        RawStream {
            client,
            reader: options.reader(stream),
            pulls: VecDeque::new(),
            timeout: options.timeout,
        }
    }

    /// The stream id the peer gave.
    pub fn id(&self) -> u64 {
        self.reader.stream()
    }

    /// Decodes each item as `T`.
    pub fn typed<T: DeserializeOwned>(self) -> TypedStream<T> {
        TypedStream {
            raw: self,
            _item: PhantomData,
        }
    }
}

impl Stream for RawStream {
    type Item = Result<Box<RawValue>, CallError>;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        let this = &mut *self;
        loop {
            while let Some(seq) = this.reader.next_pull() {
                let pull = this.client.call_raw_with(
                    NEXT_METHOD,
                    Some(this.reader.pull_params()),
                    this.timeout,
                );
                this.pulls.push_back((seq, pull));
            }
            match this.reader.poll_item() {
                ReadItem::Item(item) => return Poll::Ready(Some(Ok(item))),
                ReadItem::End => {
                    this.pulls.clear();
                    return Poll::Ready(None);
                }
                ReadItem::Failed(e) => {
                    this.pulls.clear();
                    return Poll::Ready(Some(Err(e)));
                }
                ReadItem::Pending => {}
            }
            let mut answered = false;
            let mut i = 0;
            while i < this.pulls.len() {
                let (seq, pull) = &mut this.pulls[i];
                match Pin::new(pull).poll(cx) {
                    Poll::Ready(answer) => {
                        let seq = *seq;
                        this.pulls.remove(i);
                        match answer {
                            Ok(raw) => this.reader.handle_answer(seq, Ok(&raw)),
                            Err(e) => this.reader.handle_answer(seq, Err(e)),
                        }
                        answered = true;
                    }
                    Poll::Pending => i += 1,
                }
            }
            if !answered {
                return Poll::Pending;
            }
        }
    }
}

impl Drop for RawStream {
    fn drop(&mut self) {
        if self.reader.cancel() {
            let params = self.reader.cancel_params();
            // Fire and forget: queued at once, the acknowledgement is not needed.
            drop(self.client.notify_raw(CANCEL_METHOD, Some(&params)));
        }
        // The cancel answers the pulls in flight: no `$/cancelRequest` for each.
        for (_, pull) in self.pulls.drain(..) {
            pull.detach();
        }
    }
}

/// A [`RawStream`] whose items decode as `T`; a item that does not decode is a
/// [`CallError::Decode`].
#[derive(Debug)]
pub struct TypedStream<T> {
    raw: RawStream,
    _item: PhantomData<fn() -> T>,
}

impl<T> TypedStream<T> {
    /// The raw stream.
    pub fn into_raw(self) -> RawStream {
        self.raw
    }
}

impl<T: DeserializeOwned> Stream for TypedStream<T> {
    type Item = Result<T, CallError>;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        Pin::new(&mut self.raw).poll_next(cx).map(|item| {
            item.map(|r| r.and_then(|raw| raw.deserialize().map_err(CallError::Decode)))
        })
    }
}

impl Client {
    /// Calls a stream-returning `method` and reads the stream it answers with (`{"stream":
    /// id}`): items arrive as the peer produces them, [`StreamOptions::window`] pulls in
    /// flight. An answer that is not a stream id is a [`CallError::Decode`].
    pub async fn stream_raw(
        &self,
        method: &str,
        params: Option<&RawValue>,
        options: StreamOptions,
    ) -> Result<RawStream, CallError> {
        let opened = self.call_raw_with(method, params, options.timeout).await?;
        let id = sansrpc::connection::stream::opened(&opened)?;
        Ok(RawStream::new(self.clone(), id, options))
    }

    /// [`Client::stream_raw`] with typed params and items.
    pub async fn stream<P: Serialize + ?Sized, T: DeserializeOwned>(
        &self,
        method: &str,
        params: &P,
        options: StreamOptions,
    ) -> Result<TypedStream<T>, CallError> {
        let params = sansrpc::client::encode(params)?;
        let raw = self.stream_raw(method, params.as_deref(), options).await?;
        Ok(raw.typed())
    }
}
