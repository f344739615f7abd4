//! Deterministic tar framing (spec §3.3, §11.3), driven by a [`TarFraming`].
//!
//! The default framing (`gnu`) writes magic `"ustar "` + `" \0"`, mode 0644
//! (files) or 0755 (directories), uid/gid 0, uname/gname `nobody`, mtime 0,
//! zeroed devmajor/devminor/prefix, `L` records for names over 100 bytes, and
//! ends with two zero blocks padded to a 10240-byte record. Other framings
//! (POSIX ustar in libarchive's or Python's encodings, pax records, other
//! owners and times) are what the compilers write; see [`TarFraming`].

use neff_schema::tar as fields;
use std::borrow::Cow;
use std::collections::HashMap;
use std::io::{self, Read, Write};

use neff_schema::framing::{
    EntryFields, EntryFraming, FramingPreset, NumberForm, PaxFraming, TarFormat, TarFraming,
    TarNumbers, UstarSplit,
};

/// Size of a tar block.
pub const BLOCK: usize = 512;
/// The record size GNU tar and Python pad an archive to (blocking factor 20).
pub const RECORD: u64 = 10240;

/// Type flag of a regular file.
pub const TYPE_FILE: u8 = b'0';
/// Type flag of a directory.
pub const TYPE_DIR: u8 = b'5';
/// Type flag of a GNU long-name record.
pub const TYPE_LONG_NAME: u8 = b'L';
/// Type flag of a pax extended header.
pub const TYPE_PAX: u8 = b'x';

/// Writes tar framing around member data.
pub struct TarWriter<W> {
    out: Counting<W>,
    framing: TarFraming,
    /// Index of each name's overrides in `framing.entries`.
    overrides: HashMap<String, usize>,
    /// Copy buffer, reused across members.
    buf: Vec<u8>,
}

/// The writer below the framing, and the bytes written into it.
struct Counting<W> {
    inner: W,
    written: u64,
}

impl<W: Write> Counting<W> {
    fn put(&mut self, bytes: &[u8]) -> io::Result<()> {
        self.inner.write_all(bytes)?;
        self.written += bytes.len() as u64;
        Ok(())
    }

    fn pad(&mut self, len: u64) -> io::Result<()> {
        let pad = (BLOCK as u64 - len % BLOCK as u64) % BLOCK as u64;
        self.put(&[0u8; BLOCK][..pad as usize])
    }
}

impl<W> std::fmt::Debug for TarWriter<W> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TarWriter")
            .field("written", &self.out.written)
            .field("framing", &self.framing)
            .finish_non_exhaustive()
    }
}

/// The fields one header block carries.
#[derive(Debug)]
pub struct HeaderSpec<'a> {
    /// The name (at most 100 bytes, or 255 split into prefix/name for ustar).
    pub name: &'a [u8],
    /// The type flag.
    pub type_flag: u8,
    /// The data size.
    pub size: u64,
    /// Mode, owner and time.
    pub fields: &'a EntryFields,
    /// Permission bits (files and directories differ).
    pub mode: u32,
    /// How this block's numbers are written, when not as the framing's.
    pub numbers: Option<TarNumbers>,
}

impl<W: Write> TarWriter<W> {
    /// Writes an archive into `inner` in the default (`gnu`) framing.
    pub fn new(inner: W) -> Self {
        TarWriter::with_framing(inner, FramingPreset::Gnu.framing().tar)
    }

    /// Writes an archive into `inner` framed by `framing`.
    pub fn with_framing(inner: W, framing: TarFraming) -> Self {
        let overrides = framing
            .entries
            .iter()
            .enumerate()
            .map(|(i, e)| (e.name.clone(), i))
            .collect();
        TarWriter {
            out: Counting { inner, written: 0 },
            framing,
            overrides,
            buf: Vec::new(),
        }
    }

