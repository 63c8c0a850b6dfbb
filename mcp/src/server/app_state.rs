//! The application's state, given once to the builder ([`ServerBuilder::with_state`]) and
//! read by every handler from its [`Context`] ([`Context::state`]), as axum's `with_state`
//! and `State` do: no `Arc` cloned into each handler's closure.

use std::any::Any;

use super::*;

/// The values given with [`ServerBuilder::with_state`], one per type.
#[derive(Default)]
pub(super) struct AppState(Vec<Arc<dyn Any + Send + Sync>>);

impl AppState {
    fn get<T: Any>(&self) -> Option<&T> {
        self.0.iter().find_map(|value| value.downcast_ref::<T>())
    }
}

impl ServerBuilder {
    /// Gives every handler `state` ([`Context::state`]): a database pool, a cache, the
    /// application's own struct (with its own locks where it changes). One value per type:
    /// a second of the same type replaces the first.
    ///
    /// ```
    /// use std::sync::Mutex;
    /// use sansrpc_mcp::server::{Context, McpError, ServerBuilder};
    ///
    /// #[derive(Default)]
    /// struct Notes(Mutex<Vec<String>>);
    ///
    /// #[derive(serde::Deserialize, schemars::JsonSchema)]
    /// struct Add {
    ///     text: String,
    /// }
    ///
    /// let server = ServerBuilder::new("notes", "1")
    ///     .with_state(Notes::default())
    ///     .tool("add", "Adds a note", |cx: Context, Add { text }| async move {
    ///         let notes = cx.state::<Notes>()?;
    ///         let mut notes = notes.0.lock().unwrap();
    ///         notes.push(text);
    ///         Ok(format!("{} notes", notes.len()))
    ///     })
    ///     .tool("count", "Counts the notes", |cx: Context, ()| async move {
    ///         Ok(cx.state::<Notes>()?.0.lock().unwrap().len().to_string())
    ///     })
    ///     .build();
    /// # assert!(server.state::<Notes>().is_some());
    /// ```
    pub fn with_state<T: Any + Send + Sync>(mut self, state: T) -> Self {
        let values = &mut self.declared.state.0;
        values.retain(|value| !value.is::<T>());
        values.push(Arc::new(state));
        self
    }
}

impl Server {
    /// The state of type `T` given with [`ServerBuilder::with_state`], if any: for the
    /// application's code outside the handlers.
    pub fn state<T: Any>(&self) -> Option<&T> {
        self.shared.state.get::<T>()
    }
}

impl Context {
    /// The state of type `T` given with [`ServerBuilder::with_state`]; a handler reads it
    /// with `cx.state::<T>()?`. Without one it is an internal error (-32603; the client is
    /// not told the type).
    pub fn state<T: Any>(&self) -> Result<&T, McpError> {
        self.inner.server.shared.state.get::<T>().ok_or_else(|| {
            McpError::internal("internal error: the server was given no state for this handler")
        })
    }
}
