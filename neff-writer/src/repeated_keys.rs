//! Repeated object keys in JSON text, with where they are: serde_json (and so
//! a typed parse of a build spec) silently keeps the last of them.

use std::cell::{Cell, RefCell};
use std::collections::HashMap;
use std::fmt;

use neff_loader::walk::Tap;
use serde::de::{DeserializeSeed, Deserializer, Error as _, MapAccess, SeqAccess, Visitor};

/// A key given a second time in one object.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RepeatedKey {
    /// Its path: `subgraphs[0].dma_queues.q_in`.
    pub path: String,
    /// Line and column (from 1, in bytes) of the second occurrence.
    pub at: (usize, usize),
    /// Line and column of the first.
    pub first: (usize, usize),
}

impl fmt::Display for RepeatedKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{}:{}: repeated key {:?} (first at line {}, column {})",
            self.at.0, self.at.1, self.path, self.first.0, self.first.1
        )
    }
}

/// The first repeated key of the JSON document `bytes`, if any. Text that is
/// not JSON gives `None` (the typed parse then says what is wrong).
pub fn first_repeated_key(bytes: &[u8]) -> Option<RepeatedKey> {
    let read = Cell::new(0);
    let found = RefCell::new(None);
    // Unbuffered: serde_json reads one byte at a time, so `read` is where it is.
    let reader = Tap::new(bytes, |b: &[u8]| read.set(read.get() + b.len()));
    let walk = Walk {
        path: String::new(),
        read: &read,
        found: &found,
    };
    let _ = walk.deserialize(&mut serde_json::Deserializer::from_reader(reader));
    let (path, second, first) = found.into_inner()?;
    Some(RepeatedKey {
        path,
        at: line_column(bytes, key_start(bytes, second)),
        first: line_column(bytes, key_start(bytes, first)),
    })
}

/// Where the key whose closing quote ends before `end` begins: the nearest
/// unescaped quote before that closing one.
fn key_start(bytes: &[u8], end: usize) -> usize {
    let head = &bytes[..end.min(bytes.len())];
    let Some(close) = head.iter().rposition(|&b| b == b'"') else {
        return 0;
    };
    let mut i = close;
    while let Some(q) = head[..i].iter().rposition(|&b| b == b'"') {
        let slashes = head[..q].iter().rev().take_while(|&&b| b == b'\\').count();
        if slashes % 2 == 0 {
            return q;
        }
        i = q;
    }
    0
}

/// Line and column (from 1) of byte `offset`.
fn line_column(bytes: &[u8], offset: usize) -> (usize, usize) {
    let head = &bytes[..offset.min(bytes.len())];
    let line_start = head.iter().rposition(|&b| b == b'\n').map_or(0, |i| i + 1);
    let line = 1 + head.iter().filter(|&&b| b == b'\n').count();
    (line, offset - line_start + 1)
}

/// The path of a value, how far the text has been read, and the first
/// repeated key found (its path and the offsets after each occurrence).
struct Walk<'a> {
    path: String,
    read: &'a Cell<usize>,
    found: &'a RefCell<Option<(String, usize, usize)>>,
}

impl<'a> Walk<'a> {
    fn child(&self, path: String) -> Walk<'a> {
        Walk {
            path,
            read: self.read,
            found: self.found,
        }
    }
}

impl<'de> DeserializeSeed<'de> for Walk<'_> {
    type Value = ();

    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
        d.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for Walk<'_> {
    type Value = ();

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("any JSON value")
    }

    fn visit_bool<E>(self, _: bool) -> Result<(), E> {
        Ok(())
    }
    fn visit_i64<E>(self, _: i64) -> Result<(), E> {
        Ok(())
    }
    fn visit_u64<E>(self, _: u64) -> Result<(), E> {
        Ok(())
    }
    fn visit_f64<E>(self, _: f64) -> Result<(), E> {
        Ok(())
    }
    fn visit_str<E>(self, _: &str) -> Result<(), E> {
        Ok(())
    }
    fn visit_unit<E>(self) -> Result<(), E> {
        Ok(())
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<(), A::Error> {
        let mut i = 0usize;
        while seq
            .next_element_seed(self.child(format!("{}[{i}]", self.path)))?
            .is_some()
        {
            i += 1;
        }
        Ok(())
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<(), A::Error> {
        let mut seen: HashMap<String, usize> = HashMap::new();
        while let Some(key) = map.next_key::<String>()? {
            let end = self.read.get();
            let path = match self.path.is_empty() {
                true => key.clone(),
                false => format!("{}.{key}", self.path),
            };
            if let Some(&first) = seen.get(&key) {
                *self.found.borrow_mut() = Some((path, end, first));
                return Err(A::Error::custom("repeated key"));
            }
            seen.insert(key, end);
            map.next_value_seed(self.child(path))?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finds_the_first_repeat_with_both_positions() {
        let text = "{\n  \"a\": [{\"q\": 1,\n   \"q\": 2}],\n  \"b\": 0\n}";
        let r = first_repeated_key(text.as_bytes()).unwrap();
        assert_eq!(r.path, "a[0].q");
        assert_eq!((r.first, r.at), ((2, 10), (3, 4)));
        assert_eq!(
            first_repeated_key(br#"{"a": {"a": 1}, "x\"y": 2, "b": [1, 1]}"#),
            None
        );
        let r = first_repeated_key(br#"{"x\"y": 1, "x\"y": 2}"#).unwrap();
        assert_eq!((r.path.as_str(), r.first, r.at), ("x\"y", (1, 2), (1, 13)));
        assert_eq!(first_repeated_key(b"{\"a\": "), None);
    }
}
