//! Push notification configs (§3.1.7-3.1.10, §4.3): kept per task, bounded, and turned
//! into the POSTs an adapter makes for each of the task's events.

use std::collections::{BTreeMap, BTreeSet};

use crate::machine::StreamId;
use crate::types::{ListTaskPushNotificationConfigsResponse, TaskPushNotificationConfig};
use crate::{A2aError, ErrorKind};

/// The header carrying a config's `token` on each notification (a2a-sdk's and
/// @a2a-js/sdk's name).
pub const TOKEN_HEADER: &str = "X-A2A-Notification-Token";

/// Bounds of the push notification configs.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct PushLimits {
    /// Configs of one task (default 8): past it `-32602`.
    pub max_per_task: usize,
    /// Configs of all tasks (default 10,000): past it `-32603`.
    pub max_configs: usize,
    /// Bytes of a config's URL, token or credentials (default 2,048): past it `-32602`.
    pub max_field_bytes: usize,
}

impl Default for PushLimits {
    fn default() -> Self {
        PushLimits {
            max_per_task: 8,
            max_configs: 10_000,
            max_field_bytes: 2048,
        }
    }
}

/// One notification to POST: the task's event (a `StreamResponse`) as JSON to the
/// config's URL, with its token and credentials.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Delivery {
    /// The task.
    pub task_id: String,
    /// The config's id.
    pub config_id: String,
    /// Where to POST.
    pub url: String,
    /// The header fields: `content-type`, the token ([`TOKEN_HEADER`]) and `authorization`
    /// when the config has them.
    pub headers: Vec<(String, String)>,
    /// The body: the event as JSON.
    pub body: Vec<u8>,
}

/// The configs of every task.
#[derive(Debug)]
pub(super) struct Configs {
    limits: PushLimits,
    by_task: BTreeMap<String, Vec<TaskPushNotificationConfig>>,
    total: usize,
    /// The task machine's stream that watches each task with configs.
    watchers: BTreeMap<StreamId, String>,
    /// Watchers whose first event (the task as it is) is not posted: they watch again a
    /// task whose last watcher ended when it asked for input.
    quiet: BTreeSet<StreamId>,
    next: u64,
}

impl Configs {
    pub fn new(limits: PushLimits) -> Self {
        Configs {
            limits,
            by_task: BTreeMap::new(),
            total: 0,
            watchers: BTreeMap::new(),
            quiet: BTreeSet::new(),
            next: 0,
        }
    }

    /// Keeps `config` for `task` (replacing the one with its id): the config as kept.
    pub fn add(
        &mut self,
        task: &str,
        mut config: TaskPushNotificationConfig,
    ) -> Result<TaskPushNotificationConfig, A2aError> {
        let max = self.limits.max_field_bytes;
        let url = config.url.trim();
        if !(url.starts_with("http://") || url.starts_with("https://")) {
            return Err(A2aError::invalid_params(format!(
                "url must be an http:// or https:// URL, not {:?}",
                url.chars().take(64).collect::<String>()
            )));
        }
        let long = [
            Some(&config.url),
            config.token.as_ref(),
            config
                .authentication
                .as_ref()
                .and_then(|a| a.credentials.as_ref()),
        ]
        .into_iter()
        .flatten()
        .any(|f| f.len() > max);
        if long {
            return Err(A2aError::invalid_params(format!(
                "a push config's url, token and credentials are at most {max} bytes"
            )));
        }
        config.task_id = Some(task.to_owned());
        let id = match config.id.clone() {
            Some(id) if !id.is_empty() => id,
            // One the task's configs do not use already (a client may have chosen
            // `push-1`): the new config would replace that one.
            _ => {
                let in_use = self.by_task.get(task);
                loop {
                    self.next += 1;
                    let id = format!("push-{}", self.next);
                    if !in_use.is_some_and(|c| c.iter().any(|c| c.id.as_deref() == Some(&id))) {
                        break id;
                    }
                }
            }
        };
        config.id = Some(id.clone());
        let configs = self.by_task.entry(task.to_owned()).or_default();
        if let Some(kept) = configs.iter_mut().find(|c| c.id.as_deref() == Some(&id)) {
            *kept = config.clone();
            return Ok(config);
        }
        if configs.len() >= self.limits.max_per_task {
            return Err(A2aError::invalid_params(format!(
                "task {task} has {} push configs already",
                self.limits.max_per_task
            )));
        }
        if self.total >= self.limits.max_configs {
            return Err(A2aError::new(
                ErrorKind::Internal,
                format!(
                    "this agent keeps {} push configs already",
                    self.limits.max_configs
                ),
            ));
        }
        configs.push(config.clone());
        self.total += 1;
        Ok(config)
    }

