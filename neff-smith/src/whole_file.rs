//! Whole NEFF files drawn from fuzzer bytes, for differential fuzzing against
//! the runtime's reader (libarchive 3.8): the 1 KiB header, the gzip layer
//! and the tar stream are all drawn, each the way a hostile or an unusual
//! writer could make it.
//!
//! * tar: entries of every type flag, modes that disagree with the type,
//!   pax (`x`, `g`) and GNU (`L`, `K`) records with libarchive's special
//!   keys and over-long values, number fields in octal, base-256, blank or
//!   garbage, wrong checksums, ustar and GNU magic, and every kind of end
//!   (two zero blocks, one, none, garbage after);
//! * gzip: one to three layers (a gzip of a gzip, which libarchive reads
//!   again), each split into one to three members with FEXTRA, FNAME,
//!   FCOMMENT and FHCRC, stored/fast/best deflate, trailers right, wrong or
//!   cut, and bytes after the end (zeros, garbage, a lone gzip header);
//! * the header: pkg 1 or 2 with the digest right for the bytes it covers,
//!   `data_size` exact, short, long or covering padding.
//!
//! Entries start from a [`Template`]'s members (a real or example model), so
//! a drawn file often reaches the manifest tiers. Everything is
//! deterministic in the input bytes.

use std::io::Write;

use arbitrary::{Result, Unstructured};
use md5::Md5;
use sha2::{Digest, Sha256};

use neff_loader::{payload_stream, EntryKind, TarReader};

/// A tar block.
const BLOCK: usize = 512;

/// The members and header a drawn file starts from.
#[derive(Debug, Clone)]
pub struct Template {
    /// The template's 1 KiB header (its `data_size` and hash are redrawn).
    pub header: Vec<u8>,
    /// Its regular members, in stored order: name and bytes.
    pub members: Vec<(Vec<u8>, Vec<u8>)>,
}

impl Template {
    /// The template of a NEFF in memory: its header and its regular
    /// members, read as every command reads them. `None` when `neff` is
    /// shorter than a header or its payload does not walk to the end.
    pub fn of(neff: &[u8]) -> Option<Template> {
        let header = neff.get(..1024)?.to_vec();
        let size = u64::from_le_bytes(header[0x10..0x18].try_into().ok()?);
        let end = 1024usize.saturating_add(usize::try_from(size).ok()?);
        let payload = neff.get(1024..end.min(neff.len()))?;
        let (_, stream) = payload_stream(payload).ok()?;
        let mut tar = TarReader::new(stream);
        let mut members = Vec::new();
        while let Some(entry) = tar.next_entry().ok()? {
            if entry.kind != EntryKind::File {
                continue;
            }
            let mut data = Vec::new();
            tar.copy_data(&mut data).ok()?;
            members.push((entry.name.clone(), data));
        }
        Some(Template { header, members })
    }
}

/// A drawn NEFF: its bytes and the recipe that made them (for a report).
#[derive(Debug, Clone)]
pub struct Drawn {
    /// The whole file.
    pub bytes: Vec<u8>,
    /// What was drawn, one step per line.
    pub recipe: Vec<String>,
}

impl Drawn {
    /// The payload the runtime hands to libarchive: `data_size` bytes after
    /// the header, as many as the file holds.
    pub fn payload(&self) -> &[u8] {
        payload_of(&self.bytes)
    }
}

/// `data[1024 .. 1024 + data_size]`, cut at the file's end.
pub fn payload_of(neff: &[u8]) -> &[u8] {
    let Some(size) = neff.get(0x10..0x18) else {
        return &[];
    };
    let size = u64::from_le_bytes(size.try_into().unwrap_or_default());
    let end = usize::try_from(size)
        .unwrap_or(usize::MAX)
        .saturating_add(1024)
        .min(neff.len());
    neff.get(1024..end).unwrap_or(&[])
}

