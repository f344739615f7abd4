//! A streaming tar reader that reads a payload as libarchive 3.8's tar
//! reader does (the runtime's), checked entry by entry against the real
//! library (`tests/libarchive_differential.rs`): ustar, GNU and v7 headers,
//! pax `x`/`X`/`g`, GNU `L`/`K`/`V`/`D`, lenient octal and saturating
//! base-256 numbers, and libarchive's rules for repeated special headers,
//! hard-link and directory sizes and the end of the archive.
//!
//! What libarchive reads differently depending on more than the bytes (the
//! process locale for non-ASCII pax names) or what this reader does not
//! model (sparse files, Solaris ACLs, the GNU `realsize` field) is refused
//! with [`TarErrorKind::Unsupported`], never read another way.
//!
//! It reads one 512-byte block at a time, never holds a member's data, and
//! bounds every special header it must buffer. Errors say what is wrong and
//! at which offset of the tar stream.

mod number;
mod pax;

pub use number::header_field;
pub use pax::pax_records;

use neff_schema::tar as fields;
use std::io::{self, BufRead, Read, Write};

use crate::error::{Error, TarErrorKind};
use pax::unsupported;

/// Size of a tar block.
pub const BLOCK: usize = fields::BLOCK;

/// Largest `L`/`K` special header libarchive reads ("Special header too
/// large" past 1 MiB).
pub const MAX_SPECIAL_HEADER: u64 = 1 << 20;

/// libarchive refuses an entry of 2^60 bytes or more ("Tar entry size overflow").
const MAX_ENTRY: i64 = 1 << 60;

/// libarchive's bid on the first header (the format is chosen by it): the
/// type flag a NUL, digit or letter, and the mode, uid, gid, size, mtime and
/// device fields each a base-256 value (first byte NUL, 0x80 or 0xFF) or
/// octal (leading spaces, octal digits, then only spaces and NULs);
/// otherwise "Unrecognized archive format".
fn bid(block: &[u8; BLOCK]) -> Result<(), Error> {
    const FIELDS: [(&str, usize, usize); 7] = [
        ("mode", 100, 8),
        ("uid", 108, 8),
        ("gid", 116, 8),
        ("size", 124, 12),
        ("mtime", 136, 12),
        ("devmajor", 329, 8),
        ("devminor", 337, 8),
    ];
    let number_ok = |field: &[u8]| {
        if matches!(field[0], 0 | 0x80 | 0xFF) {
            return true;
        }
        let rest = field.iter().skip_while(|&&b| b == b' ');
        let mut rest = rest.skip_while(|b| (b'0'..=b'7').contains(*b));
        rest.all(|&b| b == b' ' || b == 0)
    };
    let bad_field = FIELDS
        .iter()
        .find(|(_, at, len)| !number_ok(&block[*at..*at + *len]));
    let type_ok =
        block[fields::TYPE_FLAG.at] == 0 || block[fields::TYPE_FLAG.at].is_ascii_alphanumeric();
    if type_ok && bad_field.is_none() {
        return Ok(());
    }
    let why = match bad_field {
        Some((name, at, len)) => format!(
            "its {name} field {:?} is neither octal nor base-256",
            escape_name(&block[*at..*at + *len])
        ),
        None => format!(
            "its type flag {:#04x} is not a digit or letter",
            block[fields::TYPE_FLAG.at]
        ),
    };
    Err(Error::tar(
        TarErrorKind::Unrecognized,
        0,
        format!("Unrecognized archive format: libarchive does not bid on the first header: {why}"),
    ))
}

/// What kind of file a tar entry describes, after libarchive's interpretation.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum EntryKind {
    /// A regular file (`'0'`, `'\0'`, `'7'`, unknown type flags, hard links with data).
    File,
    /// A directory (`'5'`, GNU `'D'`, or an entry whose name ends in `/`).
    Directory,
    /// A symbolic link (`'2'`); its size is forced to 0.
    Symlink,
    /// A hard link (`'1'`) with no data.
    Hardlink,
    /// A character or block device or a FIFO (`'3'`, `'4'`, `'6'`); size forced to 0.
    Special,
}

impl EntryKind {
    /// A short lower-case name.
    pub fn name(self) -> &'static str {
        match self {
            EntryKind::File => "file",
            EntryKind::Directory => "directory",
            EntryKind::Symlink => "symlink",
            EntryKind::Hardlink => "hardlink",
            EntryKind::Special => "special",
        }
    }
}

/// The tar dialect of a header, as libarchive tells them apart.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Dialect {
    /// Magic starting `"ustar"` (but not GNU's): the prefix field extends the name.
    Ustar,
    /// GNU: magic and version exactly `"ustar  \0"`.
    Gnu,
    /// No magic: pre-POSIX v7 tar.
    V7,
}

impl Dialect {
    /// The dialect of a header block.
    pub fn of(block: &[u8; BLOCK]) -> Dialect {
        if &block[fields::MAGIC_VERSION.range()] == fields::GNU_MAGIC {
            Dialect::Gnu
        } else if block[fields::MAGIC.range()].starts_with(b"ustar") {
            Dialect::Ustar
        } else {
            Dialect::V7
        }
    }
}