    fn put_headers(&mut self, name: &str, type_flag: u8, size: u64) -> io::Result<()> {
        let (fields, pax, mode, numbers) = fields_of(&self.framing, &self.overrides, name);
        let mode = mode.unwrap_or(if type_flag == TYPE_DIR {
            fields.dir_mode
        } else {
            fields.mode
        });
        let pax_path = pax
            .as_ref()
            .is_some_and(|p| p.records.iter().any(|(k, _)| k == "path"));
        if let Some(pax) = pax {
            let body = pax_body(&pax.records);
            let block = encode_header(
                &HeaderSpec {
                    name: pax.name.as_bytes(),
                    type_flag: TYPE_PAX,
                    size: body.len() as u64,
                    fields: &pax.fields,
                    mode: pax.fields.mode,
                    numbers: pax.numbers,
                },
                &self.framing,
            )?;
            self.out.put(&block)?;
            self.out.put(&body)?;
            self.out.pad(body.len() as u64)?;
        }
        let bytes = name.as_bytes();
        let stored: &[u8] = if pax_path {
            &bytes[..bytes.len().min(100)]
        } else {
            bytes
        };
        let long = stored.len() > 100 && self.framing.format == TarFormat::Gnu;
        if long {
            let long_len = stored.len() as u64 + 1;
            let spec = match &self.framing.long_name {
                Some(l) => HeaderSpec {
                    name: l.name.as_bytes(),
                    type_flag: TYPE_LONG_NAME,
                    size: long_len,
                    fields: &l.fields,
                    mode: l.fields.mode,
                    numbers: l.numbers,
                },
                None => HeaderSpec {
                    name: b"././@LongLink",
                    type_flag: TYPE_LONG_NAME,
                    size: long_len,
                    fields: &fields,
                    mode: fields.mode,
                    numbers: None,
                },
            };
            let block = encode_header(&spec, &self.framing)?;
            self.out.put(&block)?;
            self.out.put(stored)?;
            self.out.put(&[0])?;
            self.out.pad(long_len)?;
        }
        let block = encode_header(
            &HeaderSpec {
                name: if long { &stored[..100] } else { stored },
                type_flag,
                size,
                fields: &fields,
                mode,
                numbers,
            },
            &self.framing,
        )?;
        self.out.put(&block)
    }

    /// Writes a directory entry; `name` has no trailing `/` (one is added).
    pub fn append_dir(&mut self, name: &str) -> io::Result<()> {
        let slash = if self.framing.dir_slash { "/" } else { "" };
        self.put_headers(&format!("{name}{slash}"), TYPE_DIR, 0)
    }

    /// Writes a file entry whose data is exactly `size` bytes read from `data`.
    /// Fails, naming `what`, when `data` yields fewer or more bytes.
    pub fn append_file(
        &mut self,
        name: &str,
        size: u64,
        data: &mut dyn Read,
        what: &str,
    ) -> io::Result<()> {
        let flag = self
            .overrides
            .get(name)
            .and_then(|&i| self.framing.entries.get(i))
            .and_then(|e| e.file_type)
            .unwrap_or(self.framing.file_type)
            .flag();
        self.put_headers(name, flag, size)?;
        let mut buf = std::mem::take(&mut self.buf);
        if buf.is_empty() && size > 0 {
            buf = vec![0u8; 256 * 1024];
        }
        let result = self.copy_exact(name, size, data, what, &mut buf);
        self.buf = buf;
        result?;
        self.out.pad(size)
    }

    fn copy_exact(
        &mut self,
        name: &str,
        size: u64,
        data: &mut dyn Read,
        what: &str,
        buf: &mut [u8],
    ) -> io::Result<()> {
        let mut left = size;
        while left > 0 {
            let want = buf.len().min(usize::try_from(left).unwrap_or(usize::MAX));
            let n = match data.read(&mut buf[..want]) {
                Ok(0) => {
                    return Err(io::Error::new(
                        io::ErrorKind::UnexpectedEof,
                        format!(
                            "member {name}: {what} ended after {} of {size} bytes (did it change while packing?)",
                            size - left
                        ),
                    ))
                }
                Ok(n) => n,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(e) => {
                    return Err(io::Error::new(
                        e.kind(),
                        format!("member {name}: reading {what} failed: {e}"),
                    ))
                }
            };
            self.out.put(&buf[..n])?;
            left -= n as u64;
        }
        let mut probe = [0u8; 1];
        if data.read(&mut probe)? != 0 {
            return Err(io::Error::new(
                io::ErrorKind::InvalidData,
                format!("member {name}: {what} holds more than the {size} bytes declared (did it change while packing?)"),
            ));
        }
        Ok(())
    }

    /// Writes the end blocks and pads to the framing's record size; returns
    /// the inner writer and the archive's total length.
    pub fn finish(mut self) -> io::Result<(W, u64)> {
        for _ in 0..self.framing.end_blocks {
            self.out.put(&[0u8; BLOCK])?;
        }
        let record = self.framing.record_size.max(BLOCK as u64);
        let pad = (record - self.out.written % record) % record;
        let zeros = [0u8; BLOCK];
        for _ in 0..pad / BLOCK as u64 {
            self.out.put(&zeros)?;
        }
        let rest = (pad % BLOCK as u64) as usize;
        self.out.put(&zeros[..rest])?;
        Ok((self.out.inner, self.out.written))
    }
}

