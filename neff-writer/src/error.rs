//! The writer's one error type: every builder, packager, build-spec, barrier
//! and codec failure is an [`Error`] with an [`ErrorKind`] and a [`Location`].

use std::fmt;
use std::io;
use std::path::Path;

use neff_loader::Report;
use neff_schema::{write_prefix, Location};

/// What went wrong.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum ErrorKind {
    /// Reading an input or writing the output failed ([`Error::io_kind`] says how).
    Io,
    /// A member name is not acceptable in a NEFF.
    BadName,
    /// Two members collide, a member is also a folder, or the output would
    /// overwrite an input.
    Conflict,
    /// An option or header field is out of range.
    BadOption,
    /// The model breaks a rule only the builder can know (a weight file that
    /// is missing or of the wrong size, a shape whose size overflows).
    Invalid,
    /// A build spec is not JSON of the spec's shape.
    Spec,
    /// A `.npy` file is malformed.
    Npy,
    /// Base64 text is malformed.
    Base64,
    /// A barrier config cannot be composed.
    Barrier,
    /// The data model refused a value or a manifest.
    Schema(neff_schema::ErrorKind),
    /// A NEFF's framing (gzip header, tar headers) cannot be read or recovered.
    Framing,
    /// The loader could not read the written output back.
    ReadBack(neff_loader::ErrorKind),
    /// The loader's gates refuse the model or the output ([`Error::report`]).
    Refused,
    /// A worker thread of the pipeline failed.
    Pipeline,
}

/// A writer error: its [`ErrorKind`], its [`Location`] (file, member, spec key,
/// offset) and a message. [`fmt::Display`] puts the file and member in front.
#[derive(Debug)]
pub struct Error {
    kind: ErrorKind,
    location: Box<Location>,
    message: String,
    report: Option<Box<Report>>,
    source: Option<Box<dyn std::error::Error + Send + Sync>>,
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

    /// The loader's gates refuse; `what` says what (the model, the output).
    pub fn refused(what: &str, report: Report) -> Self {
        let message = format!("{what} refused by the loader: {}", report.summary());
        let mut e = Error::new(ErrorKind::Refused, message);
        e.report = Some(Box::new(report));
        e
    }

    /// `what` (e.g. "cannot read") failed on `path` for an I/O reason.
    pub fn io(what: &str, path: &Path, source: io::Error) -> Self {
        Error::new(ErrorKind::Io, format!("{what}: {source}"))
            .at_path(path)
            .with_source(source)
    }

    /// An I/O failure while `what` (which names the file or member).
    pub fn io_while(what: &str, source: io::Error) -> Self {
        Error::new(ErrorKind::Io, format!("{what}: {source}")).with_source(source)
    }

    /// The same error with its lower-level cause attached.
    pub fn with_source(mut self, source: impl std::error::Error + Send + Sync + 'static) -> Self {
        self.source = Some(Box::new(source));
        self
    }

    /// The same error, about the file at `path`.
    pub fn at_path(mut self, path: &Path) -> Self {
        self.location.path = Some(path.to_path_buf());
        self
    }

    /// The same error, in `member`.
    pub fn in_member(mut self, member: impl Into<String>) -> Self {
        self.location.member = Some(member.into());
        self
    }

    /// The same error, at `key` (a build-spec key path such as
    /// `subgraphs[0].weights[1].npy`, which the message also names).
    pub fn at_key(mut self, key: impl Into<String>) -> Self {
        self.location.key = Some(key.into());
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

    /// Takes the loader's report out, for [`ErrorKind::Refused`].
    pub fn into_report(self) -> Option<Report> {
        self.report.map(|r| *r)
    }

    /// The I/O error kind, when an I/O failure caused this.
    pub fn io_kind(&self) -> Option<io::ErrorKind> {
        let source = self.source.as_deref()?;
        source.downcast_ref::<io::Error>().map(io::Error::kind)
    }
}

impl From<io::Error> for Error {
    fn from(e: io::Error) -> Self {
        Error::new(ErrorKind::Io, e.to_string()).with_source(e)
    }
}

impl From<neff_schema::Error> for Error {
    fn from(e: neff_schema::Error) -> Self {
        let mut out = Error::new(ErrorKind::Schema(e.kind()), e.message().to_string());
        out.location = Box::new(e.location().clone());
        out.with_source(e)
    }
}

impl From<neff_loader::Error> for Error {
    fn from(e: neff_loader::Error) -> Self {
        let mut out = Error::new(ErrorKind::ReadBack(e.kind()), e.message().to_string());
        out.location = Box::new(e.location().clone());
        out.with_source(e)
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
            .as_deref()
            .map(|e| e as &(dyn std::error::Error + 'static))
    }
}
