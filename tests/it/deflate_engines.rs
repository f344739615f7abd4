//! The deflate engines of new NEFFs: `parallel-libdeflate` at level 1 (the
//! default) in every command that writes one, `parallel` above it and on
//! request, each recovered from the file and rebuilt byte for byte, and
//! the same bytes at any thread count.

use crate::common::*;

use std::fs;
use std::path::{Path, PathBuf};

use serde_json::Value;

/// The deflate parameters the framing recovery finds in `neff` (proven over
/// the whole stream), and the header record it wrote (in `dir`).
fn recovered_deflate(neff_file: &Path, dir: &Path) -> (Value, PathBuf) {
    let header = dir.join("header.json");
    let tree = dir.join("tree");
    let _ = fs::remove_dir_all(&tree);
    let r = neff(&[
        "unpack",
        s(neff_file),
        "-o",
        s(&tree),
        "--header-out",
        s(&header),
        "--prove-deflate",
        "--force",
    ]);
    assert_eq!(code(&r), 0, "{}", stderr(&r));
    let record: Value = serde_json::from_slice(&fs::read(&header).unwrap()).unwrap();
    (record["framing"]["gzip"]["deflate"].clone(), header)
}

/// A tree over several level-1 chunks: the example model plus 3 MiB of
/// weight-like bytes (f32 values with the low 16 bits zero).
fn tree_of_chunks(dir: &Path) -> PathBuf {
    let tree = dir.join("src");
    write_model_tree(&tree);
    let mut state = 0x9E37_79B9_7F4A_7C15u64;
    let weights: Vec<u8> = (0..(3 << 20) / 4)
        .flat_map(|_| {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            [
                0,
                0,
                (state >> 40) as u8 & 0x3F,
                0x3C | (state >> 50) as u8 & 1,
            ]
        })
        .collect();
    fs::write(tree.join("weights.bin"), weights).unwrap();
    tree
}

fn pack(tree: &Path, out: &Path, extra: &[&str]) {
    let mut args = vec!["pack", s(tree), "-o", s(out), "-q", "--no-fsync"];
    args.extend_from_slice(extra);
    let r = neff(&args);
    assert_eq!(code(&r), 0, "{}", stderr(&r));
}

fn engine_and_level(deflate: &Value) -> (&str, u64) {
    (
        deflate["engine"].as_str().unwrap(),
        deflate["level"].as_u64().unwrap(),
    )
}

#[test]
fn pack_writes_libdeflate_at_level_one_and_zlib_rs_above_and_each_rebuilds_exactly() {
    let tmp = tempfile::tempdir().unwrap();
    let tree = tree_of_chunks(tmp.path());
    for (extra, expected) in [
        (&[][..], ("parallel-libdeflate", 1)),
        (&["--level", "6"][..], ("parallel", 6)),
        // The earlier releases' level-1 bytes, still written on request.
        (&["--deflate", "parallel"][..], ("parallel", 1)),
    ] {
        let out = tmp.path().join("a.neff");
        pack(&tree, &out, extra);
        let (deflate, header) = recovered_deflate(&out, tmp.path());
        assert_eq!(engine_and_level(&deflate), expected, "{extra:?}");
        let again = tmp.path().join("b.neff");
        pack(&tmp.path().join("tree"), &again, &["--header", s(&header)]);
        assert_eq!(
            fs::read(&out).unwrap(),
            fs::read(&again).unwrap(),
            "{extra:?}"
        );
    }
}

#[test]
fn libdeflate_output_is_the_same_at_one_and_two_threads_and_smaller_than_zlib_level_one() {
    let tmp = tempfile::tempdir().unwrap();
    let tree = tree_of_chunks(tmp.path());
    let one = tmp.path().join("one.neff");
    let two = tmp.path().join("two.neff");
    let zlib = tmp.path().join("zlib.neff");
    pack(&tree, &one, &["--threads", "1"]);
    pack(&tree, &two, &["--threads", "2"]);
    pack(&tree, &zlib, &["--deflate", "zlib"]);
    let one = fs::read(one).unwrap();
    assert_eq!(one, fs::read(two).unwrap());
    let zlib = fs::read(zlib).unwrap().len();
    assert!(
        one.len() < zlib,
        "{} bytes against classic zlib's {zlib}",
        one.len()
    );
}

#[test]
fn a_libdeflate_engine_at_another_level_is_a_clear_error() {
    let tmp = tempfile::tempdir().unwrap();
    let tree = tree_of_chunks(tmp.path());
    let out = tmp.path().join("x.neff");
    let r = neff(&[
        "pack",
        s(&tree),
        "-o",
        s(&out),
        "--deflate",
        "parallel-libdeflate",
        "--level",
        "6",
    ]);
    assert_eq!(code(&r), 2, "{}", stderr(&r));
    assert!(
        stderr(&r).contains("parallel-libdeflate engine runs at level 1 only"),
        "{}",
        stderr(&r)
    );
    assert!(!out.exists());
}

#[test]
fn build_and_fixtures_write_the_libdeflate_engine() {
    let tmp = tempfile::tempdir().unwrap();
    let built = tmp.path().join("built.neff");
    let spec = Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/weights.json");
    let r = neff(&["build", s(&spec), "-o", s(&built), "-q"]);
    assert_eq!(code(&r), 0, "{}", stderr(&r));
    let (deflate, _) = recovered_deflate(&built, tmp.path());
    assert_eq!(engine_and_level(&deflate), ("parallel-libdeflate", 1));

    let fixtures = tmp.path().join("fixtures");
    let r = neff(&["fixtures", "--out", s(&fixtures)]);
    assert_eq!(code(&r), 0, "{}", stderr(&r));
    // A valid pkg 2 fixture in the default framing.
    let manifest: Value =
        serde_json::from_slice(&fs::read(fixtures.join("manifest.json")).unwrap()).unwrap();
    let valid: Vec<&str> = manifest["fixtures"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|f| f["kind"] == "valid")
        .map(|f| f["file"].as_str().unwrap())
        .filter(|f| !f.starts_with("real-framing/"))
        .collect();
    let pkg2 = valid
        .iter()
        .map(|f| fixtures.join(f))
        .find(|p| fs::read(p).unwrap().get(1024..1026) == Some(&[0x1f, 0x8b][..]))
        .expect("a valid pkg 2 fixture");
    let (deflate, _) = recovered_deflate(&pkg2, tmp.path());
    assert_eq!(engine_and_level(&deflate), ("parallel-libdeflate", 1));
}