/// Draws a whole NEFF from `u`, starting from `template`'s members.
pub fn draw(u: &mut Unstructured, template: &Template) -> Result<Drawn> {
    let mut recipe = Vec::new();
    // Half the files are calm: every header field, checksum, record length,
    // trailer and size is right, so the walk gets deep and the differences
    // left are in what the constructs mean, not in how they break.
    let calm = u.arbitrary::<bool>()?;
    recipe.push(format!("calm: {calm}"));
    let mut tar = Vec::new();
    let count = u.int_in_range(0..=12)?;
    let mut next_template = 0usize;
    for _ in 0..count {
        draw_entry(u, calm, template, &mut next_template, &mut tar, &mut recipe)?;
    }
    draw_tar_end(u, &mut tar, &mut recipe)?;
    let payload = draw_gzip_layers(u, calm, tar, &mut recipe)?;
    let bytes = draw_header(u, calm, template, payload, &mut recipe)?;
    Ok(Drawn { bytes, recipe })
}

/// Type flags worth drawing: every one libarchive's tar reader names, and a
/// few it does not.
const TYPE_FLAGS: &[u8] = b"0\x0012345679DKLMNSVXgxA ";

/// Modes: plain, with each file-type bit pattern, and none.
const MODES: &[u32] = &[
    0o644, 0o755, 0o100644, 0o040755, 0o120777, 0o020644, 0o060644, 0o010644, 0o140755, 0,
    0o7777777,
];

/// pax keys: the ones libarchive's `pax_attribute` acts on, and others.
const PAX_KEYS: &[&str] = &[
    "path",
    "linkpath",
    "size",
    "mtime",
    "atime",
    "ctime",
    "uid",
    "gid",
    "uname",
    "gname",
    "hdrcharset",
    "SCHILY.xattr.user.a",
    "SCHILY.fflags",
    "SCHILY.dev",
    "SCHILY.realsize",
    "LIBARCHIVE.xattr.user.a",
    "LIBARCHIVE.creationtime",
    "GNU.sparse.size",
    "GNU.sparse.major",
    "GNU.sparse.minor",
    "GNU.sparse.name",
    "GNU.sparse.realsize",
    "GNU.sparse.numblocks",
    "GNU.sparse.offset",
    "GNU.sparse.numbytes",
    "GNU.sparse.map",
    "SUN.holesdata",
    "comment",
    "charset",
    "unknown.key",
];

/// pax values.
const PAX_VALUES: &[&str] = &[
    "",
    "0",
    "1",
    "12",
    "-1",
    "0.5",
    "99999999999999999999",
    "BINARY",
    "ISO-IEC 10646 2000 UTF-8",
    "sg00/pe.bin",
    "neff.json",
    "./kelf-0.json",
    "1,0,0,0",
];

/// Names an entry may take besides a template member's.
const NAMES: &[&str] = &[
    "neff.json",
    "kelf-0.json",
    "sg00/def.json",
    "sg00/pe.bin",
    "sg00/",
    "sg00",
    "./sg00/pe.json",
    "sg00/wavegraph-bin.json",
    "/abs",
    "../up",
    "a//b",
    "",
];

/// Between `min` and `max` bytes of the input (fewer when it runs out).
fn some_bytes(u: &mut Unstructured, min: usize, max: usize) -> Result<Vec<u8>> {
    let n = u.int_in_range(min..=max)?.min(u.len());
    Ok(u.bytes(n)?.to_vec())
}

fn pick<'a, T>(u: &mut Unstructured, from: &'a [T]) -> Result<&'a T> {
    u.choose(from)
}

