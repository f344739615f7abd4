//! `neff fixtures`: every manifest entry agrees with what `neff verify --json`
//! reports for it, every reachable gate has a negative fixture, and the
//! corpus is byte-for-byte reproducible.

use crate::common::*;

use std::collections::BTreeMap;
use std::fs;
use std::path::{Path, PathBuf};
use std::process::Output;

use neff::loader::Gate;
use neff::smith::fixtures::{generate, FixtureKind, FixtureManifest, MANIFEST_FILE};
use serde_json::Value;

fn fixtures(dir: &Path, extra: &[&str]) -> Output {
    let mut args = vec!["fixtures", "--out", dir.to_str().unwrap()];
    args.extend_from_slice(extra);
    neff(&args)
}

/// Every file under `root`, by relative path, with its bytes.
fn tree(root: &Path) -> BTreeMap<PathBuf, Vec<u8>> {
    fn walk(root: &Path, dir: &Path, out: &mut BTreeMap<PathBuf, Vec<u8>>) {
        for entry in fs::read_dir(dir).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                walk(root, &path, out);
            } else {
                let rel = path.strip_prefix(root).unwrap().to_path_buf();
                out.insert(rel, fs::read(&path).unwrap());
            }
        }
    }
    let mut out = BTreeMap::new();
    walk(root, root, &mut out);
    out
}

