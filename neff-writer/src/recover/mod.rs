//! Recovers how an existing NEFF is framed, so that `neff pack --header`
//! rebuilds it byte for byte from its unpacked tree (spec §11).
//!
//! One pass reads the header, hashes the payload and walks it with the
//! loader's own readers ([`neff_loader::walk`]: libarchive's gzip and tar
//! reading, so the recovery can never see another member list than the
//! runtime), recording the first gzip member's header and every stored tar
//! header, and checking that the framing writer would encode each block
//! exactly as stored. A second pass
//! finds the deflate engine and parameters whose output equals the stored
//! deflate stream, over the whole stream or over its first bytes
//! ([`DeflateProof`]). Whatever cannot be reproduced is listed, never
//! dropped silently.

use neff_schema::tar as fields;
use std::collections::{BTreeMap, HashMap};
use std::fs::File;
use std::io::{self, BufRead, BufReader, Read, Seek, SeekFrom};
use std::path::Path;

use flate2::bufread::DeflateDecoder;
use neff_loader::{walk, EntryKind};
use neff_schema::framing::{
    Deflate, DeflateEngine, EntryFields, EntryFraming, FileType, Framing, FramingPreset,
    GzipFraming, HashFraming, LongNameFraming, MemberOrder, NumberForm, Padding, PaxFraming,
    TarFormat, TarFraming, TarNumbers, UstarSplit, UuidRule,
};
use neff_schema::header::Blob;
use neff_schema::{HashLayout, NeffHeader, PkgVersion, Uuid, HEADER_LEN};
use sha2::Digest;
use sha2::Sha256;

use crate::chunk_deflate::ChunkDeflater;
use crate::error::{Error, ErrorKind};
use crate::header_options::{HeaderFile, HeaderPatch};
use crate::parallel_gzip::chunk_len;
use crate::tar_writer::{encode_header, pax_body, HeaderSpec, BLOCK, RECORD};
use crate::zlib_gzip::ZlibStream;

mod riding;
pub use riding::FramingRecorder;

/// What a byte-identical repack needs, recovered from a NEFF.
#[derive(Debug, Clone)]
pub struct Recovered {
    /// The header fields (payload-derived ones left out), the framing and
    /// what cannot be reproduced.
    pub file: HeaderFile,
    /// True when `pack --header` of the unpacked tree gives the same bytes:
    /// everything but the deflate stream is proven, and the deflate stream
    /// over [`Recovered::deflate`]'s `compared` bytes.
    pub exact: bool,
    /// How much of the stored deflate stream the engine found was proven to
    /// be what it writes; `None` when the payload has no deflate stream or
    /// no engine writes it.
    pub deflate: Option<DeflateProven>,
}

/// How much of a stored deflate stream a lift proved.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
#[schemars(rename = "DeflateProof")]
pub struct DeflateProven {
    /// Stored bytes re-deflated and compared, all equal.
    pub compared: u64,
    /// The stream's length in bytes.
    pub stream: u64,
}

impl DeflateProven {
    /// True when the whole stream was compared.
    pub fn whole(&self) -> bool {
        self.compared >= self.stream
    }
}

/// How much of the stored deflate stream [`recover_framing`] re-deflates to
/// prove that a repack writes it again. Proving costs a deflate of what is
/// proven (as long as a pack of it); the engine and its parameters show in
/// the first bytes, and a repack of a NEFF with a recorded `source_hash`
/// (`pack --header`, `build`) says whether its payload is the source's.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DeflateProof {
    /// The whole stream.
    Whole,
    /// At most this many stored bytes from the start (the whole stream when
    /// it is no longer).
    Prefix(u64),
}

impl DeflateProof {
    /// The default: the first 16 MiB, which is every stream of the real
    /// compiler NEFFs seen so far.
    pub const DEFAULT: DeflateProof = DeflateProof::Prefix(16 << 20);

    /// The proof a `--prove-deflate` flag asks for: the whole stream when
    /// set, else [`DeflateProof::DEFAULT`].
    pub fn whole_if(prove_whole: bool) -> DeflateProof {
        match prove_whole {
            true => DeflateProof::Whole,
            false => DeflateProof::DEFAULT,
        }
    }

    /// The stored bytes to compare of a stream of `len`.
    fn budget(self, len: u64) -> u64 {
        match self {
            DeflateProof::Whole => len,
            DeflateProof::Prefix(n) => n.min(len),
        }
    }
}

impl Default for DeflateProof {
    fn default() -> Self {
        DeflateProof::DEFAULT
    }
}

/// Recovers the framing of the NEFF at `path`, proving the deflate stream
/// as far as `proof` says. A file whose framing cannot be read is an
/// [`ErrorKind::Framing`] error; a failed read, [`ErrorKind::Io`].
pub fn recover_framing(path: &Path, proof: DeflateProof) -> Result<Recovered, Error> {
    let mut file = File::open(path).map_err(|e| Error::io("cannot open", path, e))?;
    recover_from(&mut file, path, proof).map_err(|e| recovery_error(path, e))
}

/// A recovery's failure: [`ErrorKind::Framing`] for what the file holds,
/// [`ErrorKind::Io`] for a failed read.
fn recovery_error(path: &Path, e: io::Error) -> Error {
    let kind = match e.kind() {
        io::ErrorKind::InvalidData | io::ErrorKind::UnexpectedEof => ErrorKind::Framing,
        _ => ErrorKind::Io,
    };
    Error::new(kind, e.to_string()).at_path(path).with_source(e)
}