/// One entry, perhaps preceded by pax or GNU records.
fn draw_entry(
    u: &mut Unstructured,
    calm: bool,
    template: &Template,
    next: &mut usize,
    tar: &mut Vec<u8>,
    recipe: &mut Vec<String>,
) -> Result<()> {
    let (mut name, mut data) = match template.members.get(*next) {
        Some(member) if u.ratio(3, 4)? => {
            *next += 1;
            member.clone()
        }
        _ => {
            let name = if u.ratio(1, 4)? {
                some_bytes(u, 0, 8)?
            } else {
                pick(u, NAMES)?.as_bytes().to_vec()
            };
            (name, some_bytes(u, 0, 64)?)
        }
    };
    if u.ratio(1, 8)? {
        name.splice(0..0, *b"./");
    }
    if u.ratio(1, 10)? {
        let keep = u.int_in_range(0..=data.len())?;
        data.truncate(keep);
    }
    let lead = u.int_in_range(0..=5)?;
    match lead {
        1 => {
            let records = draw_pax_records(u, calm, recipe)?;
            write_entry(u, calm, tar, b"././@PaxHeader", b'x', &records, recipe)?;
        }
        2 if !calm || u.ratio(1, 4)? => {
            let records = draw_pax_records(u, calm, recipe)?;
            write_entry(u, calm, tar, b"pax_global_header", b'g', &records, recipe)?;
        }
        3 => {
            let mut long = name.clone();
            if u.ratio(1, 2)? {
                long.push(0);
            }
            write_entry(u, calm, tar, b"././@LongLink", b'L', &long, recipe)?;
            name.truncate(name.len().min(20));
        }
        4 => {
            let link = pick(u, NAMES)?.as_bytes().to_vec();
            write_entry(u, calm, tar, b"././@LongLink", b'K', &link, recipe)?;
        }
        _ => {}
    }
    let type_flag = if u.ratio(3, 4)? {
        b'0'
    } else {
        *pick(u, TYPE_FLAGS)?
    };
    write_entry(u, calm, tar, &name, type_flag, &data, recipe)
}

/// pax records: `"<len> <key>=<value>\n"`, the length right or not.
fn draw_pax_records(u: &mut Unstructured, calm: bool, recipe: &mut Vec<String>) -> Result<Vec<u8>> {
    let mut out = Vec::new();
    for _ in 0..u.int_in_range(1..=3)? {
        let key = pick(u, PAX_KEYS)?.as_bytes().to_vec();
        let key = if u.ratio(1, 10)? {
            let mut long = key;
            long.extend(std::iter::repeat_n(b'k', u.int_in_range(100..=140)?));
            long
        } else {
            key
        };
        let value: Vec<u8> = match u.int_in_range(0..=3)? {
            0 => some_bytes(u, 0, 12)?,
            1 => std::iter::repeat_n(b'7', u.int_in_range(100..=600)?).collect(),
            _ => pick(u, PAX_VALUES)?.as_bytes().to_vec(),
        };
        let body = key.len() + value.len() + 3;
        let mut len = body + 1;
        while len.to_string().len() + body != len {
            len = len.to_string().len() + body;
        }
        let len = match u.int_in_range(0..=9)? {
            0 if !calm => len.saturating_sub(1),
            1 if !calm => len + 1,
            _ => len,
        };
        recipe.push(format!(
            "pax {}={} (len {len})",
            String::from_utf8_lossy(&key),
            String::from_utf8_lossy(&value[..value.len().min(24)])
        ));
        write!(out, "{len} ").ok();
        out.extend_from_slice(&key);
        out.push(b'=');
        out.extend_from_slice(&value);
        out.push(b'\n');
    }
    Ok(out)
}

/// How a number field is written.
fn number(u: &mut Unstructured, calm: bool, field: &mut [u8], value: u64) -> Result<()> {
    let width = field.len();
    let form = u.int_in_range(0..=15)?;
    // Calm: octal only (a v7 header with base-256 or blank fields is not
    // even bid on).
    let form = if calm && form < 2 { 5 } else { form };
    match form {
        // base-256
        0 => {
            field.fill(0);
            field[0] = 0x80;
            let bytes = value.to_be_bytes();
            let n = bytes.len().min(width - 1);
            field[width - n..].copy_from_slice(&bytes[8 - n..]);
        }
        // blank
        1 => field.fill(0),
        // spaces first, space-terminated
        2 => {
            let text = format!("{:>width$}", format!("{value:o} "));
            field.copy_from_slice(&text.as_bytes()[text.len() - width..]);
        }
        // garbage
        3 if !calm => {
            let bytes = u.bytes(width)?;
            field[..bytes.len()].copy_from_slice(bytes);
        }
        // full width, no terminator
        4 => {
            let text = format!("{value:0width$o}");
            let bytes = text.as_bytes();
            field.copy_from_slice(&bytes[bytes.len() - width..]);
        }
        _ => {
            let text = format!("{value:0w$o}", w = width - 1);
            let bytes = text.as_bytes();
            field[..width - 1].copy_from_slice(&bytes[bytes.len() - (width - 1)..]);
            field[width - 1] = 0;
        }
    }
    Ok(())
}

