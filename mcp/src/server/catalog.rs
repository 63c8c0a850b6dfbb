//! The resources, resource templates and prompts a server offers, changed while it serves
//! ([`Server::add_resource`] and the others): each list behind its own lock, read by the
//! requests that list or use it (the handler is cloned out, never called under the lock).

use std::sync::{RwLock, RwLockReadGuard, RwLockWriteGuard};

use super::*;

/// The most resources, resource templates or prompts (each) a server holds when it adds
/// them while serving ([`Server::add_resource`], [`Server::add_resource_template`],
/// [`Server::add_prompt`]); the builder's own are not counted against it.
pub const MAX_ADDED_ENTRIES: usize = 4096;

/// One list of the catalog.
pub(super) struct Entries<T>(RwLock<Vec<T>>);

impl<T> Default for Entries<T> {
    fn default() -> Self {
        Entries(RwLock::new(Vec::new()))
    }
}

impl<T> Entries<T> {
    pub(super) fn read(&self) -> RwLockReadGuard<'_, Vec<T>> {
        self.0.read().unwrap_or_else(|e| e.into_inner())
    }

    fn write(&self) -> RwLockWriteGuard<'_, Vec<T>> {
        self.0.write().unwrap_or_else(|e| e.into_inner())
    }

    /// Adds, for the builder (nothing is shared yet).
    pub(super) fn push(&mut self, entry: T) {
        self.0
            .get_mut()
            .unwrap_or_else(|e| e.into_inner())
            .push(entry);
    }

    pub(super) fn is_empty(&self) -> bool {
        self.read().is_empty()
    }

    /// Adds `entry` unless one with its key is there, or the list is full (`declared`
    /// entries the builder gave are not counted).
    fn add(&self, entry: T, same: impl Fn(&T) -> bool, declared: usize) -> Result<(), AddError> {
        let mut list = self.write();
        if list.iter().any(same) {
            return Err(AddError::Exists);
        }
        if list.len() >= declared + MAX_ADDED_ENTRIES {
            return Err(AddError::TooMany);
        }
        list.push(entry);
        Ok(())
    }

    /// Removes the entry `same` picks; whether there was one.
    fn remove(&self, same: impl Fn(&T) -> bool) -> bool {
        let mut list = self.write();
        let before = list.len();
        list.retain(|e| !same(e));
        list.len() != before
    }
}

/// Why [`Server::add_resource`], [`Server::add_resource_template`] or
/// [`Server::add_prompt`] added nothing.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum AddError {
    /// The server has one with that URI, URI template or name already (remove it first).
    Exists,
    /// The server holds [`MAX_ADDED_ENTRIES`] of that kind beyond the builder's already.
    TooMany,
    /// The resource template's `uriTemplate` does not parse: why.
    Template(String),
}

impl std::fmt::Display for AddError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            AddError::Exists => f.write_str("the server has one with that URI or name"),
            AddError::TooMany => f.write_str("the server holds as many as it may"),
            AddError::Template(why) => write!(f, "the URI template does not parse: {why}"),
        }
    }
}

impl std::error::Error for AddError {}

impl Server {
    /// Adds a resource while the server serves, as [`ServerBuilder::resource`] declares one:
    /// listed (after the others) from the next `resources/list` on and readable from the
    /// next `resources/read`, in this process. Nothing is announced: call
    /// [`list_changed`](Self::list_changed) with [`ListKind::Resources`] after it (one
    /// announcement for several changes; the builder's [`ServerBuilder::list_changed`]
    /// declares that the list changes, and with it the `resources` capability even while
    /// the list is empty). A URI taken is [`AddError::Exists`].
    pub fn add_resource<F, Fut>(&self, resource: Resource, read: F) -> Result<(), AddError>
    where
        F: Fn(Context, String) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<Vec<ResourceContents>, McpError>> + Send + 'static,
    {
        let uri = resource.uri.clone();
        let entry = ResourceEntry {
            resource,
            read: resource_reader(read),
        };
        let declared = self.shared.declared_counts[0];
        self.shared
            .resources
            .add(entry, |e| e.resource.uri == uri, declared)
    }