fn recover_from(file: &mut File, path: &Path, proof: DeflateProof) -> io::Result<Recovered> {
    let mut raw = [0u8; HEADER_LEN];
    file.read_exact(&mut raw)
        .map_err(|e| io::Error::new(e.kind(), format!("cannot read the header: {e}")))?;
    let header = NeffHeader::from_bytes(raw);
    let fields = header.fields();
    let file_size = file.seek(SeekFrom::End(0))?;
    let data_size = fields.data_size;
    let mut notes = Vec::new();
    note_after_payload(file_size, data_size, &mut notes);
    let pkg = PkgVersion::from_value(fields.pkg_version).unwrap_or(PkgVersion::Md5Gzip);
    file.seek(SeekFrom::Start(HEADER_LEN as u64))?;
    let mut hashed = HashingRead::new(file.take(data_size), pkg);
    let mut framing = FramingPreset::Gnu.framing();
    let mut reader = BufReader::with_capacity(1 << 16, &mut hashed);
    let gzip = walk::looks_like_gzip(reader.fill_buf()?);
    let deflate_at = match (gzip, pkg) {
        (true, PkgVersion::Md5Gzip) => {
            let gz = walk::GzipReader::new(&mut reader).recording_first_member();
            let (tar, gz) = read_tar(walk::TarReader::new(gz).recording_headers(), &mut notes)?;
            framing.tar = tar;
            let (first, members) = (gz.first_member().cloned(), gz.members());
            let first = first.ok_or_else(|| bad("the payload holds no gzip member".into()))?;
            let deflate_len = first
                .deflate_len
                .ok_or_else(|| bad("the gzip member does not end".into()))?;
            if members > 1 {
                notes.push(format!(
                    "the payload holds {members} gzip members; a repack writes one"
                ));
            }
            drop(gz);
            count_rest(&mut reader)?;
            drop(reader);
            let member_len = first.header.len + deflate_len + 8;
            let rest = data_size.saturating_sub(member_len);
            let rest_zero = hashed.last_nonzero.is_none_or(|at| at < member_len) || members > 1;
            framing.gzip = member_framing(&first.header, member_len, rest, rest_zero, &mut notes);
            Some((HEADER_LEN as u64 + first.header.len, deflate_len))
        }
        (false, PkgVersion::Sha256Tar) => {
            let (tar, mut reader) = read_tar(
                walk::TarReader::new(&mut reader).recording_headers(),
                &mut notes,
            )?;
            framing.tar = tar;
            count_rest(&mut reader)?;
            None
        }
        _ => {
            notes.push(format!(
                "the payload is {} but pkg_version {} packs it {}; a repack follows pkg_version",
                if gzip { "gzip" } else { "not gzip" },
                fields.pkg_version,
                if pkg == PkgVersion::Md5Gzip {
                    "as gzip"
                } else {
                    "raw"
                }
            ));
            count_rest(&mut reader)?;
            None
        }
    };
    let (digest, sha256) = hashed.finish();
    let walked = Walked {
        header,
        notes,
        framing,
        deflate_at,
        digest,
        sha256,
    };
    conclude(walked, path, proof, None)
}

/// Notes the bytes of a file of `file_size` after a payload of `data_size`.
fn note_after_payload(file_size: u64, data_size: u64, notes: &mut Vec<String>) {
    let end = HEADER_LEN as u64 + data_size;
    if file_size > end {
        notes.push(format!(
            "the {} bytes after the payload (file offset {end:#x}) are not written",
            file_size - end
        ));
    }
}

/// What a walk over the payload found, whichever walk it was.
struct Walked {
    header: NeffHeader,
    /// What cannot be reproduced, so far.
    notes: Vec<String>,
    /// The framing, but for the hash and the deflate engine.
    framing: Framing,
    /// Where the first gzip member's deflate stream is in the file, and its
    /// length (gzip payloads of pkg 2).
    deflate_at: Option<(u64, u64)>,
    /// The payload's pkg digest (MD5 or SHA-256), standard layout.
    digest: Vec<u8>,
    /// The payload's SHA-256.
    sha256: [u8; 32],
}

/// Completes a recovery from what the walk found: the hash layout, the
/// deflate engine (proven as far as `proof` says; `early` is a proof that
/// already ran over the same prefix), and the header fields a repack takes.
fn conclude(
    walked: Walked,
    path: &Path,
    proof: DeflateProof,
    early: Option<Option<(Deflate, u64)>>,
) -> io::Result<Recovered> {
    let Walked {
        header,
        mut notes,
        mut framing,
        deflate_at,
        digest,
        sha256,
    } = walked;
    let fields = header.fields();
    let stored = header.hash();
    let layout = walk::matching_layout(&digest, &stored, &HashLayout::ALL);
    framing.hash = HashFraming {
        layout: layout.unwrap_or(HashLayout::Standard),
        tail: Blob(stored[16..32].try_into().unwrap_or([0; 16])),
    };
    if layout.is_none() {
        notes.push(
            "the stored hash matches the payload in neither layout; a repack stores a correct one"
                .into(),
        );
    }
    let mut proven = None;
    if deflate_at.is_some() {
        // libarchive decodes gzip inside gzip again; a repack writes one layer.
        let mut file = File::open(path)?;
        file.seek(SeekFrom::Start(HEADER_LEN as u64))?;
        let payload = BufReader::new(file.take(fields.data_size));
        let layers = walk::gzip_layers(payload).unwrap_or(1);
        if layers > 1 {
            notes.push(format!(
                "the payload is gzip inside gzip ({layers} layers from file byte {HEADER_LEN}; libarchive decodes them all): a repack writes one"
            ));
        }
    }
    if let Some((offset, len)) = deflate_at {
        let stored = Stored {
            path,
            offset,
            len,
            budget: proof.budget(len),
            len_known: true,
        };
        let found = match early {
            Some(found) => found,
            None => find_deflate(&stored, &framing)?,
        };
        match found {
            Some((deflate, compared)) => {
                framing.gzip.deflate = deflate;
                proven = Some(DeflateProven {
                    compared,
                    stream: len,
                });
            }
            None => {
                framing.gzip.deflate = Deflate {
                    engine: DeflateEngine::Zlib,
                    level: level_of_xfl(framing.gzip.xfl),
                    mem_level: 8,
                };
                notes.push(format!(
                    "the deflate stream at file bytes {offset}..{} ({len} bytes) is not what classic zlib (levels 1-9, memLevel 8 or 9) or this tool's parallel deflate writes; a repack writes zlib level {} instead, so those bytes, data_size and the hash differ (the members, the tar framing and the gzip header are reproduced)",
                    offset + len,
                    framing.gzip.deflate.level
                ));
            }
        }
    }
    let mut patch = HeaderPatch::from_fields(&fields);
    patch.data_size = None;
    patch.hash = None;
    if fields.uuid == Uuid::from_sha256(&sha256) {
        patch.uuid = None;
    } else if fields.uuid.0[..] == fields.hash.0[..16] {
        // Kept as recorded too: `--uuid keep` pins it after an edit.
        framing.uuid = UuidRule::Hash;
    }
    Ok(Recovered {
        exact: notes.is_empty(),
        deflate: proven,
        file: HeaderFile {
            header: patch,
            framing: Some(framing),
            not_reproduced: notes,
            source_hash: Some(fields.hash),
        },
    })
}

/// Passes the payload through, hashing it with the pkg's digest and SHA-256.
struct HashingRead<R> {
    inner: R,
    digest: walk::Digester,
    sha256: Sha256,
    /// Bytes read so far.
    offset: u64,
    /// The offset of the last byte read that was not zero.
    last_nonzero: Option<u64>,
}

impl<R: Read> HashingRead<R> {
    fn new(inner: R, pkg: PkgVersion) -> Self {
        // pkg 1's digest is the SHA-256 computed anyway.
        let digest = pkg != PkgVersion::Sha256Tar;
        HashingRead {
            inner,
            digest: walk::Digester::for_payload(digest, Some(pkg)),
            sha256: Sha256::new(),
            offset: 0,
            last_nonzero: None,
        }
    }

