//! What the store did with input it had to adjust, and what it refused.

use std::fmt;

use lsp_types::{Position, Range, Uri};

/// How a position was moved to a place in the text, when it did not name one exactly.
///
/// The first two are the clamps the specification defines, and clients rely on them (a
/// range ending at `(line count, 0)` for "the end of the document", say); the others are
/// positions no client that counts as the server does would send.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Adjustment {
    /// The line is past the document's last line: the position is the end of the document.
    PastLastLine,
    /// The character is past the end of its line's text: the position is the end of the
    /// line's text, before its line ending.
    PastLineEnd,
    /// The character falls between the CR and the LF of a CRLF line ending: the position is
    /// the end of the line's text, before the CR. (Past the line's end, so the spec's clamp;
    /// but a sign that the client counts line endings differently.)
    InsideLineEnding,
    /// UTF-16: the character falls between the two code units of a surrogate pair (a
    /// character outside the Basic Multilingual Plane): the position is moved back to that
    /// character's start.
    InsideSurrogatePair,
    /// UTF-8: the character falls inside the bytes of a multi-byte character: the position
    /// is moved back to that character's start.
    InsideUtf8Sequence,
}

impl Adjustment {
    /// Whether this is a clamp the specification defines ([`PastLastLine`](Self::PastLastLine),
    /// [`PastLineEnd`](Self::PastLineEnd)): worth a debug line, not a warning.
    pub fn is_spec_clamp(self) -> bool {
        matches!(self, Self::PastLastLine | Self::PastLineEnd)
    }

    fn describe(self) -> &'static str {
        match self {
            Self::PastLastLine => "past the last line, moved to the end of the document",
            Self::PastLineEnd => "past the end of its line, moved to the line's end",
            Self::InsideLineEnding => "between CR and LF, moved before the CR",
            Self::InsideSurrogatePair => "inside a UTF-16 surrogate pair, moved to its start",
            Self::InsideUtf8Sequence => "inside a UTF-8 sequence, moved to its start",
        }
    }
}

impl fmt::Display for Adjustment {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.describe())
    }
}

/// Which end of a range.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Endpoint {
    /// The range's `start`.
    Start,
    /// The range's `end`.
    End,
}

/// Something in a notification the store had to make sense of; what it did is part of
/// each variant's documentation. The document stays whole and in step with what the
/// notification says; a caller logs these (see [`is_spec_clamp`](Self::is_spec_clamp)).
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum Warning {
    /// `didOpen` for a document already open (the specification forbids it): the new
    /// text, language and version replaced the old ones.
    AlreadyOpen {
        /// The document.
        uri: Uri,
        /// The version it had before.
        previous_version: i32,
    },
    /// `didChange` whose version is not above the document's: the changes were applied
    /// all the same, and the document has the version received. (The changes are what
    /// the editor did; refusing them would make every later edit land in the wrong place.)
    VersionNotIncreasing {
        /// The document.
        uri: Uri,
        /// The version it had.
        previous: i32,
        /// The version the notification gave it.
        received: i32,
    },
    /// A position of a change's range named no place in the text exactly: it was moved as
    /// `adjustment` says, and the change applied there.
    Position {
        /// The document.
        uri: Uri,
        /// Which change of the notification (from 0).
        change: usize,
        /// Which end of its range.
        endpoint: Endpoint,
        /// The position as sent.
        sent: Position,
        /// The position it was moved to.
        used: Position,
        /// How.
        adjustment: Adjustment,
    },
    /// A change's range starts after its end: it was applied to the range between the
    /// two (start and end swapped, as vscode-languageserver-textdocument does).
    ReversedRange {
        /// The document.
        uri: Uri,
        /// Which change of the notification (from 0).
        change: usize,
        /// The range as sent.
        range: Range,
    },
}

impl Warning {
    /// Whether the notification did nothing the specification forbids: only a position
    /// moved by one of the clamps it defines ([`Adjustment::is_spec_clamp`]).
    pub fn is_spec_clamp(&self) -> bool {
        matches!(self, Self::Position { adjustment, .. } if adjustment.is_spec_clamp())
    }

    /// The document the warning is about.
    pub fn uri(&self) -> &Uri {
        match self {
            Self::AlreadyOpen { uri, .. }
            | Self::VersionNotIncreasing { uri, .. }
            | Self::Position { uri, .. }
            | Self::ReversedRange { uri, .. } => uri,
        }
    }
}

impl fmt::Display for Warning {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::AlreadyOpen {
                uri,
                previous_version,
            } => write!(
                f,
                "{}: didOpen for an open document (version {previous_version}): replaced",
                uri.as_str()
            ),
            Self::VersionNotIncreasing {
                uri,
                previous,
                received,
            } => write!(
                f,
                "{}: didChange to version {received}, not above {previous}: applied",
                uri.as_str()
            ),
            Self::Position {
                uri,
                change,
                endpoint,
                sent,
                used,
                adjustment,
            } => {
                let end = match endpoint {
                    Endpoint::Start => "start",
                    Endpoint::End => "end",
                };
                write!(
                    f,
                    "{}: change {change}, range {end} {}:{} {adjustment} ({}:{})",
                    uri.as_str(),
                    sent.line,
                    sent.character,
                    used.line,
                    used.character
                )
            }
            Self::ReversedRange { uri, change, range } => write!(
                f,
                "{}: change {change}, range {}:{}-{}:{} ends before it starts: applied between the two",
                uri.as_str(),
                range.start.line,
                range.start.character,
                range.end.line,
                range.end.character
            ),
        }
    }
}

/// A notification the store could not apply; nothing was changed.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum DocumentError {
    /// `didChange` or `didClose` for a document that is not open.
    NotOpen {
        /// The document.
        uri: Uri,
    },
}

impl fmt::Display for DocumentError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::NotOpen { uri } => write!(f, "{}: not open", uri.as_str()),
        }
    }
}

impl std::error::Error for DocumentError {}