#[test]
fn the_corpus_matches_neff_verify_covers_every_gate_and_is_reproducible() {
    let tmp = tempfile::tempdir().unwrap();
    let a = tmp.path().join("a");
    let r = fixtures(&a, &[]);
    assert_eq!(
        r.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&r.stderr)
    );
    let text = fs::read(a.join(MANIFEST_FILE)).unwrap();
    let manifest: FixtureManifest = serde_json::from_slice(&text).unwrap();

    // Determinism: the library writes the same tree, and returns the same manifest.
    let b = tmp.path().join("b");
    assert_eq!(generate(&b).unwrap(), manifest);
    let (ta, tb) = (tree(&a), tree(&b));
    assert_eq!(ta.keys().collect::<Vec<_>>(), tb.keys().collect::<Vec<_>>());
    for (path, bytes) in &ta {
        assert!(
            bytes == &tb[path],
            "{} differs between runs",
            path.display()
        );
    }
    // Every file is listed, and every listed file exists.
    for path in ta.keys().filter(|p| p.as_os_str() != MANIFEST_FILE) {
        let rel = path.to_str().unwrap().replace('\\', "/");
        assert!(
            manifest.fixtures.iter().any(|f| f.file == rel),
            "{rel} is not in the manifest"
        );
    }

    // Each entry agrees with the built binary's verdict.
    for f in &manifest.fixtures {
        let path = a.join(&f.file);
        let flags = verify_flags(f);
        assert_eq!(
            f.verify_args, flags,
            "{}: the manifest's verify_args",
            f.file
        );
        let mut args = vec!["verify", path.to_str().unwrap(), "--json"];
        args.extend(flags.iter().map(String::as_str));
        let r = neff(&args);
        let what = format!("{} {}", f.file, flags.join(" "));
        let want_code = if f.expected.accepted { 0 } else { 1 };
        assert_eq!(
            r.status.code(),
            Some(want_code),
            "{what}: {}",
            String::from_utf8_lossy(&r.stderr)
        );
        let got: Value = serde_json::from_slice(&r.stdout).unwrap();
        let e = &f.expected;
        assert_eq!(got["accepted"], e.accepted, "{what}");
        assert_eq!(got["status"], e.status, "{what}");
        assert_eq!(got["gate"].as_str(), e.gate.as_deref(), "{what}");
        assert_eq!(got["message"].as_str(), e.message.as_deref(), "{what}");
        assert_eq!(
            got["error_cause"].as_str(),
            e.error_cause.as_deref(),
            "{what}"
        );
        assert_eq!(
            got["warnings"],
            serde_json::to_value(&e.warnings).unwrap(),
            "{what}"
        );
        match f.kind {
            FixtureKind::Negative => assert!(!e.accepted && e.gate.is_some(), "{what}"),
            _ => assert!(e.accepted && e.gate.is_none(), "{what}"),
        }
        assert!(!f.description.is_empty(), "{what}");
    }

    // Every gate a file can reach is tripped by some negative fixture; the
    // unreachable list is exactly G1 and G28.
    let unreachable: Vec<&str> = manifest
        .unreachable
        .iter()
        .map(|u| u.gate.as_str())
        .collect();
    assert_eq!(unreachable, ["G1", "G28"]);
    for gate in Gate::ALL {
        if unreachable.contains(&gate.id()) {
            continue;
        }
        assert!(
            manifest
                .fixtures
                .iter()
                .any(|f| f.kind == FixtureKind::Negative
                    && f.expected.gate.as_deref() == Some(gate.id())
                    && f.expected.status == gate.status().code()),
            "no negative fixture trips {}",
            gate.id()
        );
    }

    // One valid NEFF per target and packaging version, accepted everywhere it targets.
    let valid: Vec<&str> = manifest
        .fixtures
        .iter()
        .filter(|f| f.kind == FixtureKind::Valid)
        .map(|f| f.file.as_str())
        .collect();
    for target in ["sunda", "cayman", "mariana", "any"] {
        for pkg in [1, 2] {
            let file = format!("valid/{target}-pkg{pkg}.neff");
            assert!(valid.contains(&file.as_str()), "{file} missing");
            assert_eq!(
                u64::from_le_bytes(ta[Path::new(&file)][..8].try_into().unwrap()),
                pkg
            );
        }
    }

    // The legacy override, with and without, for G17 and G25b.
    for gate in ["G17", "G25b"] {
        let entries: Vec<_> = manifest
            .fixtures
            .iter()
            .filter(|f| f.file.starts_with(&format!("negative/{gate}-")))
            .collect();
        let legacy = |f: &&&neff::smith::fixtures::Fixture| {
            f.profile.get("allow_legacy_neff") == Some(&Value::Bool(true))
        };
        assert!(
            entries
                .iter()
                .any(|f| !legacy(&f) && f.expected.gate.as_deref() == Some(gate)),
            "{gate} without the override"
        );
        assert!(
            entries
                .iter()
                .any(|f| legacy(&f) && f.expected.accepted && !f.expected.warnings.is_empty()),
            "{gate} with the override"
        );
    }
    // A NEFF that loads on one arch and not on another.
    let g17: Vec<_> = manifest
        .fixtures
        .iter()
        .filter(|f| f.file == "negative/G17-target-cayman.neff" && f.profile.is_empty())
        .map(|f| (f.instance_arch.name(), f.expected.accepted))
        .collect();
    assert!(g17.contains(&("cayman", true)) && g17.contains(&("sunda", false)));

    // A non-empty DIR is refused without --force and rewritten with it.
    let r = fixtures(&a, &[]);
    assert_eq!(r.status.code(), Some(2));
    assert!(
        String::from_utf8_lossy(&r.stderr).contains("--force"),
        "{}",
        String::from_utf8_lossy(&r.stderr)
    );
    fs::write(a.join("valid/any-pkg2.neff"), b"clobbered").unwrap();
    let r = fixtures(&a, &["--force", "-q"]);
    assert_eq!(r.status.code(), Some(0));
    assert!(r.stderr.is_empty());
    assert!(tree(&a) == ta, "--force restores the same tree");
}

/// The `neff verify` flags of an entry's runtime: its `instance_arch` and
/// each profile key that differs from the default (an independent mapping,
/// checked against the CLI's).
fn verify_flags(f: &neff::smith::fixtures::Fixture) -> Vec<String> {
    let mut flags = vec!["--instance-arch".to_string(), f.instance_arch.name().into()];
    for (key, value) in &f.profile {
        let text = || match value {
            Value::String(s) => s.clone(),
            other => other.to_string(),
        };
        match (key.as_str(), value) {
            ("allow_legacy_neff", Value::Bool(true)) => flags.push("--allow-legacy-neff".into()),
            ("verify_hash", Value::Bool(false)) => flags.push("--no-verify-hash".into()),
            ("check_var_ids", Value::Bool(false)) => flags.push("--no-check-var-ids".into()),
            (
                "hash_layout" | "supported_features" | "evtaccel_offset" | "virtual_core_size"
                | "ucode_abi",
                _,
            ) => flags.extend([format!("--{}", key.replace('_', "-")), text()]),
            _ => panic!("{}: no verify flag for {key} = {value}", f.file),
        }
    }
    flags
}