    /// The pkg's digest (MD5 or SHA-256) and the SHA-256.
    fn finish(self) -> (Vec<u8>, [u8; 32]) {
        let sha: [u8; 32] = self.sha256.finalize().into();
        (self.digest.finish().unwrap_or_else(|| sha.to_vec()), sha)
    }
}

impl<R: Read> Read for HashingRead<R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let n = self.inner.read(buf)?;
        self.digest.update(&buf[..n]);
        self.sha256.update(&buf[..n]);
        if let Some(at) = buf[..n].iter().rposition(|&b| b != 0) {
            self.last_nonzero = Some(self.offset + at as u64);
        }
        self.offset += n as u64;
        Ok(n)
    }
}

/// Reads to the end; returns the byte count and whether all were zero.
fn count_rest<R: Read>(r: &mut R) -> io::Result<(u64, bool)> {
    let mut buf = vec![0u8; 1 << 16];
    let (mut n, mut zero) = (0u64, true);
    loop {
        let got = r.read(&mut buf)?;
        if got == 0 {
            return Ok((n, zero));
        }
        zero &= buf[..got].iter().all(|&b| b == 0);
        n += got as u64;
    }
}

/// The framing of a payload's one gzip member (its deflate engine to be
/// found): its `header`, its length `member_len`, and the `rest` bytes of
/// the payload after it (all zero or not).
fn member_framing(
    header: &walk::GzipMemberHeader,
    member_len: u64,
    rest: u64,
    rest_zero: bool,
    notes: &mut Vec<String>,
) -> GzipFraming {
    if !rest_zero {
        notes.push(format!(
            "the {rest} bytes after the gzip member are not all zero; a repack writes zeros"
        ));
    }
    GzipFraming {
        padding: padding_of(member_len, rest),
        ..gzip_framing(header, notes)
    }
}

/// The padding rule that explains `rest` zero bytes after a member of `len`.
fn padding_of(len: u64, rest: u64) -> Padding {
    if rest == 0 {
        Padding::None
    } else if rest < RECORD && (len + rest) % RECORD == 0 {
        Padding::ToMultiple(RECORD)
    } else {
        Padding::Exact(rest)
    }
}

/// zlib's own XFL choice, read backwards: 2 = level 9, 4 = level 1.
fn level_of_xfl(xfl: u8) -> u32 {
    match xfl {
        2 => 9,
        4 => 1,
        _ => 6,
    }
}

fn bad(msg: String) -> io::Error {
    io::Error::new(io::ErrorKind::InvalidData, msg)
}

/// The framing a stored gzip member header asks for (deflate and padding
/// to be filled in); what the writer cannot write is noted.
fn gzip_framing(header: &walk::GzipMemberHeader, notes: &mut Vec<String>) -> GzipFraming {
    let mut g = FramingPreset::Gnu.framing().gzip;
    g.mtime = header.mtime;
    g.xfl = header.xfl;
    g.os = header.os;
    g.fextra = header.extra.as_deref().map(neff_schema::hex::encode);
    if header.flags & 0x01 != 0 {
        notes.push("the gzip FTEXT flag is not reproduced".into());
    }
    if header.flags & 0x08 != 0 {
        match header.name.clone().map(String::from_utf8) {
            Some(Ok(name)) => g.fname = Some(name),
            _ => notes
                .push("the gzip FNAME is not UTF-8 (or over 1 MiB) and is not reproduced".into()),
        }
    }
    if header.flags & 0x10 != 0 {
        notes.push("the gzip FCOMMENT is not reproduced".into());
    }
    if header.flags & 0x02 != 0 {
        notes.push("the gzip FHCRC is not reproduced".into());
    }
    g
}

/// One tar entry as stored.
#[derive(Debug)]
struct Seen {
    name: String,
    dir: bool,
    mode: u32,
    fields: EntryFields,
    pax: Option<PaxFraming>,
    /// How its header's numbers are written, when they can be written back.
    numbers: Option<TarNumbers>,
    /// A regular file's type flag.
    file_type: Option<FileType>,
    /// A folder's: whether its stored name ends in `/`.
    dir_slash: Option<bool>,
}

fn text_field(field: &[u8]) -> String {
    let end = field.iter().position(|&b| b == 0).unwrap_or(field.len());
    String::from_utf8_lossy(&field[..end]).into_owned()
}

fn fields_of(block: &[u8; BLOCK]) -> (u32, EntryFields) {
    let number = |field: fields::Field| walk::header_field(&block[field.range()]).max(0) as u64;
    let mode = number(fields::MODE) as u32;
    let fields = EntryFields {
        mode,
        dir_mode: mode,
        uid: number(fields::UID),
        gid: number(fields::GID),
        uname: text_field(&block[fields::UNAME.range()]),
        gname: text_field(&block[fields::GNAME.range()]),
        mtime: number(fields::MTIME),
    };
    (mode, fields)
}

/// How a stored header's numbers are written, read field by field with the
/// values libarchive reads from them; `None` when a field is in no form the
/// writer can give back (it is then noted as a header not reproduced).
fn numbers_of(block: &[u8; BLOCK]) -> Option<TarNumbers> {
    let form = |field: fields::Field| {
        let value = walk::header_field(&block[field.range()]).max(0) as u64;
        NumberForm::of(&block[field.range()], value)
    };
    let checksum = {
        let mut spaced = *block;
        spaced[fields::CHECKSUM.range()].fill(b' ');
        let sum: u64 = spaced.iter().map(|&b| u64::from(b)).sum();
        NumberForm::of(&block[fields::CHECKSUM.range()], sum)
    };
    Some(TarNumbers {
        mode: form(fields::MODE)?,
        uid: form(fields::UID)?,
        gid: form(fields::GID)?,
        size: form(fields::SIZE)?,
        mtime: form(fields::MTIME)?,
        checksum: checksum?,
        devmajor: form(fields::DEV_MAJOR)?,
        devminor: form(fields::DEV_MINOR)?,
    })
}

/// Walks the tar stream with the loader's reader (so it reads every entry
/// as the runtime does), recording each entry in a [`TarRecorder`]. Returns
/// the framing and the reader under the tar stream, at its end.
fn read_tar<R: BufRead>(
    mut tar: walk::TarReader<R>,
    notes: &mut Vec<String>,
) -> io::Result<(TarFraming, R)> {
    let walk_error = |e: neff_loader::Error| bad(e.to_string());
    let mut recorder = TarRecorder::default();
    while let Some(entry) = tar.next_entry().map_err(walk_error)? {
        recorder.entry(tar.headers(), &entry)?;
        tar.skip_data().map_err(walk_error)?;
    }
    // After the marker: count what follows; it must all be zero.
    let (end_offset, had_marker) = match tar.end_marker() {
        Some(at) => (at, true),
        None => (tar.offset(), false),
    };
    let after_marker = tar.offset() - end_offset;
    let nonzero_padding = tar.nonzero_padding();
    let mut rest_reader = tar.into_inner();
    let (rest, zero) = count_rest(&mut rest_reader)?;
    let end = TarEnd {
        end_offset,
        trailing: rest + if had_marker { after_marker } else { 0 },
        trailing_zero: zero,
        nonzero_padding,
    };
    Ok((recorder.finish(&end, notes), rest_reader))
}

