//! Helpers shared by the integration tests: hand-built tar blocks and NEFFs,
//! for inputs the packager deliberately refuses to write.
#![allow(dead_code)]

use std::io::Write;

use md5::{Digest, Md5};
use sha2::Sha256;

/// One GNU-style tar header with a correct checksum.
pub fn tar_header(name: &[u8], type_flag: u8, size_field: &[u8]) -> [u8; 512] {
    let mut h = [0u8; 512];
    h[..name.len()].copy_from_slice(name);
    h[100..108].copy_from_slice(b"0000644\0");
    h[124..124 + size_field.len()].copy_from_slice(size_field);
    h[156] = type_flag;
    h[257..265].copy_from_slice(b"ustar  \0");
    fix_checksum(&mut h);
    h
}

/// Recomputes a header block's checksum.
pub fn fix_checksum(h: &mut [u8; 512]) {
    h[148..156].copy_from_slice(b"        ");
    let sum: u32 = h.iter().map(|&b| u32::from(b)).sum();
    h[148..156].copy_from_slice(format!("{sum:06o}\0 ").as_bytes());
}

/// An octal size field.
pub fn size_field(size: u64) -> Vec<u8> {
    format!("{size:011o}\0").into_bytes()
}

/// A tar of regular files (name, data), with end blocks and record padding.
pub fn tar_of(files: &[(&str, &[u8])]) -> Vec<u8> {
    let mut out = Vec::new();
    for (name, data) in files {
        out.extend_from_slice(&tar_header(
            name.as_bytes(),
            b'0',
            &size_field(data.len() as u64),
        ));
        push_padded(&mut out, data);
    }
    finish_tar(out)
}

/// Appends data padded to a 512-byte boundary.
pub fn push_padded(out: &mut Vec<u8>, data: &[u8]) {
    out.extend_from_slice(data);
    out.resize(out.len().div_ceil(512) * 512, 0);
}

/// Appends the end blocks and pads to 10240 bytes.
pub fn finish_tar(mut out: Vec<u8>) -> Vec<u8> {
    out.extend_from_slice(&[0u8; 1024]);
    out.resize(out.len().div_ceil(10240) * 10240, 0);
    out
}

/// gzip at level 6.
pub fn gzip(data: &[u8]) -> Vec<u8> {
    let mut e = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::new(6));
    e.write_all(data).unwrap();
    e.finish().unwrap()
}

/// A NEFF around stored payload bytes with a correct hash for `pkg` (1 or 2).
pub fn neff_with_payload(pkg: u64, payload: &[u8]) -> Vec<u8> {
    let mut h = vec![0u8; 1024];
    h[0..8].copy_from_slice(&pkg.to_le_bytes());
    h[8..16].copy_from_slice(&0x400u64.to_le_bytes());
    h[16..24].copy_from_slice(&(payload.len() as u64).to_le_bytes());
    h[24..32].copy_from_slice(&2u64.to_le_bytes());
    h[0xA8..0xAC].copy_from_slice(&1u32.to_le_bytes());
    set_hash(&mut h, pkg, payload);
    h[0xDC] = b't';
    h[0x1DC..0x1E0].copy_from_slice(&1u32.to_le_bytes());
    h[0x228..0x22C].copy_from_slice(&1u32.to_le_bytes());
    h.extend_from_slice(payload);
    h
}

/// Writes the digest `pkg` selects over `payload` into the header.
pub fn set_hash(h: &mut [u8], pkg: u64, payload: &[u8]) {
    if pkg == 1 {
        h[0xAC..0xCC].copy_from_slice(&Sha256::digest(payload));
    } else {
        h[0xAC..0xBC].copy_from_slice(&Md5::digest(payload));
        h[0xBC..0xCC].copy_from_slice(&[b'0'; 16]);
    }
}

/// Sets a u64 header field.
pub fn set_u64(neff: &mut [u8], offset: usize, value: u64) {
    neff[offset..offset + 8].copy_from_slice(&value.to_le_bytes());
}

/// A small valid pkg-2 NEFF.
pub fn valid_neff() -> Vec<u8> {
    neff_with_payload(
        2,
        &gzip(&tar_of(&[("neff.json", b"{}"), ("sg00/def.json", b"{}")])),
    )
}
