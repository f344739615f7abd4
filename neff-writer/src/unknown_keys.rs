//! A key a typed manifest does not model that looks like a typo of one it
//! does (`alignmnet`): kept as an unknown key, the intended edit would be
//! silently lost. The known keys are read from the type's JSON Schema (the
//! one `neff schema` prints), so every modelled key counts. Keys the source
//! NEFF already had at the same place are never reported: real compilers
//! write keys this tool does not model (2.27's `nki_version`), and keys
//! starting with `#` are their annotations (`#file-name`).

use std::collections::BTreeMap;
use std::sync::OnceLock;

use schemars::JsonSchema;
use serde_json::{Map, Value};

use crate::error::nearest;

/// A key that looks like a typo: its path and the known key it is near.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Typo {
    /// The key's path in the manifest (`var.w.alignmnet`).
    pub path: String,
    /// The modelled key it is near.
    pub known: String,
}

/// The JSON Schema of `T`, made once per type name.
fn schema_of<T: JsonSchema>() -> &'static Value {
    static SCHEMAS: OnceLock<std::sync::Mutex<BTreeMap<String, &'static Value>>> = OnceLock::new();
    let mut schemas = SCHEMAS
        .get_or_init(Default::default)
        .lock()
        .unwrap_or_else(|e| e.into_inner());
    schemas
        .entry(T::schema_name().into_owned())
        .or_insert_with(|| Box::leak(Box::new(schemars::schema_for!(T).to_value())))
}

/// The first typo in `value`, a manifest of type `T`, that is not a key of
/// `original` (the source's manifest) at the same place.
pub(crate) fn first_typo<T: JsonSchema>(value: &Value, original: Option<&Value>) -> Option<Typo> {
    let root = schema_of::<T>();
    let defs = root.get("$defs").and_then(Value::as_object);
    Walk { defs }.value(value, original, &[root], &mut String::new())
}

/// The walk of a value beside its schemas.
struct Walk<'a> {
    defs: Option<&'a Map<String, Value>>,
}

impl<'a> Walk<'a> {
    /// `schemas` with every `$ref` followed and every `anyOf`/`oneOf`/`allOf`
    /// opened (a few levels deep: schemas of manifests are shallow there).
    fn open(&self, schemas: &[&'a Value]) -> Vec<&'a Value> {
        let mut out = Vec::new();
        let mut todo: Vec<(&'a Value, u8)> = schemas.iter().map(|s| (*s, 0)).collect();
        while let Some((schema, depth)) = todo.pop() {
            if depth > 8 {
                continue;
            }
            if let Some(name) = schema.get("$ref").and_then(Value::as_str) {
                let name = name.rsplit('/').next().unwrap_or_default();
                if let Some(def) = self.defs.and_then(|d| d.get(name)) {
                    todo.push((def, depth + 1));
                }
            }
            for key in ["anyOf", "oneOf", "allOf"] {
                for sub in schema
                    .get(key)
                    .and_then(Value::as_array)
                    .into_iter()
                    .flatten()
                {
                    todo.push((sub, depth + 1));
                }
            }
            out.push(schema);
        }
        out
    }

    fn value(
        &self,
        value: &Value,
        original: Option<&Value>,
        schemas: &[&'a Value],
        path: &mut String,
    ) -> Option<Typo> {
        let schemas = self.open(schemas);
        match value {
            Value::Object(map) => {
                let properties: Vec<&'a Map<String, Value>> = schemas
                    .iter()
                    .filter_map(|s| s.get("properties").and_then(Value::as_object))
                    .collect();
                let additional: Vec<&'a Value> = schemas
                    .iter()
                    .filter_map(|s| s.get("additionalProperties"))
                    .filter(|a| a.is_object())
                    .collect();
                for (key, child) in map {
                    let was = original.and_then(|o| o.get(key));
                    let mark = path.len();
                    if !path.is_empty() {
                        path.push('.');
                    }
                    path.push_str(key);
                    let known: Vec<&'a Value> =
                        properties.iter().filter_map(|p| p.get(key)).collect();
                    let found = if !known.is_empty() {
                        self.value(child, was, &known, path)
                    } else if !additional.is_empty() && properties.is_empty() {
                        self.value(child, was, &additional, path)
                    } else if was.is_none() && !key.starts_with('#') {
                        // `#…` keys are the compilers' annotations
                        // (`#file-name`, `#transfer-type`), never a typo.
                        let names = properties.iter().flat_map(|p| p.keys().map(String::as_str));
                        nearest(key, names).map(|known| Typo {
                            path: path.clone(),
                            known: known.to_string(),
                        })
                    } else {
                        None
                    };
                    path.truncate(mark);
                    if found.is_some() {
                        return found;
                    }
                }
                None
            }
            Value::Array(items) => {
                let item: Vec<&'a Value> = schemas.iter().filter_map(|s| s.get("items")).collect();
                if item.is_empty() {
                    return None;
                }
                for (i, child) in items.iter().enumerate() {
                    let mark = path.len();
                    path.push_str(&format!("[{i}]"));
                    let found = self.value(child, original.and_then(|o| o.get(i)), &item, path);
                    path.truncate(mark);
                    if found.is_some() {
                        return found;
                    }
                }
                None
            }
            _ => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use neff_schema::manifest::DefJson;
    use serde_json::json;

    #[test]
    fn a_key_near_a_modelled_one_is_a_typo_unless_the_source_had_it() {
        let def = json!({"var": {"w": {"type": "file", "var_id": 0, "alignmnet": 64}}});
        let typo = first_typo::<DefJson>(&def, None).expect("a typo");
        assert_eq!(
            typo,
            Typo {
                path: "var.w.alignmnet".into(),
                known: "alignment".into()
            }
        );
        assert_eq!(first_typo::<DefJson>(&def, Some(&def)), None);
        let far = json!({"var": {}, "nki_version": "0.6.0", "dma_queue": {"q": {"ownr": "pe"}}});
        let typo = first_typo::<DefJson>(&far, None).expect("the queue's owner");
        assert_eq!(typo.path, "dma_queue.q.ownr");
    }
}
