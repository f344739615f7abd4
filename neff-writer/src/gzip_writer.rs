//! gzip member headers (spec §3.2, §11.2): the default one, and the one a
//! [`GzipFraming`] describes. The deflate engines are `parallel_gzip` and
//! `zlib_gzip`.

use std::io;

use neff_schema::framing::GzipFraming;

/// The fixed gzip member header this writer emits.
pub const GZIP_HEADER: [u8; 10] = [0x1f, 0x8b, 0x08, 0x00, 0, 0, 0, 0, 0x00, 0x03];

/// The gzip member header a [`GzipFraming`] describes: `1f 8b 08`, FLG,
/// MTIME, XFL, OS, then FEXTRA and FNAME when present.
pub fn gzip_header(g: &GzipFraming) -> io::Result<Vec<u8>> {
    let mut flags = 0u8;
    let extra = match &g.fextra {
        Some(hex) => {
            flags |= 0x04;
            let bytes = neff_schema::hex::decode(hex).map_err(|e| {
                io::Error::new(io::ErrorKind::InvalidInput, format!("gzip fextra: {e}"))
            })?;
            if bytes.len() > usize::from(u16::MAX) {
                return Err(io::Error::new(
                    io::ErrorKind::InvalidInput,
                    format!("gzip fextra of {} bytes is over 65535", bytes.len()),
                ));
            }
            Some(bytes)
        }
        None => None,
    };
    if let Some(name) = &g.fname {
        if name.as_bytes().contains(&0) {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                "gzip fname holds a NUL byte",
            ));
        }
        flags |= 0x08;
    }
    let mut h = vec![0x1f, 0x8b, 0x08, flags];
    h.extend_from_slice(&g.mtime.to_le_bytes());
    h.push(g.xfl);
    h.push(g.os);
    if let Some(extra) = extra {
        h.extend_from_slice(&(extra.len() as u16).to_le_bytes());
        h.extend_from_slice(&extra);
    }
    if let Some(name) = &g.fname {
        h.extend_from_slice(name.as_bytes());
        h.push(0);
    }
    Ok(h)
}
