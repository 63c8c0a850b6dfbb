//! What a message or an artifact weighs, for the machine's bounds.

use serde_json::Value;

use crate::types::{Artifact, Message, Part, PartContent, Struct};

/// Counted for every part besides its content, so that empty parts are not free.
const PART_OVERHEAD: usize = 16;

/// The size of `value` as JSON, near enough (strings and keys by length, scalars at a
/// fixed cost), without recursion: a deep value cannot overflow the stack.
pub(crate) fn value_size(value: &Value) -> usize {
    let mut size = 0usize;
    let mut stack = vec![value];
    while let Some(v) = stack.pop() {
        size = size.saturating_add(match v {
            Value::Null | Value::Bool(_) => 5,
            Value::Number(_) => 8,
            Value::String(s) => s.len() + 2,
            Value::Array(items) => {
                stack.extend(items);
                2 + items.len()
            }
            Value::Object(members) => {
                stack.extend(members.values());
                2 + members.keys().map(|k| k.len() + 4).sum::<usize>()
            }
        });
    }
    size
}

fn struct_size(s: &Option<Struct>) -> usize {
    s.as_ref().map_or(0, |m| {
        m.iter()
            .map(|(k, v)| k.len() + 4 + value_size(v))
            .fold(2, usize::saturating_add)
    })
}

pub(crate) fn part_size(part: &Part) -> usize {
    let content = match &part.content {
        PartContent::Text(t) => t.len(),
        PartContent::Raw(b) => b.len(),
        PartContent::Url(u) => u.len(),
        PartContent::Data(d) => value_size(d),
    };
    PART_OVERHEAD
        .saturating_add(content)
        .saturating_add(part.filename.as_ref().map_or(0, String::len))
        .saturating_add(part.media_type.as_ref().map_or(0, String::len))
        .saturating_add(struct_size(&part.metadata))
}

pub(crate) fn parts_size(parts: &[Part]) -> usize {
    parts.iter().map(part_size).fold(0, usize::saturating_add)
}

pub(crate) fn message_size(message: &Message) -> usize {
    parts_size(&message.parts).saturating_add(struct_size(&message.metadata))
}

pub(crate) fn artifact_size(artifact: &Artifact) -> usize {
    parts_size(&artifact.parts)
        .saturating_add(struct_size(&artifact.metadata))
        .saturating_add(artifact.name.as_ref().map_or(0, String::len))
        .saturating_add(artifact.description.as_ref().map_or(0, String::len))
}
