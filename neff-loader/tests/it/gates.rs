//! One negative test per container gate (G1–G12), asserting the gate, the
//! runtime's status code and its log line; plus the edge cases that must pass.

use crate::assert_refused;
use neff_loader::{load_buffer, Report, RuntimeProfile};
use neff_schema::{HashLayout, HashLayoutPolicy};
use neff_testkit::bytes::*;

fn verify(bytes: &[u8]) -> Report {
    load_buffer(Some(bytes), &RuntimeProfile::default()).report
}

fn verify_no_hash(bytes: &[u8]) -> Report {
    let profile = RuntimeProfile {
        verify_hash: false,
        ..RuntimeProfile::default()
    };
    load_buffer(Some(bytes), &profile).report
}

#[track_caller]
fn assert_refused_prefix(r: &Report, gate: &str, status: i64, prefix: &str) {
    assert!(!r.accepted, "{r:?}");
    assert_eq!(r.gate_id(), Some(gate), "{r:?}");
    assert_eq!(r.status.code(), status, "{r:?}");
    let message = r.message.as_deref().unwrap_or_default();
    assert!(
        message.starts_with(prefix),
        "{message:?} should start with {prefix:?}"
    );
}

#[test]
fn the_valid_base_case_passes() {
    let r = verify(&valid_neff());
    assert!(r.accepted, "{r:?}");
    assert_eq!((r.status.code(), r.status.name()), (0, "NRT_SUCCESS"));
    assert!(r.warnings.is_empty(), "{:?}", r.warnings);
}

#[test]
fn g1_null_buffer() {
    let r = load_buffer(None, &RuntimeProfile::default()).report;
    assert_refused(&r, "G1", 2, "Invalid NEFF buffer");
    assert_eq!(r.status.name(), "NRT_INVALID");
}

#[test]
fn g2_too_few_bytes() {
    assert_refused(
        &verify(&[0u8; 1023]),
        "G2",
        2,
        "Invalid number of NEFF bytes received 3ff",
    );
    assert_refused(
        &verify(&[]),
        "G2",
        2,
        "Invalid number of NEFF bytes received 0",
    );
}

#[test]
fn g3_header_size_not_below_file_size() {
    let mut n = valid_neff();
    let len = n.len() as u64;
    set_u64(&mut n, 0x08, len);
    assert_refused(
        &verify(&n),
        "G3",
        2,
        &format!("Invalid NEFF file size hdr sz: {len:x}, file sz: {len:x}"),
    );
}

#[test]
fn g4_major_above_2() {
    let mut n = valid_neff();
    set_u64(&mut n, 0x18, 3);
    set_u64(&mut n, 0x20, 7);
    let r = verify(&n);
    assert_refused(
        &r,
        "G4",
        10,
        "NEFF version: 3.7 is not supported, accepted version range: 0.x-2.x",
    );
    assert_eq!(r.status.name(), "NRT_UNSUPPORTED_NEFF_VERSION");
}

#[test]
fn g5_feature_trapdoor_at_major_2() {
    let mut n = valid_neff();
    set_u64(&mut n, 0x220, (1 << 27) | 0x4);
    set_u64(&mut n, 0x20, 1);
    assert_refused(
        &verify(&n),
        "G5",
        10,
        "This NEFF (version: 2.1, features: 0x8000000) has been compiled by a newer version of Neuron compiler. Features supported by this Neuron Runtime: 0x7ffffff. Please update the aws-neuronx-runtime-lib package to the latest version.",
    );
    // A runtime that supports the bit accepts it.
    let profile = RuntimeProfile {
        supported_features: 0xFFF_FFFF,
        ..RuntimeProfile::default()
    };
    assert!(load_buffer(Some(&n), &profile).report.accepted);
    // Bit 63 is never tested; majors 0 and 1 skip the trapdoor.
    set_u64(&mut n, 0x220, 1 << 63);
    assert!(verify(&n).accepted);
    for major in [0, 1] {
        set_u64(&mut n, 0x18, major);
        set_u64(&mut n, 0x220, u64::MAX);
        assert!(verify(&n).accepted, "major {major}");
    }
}

