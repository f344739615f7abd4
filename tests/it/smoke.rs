//! CI smoke: 20,000+ seeded generated and mutated inputs through the loader
//! and the inspect path, asserting that nothing panics and every refusal
//! names a gate. Deterministic (fixed seeds).

use crate::common;

use std::io::{Cursor, Read, Write};

use neff::loader::{load_buffer, Loader, RuntimeProfile};
use neff::schema::Arch;
use neff::smith::corpus::{seed_file, Mix};
use neff::smith::generate::GenConfig;
use neff::tools::InspectReport;
use neff::writer::{ZlibGzipWriter, GZIP_HEADER};

/// Flips, overwrites, inserts, deletes or truncates a few bytes.
fn mutate_bytes(data: &mut Vec<u8>, mix: &mut Mix) {
    for _ in 0..1 + mix.below(4) {
        if data.is_empty() {
            data.push(mix.next_u64() as u8);
            continue;
        }
        let i = mix.below(data.len());
        match mix.below(6) {
            0 => data[i] ^= 1 << mix.below(8),
            1 => data[i] = [0, 0xFF, b'0', b'/', b'"', b'{'][mix.below(6)],
            2 => data.insert(i, mix.next_u64() as u8),
            3 => {
                data.remove(i);
            }
            4 => data.truncate(i),
            _ => {
                let j = mix.below(data.len());
                data.swap(i, j);
            }
        }
    }
}

/// The decompressed tar of a pkg-2 NEFF.
fn inflate(neff: &[u8]) -> Option<Vec<u8>> {
    let mut out = Vec::new();
    flate2::read::GzDecoder::new(neff.get(1024..)?)
        .read_to_end(&mut out)
        .ok()?;
    Some(out)
}

/// Re-wraps a (mutated) tar as pkg 2 with a correct MD5, so the mutation
/// reaches the tar walk and the manifests.
fn rewrap(original: &[u8], tar: &[u8]) -> Vec<u8> {
    let mut gz = ZlibGzipWriter::new(Vec::new(), &GZIP_HEADER, 1, 8).unwrap();
    gz.write_all(tar).unwrap();
    let payload = gz.finish().unwrap();
    let mut out = original[..1024].to_vec();
    out[16..24].copy_from_slice(&(payload.len() as u64).to_le_bytes());
    common::set_hash(&mut out, 2, &payload);
    out.extend_from_slice(&payload);
    out
}

fn check(bytes: &[u8], arch: Arch, inspect: bool) -> bool {
    let r = load_buffer(Some(bytes), &RuntimeProfile::for_arch(arch)).report;
    assert_eq!(r.accepted, r.gate.is_none(), "{r:?}");
    if !r.accepted {
        assert!(r.message.is_some() && r.status.code() != 0, "{r:?}");
    }
    if inspect {
        let verdict = Loader::new(&RuntimeProfile::default())
            .verify(Some(Cursor::new(bytes)))
            .unwrap();
        let report = InspectReport::new("smoke", &verdict);
        serde_json::to_string(&report).unwrap();
    }
    r.accepted
}

#[test]
fn twenty_thousand_generated_and_mutated_inputs_never_panic() {
    let config = GenConfig {
        max_blob: 128,
        ..GenConfig::default()
    };
    let bases: Vec<Vec<u8>> = (0..48)
        .filter_map(|i| seed_file(2024, i, 0.25, &config).map(|s| s.bytes))
        .collect();
    assert!(bases.len() >= 40);
    // (NEFF, its inflated tar) for the pkg-2 bases.
    let pairs: Vec<(&Vec<u8>, Vec<u8>)> = bases
        .iter()
        .filter_map(|b| Some((b, inflate(b)?)))
        .collect();
    assert!(!pairs.is_empty());
    let mut mix = Mix(0x5EED);
    let (mut inputs, mut accepted) = (0usize, 0usize);
    for round in 0..20_400 {
        let arch = Arch::ALL[mix.below(3)];
        let inspect = round % 10 == 0;
        let bytes = match round % 4 {
            // A generated or mutated corpus file as it is.
            0 => bases[mix.below(bases.len())].clone(),
            // Raw byte damage anywhere in the file.
            1 => {
                let mut b = bases[mix.below(bases.len())].clone();
                mutate_bytes(&mut b, &mut mix);
                b
            }
            // Damage inside the tar, re-wrapped with a valid hash.
            _ => {
                let (neff, tar) = &pairs[mix.below(pairs.len())];
                let mut tar = tar.clone();
                mutate_bytes(&mut tar, &mut mix);
                rewrap(neff, &tar)
            }
        };
        accepted += usize::from(check(&bytes, arch, inspect));
        inputs += 1;
    }
    assert!(inputs >= 20_000);
    assert!(
        accepted > 1000 && accepted < inputs - 1000,
        "{accepted} of {inputs} accepted"
    );
}
