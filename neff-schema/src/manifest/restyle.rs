//! Writes an edited JSON document in its source's style: the bytes of every
//! value that did not change are kept as they are (spacing, key order,
//! number spelling), and only the changed values are encoded again, in the
//! indentation and separators the source uses around them.
//!
//! This is what lets an edit of a lifted manifest differ from the compiler's
//! bytes only on the edited lines.

use std::ops::Range;

use serde_json::{Map, Value};

/// A parsed JSON value with the byte span of its text.
#[derive(Debug)]
struct Node {
    span: Range<usize>,
    kind: Kind,
}

#[derive(Debug)]
enum Kind {
    Scalar,
    Array(Vec<Node>),
    /// Members in source order: the decoded key and the value.
    Object(Vec<(String, Node)>),
}

/// How the source lays out its containers.
#[derive(Debug, Clone)]
struct Style {
    /// One level of indentation; `None` for compact (one-line) output.
    indent: Option<String>,
    /// What stands between a key and its value (`": "`, `":"`).
    colon: String,
}

/// Deepest nesting followed (the loader refuses deeper manifests long before).
const MAX_DEPTH: usize = 1024;

/// `source` rewritten so that it encodes `new`, keeping the bytes of every
/// unchanged value. `None` when `source` is not one JSON document with
/// unique keys in every object (the caller then encodes `new` afresh).
pub fn rewrite(source: &[u8], new: &Value) -> Option<Vec<u8>> {
    let text = std::str::from_utf8(source).ok()?;
    let old: Value = serde_json::from_str(text).ok()?;
    let mut parser = Parser { text, at: 0 };
    parser.skip_ws();
    let root = parser.value(0)?;
    parser.skip_ws();
    if parser.at != text.len() {
        return None;
    }
    let style = Style::of(text, &root);
    let mut out = String::with_capacity(text.len());
    out.push_str(&text[..root.span.start]);
    emit(text, &root, &old, new, 0, &style, &mut out);
    out.push_str(&text[root.span.end..]);
    Some(out.into_bytes())
}

impl Style {
    /// The source's style: the indentation of the root's first child (none
    /// when it shares the root's line) and the separator after the first key.
    fn of(text: &str, root: &Node) -> Style {
        let first_child = |node: &Node| match &node.kind {
            Kind::Array(items) => items.first().map(|c| c.span.start),
            Kind::Object(members) => members.first().map(|(_, c)| c.span.start),
            Kind::Scalar => None,
        };
        let indent = first_child(root).and_then(|child| {
            let gap = &text[root.span.start + 1..child];
            let line = &gap[gap.find('\n')? + 1..];
            let ws: String = line
                .chars()
                .take_while(|c| matches!(c, ' ' | '\t'))
                .collect();
            (!ws.is_empty()).then_some(ws)
        });
        let mut colon = ":".to_string();
        let mut stack = vec![root];
        while let Some(node) = stack.pop() {
            match &node.kind {
                Kind::Object(members) if !members.is_empty() => {
                    let gap = &text[node.span.start + 1..members[0].1.span.start];
                    if let Some(i) = gap.rfind(':') {
                        colon = gap[i..].to_string();
                    }
                    break;
                }
                Kind::Array(items) => stack.extend(items.iter().rev()),
                _ => {}
            }
        }
        Style { indent, colon }
    }

    fn newline(&self, depth: usize, out: &mut String) {
        if let Some(unit) = &self.indent {
            out.push('\n');
            for _ in 0..depth {
                out.push_str(unit);
            }
        }
    }

    /// `value` encoded afresh at `depth` in this style.
    fn encode(&self, value: &Value, depth: usize, out: &mut String) {
        match value {
            Value::Array(items) if !items.is_empty() => {
                out.push('[');
                for (i, item) in items.iter().enumerate() {
                    if i > 0 {
                        out.push(',');
                    }
                    self.newline(depth + 1, out);
                    self.encode(item, depth + 1, out);
                }
                self.newline(depth, out);
                out.push(']');
            }
            Value::Object(map) if !map.is_empty() => {
                out.push('{');
                for (i, (key, item)) in map.iter().enumerate() {
                    if i > 0 {
                        out.push(',');
                    }
                    self.newline(depth + 1, out);
                    out.push_str(&Value::String(key.clone()).to_string());
                    out.push_str(&self.colon);
                    self.encode(item, depth + 1, out);
                }
                self.newline(depth, out);
                out.push('}');
            }
            scalar => out.push_str(&scalar.to_string()),
        }
    }
}

