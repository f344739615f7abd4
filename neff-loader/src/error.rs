//! The loader's one error type. A gate's refusal is not an error: it is a
//! [`Report`]. An [`Error`] means the loader could not do its job: the NEFF's
//! source could not be read, a tar or gzip stream read on its own (outside the
//! gates) is damaged, or an unpack was refused or failed.

use std::fmt;
use std::io;
use std::path::Path;

use neff_schema::{write_prefix, Location};

use crate::digest::SourceError;
use crate::gzip_reader::GzipError;
use crate::Report;

pub use crate::gzip_reader::GzipErrorKind;

/// Which tar failure libarchive would report.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum TarErrorKind {
    /// The stream ended inside a header block.
    TruncatedHeader,
    /// A header's checksum does not match its bytes.
    BadChecksum,
    /// A numeric header field holds something that is not a number.
    BadNumber,
    /// An `L`/`K`/`x`/`g` header is larger than the reader buffers.
    SpecialTooLarge,
    /// A pax extended header does not parse.
    BadPax,
    /// Special headers without an entry after them.
    DanglingSpecial,
    /// The stream ended inside the padding after a member's data.
    TruncatedPadding,
    /// The stream ended inside a member's data.
    TruncatedData,
}

impl TarErrorKind {
    /// libarchive's short text for the failure (what the runtime's `%s` prints).
    pub fn libarchive_text(self) -> &'static str {
        match self {
            TarErrorKind::BadChecksum | TarErrorKind::BadNumber | TarErrorKind::BadPax => {
                "Damaged tar archive"
            }
            TarErrorKind::SpecialTooLarge => "Special header too large",
            _ => "Truncated tar archive",
        }
    }
}

/// What went wrong.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum ErrorKind {
    /// Reading the NEFF from its file or reader failed (not its format).
    Read,
    /// Creating or writing a file or folder failed.
    Write,
    /// The gzip stream is damaged.
    Gzip(GzipErrorKind),
    /// The tar stream is damaged.
    Tar(TarErrorKind),
    /// The loader's gates refuse the NEFF ([`Error::report`] has the report).
    Refused,
    /// An entry could escape the destination or is not a plain file or folder.
    Unsafe,
    /// The destination already holds files.
    NotEmpty,
    /// A limit was reached (the message names it and how to raise it).
    Limit,
    /// A worker thread of the pipeline failed.
    Pipeline,
}

/// A loader error: its [`ErrorKind`], its [`Location`] (file, member, tar
/// offset) and a message. [`fmt::Display`] puts the file and member in front.
#[derive(Debug)]
pub struct Error {
    kind: ErrorKind,
    location: Box<Location>,
    message: String,
    report: Option<Box<Report>>,
    source: Option<io::Error>,
}

impl Error {
    /// An error of `kind` saying `message`, with no location yet.
    pub fn new(kind: ErrorKind, message: impl Into<String>) -> Self {
        Error {
            kind,
            location: Box::default(),
            message: message.into(),
            report: None,
            source: None,
        }
    }

    /// A tar failure at tar offset `offset`.
    pub(crate) fn tar(kind: TarErrorKind, offset: u64, message: String) -> Self {
        Error::new(ErrorKind::Tar(kind), message).at_offset(offset)
    }

    /// The gates refused the NEFF.
    pub fn refused(report: Report) -> Self {
        let message = format!("the NEFF is refused by the loader: {}", report.summary());
        let mut e = Error::new(ErrorKind::Refused, message);
        e.report = Some(Box::new(report));
        e
    }

    /// `what` (e.g. "cannot create") failed on `path` for an I/O reason.
    pub fn io(kind: ErrorKind, what: &str, path: &Path, source: io::Error) -> Self {
        let mut e = Error::new(kind, format!("{what}: {source}"));
        e.location.path = Some(path.to_path_buf());
        e.source = Some(source);
        e
    }

    /// A failure of the sink a member's data is copied to.
    pub(crate) fn sink(source: io::Error) -> Self {
        let mut e = Error::new(ErrorKind::Write, source.to_string());
        e.source = Some(source);
        e
    }

    /// The same error, in `member`.
    pub fn in_member(mut self, member: impl Into<String>) -> Self {
        self.location.member = Some(member.into());
        self
    }

    /// The same error, about the file at `path`.
    pub fn at_path(mut self, path: &Path) -> Self {
        self.location.path = Some(path.to_path_buf());
        self
    }

    /// The same error, at byte `offset`.
    pub fn at_offset(mut self, offset: u64) -> Self {
        self.location.offset = Some(offset);
        self
    }

    /// What went wrong.
    pub fn kind(&self) -> ErrorKind {
        self.kind
    }

    /// Where.
    pub fn location(&self) -> &Location {
        &self.location
    }

    /// What is wrong, without the file and member.
    pub fn message(&self) -> &str {
        &self.message
    }

    /// The loader's report, for [`ErrorKind::Refused`].
    pub fn report(&self) -> Option<&Report> {
        self.report.as_deref()
    }

    /// The I/O error kind, when an I/O failure caused this.
    pub fn io_kind(&self) -> Option<io::ErrorKind> {
        self.source.as_ref().map(io::Error::kind)
    }

    /// The short text libarchive gives for a damaged stream, or the message.
    pub fn libarchive_text(&self) -> &str {
        match self.kind {
            ErrorKind::Tar(k) => k.libarchive_text(),
            ErrorKind::Gzip(k) => k.libarchive_text(),
            _ => &self.message,
        }
    }
}

/// Sorts an I/O error from the reader chain by what raised it: the gzip
/// decoder (a damaged stream), the NEFF's source (a read failure), or
/// anything else.
impl From<io::Error> for Error {
    fn from(e: io::Error) -> Self {
        let inner = e.get_ref();
        if let Some(g) = inner.and_then(|i| i.downcast_ref::<GzipError>()) {
            let mut out = Error::new(ErrorKind::Gzip(g.kind), g.message.clone());
            out.location.offset = Some(g.offset);
            return out;
        }
        if let Some(SourceError(source)) = inner.and_then(|i| i.downcast_ref::<SourceError>()) {
            let mut out = Error::new(ErrorKind::Read, format!("read failed: {source}"));
            out.source = Some(io::Error::new(source.kind(), source.to_string()));
            return out;
        }
        let mut out = Error::new(ErrorKind::Read, e.to_string());
        out.source = Some(e);
        out
    }
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
            .as_ref()
            .map(|e| e as &(dyn std::error::Error + 'static))
    }
}
