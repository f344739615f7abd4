//! The loader's one error type. A gate's refusal is not an error: it is a
//! [`Report`]. An [`Error`] means the loader could not do its job: the NEFF's
//! source could not be read, a tar or gzip stream read on its own (outside the
//! gates) is damaged, or an unpack was refused or failed.

use std::io;
use std::path::Path;

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
    /// A second special header of a kind allowed once per entry.
    Redundant,
    /// A header says its entry has a negative size.
    NegativeSize,
    /// A construct this reader refuses rather than read differently from
    /// libarchive (see the README's limits).
    Unsupported,
    /// An entry of 2^60 bytes or more.
    EntryTooLarge,
    /// The first header is not one libarchive's tar bidder takes.
    Unrecognized,
}

impl TarErrorKind {
    /// libarchive's short text for the failure (what the runtime's `%s` prints).
    pub fn libarchive_text(self) -> &'static str {
        match self {
            TarErrorKind::BadChecksum | TarErrorKind::BadNumber | TarErrorKind::BadPax => {
                "Damaged tar archive"
            }
            TarErrorKind::SpecialTooLarge => "Special header too large",
            TarErrorKind::NegativeSize => "Tar entry has negative file size",
            TarErrorKind::EntryTooLarge => "Tar entry size overflow",
            TarErrorKind::Unrecognized => "Unrecognized archive format",
            TarErrorKind::Redundant | TarErrorKind::Unsupported => "Damaged tar archive",
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
    /// A file that carries NEFFs (an HLO module, a TorchScript zip) is
    /// malformed, or carries none.
    Carrier,
}

neff_schema::define_error!(
    /// A loader error: its [`ErrorKind`], its [`Location`](neff_schema::Location)
    /// (file, member, tar offset) and a message.
    Error, ErrorKind { report: Option<Box<Report>> }
);

impl Error {
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
        Error::new(kind, format!("{what}: {source}"))
            .at_path(path)
            .with_source(source)
    }

    /// A failure of the sink a member's data is copied to.
    pub(crate) fn sink(source: io::Error) -> Self {
        Error::new(ErrorKind::Write, source.to_string()).with_source(source)
    }

    /// The loader's report, for [`ErrorKind::Refused`].
    pub fn report(&self) -> Option<&Report> {
        self.report.as_deref()
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
            return Error::new(ErrorKind::Gzip(g.kind), g.message.clone()).at_offset(g.offset);
        }
        if let Some(SourceError(source)) = inner.and_then(|i| i.downcast_ref::<SourceError>()) {
            let message = format!("read failed: {source}");
            let cause = io::Error::new(source.kind(), source.to_string());
            return Error::new(ErrorKind::Read, message).with_source(cause);
        }
        Error::new(ErrorKind::Read, e.to_string()).with_source(e)
    }
}
