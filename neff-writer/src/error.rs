//! The writer's one error type: every builder, packager, build-spec, barrier
//! and codec failure is an [`Error`] with an [`ErrorKind`] and a [`Location`].

use std::io;
use std::path::Path;

use neff_loader::Report;

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

neff_schema::define_error!(
    /// A writer error: its [`ErrorKind`], its [`Location`](neff_schema::Location)
    /// (file, member, spec key, offset) and a message.
    Error, ErrorKind { report: Option<Box<Report>> }
);

impl Error {
    /// The loader's gates refuse; `what` says what (the model, the output).
    pub fn refused(what: &str, report: Report) -> Self {
        let message = format!("{what} refused by the loader: {}", report.summary());
        let mut e = Error::new(ErrorKind::Refused, message);
        e.report = Some(Box::new(report));
        e
    }

    /// `what` (e.g. "cannot read") failed on `path` for an I/O reason.
    pub fn io(what: &str, path: &Path, source: io::Error) -> Self {
        Error::io_while(what, source).at_path(path)
    }

    /// An I/O failure while `what` (which names the file or member).
    pub fn io_while(what: &str, source: io::Error) -> Self {
        Error::new(ErrorKind::Io, format!("{what}: {source}")).with_source(source)
    }

    /// The loader's report, for [`ErrorKind::Refused`].
    pub fn report(&self) -> Option<&Report> {
        self.report.as_deref()
    }
}

impl From<io::Error> for Error {
    fn from(e: io::Error) -> Self {
        Error::new(ErrorKind::Io, e.to_string()).with_source(e)
    }
}

impl From<neff_schema::Error> for Error {
    fn from(e: neff_schema::Error) -> Self {
        let message = e.message().to_string();
        Error::new(ErrorKind::Schema(e.kind()), message)
            .at(e.location())
            .with_source(e)
    }
}

impl From<neff_loader::Error> for Error {
    fn from(e: neff_loader::Error) -> Self {
        let message = e.message().to_string();
        Error::new(ErrorKind::ReadBack(e.kind()), message)
            .at(e.location())
            .with_source(e)
    }
}

/// A spec value is unusable; `key` is its path in the spec
/// (`subgraphs[0].weights[1].npy`), which the message also starts with.
pub(crate) fn spec_error<T>(
    key: impl Into<String>,
    message: impl Into<String>,
) -> Result<T, Error> {
    let key = key.into();
    let message = format!("{key}: {}", message.into());
    Err(Error::new(ErrorKind::Spec, message).at_key(key))
}

/// serde's "unknown field `x`, expected one of `a`, `b`" with the nearest
/// expected key suggested when one is close (`inptus` → `inputs`).
pub(crate) fn with_suggestion(message: &str) -> String {
    let Some(rest) = message.strip_prefix("unknown field `") else {
        return message.to_string();
    };
    let Some((field, expected)) = rest.split_once("`, expected ") else {
        return message.to_string();
    };
    match nearest(field, expected.split('`').skip(1).step_by(2)) {
        Some(candidate) => message.replacen(
            &format!("`{field}`,"),
            &format!("`{field}` (did you mean `{candidate}`?),"),
            1,
        ),
        None => message.to_string(),
    }
}

/// The candidate nearest to `word` in edits (insertions, deletions,
/// substitutions, a swap of two neighbours), when it is close (a third of
/// its length, at least one edit).
pub(crate) fn nearest<'a>(
    word: &str,
    candidates: impl Iterator<Item = &'a str>,
) -> Option<&'a str> {
    candidates
        .map(|candidate| (strsim::osa_distance(word, candidate), candidate))
        .filter(|&(d, c)| d <= (c.len().max(word.len()) / 3).max(1))
        .min()
        .map(|(_, candidate)| candidate)
}

/// The model breaks a rule only the builder knows (the message names the
/// subgraph and key).
pub(crate) fn invalid<T>(message: impl Into<String>) -> Result<T, Error> {
    Err(Error::new(ErrorKind::Invalid, message))
}
