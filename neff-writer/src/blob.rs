//! Member bytes as specs and builders give them: a [`Blob`] is what a build
//! spec's JSON says (a path, base64, text or held data); [`Data`] is what a
//! builder holds (a packager source, a file path, or a blob not resolved
//! yet).

use std::fmt;
use std::path::{Path, PathBuf};

use serde::de::{self, Deserializer, MapAccess, Visitor};
use serde::Deserialize;

use crate::error::{spec_error as invalid, Error};
use crate::member::MemberSource;

/// Bytes for a member: a path relative to the spec file (a string or
/// `{"path": ...}`), `{"base64": ...}` or `{"text": ...}`; or, for a caller
/// that passes data along with the spec (Python's `neff.Builder`),
/// `{"data": N}`: entry N of that data.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Blob {
    /// A file, streamed when the NEFF is written.
    Path(PathBuf),
    /// Standard base64.
    Base64(String),
    /// UTF-8 text.
    Text(String),
    /// Entry N of the data the caller passes with the spec (a resolver of
    /// [`BuildSpec::into_builder_with`](crate::build_spec::BuildSpec::into_builder_with) supplies it; a spec file has none).
    Held(usize),
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct BlobObject {
    #[serde(default)]
    path: Option<PathBuf>,
    #[serde(default)]
    base64: Option<String>,
    #[serde(default)]
    text: Option<String>,
    #[serde(default)]
    data: Option<usize>,
}

impl<'de> Deserialize<'de> for Blob {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct BlobVisitor;
        impl<'de> Visitor<'de> for BlobVisitor {
            type Value = Blob;

            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str(r#"a path string, {"path": ...}, {"base64": ...} or {"text": ...}"#)
            }

            fn visit_str<E: de::Error>(self, v: &str) -> Result<Blob, E> {
                Ok(Blob::Path(PathBuf::from(v)))
            }

            fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<Blob, A::Error> {
                let o = BlobObject::deserialize(de::value::MapAccessDeserializer::new(map))?;
                match (o.path, o.base64, o.text, o.data) {
                    (Some(p), None, None, None) => Ok(Blob::Path(p)),
                    (None, Some(b), None, None) => Ok(Blob::Base64(b)),
                    (None, None, Some(t), None) => Ok(Blob::Text(t)),
                    (None, None, None, Some(n)) => Ok(Blob::Held(n)),
                    _ => Err(de::Error::custom(
                        "a blob object needs exactly one of \"path\", \"base64\", \"text\" and \"data\"",
                    )),
                }
            }
        }
        d.deserialize_any(BlobVisitor)
    }
}

impl serde::Serialize for Blob {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeMap;
        if let Blob::Path(path) = self {
            return s.serialize_str(&path.to_string_lossy());
        }
        let mut map = s.serialize_map(Some(1))?;
        match self {
            Blob::Path(_) => {}
            Blob::Base64(text) => map.serialize_entry("base64", text)?,
            Blob::Text(text) => map.serialize_entry("text", text)?,
            Blob::Held(index) => map.serialize_entry("data", index)?,
        }
        map.end()
    }
}

impl schemars::JsonSchema for Blob {
    fn schema_name() -> std::borrow::Cow<'static, str> {
        "Blob".into()
    }

    fn json_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
        schemars::json_schema!({
            "description": "Member bytes: a path relative to the spec file, or an object with exactly one of path, base64 (standard alphabet) and text; or {\"data\": N}, entry N of the data a caller passes with the spec (Python's neff.Builder).",
            "oneOf": [
                { "type": "string" },
                { "type": "object", "properties": { "path": { "type": "string" } }, "required": ["path"], "additionalProperties": false },
                { "type": "object", "properties": { "base64": { "type": "string" } }, "required": ["base64"], "additionalProperties": false },
                { "type": "object", "properties": { "text": { "type": "string" } }, "required": ["text"], "additionalProperties": false },
                { "type": "object", "properties": { "data": { "type": "integer", "minimum": 0 } }, "required": ["data"], "additionalProperties": false }
            ]
        })
    }
}

/// A blob's data: a path relative to `base` (checked to be a regular file,
/// streamed when written), decoded base64 or the text's bytes; `key` names
/// the blob in errors.
pub fn blob_data(base: &Path, key: &str, blob: Blob) -> Result<Data, Error> {
    match blob {
        Blob::Path(p) => {
            let path = base.join(&p);
            match std::fs::metadata(&path) {
                Ok(m) if m.is_file() => Ok(Data::Path(path)),
                Ok(_) => invalid(key, format!("{} is not a regular file", path.display())),
                Err(e) => invalid(key, format!("cannot read {}: {e}", path.display())),
            }
        }
        Blob::Base64(text) => crate::base64::decode(&text)
            .map(Data::bytes)
            .or_else(|e| invalid(format!("{key}.base64"), e.to_string())),
        Blob::Text(text) => Ok(Data::bytes(text.into_bytes())),
        Blob::Held(index) => invalid(
            format!("{key}.data"),
            format!("data #{index} was not passed with the spec (only a caller with data of its own, like Python's neff.Builder, has it)"),
        ),
    }
}