    /// True when no config may be added however its task stands.
    pub fn is_full(&self) -> bool {
        self.total >= self.limits.max_configs
    }

    /// Forgets the configs of every task `kept` says is gone (the task machine evicted
    /// it): the watchers to close.
    pub fn prune(&mut self, kept: impl Fn(&str) -> bool) -> Vec<StreamId> {
        let gone: Vec<String> = self
            .by_task
            .keys()
            .filter(|task| !kept(task))
            .cloned()
            .collect();
        let mut watchers = Vec::new();
        for task in gone {
            if let Some(configs) = self.by_task.remove(&task) {
                self.total -= configs.len();
            }
            let of_task: Vec<StreamId> = self
                .watchers
                .iter()
                .filter(|(_, t)| **t == task)
                .map(|(s, _)| *s)
                .collect();
            for stream in of_task {
                self.watchers.remove(&stream);
                self.quiet.remove(&stream);
                watchers.push(stream);
            }
        }
        watchers
    }

    pub fn get(&self, task: &str, id: &str) -> Result<TaskPushNotificationConfig, A2aError> {
        self.by_task
            .get(task)
            .and_then(|c| c.iter().find(|c| c.id.as_deref() == Some(id)))
            .cloned()
            .ok_or_else(|| A2aError::task_not_found(task).with_metadata("configId", id))
    }

    pub fn list(&self, task: &str) -> ListTaskPushNotificationConfigsResponse {
        ListTaskPushNotificationConfigsResponse {
            configs: self.by_task.get(task).cloned().unwrap_or_default(),
            next_page_token: String::new(),
        }
    }

    /// Forgets config `id` of `task` (nothing when there is none); the watcher to close
    /// when it was the task's last.
    pub fn delete(&mut self, task: &str, id: &str) -> Option<StreamId> {
        let configs = self.by_task.get_mut(task)?;
        let before = configs.len();
        configs.retain(|c| c.id.as_deref() != Some(id));
        self.total -= before - configs.len();
        if !configs.is_empty() {
            return None;
        }
        self.by_task.remove(task);
        let watcher = self
            .watchers
            .iter()
            .find(|(_, t)| *t == task)
            .map(|(s, _)| *s)?;
        self.watchers.remove(&watcher);
        self.quiet.remove(&watcher);
        Some(watcher)
    }

    pub fn watched(&self, task: &str) -> bool {
        self.watchers.values().any(|t| t == task)
    }

    pub fn watch(&mut self, task: &str, stream: StreamId) {
        self.watchers.insert(stream, task.to_owned());
    }

    pub fn watcher(&self, stream: StreamId) -> Option<&str> {
        self.watchers.get(&stream).map(String::as_str)
    }

    /// The watcher `stream` ended: the task it watched, when that still has configs.
    pub fn watch_ended(&mut self, stream: StreamId) -> Option<String> {
        self.quiet.remove(&stream);
        let task = self.watchers.remove(&stream)?;
        self.by_task.contains_key(&task).then_some(task)
    }

    /// Watches `task` again with `stream`, its first event (the task as it is) not posted.
    pub fn watch_again(&mut self, task: &str, stream: StreamId) {
        self.quiet.insert(stream);
        self.watch(task, stream);
    }

    /// True (once) for a watcher's first event that is not posted.
    pub fn quiet(&mut self, stream: StreamId) -> bool {
        self.quiet.remove(&stream)
    }

    /// The notifications of one event of `task` (a `StreamResponse` as JSON).
    pub fn deliveries(&self, task: &str, event: &[u8]) -> Vec<Delivery> {
        let configs = self.by_task.get(task).map_or(&[][..], Vec::as_slice);
        configs
            .iter()
            .map(|c| {
                let mut headers = vec![("content-type".to_owned(), "application/json".to_owned())];
                if let Some(token) = c.token.as_ref().filter(|t| !t.is_empty()) {
                    headers.push((TOKEN_HEADER.to_owned(), token.clone()));
                }
                if let Some(auth) = &c.authentication {
                    if let Some(credentials) = auth
                        .credentials
                        .as_ref()
                        .filter(|_| !auth.scheme.is_empty())
                    {
                        headers.push((
                            "authorization".to_owned(),
                            format!("{} {credentials}", auth.scheme),
                        ));
                    }
                }
                Delivery {
                    task_id: task.to_owned(),
                    config_id: c.id.clone().unwrap_or_default(),
                    url: c.url.clone(),
                    headers,
                    body: event.to_vec(),
                }
            })
            .collect()
    }
}
