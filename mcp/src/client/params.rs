//! [`ParamHeaders`]: the `x-mcp-header` marks (SEP-2243) of the tools listed, and the
//! `Mcp-Param-*` headers each `tools/call` carries.

use super::*;

/// What the client remembers of one tool with `x-mcp-header` marks.
#[derive(Debug, Clone)]
enum Marks {
    Mirrors(Arc<[ParamHeader]>),
    Rejected(String),
}

/// The `x-mcp-header` marks (SEP-2243) of the tools a client listed on the stateless
/// revision, by tool name, and the `Mcp-Param-*` headers they give each `tools/call`. A
/// shared handle (cheap to clone): the typed client fills it from its `tools/list` pages
/// ([`McpClient::list_tools`], [`McpClient::all_tools`]); the HTTP transport asks it, for
/// each `tools/call` it POSTs, which headers to add ([`for_frame`](Self::for_frame)). Tools
/// without marks are not remembered; a call of one (or of a tool never listed) has no
/// such header.
#[derive(Clone, Default)]
pub struct ParamHeaders {
    tools: Arc<Mutex<SortedMap<String, Marks>>>,
}

impl fmt::Debug for ParamHeaders {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let tools = self.tools.lock().unwrap_or_else(PoisonError::into_inner);
        f.debug_struct("ParamHeaders")
            .field("tools", &tools.len())
            .finish()
    }
}

impl ParamHeaders {
    /// The marks of `tool`, if it has any (or was rejected).
    fn marks(&self, tool: &str) -> Option<Marks> {
        let tools = self.tools.lock().unwrap_or_else(PoisonError::into_inner);
        if tools.len() == 0 {
            return None;
        }
        tools.get(tool).cloned()
    }

    /// Why the listing rejected `tool` ([`Tool::param_headers`]), if it did.
    pub fn rejection(&self, tool: &str) -> Option<String> {
        match self.marks(tool)? {
            Marks::Rejected(reason) => Some(reason),
            Marks::Mirrors(_) => None,
        }
    }

    /// The arguments `tool` mirrors in headers (empty for a tool without marks, rejected or
    /// never listed).
    pub fn mirrors(&self, tool: &str) -> Vec<ParamHeader> {
        match self.marks(tool) {
            Some(Marks::Mirrors(mirrors)) => mirrors.to_vec(),
            _ => Vec::new(),
        }
    }

    /// Remembers the marks of `tools` (replacing all remembered before when `afresh`) and
    /// returns the tools that keep to the rules.
    pub(super) fn screen(&self, tools: Vec<Tool>, afresh: bool) -> Result<Vec<Tool>, ClientError> {
        // The schemas are read before the lock is taken: a transport asking for a call's
        // headers meanwhile does not wait on a long listing.
        let mut kept = Vec::with_capacity(tools.len());
        let mut changes = Vec::new();
        for tool in tools {
            match tool.param_headers() {
                Ok(mirrors) if mirrors.is_empty() => {
                    if !afresh {
                        changes.push((tool.name.clone(), None));
                    }
                    kept.push(tool);
                }
                Ok(mirrors) => {
                    changes.push((tool.name.clone(), Some(Marks::Mirrors(mirrors.into()))));
                    kept.push(tool);
                }
                Err(reason) => changes.push((tool.name, Some(Marks::Rejected(reason)))),
            }
        }
        let mut fresh = SortedMap::new();
        let mut remembered = self.tools.lock().unwrap_or_else(PoisonError::into_inner);
        let marks = if afresh { &mut fresh } else { &mut *remembered };
        for (name, entry) in changes {
            match entry {
                None => {
                    marks.remove(&name);
                }
                Some(_) if marks.len() >= MAX_ITEMS && marks.get(&name).is_none() => {
                    return Err(ClientError::TooManyPages(methods::TOOLS_LIST));
                }
                Some(entry) => {
                    marks.insert(name, entry);
                }
            }
        }
        if afresh {
            *remembered = fresh;
        }
        Ok(kept)
    }

    /// Whether a `tools/call` of `tool` with `arguments` may be sent: not a rejected tool,
    /// and every mirrored argument something a header carries.
    pub(super) fn check(
        &self,
        tool: &str,
        arguments: Option<&JsonObject>,
    ) -> Result<(), ClientError> {
        match self.marks(tool) {
            None => Ok(()),
            Some(Marks::Rejected(reason)) => Err(ClientError::RejectedTool {
                name: tool.to_owned(),
                reason,
            }),
            Some(Marks::Mirrors(mirrors)) => {
                let Some(arguments) = arguments else {
                    return Ok(());
                };
                for mirror in mirrors.iter() {
                    if let Some(value) = mirror.argument(arguments) {
                        if ParamHeader::header_text(value).is_err() {
                            return Err(ClientError::Arguments(format!(
                                "{} is mirrored in Mcp-Param-{} and must be a string, a boolean \
                                 or an integer within ±(2^53−1), not {}",
                                mirror.path.join("."),
                                mirror.header,
                                crate::json_text(value)
                            )));
                        }
                    }
                }
                Ok(())
            }
        }
    }

    /// The `Mcp-Param-<Name>` headers of a `tools/call` of `tool` with `arguments`: name and
    /// value (encoded with [`crate::streamable::encode_header_value`]: plain when it is
    /// visible ASCII with inner spaces only, else `=?base64?…?=`), one per marked argument
    /// present and not null. Empty (and not allocated) for a tool without marks.
    pub fn for_call(&self, tool: &str, arguments: Option<&JsonObject>) -> Vec<(String, String)> {
        let (Some(Marks::Mirrors(mirrors)), Some(arguments)) = (self.marks(tool), arguments) else {
            return Vec::new();
        };
        mirrors
            .iter()
            .filter_map(|mirror| {
                let value = ParamHeader::header_text(mirror.argument(arguments)?).ok()??;
                Some((
                    format!("Mcp-Param-{}", mirror.header),
                    crate::streamable::encode_header_value(&value),
                ))
            })
            .collect()
    }

    /// [`for_call`](Self::for_call) of the request a transport sends (a JSON-RPC message's
    /// bytes): the `Mcp-Param-*` headers of a `tools/call`, nothing for anything else. When
    /// no tool has marks it returns at once, without reading the frame.
    pub fn for_frame(&self, frame: &[u8]) -> Vec<(String, String)> {
        #[derive(serde::Deserialize)]
        struct Frame<'a> {
            #[serde(borrow)]
            method: Option<Cow<'a, str>>,
            #[serde(borrow)]
            params: Option<Params<'a>>,
        }
        #[derive(serde::Deserialize)]
        struct Params<'a> {
            #[serde(borrow)]
            name: Option<Cow<'a, str>>,
            #[serde(borrow)]
            arguments: Option<&'a serde_json::value::RawValue>,
        }
        if self
            .tools
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .len()
            == 0
        {
            return Vec::new();
        }
        let Ok(Frame {
            method: Some(method),
            params:
                Some(Params {
                    name: Some(name),
                    arguments,
                }),
        }) = serde_json::from_slice::<Frame<'_>>(frame)
        else {
            return Vec::new();
        };
        if method != methods::TOOLS_CALL || !matches!(self.marks(&name), Some(Marks::Mirrors(_))) {
            return Vec::new();
        }
        let arguments = arguments.and_then(|a| serde_json::from_str::<JsonObject>(a.get()).ok());
        self.for_call(&name, arguments.as_ref())
    }
}