/// Where a member's bytes come from: in memory, a reader, or a file path that
/// is only opened when the NEFF is built (large files are streamed, never
/// loaded whole).
pub enum Data {
    /// Any packager source.
    Source(MemberSource),
    /// A file, checked and measured at build time.
    Path(PathBuf),
    /// A blob as a build spec gives it, not resolved yet
    /// ([`Subgraph::resolve_blobs`](crate::builder::Subgraph::resolve_blobs)); left so, a path is relative to the
    /// working directory.
    Blob(Blob),
}

/// Empty bytes.
impl Default for Data {
    fn default() -> Data {
        Data::bytes(Vec::new())
    }
}

/// A build spec's blob (a path, `{"path"}`, `{"base64"}` or `{"text"}`), unresolved.
impl<'de> serde::Deserialize<'de> for Data {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        Blob::deserialize(d).map(Data::Blob)
    }
}

/// As a build spec's blob: a path, `{"base64"}` for bytes in memory; a
/// reader (which cannot be read twice) is an error.
impl serde::Serialize for Data {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self {
            Data::Path(path) => Blob::Path(path.clone()).serialize(s),
            Data::Blob(blob) => blob.serialize(s),
            Data::Source(MemberSource::Bytes(bytes)) => {
                Blob::Base64(crate::base64::encode(bytes)).serialize(s)
            }
            Data::Source(_) => Err(serde::ser::Error::custom(
                "a streamed source cannot be written into a build spec",
            )),
        }
    }
}

impl schemars::JsonSchema for Data {
    fn schema_name() -> std::borrow::Cow<'static, str> {
        Blob::schema_name()
    }

    fn json_schema(generator: &mut schemars::SchemaGenerator) -> schemars::Schema {
        Blob::json_schema(generator)
    }
}

impl Data {
    /// Bytes in memory.
    pub fn bytes(bytes: impl Into<Vec<u8>>) -> Data {
        Data::Source(MemberSource::Bytes(bytes.into()))
    }

    /// A file read when the NEFF is written.
    pub fn file(path: impl Into<PathBuf>) -> Data {
        Data::Path(path.into())
    }

    /// Turns a blob ([`Data::Blob`]) into data with `resolve(key, blob)`;
    /// any other data stays as it is.
    pub(crate) fn resolve(
        &mut self,
        key: &str,
        resolve: &mut dyn FnMut(&str, Blob) -> Result<Data, Error>,
    ) -> Result<(), Error> {
        if let Data::Blob(_) = self {
            if let Data::Blob(blob) = std::mem::take(self) {
                *self = resolve(key, blob)?;
            }
        }
        Ok(())
    }

    /// The packager source; `what` names the data in errors.
    pub(crate) fn into_source(self, what: &str) -> Result<MemberSource, Error> {
        match self {
            Data::Source(source) => Ok(source),
            Data::Path(path) => MemberSource::file(&path).map_err(|e| Error::io_while(what, e)),
            Data::Blob(blob) => blob_data(Path::new(""), what, blob)?.into_source(what),
        }
    }
}

impl std::fmt::Debug for Data {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Data::Source(s) => s.fmt(f),
            Data::Path(p) => write!(f, "Path({})", p.display()),
            Data::Blob(b) => write!(f, "Blob({b:?})"),
        }
    }
}

impl From<Vec<u8>> for Data {
    fn from(bytes: Vec<u8>) -> Data {
        Data::bytes(bytes)
    }
}

impl From<&[u8]> for Data {
    fn from(bytes: &[u8]) -> Data {
        Data::bytes(bytes)
    }
}

impl<const N: usize> From<&[u8; N]> for Data {
    fn from(bytes: &[u8; N]) -> Data {
        Data::bytes(bytes.as_slice())
    }
}

impl From<PathBuf> for Data {
    fn from(path: PathBuf) -> Data {
        Data::Path(path)
    }
}

impl From<&Path> for Data {
    fn from(path: &Path) -> Data {
        Data::Path(path.to_path_buf())
    }
}

impl From<&PathBuf> for Data {
    fn from(path: &PathBuf) -> Data {
        Data::Path(path.clone())
    }
}

/// A string is a file path (bytes are `&[u8]`, `b"…"` or `Vec<u8>`).
impl From<&str> for Data {
    fn from(path: &str) -> Data {
        Data::Path(PathBuf::from(path))
    }
}

/// A string is a file path (bytes are `&[u8]`, `b"…"` or `Vec<u8>`).
impl From<String> for Data {
    fn from(path: String) -> Data {
        Data::Path(PathBuf::from(path))
    }
}

impl From<MemberSource> for Data {
    fn from(source: MemberSource) -> Data {
        Data::Source(source)
    }
}
