//! `neff corpus --from`: seeds one structure-aware change away from the real
//! NEFFs, each carrying the verdict `neff verify` gives it.

use std::collections::BTreeMap;
use std::path::Path;

use crate::common::*;
use serde_json::Value;

fn real() -> std::path::PathBuf {
    real_neffs()
}

/// `neff coverage --json` of the corpus in `out` against the real NEFFs.
fn coverage_of_real(out: &Path) -> Value {
    let r = neff(&["coverage", s(out), "--reference", s(&real()), "--json"]);
    assert_eq!(code(&r), 0, "{}", stderr(&r));
    serde_json::from_slice(&r.stdout).unwrap()
}

/// `neff corpus -o out --count count --seed seed`: generated NEFFs.
fn generate(out: &Path, count: &str, seed: &str) {
    let r = neff(&[
        "corpus",
        "-o",
        s(out),
        "--count",
        count,
        "--seed",
        seed,
        "--no-fsync",
        "-q",
    ]);
    assert_eq!(code(&r), 0, "{}", stderr(&r));
}

fn corpus(out: &Path, count: &str, threads: &str) {
    let r = neff(&[
        "corpus",
        "--from",
        s(&real()),
        "-o",
        s(out),
        "--count",
        count,
        "--seed",
        "7",
        "--threads",
        threads,
        "--no-fsync",
        "-q",
    ]);
    assert_eq!(code(&r), 0, "{}", stderr(&r));
}

#[test]
#[cfg_attr(
    not(neff_real_neffs),
    ignore = "real NEFFs missing: set NEFF_REAL_NEFFS (default ../shared/real-neffs), see tests/real-neffs.md"
)]
fn five_hundred_seeds_from_the_real_neffs_carry_the_verdict_verify_gives() {
    let dir = memory_tempdir(1 << 30);
    let out = dir.path().join("c");
    corpus(&out, "500", "2");
    let listing: Value =
        serde_json::from_slice(&std::fs::read(out.join("corpus.json")).unwrap()).unwrap();
    let files = listing["files"].as_array().unwrap();
    assert_eq!(files.len(), 500);
    let r = neff(&["verify", s(&out), "--json"]);
    let verified: Value = serde_json::from_slice(&r.stdout).unwrap();
    let by_name: BTreeMap<String, &Value> = verified["files"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| {
            let path = f["file"].as_str().unwrap();
            (
                Path::new(path)
                    .file_name()
                    .unwrap()
                    .to_string_lossy()
                    .into_owned(),
                f,
            )
        })
        .collect();
    let (mut accepted, mut gates) = (0, BTreeMap::<String, usize>::new());
    for entry in files {
        let name = entry["file"].as_str().unwrap();
        let seen = by_name[name];
        assert_eq!(entry["verdict"]["accepted"], seen["accepted"], "{name}");
        assert_eq!(entry["verdict"]["gate"], seen["gate"], "{name}");
        assert_eq!(entry["valid"], seen["accepted"], "{name}");
        assert!(name.ends_with(if entry["valid"] == true {
            "-valid.neff"
        } else {
            "-invalid.neff"
        }));
        // Each seed names its source and its one change.
        let change = entry["mutation"].as_str().unwrap();
        assert!(
            [".neff: ", ".hlo: ", ".neuron: "]
                .iter()
                .any(|source| change.contains(source)),
            "{change}"
        );
        if seen["accepted"] == true {
            accepted += 1;
        } else {
            *gates
                .entry(seen["gate"].as_str().unwrap_or("-").into())
                .or_default() += 1;
        }
    }
    // Both kinds, refused by several gates.
    assert!(accepted > 50 && accepted < 480, "{accepted} accepted");
    assert!(gates.len() >= 5, "{gates:?}");

    // One change per seed keeps the real shapes: the corpus holds every
    // key path, enum value and member pattern of the real NEFFs.
    let report = coverage_of_real(&out);
    for kind in [
        "key_paths",
        "runtime_read_key_paths",
        "enum_values",
        "members",
    ] {
        let share = &report["coverage"][kind];
        assert_eq!(share["covered"], share["total"], "{kind}: {share}");
        assert!(share["total"].as_u64().unwrap() > 10, "{kind}: {share}");
    }
}

#[test]
#[cfg_attr(
    not(neff_real_neffs),
    ignore = "real NEFFs missing: set NEFF_REAL_NEFFS (default ../shared/real-neffs), see tests/real-neffs.md"
)]
fn a_generated_corpus_holds_the_shapes_of_real_output() {
    let dir = memory_tempdir(1 << 30);
    let out = dir.path().join("g");
    generate(&out, "2000", "1");
    let report = coverage_of_real(&out);
    let ratio = |kind: &str| {
        let share = &report["coverage"][kind];
        let (covered, total) = (
            share["covered"].as_f64().unwrap(),
            share["total"].as_f64().unwrap(),
        );
        assert!(total > 10.0, "{kind}: {share}");
        (covered / total, share.to_string())
    };
    for (kind, floor) in [
        ("key_paths", 0.95),
        ("runtime_read_key_paths", 0.95),
        ("enum_values", 0.95),
        ("members", 1.0),
        ("model_key_paths", 0.90),
    ] {
        let (got, share) = ratio(kind);
        assert!(got >= floor, "{kind}: {got:.3} < {floor}: {share}");
    }
}

#[test]
fn from_a_folder_without_neffs_is_an_error() {
    let dir = tempfile::tempdir().unwrap();
    let r = neff(&[
        "corpus",
        "--from",
        s(dir.path()),
        "-o",
        s(&dir.path().join("c")),
    ]);
    assert_eq!(code(&r), 2, "{}", stderr(&r));
    assert!(stderr(&r).contains("names no NEFF"), "{}", stderr(&r));
    assert!(!dir.path().join("c").exists(), "nothing is created");
}

/// `coverage` reads a NEFF's shapes from the loader's member map, without
/// writing its members out: the shapes are those of its lift.
fn assert_shapes_are_the_lifts(files: impl Iterator<Item = std::path::PathBuf>) {
    use neff_smith::coverage::Shapes;
    let mut typed_files = 0;
    for path in files {
        let mut read = Shapes::default();
        let mut lifted = Shapes::default();
        let lift = neff_smith::real::lifted(&path);
        match (read.add_file(&path), lift) {
            (Ok(()), Ok((model, _tree))) => lifted.add_model(&model),
            (Err(_), Err(_)) => continue,
            (read, lift) => panic!("{}: {read:?} but {:?}", path.display(), lift.map(|_| ())),
        }
        assert_eq!(read, lifted, "{}", path.display());
        typed_files += usize::from(!read.key_paths.is_empty());
    }
    assert!(typed_files > 0, "no file had a typed manifest");
}

fn neffs_in(dir: &Path) -> impl Iterator<Item = std::path::PathBuf> {
    let mut files: Vec<_> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "neff"))
        .collect();
    files.sort();
    files.into_iter()
}

#[test]
fn coverage_reads_the_shapes_of_the_lift_of_generated_neffs() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("g");
    generate(&out, "60", "3");
    assert_shapes_are_the_lifts(neffs_in(&out));
}

#[test]
#[cfg_attr(
    not(neff_real_neffs),
    ignore = "real NEFFs missing: set NEFF_REAL_NEFFS (default ../shared/real-neffs), see tests/real-neffs.md"
)]
fn coverage_reads_the_shapes_of_the_lift_of_the_real_neffs() {
    assert_shapes_are_the_lifts(neffs_in(&real()));
}
