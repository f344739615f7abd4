//! Weight sources: `.npy` headers read up front, data as long as the dtype
//! and shape say.

use std::io::{Cursor, Read};

use super::npy::{self, NpyHeader};
use super::tensor::{shape_bytes, Tensor, WeightFormat};
use crate::blob::Data;
use crate::error::invalid;
use crate::error::{Error, ErrorKind};
use crate::member::MemberSource;

/// The member source of a weight. `.npy` headers fill the tensor's dtype and
/// shape when it gives none; checked, the data must be as long as the dtype
/// and shape say.
pub(super) fn weight_source(
    data: Data,
    format: WeightFormat,
    tensor: &mut Tensor,
    checked: bool,
    at: &str,
) -> Result<MemberSource, Error> {
    let source = data.into_source(&format!("{at}: weights"))?;
    match format {
        WeightFormat::Npy => npy_source(source, tensor, checked, at),
        WeightFormat::Raw => {
            if checked {
                check_data_len(tensor, source.len(), &source, "", at)?;
            }
            // neuronx-cc writes a weight var's `size`: its data bytes.
            tensor.size = tensor.size.or(Some(source.len()));
            Ok(source)
        }
    }
}

/// Refuses data whose length is not elements × element size, when the
/// tensor has a shape and a dtype of known size.
fn check_data_len(
    tensor: &Tensor,
    data_len: u64,
    source: &MemberSource,
    what: &str,
    at: &str,
) -> Result<(), Error> {
    let (Some(dtype), Some(shape)) = (&tensor.dtype, &tensor.shape) else {
        return Ok(());
    };
    let Some(width) = dtype.element_size() else {
        return Ok(());
    };
    let expected = shape_bytes(at, dtype, shape, width)?;
    if expected != data_len {
        return invalid(format!(
            "{at}: weights {}: {dtype} of shape {shape:?} is {expected} bytes but the file has {data_len}{what}",
            source.describe()
        ));
    }
    Ok(())
}

/// Reads an `.npy` source's header, fills the tensor's dtype and shape from
/// it, and gives back a source that still yields every byte.
fn npy_source(
    source: MemberSource,
    tensor: &mut Tensor,
    checked: bool,
    at: &str,
) -> Result<MemberSource, Error> {
    let len = source.len();
    let (parsed, source) = match source {
        MemberSource::Bytes(b) => (npy::parse_header(&b), MemberSource::Bytes(b)),
        MemberSource::File { path, len } => {
            let parsed = std::fs::File::open(&path)
                .map_err(|e| Error::io_while(&format!("{at}: {}", path.display()), e))
                .map(|mut f| npy::read_header(&mut f).map(|(h, _)| h))?;
            (parsed, MemberSource::File { path, len })
        }
        MemberSource::Reader { reader, len } if checked => {
            let mut reader = reader;
            let (header, prefix) = npy::read_header(&mut reader).map_err(|e| {
                Error::new(ErrorKind::Invalid, format!("{at}: not a .npy v1 file: {e}"))
            })?;
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
    if tensor.dtype.is_none() {
        tensor.dtype = header.dtype();
    }
    if tensor.shape.is_none() {
        tensor.shape = header.shape.clone();
    }
    if let Some(data_len) = len.checked_sub(header.data_offset()) {
        tensor.size = tensor.size.or(Some(data_len));
    }
    if checked {
        let data_len = check_npy(&header, len, at)?;
        let what = format!(
            " data bytes after its {}-byte npy header",
            header.data_offset()
        );
        check_data_len(tensor, data_len, &source, &what, at)?;
    }
    Ok(source)
}

/// Checks an `.npy` header against the file's length; returns the data length.
fn check_npy(header: &NpyHeader, len: u64, at: &str) -> Result<u64, Error> {
    if header.fortran_order == Some(true) {
        return invalid(format!(
            "{at}: fortran_order is True; the runtime copies the data as it is (write it C-ordered)"
        ));
    }
    let data_len = len.checked_sub(header.data_offset()).ok_or_else(|| {
        Error::new(
            ErrorKind::Invalid,
            format!("{at}: the file ends inside its npy header"),
        )
    })?;
    if let Some(expected) = header.expected_data_len() {
        if expected != data_len {
            return invalid(format!(
                "{at}: the npy header promises {expected} data bytes ({:?} of {:?}) but the file has {data_len}",
                header.shape.as_deref().unwrap_or_default(),
                header.descr.as_deref().unwrap_or_default()
            ));
        }
    }
    Ok(data_len)
}

/// The data length of a whole `.npy` file at `path` (its length less the
/// header), after checking the header as a checked build does: version 1,
/// C order, and as many data bytes as the dtype and shape promise.
pub(crate) fn npy_file_data_len(
    path: &std::path::Path,
    at: &str,
) -> Result<(NpyHeader, u64), Error> {
    let mut file = std::fs::File::open(path)
        .map_err(|e| Error::io_while(&format!("{at}: {}", path.display()), e))?;
    let len = file
        .metadata()
        .map_err(|e| Error::io_while(&format!("{at}: {}", path.display()), e))?
        .len();
    let (header, _) = npy::read_header(&mut file)
        .map_err(|e| Error::new(ErrorKind::Invalid, format!("{at}: not a .npy v1 file: {e}")))?;
    let data_len = check_npy(&header, len, at)?;
    Ok((header, data_len))
}

/// [`npy_file_data_len`] for a whole `.npy` file held in memory.
pub(crate) fn npy_bytes_data_len(bytes: &[u8], at: &str) -> Result<(NpyHeader, u64), Error> {
    let header = npy::parse_header(bytes)
        .map_err(|e| Error::new(ErrorKind::Invalid, format!("{at}: not a .npy v1 file: {e}")))?;
    let data_len = check_npy(&header, bytes.len() as u64, at)?;
    Ok((header, data_len))
}
