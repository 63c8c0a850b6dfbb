//! Messages, their parts, and artifacts (§4.1.4-§4.1.7).

use std::fmt;

use serde::de::{self, IgnoredAny, MapAccess, Visitor};
use serde::ser::SerializeMap;
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use serde_json::Value;

use super::serde_util::{
    self, nullable, opt_string, opt_struct, proto_enum_serde, ProtoEnum, Struct,
};

/// Who sent a message: `ROLE_USER` (the client) or `ROLE_AGENT`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum Role {
    /// `ROLE_UNSPECIFIED`: not set.
    #[default]
    Unspecified,
    /// `ROLE_USER`: sent by the client.
    User,
    /// `ROLE_AGENT`: sent by the agent.
    Agent,
}

impl ProtoEnum for Role {
    const TYPE: &'static str = "Role";
    const VALUES: &'static [(Role, &'static str, i32)] = &[
        (Role::Unspecified, "ROLE_UNSPECIFIED", 0),
        (Role::User, "ROLE_USER", 1),
        (Role::Agent, "ROLE_AGENT", 2),
    ];

    fn name(self) -> &'static str {
        Role::VALUES[self as usize].1
    }
}

impl Role {
    /// The proto name: `ROLE_USER`, `ROLE_AGENT` or `ROLE_UNSPECIFIED`.
    pub fn as_str(self) -> &'static str {
        self.name()
    }

    fn is_unspecified(&self) -> bool {
        *self == Role::Unspecified
    }
}

proto_enum_serde!(Role);

/// What a [`Part`] holds: exactly one of text, raw bytes, a URL or structured data.
#[derive(Debug, Clone, PartialEq)]
pub enum PartContent {
    /// `text`: a string.
    Text(String),
    /// `raw`: the bytes of a file (base64 on the wire).
    Raw(Vec<u8>),
    /// `url`: where a file's content is.
    Url(String),
    /// `data`: any JSON value (`google.protobuf.Value`; `null` included).
    Data(Value),
}

/// One piece of a message or artifact: content and what describes it.
///
/// On the wire the content is one member of the part (`{"text": "hi"}`, `{"raw": "aGk="}`,
/// `{"url": "..."}`, `{"data": {...}}`) beside the optional `metadata`, `filename` and
/// `mediaType`. A part with none of the four members, or two of them, does not decode.
#[derive(Debug, Clone, PartialEq)]
pub struct Part {
    /// The content.
    pub content: PartContent,
    /// `metadata`: anything else about the part.
    pub metadata: Option<Struct>,
    /// `filename`: a file name (`document.pdf`).
    pub filename: Option<String>,
    /// `mediaType`: the MIME type of the content (`text/plain`, `image/png`).
    pub media_type: Option<String>,
}

impl Part {
    /// A part with `content` and nothing else.
    pub fn new(content: PartContent) -> Part {
        Part {
            content,
            metadata: None,
            filename: None,
            media_type: None,
        }
    }

    /// A text part.
    pub fn text(text: impl Into<String>) -> Part {
        Part::new(PartContent::Text(text.into()))
    }

    /// A structured data part.
    pub fn data(data: Value) -> Part {
        Part::new(PartContent::Data(data))
    }

    /// The text, when this is a text part.
    pub fn as_text(&self) -> Option<&str> {
        match &self.content {
            PartContent::Text(t) => Some(t),
            _ => None,
        }
    }
}

impl Serialize for Part {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut map = s.serialize_map(None)?;
        match &self.content {
            PartContent::Text(t) => map.serialize_entry("text", t)?,
            PartContent::Raw(b) => map.serialize_entry("raw", &serde_util::encode_base64(b))?,
            PartContent::Url(u) => map.serialize_entry("url", u)?,
            PartContent::Data(d) => map.serialize_entry("data", d)?,
        }
        if let Some(m) = &self.metadata {
            map.serialize_entry("metadata", m)?;
        }
        if let Some(f) = &self.filename {
            map.serialize_entry("filename", f)?;
        }
        if let Some(t) = &self.media_type {
            map.serialize_entry("mediaType", t)?;
        }
        map.end()
    }
}

