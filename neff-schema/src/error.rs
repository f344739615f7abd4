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
    /// Bytes that are not a barrier config (not 296 bytes long).
    BarrierBytes,
    /// Bytes that are not a `.npy` v1 file, or a malformed header dict.
    Npy,
}

/// Where a problem is. Every part is optional; the parts that are known are
/// filled in by whoever knows them (the file by the caller that opened it, the
/// member by the tar walk, the key and offset by the parser).
#[serde_with::skip_serializing_none]
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize)]
pub struct Location {
    /// A file on disk (the NEFF, an input file, an output).
    pub path: Option<PathBuf>,
    /// A member of the NEFF's archive.
    pub member: Option<String>,
    /// A JSON key path or a struct field.
    pub key: Option<String>,
    /// A byte offset (in the file, the tar stream or the text; the message says which).
    pub offset: Option<u64>,
}

impl Location {
    /// True when no part is known.
    pub fn is_empty(&self) -> bool {
        *self == Location::default()
    }
}

/// Defines a crate's error type: a `kind` (a `Copy` enum), a boxed
/// [`Location`], a message and an optional cause, with the constructors and
/// accessors every crate's error shares; [`fmt::Display`] puts the path and
/// member in front of the message (which names the key and offset itself).
/// Extra fields start as their `Default`.
#[macro_export]
macro_rules! define_error {
    ($(#[$meta:meta])* $name:ident, $kind:ty { $($extra:ident : $extra_ty:ty),* $(,)? }) => {
        $(#[$meta])*
        #[derive(Debug)]
        pub struct $name {
            kind: $kind,
            location: Box<$crate::Location>,
            message: String,
            source: Option<Box<dyn std::error::Error + Send + Sync>>,
            $($extra: $extra_ty,)*
        }

        impl $name {
            /// An error of `kind` saying `message`, with no location yet.
            pub fn new(kind: $kind, message: impl Into<String>) -> Self {
                $name {
                    kind,
                    location: Box::default(),
                    message: message.into(),
                    source: None,
                    $($extra: Default::default(),)*
                }
            }

            /// The same error with its lower-level cause attached.
            pub fn with_source(
                mut self,
                source: impl std::error::Error + Send + Sync + 'static,
            ) -> Self {
                self.source = Some(Box::new(source));
                self
            }

            /// The same error, about the file at `path`.
            pub fn at_path(mut self, path: impl Into<std::path::PathBuf>) -> Self {
                self.location.path = Some(path.into());
                self
            }

            /// The same error, in `member`.
            pub fn in_member(mut self, member: impl Into<String>) -> Self {
                self.location.member = Some(member.into());
                self
            }

            /// The same error, at `key` (a JSON key path or a field).
            pub fn at_key(mut self, key: impl Into<String>) -> Self {
                self.location.key = Some(key.into());
                self
            }

            /// The same error, at byte `offset`.
            pub fn at_offset(mut self, offset: u64) -> Self {
                self.location.offset = Some(offset);
                self
            }

            /// The same error, at `location` (another crate's error's).
            pub fn at(mut self, location: &$crate::Location) -> Self {
                *self.location = location.clone();
                self
            }

            /// What went wrong.
            pub fn kind(&self) -> $kind {
                self.kind
            }

            /// Where.
            pub fn location(&self) -> &$crate::Location {
                &self.location
            }

            /// What is wrong, without the path and member.
            pub fn message(&self) -> &str {
                &self.message
            }

            /// The I/O error kind, when an I/O failure caused this.
            pub fn io_kind(&self) -> Option<std::io::ErrorKind> {
                let source = self.source.as_deref()?;
                source.downcast_ref::<std::io::Error>().map(std::io::Error::kind)
            }
        }

        impl std::fmt::Display for $name {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                $crate::write_prefix(f, &self.location)?;
                f.write_str(&self.message)
            }
        }

        impl std::error::Error for $name {
            fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
                self.source
                    .as_deref()
                    .map(|e| e as &(dyn std::error::Error + 'static))
            }
        }
    };
}

define_error!(
    /// A refused value or document: its [`ErrorKind`], its [`Location`] and a
    /// message that says what is wrong.
    Error, ErrorKind {}
);

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
