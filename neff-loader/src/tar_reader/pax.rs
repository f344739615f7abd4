//! pax extended headers (`x`, Sun `X`, global `g`) as libarchive 3.8 reads
//! them: record by record from the stream (a body may be up to 1 GiB, so it
//! is never held whole), with libarchive's checks on each record and on the
//! values the runtime's reading depends on.
//!
//! libarchive tells two kinds of failure apart, and so does this reader: a
//! *fatal* one fails at once; a *warning* ("Ignoring malformed …") skips
//! the rest of the body and is reported with the entry the header belongs
//! to (the runtime treats a warning as a failed load), or dropped when the
//! end-of-archive marker comes first. Constructs whose reading depends on
//! more than the bytes (the process locale) or that this reader does not
//! model (sparse files, ACLs) are refused by name.

use std::io::BufRead;

use super::number::{pax_number, pax_time};
use super::{escape_name, TarReader};
use crate::error::{Error, TarErrorKind};

/// Largest `x` body libarchive reads (1 GiB).
const MAX_EXTENSION: i64 = 1 << 30;
/// Longest `path`/`linkpath` value libarchive takes (1 MiB).
const MAX_PATH: usize = 1 << 20;
/// Longest `uname`/`gname` value this reader checks (libarchive warns
/// somewhere past 64 KiB; longer ones are refused).
const MAX_NAME: usize = 64 << 10;
/// Longest record prolog (length, space, key, `=`) read in one piece.
const MAX_PROLOG: usize = 512;
/// Longest record length libarchive parses.
const MAX_LINE: usize = 99_999_999;
/// Longest number value libarchive reads.
const MAX_NUMBER: usize = 64;

/// What an `x` header sets for the entry after it, and its warning.
#[derive(Debug, Default)]
pub(super) struct PaxValues {
    /// `path`, up to its first NUL, when not empty.
    pub path: Option<Vec<u8>>,
    /// `size`.
    pub size: Option<i64>,
    /// `mtime`, whole seconds.
    pub mtime: Option<i64>,
    /// The warning libarchive gives for this header, if any.
    pub warning: Option<Error>,
}

/// How one attribute's value is read.
#[derive(Clone, Copy)]
enum Value {
    /// Kept whole.
    Keep,
    /// Checked byte by byte to be ASCII.
    Ascii,
    /// A pax time, checked as it streams.
    Time,
    /// Skipped.
    Skip,
}

/// A failure of a pax header at `offset`.
fn bad(offset: u64, why: impl std::fmt::Display) -> Error {
    let message = format!("Damaged tar archive: pax header at tar offset {offset}: {why}");
    Error::tar(TarErrorKind::BadPax, offset, message)
}

/// A construct refused rather than mirrored.
pub(super) fn unsupported(offset: u64, what: impl std::fmt::Display) -> Error {
    let message = format!("Unsupported tar construct at tar offset {offset}: {what}");
    Error::tar(TarErrorKind::Unsupported, offset, message)
}

/// Why a body stopped being read: a warning (the rest is skipped) or a
/// fatal failure.
enum Stop {
    Warning(Error),
    Fatal(Error),
}

/// The unread part of a pax body: bytes read ahead, then the stream.
struct Body {
    /// Body bytes not yet read from the stream.
    unread: u64,
    /// Bytes read from the stream but not parsed yet.
    ahead: Vec<u8>,
    /// The header's offset, for messages.
    offset: u64,
}

impl Body {
    /// Body bytes left to parse.
    fn left(&self) -> u64 {
        self.unread + self.ahead.len() as u64
    }
}

