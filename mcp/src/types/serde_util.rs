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
                        const NAMES: &[&str] = &[$($name),*];
                        $(let mut $field = None;)*
                        let mut extra = $crate::types::JsonObject::new();
                        while let Some(index) =
                            $crate::types::serde_util::next_member(&mut map, NAMES, &mut extra)?
                        {
                            // The member `index` of `NAMES`, in the order of the fields.
                            let mut at = index;
                            $(
                                if at == 0 {
                                    if $field.is_some() {
                                        return Err(serde::de::Error::duplicate_field($name));
                                    }
                                    $field = Some(deserialize_with_extra!(@value map $($how)?));
                                    continue;
                                }
                                at -= 1;
                            )*
                            let _ = at;
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

/// The next member of `map` among `names` (its index there; its value is the caller's to
/// read), every other member met before it put in `extra` (one given twice keeps its last
/// value); `None` at the end of the object. What [`deserialize_with_extra!`] reads each
/// member with: one loop over the keys for all the types it makes, not one each (1.8 KB of a
/// browser page's MCP client).
pub(crate) fn next_member<'de, A: serde::de::MapAccess<'de>>(
    map: &mut A,
    names: &[&str],
    extra: &mut crate::types::JsonObject,
) -> Result<Option<usize>, A::Error> {
    while let Some(key) = map.next_key::<String>()? {
        match names.iter().position(|name| *name == key) {
            Some(index) => return Ok(Some(index)),
            None => {
                let value = map.next_value()?;
                extra.insert(key, value);
            }
        }
    }
    Ok(None)
}

/// The members of an object read up to its tag member, then the rest of the object: what an
/// internally tagged enum (`#[serde(tag = "...")]`) reads, without serde's `Content` buffer
/// (which keeps every member and instantiates each variant's decoder once more for it). A
/// second tag member is refused ("duplicate field"), as serde refuses it.
pub(crate) struct AfterTag<A> {
    map: A,
    tag: &'static str,
}

/// What [`AfterTag::read`] found.
pub(crate) enum Tagged<T, A> {
    /// The tag came first (as every MCP SDK writes it): its value read with the seed, and
    /// the rest of the object.
    First(T, AfterTag<A>),
    /// Members came before the tag: the whole object written again as JSON text with the
    /// tag first, for the enum to read as it reads a tag that comes first. Its decoders are
    /// then only ever instantiated for the deserializers the program reads with, not once
    /// more for `serde_json::Value` (the members kept as values and given back first cost a
    /// browser page's MCP client 11.7 KB of code: every variant's member types read from a
    /// `Value` too).
    Reordered(String),
}

impl<A> AfterTag<A> {
    /// Reads `map` up to its member `tag`: when it is the first member, its value with
    /// `seed`; else the object with the tag moved first ([`Tagged`]). An object without it
    /// is refused ("missing field").
    pub(crate) fn read<'de, T>(
        mut map: A,
        tag: &'static str,
        seed: T,
    ) -> Result<Tagged<T::Value, A>, A::Error>
    where
        A: serde::de::MapAccess<'de>,
        T: serde::de::DeserializeSeed<'de>,
    {
        use serde::de::Error;
        use serde_json::Value;

        let mut members = Vec::<(String, Value)>::new();
        let mut tag_value = None;
        while let Some(key) = map.next_key::<String>()? {
            if key != tag {
                members.push((key, map.next_value()?));
            } else if tag_value.is_some() {
                return Err(A::Error::duplicate_field(tag));
            } else if members.is_empty() {
                let value = map.next_value_seed(seed)?;
                return Ok(Tagged::First(value, AfterTag { map, tag }));
            } else {
                tag_value = Some(map.next_value::<Value>()?);
            }
        }
        let Some(tag_value) = tag_value else {
            return Err(A::Error::missing_field(tag));
        };
        // Written member by member (a map would drop a member given twice, which the
        // variant's decoder refuses).
        let mut text = String::from("{");
        let mut write = |key: &str, value: &Value| {
            if text.len() > 1 {
                text.push(',');
            }
            text.push_str(&crate::json_text(&Value::from(key)));
            text.push(':');
            text.push_str(&crate::json_text(value));
        };
        write(tag, &tag_value);
        for (key, value) in &members {
            write(key, value);
        }
        text.push('}');
        Ok(Tagged::Reordered(text))
    }
}

/// `serde_json::from_str` of an object [`Tagged::Reordered`] wrote, its error given to the
/// deserializer that read the original as `E` without the position in the text written
/// (which is not the sender's; a deserializer of text adds its own).
pub(crate) fn read_reordered<T, E>(text: &str) -> Result<T, E>
where
    T: serde::de::DeserializeOwned,
    E: serde::de::Error,
{
    serde_json::from_str(text).map_err(|e| {
        let message = e.to_string();
        let at = format!(" at line {} column {}", e.line(), e.column());
        E::custom(message.strip_suffix(at.as_str()).unwrap_or(&message))
    })
}

impl<'de, A: serde::de::MapAccess<'de>> serde::de::MapAccess<'de> for AfterTag<A> {
    type Error = A::Error;

    fn next_key_seed<K: serde::de::DeserializeSeed<'de>>(
        &mut self,
        seed: K,
    ) -> Result<Option<K::Value>, A::Error> {
        use serde::de::{value::StringDeserializer, Error};
        let key = match self.map.next_key::<String>()? {
            Some(key) if key == self.tag => return Err(A::Error::duplicate_field(self.tag)),
            Some(key) => key,
            None => return Ok(None),
        };
        seed.deserialize(StringDeserializer::new(key)).map(Some)
    }

    fn next_value_seed<V: serde::de::DeserializeSeed<'de>>(
        &mut self,
        seed: V,
    ) -> Result<V::Value, A::Error> {
        self.map.next_value_seed(seed)
    }
}

/// The index of the variant named by a tag member among `variants`: what serde's derived
/// variant identifier reads (the name as a string or bytes, or the variant's index).
pub(crate) struct VariantTag(pub &'static [&'static str]);

impl<'de> serde::de::DeserializeSeed<'de> for VariantTag {
    type Value = usize;

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<usize, D::Error> {
        deserializer.deserialize_identifier(self)
    }
}

impl<'de> serde::de::Visitor<'de> for VariantTag {
    type Value = usize;

    fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("variant identifier")
    }

    fn visit_u64<E: serde::de::Error>(self, v: u64) -> Result<usize, E> {
        match usize::try_from(v) {
            Ok(i) if i < self.0.len() => Ok(i),
            _ => Err(E::invalid_value(
                serde::de::Unexpected::Unsigned(v),
                &format!("variant index 0 <= i < {}", self.0.len()).as_str(),
            )),
        }
    }

    fn visit_str<E: serde::de::Error>(self, v: &str) -> Result<usize, E> {
        self.0
            .iter()
            .position(|name| *name == v)
            .ok_or_else(|| E::unknown_variant(v, self.0))
    }

    fn visit_bytes<E: serde::de::Error>(self, v: &[u8]) -> Result<usize, E> {
        self.visit_str(&String::from_utf8_lossy(v))
    }
}
