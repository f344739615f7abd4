//! Reading `.npy` headers from files; the header codec itself is
//! [`neff_schema::npy`].

use std::io::{self, Read};

pub use neff_schema::npy::{encode_v1, NpyHeader, NPY_MAGIC, NPY_V1_PREAMBLE};

use crate::error::{Error, ErrorKind};

/// The bytes are not a `.npy` v1 file, or the header is malformed.
fn bad<T>(why: impl Into<String>) -> Result<T, Error> {
    Err(Error::new(ErrorKind::Npy, why))
}

/// The schema's refusal as this crate's `Npy` error.
fn npy(e: neff_schema::Error) -> Error {
    Error::new(ErrorKind::Npy, e.message())
}

/// Parses a whole `.npy` v1 header held in `bytes` ([`neff_schema::npy::parse_header`]).
pub fn parse_header(bytes: &[u8]) -> Result<NpyHeader, Error> {
    neff_schema::npy::parse_header(bytes).map_err(npy)
}

/// Reads just the header of a `.npy` file from `reader` (10 + header_len
/// bytes) and returns it with the bytes consumed.
pub fn read_header<R: Read>(reader: &mut R) -> Result<(NpyHeader, Vec<u8>), Error> {
    let mut prefix = vec![0u8; NPY_V1_PREAMBLE];
    read_full(reader, &mut prefix, "the 10-byte npy preamble")?;
    neff_schema::npy::check_preamble(&prefix).map_err(npy)?;
    let header_len = u16::from_le_bytes([prefix[8], prefix[9]]);
    prefix.resize(NPY_V1_PREAMBLE + usize::from(header_len), 0);
    read_full(
        reader,
        &mut prefix[NPY_V1_PREAMBLE..],
        "the header dict (the length at +8 runs past the end)",
    )?;
    let header = parse_header(&prefix)?;
    Ok((header, prefix))
}

fn read_full<R: Read>(reader: &mut R, buf: &mut [u8], what: &str) -> Result<(), Error> {
    match reader.read_exact(buf) {
        Ok(()) => Ok(()),
        Err(e) if e.kind() == io::ErrorKind::UnexpectedEof => {
            bad(format!("the file is too short for {what}"))
        }
        Err(e) => Err(e.into()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_just_the_header_and_says_when_the_file_is_short() {
        let bytes = encode_v1("<f4", &[2, 3], &[0u8; 24]);
        let (h, consumed) = read_header(&mut &bytes[..]).unwrap();
        assert_eq!(consumed.len() as u64, h.data_offset());
        let short = &bytes[..40];
        let e = read_header(&mut &short[..]).unwrap_err();
        assert_eq!(e.kind(), ErrorKind::Npy);
        assert!(e.to_string().contains("too short"), "{e}");
    }
}
