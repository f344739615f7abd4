//! Inputs the fuzz targets (`fuzz/`, see `fuzz/README.md`) crashed on, and
//! their seed corpora, replayed through the very checks the targets run:
//! `neff_testkit::checks` is run here as it is.
//!
//! A crash found by `cargo fuzz run <target>` is minimised with
//! `cargo fuzz tmin` and saved in `tests/regressions/`: raw `read_verify`
//! inputs as `read_verify-<n>.bin`; the structured targets' inputs decoded
//! to JSON (run the crash with `NEFF_FUZZ_DUMP=FILE`) as `repack-<n>.json`
//! (members, packaging, level) and `roundtrip-<n>.json` (the build spec),
//! next to the raw `.bin` libFuzzer input. `tests/regressions/` also holds
//! saved structured inputs from the seeds (the example tree as `repack`
//! cases, the example build specs as `roundtrip` cases), so the structured
//! replays never pass on nothing.

use neff_testkit::checks;

use std::path::{Path, PathBuf};

/// Every file in `dir` whose name starts with `prefix`, sorted.
fn inputs(dir: &Path, prefix: &str) -> Vec<(PathBuf, Vec<u8>)> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let Ok(items) = std::fs::read_dir(root.join(dir)) else {
        return Vec::new();
    };
    let mut paths: Vec<PathBuf> = items
        .map(|i| i.unwrap().path())
        .filter(|p| {
            p.file_name()
                .and_then(|n| n.to_str())
                .is_some_and(|n| n.starts_with(prefix))
        })
        .collect();
    paths.sort();
    paths
        .into_iter()
        .map(|p| {
            let bytes = std::fs::read(&p).unwrap();
            (p, bytes)
        })
        .collect()
}

/// Runs `check` on every input, naming the one that panics.
fn replay(inputs: Vec<(PathBuf, Vec<u8>)>, check: fn(&[u8])) -> usize {
    for (path, bytes) in &inputs {
        if let Err(panic) = std::panic::catch_unwind(|| check(bytes)) {
            let message = panic
                .downcast_ref::<String>()
                .cloned()
                .or_else(|| panic.downcast_ref::<&str>().map(|s| s.to_string()))
                .unwrap_or_default();
            panic!("{}: {message}", path.display());
        }
    }
    inputs.len()
}

/// The committed seeds, and any saved `read_verify-*` crash (none so far).
#[test]
fn read_verify_seeds_and_regressions() {
    let mut cases = inputs(Path::new("fuzz/seeds/read_verify"), "");
    cases.extend(inputs(Path::new("tests/regressions"), "read_verify-"));
    let n = replay(cases, checks::read_verify);
    assert!(n >= 8, "only {n} seeds");
}

fn json(bytes: &[u8]) -> serde_json::Value {
    serde_json::from_slice(bytes).expect("a JSON case")
}

#[test]
fn repack_regressions() {
    let n = replay(
        inputs(Path::new("tests/regressions"), "repack-")
            .into_iter()
            .filter(|(p, _)| p.extension().is_some_and(|e| e == "json"))
            .collect(),
        |bytes| {
            let (members, pkg, level) = checks::repack_case_from_json(&json(bytes));
            checks::repack(&members, pkg, level);
        },
    );
    assert!(n >= 4, "only {n} saved repack cases");
}

#[test]
fn roundtrip_regressions() {
    let n = replay(
        inputs(Path::new("tests/regressions"), "roundtrip-")
            .into_iter()
            .filter(|(p, _)| p.extension().is_some_and(|e| e == "json"))
            .collect(),
        |bytes| checks::roundtrip(&json(bytes)),
    );
    assert!(n >= 3, "only {n} saved roundtrip cases");
}

/// The `carrier` target's check on carriers from an independent writer and
/// on 300 mutations of each (bytes flipped, cut short), deterministically
/// spread over the file.
#[test]
fn carriers_and_their_mutations_hold_the_carrier_invariants() {
    let tmp = tempfile::tempdir().unwrap();
    let neffs = crate::carriers::two_neffs(tmp.path());
    for kind in ["hlo", "zip-stored", "zip-deflated"] {
        let path = tmp.path().join(format!("{kind}.bin"));
        crate::carriers::carrier(kind, &path, &neffs);
        let whole = std::fs::read(&path).unwrap();
        let mut inputs = vec![(path.clone(), whole.clone())];
        let mut state = 0x9e37_79b9_7f4a_7c15u64;
        for i in 0..300 {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            let at = (state % whole.len() as u64) as usize;
            let mut bytes = whole.clone();
            match i % 3 {
                0 => bytes[at] ^= 1 << (state % 8),
                1 => bytes[at] = (state >> 8) as u8,
                _ => bytes.truncate(at),
            }
            inputs.push((path.with_extension(format!("{i}")), bytes));
        }
        assert_eq!(replay(inputs, checks::carrier), 301);
    }
}
