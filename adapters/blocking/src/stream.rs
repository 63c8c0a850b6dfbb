//! The client side of pull-based streams (`sansrpc::connection::stream`): an iterator that keeps a
//! window of pulls in flight.

use std::collections::VecDeque;
use std::fmt;
use std::marker::PhantomData;
use std::sync::mpsc::Receiver;
use std::time::Duration;

use sansrpc::connection::stream::{stream_id, ReadItem, StreamReader, CANCEL_METHOD, NEXT_METHOD};
use sansrpc::method::CallError;
use sansrpc::RawValue;
use serde::de::DeserializeOwned;

use crate::driver::Answer;
use crate::{Client, Error};

/// How a client reads a stream.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub struct StreamOptions {
    /// Pulls in flight at once (default 16): 1 is one round trip per answer.
    pub window: usize,
    /// Most items asked for per pull (default 64; the server may send fewer).
    pub max: u32,
    /// The deadline of the opening call and of each pull (`None`: the endpoint's default).
    /// A pull waits for the producer.
    pub timeout: Option<Duration>,
}

impl Default for StreamOptions {
    fn default() -> Self {
        StreamOptions {
            window: 16,
            max: 64,
            timeout: None,
        }
    }
}

impl StreamOptions {
    /// Options with this pipelining window and items per pull.
    pub fn new(window: usize, max: u32) -> Self {
        StreamOptions {
            window,
            max,
            ..StreamOptions::default()
        }
    }
}

/// A stream the peer produces, read as an iterator of raw JSON items; from
/// [`Client::stream_raw`]. It keeps [`StreamOptions::window`] pulls in flight and holds at
/// most that many answers; `next` blocks until the next item arrives. It ends after the
/// last item; an error item is the last one. Dropping it before the end cancels the stream
/// (`rpc.stream.cancel`).
pub struct StreamIter {
    client: Client,
    reader: StreamReader,
    pulls: VecDeque<(u64, Receiver<Answer>)>,
    timeout: Option<Duration>,
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

    fn next_raw(&mut self) -> Option<Result<Box<RawValue>, Error>> {
        loop {
            while let Some(seq) = self.reader.next_pull() {
                let params = self.reader.pull_params();
                match self
                    .client
                    .start_raw(NEXT_METHOD, Some(params), self.timeout)
                {
                    Ok(rx) => self.pulls.push_back((seq, rx)),
                    Err(Error::Send(e)) => self.reader.handle_answer(seq, Err(CallError::Send(e))),
                    Err(Error::Call(e)) => self.reader.handle_answer(seq, Err(e)),
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
                    return Some(Err(Error::Call(e)));
                }
                ReadItem::Pending => {}
            }
            // Items come in pull order: the oldest pull is the one to wait for.
            let (seq, rx) = self.pulls.pop_front()?;
            match crate::client::wait(&rx, self.client.limit(self.timeout)) {
                Ok(raw) => self.reader.handle_answer(seq, Ok(&raw)),
                Err(Error::Call(e)) => self.reader.handle_answer(seq, Err(e)),
                Err(Error::Send(e)) => self.reader.handle_answer(seq, Err(CallError::Send(e))),
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
    type Item = Result<T, Error>;

    fn next(&mut self) -> Option<Self::Item> {
        let item = self.raw.next()?;
        Some(item.and_then(|raw| {
            raw.deserialize()
                .map_err(|e| Error::Call(CallError::Decode(e)))
        }))
    }
}

impl Iterator for StreamIter {
    type Item = Result<Box<RawValue>, Error>;

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
    ) -> Result<TypedIter<T>, Error> {
        let params = sansrpc::method::encode_params_owned(params).map_err(Error::Send)?;
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
    ) -> Result<StreamIter, Error> {
        let opened = self.call_raw(method, params, options.timeout)?;
        let id = stream_id(&opened).ok_or_else(|| {
            Error::Call(CallError::Decode(serde::de::Error::custom(
                "the answer is not {\"stream\": id}",
            )))
        })?;
        Ok(StreamIter {
            client: self.clone(),
            reader: StreamReader::new(id, options.window, options.max),
            pulls: VecDeque::new(),
            timeout: options.timeout,
        })
    }
}
