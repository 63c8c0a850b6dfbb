//! The client side of pull-based streams (`sansrpc::connection::stream`): an iterator that keeps a
//! window of pulls in flight.

use std::borrow::Cow;
use std::collections::VecDeque;
use std::fmt;
use std::marker::PhantomData;

use sansrpc::client::{self as shared, RawResult};
pub use sansrpc::connection::stream::StreamOptions;
use sansrpc::connection::stream::{opened, ReadItem, StreamReader, CANCEL_METHOD, NEXT_METHOD};
use sansrpc::connection::RequestOptions;
use sansrpc::method::CallError;
use sansrpc::RawValue;
use serde::de::DeserializeOwned;

use crate::client::Pending;
use crate::Client;

/// A stream the peer produces, read as an iterator of raw JSON items; from
/// [`Client::stream_raw`]. It keeps [`StreamOptions::window`] pulls in flight and holds at
/// most that many answers; `next` blocks until the next item arrives. It ends after the
/// last item; an error item is the last one. Dropping it before the end cancels the stream
/// (`rpc.stream.cancel`).
pub struct StreamIter {
    client: Client,
    reader: StreamReader,
    pulls: VecDeque<(u64, Pending)>,
    options: StreamOptions,
}

impl fmt::Debug for StreamIter {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("StreamIter")
            .field("stream", &self.reader.stream())
            .field("in_flight", &self.pulls.len())
            .finish()
    }
}

impl StreamIter {
    /// The stream id the peer gave.
    pub fn id(&self) -> u64 {
        self.reader.stream()
    }

    fn next_raw(&mut self) -> Option<RawResult> {
        loop {
            while let Some(seq) = self.reader.next_pull() {
                let params = Some(self.reader.pull_params().to_owned());
                let options = RequestOptions::timeout(self.options.timeout);
                match self
                    .client
                    .start(Cow::Borrowed(NEXT_METHOD), params, options)
                {
                    Ok(pull) => self.pulls.push_back((seq, pull)),
                    Err(e) => self.reader.handle_answer(seq, Err(e)),
                }
            }
            match self.reader.poll_item() {
                ReadItem::Item(item) => return Some(Ok(item)),
                ReadItem::End => {
                    self.pulls.clear();
                    return None;
                }
                ReadItem::Failed(e) => {
                    self.pulls.clear();
                    return Some(Err(e));
                }
                ReadItem::Pending => {}
            }
            // Items come in pull order: the oldest pull is the one to wait for.
            let (seq, pull) = self.pulls.pop_front()?;
            match pull.wait() {
                Ok(raw) => self.reader.handle_answer(seq, Ok(&raw)),
                Err(e) => self.reader.handle_answer(seq, Err(e)),
            }
        }
    }
}

impl StreamIter {
    /// Decodes each item as `T`.
    pub fn typed<T: DeserializeOwned>(self) -> TypedIter<T> {
        TypedIter {
            raw: self,
            _item: PhantomData,
        }
    }
}

/// A [`StreamIter`] whose items decode as `T`; an item that does not decode is a
/// [`CallError::Decode`].
#[derive(Debug)]
pub struct TypedIter<T> {
    raw: StreamIter,
    _item: PhantomData<fn() -> T>,
}

impl<T: DeserializeOwned> Iterator for TypedIter<T> {
    type Item = Result<T, CallError>;

    fn next(&mut self) -> Option<Self::Item> {
        let item = self.raw.next()?;
        Some(item.and_then(|raw| raw.deserialize().map_err(CallError::Decode)))
    }
}

impl Iterator for StreamIter {
    type Item = RawResult;

    fn next(&mut self) -> Option<Self::Item> {
        self.next_raw()
    }
}

impl Drop for StreamIter {
    fn drop(&mut self) {
        if self.reader.cancel() {
            let params = self.reader.cancel_params();
            let _ = self.client.notify_raw(CANCEL_METHOD, Some(&params));
        }
    }
}

impl Client {
    /// [`Client::stream_raw`] with typed params and items.
    pub fn stream<P: serde::Serialize + ?Sized, T: DeserializeOwned>(
        &self,
        method: &str,
        params: &P,
        options: StreamOptions,
    ) -> Result<TypedIter<T>, CallError> {
        let params = shared::encode(params)?;
        Ok(self.stream_raw(method, params.as_deref(), options)?.typed())
    }

    /// Calls a stream-returning `method` and returns an iterator over the stream it answers
    /// with (`{"stream": id}`). An answer that is not a stream id is a
    /// [`CallError::Decode`].
    pub fn stream_raw(
        &self,
        method: &str,
        params: Option<&RawValue>,
        options: StreamOptions,
    ) -> Result<StreamIter, CallError> {
        let id = opened(&self.call_raw_with(method, params, options.timeout)?)?;
        Ok(StreamIter {
            client: self.clone(),
            reader: options.reader(id),
            pulls: VecDeque::new(),
            options,
        })
    }
}
