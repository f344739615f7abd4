//! JSON as the runtime's simdjson DOM reads it: when an object repeats a key,
//! lookups find the **first** occurrence (serde_json's `Value` would keep the
//! last). Repeated keys are reported so the caller can warn. Nesting depth is
//! bounded by serde_json's recursion limit, so hostile input cannot overflow
//! the stack.

use std::fmt;

use serde::de::{DeserializeSeed, Deserializer, MapAccess, SeqAccess, Visitor};
use serde_json::{Map, Number, Value};

/// Parses JSON bytes; returns the value and the repeated keys (as `a.b.c` paths).
pub fn parse(bytes: &[u8]) -> Result<(Value, Vec<String>), serde_json::Error> {
    let mut duplicates = Vec::new();
    let mut de = serde_json::Deserializer::from_slice(bytes);
    let value = FirstWins {
        path: String::new(),
        duplicates: &mut duplicates,
    }
    .deserialize(&mut de)?;
    de.end()?;
    Ok((value, duplicates))
}

struct FirstWins<'a> {
    path: String,
    duplicates: &'a mut Vec<String>,
}

impl<'de> DeserializeSeed<'de> for FirstWins<'_> {
    type Value = Value;

    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Value, D::Error> {
        d.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for FirstWins<'_> {
    type Value = Value;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("any JSON value")
    }

    fn visit_bool<E>(self, v: bool) -> Result<Value, E> {
        Ok(Value::Bool(v))
    }

    fn visit_i64<E>(self, v: i64) -> Result<Value, E> {
        Ok(Value::Number(v.into()))
    }

    fn visit_u64<E>(self, v: u64) -> Result<Value, E> {
        Ok(Value::Number(v.into()))
    }

    fn visit_f64<E>(self, v: f64) -> Result<Value, E> {
        Ok(Number::from_f64(v).map_or(Value::Null, Value::Number))
    }

    fn visit_str<E>(self, v: &str) -> Result<Value, E> {
        Ok(Value::String(v.to_string()))
    }

    fn visit_string<E>(self, v: String) -> Result<Value, E> {
        Ok(Value::String(v))
    }

    fn visit_unit<E>(self) -> Result<Value, E> {
        Ok(Value::Null)
    }

    fn visit_none<E>(self) -> Result<Value, E> {
        Ok(Value::Null)
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Value, A::Error> {
        let mut out = Vec::new();
        let mut index = 0usize;
        loop {
            let seed = FirstWins {
                path: format!("{}[{index}]", self.path),
                duplicates: &mut *self.duplicates,
            };
            match seq.next_element_seed(seed)? {
                Some(v) => out.push(v),
                None => break,
            }
            index += 1;
        }
        Ok(Value::Array(out))
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Value, A::Error> {
        let mut out = Map::new();
        while let Some(key) = map.next_key::<String>()? {
            let path = if self.path.is_empty() {
                key.clone()
            } else {
                format!("{}.{key}", self.path)
            };
            let seed = FirstWins {
                path: path.clone(),
                duplicates: &mut *self.duplicates,
            };
            let value = map.next_value_seed(seed)?;
            if out.contains_key(&key) {
                self.duplicates.push(path);
            } else {
                out.insert(key, value);
            }
        }
        Ok(Value::Object(out))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn first_occurrence_wins_and_repeats_are_reported() {
        let (v, dups) = parse(br#"{"a": 1, "b": {"c": [1, {"d": 2, "d": 3}]}, "a": 2}"#).unwrap();
        assert_eq!(v["a"], 1);
        assert_eq!(v["b"]["c"][1]["d"], 2);
        assert_eq!(dups, vec!["b.c[1].d", "a"]);
    }

    #[test]
    fn deep_nesting_and_trailing_garbage_are_errors_not_crashes() {
        let deep = "[".repeat(100_000);
        assert!(parse(deep.as_bytes()).is_err());
        assert!(parse(b"{} x").is_err());
        assert!(parse(b"").is_err());
        let (v, _) = parse(b"123456789012345678901234567890").unwrap();
        assert!(v.is_f64());
    }
}
