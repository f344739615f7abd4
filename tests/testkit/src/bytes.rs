//! NEFFs built by hand, byte by byte (tar blocks, gzip, the header and its
//! hash), independent of this project's writer: the inputs of the gate tests,
//! including those the packager deliberately refuses to write (neff-loader's
//! gate tests and the `neff` crate's integration tests).

use std::io::Write;

use md5::{Digest, Md5};
use sha2::Sha256;

/// One GNU-style tar header with a correct checksum.
pub fn tar_header(name: &[u8], type_flag: u8, size_field: &[u8]) -> [u8; 512] {
    use neff_schema::tar;
    let mut h = [0u8; 512];
    h[..name.len()].copy_from_slice(name);
    h[tar::MODE.range()].copy_from_slice(b"0000644\0");
    h[tar::SIZE.at..tar::SIZE.at + size_field.len()].copy_from_slice(size_field);
    h[tar::TYPE_FLAG.at] = type_flag;
    h[tar::MAGIC_VERSION.range()].copy_from_slice(tar::GNU_MAGIC);
    fix_checksum(&mut h);
    h
}

/// Recomputes a header block's checksum.
pub fn fix_checksum(h: &mut [u8; 512]) {
    neff_schema::tar::set_checksum(h);
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
    let mut h = neff_header(pkg, payload.len() as u64);
    set_hash(&mut h, pkg, payload);
    h.extend_from_slice(payload);
    h
}

/// The 1024-byte header of a NEFF whose payload is `len` bytes, its hash
/// not set (see [`set_hash`], [`set_md5`]).
pub fn neff_header(pkg: u64, len: u64) -> Vec<u8> {
    let mut h = vec![0u8; 1024];
    h[0..8].copy_from_slice(&pkg.to_le_bytes());
    h[8..16].copy_from_slice(&0x400u64.to_le_bytes());
    h[16..24].copy_from_slice(&len.to_le_bytes());
    h[24..32].copy_from_slice(&2u64.to_le_bytes());
    h[0xA8..0xAC].copy_from_slice(&1u32.to_le_bytes());
    h[0xDC] = b't';
    h[0x1DC..0x1E0].copy_from_slice(&1u32.to_le_bytes());
    h[0x228..0x22C].copy_from_slice(&1u32.to_le_bytes());
    h
}

/// Writes the digest `pkg` selects over `payload` into the header.
pub fn set_hash(h: &mut [u8], pkg: u64, payload: &[u8]) {
    if pkg == 1 {
        h[0xAC..0xCC].copy_from_slice(&Sha256::digest(payload));
    } else {
        set_md5(h, &Md5::digest(payload));
    }
}

/// Writes a pkg-2 payload's MD5 into the header.
pub fn set_md5(h: &mut [u8], md5: &[u8]) {
    h[0xAC..0xBC].copy_from_slice(md5);
    h[0xBC..0xCC].copy_from_slice(&[b'0'; 16]);
}

/// Sets a u64 header field.
pub fn set_u64(neff: &mut [u8], offset: usize, value: u64) {
    neff[offset..offset + 8].copy_from_slice(&value.to_le_bytes());
}

/// neff.json of the minimal model: one input x, one output y, the `__kelf` node.
pub const NEFF_JSON: &str = r#"{"nodes": [{"op": "null", "name": "x", "inputs": []},
  {"op": "tvm_op", "name": "sg", "attrs": {"func_name": "__kelf", "kelf": "kelf-0.json", "num_inputs": "1", "num_outputs": "1"}, "inputs": [[0, 0, 0]]}],
 "arg_nodes": [0], "heads": [[1, 0, 0]], "node_row_ptr": [0, 1, 2],
 "attrs": {"dltype": ["list_str", ["float32", "float32"]], "shape": ["list_shape", [[4], [4]]], "storage_id": ["list_int", [0, 1]]}}"#;

/// The KELF descriptor of the minimal model (target `*`).
pub const KELF_JSON: &str = r#"{"graphs": [{"definition": "sg00/def.json", "name": "sg00"}], "version": "0.5", "target": "*"}"#;

/// def.json of the minimal model.
pub const DEF_JSON: &str = r#"{"var": {"x": {"type": "input", "var_id": 0, "size": 16}, "y": {"type": "output", "var_id": 1, "size": 16}},
 "runtime_statebuffer_reservation": [],
 "pe": "pe.json", "act": "act.json", "pool": "pool.json", "dve": "dve.json", "sp": "sp.json"}"#;

/// The members of a minimal model that passes every gate on every arch
/// without warnings, with `replace` swapping in (or adding) members.
pub fn model_files(replace: &[(&str, &[u8])]) -> Vec<(String, Vec<u8>)> {
    let mut files: Vec<(String, Vec<u8>)> = vec![
        ("hlo_stats.json".into(), br#"{"mac_count": 0}"#.to_vec()),
        ("kelf-0.json".into(), KELF_JSON.as_bytes().to_vec()),
        ("neff.json".into(), NEFF_JSON.as_bytes().to_vec()),
        ("sg00/def.json".into(), DEF_JSON.as_bytes().to_vec()),
    ];
    for eng in ["pe", "act", "pool", "dve", "sp"] {
        let json = format!(r#"{{"dma": [], "instr": "{eng}.bin", "name": "{eng}"}}"#);
        files.push((format!("sg00/{eng}.json"), json.into_bytes()));
        let bin = if eng == "pe" {
            vec![0u8; 64]
        } else {
            Vec::new()
        };
        files.push((format!("sg00/{eng}.bin"), bin));
    }
    for (name, data) in replace {
        match files.iter_mut().find(|(n, _)| n == name) {
            Some(slot) => slot.1 = data.to_vec(),
            None => files.push((name.to_string(), data.to_vec())),
        }
    }
    files
}

/// [`model_files`] with some members left out.
pub fn model_files_without(replace: &[(&str, &[u8])], remove: &[&str]) -> Vec<(String, Vec<u8>)> {
    let mut files = model_files(replace);
    files.retain(|(n, _)| !remove.contains(&n.as_str()));
    files
}

/// A pkg-2 NEFF of any member list.
pub fn neff_of(files: &[(String, Vec<u8>)]) -> Vec<u8> {
    let refs: Vec<(&str, &[u8])> = files
        .iter()
        .map(|(n, d)| (n.as_str(), d.as_slice()))
        .collect();
    neff_with_payload(2, &gzip(&tar_of(&refs)))
}

/// The tar entries of [`model_files`], without end blocks.
pub fn model_entries(replace: &[(&str, &[u8])]) -> Vec<u8> {
    let mut out = Vec::new();
    for (name, data) in model_files(replace) {
        out.extend_from_slice(&tar_header(
            name.as_bytes(),
            b'0',
            &size_field(data.len() as u64),
        ));
        push_padded(&mut out, &data);
    }
    out
}

/// A tar of [`model_files`].
pub fn model_tar(replace: &[(&str, &[u8])]) -> Vec<u8> {
    finish_tar(model_entries(replace))
}

/// A pkg-2 NEFF of the minimal model with some members replaced.
pub fn model_neff(replace: &[(&str, &[u8])]) -> Vec<u8> {
    neff_with_payload(2, &gzip(&model_tar(replace)))
}

/// A small valid pkg-2 NEFF (the minimal model).
pub fn valid_neff() -> Vec<u8> {
    model_neff(&[])
}