/// One 512-byte header and its data, padded to a block.
fn write_entry(
    u: &mut Unstructured,
    calm: bool,
    tar: &mut Vec<u8>,
    name: &[u8],
    type_flag: u8,
    data: &[u8],
    recipe: &mut Vec<String>,
) -> Result<()> {
    let mut h = [0u8; BLOCK];
    let (prefix, rest) = match name.len() {
        0..=100 => (&[][..], name),
        _ => match name[..name.len().min(156)].iter().rposition(|&b| b == b'/') {
            Some(i) if name.len() - i - 1 <= 100 => (&name[..i], &name[i + 1..]),
            _ => (&[][..], &name[..100]),
        },
    };
    h[..rest.len()].copy_from_slice(rest);
    let mode = if u.ratio(3, 4)? {
        0o644
    } else {
        *pick(u, MODES)?
    };
    number(u, calm, &mut h[100..108], u64::from(mode))?;
    number(u, calm, &mut h[108..116], 0)?;
    number(u, calm, &mut h[116..124], 0)?;
    let claimed = match u.int_in_range(0..=19)? {
        0 if !calm => data.len() as u64 + u.int_in_range(1..=600)?,
        1 if !calm => (data.len() as u64).saturating_sub(u.int_in_range(1..=600)?),
        _ => data.len() as u64,
    };
    number(u, calm, &mut h[124..136], claimed)?;
    number(u, calm, &mut h[136..148], 0)?;
    h[156] = type_flag;
    if matches!(type_flag, b'1' | b'2') || u.ratio(1, 16)? {
        let link = pick(u, NAMES)?.as_bytes();
        h[157..157 + link.len()].copy_from_slice(link);
    }
    match u.int_in_range(0..=5)? {
        0 => h[257..265].copy_from_slice(b"ustar  \0"),
        1 if !calm => {}
        2 if !calm => {
            let bytes = u.bytes(8)?;
            h[257..257 + bytes.len()].copy_from_slice(bytes);
        }
        _ => h[257..265].copy_from_slice(b"ustar\x0000"),
    }
    h[345..345 + prefix.len()].copy_from_slice(prefix);
    let sum: u64 = h.iter().map(|&b| u64::from(b)).sum::<u64>() + 8 * u64::from(b' ');
    let sum = match u.int_in_range(0..=29)? {
        0 if !calm => sum + 1,
        _ => sum,
    };
    let text = format!("{sum:06o}\0 ");
    h[148..156].copy_from_slice(&text.as_bytes()[text.len() - 8..]);
    recipe.push(format!(
        "entry {:?} type {:?} mode {mode:o} size {} (claims {claimed})",
        String::from_utf8_lossy(name),
        type_flag as char,
        data.len()
    ));
    tar.extend_from_slice(&h);
    tar.extend_from_slice(data);
    tar.resize(tar.len().next_multiple_of(BLOCK), 0);
    Ok(())
}

/// The end of the archive.
fn draw_tar_end(u: &mut Unstructured, tar: &mut Vec<u8>, recipe: &mut Vec<String>) -> Result<()> {
    let end = u.int_in_range(0..=7)?;
    let blocks = match end {
        0 => 0,
        1 => 1,
        _ => 2,
    };
    tar.resize(tar.len() + blocks * BLOCK, 0);
    match end {
        6 => {
            let bytes = some_bytes(u, 1, 600)?;
            tar.extend_from_slice(&bytes);
        }
        7 => tar.resize(tar.len().next_multiple_of(10240), 0),
        _ => {}
    }
    recipe.push(format!("tar end {end}, {} bytes", tar.len()));
    Ok(())
}

