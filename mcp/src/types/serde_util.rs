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

/// `Deserialize` for one of MCP's objects whose unknown members go in its `extra` map: what
/// `#[serde(flatten)] extra: JsonObject` reads, read member by member instead of through
/// serde's `Content` buffer (which instantiates every member's decoder twice more: the
/// flattened form cost a browser page's MCP client tens of KB of code). Members are listed
/// with their JSON names: `field: "name"` (absent: its `Default`, `None` for an `Option`),
/// `field: "name" required` (absent: "missing field"), `field: "name" present` (read as
/// [`present`] reads it: a present `null` is `Some`). A member given twice is refused
/// ("duplicate field"), an unknown one given twice keeps its last value, as before.
macro_rules! deserialize_with_extra {
    ($ty:ident { $($field:ident: $name:literal $($how:ident)?),* $(,)? }) => {
        impl<'de> serde::Deserialize<'de> for $ty {
            fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
                struct Members;
                impl<'de> serde::de::Visitor<'de> for Members {
                    type Value = $ty;

                    fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                        f.write_str(concat!("struct ", stringify!($ty)))
                    }

                    fn visit_map<A: serde::de::MapAccess<'de>>(
                        self,
                        mut map: A,
                    ) -> Result<$ty, A::Error> {
                        $(let mut $field = None;)*
                        let mut extra = $crate::types::JsonObject::new();
                        while let Some(key) = map.next_key::<String>()? {
                            match key.as_str() {
                                $($name => {
                                    if $field.is_some() {
                                        return Err(serde::de::Error::duplicate_field($name));
                                    }
                                    $field = Some(deserialize_with_extra!(@value map $($how)?));
                                })*
                                _ => {
                                    let value = map.next_value()?;
                                    extra.insert(key, value);
                                }
                            }
                        }
                        Ok($ty {
                            $($field: deserialize_with_extra!(@take $field $name $($how)?),)*
                            extra,
                        })
                    }
                }
                deserializer.deserialize_map(Members)
            }
        }
    };
    (@value $map:ident) => { $map.next_value()? };
    (@value $map:ident required) => { $map.next_value()? };
    (@value $map:ident present) => { Some($map.next_value()?) };
    (@take $field:ident $name:literal) => { $field.unwrap_or_default() };
    (@take $field:ident $name:literal present) => { $field.unwrap_or_default() };
    (@take $field:ident $name:literal required) => {
        match $field {
            Some(value) => value,
            None => return Err(serde::de::Error::missing_field($name)),
        }
    };
}
