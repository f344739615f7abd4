//! `tests/real-neffs.md` lists every real NEFF the tests use (repository,
//! path, commit, sha256): each file a test names is listed, and each listed
//! file in the folder is those bytes.

use std::collections::BTreeMap;
use std::path::Path;

use sha2::{Digest, Sha256};

/// The table's rows: file name → sha256.
fn listed() -> BTreeMap<String, String> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let text = std::fs::read_to_string(root.join("tests/real-neffs.md")).unwrap();
    let mut rows = BTreeMap::new();
    for line in text.lines().filter(|l| l.starts_with("| ncc")) {
        let cells: Vec<&str> = line.trim_matches('|').split('|').map(str::trim).collect();
        assert_eq!(cells.len(), 5, "a row of five cells: {line}");
        assert_eq!(cells[3].len(), 40, "a commit id: {line}");
        assert_eq!(cells[4].len(), 64, "a sha256: {line}");
        rows.insert(cells[0].to_string(), cells[4].to_string());
    }
    rows
}

/// Every `ncc….neff`-like file name a test source spells out.
fn named_by_tests() -> Vec<String> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut names = Vec::new();
    for dir in ["tests/it", "python/tests"] {
        for entry in std::fs::read_dir(root.join(dir)).unwrap() {
            let text = std::fs::read_to_string(entry.unwrap().path()).unwrap_or_default();
            for (at, _) in text.match_indices("ncc") {
                let name: String = text[at..]
                    .chars()
                    .take_while(|c| c.is_ascii_alphanumeric() || "._-".contains(*c))
                    .collect();
                let known = [".neff", ".ntff", ".hlo", ".neuron"];
                if known.iter().any(|ext| name.ends_with(ext)) {
                    names.push(name);
                }
            }
        }
    }
    names.sort();
    names.dedup();
    names
}

#[test]
fn every_real_neff_a_test_names_is_listed() {
    let listed = listed();
    let named = named_by_tests();
    assert!(named.len() >= 10, "too few names found: {named:?}");
    let missing: Vec<&String> = named.iter().filter(|n| !listed.contains_key(*n)).collect();
    assert!(
        missing.is_empty(),
        "not in tests/real-neffs.md: {missing:?}"
    );
}

#[test]
#[cfg_attr(
    not(neff_real_neffs),
    ignore = "real NEFFs missing: set NEFF_REAL_NEFFS (default ../shared/real-neffs), see tests/real-neffs.md"
)]
fn every_listed_real_neff_is_its_listed_bytes() {
    let dir = crate::common::real_neffs();
    for (file, sha256) in listed() {
        let bytes = std::fs::read(dir.join(&file))
            .unwrap_or_else(|e| panic!("{file} (listed in tests/real-neffs.md): {e}"));
        let digest = neff::schema::hex::encode(Sha256::digest(&bytes));
        assert_eq!(digest, sha256, "{file}");
    }
}

/// The real-NEFF tests were built knowing whether the folder exists: one
/// added (or removed) since is said, instead of the tests staying ignored
/// (or failing) for a reason that no longer holds.
#[test]
fn the_build_saw_the_real_neff_folder_as_it_is_now() {
    let dir = Path::new(env!("NEFF_REAL_NEFFS_DIR"));
    assert_eq!(
        cfg!(neff_real_neffs),
        dir.is_dir(),
        "{} was {} when the tests were built: run `touch build.rs` (or change NEFF_REAL_NEFFS) and test again",
        dir.display(),
        if cfg!(neff_real_neffs) { "there" } else { "missing" }
    );
}