impl<R: BufRead> TarReader<R> {
    /// Reads the body of a pax header of `size` bytes (and its padding)
    /// whose header block is at `offset`; `global` for `g`.
    pub(super) fn read_pax(
        &mut self,
        size: i64,
        offset: u64,
        global: bool,
    ) -> Result<PaxValues, Error> {
        if size < 0 {
            return Err(bad(
                offset,
                format!("pax extension header has invalid size: {size}"),
            ));
        }
        if size == 0 {
            return Err(bad(offset, "Invalid empty pax extended header"));
        }
        if size > MAX_EXTENSION {
            return Err(bad(
                offset,
                format!("{size} bytes is over libarchive's 1 GiB limit"),
            ));
        }
        let mut body = Body {
            unread: size as u64,
            ahead: Vec::new(),
            offset,
        };
        let mut values = PaxValues::default();
        while body.left() > 0 {
            match self.read_record(&mut body, global, &mut values) {
                Ok(()) => {}
                Err(Stop::Fatal(e)) => return Err(e),
                Err(Stop::Warning(e)) => {
                    // A malformed record: libarchive skips the rest of the body.
                    self.skip_body(&mut body)?;
                    values.warning.get_or_insert(e);
                    break;
                }
            }
        }
        self.pending_pad = super::padding(size as u64);
        self.skip_padding()?;
        Ok(values)
    }

    /// Parses one record and applies it.
    fn read_record(
        &mut self,
        body: &mut Body,
        global: bool,
        values: &mut PaxValues,
    ) -> Result<(), Stop> {
        let offset = body.offset;
        let want = body.left().min(MAX_PROLOG as u64) as usize;
        self.fill(body, want).map_err(Stop::Fatal)?;
        let (prolog, key, line) = parse_prolog(&body.ahead, body.left(), offset)?;
        body.ahead.drain(..prolog);
        let value_len = line - prolog;
        if value_len == 0 {
            return Err(Stop::Warning(bad(
                offset,
                "Malformed pax attributes: a record without a value or newline",
            )));
        }
        let kind = classify(&key, global, offset)?;
        let kept = self.read_value(body, value_len - 1, kind, &key, &mut values.warning)?;
        self.fill(body, 1).map_err(Stop::Fatal)?;
        if body.ahead.remove(0) != b'\n' {
            return Err(Stop::Warning(bad(
                offset,
                "Malformed pax attributes: a record does not end in a newline",
            )));
        }
        if let Some(kept) = kept {
            apply(values, &key, kept, offset)?;
        }
        Ok(())
    }

    /// Makes at least `n` body bytes (no more than are left) read ahead.
    fn fill(&mut self, body: &mut Body, n: usize) -> Result<(), Error> {
        if body.ahead.len() >= n {
            return Ok(());
        }
        let more = ((n - body.ahead.len()) as u64).min(body.unread) as usize;
        let start = body.ahead.len();
        body.ahead.resize(start + more, 0);
        let got = self.read_raw(&mut body.ahead[start..])?;
        body.unread -= got as u64;
        if got < more {
            return Err(Error::tar(
                TarErrorKind::TruncatedData,
                body.offset,
                format!("Truncated tar archive detected while reading pax attribute (header at tar offset {})", body.offset),
            ));
        }
        Ok(())
    }

    /// Skips the rest of a body.
    fn skip_body(&mut self, body: &mut Body) -> Result<(), Error> {
        body.ahead.clear();
        self.pending_data = body.unread;
        self.pending_pad = 0;
        self.copy_data(&mut std::io::sink())?;
        body.unread = 0;
        Ok(())
    }

