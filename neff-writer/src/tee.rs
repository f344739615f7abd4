//! The payload on its way to the file, copied to the loader's streaming
//! check and its first and last bytes kept for the on-disk check.

use std::io::{self, Read, Seek, SeekFrom, Write};

use neff_loader::StreamCheck;
use neff_schema::HEADER_LEN;

use crate::error::{Error, ErrorKind};

/// How many bytes at each end of the payload are compared with the file.
const END_LEN: usize = 4096;

/// The first and last [`END_LEN`] bytes of the payload as streamed.
#[derive(Debug, Default)]
pub(crate) struct Ends {
    head: Vec<u8>,
    tail: Vec<u8>,
    count: u64,
}

impl Ends {
    fn keep(&mut self, buf: &[u8]) {
        let room = END_LEN - self.head.len();
        self.head.extend_from_slice(&buf[..room.min(buf.len())]);
        self.tail
            .extend_from_slice(&buf[buf.len().saturating_sub(END_LEN)..]);
        let excess = self.tail.len().saturating_sub(END_LEN);
        self.tail.drain(..excess);
        self.count += buf.len() as u64;
    }

    /// The cheap check of the file on disk: its length, the `header` bytes
    /// and both ends of the payload are what was written.
    pub(crate) fn compare<F: Read + Seek>(&self, file: &mut F, header: &[u8]) -> Result<(), Error> {
        let expected = HEADER_LEN as u64 + self.count;
        let len = file.seek(SeekFrom::End(0))?;
        if len != expected {
            return Err(differs(format!(
                "the written file is {len} bytes; {expected} were written"
            )));
        }
        let tail_at = expected - self.tail.len() as u64;
        for (offset, wanted) in [
            (0, header),
            (HEADER_LEN as u64, &self.head),
            (tail_at, &self.tail),
        ] {
            let mut found = vec![0u8; wanted.len()];
            file.seek(SeekFrom::Start(offset))?;
            file.read_exact(&mut found)?;
            if let Some(i) = found.iter().zip(wanted).position(|(a, b)| a != b) {
                return Err(differs(format!(
                    "the written file differs from what was written at offset {:#x}",
                    offset + i as u64
                )));
            }
        }
        Ok(())
    }
}

fn differs(message: String) -> Error {
    Error::new(ErrorKind::Io, message)
}

/// Writes through to `inner`, copying every byte written to the streaming
/// check (when one runs) and to the kept ends.
pub(crate) struct Tee<W> {
    inner: W,
    check: Option<StreamCheck>,
    ends: Ends,
}

impl<W: Write> Tee<W> {
    /// A tee into `check`, when given.
    pub(crate) fn new(inner: W, check: Option<StreamCheck>) -> Self {
        Tee {
            inner,
            check,
            ends: Ends::default(),
        }
    }

    /// The writer, the check and the kept ends.
    pub(crate) fn into_parts(self) -> (W, Option<StreamCheck>, Ends) {
        (self.inner, self.check, self.ends)
    }
}

impl<W: Write> Write for Tee<W> {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        let n = self.inner.write(buf)?;
        if let Some(check) = &mut self.check {
            check.write_all(&buf[..n])?;
        }
        self.ends.keep(&buf[..n]);
        Ok(n)
    }

    fn flush(&mut self) -> io::Result<()> {
        self.inner.flush()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Cursor;

    fn written(payload: &[u8]) -> (Ends, Vec<u8>) {
        let mut ends = Ends::default();
        payload.chunks(1000).for_each(|c| ends.keep(c));
        let mut file = vec![9u8; HEADER_LEN];
        file.extend_from_slice(payload);
        (ends, file)
    }

    #[test]
    fn the_on_disk_check_passes_what_was_written_and_names_where_it_differs() {
        let payload: Vec<u8> = (0..20_000u32).map(|i| (i % 251) as u8).collect();
        let (ends, file) = written(&payload);
        let header = vec![9u8; HEADER_LEN];
        ends.compare(&mut Cursor::new(&file), &header).unwrap();
        for (at, what) in [
            (5, "0x5"),
            (HEADER_LEN + 7, "0x407"),
            (file.len() - 1, "0x521f"),
        ] {
            let mut bad = file.clone();
            bad[at] ^= 1;
            let e = ends.compare(&mut Cursor::new(&bad), &header).unwrap_err();
            assert!(e.to_string().contains(what), "{e}");
        }
        let short = &file[..file.len() - 1];
        let e = ends.compare(&mut Cursor::new(short), &header).unwrap_err();
        assert!(
            e.to_string().contains("21023 bytes; 21024 were written"),
            "{e}"
        );
    }
}