/// One entry, with every special header before it already applied.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Entry {
    /// The path name as raw bytes (long names and pax `path` applied).
    pub name: Vec<u8>,
    /// The link target for symlinks and hard links.
    pub link_name: Vec<u8>,
    /// What kind of entry this is.
    pub kind: EntryKind,
    /// Size in bytes of the data that follows (0 where libarchive reads no
    /// data: links without data, devices, most directories).
    pub size: i64,
    /// The raw type flag byte.
    pub type_flag: u8,
    /// Offset of this entry's own header block in the tar stream.
    pub header_offset: u64,
    /// The dialect of this entry's header.
    pub dialect: Dialect,
    /// Modification time in seconds (pax `mtime`, whole seconds, else the
    /// header field).
    pub mtime: Option<i64>,
}

impl Entry {
    /// The key the runtime stores the entry under in its member map: the
    /// name without a leading `./`.
    pub fn key(&self) -> &[u8] {
        self.name.strip_prefix(b"./").unwrap_or(&self.name)
    }
}

/// The stream ended after special headers, before their entry.
fn dangling(kind: char, offset: u64) -> Error {
    let message = format!(
        "Damaged tar archive (end-of-archive within a sequence of headers): {kind:?} header at tar offset {offset} is not followed by an entry"
    );
    Error::tar(TarErrorKind::DanglingSpecial, offset, message)
}

/// The stream ended after `got` of a body's `size` bytes, which start at `offset`.
fn truncated_data(size: u64, got: u64, offset: u64) -> Error {
    let message =
        format!("truncated data: {got} of {size} bytes present (data at tar offset {offset})");
    Error::tar(TarErrorKind::TruncatedData, offset, message)
}

/// A second special header of a kind libarchive allows once per entry.
fn redundant(kind: char, offset: u64) -> Error {
    let message =
        format!("Redundant {kind:?} header at tar offset {offset} (libarchive refuses the entry)");
    Error::tar(TarErrorKind::Redundant, offset, message)
}

/// Reads a tar stream entry by entry.
pub struct TarReader<R> {
    inner: R,
    offset: u64,
    /// Bytes of the current entry's data (plus padding) not yet consumed.
    pending_data: u64,
    pending_pad: u64,
    current: Option<Entry>,
    done: bool,
    /// Offset of the zero block that ended the archive, once read.
    end_marker: Option<u64>,
    /// The archive format libarchive has settled on so far (it decides how
    /// a hard link's size is read).
    format: ArchiveFormat,
    /// Whether the header blocks are kept ([`TarReader::recording_headers`]).
    record: bool,
    /// The header blocks read by the last [`TarReader::next_entry`].
    headers: Vec<StoredHeader>,
    /// A special header's body while it is read (recording only).
    capture: Option<Vec<u8>>,
    /// Whether any padding read was not all zero (recording only).
    nonzero_padding: bool,
}

/// A header block as stored, for tools that reproduce the framing.
#[derive(Debug, Clone)]
pub struct StoredHeader {
    /// Its offset in the tar stream.
    pub offset: u64,
    /// The block.
    pub block: [u8; BLOCK],
    /// A special header's body (`x`, `g`, `L`, `K`, `V`): `None` for the
    /// entry's own header, and for a body over [`MAX_SPECIAL_HEADER`].
    pub body: Option<Vec<u8>>,
}

impl<R> std::fmt::Debug for TarReader<R> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TarReader")
            .field("offset", &self.offset)
            .field("pending_data", &self.pending_data)
            .field("done", &self.done)
            .field("end_marker", &self.end_marker)
            .finish_non_exhaustive()
    }
}

/// What the special headers before an entry set.
#[derive(Default)]
struct Specials {
    /// The name an `L` body gives.
    long_name: Option<Vec<u8>>,
    /// The name a pax `path` gives.
    pax_path: Option<Vec<u8>>,
    /// The link target a `K` body gives.
    link: Option<Vec<u8>>,
    /// pax `size`.
    size: Option<i64>,
    /// pax `mtime`.
    mtime: Option<i64>,
    /// The kinds seen (each allowed once).
    seen: Vec<u8>,
    /// The first special header, for the error when the stream ends.
    first: Option<(char, u64)>,
    /// Whether a true end of stream now fails (after any special header but
    /// `V` and `g`).
    eof_fatal: bool,
    /// A warning libarchive gives with the entry (the runtime then fails);
    /// dropped when the end-of-archive marker comes instead.
    warning: Option<Error>,
}

impl Specials {
    fn warn(&mut self, warning: Option<Error>) {
        if let Some(w) = warning {
            self.warning.get_or_insert(w);
        }
    }
}

/// libarchive's `archive_format` while it reads headers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum ArchiveFormat {
    Unknown,
    /// v7 (no magic).
    Tar,
    Ustar,
    Gnu,
    /// Set by pax headers; kept by ustar headers, reset by GNU and v7 ones.
    Pax,
}

impl<R: BufRead> TarReader<R> {
    /// Reads tar data from `inner`.
    pub fn new(inner: R) -> Self {
        TarReader {
            inner,
            offset: 0,
            pending_data: 0,
            pending_pad: 0,
            current: None,
            done: false,
            end_marker: None,
            format: ArchiveFormat::Unknown,
            record: false,
            headers: Vec::new(),
            capture: None,
            nonzero_padding: false,
        }
    }

