//! ProtoJSON's reading rules for the field kinds A2A uses, as serde helpers.
//!
//! ProtoJSON (what a2a-sdk's `json_format` and @a2a-js/sdk's `fromJSON` implement) reads
//! `null` as "not set" for every field but a `google.protobuf.Value`, reads an `int32` from
//! a number or a string, and reads `bytes` from standard or URL-safe base64, padded or not.
//! It writes nothing for a field at its default; we write REQUIRED fields always.

use std::fmt;

use base64::Engine as _;
use serde::de::{self, Deserialize, Deserializer};
use serde::Serializer;
use serde_json::{Map, Value};

/// A JSON object: `google.protobuf.Struct`.
pub type Struct = Map<String, Value>;

pub(crate) fn is_false(b: &bool) -> bool {
    !*b
}

pub(crate) fn is_zero(n: &i32) -> bool {
    *n == 0
}

/// `null` or absent reads as the type's default (an empty string, list or map).
pub(crate) fn nullable<'de, D, T>(d: D) -> Result<T, D::Error>
where
    D: Deserializer<'de>,
    T: Deserialize<'de> + Default,
{
    Ok(Option::<T>::deserialize(d)?.unwrap_or_default())
}

/// A string field without presence: `null` and `""` both read as not set.
pub(crate) fn opt_string<'de, D: Deserializer<'de>>(d: D) -> Result<Option<String>, D::Error> {
    Ok(Option::<String>::deserialize(d)?.filter(|s| !s.is_empty()))
}

/// A `google.protobuf.Struct`: an object, or `null` for not set.
pub(crate) fn opt_struct<'de, D: Deserializer<'de>>(d: D) -> Result<Option<Struct>, D::Error> {
    Option::<Struct>::deserialize(d)
}

/// An `int32` from a JSON number (an integral float too, as protobuf's parsers take it) or
/// a string holding one; out of the `int32` range is an error.
fn int32_from(value: Value) -> Result<i32, String> {
    let out_of_range = || format!("{value} is not an int32");
    match &value {
        Value::Number(n) => {
            if let Some(i) = n.as_i64() {
                i32::try_from(i).map_err(|_| out_of_range())
            } else if let Some(f) = n.as_f64() {
                if f.fract() == 0.0 && f >= f64::from(i32::MIN) && f <= f64::from(i32::MAX) {
                    Ok(f as i32)
                } else {
                    Err(out_of_range())
                }
            } else {
                Err(out_of_range())
            }
        }
        Value::String(s) => s.trim().parse::<i32>().map_err(|_| out_of_range()),
        _ => Err(format!("expected an int32, found {value}")),
    }
}

/// An `optional int32`: `null` or absent is `None`.
pub(crate) fn opt_int32<'de, D: Deserializer<'de>>(d: D) -> Result<Option<i32>, D::Error> {
    match Option::<Value>::deserialize(d)? {
        None | Some(Value::Null) => Ok(None),
        Some(v) => int32_from(v).map(Some).map_err(de::Error::custom),
    }
}

/// An `int32` without presence: `null` or absent is 0.
pub(crate) fn int32<'de, D: Deserializer<'de>>(d: D) -> Result<i32, D::Error> {
    Ok(opt_int32(d)?.unwrap_or(0))
}

/// An `optional bool`: `null` or absent is `None`.
pub(crate) fn opt_bool<'de, D: Deserializer<'de>>(d: D) -> Result<Option<bool>, D::Error> {
    Option::<bool>::deserialize(d)
}

/// Decodes ProtoJSON `bytes`: standard or URL-safe alphabet, with or without padding.
pub(crate) fn decode_base64(s: &str) -> Result<Vec<u8>, base64::DecodeError> {
    use base64::engine::general_purpose::{GeneralPurpose, GeneralPurposeConfig};
    use base64::engine::DecodePaddingMode;
    const LENIENT: GeneralPurposeConfig =
        GeneralPurposeConfig::new().with_decode_padding_mode(DecodePaddingMode::Indifferent);
    const STANDARD: GeneralPurpose = GeneralPurpose::new(&base64::alphabet::STANDARD, LENIENT);
    const URL_SAFE: GeneralPurpose = GeneralPurpose::new(&base64::alphabet::URL_SAFE, LENIENT);
    if s.contains(['-', '_']) {
        URL_SAFE.decode(s)
    } else {
        STANDARD.decode(s)
    }
}