    /// Reads one value of `len` bytes as `kind` says; returns it when kept.
    /// A value libarchive only warns about sets `warning` (the record is
    /// read whole and the next one follows, as in libarchive).
    fn read_value(
        &mut self,
        body: &mut Body,
        len: usize,
        kind: Value,
        key: &[u8],
        warning: &mut Option<Error>,
    ) -> Result<Option<Vec<u8>>, Stop> {
        let offset = body.offset;
        let key_text = escape_name(key);
        if len as u64 > body.left() {
            return Err(Stop::Warning(bad(
                offset,
                format!("Ignoring malformed pax attribute: {key_text} runs past the body"),
            )));
        }
        match (kind, key) {
            (Value::Keep, b"path" | b"linkpath") if len > MAX_PATH => {
                self.skip_value(body, len).map_err(Stop::Fatal)?;
                warning.get_or_insert(bad(
                    offset,
                    format!("{key_text} of {len} bytes is longer than libarchive's 1 MiB limit"),
                ));
                return Ok(None);
            }
            (Value::Keep, _) if len > MAX_NUMBER && !matches!(key, b"path" | b"linkpath") => {
                return Err(Stop::Fatal(bad(
                    offset,
                    format!(
                        "{key_text}: a value of {len} bytes (libarchive reads numbers of up to 64)"
                    ),
                )));
            }
            // libarchive's `pax_attribute_read_time` fails a time of more
            // than 128 bytes ("Ignoring malformed pax mtime", fatal).
            (Value::Time, _) if len > MAX_TIME => {
                return Err(Stop::Fatal(bad(
                    offset,
                    format!("Ignoring malformed pax {key_text}: a time of {len} bytes (libarchive reads at most {MAX_TIME})"),
                )));
            }
            // These libarchive drops with a warning, which the runtime takes
            // as a failure of the header.
            (_, _) if key.starts_with(XATTR) && key.len() - XATTR.len() > MAX_XATTR_NAME => {
                self.skip_value(body, len).map_err(Stop::Fatal)?;
                warning.get_or_insert(bad(
                    offset,
                    format!("pax {key_text}: an xattr name of {} bytes (libarchive drops names over {MAX_XATTR_NAME} bytes, with a warning)", key.len() - XATTR.len()),
                ));
                return Ok(None);
            }
            (_, _) if key.starts_with(XATTR) && len as u64 >= MAX_XATTR_VALUE => {
                self.skip_value(body, len).map_err(Stop::Fatal)?;
                warning.get_or_insert(bad(
                    offset,
                    format!("Unreasonably large xattr: {len} > {MAX_XATTR_VALUE}"),
                ));
                return Ok(None);
            }
            (_, b"SCHILY.fflags") if len >= MAX_FFLAGS => {
                self.skip_value(body, len).map_err(Stop::Fatal)?;
                warning.get_or_insert(bad(
                    offset,
                    format!("pax SCHILY.fflags of {len} bytes (libarchive skips {MAX_FFLAGS} or more, with a warning)"),
                ));
                return Ok(None);
            }
            (Value::Ascii, _) if len > MAX_NAME => {
                return Err(Stop::Fatal(unsupported(offset, format!("pax {key_text} of {len} bytes (libarchive warns past a limit between 64 KiB and 1 MiB)"))));
            }
            _ => {}
        }
        let mut kept = Vec::new();
        let mut time = TimeCheck::default();
        let mut remaining = len;
        while remaining > 0 {
            if body.ahead.is_empty() {
                self.fill(body, remaining.min(64 << 10))
                    .map_err(Stop::Fatal)?;
            }
            let n = remaining.min(body.ahead.len());
            let piece: Vec<u8> = body.ahead.drain(..n).collect();
            remaining -= n;
            match kind {
                Value::Keep => kept.extend_from_slice(&piece),
                Value::Ascii => {
                    if !piece.is_ascii() {
                        return Err(Stop::Fatal(unsupported(offset, format!("pax {key_text} is not ASCII: libarchive converts it from UTF-8 to the runtime's locale, which may fail"))));
                    }
                }
                Value::Time => time.feed(&piece),
                Value::Skip => {}
            }
        }
        Ok(match kind {
            Value::Keep => Some(kept),
            Value::Time => match time.seconds() {
                Some(seconds) if key == b"mtime" => Some(seconds.to_string().into_bytes()),
                Some(_) => None,
                None => {
                    warning
                        .get_or_insert(bad(offset, format!("Ignoring malformed pax {key_text}")));
                    None
                }
            },
            Value::Ascii | Value::Skip => None,
        })
    }