/// How a tar stream ends, as its reader saw it.
#[derive(Debug, Clone, Copy)]
pub(crate) struct TarEnd {
    /// The offset of the end marker (the stream's end without one).
    pub end_offset: u64,
    /// The bytes from there to the stream's end.
    pub trailing: u64,
    /// Whether the bytes after the marker are all zero.
    pub trailing_zero: bool,
    /// Whether the padding after some member is not zero.
    pub nonzero_padding: bool,
}

/// Records each tar entry as it is read (its stored header blocks and what
/// the walk made of them), checking the framing writer encodes each block
/// as it is stored; [`TarRecorder::finish`] gives the framing.
#[derive(Debug)]
pub(crate) struct TarRecorder {
    framing: TarFraming,
    style_known: bool,
    seen: Vec<Seen>,
    mismatches: usize,
    mismatch_notes: Vec<String>,
    other_notes: Vec<String>,
    /// How the first GNU long-name header was written: with fixed fields,
    /// or (`None`) with its entry's.
    long_name: Option<Option<LongNameFraming>>,
    /// Whether a split ustar name has told where the writer splits.
    split_known: bool,
}

impl Default for TarRecorder {
    fn default() -> Self {
        TarRecorder {
            framing: FramingPreset::Gnu.framing().tar,
            style_known: false,
            seen: Vec::new(),
            mismatches: 0,
            mismatch_notes: Vec::new(),
            other_notes: Vec::new(),
            long_name: None,
            split_known: false,
        }
    }
}

impl TarRecorder {
    /// Notes a stored header block the framing writer would not encode as
    /// it is stored.
    fn check(&mut self, spec: &HeaderSpec<'_>, stored: &walk::StoredHeader) {
        if encode_header(spec, &self.framing).ok().as_ref() != Some(&stored.block) {
            self.mismatches += 1;
            if self.mismatches <= 5 {
                self.mismatch_notes.push(format!(
                    "the tar header at tar offset {} ({}) is not written this way by any framing this tool knows",
                    stored.offset,
                    String::from_utf8_lossy(spec.name)
                ));
            }
        }
    }

    /// A GNU long-name header of a `size`-byte name before an entry whose
    /// own header has `own` fields and `own_numbers`: whether it takes the
    /// entry's fields or fixed ones is read from the first; one written
    /// otherwise is noted.
    fn long_name(
        &mut self,
        stored: &walk::StoredHeader,
        size: usize,
        own: &EntryFields,
        own_numbers: Option<TarNumbers>,
    ) {
        let (mode, fields) = fields_of(&stored.block);
        let numbers = numbers_of(&stored.block);
        let name =
            String::from_utf8_lossy(&full_name(&stored.block, self.framing.format)).into_owned();
        let header = LongNameFraming {
            name,
            fields: EntryFields { mode, ..fields },
            numbers,
        };
        let spec = HeaderSpec {
            name: header.name.as_bytes(),
            type_flag: b'L',
            size: size as u64,
            fields: &header.fields,
            mode,
            numbers,
        };
        self.check(&spec, stored);
        let follows_entry = header.name == "././@LongLink"
            && header.fields
                == EntryFields {
                    dir_mode: own.dir_mode,
                    mode: header.fields.mode,
                    ..own.clone()
                }
            && numbers == own_numbers;
        let style = if follows_entry { None } else { Some(header) };
        match &self.long_name {
            None => self.long_name = Some(style),
            Some(first) if *first != style => self.other_notes.push(format!(
                "the long-name header at tar offset {} is not written as the first one",
                stored.offset
            )),
            Some(_) => {}
        }
    }

