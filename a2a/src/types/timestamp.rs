//! `google.protobuf.Timestamp`: a UTC instant, written as an RFC 3339 string.

use std::fmt;
use std::time::Duration;

use serde::{Deserialize, Deserializer, Serialize, Serializer};

/// A UTC instant with nanosecond precision: `google.protobuf.Timestamp`.
///
/// Written as RFC 3339 in UTC (`2025-10-28T10:30:00.000Z`): milliseconds as the
/// specification asks (§5.6.1), or six or nine fraction digits when the instant has more
/// precision, so nothing read is lost on the way back. Read from any RFC 3339 string the
/// protobuf parsers take: `Z` or an offset, zero to nine fraction digits. The range is
/// protobuf's: years 0001 to 9999.
///
/// The task machine never reads a clock: its driver passes the current time in.
///
/// ```
/// use sansrpc_a2a::types::Timestamp;
///
/// let t = Timestamp::from_unix_millis(1_700_000_000_123).unwrap();
/// assert_eq!(t.to_string(), "2023-11-14T22:13:20.123Z");
/// assert_eq!(Timestamp::parse("2023-11-14T23:13:20.123+01:00").unwrap(), t);
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub struct Timestamp {
    seconds: i64,
    nanos: u32,
}

/// 0001-01-01T00:00:00Z, the earliest instant protobuf allows.
const MIN_SECONDS: i64 = -62_135_596_800;
/// 9999-12-31T23:59:59Z, the latest.
const MAX_SECONDS: i64 = 253_402_300_799;

/// Why a string is not an RFC 3339 timestamp.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TimestampError(String);

impl fmt::Display for TimestampError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "not an RFC 3339 timestamp: {}", self.0)
    }
}

impl std::error::Error for TimestampError {}

impl Timestamp {
    /// 1970-01-01T00:00:00Z.
    pub const UNIX_EPOCH: Timestamp = Timestamp {
        seconds: 0,
        nanos: 0,
    };

    /// The instant `seconds` and `nanos` after the Unix epoch; `None` outside years
    /// 0001..=9999 or with `nanos` of a second or more.
    pub fn from_unix(seconds: i64, nanos: u32) -> Option<Timestamp> {
        ((MIN_SECONDS..=MAX_SECONDS).contains(&seconds) && nanos < 1_000_000_000)
            .then_some(Timestamp { seconds, nanos })
    }

    /// The instant `millis` milliseconds after the Unix epoch.
    pub fn from_unix_millis(millis: i64) -> Option<Timestamp> {
        let nanos = (millis.rem_euclid(1000) * 1_000_000) as u32;
        Timestamp::from_unix(millis.div_euclid(1000), nanos)
    }

    /// The instant `since_epoch` after the Unix epoch, as a driver reads it from
    /// `SystemTime::now().duration_since(UNIX_EPOCH)`.
    pub fn from_duration_since_epoch(since_epoch: Duration) -> Option<Timestamp> {
        let seconds = i64::try_from(since_epoch.as_secs()).ok()?;
        Timestamp::from_unix(seconds, since_epoch.subsec_nanos())
    }

    /// Whole seconds since the Unix epoch (negative before it).
    pub fn seconds(self) -> i64 {
        self.seconds
    }

    /// Nanoseconds past [`seconds`](Self::seconds), below one billion.
    pub fn nanos(self) -> u32 {
        self.nanos
    }

    /// Reads an RFC 3339 timestamp (`2023-10-27T10:00:00Z`, `...00.5+02:00`).
    pub fn parse(s: &str) -> Result<Timestamp, TimestampError> {
        parse(s.as_bytes()).ok_or_else(|| TimestampError(s.chars().take(64).collect()))
    }
}

fn digits(b: &[u8], at: usize, n: usize) -> Option<i64> {
    let part = b.get(at..at + n)?;
    part.iter().try_fold(0i64, |acc, &c| {
        c.is_ascii_digit().then(|| acc * 10 + i64::from(c - b'0'))
    })
}

fn parse(b: &[u8]) -> Option<Timestamp> {
    // YYYY-MM-DDTHH:MM:SS
    let year = digits(b, 0, 4)?;
    let month = digits(b, 5, 2)?;
    let day = digits(b, 8, 2)?;
    let hour = digits(b, 11, 2)?;
    let minute = digits(b, 14, 2)?;
    let second = digits(b, 17, 2)?;
    if b[4] != b'-'
        || b[7] != b'-'
        || !matches!(b[10], b'T' | b't')
        || b[13] != b':'
        || b[16] != b':'
    {
        return None;
    }
    if !(1..=12).contains(&month)
        || day < 1
        || day > days_in_month(year, month)
        || hour > 23
        || minute > 59
        || second > 59
    {
        return None;
    }
    let mut at = 19;
    let mut nanos = 0u32;
    if b.get(at) == Some(&b'.') {
        at += 1;
        let start = at;
        while at < b.len() && b[at].is_ascii_digit() {
            at += 1;
        }
        let count = at - start;
        if count == 0 || count > 9 {
            return None;
        }
        let frac = digits(b, start, count)?;
        nanos = (frac * 10i64.pow(9 - count as u32)) as u32;
    }
    let offset = match b.get(at..)? {
        [b'Z' | b'z'] => 0,
        [sign @ (b'+' | b'-'), ..] if b.len() == at + 6 && b[at + 3] == b':' => {
            let h = digits(b, at + 1, 2)?;
            let m = digits(b, at + 4, 2)?;
            if h > 23 || m > 59 {
                return None;
            }
            let off = h * 3600 + m * 60;
            if *sign == b'+' {
                off
            } else {
                -off
            }
        }
        _ => return None,
    };
    let days = days_from_civil(year, month, day);
    let seconds = days * 86_400 + hour * 3600 + minute * 60 + second - offset;
    Timestamp::from_unix(seconds, nanos)
}

