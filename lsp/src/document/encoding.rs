//! What the `character` of a position counts, and how a server and a client agree on it.

use std::fmt;

use lsp_types::{ClientCapabilities, PositionEncodingKind};

/// What the `character` of an LSP [`Position`](lsp_types::Position) counts: UTF-8 code units
/// (bytes), UTF-16 code units, or UTF-32 code units (Unicode scalar values, Rust `char`s).
///
/// Agreed once per connection at `initialize` ([`negotiate`](Self::negotiate)); UTF-16 is
/// the default the specification gives, and the one every server must support.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum PositionEncoding {
    /// Characters count bytes of UTF-8 (`"utf-8"`).
    Utf8,
    /// Characters count UTF-16 code units (`"utf-16"`): a character outside the Basic
    /// Multilingual Plane, such as 😀, counts two.
    #[default]
    Utf16,
    /// Characters count Unicode scalar values (`"utf-32"`).
    Utf32,
}

impl PositionEncoding {
    /// The three encodings, the server's order of preference when it has none: a server
    /// that keeps its documents with [`Documents`](super::Documents) supports all of them.
    pub const ALL: [PositionEncoding; 3] = [Self::Utf8, Self::Utf16, Self::Utf32];

    /// The encoding of a connection, chosen the way LSP 3.17 says: the first of the
    /// client's `offered` encodings (its `general.positionEncodings`, in its order of
    /// preference) that is in `supported`; UTF-16 when the client offered none, or none
    /// that is supported. Kinds this crate does not know are skipped.
    ///
    /// UTF-16 is the answer of last resort even when `supported` leaves it out: the
    /// specification requires every server to support it.
    pub fn negotiate(
        offered: Option<&[PositionEncodingKind]>,
        supported: &[PositionEncoding],
    ) -> PositionEncoding {
        offered
            .unwrap_or_default()
            .iter()
            .filter_map(Self::from_kind)
            .find(|encoding| supported.contains(encoding))
            .unwrap_or(Self::Utf16)
    }

    /// [`negotiate`](Self::negotiate) with the `general.positionEncodings` of the client's
    /// `initialize` capabilities.
    pub fn from_client_capabilities(
        capabilities: &ClientCapabilities,
        supported: &[PositionEncoding],
    ) -> PositionEncoding {
        let offered = capabilities
            .general
            .as_ref()
            .and_then(|general| general.position_encodings.as_deref());
        Self::negotiate(offered, supported)
    }

    /// The encoding a kind names (`"utf-8"`, `"utf-16"`, `"utf-32"`, as the specification
    /// spells them), or `None` for any other kind.
    pub fn from_kind(kind: &PositionEncodingKind) -> Option<PositionEncoding> {
        match kind.as_str() {
            "utf-8" => Some(Self::Utf8),
            "utf-16" => Some(Self::Utf16),
            "utf-32" => Some(Self::Utf32),
            _ => None,
        }
    }

    /// The kind that names this encoding, for the server's `capabilities.positionEncoding`.
    pub fn kind(self) -> PositionEncodingKind {
        match self {
            Self::Utf8 => PositionEncodingKind::UTF8,
            Self::Utf16 => PositionEncodingKind::UTF16,
            Self::Utf32 => PositionEncodingKind::UTF32,
        }
    }

    /// The name of the encoding on the wire: `"utf-8"`, `"utf-16"` or `"utf-32"`.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Utf8 => "utf-8",
            Self::Utf16 => "utf-16",
            Self::Utf32 => "utf-32",
        }
    }

    /// How many code units of this encoding `c` takes.
    pub fn len_of(self, c: char) -> usize {
        match self {
            Self::Utf8 => c.len_utf8(),
            Self::Utf16 => c.len_utf16(),
            Self::Utf32 => 1,
        }
    }
}

impl fmt::Display for PositionEncoding {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl From<PositionEncoding> for PositionEncodingKind {
    fn from(encoding: PositionEncoding) -> Self {
        encoding.kind()
    }
}

impl TryFrom<&PositionEncodingKind> for PositionEncoding {
    type Error = UnknownPositionEncoding;

    fn try_from(kind: &PositionEncodingKind) -> Result<Self, Self::Error> {
        Self::from_kind(kind).ok_or_else(|| UnknownPositionEncoding(kind.as_str().to_owned()))
    }
}

impl TryFrom<PositionEncodingKind> for PositionEncoding {
    type Error = UnknownPositionEncoding;

    fn try_from(kind: PositionEncodingKind) -> Result<Self, Self::Error> {
        Self::try_from(&kind)
    }
}

/// A position encoding kind other than `"utf-8"`, `"utf-16"` and `"utf-32"`; holds its name.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct UnknownPositionEncoding(pub String);

impl fmt::Display for UnknownPositionEncoding {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "unknown position encoding {:?}", self.0)
    }
}

impl std::error::Error for UnknownPositionEncoding {}