    /// One entry, with the stored header blocks that made it (the last its
    /// own, any before it pax or GNU long-name headers).
    pub(crate) fn entry(
        &mut self,
        headers: &[walk::StoredHeader],
        entry: &neff_loader::Entry,
    ) -> io::Result<()> {
        let Some((own, specials)) = headers.split_last() else {
            return Err(bad("the tar reader kept no header".into()));
        };
        if !self.style_known {
            self.style_known = true;
            self.framing.format = format_of(&headers[0].block);
        }
        let mut pax = None;
        let mut long_link = None;
        for special in specials {
            let type_flag = special.block[fields::TYPE_FLAG.at];
            match (type_flag, &special.body) {
                (b'x', Some(body)) => {
                    let (mode, entry_fields) = fields_of(&special.block);
                    let records: Vec<(String, String)> = walk::pax_records(body)
                        .unwrap_or_default()
                        .into_iter()
                        .map(|(k, v)| {
                            let text = |b: Vec<u8>| String::from_utf8_lossy(&b).into_owned();
                            (text(k), text(v))
                        })
                        .collect();
                    if pax_body(&records) != *body {
                        self.other_notes.push(format!(
                            "the pax header at tar offset {} is not in the canonical record form",
                            special.offset
                        ));
                    }
                    let name =
                        String::from_utf8_lossy(&full_name(&special.block, self.framing.format))
                            .into_owned();
                    let numbers = numbers_of(&special.block);
                    let spec = HeaderSpec {
                        name: name.as_bytes(),
                        type_flag,
                        size: body.len() as u64,
                        fields: &entry_fields,
                        mode,
                        numbers,
                    };
                    self.check(&spec, special);
                    pax = Some(PaxFraming {
                        name,
                        fields: entry_fields,
                        records,
                        numbers,
                    });
                }
                (b'L', body) => long_link = Some((special, body.as_ref().map_or(0, Vec::len))),
                _ => self.other_notes.push(format!(
                    "the {:?} header at tar offset {} is not written",
                    type_flag as char, special.offset
                )),
            }
        }
        let type_flag = own.block[fields::TYPE_FLAG.at];
        if !matches!(entry.kind, EntryKind::File | EntryKind::Directory) {
            self.other_notes.push(format!(
                "the tar entry at tar offset {} has type {:?}, which is not written",
                own.offset, type_flag as char
            ));
            return Ok(());
        }
        let name = String::from_utf8(entry.name.clone()).map_err(|_| {
            bad(format!(
                "the tar entry at tar offset {} has a non-UTF-8 name",
                own.offset
            ))
        })?;
        let dir = entry.kind == EntryKind::Directory;
        let file_type = FileType::of(type_flag).filter(|_| !dir);
        if (dir && type_flag != b'5') || (!dir && file_type.is_none()) {
            self.other_notes.push(format!(
                "the tar entry {name:?} has a type flag this tool does not write"
            ));
        }
        // A folder is keyed with its `/`; whether its header has one is a
        // convention of the writer, recorded apart.
        let dir_slash = dir.then(|| name.ends_with('/'));
        let stored_name = name.clone();
        let name = match dir_slash {
            Some(false) => format!("{name}/"),
            _ => name,
        };
        if name.starts_with("./") || name.starts_with('/') {
            self.other_notes.push(format!(
                "the tar entry name {name:?} is not written this way"
            ));
        }
        // A pax `path` or a GNU long name leaves the first 100 bytes here.
        let has_pax_path = pax
            .as_ref()
            .is_some_and(|p: &PaxFraming| p.records.iter().any(|(k, _)| k == "path"));
        let long =
            has_pax_path || (stored_name.len() > 100 && self.framing.format == TarFormat::Gnu);
        let written_name = if long {
            &stored_name.as_bytes()[..stored_name.len().min(100)]
        } else {
            stored_name.as_bytes()
        };
        if !long && written_name.len() > 100 && !self.split_known {
            // The first split name tells where this writer splits.
            let stored = (
                text_field(&own.block[fields::PREFIX.range()]),
                text_field(&own.block[fields::NAME.range()]),
            );
            let by = |rule: UstarSplit| {
                rule.split(written_name).map(|(p, n)| {
                    (
                        String::from_utf8_lossy(p).into_owned(),
                        String::from_utf8_lossy(n).into_owned(),
                    )
                })
            };
            if let Some(rule) = UstarSplit::ALL
                .into_iter()
                .find(|&r| by(r) == Some(stored.clone()))
            {
                self.framing.ustar_split = rule;
                self.split_known = true;
            }
        }
        let (mode, entry_fields) = fields_of(&own.block);
        let numbers = numbers_of(&own.block);
        let spec = HeaderSpec {
            name: written_name,
            type_flag: if dir {
                b'5'
            } else {
                file_type.unwrap_or(FileType::Zero).flag()
            },
            size: entry.size.max(0) as u64,
            fields: &entry_fields,
            mode,
            numbers,
        };
        self.check(&spec, own);
        if let Some((stored, size)) = long_link {
            self.long_name(stored, size, &entry_fields, numbers);
        }
        self.seen.push(Seen {
            numbers,
            file_type,
            dir_slash,
            name,
            dir,
            mode,
            fields: entry_fields,
            pax,
        });
        Ok(())
    }

    /// The framing of the entries recorded, ending as `end` says; what
    /// cannot be reproduced is added to `notes`.
    pub(crate) fn finish(mut self, end: &TarEnd, notes: &mut Vec<String>) -> TarFraming {
        let mut framing = self.framing;
        notes.append(&mut self.mismatch_notes);
        notes.append(&mut self.other_notes);
        if end.nonzero_padding {
            notes.push("the padding after a tar member is not zero; a repack writes zeros".into());
        }
        if self.mismatches > 5 {
            notes.push(format!(
                "… and {} more such tar headers",
                self.mismatches - 5
            ));
        }
        if !end.trailing_zero {
            notes.push(
                "data after the tar end marker is not all zero; a repack writes zeros".into(),
            );
        }
        let (end_offset, trailing) = (end.end_offset, end.trailing);
        let total = end_offset + trailing;
        let with_record = (end_offset + 1024).div_ceil(RECORD) * RECORD;
        if trailing >= 1024 && with_record == total {
            framing.end_blocks = 2;
            framing.record_size = RECORD;
        } else {
            framing.end_blocks = u32::try_from(trailing / BLOCK as u64).unwrap_or(u32::MAX);
            framing.record_size = BLOCK as u64;
            if trailing % BLOCK as u64 != 0 {
                notes.push(format!(
                    "the tar stream ends with a partial block ({} bytes)",
                    trailing % BLOCK as u64
                ));
            }
        }
        finish_entries(&mut framing, self.seen);
        framing.long_name = self.long_name.flatten();
        framing
    }
}

/// The tar format of the first stored header.
fn format_of(block: &[u8; BLOCK]) -> TarFormat {
    if &block[fields::MAGIC.range()] == b"ustar\0" {
        TarFormat::Ustar
    } else {
        TarFormat::Gnu
    }
}

/// A stored header's full name: a ustar header's prefix, a `/`, its name.
fn full_name(block: &[u8; BLOCK], format: TarFormat) -> Vec<u8> {
    let text = |field: fields::Field| {
        let bytes = &block[field.range()];
        let end = bytes.iter().position(|&b| b == 0).unwrap_or(bytes.len());
        bytes[..end].to_vec()
    };
    let name = text(fields::NAME);
    if format == TarFormat::Ustar && block[fields::PREFIX.at] != 0 {
        let mut full = text(fields::PREFIX);
        full.push(b'/');
        full.extend_from_slice(&name);
        full
    } else {
        name
    }
}

/// The most common value among `values` (first seen on a tie).
fn most_common<T: Clone + Eq + std::hash::Hash>(values: impl Iterator<Item = T>) -> Option<T> {
    let mut counts: HashMap<T, (usize, usize)> = HashMap::new();
    for (i, v) in values.enumerate() {
        counts.entry(v).or_insert((0, i)).0 += 1;
    }
    counts
        .into_iter()
        .max_by(|a, b| a.1 .0.cmp(&b.1 .0).then(b.1 .1.cmp(&a.1 .1)))
        .map(|(v, _)| v)
}