#[test]
fn g6_data_size_beyond_the_file() {
    let mut n = valid_neff();
    let room = n.len() as u64 - 1024;
    set_u64(&mut n, 0x10, room + 1);
    assert_refused(
        &verify(&n),
        "G6",
        2,
        &format!("Invalid NEFF data size({:x} vs {room:x})", room + 1),
    );
}

#[test]
fn g7_unknown_packager() {
    let mut n = valid_neff();
    set_u64(&mut n, 0x00, 3);
    assert_refused(&verify(&n), "G7", 10, "Unsupported NEFF packager: 3");
    set_u64(&mut n, 0x00, 0);
    assert_refused(&verify(&n), "G7", 10, "Unsupported NEFF packager: 0");
}

#[test]
fn g8_empty_payload_with_verification_asserts() {
    let mut n = valid_neff();
    set_u64(&mut n, 0x10, 0);
    let r = verify(&n);
    assert_refused(
        &r,
        "G8",
        134,
        "/opt/workspace/KaenaRuntime/kelf/neff.cpp:64: void md5(const uint8_t*, size_t, uint8_t*): Assertion `len > 0' failed.",
    );
    assert_eq!(r.status.name(), "ABORT");
    set_u64(&mut n, 0x00, 1);
    assert_refused(
        &verify(&n),
        "G8",
        134,
        "/opt/workspace/KaenaRuntime/kelf/neff.cpp:52: void sha256(const uint8_t*, size_t, uint8_t*): Assertion `len > 0' failed.",
    );
    // Without verification the empty payload is an open failure instead.
    assert_refused_prefix(&verify_no_hash(&n), "G10", 2, "Failed to open NEFF");
}

#[test]
fn g9_digest_mismatch() {
    let mut n = valid_neff();
    n[0xAC] ^= 0xFF;
    let r = verify(&n);
    assert_refused(&r, "G9", 2, "MD5 mismatch!");
    assert!(
        r.detail.as_deref().unwrap_or_default().contains("+0x0AC"),
        "{r:?}"
    );
    assert!(verify_no_hash(&n).accepted, "verification off skips G9");
    // Only hash[0..16] counts for MD5.
    let mut n = valid_neff();
    n[0xBC] = b'x';
    assert!(verify(&n).accepted);
    // pkg 1: all 32 bytes of SHA-256.
    let mut n = neff_with_payload(1, &tar_of(&[("neff.json", b"{}")]));
    n[0xCB] ^= 1;
    assert_refused(&verify(&n), "G9", 2, "SHA256 mismatch!");
    // A corrupted payload under a correct-looking header.
    let mut n = valid_neff();
    let last = n.len() - 9;
    n[last] ^= 0x55;
    assert_refused(&verify(&n), "G9", 2, "MD5 mismatch!");
}

fn verify_layout(bytes: &[u8], policy: HashLayoutPolicy) -> Report {
    let profile = RuntimeProfile {
        hash_layout: policy,
        ..RuntimeProfile::default()
    };
    load_buffer(Some(bytes), &profile).report
}

/// Rewrites the stored digest of `n` (pkg 1: 32 bytes, pkg 2: 16) word-reversed.
fn word_reverse_hash(n: &mut [u8], len: usize) {
    for word in n[0xAC..0xAC + len].chunks_exact_mut(4) {
        word.reverse();
    }
}

#[test]
fn g9_accepts_both_md5_layouts_and_reports_which() {
    let standard = valid_neff();
    let r = verify(&standard);
    assert!(r.accepted, "{r:?}");
    assert_eq!(r.hash_layout, Some(HashLayout::Standard));
    let mut reversed = valid_neff();
    word_reverse_hash(&mut reversed, 16);
    let r = verify(&reversed);
    assert!(r.accepted, "{r:?}");
    assert_eq!(r.hash_layout, Some(HashLayout::WordReversed));
    // With verification off nothing is claimed.
    assert_eq!(verify_no_hash(&reversed).hash_layout, None);
    // A policy naming one layout refuses the other.
    let r = verify_layout(&reversed, HashLayoutPolicy::Standard);
    assert_refused(&r, "G9", 2, "MD5 mismatch!");
    assert!(
        r.detail.as_deref().unwrap_or_default().contains("standard"),
        "{r:?}"
    );
    assert_refused(
        &verify_layout(&standard, HashLayoutPolicy::WordReversed),
        "G9",
        2,
        "MD5 mismatch!",
    );
    let r = verify_layout(&reversed, HashLayoutPolicy::WordReversed);
    assert_eq!(r.hash_layout, Some(HashLayout::WordReversed), "{r:?}");
    // A byte-reversed whole digest is neither layout.
    let mut flipped = valid_neff();
    flipped[0xAC..0xBC].reverse();
    assert_refused(&verify(&flipped), "G9", 2, "MD5 mismatch!");
}

