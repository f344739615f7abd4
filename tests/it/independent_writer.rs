//! A NEFF whose tar, gzip and header come from an independent writer:
//! Python's `tarfile` (GNU, pax and ustar formats, per-entry modes, owners
//! and times, a uid only base-256 or a pax record can hold, long names split
//! or recorded, the old NUL type flag, an order no sorting gives), `gzip` at levels no preset uses, with FNAME and MTIME,
//! and `hashlib` (`tests/scripts/independent_neff.py`). Its framing is read
//! from the file as data, so `unpack --header-out` + `pack --header` and the
//! lift (`unpack --spec` + `build`) give back the same bytes with no code
//! that knows this writer.

use std::path::Path;
use std::process::Command;

use crate::common::{neff, s, write_model_tree};

const SCRIPT: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/tests/scripts/independent_neff.py"
);

/// The minimal model, plus a member in a folder whose path is over 100 bytes.
fn tree(root: &Path) {
    write_model_tree(root);
    let deep = root.join(format!("extra/{}", "long_folder_name_".repeat(7)));
    std::fs::create_dir_all(&deep).unwrap();
    std::fs::write(deep.join("notes.txt"), b"kept as written\n").unwrap();
}

fn python_neff(tree: &Path, out: &Path, variant: &str) {
    let run = Command::new("python3")
        .args([SCRIPT, s(tree), s(out), variant])
        .output()
        .expect("python3 is required by this test (apt-get install -y python3)");
    assert!(run.status.success(), "{run:?}");
}

fn ok(args: &[&str]) -> String {
    let out = neff(args);
    assert!(out.status.success(), "neff {args:?}: {out:?}");
    String::from_utf8_lossy(&out.stdout).into_owned()
}

fn same_bytes(original: &Path, again: &Path, what: &str) {
    let (a, b) = (
        std::fs::read(original).unwrap(),
        std::fs::read(again).unwrap(),
    );
    if let Some(at) = a.iter().zip(&b).position(|(x, y)| x != y) {
        panic!("{what}: differs first at byte {at:#x}");
    }
    assert_eq!(a.len(), b.len(), "{what}: lengths differ");
}

fn round_trips(variant: &str) {
    let tmp = tempfile::tempdir().unwrap();
    let (src, original) = (tmp.path().join("src"), tmp.path().join("py.neff"));
    tree(&src);
    python_neff(&src, &original, variant);
    ok(&["verify", s(&original)]);

    let (unpacked, header) = (tmp.path().join("unpacked"), tmp.path().join("header.json"));
    let report = ok(&[
        "unpack",
        s(&original),
        "-o",
        s(&unpacked),
        "--header-out",
        s(&header),
        "--json",
    ]);
    let report: serde_json::Value = serde_json::from_str(&report).unwrap();
    assert_eq!(report["byte_identical_repack"], true, "{report:#}");
    let repacked = tmp.path().join("repacked.neff");
    ok(&[
        "pack",
        s(&unpacked),
        "-o",
        s(&repacked),
        "--header",
        s(&header),
        "-q",
    ]);
    same_bytes(&original, &repacked, &format!("{variant}: pack --header"));

    let (lifted, spec) = (tmp.path().join("lifted"), tmp.path().join("spec.json"));
    ok(&["unpack", s(&original), "-o", s(&lifted), "--spec", s(&spec)]);
    let built = tmp.path().join("built.neff");
    ok(&["build", s(&spec), "-o", s(&built), "-q", "--no-fsync"]);
    same_bytes(&original, &built, &format!("{variant}: build"));
}

#[test]
fn a_python_gnu_tar_gzip_level_5_neff_repacks_and_rebuilds_byte_for_byte() {
    round_trips("gnu");
}

#[test]
fn a_python_pax_tar_gzip_level_9_neff_repacks_and_rebuilds_byte_for_byte() {
    round_trips("pax");
}

#[test]
fn a_python_ustar_tar_with_old_type_flags_and_split_names_rebuilds_byte_for_byte() {
    round_trips("ustar");
}

#[test]
fn a_deflate_stream_no_engine_writes_is_named_by_its_file_bytes() {
    let tmp = tempfile::tempdir().unwrap();
    let (src, original) = (tmp.path().join("src"), tmp.path().join("rle.neff"));
    tree(&src);
    python_neff(&src, &original, "rle");
    ok(&["verify", s(&original)]);
    let header = tmp.path().join("header.json");
    let report = ok(&[
        "unpack",
        s(&original),
        "-o",
        s(&tmp.path().join("tree")),
        "--header-out",
        s(&header),
        "--json",
    ]);
    let report: serde_json::Value = serde_json::from_str(&report).unwrap();
    assert_eq!(report["byte_identical_repack"], false, "{report:#}");
    let notes = report["not_reproduced"].to_string();
    // The stream starts after the 1024-byte NEFF header and the 10-byte gzip one.
    let start = 1024 + 10;
    assert!(
        notes.contains(&format!("the deflate stream at file bytes {start}..")),
        "{notes}"
    );
    assert_eq!(
        report["not_reproduced"].as_array().unwrap().len(),
        1,
        "{notes}"
    );
}