/// Chooses defaults, order and directory policy, and the per-entry overrides.
fn finish_entries(tar: &mut TarFraming, seen: Vec<Seen>) {
    let files = || seen.iter().filter(|s| !s.dir);
    let dirs = || seen.iter().filter(|s| s.dir);
    let d = &mut tar.defaults;
    if let Some(m) = most_common(files().map(|s| s.mode)) {
        d.mode = m;
    }
    if let Some(m) = most_common(dirs().map(|s| s.mode)) {
        d.dir_mode = m;
    }
    let all = || seen.iter();
    if let Some(v) = most_common(all().map(|s| s.fields.uid)) {
        d.uid = v;
    }
    if let Some(v) = most_common(all().map(|s| s.fields.gid)) {
        d.gid = v;
    }
    if let Some(v) = most_common(all().map(|s| s.fields.uname.clone())) {
        d.uname = v;
    }
    if let Some(v) = most_common(all().map(|s| s.fields.gname.clone())) {
        d.gname = v;
    }
    if let Some(v) = most_common(all().map(|s| s.fields.mtime)) {
        d.mtime = v;
    }
    if let Some(v) = most_common(all().filter_map(|s| s.numbers)) {
        tar.numbers = v;
    }
    if let Some(v) = most_common(files().filter_map(|s| s.file_type)) {
        tar.file_type = v;
    }
    if let Some(v) = most_common(dirs().filter_map(|s| s.dir_slash)) {
        tar.dir_slash = v;
    }
    let names: Vec<&str> = seen.iter().map(|s| s.name.as_str()).collect();
    tar.directories = seen.iter().any(|s| s.dir);
    tar.order = [MemberOrder::Sorted, MemberOrder::NeffJsonLast]
        .into_iter()
        .find(|&order| packer_order(&names, order, tar.directories) == names)
        .unwrap_or(MemberOrder::Listed);
    let defaults = tar.defaults.clone();
    let numbers = tar.numbers;
    let own_numbers = |n: Option<TarNumbers>| n.filter(|&n| n != numbers);
    let file_type = tar.file_type;
    tar.entries = seen
        .into_iter()
        .filter_map(|s| {
            let default_mode = if s.dir {
                defaults.dir_mode
            } else {
                defaults.mode
            };
            let e = EntryFraming {
                mode: (s.mode != default_mode).then_some(s.mode),
                uid: (s.fields.uid != defaults.uid).then_some(s.fields.uid),
                gid: (s.fields.gid != defaults.gid).then_some(s.fields.gid),
                uname: (s.fields.uname != defaults.uname).then(|| s.fields.uname.clone()),
                gname: (s.fields.gname != defaults.gname).then(|| s.fields.gname.clone()),
                mtime: (s.fields.mtime != defaults.mtime).then_some(s.fields.mtime),
                pax: s.pax.map(|p| {
                    Box::new(PaxFraming {
                        numbers: own_numbers(p.numbers),
                        ..p
                    })
                }),
                numbers: own_numbers(s.numbers),
                file_type: s.file_type.filter(|&t| t != file_type),
                name: s.name,
            };
            let plain = e.mode.is_none()
                && e.uid.is_none()
                && e.gid.is_none()
                && e.uname.is_none()
                && e.gname.is_none()
                && e.mtime.is_none()
                && e.pax.is_none()
                && e.numbers.is_none()
                && e.file_type.is_none();
            (tar.order == MemberOrder::Listed || !plain).then_some(e)
        })
        .collect();
}

/// The entry order the packager writes for these names.
fn packer_order(names: &[&str], order: MemberOrder, directories: bool) -> Vec<String> {
    let mut all: BTreeMap<String, ()> = BTreeMap::new();
    for name in names {
        if name.ends_with('/') {
            if directories {
                all.insert(name.to_string(), ());
            }
            continue;
        }
        all.insert(name.to_string(), ());
        if directories {
            let mut parent = *name;
            while let Some(i) = parent.rfind('/') {
                parent = &parent[..i];
                all.insert(format!("{parent}/"), ());
            }
        }
    }
    let mut out: Vec<String> = all.into_keys().collect();
    if order == MemberOrder::NeffJsonLast {
        if let Some(i) = out.iter().position(|n| n == "neff.json") {
            let last = out.remove(i);
            out.push(last);
        }
    }
    out
}

/// A stored deflate stream: `len` bytes at file offset `offset` of `path`,
/// of which the first `budget` are to be proven. When `len` is only an upper
/// bound (`len_known` false), a comparison that reaches the content's end
/// is [`Stop::Undecided`]: its verdict would depend on the true length.
struct Stored<'p> {
    path: &'p Path,
    offset: u64,
    len: u64,
    budget: u64,
    len_known: bool,
}

impl Stored<'_> {
    /// The stored bytes from the start of the stream.
    fn reader(&self) -> io::Result<io::Take<BufReader<File>>> {
        let mut file = File::open(self.path)?;
        file.seek(SeekFrom::Start(self.offset))?;
        Ok(BufReader::new(file).take(self.len))
    }

    /// The stream's content, inflated.
    fn inflated(&self) -> io::Result<DeflateDecoder<io::Take<BufReader<File>>>> {
        Ok(DeflateDecoder::new(self.reader()?))
    }
}

/// Finds deflate parameters whose output equals the first `budget` bytes of
/// the stored stream (all of it when the budget is its length), and how many
/// bytes were compared.
fn find_deflate(stored: &Stored<'_>, framing: &Framing) -> io::Result<Option<(Deflate, u64)>> {
    let mut candidates = Vec::new();
    let ours =
        framing.gzip.xfl == 0 && framing.gzip.fname.is_none() && framing.gzip.fextra.is_none();
    // This project's engines: the default first, then every level of the
    // zlib-rs one (the level-1 default of earlier releases among them).
    let libdeflate = Deflate {
        engine: DeflateEngine::ParallelLibdeflate,
        level: 1,
        mem_level: 8,
    };
    let parallel = std::iter::once(libdeflate).chain((1..=9).map(|level| Deflate {
        engine: DeflateEngine::Parallel,
        level,
        mem_level: 8,
    }));
    if ours {
        candidates.extend(parallel.clone());
    }
    let first = level_of_xfl(framing.gzip.xfl);
    let levels = std::iter::once(first).chain((1..=9).filter(|&l| l != first));
    for level in levels {
        for mem_level in [8, 9] {
            candidates.push(Deflate {
                engine: DeflateEngine::Zlib,
                level,
                mem_level,
            });
        }
    }
    if !ours {
        candidates.extend(parallel);
    }
    for candidate in candidates {
        if let Some(compared) = deflate_matches(stored, candidate)? {
            return Ok(Some((candidate, compared)));
        }
    }
    Ok(None)
}

/// [`deflate_matches`] for the parallel engine: its chunks are independent,
/// so they are re-deflated on every core, through the packager's own
/// pipeline, and compared in order as they come out.
fn parallel_deflate_matches(stored: &Stored<'_>, deflate: Deflate) -> io::Result<Option<u64>> {
    let mut inflate = stored.inflated()?;
    let compare = Compare {
        stored: stored.reader()?,
        left: stored.len,
        budget: stored.budget,
        beyond: 0,
        buf: Vec::new(),
    };
    let threads = std::thread::available_parallelism().map_or(1, |n| n.get());
    let compared = std::thread::scope(|scope| -> io::Result<Compare<_>> {
        let mut sink = crate::parallel_gzip::start(scope, compare, Vec::new(), deflate, threads);
        io::copy(&mut inflate, &mut sink)?;
        sink.finish()
    });
    match compared {
        Ok(_) if !stored.len_known => Err(io::Error::other(Stop::Undecided)),
        Ok(compare) => Ok((compare.left == 0 && compare.beyond == TRAILER).then_some(stored.len)),
        // The comparison stopped the pipeline at the first difference, or
        // once the budget was proven.
        Err(e) => match e.get_ref().and_then(|inner| inner.downcast_ref::<Stop>()) {
            Some(Stop::Differs) => Ok(None),
            Some(Stop::Proven) => Ok(Some(stored.budget)),
            Some(Stop::Undecided) | None => Err(e),
        },
    }
}

