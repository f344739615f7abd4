//! `neff shrink`: a real NEFF refused on another arch shrinks to at most a
//! quarter of its size, refused by the same gate with the same message; a
//! shell predicate drives it as well as a built-in one.

use std::path::Path;

use crate::common::*;

/// The gate and message `neff verify --instance-arch sunda` reports.
fn sunda_refusal(file: &Path) -> (String, String) {
    let out = neff(&["verify", s(file), "--instance-arch", "sunda", "--json"]);
    let report: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    (report["gate"].to_string(), report["message"].to_string())
}

#[test]
#[cfg_attr(
    not(neff_real_neffs),
    ignore = "real NEFFs missing: set NEFF_REAL_NEFFS (default ../shared/real-neffs), see tests/real-neffs.md"
)]
fn a_real_neff_refused_on_another_arch_shrinks_to_a_quarter_with_the_same_refusal() {
    let file = real_neffs().join("ncc2.21_chengli2003_conv2d_1_float16_smaller.neff");
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("small.neff");
    let args = [
        "shrink",
        s(&file),
        "-o",
        s(&out),
        "--refused-by",
        "G17",
        "--instance-arch",
        "sunda",
    ];
    let r = neff(&args);
    assert_eq!(code(&r), 0, "{}", stderr(&r));
    let (from, to) = (
        std::fs::metadata(&file).unwrap().len(),
        std::fs::metadata(&out).unwrap().len(),
    );
    assert!(to * 4 <= from, "{to} bytes from {from}");
    assert_eq!(sunda_refusal(&out), sunda_refusal(&file));
    // Deterministic: the same bytes again.
    let again = dir.path().join("again.neff");
    let args = [
        "shrink",
        s(&file),
        "-o",
        s(&again),
        "--refused-by",
        "G17",
        "--instance-arch",
        "sunda",
        "-q",
    ];
    assert_eq!(code(&neff(&args)), 0);
    assert_eq!(std::fs::read(&out).unwrap(), std::fs::read(&again).unwrap());
}

#[test]
fn a_shell_predicate_drives_the_reduction_and_an_uninteresting_input_is_an_error() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let built = built_cayman_model(d);
    let bin = neff_command().get_program().to_owned();
    let script = d.join("refused-on-sunda.sh");
    std::fs::write(
        &script,
        format!("#!/bin/sh\n{:?} verify --instance-arch sunda \"$1\" 2>&1 | grep -q 'REJECTED by G17'\n", bin),
    )
    .unwrap();
    std::fs::set_permissions(&script, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    let out = d.join("small.neff");
    let r = neff(&["shrink", s(&built), "-o", s(&out), "--until", s(&script)]);
    assert_eq!(code(&r), 0, "{}", stderr(&r));
    assert!(std::fs::metadata(&out).unwrap().len() < std::fs::metadata(&built).unwrap().len());
    assert_eq!(sunda_refusal(&out).0, sunda_refusal(&built).0);
    let r = neff(&[
        "shrink",
        s(&built),
        "-o",
        s(&out),
        "--accepted",
        "--instance-arch",
        "sunda",
    ]);
    assert_eq!(code(&r), 2, "{}", stderr(&r));
    assert!(
        stderr(&r).contains("not interesting to begin with"),
        "{}",
        stderr(&r)
    );
}

#[test]
fn stderr_matches_and_raw_steps() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let built = built_cayman_model(d);
    let bin = neff_command().get_program().to_string_lossy().to_string();
    let cmd = format!("{bin} verify --instance-arch sunda -q");
    let out = d.join("small.neff");
    let args = [
        "shrink",
        s(&built),
        "-o",
        s(&out),
        "--until",
        &cmd,
        "--stderr-matches",
        "REJECTED by G1[7]",
        "-q",
    ];
    let r = neff(&args);
    assert_eq!(code(&r), 0, "{}", stderr(&r));
    assert_eq!(sunda_refusal(&out).0, "\"G17\"");
    // Any non-empty file is interesting: the model steps, then the byte steps,
    // leave one zero byte.
    let tiny = d.join("tiny.neff");
    let r = neff(&[
        "shrink",
        s(&built),
        "-o",
        s(&tiny),
        "--until",
        "test -s",
        "--raw",
        "-q",
    ]);
    assert_eq!(code(&r), 0, "{}", stderr(&r));
    assert_eq!(std::fs::read(&tiny).unwrap(), vec![0u8]);
}

/// The cayman-ucode example built into `d/m.neff`.
fn built_cayman_model(d: &Path) -> std::path::PathBuf {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let built = d.join("m.neff");
    let spec = root.join("examples/cayman-ucode.json");
    assert_eq!(code(&neff(&["build", s(&spec), "-o", s(&built), "-q"])), 0);
    built
}
