//! Recovers how an existing NEFF is framed, so that `neff pack --header`
//! rebuilds it byte for byte from its unpacked tree (spec §11).
//!
//! One pass reads the header, hashes the payload, parses the gzip header,
//! inflates the tar and records every tar header's fields, checking that the
//! framing writer would encode each block exactly as stored. A second pass
//! finds the deflate engine and parameters whose output equals the stored
//! deflate stream. Whatever cannot be reproduced is listed, never dropped
//! silently.

use neff_schema::tar as fields;
use std::collections::{BTreeMap, HashMap};
use std::fs::File;
use std::io::{self, BufRead, BufReader, Read, Seek, SeekFrom};
use std::path::Path;

use flate2::bufread::DeflateDecoder;
use md5::{Digest, Md5};
use neff_schema::framing::{
    Deflate, DeflateEngine, EntryFields, EntryFraming, Framing, FramingPreset, GzipFraming,
    HashFraming, MemberOrder, Padding, PaxFraming, TarFormat, TarFraming, TarNumbers,
};
use neff_schema::header::Blob;
use neff_schema::{HashLayout, NeffHeader, PkgVersion, Uuid, HEADER_LEN};
use sha2::Sha256;

use crate::chunk_deflate::ChunkDeflater;
use crate::error::{Error, ErrorKind};
use crate::header_options::{HeaderFile, HeaderPatch};
use crate::parallel_gzip::chunk_len;
use crate::tar_writer::{encode_header, pax_body, HeaderSpec, BLOCK, RECORD};
use crate::zlib_gzip::ZlibStream;

/// Largest pax or long-name header body read (as libarchive's limit).
const MAX_SPECIAL: u64 = 1 << 20;

/// What a byte-identical repack needs, recovered from a NEFF.
#[derive(Debug, Clone)]
pub struct Recovered {
    /// The header fields (payload-derived ones left out), the framing and
    /// what cannot be reproduced.
    pub file: HeaderFile,
    /// True when `pack --header` of the unpacked tree gives the same bytes.
    pub exact: bool,
}

/// Recovers the framing of the NEFF at `path`. A file whose framing cannot
/// be read is an [`ErrorKind::Framing`] error; a failed read, [`ErrorKind::Io`].
pub fn recover_framing(path: &Path) -> Result<Recovered, Error> {
    let mut file = File::open(path).map_err(|e| Error::io("cannot open", path, e))?;
    recover_from(&mut file, path).map_err(|e| {
        let kind = match e.kind() {
            io::ErrorKind::InvalidData | io::ErrorKind::UnexpectedEof => ErrorKind::Framing,
            _ => ErrorKind::Io,
        };
        Error::new(kind, e.to_string()).at_path(path).with_source(e)
    })
}