/// Why a [`Compare`] stops the pipeline (told from an I/O error by its type).
#[derive(Debug)]
enum Stop {
    /// A byte differs.
    Differs,
    /// The budget of bytes to prove is proven.
    Proven,
    /// The content ended before the budget was proven, and the stream's
    /// true length is not known.
    Undecided,
}

impl std::fmt::Display for Stop {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Stop::Differs => "the re-deflated stream differs from the stored one",
            Stop::Proven => "the re-deflated stream equals the stored one as far as it is proven",
            Stop::Undecided => "the stream's content ended before its proof did",
        })
    }
}

impl std::error::Error for Stop {}

/// The gzip trailer's length (CRC-32 and ISIZE).
const TRAILER: u64 = 8;

/// Compares what is written with the first `left` bytes of `stored`, and
/// counts what comes after them (`beyond`: the gzip trailer, not compared,
/// since the content it sums is the stored stream's own). Stops once the
/// first `budget` bytes are equal, when that is short of the whole stream.
struct Compare<R> {
    stored: R,
    left: u64,
    budget: u64,
    beyond: u64,
    buf: Vec<u8>,
}

impl<R: Read> io::Write for Compare<R> {
    fn write(&mut self, out: &[u8]) -> io::Result<usize> {
        let n = out
            .len()
            .min(usize::try_from(self.left).unwrap_or(usize::MAX));
        self.buf.resize(n, 0);
        if self.stored.read_exact(&mut self.buf).is_err() || self.buf[..] != out[..n] {
            return Err(io::Error::other(Stop::Differs));
        }
        self.left -= n as u64;
        self.beyond += (out.len() - n) as u64;
        if self.beyond > TRAILER {
            return Err(io::Error::other(Stop::Differs));
        }
        self.budget = self.budget.saturating_sub(n as u64);
        if self.budget == 0 && self.left > 0 {
            return Err(io::Error::other(Stop::Proven));
        }
        Ok(out.len())
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

/// One candidate compressor.
enum Engine {
    Zlib(ZlibStream),
    /// The compressor, the level's chunk size, and the input not yet compressed.
    Parallel(ChunkDeflater, usize, Vec<u8>),
}

impl Engine {
    fn push(&mut self, input: &[u8], finish: bool, out: &mut Vec<u8>) -> io::Result<()> {
        match self {
            Engine::Zlib(z) => z.push(input, finish, out),
            Engine::Parallel(c, chunk, pending) => {
                // Chunks of the level's size, each its own stream with a sync flush;
                // the last ends the deflate stream (as `parallel_gzip` writes).
                pending.extend_from_slice(input);
                while pending.len() > *chunk || (finish && !pending.is_empty()) {
                    let take = pending.len().min(*chunk);
                    let last = finish && take == pending.len();
                    out.extend_from_slice(&c.deflate(&pending[..take], last));
                    pending.drain(..take);
                }
                if finish && input.is_empty() && out.is_empty() && pending.is_empty() {
                    out.extend_from_slice(&c.deflate(&[], true));
                }
                Ok(())
            }
        }
    }
}

/// Re-deflates the stored stream's content with `candidate` and compares,
/// stopping at the first differing byte or once the budget is proven;
/// `Some(bytes compared)` when all were equal.
fn deflate_matches(stored: &Stored<'_>, candidate: Deflate) -> io::Result<Option<u64>> {
    if candidate.engine != DeflateEngine::Zlib {
        return parallel_deflate_matches(stored, candidate);
    }
    let mut expected = stored.reader()?;
    let mut inflate = stored.inflated()?;
    let mut engine = match candidate.engine {
        DeflateEngine::Zlib => Engine::Zlib(ZlibStream::new(candidate.level, candidate.mem_level)?),
        DeflateEngine::Parallel | DeflateEngine::ParallelLibdeflate => {
            let chunk = chunk_len(candidate);
            Engine::Parallel(ChunkDeflater::new(candidate), chunk, Vec::new())
        }
    };
    let mut input = vec![0u8; 1 << 18];
    let mut out = Vec::new();
    let mut expect = Vec::new();
    let mut compared = 0u64;
    loop {
        let n = inflate.read(&mut input)?;
        out.clear();
        engine.push(&input[..n], n == 0, &mut out)?;
        expect.resize(out.len(), 0);
        if expected.read_exact(&mut expect).is_err() || expect != out {
            return Ok(None);
        }
        compared += out.len() as u64;
        if n == 0 {
            if !stored.len_known {
                return Err(io::Error::other(Stop::Undecided));
            }
            return Ok((compared == stored.len).then_some(compared));
        }
        if compared >= stored.budget && compared < stored.len {
            return Ok(Some(compared));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Text-like members over several level-1 chunks.
    fn text_members() -> Vec<(String, Vec<u8>)> {
        let mut state = 7u64;
        (0..3)
            .map(|i| {
                let bytes: Vec<u8> = (0..200_000)
                    .map(|_| {
                        state = state.wrapping_mul(6364136223846793005).wrapping_add(1);
                        b"etaoin shrdlu"[(state >> 60) as usize % 13]
                    })
                    .collect();
                (format!("m{i}.bin"), bytes)
            })
            .collect()
    }

    /// Packs `members` at `path` with `options` (no fsync, refusals kept).
    fn pack(path: &Path, options: crate::PackOptions) -> crate::PackOutcome {
        let mut packager = crate::Packager::new();
        for (name, bytes) in text_members() {
            packager.add_bytes(&name, bytes).unwrap();
        }
        let options = crate::PackOptions {
            keep_refused: true,
            fsync: false,
            ..options
        };
        packager.write_to_path(path, &options).unwrap()
    }

    /// A level-1 pack of [`text_members`] at `path`.
    pub(super) fn pack_text_members(path: &Path) {
        pack(path, crate::PackOptions::default());
    }

    #[test]
    fn a_level_one_pack_of_many_chunks_is_recovered_exactly() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("x.neff");
        pack_text_members(&path);
        let recovered = recover_framing(&path, DeflateProof::Whole).unwrap();
        assert!(recovered.exact, "{:?}", recovered.file.not_reproduced);
        let proven = recovered.deflate.unwrap();
        assert!(
            proven.whole() && proven.compared == proven.stream,
            "{proven:?}"
        );
        let deflate = recovered.file.framing.unwrap().gzip.deflate;
        assert_eq!(
            (deflate.engine, deflate.level),
            (DeflateEngine::ParallelLibdeflate, 1)
        );
        // A prefix tells the same engine, proven over that much.
        let prefix = recover_framing(&path, DeflateProof::Prefix(1000)).unwrap();
        assert!(prefix.exact);
        let proven = prefix.deflate.unwrap();
        assert!(proven.compared >= 1000 && !proven.whole(), "{proven:?}");
        assert_eq!(prefix.file.framing.unwrap().gzip.deflate, deflate);
    }

    #[test]
    fn the_payload_is_matched_with_the_source_by_its_own_hash_not_a_patched_one() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("x.neff");
        let hash = pack(&path, crate::PackOptions::default()).header.hash;
        let with_source = |source: Blob<32>, patched: Option<Blob<32>>| crate::PackOptions {
            source_hash: Some(source),
            header: HeaderPatch {
                hash: patched,
                ..HeaderPatch::default()
            },
            ..crate::PackOptions::default()
        };
        let other = Blob([7; 32]);
        let same = pack(&path, with_source(hash, None));
        assert_eq!(same.payload_matches_source, Some(true));
        // A header patched to claim the source's hash does not make the
        // payload the source's.
        let claimed = pack(&path, with_source(other, Some(other)));
        assert_eq!(claimed.header.hash, other);
        assert_eq!(claimed.payload_matches_source, Some(false));
        assert_eq!(
            pack(&path, crate::PackOptions::default()).payload_matches_source,
            None
        );
    }

    #[test]
    fn a_zlib_stream_is_proven_over_a_prefix_or_whole() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("z.neff");
        let mut options = crate::PackOptions::with_preset(FramingPreset::NeuronxCc);
        options.framing.gzip.deflate = Deflate {
            engine: DeflateEngine::Zlib,
            level: 6,
            mem_level: 8,
        };
        pack(&path, options.clone());
        for (proof, whole) in [
            (DeflateProof::Prefix(1000), false),
            (DeflateProof::Whole, true),
        ] {
            let recovered = recover_framing(&path, proof).unwrap();
            assert!(recovered.exact, "{:?}", recovered.file.not_reproduced);
            let proven = recovered.deflate.unwrap();
            assert_eq!(proven.whole(), whole, "{proven:?}");
            assert!(proven.compared >= 1000);
            let framing = recovered.file.framing.unwrap();
            assert_eq!(framing.gzip.deflate, options.framing.gzip.deflate);
        }
    }

    #[test]
    fn a_stream_that_differs_past_the_prefix_is_caught_by_the_whole_proof() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("x.neff");
        pack_text_members(&path);
        // The same tar, its level-1 chunks as the pack wrote them but the
        // last deflated at level 9: a valid stream a level-1 pack does not
        // write, which differs only in its last chunk.
        let neff = std::fs::read(&path).unwrap();
        let payload = &neff[HEADER_LEN..];
        let tar = {
            let mut out = Vec::new();
            flate2::read::GzDecoder::new(payload)
                .read_to_end(&mut out)
                .unwrap();
            out
        };
        let level_one = crate::PackOptions::default().framing.gzip.deflate;
        let chunks: Vec<&[u8]> = tar.chunks(chunk_len(level_one)).collect();
        assert!(chunks.len() > 2);
        let mut gz = payload[..10].to_vec();
        for (i, chunk) in chunks.iter().enumerate() {
            let last = i + 1 == chunks.len();
            let deflate = if last {
                level_one.with_level(9)
            } else {
                level_one
            };
            gz.extend(ChunkDeflater::new(deflate).deflate(chunk, last));
        }
        let mut crc = flate2::Crc::new();
        crc.update(&tar);
        gz.extend(crc.sum().to_le_bytes());
        gz.extend((tar.len() as u32).to_le_bytes());
        let mut fields = NeffHeader::from_bytes(neff[..HEADER_LEN].try_into().unwrap()).fields();
        fields.data_size = gz.len() as u64;
        let md5: [u8; 16] = md5::Md5::digest(&gz).into();
        fields.hash.0[..16].copy_from_slice(&md5);
        let mut edited = NeffHeader::from_fields(&fields).as_bytes().to_vec();
        edited.extend(&gz);
        std::fs::write(&path, &edited).unwrap();

        let prefix = recover_framing(&path, DeflateProof::Prefix(1000)).unwrap();
        assert!(prefix.exact, "{:?}", prefix.file.not_reproduced);
        assert!(!prefix.deflate.unwrap().whole());
        let whole = recover_framing(&path, DeflateProof::Whole).unwrap();
        assert!(!whole.exact);
        assert!(whole.deflate.is_none());
        let notes = whole.file.not_reproduced.join("\n");
        assert!(notes.contains("is not what classic zlib"), "{notes}");

        // A repack from the prefix-proven recovery says it is not the source;
        // one of the level-1 pack says it is.
        let settings = crate::PackSettings::default();
        let repack =
            |file: HeaderFile| pack(&dir.path().join("re.neff"), settings.options(file).unwrap());
        assert_eq!(repack(prefix.file).payload_matches_source, Some(false));
        pack_text_members(&path);
        let exact = recover_framing(&path, DeflateProof::Prefix(1000)).unwrap();
        assert_eq!(repack(exact.file).payload_matches_source, Some(true));
    }