/// Zero to three gzip layers around `tar`.
fn draw_gzip_layers(
    u: &mut Unstructured,
    calm: bool,
    tar: Vec<u8>,
    recipe: &mut Vec<String>,
) -> Result<Vec<u8>> {
    let layers = match u.int_in_range(0..=15)? {
        0..=2 => 0,
        3..=12 => 1,
        13 | 14 => 2,
        _ => 3,
    };
    let mut data = tar;
    for _ in 0..layers {
        data = draw_gzip(u, calm, &data, recipe)?;
    }
    match u.int_in_range(0..=9)? {
        0 => data.resize(data.len() + u.int_in_range(1..=20000)?, 0),
        1 => data.extend_from_slice(&some_bytes(u, 1, 40)?),
        2 => {
            let header = gzip_header(u, calm, recipe)?;
            let keep = u.int_in_range(1..=header.len())?;
            data.extend_from_slice(&header[..keep]);
        }
        _ => {}
    }
    Ok(data)
}

/// One gzip layer: the data in one to three members.
fn draw_gzip(
    u: &mut Unstructured,
    calm: bool,
    data: &[u8],
    recipe: &mut Vec<String>,
) -> Result<Vec<u8>> {
    let members = u.int_in_range(1..=3)?;
    let mut cuts = vec![0, data.len()];
    for _ in 1..members {
        cuts.push(u.int_in_range(0..=data.len())?);
    }
    cuts.sort_unstable();
    let mut out = Vec::new();
    for part in cuts.windows(2) {
        let part = &data[part[0]..part[1]];
        out.extend_from_slice(&gzip_header(u, calm, recipe)?);
        let level = *pick(u, &[0u32, 1, 6, 9])?;
        let mut deflate =
            flate2::write::DeflateEncoder::new(Vec::new(), flate2::Compression::new(level));
        deflate.write_all(part).ok();
        let body = deflate.finish().unwrap_or_default();
        let mut crc = flate2::Crc::new();
        crc.update(part);
        let mut trailer = [0u8; 8];
        trailer[..4].copy_from_slice(&crc.sum().to_le_bytes());
        trailer[4..].copy_from_slice(&(part.len() as u32).to_le_bytes());
        let trailer_kind = if calm { 19 } else { u.int_in_range(0..=19)? };
        match trailer_kind {
            0 => trailer[0] ^= 1,
            1 => trailer[4] ^= 1,
            _ => {}
        }
        let keep = if trailer_kind == 2 {
            u.int_in_range(0..=7)?
        } else {
            8
        };
        recipe.push(format!(
            "gzip member: {} bytes, level {level}, trailer {trailer_kind} ({keep} bytes)",
            part.len()
        ));
        out.extend_from_slice(&body);
        out.extend_from_slice(&trailer[..keep]);
    }
    Ok(out)
}

/// A gzip member header with drawn flags.
fn gzip_header(u: &mut Unstructured, calm: bool, recipe: &mut Vec<String>) -> Result<Vec<u8>> {
    let flags: u8 = if u.ratio(1, 2)? { 0 } else { u.arbitrary()? };
    // Calm: FTEXT, FHCRC, FEXTRA, FNAME and FCOMMENT only, a right method.
    let flags = if calm { flags & 0x1f } else { flags };
    let method = if calm || u.ratio(15, 16)? {
        8
    } else {
        u.arbitrary()?
    };
    let mut h = vec![0x1f, 0x8b, method, flags, 0, 0, 0, 0, 0, 3];
    if flags & 4 != 0 {
        let len = if !calm && u.ratio(1, 8)? {
            u.arbitrary::<u16>()?
        } else {
            u.int_in_range(0..=16)?
        };
        h.extend_from_slice(&len.to_le_bytes());
        let bytes = u.bytes(usize::from(len).min(u.len()))?;
        h.extend_from_slice(bytes);
    }
    for bit in [8u8, 16] {
        if flags & bit != 0 {
            h.extend_from_slice(pick(u, &[&b"neff\0"[..], b"\0", b"x.tar\0"])?);
        }
    }
    if flags & 2 != 0 {
        let mut crc = flate2::Crc::new();
        crc.update(&h);
        let mut sum = (crc.sum() as u16).to_le_bytes();
        if !calm && u.ratio(1, 4)? {
            sum[0] ^= 1;
        }
        h.extend_from_slice(&sum);
    }
    recipe.push(format!("gzip header: method {method}, flags {flags:#04x}"));
    Ok(h)
}

