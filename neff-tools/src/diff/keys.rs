//! Differences between two JSON trees by key path (`.var.input0.size`,
//! `.dma[3].queue`), capped: past the cap they are only counted.

use std::cmp::Ordering;

use serde::Serialize;

use neff_loader::walk::Json;

/// One difference at a key path.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, schemars::JsonSchema)]
pub struct KeyDiff {
    /// The key path from the document's root (`""` for the root itself).
    pub path: String,
    /// The value in A, as compact JSON (cut short past about 256 bytes);
    /// absent when the key was added.
    pub a: Option<String>,
    /// The value in B; absent when the key was removed.
    pub b: Option<String>,
}

/// The differences of one member: the first `cap`, then a count.
#[derive(Debug, Default)]
pub struct KeyDiffs {
    /// The differences listed, in key order.
    pub shown: Vec<KeyDiff>,
    /// How many more there were.
    pub more: usize,
    cap: usize,
}

impl KeyDiffs {
    /// Compares two trees, listing at most `cap` differences.
    pub fn compare(a: Json<'_>, b: Json<'_>, cap: usize) -> KeyDiffs {
        let mut out = KeyDiffs {
            cap,
            ..KeyDiffs::default()
        };
        let mut path = String::new();
        out.value(&mut path, a, b);
        out
    }

    /// Whether the trees are equal.
    pub fn is_empty(&self) -> bool {
        self.shown.is_empty() && self.more == 0
    }

    fn value(&mut self, path: &mut String, a: Json<'_>, b: Json<'_>) {
        if let (Some(a), Some(b)) = (a.as_object(), b.as_object()) {
            let (mut a, mut b) = (a.iter(), b.iter());
            let (mut next_a, mut next_b) = (a.next(), b.next());
            loop {
                let order = match (next_a, next_b) {
                    (None, None) => break,
                    (Some(_), None) => Ordering::Less,
                    (None, Some(_)) => Ordering::Greater,
                    (Some((ka, _)), Some((kb, _))) => ka.cmp(kb),
                };
                let here_a = next_a.filter(|_| order != Ordering::Greater);
                let here_b = next_b.filter(|_| order != Ordering::Less);
                let len = path.len();
                push_key(path, here_a.or(here_b).map_or("", |(key, _)| key));
                self.pair(path, here_a.map(|(_, v)| v), here_b.map(|(_, v)| v));
                path.truncate(len);
                if here_a.is_some() {
                    next_a = a.next();
                }
                if here_b.is_some() {
                    next_b = b.next();
                }
            }
        } else if let (Some(a), Some(b)) = (a.as_array(), b.as_array()) {
            for i in 0..a.len().max(b.len()) {
                let len = path.len();
                path.push_str(&format!("[{i}]"));
                self.pair(path, a.get(i), b.get(i));
                path.truncate(len);
            }
        } else if !a.same_scalar(b) {
            self.push(path, Some(a), Some(b));
        }
    }

    /// Compares a member or element present on one side or both.
    fn pair(&mut self, path: &mut String, a: Option<Json<'_>>, b: Option<Json<'_>>) {
        match (a, b) {
            (Some(a), Some(b)) => self.value(path, a, b),
            (a, b) => self.push(path, a, b),
        }
    }

    fn push(&mut self, path: &str, a: Option<Json<'_>>, b: Option<Json<'_>>) {
        if self.shown.len() >= self.cap {
            self.more += 1;
            return;
        }
        self.shown.push(KeyDiff {
            path: path.to_string(),
            a: a.map(|v| v.to_string()),
            b: b.map(|v| v.to_string()),
        });
    }
}

/// `.key` for identifier-like keys, else `["key"]` (JSON-quoted).
fn push_key(path: &mut String, key: &str) {
    let plain = !key.is_empty()
        && key
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-' || c == '#');
    if plain {
        path.push('.');
        path.push_str(key);
    } else {
        path.push_str(&format!("[{}]", serde_json::Value::from(key)));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use neff_loader::walk::{parse, Budget};

    fn diffs(a: &str, b: &str, cap: usize) -> KeyDiffs {
        let (a, _) = parse(a.as_bytes(), Budget::full()).unwrap();
        let (b, _) = parse(b.as_bytes(), Budget::full()).unwrap();
        KeyDiffs::compare(a.root(), b.root(), cap)
    }

    fn lines(d: &KeyDiffs) -> Vec<String> {
        let side = |v: &Option<String>| v.clone().unwrap_or_else(|| "-".into());
        let shown = d.shown.iter();
        shown
            .map(|k| format!("{} {} {}", k.path, side(&k.a), side(&k.b)))
            .collect()
    }

    #[test]
    fn keys_elements_and_scalars_by_path() {
        let a = r#"{"var": {"x": {"size": 1024}}, "gone": 1, "list": [1, 2, 3], "odd key": "a"}"#;
        let b = r#"{"var": {"x": {"size": 2048}}, "new": [true], "list": [1, 5], "odd key": "b"}"#;
        let d = diffs(a, b, 100);
        assert_eq!(
            lines(&d),
            [
                ".gone 1 -",
                ".list[1] 2 5",
                ".list[2] 3 -",
                ".new - [true]",
                r#"["odd key"] "a" "b""#,
                ".var.x.size 1024 2048",
            ]
        );
        assert_eq!(d.more, 0);
    }

    #[test]
    fn equal_trees_have_no_differences_and_types_count() {
        let same = r#"{"a": [1, {"b": null}], "c": 1.5}"#;
        assert!(diffs(same, same, 100).is_empty());
        // 1 and 1.0 and "1" are different values; so are an object and an array.
        let d = diffs(r#"[1, 1, {}]"#, r#"[1.0, "1", []]"#, 100);
        assert_eq!(lines(&d), ["[0] 1 1.0", r#"[1] 1 "1""#, "[2] {} []"]);
        assert_eq!(lines(&diffs("1", "2", 100)), [" 1 2"]);
    }

    #[test]
    fn past_the_cap_differences_are_counted() {
        let a: Vec<u32> = (0..50).collect();
        let b: Vec<u32> = (1..51).collect();
        let d = diffs(&format!("{a:?}"), &format!("{b:?}"), 10);
        assert_eq!(d.shown.len(), 10);
        assert_eq!(d.more, 40);
    }
}