/// The fields of `name`'s header: the defaults (borrowed: no copy per
/// member) with the entry's overrides, its pax header, mode and number forms.
fn fields_of<'a>(
    framing: &'a TarFraming,
    overrides: &HashMap<String, usize>,
    name: &str,
) -> (
    Cow<'a, EntryFields>,
    Option<Box<PaxFraming>>,
    Option<u32>,
    Option<TarNumbers>,
) {
    let over = overrides.get(name).and_then(|&i| framing.entries.get(i));
    let Some(o) = over else {
        return (Cow::Borrowed(&framing.defaults), None, None, None);
    };
    let mut f = framing.defaults.clone();
    let EntryFraming {
        uid,
        gid,
        uname,
        gname,
        mtime,
        pax,
        mode,
        numbers,
        ..
    } = o.clone();
    f.uid = uid.unwrap_or(f.uid);
    f.gid = gid.unwrap_or(f.gid);
    f.uname = uname.unwrap_or(f.uname);
    f.gname = gname.unwrap_or(f.gname);
    f.mtime = mtime.unwrap_or(f.mtime);
    (Cow::Owned(f), pax, mode, numbers)
}

/// The body of a pax `x` header: `"<len> <key>=<value>\n"` per record, where
/// `<len>` counts the whole record including its own digits.
pub fn pax_body(records: &[(String, String)]) -> Vec<u8> {
    let mut out = Vec::new();
    for (key, value) in records {
        let rest = key.len() + value.len() + 3; // ' ', '=', '\n'
        let mut len = rest + 1;
        while len != rest + len.to_string().len() {
            len = rest + len.to_string().len();
        }
        out.extend_from_slice(format!("{len} {key}={value}\n").as_bytes());
    }
    out
}

/// Writes a header block's checksum (`"%06o\0 "`, the unsigned byte sum with
/// the field counted as spaces): [`neff_schema::tar::set_checksum`].
pub fn set_checksum(block: &mut [u8]) {
    if let Ok(block) = <&mut [u8; BLOCK]>::try_from(block) {
        fields::set_checksum(block);
    }
}

/// Encodes one GNU-framing header block (mode as given, owner `nobody`).
pub fn header(name: &[u8], type_flag: u8, size: u64, mode: u32) -> [u8; BLOCK] {
    let framing = FramingPreset::Gnu.framing().tar;
    let spec = HeaderSpec {
        name: &name[..name.len().min(100)],
        type_flag,
        size,
        fields: &framing.defaults,
        mode,
        numbers: None,
    };
    encode_header(&spec, &framing).unwrap_or([0u8; BLOCK])
}

fn bad(msg: String) -> io::Error {
    io::Error::new(io::ErrorKind::InvalidInput, msg)
}

/// Encodes one header block under `framing`'s format and number forms (the
/// spec's own forms when it has them).
pub fn encode_header(spec: &HeaderSpec<'_>, framing: &TarFraming) -> io::Result<[u8; BLOCK]> {
    let mut h = [0u8; BLOCK];
    let name = String::from_utf8_lossy(spec.name);
    let (prefix, short) = split_name(spec.name, framing.format, framing.ustar_split)
        .ok_or_else(|| bad(format!("member name {name:?} does not fit a tar header")))?;
    h[..short.len()].copy_from_slice(short);
    h[345..345 + prefix.len()].copy_from_slice(prefix);
    let forms = spec.numbers.unwrap_or(framing.numbers);
    let f = spec.fields;
    let numbers = [
        (fields::MODE, u64::from(spec.mode), forms.mode, "mode"),
        (fields::UID, f.uid, forms.uid, "uid"),
        (fields::GID, f.gid, forms.gid, "gid"),
        (fields::SIZE, spec.size, forms.size, "size"),
        (fields::MTIME, f.mtime, forms.mtime, "mtime"),
        (fields::DEV_MAJOR, 0, forms.devmajor, "devmajor"),
        (fields::DEV_MINOR, 0, forms.devminor, "devminor"),
    ];
    for (field, value, form, what) in numbers {
        put_number(&mut h[field.range()], value, form, what, &name)?;
    }
    h[fields::TYPE_FLAG.at] = spec.type_flag;
    match framing.format {
        TarFormat::Gnu => h[fields::MAGIC_VERSION.range()].copy_from_slice(fields::GNU_MAGIC),
        TarFormat::Ustar => h[fields::MAGIC_VERSION.range()].copy_from_slice(fields::USTAR_MAGIC),
    }
    put_text(&mut h[fields::UNAME.range()], &f.uname, "uname", &name)?;
    put_text(&mut h[fields::GNAME.range()], &f.gname, "gname", &name)?;
    h[fields::CHECKSUM.range()].fill(b' ');
    let sum: u64 = h.iter().map(|&b| u64::from(b)).sum();
    put_number(
        &mut h[fields::CHECKSUM.range()],
        sum,
        forms.checksum,
        "checksum",
        &name,
    )?;
    Ok(h)
}