    /// Keeps the header blocks (and special headers' bodies) each
    /// [`TarReader::next_entry`] reads, for [`TarReader::headers`].
    pub fn recording_headers(mut self) -> Self {
        self.record = true;
        self
    }

    /// The header blocks the last [`TarReader::next_entry`] read, in order:
    /// its special headers, then the entry's own header (when recording).
    pub fn headers(&self) -> &[StoredHeader] {
        &self.headers
    }

    /// Whether any padding read so far was not all zero (when recording).
    pub fn nonzero_padding(&self) -> bool {
        self.nonzero_padding
    }

    /// Ends the capture of a special header's body, keeping `block`.
    fn keep_header(&mut self, offset: u64, block: [u8; BLOCK], special: bool) {
        let body = self.capture.take().filter(|_| special);
        if self.record {
            self.headers.push(StoredHeader {
                offset,
                block,
                body,
            });
        }
    }

    /// Appends bytes read to the body being captured.
    fn captured(&mut self, bytes: &[u8]) {
        capture_into(&mut self.capture, bytes);
    }

    /// Offset of the zero block that ended the archive (the end-of-archive
    /// marker), once read; `None` before, or when the stream simply ended.
    pub fn end_marker(&self) -> Option<u64> {
        self.end_marker
    }

    /// Offset in the tar stream of the next unread byte.
    pub fn offset(&self) -> u64 {
        self.offset
    }

    /// The underlying reader.
    pub fn into_inner(self) -> R {
        self.inner
    }

    /// Advances to the next entry, skipping any unread data of the current one.
    /// Returns `None` at the end-of-archive marker (a zero block) or when the
    /// stream ends cleanly on a block boundary, as libarchive does.
    pub fn next_entry(&mut self) -> Result<Option<Entry>, Error> {
        self.skip_data()?;
        self.current = None;
        self.headers.clear();
        if self.done {
            return Ok(None);
        }
        let mut specials = Specials::default();
        // The special header whose body is being captured (recording only).
        let mut special: Option<(u64, [u8; BLOCK])> = None;
        loop {
            if let Some((offset, block)) = special.take() {
                self.keep_header(offset, block, true);
            }
            let header_offset = self.offset;
            let Some(block) = self.read_header_block()? else {
                if let (true, Some((kind, offset))) = (specials.eof_fatal, specials.first) {
                    return Err(dangling(kind, offset));
                }
                self.done = true;
                return Ok(None);
            };
            if block.iter().all(|&b| b == 0) {
                // libarchive also consumes a second zero block when present;
                // either way this is the end of the archive, also right after
                // special headers.
                self.done = true;
                self.end_marker = Some(header_offset);
                return Ok(None);
            }
            verify_checksum(&block, header_offset)?;
            if header_offset == 0 {
                bid(&block)?;
            }
            let type_flag = block[fields::TYPE_FLAG.at];
            let kind = type_flag as char;
            let size = number::header_field(&block[fields::SIZE.range()]);
            if !matches!(type_flag, b'A' | b'g' | b'K' | b'L' | b'V' | b'X' | b'x') {
                self.keep_header(header_offset, block, false);
                let entry = self.make_entry(&block, header_offset, size, specials)?;
                return Ok(Some(entry));
            }
            if self.record {
                self.capture = Some(Vec::new());
                special = Some((header_offset, block));
            }
            // 'x' and 'X' share one slot. A repeated x or g fails; a repeated
            // L, K or V is a warning and the later one applies.
            let slot = if type_flag == b'X' { b'x' } else { type_flag };
            if specials.seen.contains(&slot) {
                if matches!(slot, b'x' | b'g' | b'A') {
                    return Err(redundant(kind, header_offset));
                }
                specials.warn(Some(redundant(kind, header_offset)));
            }
            specials.seen.push(slot);
            specials.first.get_or_insert((kind, header_offset));
            match type_flag {
                b'A' => {
                    return Err(unsupported(
                        header_offset,
                        "a Solaris ACL header ('A'): libarchive parses its ACL text, this reader does not",
                    ))
                }
                b'g' => {
                    self.format = ArchiveFormat::Pax;
                    let values = self.read_pax(size, header_offset, true)?;
                    specials.warn(values.warning);
                }
                b'x' | b'X' => {
                    self.format = ArchiveFormat::Pax;
                    let values = self.read_pax(size, header_offset, false)?;
                    specials.warn(values.warning);
                    if let Some(path) = values.path.filter(|p| !p.is_empty()) {
                        specials.pax_path = Some(path);
                    }
                    specials.size = values.size.or(specials.size);
                    specials.mtime = values.mtime.or(specials.mtime);
                }
                b'L' | b'K' => {
                    // A GNU long name or link makes libarchive read the
                    // archive as GNU tar from here on.
                    self.format = ArchiveFormat::Gnu;
                    let Some(body) = self.read_special(size, kind, header_offset)? else {
                        let message = format!("Special header too large: {kind:?} header of {size} bytes at tar offset {header_offset} (limit {MAX_SPECIAL_HEADER})");
                        specials.warn(Some(Error::tar(TarErrorKind::SpecialTooLarge, header_offset, message)));
                        continue;
                    };
                    let text = trim_nul(&body).to_vec();
                    if type_flag == b'L' {
                        if !text.is_empty() {
                            specials.long_name = Some(text);
                        }
                    } else {
                        specials.link = Some(text);
                    }
                }
                _ => {
                    // 'V': a GNU volume label; its data (up to 1 MiB) is
                    // skipped, and libarchive reads on as GNU tar.
                    self.format = ArchiveFormat::Gnu;
                    if size > MAX_SPECIAL_HEADER as i64 {
                        return Err(Error::tar(
                            TarErrorKind::SpecialTooLarge,
                            header_offset,
                            format!("Special header too large: volume header of {size} bytes at tar offset {header_offset} (limit {MAX_SPECIAL_HEADER})"),
                        ));
                    }
                    if size < 0 {
                        return Err(Error::tar(
                            TarErrorKind::NegativeSize,
                            header_offset,
                            format!("Damaged tar archive: volume header at tar offset {header_offset} has a negative size"),
                        ));
                    }
                    self.pending_data = size as u64;
                    self.pending_pad = padding(size as u64);
                    self.skip_data()?;
                }
            }
            if !matches!(type_flag, b'V' | b'g') {
                specials.eof_fatal = true;
            }
        }
    }

