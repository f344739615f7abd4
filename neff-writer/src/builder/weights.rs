//! Weight sources: `.npy` headers read up front, sizes that must fit.

use std::io::{Cursor, Read};

use neff_schema::manifest::Dtype;

use super::npy::{self, NpyHeader};
use super::tensor::Tensor;
use super::{invalid, BuildError};
use crate::member::MemberSource;

/// A tensor whose byte size overflows 64 bits cannot be described.
pub(super) fn check_byte_size(at: &str, dtype: &Dtype, shape: &[u64]) -> Result<(), BuildError> {
    let elements = shape.iter().try_fold(1u64, |acc, &d| acc.checked_mul(d));
    if elements
        .and_then(|e| e.checked_mul(dtype.runtime_element_size()))
        .is_none()
    {
        return invalid(format!("{at}: the tensor's byte size overflows 64 bits"));
    }
    Ok(())
}

/// Reads an `.npy` source's header, fills the tensor's dtype and shape from
/// it, and gives back a source that still yields every byte.
pub(super) fn npy_source(
    source: MemberSource,
    tensor: &mut Tensor,
    checked: bool,
    at: &str,
) -> Result<MemberSource, BuildError> {
    let len = source.len();
    let (parsed, source) = match source {
        MemberSource::Bytes(b) => (npy::parse_header(&b), MemberSource::Bytes(b)),
        MemberSource::File { path, len } => {
            let parsed = std::fs::File::open(&path)
                .map_err(|source| BuildError::Io {
                    what: format!("{at}: {}", path.display()),
                    source,
                })
                .map(|mut f| npy::read_header(&mut f).map(|(h, _)| h))?;
            (parsed, MemberSource::File { path, len })
        }
        MemberSource::Reader { reader, len } if checked => {
            let mut reader = reader;
            let (header, prefix) = npy::read_header(&mut reader)
                .map_err(|e| BuildError::Invalid(format!("{at}: not a .npy v1 file: {e}")))?;
            let rejoined: Box<dyn Read + Send> = Box::new(Cursor::new(prefix).chain(reader));
            (
                Ok(header),
                MemberSource::Reader {
                    reader: rejoined,
                    len,
                },
            )
        }
        // Unchecked: do not consume a reader just to look.
        reader => return Ok(reader),
    };
    let header = match parsed {
        Ok(h) => h,
        Err(e) if checked => return invalid(format!("{at}: not a .npy v1 file: {e}")),
        Err(_) => return Ok(source),
    };
    if checked {
        check_npy(&header, len, at)?;
    }
    if tensor.dtype.is_none() {
        tensor.dtype = header.dtype();
    }
    if tensor.shape.is_none() {
        tensor.shape = header.shape.clone();
    }
    Ok(source)
}

pub(super) fn check_npy(header: &NpyHeader, len: u64, at: &str) -> Result<(), BuildError> {
    if header.fortran_order == Some(true) {
        return invalid(format!(
            "{at}: fortran_order is True; the runtime copies the data as it is (write it C-ordered)"
        ));
    }
    let data_len = len
        .checked_sub(header.data_offset())
        .ok_or_else(|| BuildError::Invalid(format!("{at}: the file ends inside its npy header")))?;
    if let Some(expected) = header.expected_data_len() {
        if expected != data_len {
            return invalid(format!(
                "{at}: the npy header promises {expected} data bytes ({:?} of {:?}) but the file has {data_len}",
                header.shape.as_deref().unwrap_or_default(),
                header.descr.as_deref().unwrap_or_default()
            ));
        }
    }
    Ok(())
}
