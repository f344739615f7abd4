//! Re-checking what `neff fixtures` and `neff corpus` wrote: every file
//! against the verdict its manifest records, under the runtime it records,
//! on several threads, the differences in the manifest's order.

use std::path::Path;

use neff_loader::Runtime;
use serde_json::Value;

use crate::fixtures::{Error, Expected, FixtureManifest, MANIFEST_FILE};
use crate::seed::SeedVerdict;

/// The listing `neff corpus` writes beside its seeds.
pub const CORPUS_FILE: &str = "corpus.json";

/// A file whose verdict is not the one its manifest records.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Difference {
    /// The file, relative to the folder.
    pub file: String,
    /// The runtime it was checked under (`neff verify` arguments).
    pub runtime: String,
    /// What the manifest records.
    pub expected: String,
    /// What the loader says now (or why the file could not be read).
    pub got: String,
}

/// What a check found: how many entries it checked and the differences.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Checked {
    /// Entries checked.
    pub entries: usize,
    /// The entries whose verdict differs, in the manifest's order.
    pub differences: Vec<Difference>,
}

/// Every entry of `dir/manifest.json` (a `neff fixtures` folder) checked
/// under its runtime on `threads` threads.
pub fn check_fixtures(dir: &Path, threads: usize) -> Result<Checked, Error> {
    let manifest: FixtureManifest = serde_json::from_slice(&read(&dir.join(MANIFEST_FILE))?)?;
    let differences = neff_tools::parallel::map(&manifest.fixtures, threads, |f| {
        let profile = match serde_json::from_value(Value::Object(f.profile.clone())) {
            Ok(profile) => profile,
            Err(e) => return Some(difference(f, &f.expected, format!("its profile: {e}"))),
        };
        let runtime = Runtime {
            scope: f.instance_arch,
            profile,
        };
        let got = match runtime.check_path(dir.join(&f.file)) {
            Ok(checked) => Expected::from_report(&checked.report),
            Err(e) => return Some(difference(f, &f.expected, e.to_string())),
        };
        (got != f.expected).then(|| difference(f, &f.expected, json(&got)))
    });
    Ok(Checked {
        entries: manifest.fixtures.len(),
        differences: differences.into_iter().flatten().collect(),
    })
}

/// Every seed of `dir/corpus.json` (a `neff corpus` folder) checked under
/// `neff verify`'s defaults on `threads` threads.
pub fn check_corpus(dir: &Path, threads: usize) -> Result<Checked, Error> {
    let listing: Value = serde_json::from_slice(&read(&dir.join(CORPUS_FILE))?)?;
    let files = listing["files"].as_array().cloned().unwrap_or_default();
    let differences = neff_tools::parallel::map(&files, threads, |entry| {
        let file = entry["file"].as_str().unwrap_or_default().to_string();
        let expected = entry["verdict"].clone();
        let got = match std::fs::read(dir.join(&file)) {
            Ok(bytes) => serde_json::to_value(SeedVerdict::of(&bytes)).unwrap_or_default(),
            Err(e) => Value::String(format!("cannot read: {e}")),
        };
        let valid = entry["valid"].as_bool() == expected["accepted"].as_bool();
        (got != expected || !valid).then(|| Difference {
            file,
            runtime: "--instance-arch all".into(),
            expected: expected.to_string(),
            got: got.to_string(),
        })
    });
    Ok(Checked {
        entries: files.len(),
        differences: differences.into_iter().flatten().collect(),
    })
}

fn difference(f: &crate::fixtures::Fixture, expected: &Expected, got: String) -> Difference {
    Difference {
        file: f.file.clone(),
        runtime: f.verify_args.join(" "),
        expected: json(expected),
        got,
    }
}

fn json(value: &impl serde::Serialize) -> String {
    serde_json::to_string(value).unwrap_or_default()
}

fn read(path: &Path) -> Result<Vec<u8>, Error> {
    std::fs::read(path).map_err(|e| {
        Error::Io(std::io::Error::new(
            e.kind(),
            format!("{}: {e}", path.display()),
        ))
    })
}