    /// Skips `len` value bytes.
    fn skip_value(&mut self, body: &mut Body, len: usize) -> Result<(), Error> {
        let from_ahead = len.min(body.ahead.len());
        body.ahead.drain(..from_ahead);
        let rest = (len - from_ahead) as u64;
        self.pending_data = rest;
        self.pending_pad = 0;
        self.copy_data(&mut std::io::sink())?;
        body.unread -= rest;
        Ok(())
    }
}

/// The longest pax time libarchive reads (`pax_attribute_read_time`).
const MAX_TIME: usize = 128;
/// The prefix of a pax extended attribute's key.
const XATTR: &[u8] = b"SCHILY.xattr.";
/// The longest xattr name libarchive keeps.
const MAX_XATTR_NAME: usize = 128;
/// The xattr value libarchive finds unreasonably large (`xattr_limit`).
const MAX_XATTR_VALUE: u64 = 16 << 20;
/// The `SCHILY.fflags` length libarchive skips (`fflags_limit`).
const MAX_FFLAGS: usize = 512;

/// A pax time checked as it streams: `-?[0-9]*(\.[0-9]*)?`, the whole part
/// within an `i64`.
#[derive(Default)]
struct TimeCheck {
    whole: Vec<u8>,
    dot: bool,
    bad: bool,
}

impl TimeCheck {
    fn feed(&mut self, bytes: &[u8]) {
        for &b in bytes {
            match b {
                b'.' if !self.dot => self.dot = true,
                _ if self.dot => self.bad |= !b.is_ascii_digit(),
                _ if self.whole.len() < 24 => self.whole.push(b),
                _ => self.bad = true,
            }
        }
    }

    fn seconds(&self) -> Option<i64> {
        if self.bad {
            return None;
        }
        pax_time(&self.whole)
    }
}

/// A whole pax body's records (key, value without its newline) as
/// libarchive splits them; `None` where the body is not in that form.
pub fn pax_records(body: &[u8]) -> Option<Vec<(Vec<u8>, Vec<u8>)>> {
    let mut records = Vec::new();
    let mut rest = body;
    while !rest.is_empty() {
        let window = &rest[..rest.len().min(MAX_PROLOG)];
        let (prolog, key, line) = parse_prolog(window, rest.len() as u64, 0).ok()?;
        let value = rest[..line].get(prolog..)?.strip_suffix(b"\n")?;
        records.push((key, value.to_vec()));
        rest = &rest[line..];
    }
    Some(records)
}

/// Parses a record's prolog in `window` (its first bytes; `left` bytes of
/// the body remain): returns the prolog's length (through `=`), the key
/// and the record's length.
fn parse_prolog(window: &[u8], left: u64, offset: u64) -> Result<(usize, Vec<u8>, usize), Stop> {
    let warn = |why: String| Stop::Warning(bad(offset, why));
    let mut line: usize = 0;
    let mut at = 0;
    loop {
        let Some(&b) = window.get(at) else {
            return Err(warn(
                "Ignoring malformed pax attributes: overlarge attribute size field".into(),
            ));
        };
        at += 1;
        if b == b' ' {
            break;
        }
        if !b.is_ascii_digit() {
            return Err(warn(format!(
                "Ignoring malformed pax attributes: malformed attribute size field (byte {b:#04x})"
            )));
        }
        line = line * 10 + usize::from(b - b'0');
        if line > MAX_LINE {
            return Err(warn(format!(
                "Ignoring malformed pax attribute: size > {MAX_LINE}"
            )));
        }
    }
    if line as u64 > left {
        return Err(warn(format!(
            "Ignoring malformed pax attribute: {line} > {left}"
        )));
    }
    let bound = window.len().min(line);
    if at >= bound || window[at] == b'=' {
        return Err(warn(
            "Ignoring malformed pax attributes: empty name found".into(),
        ));
    }
    let start = at;
    loop {
        if at >= bound {
            if bound < line && window.len() == MAX_PROLOG {
                return Err(Stop::Fatal(unsupported(offset, "a pax record whose length and key are longer than 512 bytes (whether libarchive reads it depends on its buffering)")));
            }
            return Err(warn(
                "Ignoring malformed pax attributes: overlarge attribute name".into(),
            ));
        }
        if window[at] == b'=' {
            break;
        }
        at += 1;
    }
    let key = window[start..at].to_vec();
    Ok((at + 1, key, line))
}