/// Appends the text for `new` at `node` (whose value is `old`).
fn emit(
    text: &str,
    node: &Node,
    old: &Value,
    new: &Value,
    depth: usize,
    style: &Style,
    out: &mut String,
) {
    if old == new {
        out.push_str(&text[node.span.clone()]);
        return;
    }
    match (&node.kind, old, new) {
        (Kind::Object(members), Value::Object(old_map), Value::Object(new_map)) => {
            let same_keys = members.len() == new_map.len()
                && members.iter().all(|(k, _)| new_map.contains_key(k));
            if same_keys {
                let mut cursor = node.span.start;
                for (key, child) in members {
                    out.push_str(&text[cursor..child.span.start]);
                    emit(
                        text,
                        child,
                        &old_map[key],
                        &new_map[key],
                        depth + 1,
                        style,
                        out,
                    );
                    cursor = child.span.end;
                }
                out.push_str(&text[cursor..node.span.end]);
            } else {
                object_anew(text, members, old_map, new_map, depth, style, out);
            }
        }
        (Kind::Array(items), Value::Array(old_items), Value::Array(new_items)) => {
            if items.len() == new_items.len() {
                let mut cursor = node.span.start;
                for ((child, o), n) in items.iter().zip(old_items).zip(new_items) {
                    out.push_str(&text[cursor..child.span.start]);
                    emit(text, child, o, n, depth + 1, style, out);
                    cursor = child.span.end;
                }
                out.push_str(&text[cursor..node.span.end]);
            } else {
                out.push('[');
                for (i, n) in new_items.iter().enumerate() {
                    if i > 0 {
                        out.push(',');
                    }
                    style.newline(depth + 1, out);
                    match (items.get(i), old_items.get(i)) {
                        (Some(child), Some(o)) => emit(text, child, o, n, depth + 1, style, out),
                        _ => style.encode(n, depth + 1, out),
                    }
                }
                if !new_items.is_empty() {
                    style.newline(depth, out);
                }
                out.push(']');
            }
        }
        _ => style.encode(new, depth, out),
    }
}

/// An object whose key set changed: kept keys in source order (their values
/// emitted as edits), then the added keys in `new_map`'s order.
fn object_anew(
    text: &str,
    members: &[(String, Node)],
    old_map: &Map<String, Value>,
    new_map: &Map<String, Value>,
    depth: usize,
    style: &Style,
    out: &mut String,
) {
    out.push('{');
    let mut first = true;
    let mut sep = |out: &mut String| {
        if !first {
            out.push(',');
        }
        first = false;
        style.newline(depth + 1, out);
    };
    for (key, child) in members {
        if let Some(n) = new_map.get(key) {
            sep(out);
            out.push_str(&Value::String(key.clone()).to_string());
            out.push_str(&style.colon);
            emit(text, child, &old_map[key], n, depth + 1, style, out);
        }
    }
    for (key, n) in new_map {
        if !old_map.contains_key(key) {
            sep(out);
            out.push_str(&Value::String(key.clone()).to_string());
            out.push_str(&style.colon);
            style.encode(n, depth + 1, out);
        }
    }
    if !new_map.is_empty() {
        style.newline(depth, out);
    }
    out.push('}');
}

/// A JSON reader that records spans (the text was already checked to be
/// valid JSON by serde_json; this one only finds the boundaries).
struct Parser<'a> {
    text: &'a str,
    at: usize,
}

