//! Deterministic GNU-style ustar framing (spec §3.3).
//!
//! Every header has magic `"ustar "` + version `" \0"`, mode 0644 (files) or
//! 0755 (directories), uid/gid 0, uname/gname `nobody`, mtime 0, and zeroed
//! devmajor/devminor/prefix. Names over 100 bytes get a GNU `L` record. The
//! archive ends with two zero blocks, padded to a 10240-byte record.

use std::io::{self, Read, Write};

/// Size of a tar block.
pub const BLOCK: usize = 512;
/// The record size the archive is padded to (GNU tar's default blocking factor 20).
pub const RECORD: u64 = 10240;

/// Type flag of a regular file.
pub const TYPE_FILE: u8 = b'0';
/// Type flag of a directory.
pub const TYPE_DIR: u8 = b'5';
/// Type flag of a GNU long-name record.
pub const TYPE_LONG_NAME: u8 = b'L';

/// Writes tar framing around member data.
pub struct TarWriter<W> {
    inner: W,
    written: u64,
    /// Copy buffer, reused across members.
    buf: Vec<u8>,
}

impl<W: Write> TarWriter<W> {
    /// Writes an archive into `inner`.
    pub fn new(inner: W) -> Self {
        TarWriter {
            inner,
            written: 0,
            buf: Vec::new(),
        }
    }

    /// Bytes of tar written so far.
    pub fn written(&self) -> u64 {
        self.written
    }

    fn put(&mut self, bytes: &[u8]) -> io::Result<()> {
        self.inner.write_all(bytes)?;
        self.written += bytes.len() as u64;
        Ok(())
    }

    fn pad(&mut self, len: u64) -> io::Result<()> {
        let pad = (BLOCK as u64 - len % BLOCK as u64) % BLOCK as u64;
        self.put(&[0u8; BLOCK][..pad as usize])
    }

    fn put_headers(&mut self, name: &str, type_flag: u8, size: u64) -> io::Result<()> {
        let name = name.as_bytes();
        if name.len() > 100 {
            let long_len = name.len() as u64 + 1;
            self.put(&header(b"././@LongLink", TYPE_LONG_NAME, long_len, 0o644))?;
            self.put(name)?;
            self.put(&[0])?;
            self.pad(long_len)?;
        }
        let mode = if type_flag == TYPE_DIR { 0o755 } else { 0o644 };
        self.put(&header(&name[..name.len().min(100)], type_flag, size, mode))
    }

    /// Writes a directory entry; `name` has no trailing `/` (one is added).
    pub fn append_dir(&mut self, name: &str) -> io::Result<()> {
        self.put_headers(&format!("{name}/"), TYPE_DIR, 0)
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
        self.put_headers(name, TYPE_FILE, size)?;
        let mut buf = std::mem::take(&mut self.buf);
        if buf.is_empty() && size > 0 {
            buf = vec![0u8; 256 * 1024];
        }
        let result = self.copy_exact(name, size, data, what, &mut buf);
        self.buf = buf;
        result?;
        self.pad(size)
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
            self.put(&buf[..n])?;
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

    /// Writes the two zero end blocks and pads to a 10240-byte record; returns
    /// the inner writer and the archive's total length.
    pub fn finish(mut self) -> io::Result<(W, u64)> {
        self.put(&[0u8; 2 * BLOCK])?;
        let pad = (RECORD - self.written % RECORD) % RECORD;
        let zeros = [0u8; BLOCK];
        for _ in 0..pad / BLOCK as u64 {
            self.put(&zeros)?;
        }
        Ok((self.inner, self.written))
    }
}

/// Writes a header block's checksum (`"%06o\0 "`, the unsigned byte sum with
/// the field counted as spaces).
pub fn set_checksum(block: &mut [u8]) {
    block[148..156].copy_from_slice(b"        ");
    let sum: u32 = block.iter().map(|&b| u32::from(b)).sum();
    block[148..156].copy_from_slice(format!("{sum:06o}\0 ").as_bytes());
}

/// Encodes one GNU-style header block.
pub fn header(name: &[u8], type_flag: u8, size: u64, mode: u32) -> [u8; BLOCK] {
    let mut h = [0u8; BLOCK];
    h[..name.len()].copy_from_slice(name);
    h[100..108].copy_from_slice(format!("{mode:07o}\0").as_bytes());
    h[108..116].copy_from_slice(b"0000000\0");
    h[116..124].copy_from_slice(b"0000000\0");
    encode_size(&mut h[124..136], size);
    h[136..148].copy_from_slice(b"00000000000\0");
    h[156] = type_flag;
    h[257..263].copy_from_slice(b"ustar ");
    h[263..265].copy_from_slice(b" \0");
    h[265..271].copy_from_slice(b"nobody");
    h[297..303].copy_from_slice(b"nobody");
    set_checksum(&mut h);
    h
}

/// 11 octal digits + NUL, or GNU base-256 from 8 GiB up.
fn encode_size(field: &mut [u8], size: u64) {
    if size < 8u64.pow(11) {
        field.copy_from_slice(format!("{size:011o}\0").as_bytes());
    } else {
        field.fill(0);
        field[0] = 0x80;
        field[4..12].copy_from_slice(&size.to_be_bytes());
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
