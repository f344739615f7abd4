//! libarchive bids its filters again on each filter's output: a payload of
//! gzip inside gzip is the tar inside both to every command (as to the
//! runtime), and a tar whose first bytes are a gzip header is taken for gzip
//! and fails. The libarchive differential test checks the same payloads
//! against the real library.

use std::io::{Read, Write};

use crate::common::{code, neff, s, stderr, stdout, write_model_tree};

fn gzip(data: &[u8]) -> Vec<u8> {
    let mut e = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
    e.write_all(data).unwrap();
    e.finish().unwrap()
}

/// A NEFF whose payload is `payload` (header fields fixed up: data_size, MD5).
fn with_payload(header: &[u8], payload: &[u8]) -> Vec<u8> {
    use md5::Digest;
    let mut h = header[..1024].to_vec();
    h[16..24].copy_from_slice(&(payload.len() as u64).to_le_bytes());
    h[0xAC..0xBC].copy_from_slice(&md5::Md5::digest(payload));
    [h, payload.to_vec()].concat()
}

#[test]
fn gzip_inside_gzip_reads_as_the_tar_inside_and_a_gzip_named_tar_fails() {
    let tmp = tempfile::tempdir().unwrap();
    let tree = tmp.path().join("model");
    write_model_tree(&tree);
    let plain = tmp.path().join("plain.neff");
    assert!(
        neff(&["pack", s(&tree), "-o", s(&plain), "-q", "--no-fsync"])
            .status
            .success()
    );
    let bytes = std::fs::read(&plain).unwrap();
    let mut tar = Vec::new();
    flate2::read::MultiGzDecoder::new(&bytes[1024..])
        .read_to_end(&mut tar)
        .unwrap();

    let twice = tmp.path().join("twice.neff");
    std::fs::write(&twice, with_payload(&bytes, &gzip(&gzip(&tar)))).unwrap();
    let verified = neff(&["verify", s(&twice)]);
    assert_eq!(code(&verified), 0, "{verified:?}");
    let cat = neff(&["cat", s(&twice), "neff.json"]);
    assert_eq!(cat.stdout, neff(&["cat", s(&plain), "neff.json"]).stdout);
    let programs = neff(&["diff", "--programs", "-q", s(&twice), s(&plain)]);
    assert_eq!(code(&programs), 0, "{programs:?}");
    let header = tmp.path().join("h.json");
    let out = tmp.path().join("out");
    let unpacked = neff(&[
        "unpack",
        s(&twice),
        "-o",
        s(&out),
        "--header-out",
        s(&header),
    ]);
    assert!(unpacked.status.success(), "{unpacked:?}");
    assert!(
        stderr(&unpacked).contains("gzip inside gzip (2 layers"),
        "{unpacked:?}"
    );

    // A tar whose first 10 bytes are a gzip header: gzip bids, inflate fails.
    let mut decoy = tar.clone();
    decoy[..10].copy_from_slice(b"\x1f\x8b\x08\0\0\0\0\0\0\x03");
    let named = tmp.path().join("named.neff");
    std::fs::write(&named, with_payload(&bytes, &gzip(&decoy))).unwrap();
    let refused = neff(&["verify", s(&named)]);
    assert_eq!(code(&refused), 1, "{refused:?}");
    assert!(
        stdout(&refused).contains("gzip decompression failed"),
        "{refused:?}"
    );
}