/// Writes ProtoJSON `bytes`: standard base64 with padding, as both SDKs write it.
pub(crate) fn encode_base64(bytes: &[u8]) -> String {
    base64::engine::general_purpose::STANDARD.encode(bytes)
}

/// A proto enum: written as its name; read from its name or its number.
pub(crate) trait ProtoEnum: Sized + Copy + 'static {
    /// The proto type's name, for error messages.
    const TYPE: &'static str;
    /// Every value with its name and number.
    const VALUES: &'static [(Self, &'static str, i32)];

    fn name(self) -> &'static str;

    fn from_name(name: &str) -> Option<Self> {
        Self::VALUES
            .iter()
            .find(|(_, n, _)| *n == name)
            .map(|(v, _, _)| *v)
    }

    fn from_number(number: i64) -> Option<Self> {
        Self::VALUES
            .iter()
            .find(|(_, _, n)| i64::from(*n) == number)
            .map(|(v, _, _)| *v)
    }
}

pub(crate) fn serialize_enum<E: ProtoEnum, S: Serializer>(
    value: &E,
    s: S,
) -> Result<S::Ok, S::Error> {
    s.serialize_str(value.name())
}

pub(crate) fn deserialize_enum<'de, E: ProtoEnum, D: Deserializer<'de>>(
    d: D,
) -> Result<E, D::Error> {
    struct EnumVisitor<E>(std::marker::PhantomData<E>);
    impl<'de, E: ProtoEnum> de::Visitor<'de> for EnumVisitor<E> {
        type Value = E;
        fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
            write!(f, "a {} name or number", E::TYPE)
        }
        fn visit_str<Er: de::Error>(self, v: &str) -> Result<E, Er> {
            E::from_name(v).ok_or_else(|| Er::custom(format!("unknown {} value {v:?}", E::TYPE)))
        }
        fn visit_i64<Er: de::Error>(self, v: i64) -> Result<E, Er> {
            E::from_number(v).ok_or_else(|| Er::custom(format!("unknown {} number {v}", E::TYPE)))
        }
        fn visit_u64<Er: de::Error>(self, v: u64) -> Result<E, Er> {
            let v = i64::try_from(v)
                .map_err(|_| Er::custom(format!("unknown {} number {v}", E::TYPE)))?;
            self.visit_i64(v)
        }
        // ProtoJSON: `null` is the enum's default (its zero value).
        fn visit_unit<Er: de::Error>(self) -> Result<E, Er> {
            self.visit_i64(0)
        }
    }
    d.deserialize_any(EnumVisitor(std::marker::PhantomData))
}

/// Implements `Serialize`/`Deserialize` for a [`ProtoEnum`].
macro_rules! proto_enum_serde {
    ($ty:ty) => {
        impl serde::Serialize for $ty {
            fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
                $crate::types::serde_util::serialize_enum(self, s)
            }
        }
        impl<'de> serde::Deserialize<'de> for $ty {
            fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
                $crate::types::serde_util::deserialize_enum(d)
            }
        }
    };
}
pub(crate) use proto_enum_serde;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn int32_reads_numbers_integral_floats_and_strings() {
        for (json, want) in [("5", Ok(5)), ("5.0", Ok(5)), ("\"-7\"", Ok(-7))] {
            let v: Value = serde_json::from_str(json).unwrap();
            assert_eq!(int32_from(v), want.map_err(|_: ()| String::new()));
        }
        for json in ["5.5", "2147483648", "\"x\"", "true", "1e10"] {
            let v: Value = serde_json::from_str(json).unwrap();
            assert!(int32_from(v).is_err(), "{json}");
        }
    }

    #[test]
    fn base64_reads_both_alphabets_with_or_without_padding() {
        let bytes = [0xfb, 0xff, 0xbf, 0x00, 0x01];
        for s in ["+/+/AAE=", "+/+/AAE", "-_-_AAE=", "-_-_AAE"] {
            assert_eq!(decode_base64(s).unwrap(), bytes, "{s}");
        }
        assert_eq!(encode_base64(&bytes), "+/+/AAE=");
        assert!(decode_base64("!!").is_err());
    }
}