impl<'de> Deserialize<'de> for Part {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Part, D::Error> {
        d.deserialize_map(PartVisitor)
    }
}

struct PartVisitor;

impl<'de> Visitor<'de> for PartVisitor {
    type Value = Part;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a Part object")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Part, A::Error> {
        let mut content: Option<PartContent> = None;
        let mut metadata = None;
        let mut filename = None;
        let mut media_type = None;
        fn set<E: de::Error>(content: &mut Option<PartContent>, new: PartContent) -> Result<(), E> {
            if content.is_some() {
                return Err(E::custom(
                    "a Part holds one of text, raw, url or data, not two",
                ));
            }
            *content = Some(new);
            Ok(())
        }
        while let Some(key) = map.next_key::<std::borrow::Cow<'de, str>>()? {
            match &*key {
                // ProtoJSON: `null` leaves a field unset, but a `google.protobuf.Value`
                // (data) holds it.
                "text" => {
                    if let Some(t) = map.next_value::<Option<String>>()? {
                        set::<A::Error>(&mut content, PartContent::Text(t))?;
                    }
                }
                "raw" => {
                    if let Some(b) = map.next_value::<Option<std::borrow::Cow<'de, str>>>()? {
                        let bytes = serde_util::decode_base64(&b)
                            .map_err(|e| de::Error::custom(format!("raw is not base64: {e}")))?;
                        set::<A::Error>(&mut content, PartContent::Raw(bytes))?;
                    }
                }
                "url" => {
                    if let Some(u) = map.next_value::<Option<String>>()? {
                        set::<A::Error>(&mut content, PartContent::Url(u))?;
                    }
                }
                "data" => {
                    let v = map.next_value::<Value>()?;
                    set::<A::Error>(&mut content, PartContent::Data(v))?;
                }
                "metadata" => metadata = map.next_value::<Option<Struct>>()?,
                "filename" => {
                    filename = map
                        .next_value::<Option<String>>()?
                        .filter(|s| !s.is_empty())
                }
                "mediaType" | "media_type" => {
                    media_type = map
                        .next_value::<Option<String>>()?
                        .filter(|s| !s.is_empty())
                }
                _ => {
                    map.next_value::<IgnoredAny>()?;
                }
            }
        }
        let content = content
            .ok_or_else(|| de::Error::custom("a Part needs one of text, raw, url or data"))?;
        Ok(Part {
            content,
            metadata,
            filename,
            media_type,
        })
    }
}

/// One turn of communication between the client and the agent (§4.1.4).
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Message {
    /// `messageId` (REQUIRED): unique, made by the message's creator.
    #[serde(default, deserialize_with = "nullable")]
    #[serde(alias = "message_id")]
    pub message_id: String,
    /// `contextId`: the conversation this message belongs to.
    #[serde(
        default,
        deserialize_with = "opt_string",
        skip_serializing_if = "Option::is_none"
    )]
    #[serde(alias = "context_id")]
    pub context_id: Option<String>,
    /// `taskId`: the task this message continues.
    #[serde(
        default,
        deserialize_with = "opt_string",
        skip_serializing_if = "Option::is_none"
    )]
    #[serde(alias = "task_id")]
    pub task_id: Option<String>,
    /// `role` (REQUIRED): who sent it.
    #[serde(default, skip_serializing_if = "Role::is_unspecified")]
    pub role: Role,
    /// `parts` (REQUIRED): the content.
    #[serde(default, deserialize_with = "nullable")]
    pub parts: Vec<Part>,
    /// `metadata`.
    #[serde(
        default,
        deserialize_with = "opt_struct",
        skip_serializing_if = "Option::is_none"
    )]
    pub metadata: Option<Struct>,
    /// `extensions`: URIs of the extensions present in or contributing to this message.
    #[serde(
        default,
        deserialize_with = "nullable",
        skip_serializing_if = "Vec::is_empty"
    )]
    pub extensions: Vec<String>,
    /// `referenceTaskIds`: tasks this message refers to for context.
    #[serde(
        default,
        deserialize_with = "nullable",
        skip_serializing_if = "Vec::is_empty"
    )]
    #[serde(alias = "reference_task_ids")]
    pub reference_task_ids: Vec<String>,
}

