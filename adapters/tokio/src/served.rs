//! The future of one served connection's task: its setup (a handshake), then its driver.

use std::future::Future;
use std::io;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{ready, Context, Poll};

use crate::registry::{Registered, Registry};
use crate::{Builder, Client, Driver, TokioTimer, Transport};

/// One connection of a server, as its task runs it: the transport's setup, then the
/// connection's driver until it ends.
///
/// A pointer: a task's future sits in its task's first cache line after tokio's header
/// (8 bytes of it), and a future larger than that spreads over the next lines, each a miss
/// when one of many connections gets its turn (an `async` block holding the driver's box,
/// its registration and its setup's state took two). What it points to is the driver
/// itself, and whether it runs yet is told by the driver's own state, which every turn
/// reads anyway.
pub(crate) struct Served<H, T>(Box<State<H, T>>);

// The driver first, from the allocation's start. The option adds no tag: its `None` is a
// value no driver's field can hold (for HTTP, the request buffer's state, read on each
// turn), so that whether the driver runs costs no line of its own. The rest is read only
// at setup and at the end.
#[repr(C)]
struct State<H, T> {
    driver: Option<Driver<T, TokioTimer>>,
    setup: Option<Setup<H>>,
    /// Dropped after the driver (the fields' order): the connection leaves the registry
    /// once it has ended, or its task was aborted.
    registered: Option<Registered>,
    /// The connection's own client, held as long as it runs.
    client: Option<Client>,
}

/// The handshake, and what makes the driver once it is done.
struct Setup<H> {
    handshake: Pin<Box<H>>,
    builder: Arc<Builder>,
    registry: Arc<Registry>,
}

impl<H, T> Served<H, T> {
    /// The connection `setup` makes, to be served with `builder` and registered in
    /// `registry` while it runs.
    pub(crate) fn new(setup: H, builder: Arc<Builder>, registry: Arc<Registry>) -> Self {
        Served(Box::new(State {
            driver: None,
            setup: Some(Setup {
                handshake: Box::pin(setup),
                builder,
                registry,
            }),
            registered: None,
            client: None,
        }))
    }
}

impl<H, T> Future for Served<H, T>
where
    H: Future<Output = io::Result<T>>,
    T: Transport,
{
    type Output = io::Result<()>;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        let state = &mut *self.0;
        if let Some(driver) = &mut state.driver {
            return Pin::new(driver).poll(cx);
        }
        // Not polled again once it has completed (a task's future): the setup is there.
        let Some(setup) = &mut state.setup else {
            return Poll::Ready(Ok(()));
        };
        let transport = ready!(setup.handshake.as_mut().poll(cx))?;
        let (client, driver) = Builder::clone(&setup.builder).connect(transport, TokioTimer);
        state.registered = setup.registry.register(driver.shutdown_handle());
        state.setup = None;
        state.client = Some(client);
        Pin::new(state.driver.insert(driver)).poll(cx)
    }
}

#[cfg(all(test, feature = "http"))]
mod tests {
    use super::*;

    type Http = crate::http::HttpServer<tokio::net::TcpStream>;

    /// The task's future is one pointer, to the driver itself: the option adds no tag
    /// before it (whether the driver runs is told by a value no driver's field can hold).
    #[test]
    fn a_served_connection_is_a_pointer_to_its_driver() {
        type Setup = std::future::Ready<io::Result<Http>>;
        assert_eq!(size_of::<Served<Setup, Http>>(), size_of::<usize>());
        assert_eq!(
            size_of::<Option<Driver<Http, TokioTimer>>>(),
            size_of::<Driver<Http, TokioTimer>>()
        );
        assert_eq!(std::mem::offset_of!(State<Setup, Http>, driver), 0);
    }
}
