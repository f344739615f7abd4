//! The one error type of the data model, and the [`Location`] every crate of
//! the workspace uses to say where a problem is.

use std::fmt;
use std::path::PathBuf;

/// What was refused: a value (an arch name, a target, a UUID, hex, header text,
/// a feature name) or a document (a manifest, a barrier config's JSON).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum ErrorKind {
    /// An architecture name that is not sunda, cayman or mariana (or v2–v4).
    UnknownArch,
    /// A target string the runtime does not resolve.
    BadTarget,
    /// A UUID that is not 32 hex digits.
    BadUuid,
    /// Hex text with an odd length or a non-hex digit.
    BadHex,
    /// Text that does not fit its fixed-width header field.
    TextTooLong,
    /// A feature name or bit that is not known.
    UnknownFeature,
    /// A manifest's bytes are not JSON of the expected shape.
    ManifestSyntax,
    /// A manifest could not be encoded as JSON.
    ManifestEncode,
    /// JSON that cannot become a barrier config.
    BarrierJson,
}

/// Where a problem is. Every part is optional; the parts that are known are
/// filled in by whoever knows them (the file by the caller that opened it, the
/// member by the tar walk, the key and offset by the parser).
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize)]
pub struct Location {
    /// A file on disk (the NEFF, an input file, an output).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub path: Option<PathBuf>,
    /// A member of the NEFF's archive.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub member: Option<String>,
    /// A JSON key path or a struct field.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub key: Option<String>,
    /// A byte offset (in the file, the tar stream or the text; the message says which).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub offset: Option<u64>,
}

impl Location {
    /// True when no part is known.
    pub fn is_empty(&self) -> bool {
        *self == Location::default()
    }
}

/// A refused value or document: its [`ErrorKind`], its [`Location`] and a
/// message that says what is wrong (the message names the key and offset
/// itself; [`fmt::Display`] puts the path and member in front of it).
#[derive(Debug)]
pub struct Error {
    kind: ErrorKind,
    location: Box<Location>,
    message: String,
    source: Option<Box<dyn std::error::Error + Send + Sync>>,
}

impl Error {
    /// An error of `kind` saying `message`, with no location yet.
    pub fn new(kind: ErrorKind, message: impl Into<String>) -> Self {
        Error {
            kind,
            location: Box::default(),
            message: message.into(),
            source: None,
        }
    }

    /// The same error with its lower-level cause attached.
    pub fn with_source(mut self, source: impl std::error::Error + Send + Sync + 'static) -> Self {
        self.source = Some(Box::new(source));
        self
    }

    /// The same error, in `member`.
    pub fn in_member(mut self, member: impl Into<String>) -> Self {
        self.location.member = Some(member.into());
        self
    }

    /// The same error, at `key`.
    pub fn at_key(mut self, key: impl Into<String>) -> Self {
        self.location.key = Some(key.into());
        self
    }

    /// The same error, at byte `offset`.
    pub fn at_offset(mut self, offset: u64) -> Self {
        self.location.offset = Some(offset);
        self
    }

    /// What was refused.
    pub fn kind(&self) -> ErrorKind {
        self.kind
    }

    /// Where.
    pub fn location(&self) -> &Location {
        &self.location
    }

    /// What is wrong, without the path and member.
    pub fn message(&self) -> &str {
        &self.message
    }
}

/// Writes `path: member: ` for the parts of `location` that are known, the
/// prefix every crate's error puts before its message.
pub fn write_prefix(f: &mut fmt::Formatter<'_>, location: &Location) -> fmt::Result {
    if let Some(path) = &location.path {
        write!(f, "{}: ", path.display())?;
    }
    if let Some(member) = &location.member {
        write!(f, "{member}: ")?;
    }
    Ok(())
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write_prefix(f, &self.location)?;
        f.write_str(&self.message)
    }
}

impl std::error::Error for Error {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        self.source
            .as_deref()
            .map(|e| e as &(dyn std::error::Error + 'static))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn display_puts_path_and_member_first() {
        let mut e = Error::new(
            ErrorKind::ManifestSyntax,
            "expected value at line 1 column 1",
        )
        .in_member("neff.json")
        .at_offset(0);
        assert_eq!(
            e.to_string(),
            "neff.json: expected value at line 1 column 1"
        );
        e.location.path = Some("m.neff".into());
        assert_eq!(
            e.to_string(),
            "m.neff: neff.json: expected value at line 1 column 1"
        );
        assert_eq!(e.location().offset, Some(0));
        assert_eq!(e.kind(), ErrorKind::ManifestSyntax);
        assert!(!e.location().is_empty());
    }
}