    fn make_entry(
        &mut self,
        block: &[u8; BLOCK],
        header_offset: u64,
        header_size: i64,
        specials: Specials,
    ) -> Result<Entry, Error> {
        let dialect = Dialect::of(block);
        let type_flag = block[fields::TYPE_FLAG.at];
        self.format = match (dialect, self.format) {
            (Dialect::Gnu, _) => ArchiveFormat::Gnu,
            (Dialect::Ustar, ArchiveFormat::Pax) => ArchiveFormat::Pax,
            (Dialect::Ustar, _) => ArchiveFormat::Ustar,
            (Dialect::V7, _) => ArchiveFormat::Tar,
        };
        if let Some(warning) = specials.warning {
            return Err(warning);
        }
        // pax `size` replaces the header's before libarchive checks it.
        let mut size = specials.size.unwrap_or(header_size);
        if size < 0 {
            return Err(Error::tar(
                TarErrorKind::NegativeSize,
                header_offset,
                format!("Tar entry has negative file size: header at tar offset {header_offset} says {size}"),
            ));
        }
        if type_flag == b'M' {
            return Err(unsupported(header_offset, "a GNU multi-volume continuation ('M'): libarchive reads its data from the field's offset"));
        }
        if dialect == Dialect::Gnu {
            if type_flag == b'S' {
                return Err(unsupported(
                    header_offset,
                    "a GNU sparse file ('S'): libarchive fills its holes, this reader does not",
                ));
            }
            if block[fields::GNU_SPARSE.at] != 0 {
                return Err(unsupported(header_offset, "a GNU header with an old-style sparse map: libarchive reads its data as a sparse file, this reader does not"));
            }
            if block[fields::GNU_REAL_SIZE.at] != 0 {
                return Err(unsupported(header_offset, "a GNU header with a realsize field: libarchive then reports that size, filling past the data with zeros"));
            }
        }
        let mut name = trim_nul(&block[fields::NAME.range()]).to_vec();
        if dialect == Dialect::Ustar {
            let prefix = trim_nul(&block[fields::PREFIX.range()]);
            if !prefix.is_empty() {
                let mut joined = prefix.to_vec();
                if joined.last() != Some(&b'/') {
                    joined.push(b'/');
                }
                joined.extend_from_slice(&name);
                name = joined;
            }
        }
        match (specials.long_name, specials.pax_path) {
            (Some(_), Some(_)) => {
                return Err(unsupported(header_offset, "an entry named by both a GNU long name ('L') and a pax path: which one libarchive takes depends on the headers around them"));
            }
            (Some(long), None) | (None, Some(long)) => name = long,
            (None, None) => {}
        }
        let mut link_name = trim_nul(&block[fields::LINK_NAME.range()]).to_vec();
        if let Some(long) = specials.link {
            link_name = long;
        }
        if size >= MAX_ENTRY {
            return Err(Error::tar(
                TarErrorKind::EntryTooLarge,
                header_offset,
                format!("Tar entry size overflow: the entry at tar offset {header_offset} says {size} bytes (libarchive's limit is 2^60)"),
            ));
        }
        let mut kind = match type_flag {
            b'5' | b'D' => EntryKind::Directory,
            b'2' => EntryKind::Symlink,
            b'1' if size > 0 && self.hardlink_keeps_size(block) => EntryKind::File,
            // A hard link with a size is typed a regular file by libarchive,
            // whatever its mode, even when the size is then ignored.
            b'1' if size > 0 => EntryKind::Hardlink,
            // libarchive sets the file type from the mode's S_IFMT bits and
            // keeps it for a hard link whose size is 0: a directory's mode
            // makes a directory (`header_common`).
            b'1' if mode_is_directory(block) => EntryKind::Directory,
            b'1' => EntryKind::Hardlink,
            b'3' | b'4' | b'6' => EntryKind::Special,
            _ => EntryKind::File,
        };
        // An entry libarchive types a regular file (AE_IFREG: a file, or a
        // hard link with a size) is a directory when its name ends in `/`.
        // A hard link of size 0 keeps its mode's type and its name.
        let regular = kind == EntryKind::File || (type_flag == b'1' && size > 0);
        if regular && name.last() == Some(&b'/') {
            kind = EntryKind::Directory;
        }
        // libarchive reads no data for links (outside pax), devices, FIFOs
        // and directories, except GNU dumpdirs ('D'), whose data it skips.
        if matches!(
            kind,
            EntryKind::Symlink | EntryKind::Special | EntryKind::Hardlink
        ) || (kind == EntryKind::Directory && type_flag != b'D')
        {
            size = 0;
        }
        if size > 0 {
            let size = size as u64;
            self.pending_data = size;
            self.pending_pad = padding(size);
        }
        let mtime = specials
            .mtime
            .or_else(|| Some(number::header_field(&block[fields::MTIME.range()])));
        let entry = Entry {
            name,
            link_name,
            kind,
            size,
            type_flag,
            header_offset,
            dialect,
            mtime,
        };
        self.current = Some(entry.clone());
        Ok(entry)
    }

