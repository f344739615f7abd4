//! `serde_json::to_string_pretty(&serde_json::to_value(x))` (keys sorted, as
//! the header file and the lifted spec are written) without one tree of the
//! whole document: the long lists in it (a framing's entry list, a spec's
//! members: one item per tar entry, 150,000 and more) are left out of the
//! tree and written one item at a time. The bytes are the same; the memory
//! is that of the text, not some 700 bytes an item.

use serde::Serialize;
use serde_json::{Map, Value};

/// A list written item by item, in place of `key` in the object at
/// `parent` (a JSON pointer into the document).
pub(crate) struct Streamed<'a> {
    /// The object the list belongs in (`""`: the root).
    parent: &'static str,
    /// Its key there.
    key: &'static str,
    /// How many items.
    len: usize,
    /// Item `i` as a tree (one at a time).
    item: Box<dyn Fn(usize) -> serde_json::Result<Value> + 'a>,
    /// Whether an empty list is left out (`skip_serializing_if`), not `[]`.
    skip_empty: bool,
}

impl<'a> Streamed<'a> {
    /// `items` at `parent`/`key`; `skip_empty` as its field's
    /// `skip_serializing_if = "Vec::is_empty"`.
    pub(crate) fn of<T: Serialize>(
        parent: &'static str,
        key: &'static str,
        items: &'a [T],
        skip_empty: bool,
    ) -> Self {
        Streamed {
            parent,
            key,
            len: items.len(),
            item: Box::new(move |i| serde_json::to_value(&items[i])),
            skip_empty,
        }
    }
}

/// The placeholder string for list `i`: it cannot occur in a document,
/// which never holds a NUL character.
fn mark(i: usize) -> String {
    format!("\u{0}neff-list-{i}\u{0}")
}

/// `value` (the document without the lists) pretty-printed with each of
/// `lists` in place.
pub(crate) fn to_pretty(mut value: Value, lists: &[Streamed<'_>]) -> serde_json::Result<String> {
    for (i, list) in lists.iter().enumerate() {
        if list.len == 0 && list.skip_empty {
            continue;
        }
        if let Some(parent) = value.pointer_mut(list.parent) {
            if parent.is_null() {
                *parent = Value::Object(Map::new());
            }
            if let Some(object) = parent.as_object_mut() {
                object.insert(list.key.into(), Value::String(mark(i)));
            }
        }
    }
    let mut text = serde_json::to_string_pretty(&value)?;
    drop(value);
    for (i, list) in lists.iter().enumerate() {
        let quoted = serde_json::to_string(&mark(i))?;
        let Some(at) = text.find(&quoted) else {
            continue;
        };
        let line_start = text[..at].rfind('\n').map_or(0, |n| n + 1);
        let indent = text[line_start..]
            .bytes()
            .take_while(|&b| b == b' ')
            .count();
        let mut array = String::new();
        if list.len == 0 {
            array.push_str("[]");
        } else {
            let inner = " ".repeat(indent + 2);
            array.push_str("[\n");
            for n in 0..list.len {
                if n > 0 {
                    array.push_str(",\n");
                }
                let item = serde_json::to_string_pretty(&(list.item)(n)?)?;
                for (l, line) in item.lines().enumerate() {
                    if l > 0 {
                        array.push('\n');
                    }
                    array.push_str(&inner);
                    array.push_str(line);
                }
            }
            array.push('\n');
            array.push_str(&" ".repeat(indent));
            array.push(']');
        }
        text.replace_range(at..at + quoted.len(), &array);
    }
    Ok(text)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_same_bytes_as_one_tree() {
        let items = vec![
            serde_json::json!({"b": 1, "a": [1, 2, {"y": null, "x": "s"}]}),
            serde_json::json!("plain"),
            serde_json::json!([]),
            serde_json::json!({}),
        ];
        let whole = serde_json::json!({
            "z": 1,
            "tar": {"format": "gnu", "entries": items.clone()},
            "payload": [],
        });
        let expected = serde_json::to_string_pretty(&whole).unwrap();
        let shallow = serde_json::json!({"z": 1, "tar": {"format": "gnu"}});
        let none: Vec<Value> = Vec::new();
        let lists = [
            Streamed::of("/tar", "entries", &items[..], true),
            Streamed::of("", "payload", &none[..], false),
        ];
        assert_eq!(to_pretty(shallow, &lists).unwrap(), expected);
    }
}