    /// Removes the resource at `uri` (declared or added): from the next `resources/list`
    /// and `resources/read` on it is not there (a read is -32002, or -32602 on 2026-07-28).
    /// Whether there was one. Announce it as for [`add_resource`](Self::add_resource).
    pub fn remove_resource(&self, uri: &str) -> bool {
        self.shared.resources.remove(|e| e.resource.uri == uri)
    }

    /// Adds a resource template while the server serves, as
    /// [`ServerBuilder::resource_template`] declares one; announce it as for
    /// [`add_resource`](Self::add_resource). A URI template taken is
    /// [`AddError::Exists`], one that does not parse [`AddError::Template`].
    pub fn add_resource_template<F, Fut>(
        &self,
        template: ResourceTemplate,
        read: F,
    ) -> Result<(), AddError>
    where
        F: Fn(Context, String, BTreeMap<String, String>) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<Vec<ResourceContents>, McpError>> + Send + 'static,
    {
        let parsed = UriTemplate::parse(&template.uri_template)
            .map_err(|e| AddError::Template(e.to_string()))?;
        let key = template.uri_template.clone();
        let entry = TemplateEntry {
            template,
            parsed,
            read: template_reader(read),
        };
        let declared = self.shared.declared_counts[1];
        self.shared
            .templates
            .add(entry, |e| e.template.uri_template == key, declared)
    }

    /// Removes the resource template whose `uriTemplate` is `uri_template`; whether there
    /// was one. Announce it as for [`add_resource`](Self::add_resource).
    pub fn remove_resource_template(&self, uri_template: &str) -> bool {
        self.shared
            .templates
            .remove(|e| e.template.uri_template == uri_template)
    }

    /// Adds a prompt while the server serves, as [`ServerBuilder::prompt`] declares one:
    /// listed from the next `prompts/list` on and got from the next `prompts/get`. Nothing
    /// is announced: call [`list_changed`](Self::list_changed) with [`ListKind::Prompts`]
    /// after it. A name taken is [`AddError::Exists`].
    pub fn add_prompt<F, Fut>(&self, prompt: Prompt, get: F) -> Result<(), AddError>
    where
        F: Fn(Context, BTreeMap<String, String>) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<GetPromptResult, McpError>> + Send + 'static,
    {
        let name = prompt.name.clone();
        let entry = PromptEntry {
            prompt,
            get: prompt_getter(get),
        };
        let declared = self.shared.declared_counts[2];
        self.shared
            .prompts
            .add(entry, |e| e.prompt.name == name, declared)
    }

    /// Removes the prompt `name` (declared or added): from the next `prompts/list` and
    /// `prompts/get` on it is not there. Whether there was one. Announce it as for
    /// [`add_prompt`](Self::add_prompt).
    pub fn remove_prompt(&self, name: &str) -> bool {
        self.shared.prompts.remove(|e| e.prompt.name == name)
    }
}

/// `read` as the server keeps a resource's reader.
pub(super) fn resource_reader<F, Fut>(read: F) -> ReadFn
where
    F: Fn(Context, String) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = Result<Vec<ResourceContents>, McpError>> + Send + 'static,
{
    let read = Arc::new(read);
    Arc::new(move |cx, uri, _| Box::pin(read(cx, uri)))
}

/// `read` as the server keeps a resource template's reader.
pub(super) fn template_reader<F, Fut>(read: F) -> ReadFn
where
    F: Fn(Context, String, BTreeMap<String, String>) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = Result<Vec<ResourceContents>, McpError>> + Send + 'static,
{
    let read = Arc::new(read);
    Arc::new(move |cx, uri, vars| Box::pin(read(cx, uri, vars)))
}

/// `get` as the server keeps a prompt's getter.
pub(super) fn prompt_getter<F, Fut>(get: F) -> PromptFn
where
    F: Fn(Context, BTreeMap<String, String>) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = Result<GetPromptResult, McpError>> + Send + 'static,
{
    let get = Arc::new(get);
    Arc::new(move |cx, args| Box::pin(get(cx, args)))
}