/// Splits a name into (prefix, name) for ustar, by `split`; GNU names stay
/// whole (the caller writes an `L` record for long ones).
fn split_name(name: &[u8], format: TarFormat, split: UstarSplit) -> Option<(&[u8], &[u8])> {
    if name.len() <= 100 {
        return Some((&[], name));
    }
    if format == TarFormat::Gnu {
        return None;
    }
    split.split(name)
}

fn put_text(field: &mut [u8], text: &str, what: &str, name: &str) -> io::Result<()> {
    if text.len() > field.len() {
        return Err(bad(format!(
            "member {name:?}: {what} {text:?} is longer than its {}-byte field",
            field.len()
        )));
    }
    field[..text.len()].copy_from_slice(text.as_bytes());
    Ok(())
}

/// Writes `value` in `form`; a value too large for the form's digits is
/// written in base-256, as GNU tar, Python and libarchive do.
fn put_number(
    field: &mut [u8],
    value: u64,
    form: NumberForm,
    what: &str,
    name: &str,
) -> io::Result<()> {
    if form.write(field, value) || NumberForm::Base256.write(field, value) {
        Ok(())
    } else {
        Err(bad(format!(
            "member {name:?}: {what} {value} cannot be written as {form} in its {}-byte field",
            field.len()
        )))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn header_fields_byte_by_byte() {
        let h = header(b"kelf-a.json", TYPE_FILE, 129, 0o644);
        assert_eq!(&h[0..11], b"kelf-a.json");
        assert!(h[11..100].iter().all(|&b| b == 0));
        assert_eq!(&h[100..108], b"0000644\0");
        assert_eq!(&h[108..116], b"0000000\0");
        assert_eq!(&h[116..124], b"0000000\0");
        assert_eq!(&h[124..136], b"00000000201\0");
        assert_eq!(&h[136..148], b"00000000000\0");
        let sum: u32 = h
            .iter()
            .enumerate()
            .map(|(i, &b)| {
                if (148..156).contains(&i) {
                    32
                } else {
                    u32::from(b)
                }
            })
            .sum();
        assert_eq!(&h[148..156], format!("{sum:06o}\0 ").as_bytes());
        assert_eq!(h[156], b'0');
        assert!(h[157..257].iter().all(|&b| b == 0), "linkname");
        assert_eq!(&h[257..265], b"ustar  \0");
        assert_eq!(
            &h[265..297],
            b"nobody\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0"
        );
        assert_eq!(&h[297..329], &h[265..297]);
        assert!(
            h[329..512].iter().all(|&b| b == 0),
            "devmajor/devminor/prefix/pad"
        );
        let d = header(b"sg00/", TYPE_DIR, 0, 0o755);
        assert_eq!(&d[100..108], b"0000755\0");
        assert_eq!(d[156], b'5');
    }

    #[test]
    fn large_sizes_use_base256() {
        let h = header(b"big", TYPE_FILE, 9 << 30, 0o644);
        assert_eq!(h[124], 0x80);
        assert_eq!(&h[128..136], &(9u64 << 30).to_be_bytes());
        let h = header(b"edge", TYPE_FILE, 8u64.pow(11) - 1, 0o644);
        assert_eq!(&h[124..136], b"77777777777\0");
    }

    #[test]
    fn archive_layout() {
        let mut w = TarWriter::new(Vec::new());
        let long = "d/".repeat(60) + "x";
        w.append_dir("d").unwrap();
        w.append_file(&long, 3, &mut &b"abc"[..], "test").unwrap();
        let (out, len) = w.finish().unwrap();
        assert_eq!(len, out.len() as u64);
        assert_eq!(out.len() % RECORD as usize, 0);
        assert_eq!(&out[0..2], b"d/");
        assert_eq!(out[512 + 156], b'L');
        assert_eq!(&out[512..525], b"././@LongLink");
        assert_eq!(&out[1024..1024 + long.len()], long.as_bytes());
        assert_eq!(out[1024 + long.len()], 0);
        assert_eq!(&out[1536..1636], &long.as_bytes()[..100]);
        assert_eq!(&out[2048..2051], b"abc");
        assert!(out[2051..].iter().all(|&b| b == 0));
    }

    #[test]
    fn short_and_long_readers_fail() {
        let mut w = TarWriter::new(Vec::new());
        let err = w.append_file("f", 4, &mut &b"abc"[..], "src").unwrap_err();
        assert!(
            err.to_string().contains("ended after 3 of 4 bytes"),
            "{err}"
        );
        let mut w = TarWriter::new(Vec::new());
        let err = w.append_file("f", 2, &mut &b"abc"[..], "src").unwrap_err();
        assert!(err.to_string().contains("more than the 2 bytes"), "{err}");
    }
}
