//! Content blocks (tool results, prompt messages) and resource contents.

use serde::{Deserialize, Serialize};

use super::{Annotations, MetaObject, Resource};

/// A content block of a tool result or prompt message, tagged by `type` (`ContentBlock`).
///
/// The variant structs do not carry `type` themselves: the enum writes and reads it. It reads
/// what `#[serde(tag = "type")]` reads (an object, or an array of the tag then the fields),
/// without serde's `Content` buffer.
#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(tag = "type")]
pub enum ContentBlock {
    /// `"text"`.
    #[serde(rename = "text")]
    Text(TextContent),
    /// `"image"`.
    #[serde(rename = "image")]
    Image(ImageContent),
    /// `"audio"`.
    #[serde(rename = "audio")]
    Audio(AudioContent),
    /// `"resource_link"`: a link to a resource the server can read (a [`Resource`]).
    #[serde(rename = "resource_link")]
    ResourceLink(Resource),
    /// `"resource"`: a resource embedded in the message.
    #[serde(rename = "resource")]
    Resource(EmbeddedResource),
}

/// The `type`s of [`ContentBlock`], in the order of its variants.
const CONTENT_BLOCK_TYPES: &[&str] = &["text", "image", "audio", "resource_link", "resource"];

/// Reads the member `name` of an object once into `slot`; a second time is refused
/// (`duplicate field`), as serde's derived decoders refuse it.
fn once<'de, A: serde::de::MapAccess<'de>, T: Deserialize<'de>>(
    map: &mut A,
    slot: &mut Option<T>,
    name: &'static str,
) -> Result<(), A::Error> {
    if slot.is_some() {
        return Err(<A::Error as serde::de::Error>::duplicate_field(name));
    }
    *slot = Some(map.next_value()?);
    Ok(())
}

impl<'de> Deserialize<'de> for ContentBlock {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        use serde::de::{Error, IgnoredAny, MapAccess, SeqAccess, Visitor};

        use super::serde_util::{read_reordered, AfterTag, Tagged, VariantTag};

