//! `ListTasks`' page size and its cursor.

use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use base64::Engine as _;

use crate::types::Timestamp;

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