#[test]
fn g9_accepts_both_sha256_layouts() {
    let standard = neff_with_payload(1, &tar_of(&[("neff.json", b"{}")]));
    assert_eq!(verify(&standard).hash_layout, Some(HashLayout::Standard));
    let mut reversed = standard.clone();
    word_reverse_hash(&mut reversed, 32);
    let r = verify(&reversed);
    assert_ne!(r.gate_id(), Some("G9"), "{r:?}");
    assert_eq!(r.hash_layout, Some(HashLayout::WordReversed));
    assert_refused(
        &verify_layout(&reversed, HashLayoutPolicy::Standard),
        "G9",
        2,
        "SHA256 mismatch!",
    );
}

#[test]
fn g10_payload_is_not_an_archive() {
    let n = neff_with_payload(2, &[0x42u8; 3000]);
    let r = verify(&n);
    assert_refused_prefix(&r, "G10", 2, "Failed to open NEFF ");
    // gzip framing around non-tar data.
    let r = verify(&neff_with_payload(2, &gzip(b"this is not a tar archive")));
    assert_refused_prefix(&r, "G10", 2, "Failed to open NEFF Truncated tar archive");
    // Corrupt deflate right after a gzip header.
    let r = verify(&neff_with_payload(
        2,
        b"\x1f\x8b\x08\x00\x00\x00\x00\x00\x00\x03\xff\xff\xff\xff",
    ));
    assert_refused_prefix(
        &r,
        "G10",
        2,
        "Failed to open NEFF gzip decompression failed",
    );
}

#[test]
fn g11_damaged_header_after_the_first() {
    let mut tar = tar_of(&[("neff.json", b"{}"), ("b.json", b"{}")]);
    tar[1024] ^= 0x01; // second header's name: checksum no longer matches
    let r = verify(&neff_with_payload(2, &gzip(&tar)));
    assert_refused(
        &r,
        "G11",
        2,
        "failure while reading NEFF metadata Damaged tar archive",
    );
    assert!(
        r.detail
            .as_deref()
            .unwrap_or_default()
            .contains("tar offset 1024"),
        "{r:?}"
    );
    // A payload cut inside a header.
    let tar = tar_of(&[("neff.json", b"{}")]);
    let r = verify(&neff_with_payload(1, &tar[..1024 + 100]));
    assert_refused(
        &r,
        "G11",
        2,
        "failure while reading NEFF metadata Truncated tar archive",
    );
}

#[test]
fn g12_bad_member_size_or_data() {
    let mut size = [0xFFu8; 12];
    size[11] = 0xFE; // base-256 -2
    let mut tar = tar_header(b"neg.bin", b'0', &size).to_vec();
    tar = finish_tar(tar);
    let r = verify(&neff_with_payload(2, &gzip(&tar)));
    // libarchive 3.8 fails the header itself: G11, never G12's size check.
    assert_refused(
        &r,
        "G11",
        2,
        "failure while reading NEFF metadata Tar entry has negative file size",
    );
    // Data shorter than the declared size.
    let mut tar = tar_header(b"short.bin", b'0', &size_field(4096)).to_vec();
    tar.extend_from_slice(&[1u8; 1000]);
    let r = verify(&neff_with_payload(1, &tar));
    assert_refused_prefix(&r, "G12", 2, "(open NEFF) failed to read short.bin");
}

