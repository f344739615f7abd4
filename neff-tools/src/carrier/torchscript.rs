//! The NEFFs of a torch-neuron(x) traced model (`model.neuron`, a
//! TorchScript zip): each pickle member (`…/data.pkl`, `….pkl`) is walked
//! opcode by opcode, and each pickled string that holds a NEFF header is a
//! NEFF.

use std::io::{Read, Seek};

use super::{looks_like_neff, MAX_CARRIER};

/// One NEFF of a TorchScript zip.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct ZipNeff {
    /// The zip member that holds it.
    pub member: String,
    /// The offset of the member's data in the file when it is stored
    /// uncompressed (the NEFF then lies at `data_start + offset`).
    pub data_start: Option<u64>,
    /// The NEFF's offset in the member's (uncompressed) data.
    pub offset: u64,
    /// Its length.
    pub len: u64,
}

/// A NEFF's length by its header: the header and `data_size` bytes.
fn whole_len(neff: &[u8]) -> u64 {
    let data_size = neff
        .get(16..24)
        .map_or(0, |b| u64::from_le_bytes(b.try_into().unwrap_or_default()));
    data_size.saturating_add(neff_schema::HEADER_LEN as u64)
}

/// The NEFFs of the zip `file`, member by member in the zip's order.
pub(crate) fn neffs<R: Read + Seek>(file: R) -> Result<Vec<ZipNeff>, String> {
    let mut zip = zip::ZipArchive::new(file).map_err(|e| format!("not a readable zip: {e}"))?;
    let mut out = Vec::new();
    // The pickles read, all told: a zip of many members is held to one bound.
    let mut read = 0u64;
    for index in 0..zip.len() {
        let mut member = zip
            .by_index(index)
            .map_err(|e| format!("zip member {index}: {e}"))?;
        let name = member.name().to_string();
        if !name.ends_with(".pkl") || member.is_dir() {
            continue;
        }
        let left = MAX_CARRIER - read;
        if member.size() > left {
            return Err(format!(
                "zip member {name}: {} bytes is over the {} MiB the pickles may have in all",
                member.size(),
                MAX_CARRIER >> 20
            ));
        }
        let stored = member.compression() == zip::CompressionMethod::Stored;
        let data_start = stored.then(|| member.data_start());
        let mut pickle = Vec::with_capacity(member.size() as usize);
        // What the member's header says is not trusted: at most `left` bytes.
        member
            .by_ref()
            .take(left + 1)
            .read_to_end(&mut pickle)
            .map_err(|e| format!("zip member {name}: {e}"))?;
        read += pickle.len() as u64;
        if read > MAX_CARRIER {
            return Err(format!(
                "zip member {name}: the pickles hold over the {} MiB read in all",
                MAX_CARRIER >> 20
            ));
        }
        let strings =
            super::pickle::strings(&pickle).map_err(|e| format!("zip member {name}: {e}"))?;
        for s in strings {
            let bytes = &pickle[s.offset..s.offset + s.len];
            // A pickled NEFF is exactly its header and its payload (a
            // string that only starts alike, such as protocol 2's latin-1
            // text of a bytes object, is not one).
            if looks_like_neff(bytes) && bytes.len() as u64 == whole_len(bytes) {
                out.push(ZipNeff {
                    member: name.clone(),
                    data_start: data_start.flatten(),
                    offset: s.offset as u64,
                    len: s.len as u64,
                });
            }
        }
    }
    Ok(out)
}