    /// Whether libarchive reads a hard link's size as data: always in a pax
    /// archive, never in v7 or GNU ones; in a ustar one only when its bid on
    /// the header (the link's own, still unconsumed) is 50 or less, that is
    /// when the magic is not exactly POSIX's or GNU's.
    fn hardlink_keeps_size(&self, block: &[u8; BLOCK]) -> bool {
        match self.format {
            ArchiveFormat::Pax => true,
            ArchiveFormat::Ustar => {
                let magic = &block[fields::MAGIC_VERSION.range()];
                let exact = magic == fields::USTAR_MAGIC || magic == fields::GNU_MAGIC;
                !(exact && bid(block).is_ok())
            }
            _ => false,
        }
    }

    /// Reads an `L`/`K` body of `size` bytes; `None` (the body skipped) past
    /// libarchive's 1 MiB limit, which it only warns about.
    fn read_special(
        &mut self,
        size: i64,
        kind: char,
        header_offset: u64,
    ) -> Result<Option<Vec<u8>>, Error> {
        if size < 0 {
            return Err(Error::tar(
                TarErrorKind::NegativeSize,
                header_offset,
                format!("Special header has invalid size: {kind:?} header at tar offset {header_offset} says {size}"),
            ));
        }
        if size > MAX_SPECIAL_HEADER as i64 {
            self.pending_data = size as u64;
            self.pending_pad = padding(size as u64);
            self.skip_data()?;
            return Ok(None);
        }
        self.read_body(size as u64, header_offset).map(Some)
    }

    /// Reads into `buf` from the stream; the count (short only at the end
    /// of the stream).
    fn read_raw(&mut self, buf: &mut [u8]) -> Result<usize, Error> {
        let got = read_full(&mut self.inner, buf)?;
        self.offset += got as u64;
        self.captured(&buf[..got]);
        Ok(got)
    }

    /// Copies the current entry's data to `sink` (its padding is consumed on the
    /// way to the next header, as libarchive consumes it).
    /// Returns the number of bytes copied.
    pub fn copy_data<W: Write + ?Sized>(&mut self, sink: &mut W) -> Result<u64, Error> {
        let size = self.pending_data;
        let data_offset = self.offset;
        while self.pending_data > 0 {
            // Straight from the reader's buffer: data skipped is never copied.
            let available = match self.inner.fill_buf() {
                Ok(available) => available,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(e) => return Err(e.into()),
            };
            let got = available
                .len()
                .min(usize::try_from(self.pending_data).unwrap_or(usize::MAX));
            if got == 0 {
                let got = size - self.pending_data;
                let e = truncated_data(size, got, data_offset);
                return Err(match self.current.as_ref() {
                    Some(entry) => e.in_member(display_name(&entry.name)),
                    None => e,
                });
            }
            sink.write_all(&available[..got]).map_err(Error::sink)?;
            capture_into(&mut self.capture, &available[..got]);
            self.inner.consume(got);
            self.offset += got as u64;
            self.pending_data -= got as u64;
        }
        // The padding is consumed on the way to the next header, where
        // libarchive too reads it ("Truncated input file" at the header).
        Ok(size)
    }