/// The 1 KiB header: pkg, `data_size` and the digest of what it covers.
fn draw_header(
    u: &mut Unstructured,
    calm: bool,
    template: &Template,
    payload: Vec<u8>,
    recipe: &mut Vec<String>,
) -> Result<Vec<u8>> {
    let mut header = template.header.clone();
    header.resize(1024, 0);
    let gzip = payload.starts_with(&[0x1f, 0x8b]);
    let pkg: u64 = match u.int_in_range(0..=9)? {
        0 if !calm => 1 + u64::from(gzip),
        _ => 2 - u64::from(gzip),
    };
    let len = payload.len() as u64;
    let data_size = match u.int_in_range(0..=11)? {
        0 if !calm => len.saturating_sub(u.int_in_range(1..=64)?),
        1 if !calm => len + u.int_in_range(1..=64)?,
        _ => len,
    };
    recipe.push(format!("header: pkg {pkg}, data_size {data_size} of {len}"));
    header[..8].copy_from_slice(&pkg.to_le_bytes());
    header[0x10..0x18].copy_from_slice(&data_size.to_le_bytes());
    let covered = &payload[..(data_size.min(len)) as usize];
    if pkg == 1 {
        header[0xAC..0xCC].copy_from_slice(&Sha256::digest(covered));
    } else {
        header[0xAC..0xBC].copy_from_slice(&Md5::digest(covered));
        header[0xBC..0xCC].fill(b'0');
    }
    let mut bytes = header;
    bytes.extend_from_slice(&payload);
    Ok(bytes)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A plain ustar header for `name` of `size` bytes.
    fn ustar(name: &str, size: usize) -> [u8; BLOCK] {
        let mut h = [0u8; BLOCK];
        h[..name.len()].copy_from_slice(name.as_bytes());
        h[100..108].copy_from_slice(b"0000644\0");
        h[124..136].copy_from_slice(format!("{size:011o}\0").as_bytes());
        h[156] = b'0';
        h[257..265].copy_from_slice(b"ustar\x0000");
        let sum: u32 = h.iter().map(|&b| u32::from(b)).sum::<u32>() + 8 * 32;
        h[148..156].copy_from_slice(format!("{sum:06o}\0 ").as_bytes());
        h
    }

    fn template() -> Template {
        let mut tar = Vec::new();
        for (name, data) in [("neff.json", &b"{}"[..]), ("sg00/pe.bin", &[7u8; 64][..])] {
            tar.extend_from_slice(&ustar(name, data.len()));
            tar.extend_from_slice(data);
            tar.resize(tar.len().next_multiple_of(BLOCK), 0);
        }
        tar.resize(tar.len() + 2 * BLOCK, 0);
        let mut neff = vec![0u8; 1024];
        neff[0..8].copy_from_slice(&1u64.to_le_bytes());
        neff[0x10..0x18].copy_from_slice(&(tar.len() as u64).to_le_bytes());
        neff.extend_from_slice(&tar);
        Template::of(&neff).expect("the template walks")
    }

    #[test]
    fn a_template_keeps_its_regular_members() {
        let t = template();
        let names: Vec<_> = t
            .members
            .iter()
            .map(|(n, d)| (n.clone(), d.len()))
            .collect();
        assert_eq!(
            names,
            vec![(b"neff.json".to_vec(), 2), (b"sg00/pe.bin".to_vec(), 64)]
        );
    }

    #[test]
    fn drawing_is_deterministic_and_the_hash_covers_data_size() {
        let t = template();
        let seed: Vec<u8> = (0..4096u32)
            .map(|i| (i.wrapping_mul(2654435761) >> 13) as u8)
            .collect();
        let a = draw(&mut Unstructured::new(&seed), &t).unwrap();
        let b = draw(&mut Unstructured::new(&seed), &t).unwrap();
        assert_eq!(a.bytes, b.bytes);
        let pkg = u64::from_le_bytes(a.bytes[..8].try_into().unwrap());
        let payload = a.payload();
        if pkg == 1 {
            assert_eq!(&a.bytes[0xAC..0xCC], Sha256::digest(payload).as_slice());
        } else {
            assert_eq!(&a.bytes[0xAC..0xBC], Md5::digest(payload).as_slice());
        }
    }
}
