//! Framing codecs: turning a byte stream into frames and frames into bytes.
