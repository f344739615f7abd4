//! pax extended headers (`x`, Sun `X`, global `g`) as libarchive 3.8 reads
//! them: record by record from the stream (a body may be up to 1 GiB, so it
//! is never held whole), with libarchive's checks on each record and on the
//! values the runtime's reading depends on.
//!
//! Any record libarchive only warns about fails here: the runtime treats a
//! warning from `archive_read_next_header` as a failed load. Constructs
//! whose reading depends on more than the bytes (the process locale) or
//! that this reader does not model (sparse files, ACLs) are refused by name.

use std::io::Read;

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

/// What an `x` header sets for the entry after it.
#[derive(Debug, Default)]
pub(super) struct PaxValues {
    /// `path`, up to its first NUL, when not empty.
    pub path: Option<Vec<u8>>,
    /// `size`.
    pub size: Option<i64>,
    /// `mtime`, whole seconds.
    pub mtime: Option<i64>,
}

/// How one attribute's value is read.
enum Value {
    /// Kept (at most this many bytes; longer fails with the message).
    Keep(usize, &'static str),
    /// Checked byte by byte to be ASCII (at most this many).
    Ascii(usize),
    /// A pax time.
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

impl<R: Read> TarReader<R> {
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
        let mut left = size as u64;
        let mut values = PaxValues::default();
        while left > 0 {
            let window = self.read_pax_bytes(left.min(MAX_PROLOG as u64) as usize, offset)?;
            let (prolog, key, line) = parse_prolog(&window, left, offset)?;
            // The rest of the window is the start of the value.
            let mut pending = window[prolog..].to_vec();
            left -= prolog as u64;
            let value_len = line - prolog;
            if value_len == 0 {
                return Err(bad(
                    offset,
                    "Malformed pax attributes: a record without a value or newline",
                ));
            }
            let value_len = value_len - 1;
            let kind = classify(&key, global, offset)?;
            let kept = self.read_value(&mut pending, value_len, kind, &key, offset)?;
            left -= value_len as u64;
            // The newline after the value.
            let newline = match pending.first() {
                Some(&b) => {
                    pending.remove(0);
                    b
                }
                None => self.read_pax_bytes(1, offset)?[0],
            };
            if newline != b'\n' {
                return Err(bad(
                    offset,
                    "Malformed pax attributes: a record does not end in a newline",
                ));
            }
            left -= 1;
            // Put back what was read past this record.
            if !pending.is_empty() {
                self.pushback(pending);
            }
            if let Some(kept) = kept {
                apply(&mut values, &key, kept, offset)?;
            }
        }
        self.pending_pad = super::padding(size as u64);
        self.skip_padding()?;
        Ok(values)
    }

    /// Reads `n` body bytes (fewer only when the body has fewer: never).
    fn read_pax_bytes(&mut self, n: usize, offset: u64) -> Result<Vec<u8>, Error> {
        let mut buf = vec![0u8; n];
        let got = self.read_raw(&mut buf)?;
        if got < n {
            return Err(Error::tar(
                TarErrorKind::TruncatedData,
                offset,
                format!("Truncated tar archive detected while reading pax attribute (header at tar offset {offset})"),
            ));
        }
        Ok(buf)
    }

    /// Reads one value of `len` bytes (starting with `pending`), as `kind`
    /// says; returns it when kept. Bytes of `pending` past the value stay
    /// in it.
    fn read_value(
        &mut self,
        pending: &mut Vec<u8>,
        len: usize,
        kind: Value,
        key: &[u8],
        offset: u64,
    ) -> Result<Option<Vec<u8>>, Error> {
        let key_text = escape_name(key);
        let limit = match kind {
            Value::Keep(limit, why) if len > limit => return Err(bad(offset, format!("{key_text}: {why}"))),
            Value::Ascii(limit) if len > limit => {
                return Err(unsupported(offset, format!("pax {key_text} of {len} bytes (libarchive warns past a limit between 64 KiB and 1 MiB)")))
            }
            Value::Keep(limit, _) | Value::Ascii(limit) => limit,
            Value::Time => usize::MAX,
            Value::Skip => 0,
        };
        let mut kept = Vec::with_capacity(len.min(limit).min(1 << 16));
        let mut time = TimeCheck::default();
        let mut remaining = len;
        let mut chunk = Vec::new();
        while remaining > 0 {
            let piece: Vec<u8> = if !pending.is_empty() {
                let n = remaining.min(pending.len());
                pending.drain(..n).collect()
            } else {
                let n = remaining.min(64 << 10);
                chunk.resize(n, 0);
                let got = self.read_raw(&mut chunk)?;
                if got < n {
                    return Err(Error::tar(
                        TarErrorKind::TruncatedData,
                        offset,
                        format!("Truncated tar archive detected while reading pax attribute {key_text} (header at tar offset {offset})"),
                    ));
                }
                chunk.clone()
            };
            remaining -= piece.len();
            match kind {
                Value::Keep(..) => kept.extend_from_slice(&piece),
                Value::Ascii(_) => {
                    if !piece.is_ascii() {
                        return Err(unsupported(offset, format!("pax {key_text} is not ASCII: libarchive converts it from UTF-8 to the runtime's locale, which may fail")));
                    }
                }
                Value::Time => {
                    for &b in &piece {
                        if time.whole.len() < 64 && !time.dot && b != b'.' {
                            time.whole.push(b);
                        } else if b == b'.' && !time.dot {
                            time.dot = true;
                        } else if !b.is_ascii_digit() {
                            time.bad = true;
                        }
                    }
                    if time.whole.len() >= 64 {
                        time.bad = true;
                    }
                }
                Value::Skip => {}
            }
        }
        Ok(match kind {
            Value::Keep(..) => Some(kept),
            Value::Time => {
                let ok = !time.bad && pax_time(&time.whole).is_some();
                if !ok {
                    return Err(bad(offset, format!("Ignoring malformed pax {key_text}")));
                }
                if key == b"mtime" {
                    Some(time.whole)
                } else {
                    None
                }
            }
            Value::Ascii(_) | Value::Skip => None,
        })
    }
}

/// The whole part of a pax time, checked as it streams.
#[derive(Default)]
struct TimeCheck {
    whole: Vec<u8>,
    dot: bool,
    bad: bool,
}

/// Parses a record's prolog in `window` (its first bytes; `left` bytes of
/// the body remain): returns the prolog's length (through `=`), the key
/// and the record's length.
fn parse_prolog(window: &[u8], left: u64, offset: u64) -> Result<(usize, Vec<u8>, usize), Error> {
    let mut line: usize = 0;
    let mut at = 0;
    loop {
        let Some(&b) = window.get(at) else {
            return Err(bad(
                offset,
                "Ignoring malformed pax attributes: overlarge attribute size field",
            ));
        };
        at += 1;
        if b == b' ' {
            break;
        }
        if !b.is_ascii_digit() {
            return Err(bad(offset, format!("Ignoring malformed pax attributes: malformed attribute size field (byte {b:#04x})")));
        }
        line = line * 10 + usize::from(b - b'0');
        if line > MAX_LINE {
            return Err(bad(
                offset,
                format!("Ignoring malformed pax attribute: size > {MAX_LINE}"),
            ));
        }
    }
    if line as u64 > left {
        return Err(bad(
            offset,
            format!("Ignoring malformed pax attribute: {line} > {left}"),
        ));
    }
    let bound = window.len().min(line);
    if at >= bound || window[at] == b'=' {
        return Err(bad(
            offset,
            "Ignoring malformed pax attributes: empty name found",
        ));
    }
    let start = at;
    loop {
        if at >= bound {
            if bound < line && window.len() == MAX_PROLOG {
                return Err(unsupported(offset, "a pax record whose length and key are longer than 512 bytes (whether libarchive reads it depends on its buffering)"));
            }
            return Err(bad(
                offset,
                "Ignoring malformed pax attributes: overlarge attribute name",
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
fn classify(key: &[u8], global: bool, offset: u64) -> Result<Value, Error> {
    let key_text = escape_name(key);
    let starts = |p: &[u8]| key.starts_with(p);
    if global {
        // libarchive fails a `g` header with any per-file attribute; of
        // the others only these are known to be ignored.
        if key == b"comment" || key == b"charset" || starts(b"realtime.") || starts(b"security.") {
            return Ok(Value::Skip);
        }
        return Err(unsupported(offset, format!("pax global attribute {key_text:?} (libarchive refuses the per-file ones: \"Unsupported pax global extended header attribute\")")));
    }
    Ok(match key {
        b"path" | b"linkpath" => Value::Keep(MAX_PATH, "longer than libarchive's 1 MiB limit"),
        b"size" | b"uid" | b"gid" | b"SCHILY.dev" | b"SCHILY.ino" | b"SCHILY.nlink"
        | b"SCHILY.devmajor" | b"SCHILY.devminor" => {
            Value::Keep(64, "a number of more than 64 bytes")
        }
        b"hdrcharset" => Value::Keep(64, "not BINARY or ISO-IR 10646 2000 UTF-8"),
        b"mtime" | b"atime" | b"ctime" | b"LIBARCHIVE.creationtime" => Value::Time,
        b"uname" | b"gname" => Value::Ascii(MAX_NAME),
        _ if starts(b"GNU.sparse.") || key == b"SCHILY.realsize" || key == b"SUN.holesdata" => {
            return Err(unsupported(
                offset,
                format!("pax {key_text} (sparse files are not read as libarchive reads them)"),
            ))
        }
        _ if starts(b"SCHILY.acl.") => {
            return Err(unsupported(
                offset,
                format!("pax {key_text} (ACLs are not parsed as libarchive parses them)"),
            ))
        }
        b"LIBARCHIVE.symlinktype" => return Err(unsupported(offset, format!("pax {key_text}"))),
        _ => Value::Skip,
    })
}

/// Applies a kept value.
fn apply(values: &mut PaxValues, key: &[u8], value: Vec<u8>, offset: u64) -> Result<(), Error> {
    let key_text = escape_name(key);
    match key {
        b"path" | b"linkpath" => {
            // A C string: what follows a NUL is lost.
            let end = value.iter().position(|&b| b == 0).unwrap_or(value.len());
            let text = &value[..end];
            if !text.is_ascii() {
                return Err(unsupported(offset, format!("pax {key_text} is not ASCII: libarchive converts it from UTF-8 to the runtime's locale, which may fail")));
            }
            if key == b"path" && !text.is_empty() {
                values.path = Some(text.to_vec());
            }
        }
        b"size" => match pax_number(&value) {
            Some(n) => values.size = Some(n),
            None => {
                return Err(bad(
                    offset,
                    format!(
                        "Tar size attribute overflow: size={:?}",
                        escape_name(&value)
                    ),
                ))
            }
        },
        b"hdrcharset" => {
            if value != b"BINARY" && value != b"ISO-IR 10646 2000 UTF-8" {
                return Err(bad(
                    offset,
                    format!(
                        "hdrcharset {:?} is not one libarchive knows",
                        escape_name(&value)
                    ),
                ));
            }
        }
        b"mtime" => values.mtime = pax_time(&value),
        _ => {
            if pax_number(&value).is_none() {
                return Err(bad(
                    offset,
                    format!(
                        "{key_text}={:?} is negative or too large",
                        escape_name(&value)
                    ),
                ));
            }
        }
    }
    Ok(())
}