    /// The current entry's data as a reader (its padding is left for
    /// [`TarReader::next_entry`]). Ends early with `UnexpectedEof` when the
    /// stream does.
    pub fn data(&mut self) -> impl Read + '_ {
        EntryData { tar: self }
    }

    /// Skips the rest of the current entry's data and padding.
    pub fn skip_data(&mut self) -> Result<u64, Error> {
        let copied = self.copy_data(&mut io::sink())?;
        self.skip_padding()?;
        Ok(copied)
    }

    fn skip_padding(&mut self) -> Result<(), Error> {
        if self.pending_pad > 0 {
            let mut pad = [0u8; BLOCK];
            let want = self.pending_pad as usize;
            let got = read_full(&mut self.inner, &mut pad[..want])?;
            self.offset += got as u64;
            self.pending_pad = 0;
            if self.record && pad[..got].iter().any(|&b| b != 0) {
                self.nonzero_padding = true;
            }
            if got < want {
                let offset = self.offset - got as u64;
                let message =
                    format!("Truncated tar archive: padding at tar offset {offset} is incomplete");
                return Err(Error::tar(TarErrorKind::TruncatedPadding, offset, message));
            }
        }
        Ok(())
    }

    fn read_header_block(&mut self) -> Result<Option<[u8; BLOCK]>, Error> {
        let mut block = [0u8; BLOCK];
        let got = read_full(&mut self.inner, &mut block)?;
        let offset = self.offset;
        self.offset += got as u64;
        match got {
            0 => Ok(None),
            BLOCK => Ok(Some(block)),
            got => Err(Error::tar(
                TarErrorKind::TruncatedHeader,
                offset,
                format!("Truncated tar archive: {got} of 512 header bytes at tar offset {offset}"),
            )),
        }
    }

    fn read_body(&mut self, size: u64, header_offset: u64) -> Result<Vec<u8>, Error> {
        let mut body = Vec::with_capacity(size as usize);
        self.pending_data = size;
        self.pending_pad = padding(size);
        let data_offset = self.offset;
        let mut limited = (&mut self.inner).take(size);
        let got = limited.read_to_end(&mut body)? as u64;
        self.offset += got;
        self.captured(&body);
        self.pending_data = 0;
        if got < size {
            let special = format!("special header at tar offset {header_offset}");
            return Err(truncated_data(size, got, data_offset).in_member(special));
        }
        self.skip_padding()?;
        Ok(body)
    }
}

/// Appends `bytes` to a special header's body being captured, up to the
/// special header limit (past it the capture is dropped).
fn capture_into(capture: &mut Option<Vec<u8>>, bytes: &[u8]) {
    if let Some(kept) = capture {
        if kept.len() + bytes.len() > MAX_SPECIAL_HEADER as usize {
            *capture = None;
        } else {
            kept.extend_from_slice(bytes);
        }
    }
}

/// Bytes of zero padding after `size` bytes of data.
pub fn padding(size: u64) -> u64 {
    (BLOCK as u64 - size % BLOCK as u64) % BLOCK as u64
}

fn trim_nul(bytes: &[u8]) -> &[u8] {
    let end = bytes.iter().position(|&b| b == 0).unwrap_or(bytes.len());
    &bytes[..end]
}

/// Reads until `buf` is full or the stream ends; returns the count.
struct EntryData<'t, R> {
    tar: &'t mut TarReader<R>,
}

impl<R: BufRead> Read for EntryData<'_, R> {
    fn read(&mut self, out: &mut [u8]) -> io::Result<usize> {
        let tar = &mut *self.tar;
        let want = out
            .len()
            .min(usize::try_from(tar.pending_data).unwrap_or(usize::MAX));
        if want == 0 {
            return Ok(0);
        }
        let got = tar.inner.read(&mut out[..want])?;
        if got == 0 {
            return Err(io::Error::new(
                io::ErrorKind::UnexpectedEof,
                "the tar stream ends inside the entry's data",
            ));
        }
        tar.offset += got as u64;
        tar.pending_data -= got as u64;
        Ok(got)
    }
}