    #[test]
    fn padding_rules() {
        assert_eq!(padding_of(8927, 1313), Padding::ToMultiple(10240));
        assert_eq!(padding_of(100, 0), Padding::None);
        assert_eq!(padding_of(100, 7), Padding::Exact(7));
    }

    #[test]
    fn packer_orders() {
        let names = ["a.json", "neff.json", "sg00/def.json"];
        assert_eq!(packer_order(&names, MemberOrder::Sorted, false), names);
        assert_eq!(
            packer_order(&names, MemberOrder::NeffJsonLast, false),
            ["a.json", "sg00/def.json", "neff.json"]
        );
        assert_eq!(
            packer_order(&names, MemberOrder::Sorted, true),
            ["a.json", "neff.json", "sg00/", "sg00/def.json"]
        );
    }

    #[test]
    fn pax_records_parse_and_encode_back() {
        let body = b"29 ctime=1733029749.66387288\n27 mtime=1685462267.836858\n";
        let records: Vec<(String, String)> = walk::pax_records(body)
            .unwrap()
            .into_iter()
            .map(|(k, v)| (String::from_utf8(k).unwrap(), String::from_utf8(v).unwrap()))
            .collect();
        assert_eq!(
            records[1],
            ("mtime".to_string(), "1685462267.836858".to_string())
        );
        assert_eq!(pax_body(&records), body);
        assert!(walk::pax_records(b"99 x=y\n").is_none());
    }
}
