//! The NEFF UUID a runtime profile (`.ntff`) was recorded for.
//!
//! Observed on the two real profiles (`shared/real-neffs/`): at offset 128 a
//! protobuf record starts, field 1 (`0x0a`, a length byte, then the NEFF's
//! file name, `file.neff`), then field 2 (`0x12`, a length byte ≥ 16) whose
//! first 16 bytes are the NEFF header's UUID (`+0x0CC`), raw and in the same
//! byte order. With `file.neff` the UUID starts at offset 141.

use neff_schema::Uuid;

/// Where the record naming the NEFF starts.
const RECORD_OFFSET: usize = 128;

/// The UUID of the NEFF the profile `bytes` (its start: at least the first
/// 512 bytes, or the whole file) belongs to, and the file name it records;
/// an error naming the offset where `bytes` is not such a profile.
pub fn ntff_neff_uuid(bytes: &[u8]) -> Result<(Uuid, String), String> {
    let at = |offset: usize| {
        bytes.get(offset).copied().ok_or_else(|| {
            format!(
                "truncated: {} bytes, the NEFF record needs byte {offset}",
                bytes.len()
            )
        })
    };
    let expect = |offset: usize, want: u8, what: &str| match at(offset)? {
        b if b == want => Ok(()),
        b => Err(format!(
            "not a runtime profile: byte {offset} is {b:#04x}, expected {want:#04x} ({what})"
        )),
    };
    expect(RECORD_OFFSET, 0x0a, "the record's file-name field")?;
    let name_len = usize::from(at(RECORD_OFFSET + 1)?);
    let name_at = RECORD_OFFSET + 2;
    if name_len >= 0x80 {
        return Err(format!(
            "not a runtime profile: file-name length {name_len:#x} at offset {} is out of range",
            RECORD_OFFSET + 1
        ));
    }
    at(name_at + name_len)?;
    let name = &bytes[name_at..name_at + name_len];
    if !name.iter().all(|b| b.is_ascii_graphic()) {
        return Err(format!(
            "not a runtime profile: the file name at offset {name_at} is not printable"
        ));
    }
    let field = name_at + name_len;
    expect(field, 0x12, "the record's UUID field")?;
    let len = at(field + 1)?;
    if len < 16 {
        return Err(format!(
            "not a runtime profile: the UUID field at offset {field} holds {len} bytes, not 16"
        ));
    }
    let start = field + 2;
    at(start + 15)?;
    let mut uuid = [0u8; 16];
    uuid.copy_from_slice(&bytes[start..start + 16]);
    Ok((Uuid(uuid), String::from_utf8_lossy(name).into_owned()))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn profile(uuid: [u8; 16]) -> Vec<u8> {
        let mut b = vec![0u8; RECORD_OFFSET];
        b.extend([0x0a, 9]);
        b.extend(b"file.neff");
        b.extend([0x12, 22]);
        b.extend(uuid);
        b.extend([0u8; 6]);
        b
    }

    #[test]
    fn reads_the_uuid_at_141_and_refuses_garbage_and_short_input() {
        let b = profile([7; 16]);
        assert_eq!(
            ntff_neff_uuid(&b),
            Ok((Uuid([7; 16]), "file.neff".to_string()))
        );
        assert_eq!(b[141], 7);
        let e = ntff_neff_uuid(&b[..150]).unwrap_err();
        assert!(e.contains("truncated: 150 bytes"), "{e}");
        let mut g = b.clone();
        g[RECORD_OFFSET] = 0x55;
        let e = ntff_neff_uuid(&g).unwrap_err();
        assert!(e.contains("byte 128 is 0x55"), "{e}");
    }
}