/// How the value of `key` is read, or the refusal of the key.
fn classify(key: &[u8], global: bool, offset: u64) -> Result<Value, Stop> {
    let key_text = escape_name(key);
    let starts = |p: &[u8]| key.starts_with(p);
    let refuse = |what: String| Err(Stop::Fatal(unsupported(offset, what)));
    if global {
        // libarchive fails a `g` header with any per-file attribute; of
        // the others only these are known to be ignored.
        if key == b"comment" || key == b"charset" || starts(b"realtime.") || starts(b"security.") {
            return Ok(Value::Skip);
        }
        return refuse(format!("pax global attribute {key_text:?} (libarchive refuses the per-file ones: \"Unsupported pax global extended header attribute\")"));
    }
    Ok(match key {
        b"path" | b"linkpath" | b"size" | b"uid" | b"gid" | b"SCHILY.dev" | b"SCHILY.ino"
        | b"SCHILY.nlink" | b"SCHILY.devmajor" | b"SCHILY.devminor" | b"hdrcharset" => Value::Keep,
        b"mtime" | b"atime" | b"ctime" | b"LIBARCHIVE.creationtime" => Value::Time,
        b"uname" | b"gname" => Value::Ascii,
        _ if starts(b"GNU.sparse") || key == b"SCHILY.realsize" || key == b"SUN.holesdata" => {
            return refuse(format!(
                "pax {key_text} (sparse files are not read as libarchive reads them)"
            ))
        }
        _ if starts(b"SCHILY.acl.") => {
            return refuse(format!(
                "pax {key_text} (ACLs are not parsed as libarchive parses them)"
            ))
        }
        b"LIBARCHIVE.symlinktype" => return refuse(format!("pax {key_text}")),
        _ => Value::Skip,
    })
}

/// Applies a kept value.
fn apply(values: &mut PaxValues, key: &[u8], value: Vec<u8>, offset: u64) -> Result<(), Stop> {
    let key_text = escape_name(key);
    match key {
        b"path" | b"linkpath" => {
            // A C string: what follows a NUL is lost.
            let end = value.iter().position(|&b| b == 0).unwrap_or(value.len());
            let text = &value[..end];
            if !text.is_ascii() {
                return Err(Stop::Fatal(unsupported(offset, format!("pax {key_text} is not ASCII: libarchive converts it from UTF-8 to the runtime's locale, which may fail"))));
            }
            // The last `path` record wins, an empty one too: an empty path
            // then leaves the header's name (the caller's check).
            if key == b"path" {
                values.path = Some(text.to_vec());
            }
        }
        b"size" => match pax_number(&value) {
            Some(n) => values.size = Some(n),
            None => {
                return Err(Stop::Fatal(bad(
                    offset,
                    format!(
                        "Tar size attribute overflow: size={:?}",
                        escape_name(&value)
                    ),
                )))
            }
        },
        b"hdrcharset" => {
            if value != b"BINARY" && value != b"ISO-IR 10646 2000 UTF-8" {
                let why = format!(
                    "hdrcharset {:?} is not one libarchive knows",
                    escape_name(&value)
                );
                values.warning.get_or_insert(bad(offset, why));
            }
        }
        b"mtime" => {
            values.mtime = std::str::from_utf8(&value)
                .ok()
                .and_then(|s| s.parse().ok());
        }
        _ => {
            if pax_number(&value).is_none() {
                let why = format!(
                    "{key_text}={:?} is negative or too large",
                    escape_name(&value)
                );
                values.warning.get_or_insert(bad(offset, why));
            }
        }
    }
    Ok(())
}