fn read_full<R: Read + ?Sized>(r: &mut R, buf: &mut [u8]) -> io::Result<usize> {
    let mut filled = 0;
    while filled < buf.len() {
        match r.read(&mut buf[filled..]) {
            Ok(0) => break,
            Ok(n) => filled += n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(filled)
}

/// Checks the header checksum as libarchive does: every byte of the field
/// a space, NUL or octal digit, its number (leading blanks skipped, up to
/// the first other byte) equal to the unsigned or the signed byte sum.
fn verify_checksum(block: &[u8; BLOCK], offset: u64) -> Result<(), Error> {
    let field = &block[fields::CHECKSUM.range()];
    let well_formed = field
        .iter()
        .all(|&c| c == b' ' || c == 0 || (b'0'..=b'7').contains(&c));
    let stored = number::parse_base(field, 8);
    // The sums with the checksum field read as 8 spaces.
    let ((all, all_signed), (own, own_signed)) = (byte_sums(block), byte_sums(field));
    let unsigned = all - own + 8 * u64::from(b' ');
    let signed = all_signed - own_signed + 8 * i64::from(b' ');
    if well_formed && (stored == unsigned as i64 || stored == signed) {
        return Ok(());
    }
    let stored = escape_name(trim_nul(field));
    let message = format!("Damaged tar archive (bad header checksum): header checksum at tar offset {offset} is {stored:?}, the block sums to {unsigned:o}");
    Err(Error::tar(TarErrorKind::BadChecksum, offset, message))
}

/// The sums of `bytes` read as unsigned and as signed bytes, eight at a time.
fn byte_sums(bytes: &[u8]) -> (u64, i64) {
    const LOW: u64 = 0x00FF_00FF_00FF_00FF;
    const TOP_BITS: u64 = 0x0101_0101_0101_0101;
    let (mut sum, mut high) = (0u64, 0u64);
    let chunks = bytes.chunks_exact(8);
    for &b in chunks.remainder() {
        sum += u64::from(b);
        high += u64::from(b >> 7);
    }
    for chunk in chunks {
        let x = u64::from_le_bytes(<[u8; 8]>::try_from(chunk).unwrap_or_default());
        // Four 16-bit lanes of byte pairs, then the lanes added in the top one.
        let pairs = (x & LOW) + ((x >> 8) & LOW);
        sum += pairs.wrapping_mul(0x0001_0001_0001_0001) >> 48;
        high += u64::from(((x >> 7) & TOP_BITS).count_ones());
    }
    // A byte read as signed is 256 less when its top bit is set.
    (sum, sum as i64 - 256 * high as i64)
}

/// Longest name rendering [`display_name`] gives before cutting it short.
const DISPLAY_MAX: usize = 256;

/// [`escape_name`], cut short (with the full length noted) past 256 characters,
/// for log lines and warnings.
pub fn display_name(name: &[u8]) -> String {
    let full = escape_name(name);
    if full.chars().count() <= DISPLAY_MAX {
        return full;
    }
    let cut: String = full.chars().take(DISPLAY_MAX).collect();
    format!("{cut}…({} bytes)", name.len())
}

/// Whether the header's mode field carries a directory's file type bits
/// (`S_IFDIR`, 0o040000, under the `S_IFMT` mask 0o170000).
fn mode_is_directory(block: &[u8; BLOCK]) -> bool {
    let mode = number::header_field(&block[fields::MODE.range()]);
    mode & 0o170000 == 0o040000
}

/// Renders a byte name for messages: UTF-8 as is, other bytes as `\xNN`.
pub fn escape_name(name: &[u8]) -> String {
    if let Ok(text) = std::str::from_utf8(name) {
        if !text.chars().any(char::is_control) {
            return text.to_owned();
        }
    }
    let mut out = String::new();
    for chunk in name.utf8_chunks() {
        for ch in chunk.valid().chars() {
            if ch.is_control() {
                out.extend(ch.escape_default());
            } else {
                out.push(ch);
            }
        }
        for b in chunk.invalid() {
            out.push_str(&format!("\\x{b:02x}"));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn byte_sums_match_a_plain_sum() {
        let bytes: Vec<u8> = (0..515u32).map(|i| (i * 37 % 256) as u8).collect();
        for len in [0, 7, 8, 9, 512, 515] {
            let b = &bytes[..len];
            let unsigned: u64 = b.iter().map(|&x| u64::from(x)).sum();
            let signed: i64 = b.iter().map(|&x| i64::from(x as i8)).sum();
            assert_eq!(byte_sums(b), (unsigned, signed), "{len}");
        }
    }
    use crate::ErrorKind;

    fn header(name: &str, type_flag: u8, size_field: &[u8], magic: &[u8; 8]) -> [u8; BLOCK] {
        let mut h = [0u8; BLOCK];
        h[..name.len()].copy_from_slice(name.as_bytes());
        h[100..108].copy_from_slice(b"0000644\0");
        h[124..124 + size_field.len()].copy_from_slice(size_field);
        h[156] = type_flag;
        h[257..265].copy_from_slice(magic);
        h[148..156].copy_from_slice(b"        ");
        let sum: u32 = h.iter().map(|&b| u32::from(b)).sum();
        h[148..156].copy_from_slice(format!("{sum:06o}\0 ").as_bytes());
        h
    }

    const GNU: &[u8; 8] = b"ustar  \0";

    fn archive(parts: &[&[u8]]) -> Vec<u8> {
        let mut out = Vec::new();
        for p in parts {
            out.extend_from_slice(p);
            out.resize(out.len() + padding(p.len() as u64) as usize, 0);
        }
        out
    }

    fn entries(data: &[u8]) -> Result<Vec<(Entry, Vec<u8>)>, Error> {
        let mut r = TarReader::new(data);
        let mut out = Vec::new();
        while let Some(e) = r.next_entry()? {
            let mut body = Vec::new();
            r.copy_data(&mut body)?;
            out.push((e, body));
        }
        Ok(out)
    }

    #[test]
    fn reads_gnu_long_names_and_base256_sizes() {
        let long = "d/".repeat(80) + "file.json";
        let mut size = [0u8; 12];
        size[0] = 0x80;
        size[11] = 3;
        let data = archive(&[
            &header("././@LongLink", b'L', b"00000000253\0", GNU),
            format!("{long}\0").as_bytes(),
            &header(&long[..100], b'0', &size, GNU),
            b"abc",
        ]);
        let got = entries(&data).unwrap();
        assert_eq!(got.len(), 1);
        assert_eq!(got[0].0.name, long.as_bytes());
        assert_eq!(got[0].0.dialect, Dialect::Gnu);
        assert_eq!(got[0].1, b"abc");
    }

    #[test]
    fn reads_pax_path_and_size_and_ustar_prefix() {
        let rec = "31 path=pax/very/long/name.bin\n10 size=1\n19 mtime=1234.5678\n";
        assert_eq!(rec.len(), 60);
        let mut ustar = header("name.bin", b'0', b"00000000002\0", b"ustar\x0000");
        ustar[345..348].copy_from_slice(b"pre");
        ustar[148..156].copy_from_slice(b"        ");
        let sum: u32 = ustar.iter().map(|&b| u32::from(b)).sum();
        ustar[148..156].copy_from_slice(format!("{sum:06o}\0 ").as_bytes());
        let data = archive(&[
            &header("g", b'g', b"00000000020\0", b"ustar\x0000"),
            b"16 comment=abcd\n",
            &header("x", b'x', b"00000000074\0", b"ustar\x0000"),
            rec.as_bytes(),
            &header("short", b'0', b"00000000005\0", b"ustar\x0000"),
            b"z",
            &ustar,
            b"hi",
        ]);
        let got = entries(&data).unwrap();
        assert_eq!(got[0].0.name, b"pax/very/long/name.bin");
        assert_eq!(got[0].1, b"z");
        assert_eq!(got[1].0.name, b"pre/name.bin");
        assert_eq!(got[1].1, b"hi");
        assert_eq!((got[0].0.mtime, got[1].0.mtime), (Some(1234), Some(0)));
    }

    #[test]
    fn link_and_device_sizes_are_ignored() {
        let data = archive(&[
            &header("link", b'2', b"00000000005\0", GNU),
            &header("fifo", b'6', b"00000000005\0", GNU),
            &header("dir/", b'0', b"00000000000\0", GNU),
            &header("f", b'0', b"00000000001\0", GNU),
            b"q",
        ]);
        let got = entries(&data).unwrap();
        let kinds: Vec<_> = got.iter().map(|(e, _)| (e.kind, e.size)).collect();
        assert_eq!(
            kinds,
            vec![
                (EntryKind::Symlink, 0),
                (EntryKind::Special, 0),
                (EntryKind::Directory, 0),
                (EntryKind::File, 1)
            ]
        );
    }

    #[test]
    fn a_hard_link_without_data_takes_its_type_from_its_mode() {
        let with_mode = |mode: &[u8; 8]| {
            let mut h = header("x.bin", b'1', b"00000000000\0", GNU);
            h[100..108].copy_from_slice(mode);
            h[148..156].copy_from_slice(b"        ");
            let sum: u32 = h.iter().map(|&b| u32::from(b)).sum();
            h[148..156].copy_from_slice(format!("{sum:06o}\0 ").as_bytes());
            h
        };
        let data = archive(&[&with_mode(b"0040755\0"), &with_mode(b"0100644\0")]);
        let kinds: Vec<_> = entries(&data)
            .unwrap()
            .iter()
            .map(|(e, _)| e.kind)
            .collect();
        assert_eq!(kinds, vec![EntryKind::Directory, EntryKind::Hardlink]);
    }

    #[test]
    fn a_negative_size_fails_the_header() {
        let mut size = [0xFFu8; 12];
        size[11] = 0xFE;
        let data = archive(&[&header("neg", b'0', &size, GNU)]);
        let mut r = TarReader::new(&data[..]);
        let err = r.next_entry().unwrap_err();
        assert_eq!(err.kind(), ErrorKind::Tar(TarErrorKind::NegativeSize));
    }

    #[test]
    fn damaged_and_truncated_headers_say_where() {
        let mut h = header("a", b'0', b"00000000000\0", GNU);
        let good = archive(&[&h]);
        h[0] = b'b';
        let err = entries(&archive(&[&good, &h])).unwrap_err().to_string();
        assert!(
            err.contains("Damaged tar archive") && err.contains("offset 512"),
            "{err}"
        );
        let err = entries(&good[..300]).unwrap_err();
        assert_eq!(err.libarchive_text(), "Truncated tar archive");
        assert!(
            err.to_string()
                .contains("Truncated tar archive: 300 of 512"),
            "{err}"
        );
        let data = archive(&[&header("f", b'0', b"00000000010\0", GNU), b"abc"]);
        let err = entries(&data[..515]).unwrap_err();
        assert_eq!(err.kind(), ErrorKind::Tar(TarErrorKind::TruncatedData));
        assert_eq!(err.location().member.as_deref(), Some("f"));
        assert_eq!(err.location().offset, Some(512));
        assert_eq!(
            err.to_string(),
            "f: truncated data: 3 of 8 bytes present (data at tar offset 512)"
        );
        // An `L` past 1 MiB is skipped (libarchive warns); here its body is
        // missing, so the stream ends inside it.
        let err = entries(&archive(&[&header("x", b'L', b"77777777777\0", GNU)]))
            .unwrap_err()
            .to_string();
        assert!(err.starts_with("truncated data: 0 of 8589934591"), "{err}");
    }

    #[test]
    fn end_markers() {
        let data = archive(&[&header("a", b'0', b"00000000000\0", GNU), &[0u8; 512]]);
        assert_eq!(entries(&data).unwrap().len(), 1);
        // Clean end at a block boundary without markers.
        assert_eq!(entries(&data[..512]).unwrap().len(), 1);
        assert_eq!(entries(&[]).unwrap().len(), 0);
    }

    #[test]
    fn names_are_escaped() {
        assert_eq!(escape_name(b"a\xffb\n"), "a\\xffb\\n");
    }
}