fn is_leap(year: i64) -> bool {
    (year % 4 == 0 && year % 100 != 0) || year % 400 == 0
}

fn days_in_month(year: i64, month: i64) -> i64 {
    match month {
        2 if is_leap(year) => 29,
        2 => 28,
        4 | 6 | 9 | 11 => 30,
        _ => 31,
    }
}

/// Days from 1970-01-01 to the proleptic Gregorian date (Howard Hinnant's algorithm).
fn days_from_civil(year: i64, month: i64, day: i64) -> i64 {
    let y = if month <= 2 { year - 1 } else { year };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let mp = (month + 9) % 12;
    let doy = (153 * mp + 2) / 5 + day - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

/// The date `days` after 1970-01-01: (year, month, day).
fn civil_from_days(days: i64) -> (i64, i64, i64) {
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    (year, month, day)
}

impl fmt::Display for Timestamp {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let days = self.seconds.div_euclid(86_400);
        let secs = self.seconds.rem_euclid(86_400);
        let (year, month, day) = civil_from_days(days);
        write!(
            f,
            "{year:04}-{month:02}-{day:02}T{:02}:{:02}:{:02}",
            secs / 3600,
            secs / 60 % 60,
            secs % 60
        )?;
        let n = self.nanos;
        if n % 1_000_000 == 0 {
            write!(f, ".{:03}Z", n / 1_000_000)
        } else if n % 1000 == 0 {
            write!(f, ".{:06}Z", n / 1000)
        } else {
            write!(f, ".{n:09}Z")
        }
    }
}

impl std::str::FromStr for Timestamp {
    type Err = TimestampError;

    fn from_str(s: &str) -> Result<Timestamp, TimestampError> {
        Timestamp::parse(s)
    }
}

impl Serialize for Timestamp {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}

impl<'de> Deserialize<'de> for Timestamp {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Timestamp, D::Error> {
        let s = <std::borrow::Cow<'de, str>>::deserialize(d)?;
        Timestamp::parse(&s).map_err(serde::de::Error::custom)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn writes_and_reads_back_every_precision() {
        for (secs, nanos, text) in [
            (0, 0, "1970-01-01T00:00:00.000Z"),
            (1_710_497_700, 0, "2024-03-15T10:15:00.000Z"),
            (1_709_210_096, 5_000_000, "2024-02-29T12:34:56.005Z"),
            (951_782_400, 120_000, "2000-02-29T00:00:00.000120Z"),
            (-1, 999_999_999, "1969-12-31T23:59:59.999999999Z"),
            (MIN_SECONDS, 0, "0001-01-01T00:00:00.000Z"),
            (MAX_SECONDS, 1, "9999-12-31T23:59:59.000000001Z"),
        ] {
            let t = Timestamp::from_unix(secs, nanos).unwrap();
            assert_eq!(t.to_string(), text);
            assert_eq!(Timestamp::parse(text).unwrap(), t);
        }
    }

    #[test]
    fn reads_offsets_and_short_fractions() {
        let t = Timestamp::parse("2024-03-15T10:15:00Z").unwrap();
        assert_eq!(t.seconds(), 1_710_497_700);
        assert_eq!(Timestamp::parse("2024-03-15T12:45:00+02:30").unwrap(), t);
        assert_eq!(Timestamp::parse("2024-03-15t08:15:00-02:00").unwrap(), t);
        assert_eq!(
            Timestamp::parse("2024-03-15T10:15:00.5Z").unwrap().nanos(),
            500_000_000
        );
    }

    #[test]
    fn refuses_what_is_not_a_timestamp() {
        for s in [
            "",
            "2024-03-15",
            "2024-03-15T10:15:00",
            "2024-02-30T00:00:00Z",
            "2023-02-29T00:00:00Z",
            "2024-03-15T24:00:00Z",
            "2024-03-15T10:15:60Z",
            "2024-03-15T10:15:00.Z",
            "2024-03-15T10:15:00.1234567890Z",
            "2024-03-15T10:15:00+0200",
            "2024-03-15T10:15:00Zjunk",
            "0000-12-31T23:59:59Z",
            "+2024-03-15T10:15:00Z",
            "2024-03-15T10:15:00.000é",
        ] {
            assert!(Timestamp::parse(s).is_err(), "{s}");
        }
        assert!(Timestamp::from_unix(0, 1_000_000_000).is_none());
        assert!(Timestamp::from_unix(MAX_SECONDS + 1, 0).is_none());
    }
}
