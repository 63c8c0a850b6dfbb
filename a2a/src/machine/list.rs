//! `ListTasks`' page size and its cursor.

use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use base64::Engine as _;

use crate::types::{ListTasksRequest, ListTasksResponse, Task, TaskState, Timestamp};
use crate::A2aError;

use super::{history_length, snapshot};

/// The page size when the request gives none (§3.1.4).
pub(crate) const DEFAULT_PAGE_SIZE: i32 = 50;
/// The largest page size (§3.1.4).
pub(crate) const MAX_PAGE_SIZE: i32 = 100;

/// A page token: the (status time, id) of the last task of the page, base64url. The next
/// page starts after that place in the order, whether or not the task is still there.
pub(crate) fn encode_cursor(time: Timestamp, id: &str) -> String {
    URL_SAFE_NO_PAD.encode(format!("{}.{:09}:{id}", time.seconds(), time.nanos()))
}

/// The place a page token marks; `None` for a string this machine did not make.
pub(crate) fn decode_cursor(token: &str) -> Option<(Timestamp, String)> {
    let bytes = URL_SAFE_NO_PAD.decode(token).ok()?;
    let text = String::from_utf8(bytes).ok()?;
    let (time, id) = text.split_once(':')?;
    let (seconds, nanos) = time.split_once('.')?;
    let time = Timestamp::from_unix(seconds.parse().ok()?, nanos.parse().ok()?)?;
    Some((time, id.to_owned()))
}

/// What `ListTasks` reads of a task.
pub(crate) trait Listed {
    /// Its place in the order: its status time, then its id.
    fn key(&self) -> (Timestamp, &str);
    fn context_id(&self) -> &str;
    fn state(&self) -> TaskState;
    fn time(&self) -> Option<Timestamp>;
    /// The task as the page has it.
    fn snapshot(&self, history_length: Option<usize>, with_artifacts: bool) -> Task;
}

impl Listed for &Task {
    fn key(&self) -> (Timestamp, &str) {
        key(self)
    }

    fn context_id(&self) -> &str {
        &self.context_id
    }

    fn state(&self) -> TaskState {
        self.status.state
    }

    fn time(&self) -> Option<Timestamp> {
        self.status.timestamp
    }

    fn snapshot(&self, history_length: Option<usize>, with_artifacts: bool) -> Task {
        snapshot(self, history_length, with_artifacts)
    }
}

/// A task's place in `ListTasks`' order: its status time, then its id.
pub(crate) fn key(task: &Task) -> (Timestamp, &str) {
    (task.status.timestamp.unwrap_or_default(), task.id.as_str())
}

/// The page of `tasks` (most recently updated first, by [`Listed::key`]) that `request`
/// asks for.
pub(crate) fn page<L: Listed>(
    tasks: impl Iterator<Item = L>,
    request: &ListTasksRequest,
) -> Result<ListTasksResponse, A2aError> {
    let page_size = match request.page_size {
        None => DEFAULT_PAGE_SIZE,
        Some(n) if (1..=MAX_PAGE_SIZE).contains(&n) => n,
        Some(n) => {
            return Err(A2aError::invalid_params(format!(
                "pageSize must be between 1 and {MAX_PAGE_SIZE}, not {n}"
            )))
        }
    };
    let history_length = history_length(request.history_length)?;
    let cursor =
        match request.page_token.as_deref() {
            None => None,
            Some(token) => Some(decode_cursor(token).ok_or_else(|| {
                A2aError::invalid_params("pageToken is not a token this agent gave")
            })?),
        };
    let with_artifacts = request.include_artifacts == Some(true);
    let passes = |task: &L| {
        request
            .context_id
            .as_ref()
            .map_or(true, |c| c == task.context_id())
            && (request.status == TaskState::Unspecified || request.status == task.state())
            && request
                .status_timestamp_after
                .map_or(true, |after| task.time().is_some_and(|t| t >= after))
    };
    let mut total = 0usize;
    let mut page = Vec::new();
    let mut more = false;
    let mut last = None;
    for task in tasks {
        if !passes(&task) {
            continue;
        }
        total += 1;
        let (time, id) = task.key();
        if cursor
            .as_ref()
            .is_some_and(|(t, c)| (time, id) >= (*t, c.as_str()))
        {
            continue;
        }
        if page.len() < page_size as usize {
            page.push(task.snapshot(history_length, with_artifacts));
            last = Some((time, id.to_owned()));
        } else {
            more = true;
        }
    }
    let next_page_token = match last {
        Some((t, id)) if more => encode_cursor(t, &id),
        _ => String::new(),
    };
    Ok(ListTasksResponse {
        tasks: page,
        next_page_token,
        page_size,
        total_size: i32::try_from(total).unwrap_or(i32::MAX),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_cursor_reads_back() {
        let t = Timestamp::from_unix(-5, 7).unwrap();
        let token = encode_cursor(t, "a:b|c");
        assert_eq!(decode_cursor(&token), Some((t, "a:b|c".to_owned())));
        for bad in ["", "!!", "bm9wZQ", &URL_SAFE_NO_PAD.encode("1.x:id")] {
            assert_eq!(decode_cursor(bad), None, "{bad}");
        }
    }
}