        /// The variant `kind` (an index of [`CONTENT_BLOCK_TYPES`]) read from the rest of
        /// an array: what the variant's derived decoder read from it, for the five in one
        /// function (a derived decoder each cost a browser page's MCP client KBs more). Its
        /// fields in order, each required (an `Option` too: "invalid length" when the array
        /// ends before it); what follows is the caller's to refuse.
        fn elements<'de, A: SeqAccess<'de>>(
            kind: usize,
            mut seq: A,
        ) -> Result<ContentBlock, A::Error> {
            /// The variants' structs as their derived decoders name them.
            const EXPECTING: [&str; 5] = [
                "struct TextContent with 3 elements",
                "struct ImageContent with 4 elements",
                "struct AudioContent with 4 elements",
                "struct Resource with 9 elements",
                "struct EmbeddedResource with 3 elements",
            ];
            /// The field `at` (counted from the variant's first).
            fn next<'de, A: SeqAccess<'de>, T: Deserialize<'de>>(
                seq: &mut A,
                at: &mut usize,
                kind: usize,
            ) -> Result<T, A::Error> {
                match seq.next_element()? {
                    Some(value) => {
                        *at += 1;
                        Ok(value)
                    }
                    None => Err(A::Error::invalid_length(*at, &EXPECTING[kind])),
                }
            }
            const LINK: usize = 3;
            const RESOURCE: usize = 4;
            let at = &mut 0;
            let s = &mut seq;
            // The fields, in each struct's order: text; data, mimeType; uri, name, title,
            // description, mimeType; resource; then annotations (size and icons after it in a
            // Resource), then _meta.
            let resource = if kind == RESOURCE {
                Some(next::<A, ResourceContents>(s, at, kind)?)
            } else {
                None
            };
            let first = if kind != RESOURCE {
                next::<A, String>(s, at, kind)?
            } else {
                String::new()
            };
            let second = if (1..=LINK).contains(&kind) {
                next::<A, String>(s, at, kind)?
            } else {
                String::new()
            };
            let (mut title, mut description, mut link_type) = (None, None, None);
            if kind == LINK {
                title = next(s, at, kind)?;
                description = next(s, at, kind)?;
                link_type = next(s, at, kind)?;
            }
            let annotations = next(s, at, kind)?;
            let (mut size, mut icons) = (None, None);
            if kind == LINK {
                size = next(s, at, kind)?;
                icons = next(s, at, kind)?;
            }
            let meta = next(s, at, kind)?;
            if let Some(resource) = resource {
                return Ok(ContentBlock::Resource(EmbeddedResource {
                    resource,
                    annotations,
                    meta,
                }));
            }
            Ok(match kind {
                0 => ContentBlock::Text(TextContent {
                    text: first,
                    annotations,
                    meta,
                }),
                1 => ContentBlock::Image(ImageContent {
                    data: first,
                    mime_type: second,
                    annotations,
                    meta,
                }),
                2 => ContentBlock::Audio(AudioContent {
                    data: first,
                    mime_type: second,
                    annotations,
                    meta,
                }),
                _ => ContentBlock::ResourceLink(Resource {
                    uri: first,
                    name: second,
                    title,
                    description,
                    mime_type: link_type,
                    annotations,
                    size,
                    icons,
                    meta,
                }),
            })
        }

        /// The variant `kind` read from the rest of its object (after its `type`): what the
        /// variant's derived decoder read, for the five in one loop (the five loops cost a
        /// browser page's MCP client 2.9 KB more). A member of the variant is read as its
        /// field's type, once (twice is "duplicate field"); any other is ignored, whatever
        /// it holds; a required one absent is "missing field", in the fields' order.
        fn members<'de, A: MapAccess<'de>>(
            kind: usize,
            mut map: A,
        ) -> Result<ContentBlock, A::Error> {
            fn required<T, E: Error>(slot: Option<T>, name: &'static str) -> Result<T, E> {
                slot.ok_or_else(|| E::missing_field(name))
            }
            const TEXT: usize = 0;
            const LINK: usize = 3;
            const RESOURCE: usize = 4;
            // Image and audio: 1 and 2.
            let media = kind == 1 || kind == 2;
            let (mut text, mut data, mut media_type) = (None::<String>, None::<String>, None);
            let (mut uri, mut name) = (None::<String>, None::<String>);
            let (mut title, mut description, mut link_type) = (None, None, None);
            let (mut size, mut icons, mut resource) = (None, None, None);
            let (mut annotations, mut meta) = (None, None);
            while let Some(key) = map.next_key::<String>()? {
                let m = &mut map;
                match key.as_str() {
                    "annotations" => once(m, &mut annotations, "annotations")?,
                    "_meta" => once(m, &mut meta, "_meta")?,
                    "text" if kind == TEXT => once(m, &mut text, "text")?,
                    "data" if media => once(m, &mut data, "data")?,
                    "mimeType" if media => once(m, &mut media_type, "mimeType")?,
                    "mimeType" if kind == LINK => once(m, &mut link_type, "mimeType")?,
                    "uri" if kind == LINK => once(m, &mut uri, "uri")?,
                    "name" if kind == LINK => once(m, &mut name, "name")?,
                    "title" if kind == LINK => once(m, &mut title, "title")?,
                    "description" if kind == LINK => once(m, &mut description, "description")?,
                    "size" if kind == LINK => once(m, &mut size, "size")?,
                    "icons" if kind == LINK => once(m, &mut icons, "icons")?,
                    "resource" if kind == RESOURCE => once(m, &mut resource, "resource")?,
                    _ => drop(map.next_value::<IgnoredAny>()?),
                }
            }
            let (annotations, meta) = (annotations.flatten(), meta.flatten());
            Ok(match kind {
                TEXT => ContentBlock::Text(TextContent {
                    text: required(text, "text")?,
                    annotations,
                    meta,
                }),
                1 | 2 => {
                    let data = required(data, "data")?;
                    let mime_type = required(media_type, "mimeType")?;
                    if kind == 1 {
                        ContentBlock::Image(ImageContent {
                            data,
                            mime_type,
                            annotations,
                            meta,
                        })
                    } else {
                        ContentBlock::Audio(AudioContent {
                            data,
                            mime_type,
                            annotations,
                            meta,
                        })
                    }
                }
                LINK => ContentBlock::ResourceLink(Resource {
                    uri: required(uri, "uri")?,
                    name: required(name, "name")?,
                    title: title.flatten(),
                    description: description.flatten(),
                    mime_type: link_type.flatten(),
                    annotations,
                    size: size.flatten(),
                    icons: icons.flatten(),
                    meta,
                }),
                _ => ContentBlock::Resource(EmbeddedResource {
                    resource: required(resource, "resource")?,
                    annotations,
                    meta,
                }),
            })
        }

        struct Block;
        impl<'de> Visitor<'de> for Block {
            type Value = ContentBlock;

            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("internally tagged enum ContentBlock")
            }

            fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<ContentBlock, A::Error> {
                match AfterTag::read(map, "type", VariantTag(CONTENT_BLOCK_TYPES))? {
                    Tagged::First(kind, rest) => members(kind, rest),
                    Tagged::Reordered(text) => read_reordered(&text),
                }
            }

            // serde's tagged enums also read an array: the tag, then the variant's fields.
            fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<ContentBlock, A::Error> {
                match seq.next_element_seed(VariantTag(CONTENT_BLOCK_TYPES))? {
                    Some(kind) => elements(kind, seq),
                    None => Err(serde::de::Error::missing_field("type")),
                }
            }
        }
        deserializer.deserialize_any(Block)
    }
}