impl Message {
    /// A message from `role` with one text part.
    pub fn text(role: Role, message_id: impl Into<String>, text: impl Into<String>) -> Message {
        Message {
            message_id: message_id.into(),
            role,
            parts: vec![Part::text(text)],
            ..Message::default()
        }
    }

    /// The first text part, when there is one.
    pub fn first_text(&self) -> Option<&str> {
        self.parts.iter().find_map(Part::as_text)
    }
}

/// An output of a task: a document, an image, structured data (§4.1.7).
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Artifact {
    /// `artifactId` (REQUIRED): unique within the task.
    #[serde(default, deserialize_with = "nullable")]
    #[serde(alias = "artifact_id")]
    pub artifact_id: String,
    /// `name`: human-readable.
    #[serde(
        default,
        deserialize_with = "opt_string",
        skip_serializing_if = "Option::is_none"
    )]
    pub name: Option<String>,
    /// `description`: human-readable.
    #[serde(
        default,
        deserialize_with = "opt_string",
        skip_serializing_if = "Option::is_none"
    )]
    pub description: Option<String>,
    /// `parts` (REQUIRED): the content.
    #[serde(default, deserialize_with = "nullable")]
    pub parts: Vec<Part>,
    /// `metadata`.
    #[serde(
        default,
        deserialize_with = "opt_struct",
        skip_serializing_if = "Option::is_none"
    )]
    pub metadata: Option<Struct>,
    /// `extensions`: URIs of the extensions present in or contributing to this artifact.
    #[serde(
        default,
        deserialize_with = "nullable",
        skip_serializing_if = "Vec::is_empty"
    )]
    pub extensions: Vec<String>,
}

impl Artifact {
    /// An artifact with one text part; an empty id is filled in by the task machine.
    pub fn text(artifact_id: impl Into<String>, text: impl Into<String>) -> Artifact {
        Artifact {
            artifact_id: artifact_id.into(),
            parts: vec![Part::text(text)],
            ..Artifact::default()
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_part_is_one_member_beside_its_description() {
        let part = Part {
            content: PartContent::Raw(vec![1, 2, 3]),
            metadata: None,
            filename: Some("a.bin".into()),
            media_type: Some("application/octet-stream".into()),
        };
        let json = serde_json::to_value(&part).unwrap();
        assert_eq!(
            json,
            json!({"raw": "AQID", "filename": "a.bin", "mediaType": "application/octet-stream"})
        );
        assert_eq!(serde_json::from_value::<Part>(json).unwrap(), part);
        // `null` data is data; `null` text is no text.
        let p: Part = serde_json::from_value(json!({"text": null, "data": null})).unwrap();
        assert_eq!(p.content, PartContent::Data(Value::Null));
        // Empty strings are unset; unknown members are ignored.
        let p: Part =
            serde_json::from_value(json!({"url": "u", "filename": "", "kind": "file"})).unwrap();
        assert_eq!(p.filename, None);
    }

    #[test]
    fn a_part_with_no_content_or_two_does_not_decode() {
        for bad in [
            json!({}),
            json!({"text": "a", "url": "b"}),
            json!({"raw": "%%"}),
        ] {
            assert!(
                serde_json::from_value::<Part>(bad.clone()).is_err(),
                "{bad}"
            );
        }
    }

    #[test]
    fn roles_are_proto_names_or_numbers() {
        let m: Message = serde_json::from_value(
            json!({"messageId": "m", "role": 2, "parts": [{"text": "x"}], "contextId": ""}),
        )
        .unwrap();
        assert_eq!(m.role, Role::Agent);
        assert_eq!(m.context_id, None);
        assert_eq!(
            serde_json::to_value(&m).unwrap(),
            json!({"messageId": "m", "role": "ROLE_AGENT", "parts": [{"text": "x"}]})
        );
        assert!(serde_json::from_value::<Message>(json!({"role": "ROLE_ROBOT"})).is_err());
    }
}
