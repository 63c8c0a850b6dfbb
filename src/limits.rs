//! Resource limits: every buffer and every amount of work the core does for a peer is
//! bounded by one of these numbers.

/// The bounds the decoders and the classifier enforce, each with a documented default.
///
/// Every breach has a defined answer (see the field docs); none panics, none grows memory
/// past the bound. Construct with [`Limits::default`] and override fields as needed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub struct Limits {
    /// Largest frame body in bytes (default 8 MiB).
    ///
    /// Checked on the declared length before anything is buffered: a Content-Length header
    /// above it is refused with [`FrameError::TooLarge`](crate::codec::FrameError::TooLarge)
    /// and its body is skipped without being stored; a newline-delimited line longer than it
    /// is skipped up to its newline. The answer to the peer is error `-32004` with id `null`.
    pub max_frame_bytes: usize,
    /// Largest header block of a Content-Length frame in bytes (default 8 KiB).
    ///
    /// A header block that has not ended within this many bytes gives
    /// [`FrameError::HeaderTooLarge`](crate::codec::FrameError::HeaderTooLarge) and the decoder
    /// resynchronises at the next `Content-Length` header.
    pub max_header_bytes: usize,
    /// Deepest nesting of arrays and objects in one frame, the outermost counting as 1
    /// (default 128, at most [`Limits::MAX_DEPTH_CAP`]).
    ///
    /// The scanner is iterative, so no input can overflow the stack; a deeper frame is
    /// answered with `-32700` ("Parse error: nesting too deep") and id `null`.
    pub max_depth: u32,
    /// Most entries in one batch (default 1024).
    ///
    /// A longer batch is answered with one error response, `-32003` Batch too large (seed 000
    /// appendix B) with id `null`, or `-32600` when [`Limits::batch_too_large_as_invalid_request`]
    /// is set (the WebSocket seed's choice). Entries past the limit are scanned but not recorded:
    /// a frame that is not JSON is a parse error (`-32700`) whatever its length.
    pub max_batch_len: usize,
    /// Longest id token in bytes, as written on the wire: a string's contents with escapes
    /// in place, or a number's digits (default 256).
    ///
    /// A request whose id is longer is answered `-32600` with id `null`: the id is not
    /// echoed, so that it need not be stored. A response with such an id is a
    /// [`ProtocolError::IdTooLong`](crate::ProtocolError::IdTooLong).
    pub max_id_len: usize,
    /// Answer an oversize batch with `-32600` instead of `-32003` (default `false`).
    pub batch_too_large_as_invalid_request: bool,
    /// Accept JSON-RPC 1.0 messages as well (default `false`).
    ///
    /// When set: a message without a `jsonrpc` member is read as 1.0; a 1.0 request whose id
    /// is `null` is a notification; a 1.0 response may carry both `result` and `error` as
    /// long as one of them is `null`. Answers to 1.0 requests are written in 1.0 form.
    pub accept_v1: bool,
    /// Read `"params": null` on a request or notification as no `params` at all (default
    /// `false`: JSON-RPC 2.0 allows only an array or an object, and strict peers are
    /// answered `-32600`).
    ///
    /// Always on under [`Profile::Lsp`](crate::Profile::Lsp), whatever is set here: editors
    /// (Zed, Emacs's eglot, IntelliJ's LSP4IJ, Atom) send `"params": null` on `shutdown`,
    /// `exit` and other parameterless messages, and the LSP ecosystem reads it as absent.
    /// A method that needs params then gets none, and its handler answers as it does for
    /// absent params (`-32602` Invalid params, typically).
    pub null_params_as_absent: bool,
}

impl Limits {
    /// The highest value [`Limits::max_depth`] may take; larger settings are clamped to it.
    pub const MAX_DEPTH_CAP: u32 = 1024;

    /// The defaults, usable in `const` contexts.
    pub const DEFAULT: Limits = Limits {
        max_frame_bytes: 8 * 1024 * 1024,
        max_header_bytes: 8 * 1024,
        max_depth: 128,
        max_batch_len: 1024,
        max_id_len: 256,
        batch_too_large_as_invalid_request: false,
        accept_v1: false,
        null_params_as_absent: false,
    };
}

impl Default for Limits {
    fn default() -> Self {
        Limits::DEFAULT
    }
}