impl ContentBlock {
    /// A text block.
    pub fn text(text: impl Into<String>) -> Self {
        ContentBlock::Text(TextContent::new(text))
    }

    /// An image block from base64 data.
    pub fn image(data: impl Into<String>, mime_type: impl Into<String>) -> Self {
        ContentBlock::Image(ImageContent {
            data: data.into(),
            mime_type: mime_type.into(),
            annotations: None,
            meta: None,
        })
    }

    /// An audio block from base64 data.
    pub fn audio(data: impl Into<String>, mime_type: impl Into<String>) -> Self {
        ContentBlock::Audio(AudioContent {
            data: data.into(),
            mime_type: mime_type.into(),
            annotations: None,
            meta: None,
        })
    }

    /// An embedded resource block.
    pub fn resource(resource: ResourceContents) -> Self {
        ContentBlock::Resource(EmbeddedResource {
            resource,
            annotations: None,
            meta: None,
        })
    }

    /// The text of a text block.
    pub fn as_text(&self) -> Option<&str> {
        match self {
            ContentBlock::Text(t) => Some(&t.text),
            _ => None,
        }
    }
}

/// Text provided to or from an LLM (`type: "text"`).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct TextContent {
    /// The text.
    pub text: String,
    /// Optional annotations.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub annotations: Option<Annotations>,
    /// Metadata.
    #[serde(rename = "_meta", skip_serializing_if = "Option::is_none")]
    pub meta: Option<MetaObject>,
}

impl TextContent {
    /// Text without annotations.
    pub fn new(text: impl Into<String>) -> Self {
        TextContent {
            text: text.into(),
            annotations: None,
            meta: None,
        }
    }
}

/// An image provided to or from an LLM (`type: "image"`).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ImageContent {
    /// Base64-encoded image data.
    pub data: String,
    /// MIME type of the image.
    pub mime_type: String,
    /// Optional annotations.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub annotations: Option<Annotations>,
    /// Metadata.
    #[serde(rename = "_meta", skip_serializing_if = "Option::is_none")]
    pub meta: Option<MetaObject>,
}

/// Audio provided to or from an LLM (`type: "audio"`).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct AudioContent {
    /// Base64-encoded audio data.
    pub data: String,
    /// MIME type of the audio (e.g. `"audio/wav"`).
    pub mime_type: String,
    /// Optional annotations.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub annotations: Option<Annotations>,
    /// Metadata.
    #[serde(rename = "_meta", skip_serializing_if = "Option::is_none")]
    pub meta: Option<MetaObject>,
}

/// The contents of a resource embedded in a prompt or tool result (`type: "resource"`).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct EmbeddedResource {
    /// The resource contents.
    pub resource: ResourceContents,
    /// Optional annotations.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub annotations: Option<Annotations>,
    /// Metadata.
    #[serde(rename = "_meta", skip_serializing_if = "Option::is_none")]
    pub meta: Option<MetaObject>,
}

/// The contents of a resource or sub-resource: text or a base64 blob (untagged; an object
/// with `text` is text, one with `blob` is a blob).
///
/// It reads what `#[serde(untagged)]` reads (text when the object is text contents, else a
/// blob when it is blob contents), member by member, without serde's `Content` buffer.
#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(untagged)]
pub enum ResourceContents {
    /// Text contents.
    Text(TextResourceContents),
    /// Binary contents.
    Blob(BlobResourceContents),
}

impl<'de> Deserialize<'de> for ResourceContents {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        use serde::de::value::SeqAccessDeserializer;
        use serde::de::{Error, IgnoredAny, MapAccess, SeqAccess, Visitor};
        use serde_json::Value;

