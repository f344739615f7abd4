//! A NEFF a gate refuses in its first graph: `inspect` (text and JSON),
//! `--memory` and the lift read on past the refusal, every graph shown,
//! each graph read past it (or up to it) marked with why; the verdict and
//! its warnings stay the runtime's.

use std::path::{Path, PathBuf};

use serde_json::Value;

use crate::common::{code, neff, s, stderr, stdout};

/// The real two-graph trn3 NEFF with one CCE descriptor of sg00 stripped of
/// its `to_dtype` (refused by G26 in sg00), packed with `--keep-refused`.
fn refused_two_graphs(tmp: &Path) -> Option<PathBuf> {
    let dir = crate::common::real_neff_dir()?;
    let tree = tmp.join("tree");
    let real = dir.join("ncc2.24_nki-moe-megakernel_ref_ws3.neff");
    assert!(neff(&["unpack", s(&real), "-o", s(&tree), "-q"])
        .status
        .success());
    let pool = tree.join("sg00/Pool0.json");
    let mut doc: Value = serde_json::from_slice(&std::fs::read(&pool).unwrap()).unwrap();
    let desc = &mut doc["dma"][0]["desc"][0];
    assert_eq!(desc["op"], "add");
    desc.as_object_mut().unwrap().remove("to_dtype");
    std::fs::write(&pool, serde_json::to_vec(&doc).unwrap()).unwrap();
    let out = tmp.join("refused.neff");
    let packed = neff(&[
        "pack",
        s(&tree),
        "-o",
        s(&out),
        "--keep-refused",
        "-q",
        "--no-fsync",
    ]);
    assert!(packed.status.success(), "{packed:?}");
    Some(out)
}

#[test]
#[cfg_attr(
    not(neff_real_neffs),
    ignore = "real NEFFs missing: set NEFF_REAL_NEFFS (default ../shared/real-neffs), see tests/real-neffs.md"
)]
fn a_refusal_in_the_first_graph_still_shows_every_graph_marked() {
    let tmp = tempfile::tempdir().unwrap();
    let Some(file) = refused_two_graphs(tmp.path()) else {
        return;
    };
    let out = neff(&["inspect", "--json", s(&file)]);
    assert_eq!(code(&out), 1, "{out:?}");
    let report: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(report["verdict"]["gate"], "G26", "{:#}", report["verdict"]);
    let graphs = report["model"]["graphs"].as_array().unwrap();
    assert_eq!(graphs.len(), 2, "every graph is shown");
    let marks: Vec<&str> = graphs
        .iter()
        .map(|g| g["partial"].as_str().unwrap())
        .collect();
    assert!(
        marks[0].starts_with("read up to the refusal (G26"),
        "{marks:?}"
    );
    assert!(marks[1].contains("past the refusal by G26"), "{marks:?}");
    let unreferenced = report["model"]["unreferenced_members"].to_string();
    assert!(!unreferenced.contains("sg01/def.json"), "{unreferenced}");
    // The verdict's warnings are the runtime's: nothing from the graph read past it.
    let verified = neff(&["verify", "--json", s(&file)]);
    let verdict: Value = serde_json::from_slice(&verified.stdout).unwrap();
    assert_eq!(verdict["warnings"], report["verdict"]["warnings"]);
    assert!(verdict["warnings"].is_array());

    let memory: Value =
        serde_json::from_slice(&neff(&["inspect", "--memory", "--json", s(&file)]).stdout).unwrap();
    let cores = memory["cores"].as_array().unwrap();
    assert_eq!(cores.len(), 2, "{memory:#}");
    assert!(cores.iter().all(|c| c["partial"].is_string()), "{memory:#}");
    let text = stdout(&neff(&["inspect", "--memory", s(&file)]));
    assert!(
        text.contains("sg01*") && text.contains("* sg01: read for display past"),
        "{text}"
    );

    // The lift's hint says what build needs.
    let spec = tmp.path().join("spec.json");
    let lifted = neff(&[
        "unpack",
        s(&file),
        "-o",
        s(&tmp.path().join("lifted")),
        "--spec",
        s(&spec),
        "--keep-refused",
    ]);
    assert!(lifted.status.success(), "{lifted:?}");
    let hint = stderr(&lifted);
    assert!(hint.contains("--keep-refused"), "{hint}");
    let built = neff(&[
        "build",
        s(&spec),
        "-o",
        s(&tmp.path().join("b.neff")),
        "-q",
        "--no-fsync",
    ]);
    assert_eq!(
        code(&built),
        1,
        "build refuses without --keep-refused: {built:?}"
    );
}