fn recover_from(file: &mut File, path: &Path) -> io::Result<Recovered> {
    let mut raw = [0u8; HEADER_LEN];
    file.read_exact(&mut raw)
        .map_err(|e| io::Error::new(e.kind(), format!("cannot read the header: {e}")))?;
    let header = NeffHeader::from_bytes(raw);
    let fields = header.fields();
    let file_size = file.seek(SeekFrom::End(0))?;
    let data_size = fields.data_size;
    let mut notes = Vec::new();
    let end = HEADER_LEN as u64 + data_size;
    if file_size > end {
        notes.push(format!(
            "the {} bytes after the payload (file offset {end:#x}) are not written",
            file_size - end
        ));
    }
    let pkg = PkgVersion::from_value(fields.pkg_version).unwrap_or(PkgVersion::Md5Gzip);
    file.seek(SeekFrom::Start(HEADER_LEN as u64))?;
    let mut hashed = HashingRead::new(file.take(data_size), pkg);
    let mut framing = FramingPreset::Gnu.framing();
    let mut reader = BufReader::with_capacity(1 << 16, &mut hashed);
    let gzip = reader.fill_buf()?.starts_with(&[0x1f, 0x8b]);
    let deflate_at = match (gzip, pkg) {
        (true, PkgVersion::Md5Gzip) => {
            let (gz, header_len) = read_gzip_header(&mut reader, &mut notes)?;
            let mut inflate = DeflateDecoder::new(reader);
            framing.tar = read_tar(&mut inflate, &mut notes)?.0;
            let deflate_len = inflate.total_in();
            let mut reader = inflate.into_inner();
            let mut trailer = [0u8; 8];
            reader.read_exact(&mut trailer).map_err(|e| {
                io::Error::new(e.kind(), format!("the gzip trailer is incomplete: {e}"))
            })?;
            let member_len = header_len + deflate_len + 8;
            let (rest, all_zero) = count_rest(&mut reader)?;
            if !all_zero {
                notes.push(format!(
                    "the {rest} bytes after the gzip member are not all zero (another member?); a repack writes zeros"
                ));
            }
            framing.gzip = GzipFraming {
                padding: padding_of(member_len, rest),
                ..gz
            };
            Some((HEADER_LEN as u64 + header_len, deflate_len))
        }
        (false, PkgVersion::Sha256Tar) => {
            let (tar, _) = read_tar(&mut reader, &mut notes)?;
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
    let stored = header.hash();
    let layout = HashLayout::ALL
        .into_iter()
        .find(|l| l.apply(&digest) == stored[..digest.len()]);
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
    if let Some((offset, len)) = deflate_at {
        match find_deflate(path, offset, len, &framing)? {
            Some(deflate) => framing.gzip.deflate = deflate,
            None => {
                framing.gzip.deflate = Deflate {
                    engine: DeflateEngine::Zlib,
                    level: level_of_xfl(framing.gzip.xfl),
                    mem_level: 8,
                };
                notes.push(format!(
                    "the deflate stream ({len} bytes) is not what classic zlib (levels 1-9, memLevel 8 or 9) or this tool's parallel deflate writes; a repack writes zlib level {} instead, so the deflate stream, data_size and hash differ",
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
    }
    Ok(Recovered {
        exact: notes.is_empty(),
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
    md5: Option<Md5>,
    sha256: Sha256,
}

impl<R: Read> HashingRead<R> {
    fn new(inner: R, pkg: PkgVersion) -> Self {
        HashingRead {
            inner,
            md5: (pkg == PkgVersion::Md5Gzip).then(Md5::new),
            sha256: Sha256::new(),
        }
    }

    /// The pkg's digest (MD5 or SHA-256) and the SHA-256.
    fn finish(self) -> (Vec<u8>, [u8; 32]) {
        let sha: [u8; 32] = self.sha256.finalize().into();
        match self.md5 {
            Some(md5) => (md5.finalize().to_vec(), sha),
            None => (sha.to_vec(), sha),
        }
    }
}

impl<R: Read> Read for HashingRead<R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let n = self.inner.read(buf)?;
        if let Some(h) = &mut self.md5 {
            h.update(&buf[..n]);
        }
        self.sha256.update(&buf[..n]);
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

/// Parses a gzip member header; returns its framing (deflate and padding to
/// be filled in) and its length.
fn read_gzip_header<R: BufRead>(
    r: &mut R,
    notes: &mut Vec<String>,
) -> io::Result<(GzipFraming, u64)> {
    let mut fixed = [0u8; 10];
    r.read_exact(&mut fixed)
        .map_err(|e| bad(format!("the gzip header is incomplete: {e}")))?;
    if fixed[2] != 8 {
        return Err(bad(format!("gzip method {} is not deflate", fixed[2])));
    }
    let flags = fixed[3];
    let mut len = 10u64;
    if flags & 0x01 != 0 {
        notes.push("the gzip FTEXT flag is not reproduced".into());
    }
    let mut g = FramingPreset::Gnu.framing().gzip;
    g.mtime = u32::from_le_bytes([fixed[4], fixed[5], fixed[6], fixed[7]]);
    g.xfl = fixed[8];
    g.os = fixed[9];
    if flags & 0x04 != 0 {
        let mut xlen = [0u8; 2];
        r.read_exact(&mut xlen)?;
        let mut extra = vec![0u8; usize::from(u16::from_le_bytes(xlen))];
        r.read_exact(&mut extra)?;
        len += 2 + extra.len() as u64;
        g.fextra = Some(neff_schema::hex::encode(&extra));
    }
    if flags & 0x08 != 0 {
        let name = read_cstring(r, "FNAME")?;
        len += name.len() as u64 + 1;
        match String::from_utf8(name) {
            Ok(name) => g.fname = Some(name),
            Err(_) => notes.push("the gzip FNAME is not UTF-8 and is not reproduced".into()),
        }
    }
    if flags & 0x10 != 0 {
        let comment = read_cstring(r, "FCOMMENT")?;
        len += comment.len() as u64 + 1;
        notes.push("the gzip FCOMMENT is not reproduced".into());
    }
    if flags & 0x02 != 0 {
        let mut crc = [0u8; 2];
        r.read_exact(&mut crc)?;
        len += 2;
        notes.push("the gzip FHCRC is not reproduced".into());
    }
    Ok((g, len))
}

fn read_cstring<R: BufRead>(r: &mut R, what: &str) -> io::Result<Vec<u8>> {
    let mut out = Vec::new();
    r.take(MAX_SPECIAL).read_until(0, &mut out)?;
    if out.pop() != Some(0) {
        return Err(bad(format!(
            "the gzip {what} is not NUL-terminated within 1 MiB"
        )));
    }
    Ok(out)
}

/// One tar entry as stored.
struct Seen {
    name: String,
    dir: bool,
    mode: u32,
    fields: EntryFields,
    pax: Option<PaxFraming>,
}

fn octal_field(field: &[u8], what: &str, offset: u64) -> io::Result<u64> {
    let text: Vec<u8> = field
        .iter()
        .copied()
        .filter(|&b| b != 0 && b != b' ')
        .collect();
    if text.is_empty() {
        return Ok(0);
    }
    if field[0] & 0x80 != 0 {
        // base-256
        return Ok(field[1..]
            .iter()
            .fold(0u64, |v, &b| v.wrapping_shl(8) | u64::from(b)));
    }
    let text = std::str::from_utf8(&text).unwrap_or("?");
    u64::from_str_radix(text, 8).map_err(|_| {
        bad(format!(
            "tar {what} field at tar offset {offset} is not octal: {text:?}"
        ))
    })
}

fn text_field(field: &[u8]) -> String {
    let end = field.iter().position(|&b| b == 0).unwrap_or(field.len());
    String::from_utf8_lossy(&field[..end]).into_owned()
}

fn fields_of(block: &[u8; BLOCK], offset: u64) -> io::Result<(u32, EntryFields)> {
    let mode = octal_field(&block[fields::MODE.range()], "mode", offset)?;
    let fields = EntryFields {
        mode: mode as u32,
        dir_mode: mode as u32,
        uid: octal_field(&block[fields::UID.range()], "uid", offset)?,
        gid: octal_field(&block[fields::GID.range()], "gid", offset)?,
        uname: text_field(&block[fields::UNAME.range()]),
        gname: text_field(&block[fields::GNAME.range()]),
        mtime: octal_field(&block[fields::MTIME.range()], "mtime", offset)?,
    };
    Ok((mode as u32, fields))
}

/// Reads a whole block, or `None` at a clean end of stream.
fn read_block<R: Read>(r: &mut R, block: &mut [u8; BLOCK]) -> io::Result<Option<()>> {
    let mut got = 0;
    while got < BLOCK {
        match r.read(&mut block[got..])? {
            0 if got == 0 => return Ok(None),
            0 => {
                return Err(bad(format!(
                    "the tar stream ends inside a block ({got} bytes)"
                )))
            }
            n => got += n,
        }
    }
    Ok(Some(()))
}

fn read_body<R: Read>(r: &mut R, size: u64, what: &str, offset: u64) -> io::Result<Vec<u8>> {
    if size > MAX_SPECIAL {
        return Err(bad(format!(
            "the {what} header at tar offset {offset} holds {size} bytes (limit 1 MiB)"
        )));
    }
    let padded = size.div_ceil(BLOCK as u64) * BLOCK as u64;
    let mut body = vec![0u8; padded as usize];
    r.read_exact(&mut body)?;
    body.truncate(size as usize);
    Ok(body)
}

fn parse_pax(body: &[u8], offset: u64) -> io::Result<Vec<(String, String)>> {
    let mut records = Vec::new();
    let mut rest = body;
    while !rest.is_empty() {
        let space = rest
            .iter()
            .position(|&b| b == b' ')
            .ok_or_else(|| bad(format!("pax header at tar offset {offset}: no length")))?;
        let len: usize = std::str::from_utf8(&rest[..space])
            .ok()
            .and_then(|t| t.parse().ok())
            .filter(|&l| l > space && l <= rest.len())
            .ok_or_else(|| {
                bad(format!(
                    "pax header at tar offset {offset}: bad record length"
                ))
            })?;
        let record = &rest[space + 1..len];
        let record = record.strip_suffix(b"\n").unwrap_or(record);
        let eq = record.iter().position(|&b| b == b'=').ok_or_else(|| {
            bad(format!(
                "pax header at tar offset {offset}: record without '='"
            ))
        })?;
        let key = String::from_utf8_lossy(&record[..eq]).into_owned();
        let value = String::from_utf8_lossy(&record[eq + 1..]).into_owned();
        records.push((key, value));
        rest = &rest[len..];
    }
    Ok(records)
}

/// Reads the whole tar stream, recording each entry and checking the framing
/// writer encodes each header block as stored. Returns the framing and the
/// stream's length.
fn read_tar<R: Read>(r: &mut R, notes: &mut Vec<String>) -> io::Result<(TarFraming, u64)> {
    let mut tar = FramingPreset::Gnu.framing().tar;
    let mut style_known = false;
    let mut seen: Vec<Seen> = Vec::new();
    let mut offset = 0u64;
    let mut block = [0u8; BLOCK];
    let mut pending_pax: Option<PaxFraming> = None;
    let mut long_name: Option<Vec<u8>> = None;
    let mut mismatches = 0usize;
    let mut check = |tar: &TarFraming,
                     spec: &HeaderSpec<'_>,
                     stored: &[u8; BLOCK],
                     at: u64,
                     notes: &mut Vec<String>| {
        let ok = encode_header(spec, tar)
            .map(|b| &b == stored)
            .unwrap_or(false);
        if !ok {
            mismatches += 1;
            if mismatches <= 5 {
                notes.push(format!(
                    "the tar header at tar offset {at} ({}) is not written this way by any framing this tool knows",
                    String::from_utf8_lossy(spec.name)
                ));
            }
        }
    };
    // Where the last entry ends, and whether a zero block follows it.
    let (end_offset, had_marker) = loop {
        if read_block(r, &mut block)?.is_none() {
            break (offset, false);
        }
        if block.iter().all(|&b| b == 0) {
            break (offset, true);
        }
        let at = offset;
        offset += BLOCK as u64;
        if !style_known {
            style_known = true;
            tar.format = if &block[fields::MAGIC.range()] == b"ustar\0" {
                TarFormat::Ustar
            } else {
                TarFormat::Gnu
            };
            // libarchive writes octal fields as digits, a space, a NUL.
            let mode_end = fields::MODE.range().end;
            tar.numbers = if block[mode_end - 2] == b' ' && block[mode_end - 1] == 0 {
                TarNumbers::Libarchive
            } else if block[fields::DEV_MAJOR.at..fields::DEV_MINOR.range().end]
                .iter()
                .all(|&b| b == 0)
            {
                TarNumbers::Gnu
            } else {
                TarNumbers::Python
            };
        }
        let size = octal_field(&block[fields::SIZE.range()], "size", at)?;
        let type_flag = block[fields::TYPE_FLAG.at];
        let (mode, fields) = fields_of(&block, at)?;
        let stored_name: Vec<u8> = {
            let name = &block[..100];
            let end = name.iter().position(|&b| b == 0).unwrap_or(100);
            name[..end].to_vec()
        };
        match type_flag {
            b'x' => {
                let body = read_body(r, size, "pax", at)?;
                offset += size.div_ceil(BLOCK as u64) * BLOCK as u64;
                let records = parse_pax(&body, at)?;
                if pax_body(&records) != body {
                    notes.push(format!(
                        "the pax header at tar offset {at} is not in the canonical record form"
                    ));
                }
                let name = String::from_utf8_lossy(&full_name(&block, &stored_name, tar.format))
                    .into_owned();
                check(
                    &tar,
                    &HeaderSpec {
                        name: name.as_bytes(),
                        type_flag,
                        size,
                        fields: &fields,
                        mode,
                    },
                    &block,
                    at,
                    notes,
                );
                pending_pax = Some(PaxFraming {
                    name,
                    fields,
                    records,
                });
            }
            b'L' => {
                let mut body = read_body(r, size, "long-name", at)?;
                offset += size.div_ceil(BLOCK as u64) * BLOCK as u64;
                if body.last() == Some(&0) {
                    body.pop();
                }
                long_name = Some(body);
            }
            b'0' | 0 | b'5' => {
                let pax_path = pending_pax
                    .as_ref()
                    .and_then(|p| p.records.iter().find(|(k, _)| k == "path"))
                    .map(|(_, v)| v.as_bytes().to_vec());
                let has_pax_path = pax_path.is_some();
                let name = match (long_name.take(), pax_path) {
                    (Some(n), _) | (None, Some(n)) => n,
                    (None, None) => full_name(&block, &stored_name, tar.format),
                };
                let dir = type_flag == b'5';
                let name = String::from_utf8(name).map_err(|_| {
                    bad(format!(
                        "the tar entry at tar offset {at} has a non-UTF-8 name"
                    ))
                })?;
                if (type_flag == b'5') != name.ends_with('/') || (type_flag == 0) {
                    notes.push(format!(
                        "the tar entry {name:?} has a type flag this tool does not write"
                    ));
                }
                if name.starts_with("./") || name.starts_with('/') {
                    notes.push(format!(
                        "the tar entry name {name:?} is not written this way"
                    ));
                }
                // A pax `path` or a GNU long name leaves the first 100 bytes here.
                let written_name: &[u8] =
                    if has_pax_path || (name.len() > 100 && tar.format == TarFormat::Gnu) {
                        &name.as_bytes()[..name.len().min(100)]
                    } else {
                        name.as_bytes()
                    };
                check(
                    &tar,
                    &HeaderSpec {
                        name: written_name,
                        type_flag: if dir { b'5' } else { b'0' },
                        size,
                        fields: &fields,
                        mode,
                    },
                    &block,
                    at,
                    notes,
                );
                if !dir {
                    skip_data(r, size, &name, at, notes)?;
                    offset += size.div_ceil(BLOCK as u64) * BLOCK as u64;
                }
                seen.push(Seen {
                    name,
                    dir,
                    mode,
                    fields,
                    pax: pending_pax.take(),
                });
            }
            other => {
                notes.push(format!(
                    "the tar entry at tar offset {at} has type {:?}, which is not written",
                    other as char
                ));
                skip_data(r, size, "?", at, notes)?;
                offset += size.div_ceil(BLOCK as u64) * BLOCK as u64;
            }
        }
    };
    // After the marker: count what follows; it must all be zero.
    if mismatches > 5 {
        notes.push(format!("… and {} more such tar headers", mismatches - 5));
    }
    let (rest, zero) = count_rest(r)?;
    let trailing = if had_marker {
        rest + BLOCK as u64
    } else {
        rest
    };
    if !zero {
        notes.push("data after the tar end marker is not all zero; a repack writes zeros".into());
    }
    let total = end_offset + trailing;
    let with_record = (end_offset + 1024).div_ceil(RECORD) * RECORD;
    if trailing >= 1024 && with_record == total {
        tar.end_blocks = 2;
        tar.record_size = RECORD;
    } else {
        tar.end_blocks = u32::try_from(trailing / BLOCK as u64).unwrap_or(u32::MAX);
        tar.record_size = BLOCK as u64;
        if trailing % BLOCK as u64 != 0 {
            notes.push(format!(
                "the tar stream ends with a partial block ({} bytes)",
                trailing % BLOCK as u64
            ));
        }
    }
    finish_entries(&mut tar, seen);
    Ok((tar, total))
}

/// Full member name from a ustar header: prefix/name.
fn full_name(block: &[u8; BLOCK], name: &[u8], format: TarFormat) -> Vec<u8> {
    if format == TarFormat::Ustar && block[345] != 0 {
        let prefix = &block[fields::PREFIX.range()];
        let end = prefix.iter().position(|&b| b == 0).unwrap_or(prefix.len());
        let mut full = prefix[..end].to_vec();
        full.push(b'/');
        full.extend_from_slice(name);
        full
    } else {
        name.to_vec()
    }
}

fn skip_data<R: Read>(
    r: &mut R,
    size: u64,
    name: &str,
    at: u64,
    notes: &mut Vec<String>,
) -> io::Result<()> {
    let copied = io::copy(&mut r.take(size), &mut io::sink())?;
    if copied != size {
        return Err(bad(format!(
            "member {name} at tar offset {at} is truncated"
        )));
    }
    let pad = (BLOCK as u64 - size % BLOCK as u64) % BLOCK as u64;
    let mut p = [0u8; BLOCK];
    r.read_exact(&mut p[..pad as usize])?;
    if p.iter().any(|&b| b != 0) {
        notes.push(format!("the padding after member {name} is not zero"));
    }
    Ok(())
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
    let names: Vec<&str> = seen.iter().map(|s| s.name.as_str()).collect();
    tar.directories = seen.iter().any(|s| s.dir);
    tar.order = [MemberOrder::Sorted, MemberOrder::NeffJsonLast]
        .into_iter()
        .find(|&order| packer_order(&names, order, tar.directories) == names)
        .unwrap_or(MemberOrder::Listed);
    let defaults = tar.defaults.clone();
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
                pax: s.pax,
                name: s.name,
            };
            let plain = e.mode.is_none()
                && e.uid.is_none()
                && e.gid.is_none()
                && e.uname.is_none()
                && e.gname.is_none()
                && e.mtime.is_none()
                && e.pax.is_none();
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

/// Finds deflate parameters whose output equals the stored stream of `len`
/// bytes at file offset `offset`.
fn find_deflate(
    path: &Path,
    offset: u64,
    len: u64,
    framing: &Framing,
) -> io::Result<Option<Deflate>> {
    let mut candidates = Vec::new();
    let ours =
        framing.gzip.xfl == 0 && framing.gzip.fname.is_none() && framing.gzip.fextra.is_none();
    let parallel = (1..=9).map(|level| Deflate {
        engine: DeflateEngine::Parallel,
        level,
        mem_level: 8,
    });
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
        if deflate_matches(path, offset, len, candidate)? {
            return Ok(Some(candidate));
        }
    }
    Ok(None)
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
/// stopping at the first differing byte.
fn deflate_matches(path: &Path, offset: u64, len: u64, candidate: Deflate) -> io::Result<bool> {
    let mut stored = File::open(path)?;
    stored.seek(SeekFrom::Start(offset))?;
    let mut stored = BufReader::new(stored.take(len));
    let mut source = File::open(path)?;
    source.seek(SeekFrom::Start(offset))?;
    let mut inflate = DeflateDecoder::new(BufReader::new(source.take(len)));
    let mut engine = match candidate.engine {
        DeflateEngine::Zlib => Engine::Zlib(ZlibStream::new(candidate.level, candidate.mem_level)?),
        DeflateEngine::Parallel => {
            let chunk = chunk_len(candidate.level);
            Engine::Parallel(ChunkDeflater::new(candidate.level), chunk, Vec::new())
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
        if stored.read_exact(&mut expect).is_err() || expect != out {
            return Ok(false);
        }
        compared += out.len() as u64;
        if n == 0 {
            return Ok(compared == len);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_level_one_pack_of_many_chunks_is_recovered_exactly() {
        // Text-like members over several level-1 chunks.
        let dir = tempfile::tempdir().unwrap();
        let mut packager = crate::Packager::new();
        let mut state = 7u64;
        for i in 0..3 {
            let bytes: Vec<u8> = (0..200_000)
                .map(|_| {
                    state = state.wrapping_mul(6364136223846793005).wrapping_add(1);
                    b"etaoin shrdlu"[(state >> 60) as usize % 13]
                })
                .collect();
            packager.add_bytes(&format!("m{i}.bin"), bytes).unwrap();
        }
        let path = dir.path().join("x.neff");
        let options = crate::PackOptions {
            keep_refused: true,
            fsync: false,
            ..Default::default()
        };
        packager.write_to_path(&path, &options).unwrap();
        let recovered = recover_framing(&path).unwrap();
        assert!(recovered.exact, "{:?}", recovered.file.not_reproduced);
        let deflate = recovered.file.framing.unwrap().gzip.deflate;
        assert_eq!(
            (deflate.engine, deflate.level),
            (DeflateEngine::Parallel, 1)
        );
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
        let records = parse_pax(body, 0).unwrap();
        assert_eq!(
            records[1],
            ("mtime".to_string(), "1685462267.836858".to_string())
        );
        assert_eq!(pax_body(&records), body);
        assert!(parse_pax(b"99 x=y\n", 0).is_err());
    }
}