        /// The string a variant's own member (`text`, `blob`) holds: `None` when absent,
        /// given twice (that variant refuses it) or not a string.
        fn string(member: Option<Option<Value>>) -> Option<String> {
            match member {
                Some(Some(Value::String(s))) => Some(s),
                _ => None,
            }
        }

        struct Contents;
        impl<'de> Visitor<'de> for Contents {
            type Value = ResourceContents;

            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("untagged enum ResourceContents")
            }

            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
                let (mut uri, mut mime_type, mut meta) = (None::<String>, None, None);
                // `None` absent, `Some(None)` given twice, else the value given.
                let (mut text, mut blob) = (None::<Option<Value>>, None::<Option<Value>>);
                while let Some(key) = map.next_key::<String>()? {
                    match key.as_str() {
                        "uri" => once(&mut map, &mut uri, "uri")?,
                        "mimeType" => once(&mut map, &mut mime_type, "mimeType")?,
                        "_meta" => once(&mut map, &mut meta, "_meta")?,
                        "text" | "blob" => {
                            let slot = if key == "text" { &mut text } else { &mut blob };
                            let value = map.next_value::<Value>()?;
                            *slot = Some(slot.is_none().then_some(value));
                        }
                        _ => drop(map.next_value::<IgnoredAny>()?),
                    }
                }
                let uri = uri.ok_or_else(|| A::Error::missing_field("uri"))?;
                let (mime_type, meta) = (mime_type.flatten(), meta.flatten());
                if let Some(text) = string(text) {
                    Ok(ResourceContents::Text(TextResourceContents {
                        uri,
                        mime_type,
                        text,
                        meta,
                    }))
                } else if let Some(blob) = string(blob) {
                    Ok(ResourceContents::Blob(BlobResourceContents {
                        uri,
                        mime_type,
                        blob,
                        meta,
                    }))
                } else {
                    Err(A::Error::custom(
                        "data did not match any variant of untagged enum ResourceContents",
                    ))
                }
            }

            // serde's untagged enum also reads an array: the fields of the text contents (a
            // blob's, of the same types, never gets there).
            fn visit_seq<A: SeqAccess<'de>>(self, seq: A) -> Result<Self::Value, A::Error> {
                Deserialize::deserialize(SeqAccessDeserializer::new(seq))
                    .map(ResourceContents::Text)
            }
        }
        deserializer.deserialize_any(Contents)
    }
}

impl ResourceContents {
    /// Text contents of `uri`.
    pub fn text(
        uri: impl Into<String>,
        mime_type: Option<String>,
        text: impl Into<String>,
    ) -> Self {
        ResourceContents::Text(TextResourceContents {
            uri: uri.into(),
            mime_type,
            text: text.into(),
            meta: None,
        })
    }

    /// Binary contents of `uri`, `blob` being base64.
    pub fn blob(
        uri: impl Into<String>,
        mime_type: Option<String>,
        blob: impl Into<String>,
    ) -> Self {
        ResourceContents::Blob(BlobResourceContents {
            uri: uri.into(),
            mime_type,
            blob: blob.into(),
            meta: None,
        })
    }

    /// The URI of the contents.
    pub fn uri(&self) -> &str {
        match self {
            ResourceContents::Text(t) => &t.uri,
            ResourceContents::Blob(b) => &b.uri,
        }
    }

    /// The MIME type of the contents, if known.
    pub fn mime_type(&self) -> Option<&str> {
        match self {
            ResourceContents::Text(t) => t.mime_type.as_deref(),
            ResourceContents::Blob(b) => b.mime_type.as_deref(),
        }
    }
}

/// Text resource contents.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TextResourceContents {
    /// URI of the resource.
    pub uri: String,
    /// MIME type, if known.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub mime_type: Option<String>,
    /// The text.
    pub text: String,
    /// Metadata.
    #[serde(rename = "_meta", skip_serializing_if = "Option::is_none")]
    pub meta: Option<MetaObject>,
}

/// Binary resource contents.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct BlobResourceContents {
    /// URI of the resource.
    pub uri: String,
    /// MIME type, if known.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub mime_type: Option<String>,
    /// Base64-encoded data.
    pub blob: String,
    /// Metadata.
    #[serde(rename = "_meta", skip_serializing_if = "Option::is_none")]
    pub meta: Option<MetaObject>,
}