#[test]
fn the_manifest_schema_is_published() {
    let r = neff(&["schema", "fixtures-manifest"]);
    assert_eq!(r.status.code(), Some(0));
    let schema: Value = serde_json::from_slice(&r.stdout).unwrap();
    let props = &schema["properties"];
    assert!(props["fixtures"].is_object() && props["unreachable"].is_object());
    let text = String::from_utf8(r.stdout).unwrap();
    for key in [
        "instance_arch",
        "profile",
        "expected",
        "error_cause",
        "warnings",
    ] {
        assert!(text.contains(key), "{key}");
    }
}

#[test]
fn check_finds_a_fixture_and_a_seed_that_disagree_with_their_manifest() {
    let dir = tempfile::tempdir().unwrap();
    let fx = dir.path().join("fx");
    assert_eq!(fixtures(&fx, &["-q"]).status.code(), Some(0));
    let check = |args: &[&str]| neff(args);
    let r = check(&["fixtures", "--check", fx.to_str().unwrap()]);
    assert_eq!(
        r.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&r.stderr)
    );
    assert!(String::from_utf8_lossy(&r.stderr).contains("every verdict is the recorded one"));
    // A fixture edited to disagree: its manifest entry says accepted.
    let manifest_path = fx.join("manifest.json");
    let mut manifest: Value = serde_json::from_slice(&fs::read(&manifest_path).unwrap()).unwrap();
    let entry = manifest["fixtures"]
        .as_array_mut()
        .unwrap()
        .iter_mut()
        .find(|f| f["kind"] == "negative")
        .unwrap();
    entry["expected"]["accepted"] = Value::Bool(true);
    let file = entry["file"].as_str().unwrap().to_string();
    fs::write(
        &manifest_path,
        serde_json::to_vec_pretty(&manifest).unwrap(),
    )
    .unwrap();
    let r = check(&[
        "fixtures",
        "--check",
        fx.to_str().unwrap(),
        "--threads",
        "2",
    ]);
    let err = String::from_utf8_lossy(&r.stderr).to_string();
    assert_eq!(r.status.code(), Some(1), "{err}");
    assert!(
        err.contains(&format!("neff: {file}: under `--instance-arch")),
        "{err}"
    );
    assert!(err.contains("1 of "), "{err}");

    let seeds = dir.path().join("seeds");
    let s = |p: &Path| p.to_str().unwrap().to_string();
    let r = check(&[
        "corpus",
        "-o",
        &s(&seeds),
        "--count",
        "12",
        "-q",
        "--no-fsync",
    ]);
    assert_eq!(r.status.code(), Some(0));
    let r = check(&["corpus", "--check", &s(&seeds)]);
    assert_eq!(
        r.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&r.stderr)
    );
    // A seed swapped for another: its recorded verdict no longer holds.
    let listing: Value =
        serde_json::from_slice(&fs::read(seeds.join("corpus.json")).unwrap()).unwrap();
    let files = listing["files"].as_array().unwrap();
    let valid = files.iter().find(|f| f["valid"] == true).unwrap()["file"]
        .as_str()
        .unwrap();
    let invalid = files.iter().find(|f| f["valid"] == false).unwrap()["file"]
        .as_str()
        .unwrap();
    fs::copy(seeds.join(invalid), seeds.join(valid)).unwrap();
    let r = check(&["corpus", "--check", &s(&seeds)]);
    let err = String::from_utf8_lossy(&r.stderr).to_string();
    assert_eq!(r.status.code(), Some(1), "{err}");
    assert!(err.contains(&format!("neff: {valid}:")), "{err}");
}