impl Parser<'_> {
    fn peek(&self) -> Option<u8> {
        self.text.as_bytes().get(self.at).copied()
    }

    fn skip_ws(&mut self) {
        while matches!(self.peek(), Some(b' ' | b'\t' | b'\n' | b'\r')) {
            self.at += 1;
        }
    }

    fn value(&mut self, depth: usize) -> Option<Node> {
        if depth > MAX_DEPTH {
            return None;
        }
        let start = self.at;
        let kind = match self.peek()? {
            b'{' => {
                self.at += 1;
                let mut members: Vec<(String, Node)> = Vec::new();
                self.skip_ws();
                if self.peek()? == b'}' {
                    self.at += 1;
                } else {
                    loop {
                        self.skip_ws();
                        let key_start = self.at;
                        self.string()?;
                        let key: String =
                            serde_json::from_str(&self.text[key_start..self.at]).ok()?;
                        self.skip_ws();
                        (self.peek()? == b':').then_some(())?;
                        self.at += 1;
                        self.skip_ws();
                        let value = self.value(depth + 1)?;
                        members.push((key, value));
                        self.skip_ws();
                        match self.peek()? {
                            b',' => self.at += 1,
                            b'}' => {
                                self.at += 1;
                                break;
                            }
                            _ => return None,
                        }
                    }
                }
                let mut keys: Vec<&str> = members.iter().map(|(k, _)| k.as_str()).collect();
                keys.sort_unstable();
                if keys.windows(2).any(|w| w[0] == w[1]) {
                    return None;
                }
                Kind::Object(members)
            }
            b'[' => {
                self.at += 1;
                let mut items = Vec::new();
                self.skip_ws();
                if self.peek()? == b']' {
                    self.at += 1;
                } else {
                    loop {
                        self.skip_ws();
                        items.push(self.value(depth + 1)?);
                        self.skip_ws();
                        match self.peek()? {
                            b',' => self.at += 1,
                            b']' => {
                                self.at += 1;
                                break;
                            }
                            _ => return None,
                        }
                    }
                }
                Kind::Array(items)
            }
            b'"' => {
                self.string()?;
                Kind::Scalar
            }
            _ => {
                while matches!(self.peek(), Some(c) if c.is_ascii_alphanumeric() || matches!(c, b'-' | b'+' | b'.'))
                {
                    self.at += 1;
                }
                (self.at > start).then_some(())?;
                Kind::Scalar
            }
        };
        Some(Node {
            span: start..self.at,
            kind,
        })
    }

    /// Skips a string literal (the opening quote is at `self.at`).
    fn string(&mut self) -> Option<()> {
        (self.peek()? == b'"').then_some(())?;
        self.at += 1;
        loop {
            match self.peek()? {
                b'"' => {
                    self.at += 1;
                    return Some(());
                }
                b'\\' => self.at += 2,
                _ => self.at += 1,
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn edit(source: &str, f: impl FnOnce(&mut Value)) -> String {
        let mut value: Value = serde_json::from_str(source).unwrap();
        f(&mut value);
        let out = String::from_utf8(rewrite(source.as_bytes(), &value).unwrap()).unwrap();
        let back: Value = serde_json::from_str(&out).unwrap();
        assert_eq!(back, value, "{out}");
        out
    }

    #[test]
    fn unchanged_is_byte_identical() {
        let src = "{\n    \"b\": 1.50,\n    \"a\": [1, 2]\n}\n";
        assert_eq!(edit(src, |_| {}), src);
    }

    #[test]
    fn a_changed_value_changes_only_its_text() {
        let src =
            "{\n    \"b\": 1.50,\n    \"a\": {\n        \"x\": 1e3,\n        \"y\": 2\n    }\n}";
        let out = edit(src, |v| v["a"]["y"] = 7.into());
        assert_eq!(out, src.replace("\"y\": 2", "\"y\": 7"));
    }

    #[test]
    fn added_and_removed_keys_keep_source_order_and_indent() {
        let src = "{\n    \"z\": 1,\n    \"a\": 2,\n    \"m\": 3\n}";
        let out = edit(src, |v| {
            let o = v.as_object_mut().unwrap();
            o.remove("a");
            o.insert("new".into(), serde_json::json!({"k": [1]}));
        });
        assert_eq!(
            out,
            "{\n    \"z\": 1,\n    \"m\": 3,\n    \"new\": {\n        \"k\": [\n            1\n        ]\n    }\n}"
        );
    }

    #[test]
    fn compact_sources_stay_compact() {
        let src = r#"{"dma":[],"instr":"PE.bin","name":"PE.json"}"#;
        let out = edit(src, |v| {
            v["instr"] = "pe.bin".into();
            v.as_object_mut().unwrap().insert("x".into(), 1.into());
        });
        assert_eq!(out, r#"{"dma":[],"instr":"pe.bin","name":"PE.json","x":1}"#);
    }

    #[test]
    fn arrays_of_another_length_are_rewritten_in_style() {
        let src = "{\n  \"s\": [\n    1,\n    2\n  ]\n}";
        let out = edit(src, |v| v["s"] = serde_json::json!([1, 2, 3]));
        assert_eq!(out, "{\n  \"s\": [\n    1,\n    2,\n    3\n  ]\n}");
    }

    #[test]
    fn repeated_keys_and_bad_text_are_refused() {
        assert!(rewrite(br#"{"a":1,"a":2}"#, &Value::Null).is_none());
        assert!(rewrite(b"{\"a\":", &Value::Null).is_none());
        assert!(rewrite(b"\xff", &Value::Null).is_none());
    }
}
