//! Small serde helpers shared by the type modules.

use serde::{Deserialize, Deserializer, Serializer};

/// Largest integer an `f64` holds exactly (2^53).
const MAX_EXACT: f64 = 9_007_199_254_740_992.0;

/// Writes an `f64` the way JavaScript does: integral values without a fraction.
pub(crate) fn f64_js<S: Serializer>(value: &f64, serializer: S) -> Result<S::Ok, S::Error> {
    let v = *value;
    if v.is_finite() && v.fract() == 0.0 && v.abs() <= MAX_EXACT {
        // Exact: |v| <= 2^53 fits in i64 and the value is integral.
        serializer.serialize_i64(v as i64)
    } else {
        serializer.serialize_f64(v)
    }
}

/// [`f64_js`] for `Option<f64>` (used together with `skip_serializing_if`).
pub(crate) fn opt_f64_js<S: Serializer>(
    value: &Option<f64>,
    serializer: S,
) -> Result<S::Ok, S::Error> {
    match value {
        Some(v) => f64_js(v, serializer),
        None => serializer.serialize_none(),
    }
}

/// Deserializes a present field as `Some`, even when its value is JSON `null`.
///
/// With `#[serde(default)]` an absent field stays `None`, so `null` and "absent" stay
/// distinguishable (`structuredContent: null` round-trips).
pub(crate) fn present<'de, D, T>(deserializer: D) -> Result<Option<T>, D::Error>
where
    D: Deserializer<'de>,
    T: Deserialize<'de>,
{
    T::deserialize(deserializer).map(Some)
}