#[test]
fn edge_cases_that_must_pass() {
    // header_size != 0x400 but below the file size: a warning only.
    let mut n = valid_neff();
    set_u64(&mut n, 0x08, 0x200);
    let r = verify(&n);
    assert!(
        r.accepted && r.warnings.iter().any(|w| w.contains("header_size")),
        "{r:?}"
    );
    // Any minor version.
    let mut n = valid_neff();
    set_u64(&mut n, 0x20, u64::MAX);
    assert!(verify(&n).accepted);
    // gzip under pkg 1 and raw tar under pkg 2: gzip is detected from the bytes.
    let tar = model_tar(&[]);
    assert!(verify(&neff_with_payload(1, &gzip(&tar))).accepted);
    assert!(verify(&neff_with_payload(2, &tar)).accepted);
    // Trailing bytes after the payload: a warning.
    let mut n = valid_neff();
    n.extend_from_slice(b"trailer");
    let r = verify(&n);
    assert!(
        r.accepted
            && r.warnings
                .iter()
                .any(|w| w.contains("7 bytes after the payload")),
        "{r:?}"
    );
    // An empty archive (only end blocks) opens fine: the container tier passes
    // and the manifest tier then misses neff.json.
    let r = verify(&neff_with_payload(2, &gzip(&[0u8; 10240])));
    assert_eq!(r.gate_id(), Some("G13"), "{r:?}");
}

#[test]
fn the_walk_matches_neff_parse() {
    let mut tar = model_entries(&[]);
    tar.extend_from_slice(&tar_header(b"./extra.json", b'0', &size_field(2)));
    push_padded(&mut tar, b"{}");
    tar.extend_from_slice(&tar_header(b"sg00/", b'5', &size_field(0)));
    tar.extend_from_slice(&tar_header(
        b"sg00/wavegraph-bin.json",
        b'0',
        &size_field(3),
    ));
    push_padded(&mut tar, b"abc");
    tar.extend_from_slice(&tar_header(b"sg00/empty.bin", b'0', &size_field(0)));
    tar.extend_from_slice(&tar_header(b"dup.json", b'0', &size_field(1)));
    push_padded(&mut tar, b"1");
    tar.extend_from_slice(&tar_header(b"dup.json", b'0', &size_field(2)));
    push_padded(&mut tar, b"22");
    tar.extend_from_slice(&tar_header(b"link", b'2', &size_field(0)));
    let n = neff_with_payload(2, &gzip(&finish_tar(tar)));
    let loaded = load_buffer(Some(&n), &RuntimeProfile::default());
    assert!(loaded.report.accepted, "{:?}", loaded.report);
    let c = loaded.container.unwrap();
    for key in [&b"dup.json"[..], b"link", b"extra.json", b"sg00/empty.bin"] {
        assert!(
            c.members.contains_key(key),
            "{}",
            String::from_utf8_lossy(key)
        );
    }
    assert!(
        !c.members.contains_key(&b"./extra.json"[..]),
        "./ is stripped"
    );
    assert!(
        !c.members.contains_key(&b"sg00/"[..]),
        "directories are skipped"
    );
    assert!(!c.members.contains_key(&b"sg00/wavegraph-bin.json"[..]));
    assert_eq!(c.member(b"dup.json").unwrap().data, Some(&b"22"[..]));
    assert_eq!(c.member(b"sg00/empty.bin").unwrap().size, 0);
    // Only manifests are held in memory.
    assert_eq!(c.member(b"extra.json").unwrap().data, Some(&b"{}"[..]));
    assert!(c.member(b"sg00/empty.bin").unwrap().data.is_none());
    let w = &loaded.report.warnings;
    assert!(
        w.iter().any(|w| w.contains("duplicate member dup.json")),
        "{w:?}"
    );
    assert!(w.iter().any(|w| w.contains("wavegraph-bin.json")), "{w:?}");
}

#[test]
fn every_prefix_of_a_valid_neff_is_refused_cleanly() {
    let n = valid_neff();
    for len in 0..n.len() {
        let r = verify(&n[..len]);
        assert!(!r.accepted, "prefix {len} accepted");
        assert!(
            r.gate.is_some() && r.message.is_some(),
            "prefix {len}: {r:?}"
        );
    }
}
