//! `neff redact`: on every real NEFF, the same verdict and memory figures,
//! no 16-byte window of any original weight's data left (all-zero windows
//! aside, and windows the original's other members hold too: an identity
//! matrix's rows also occur in instruction streams), and no scrubbed string
//! left anywhere in the output.

use std::collections::HashSet;
use std::path::Path;

use neff::loader::{Loader, RuntimeProfile};
use neff::tools::redact::{redact, same_verdict, RedactOptions};
use neff::tools::{extract, ExtractLimits};

use crate::common::*;

/// Every file below `dir`, with its bytes.
fn files(dir: &Path) -> Vec<Vec<u8>> {
    walkdir(dir)
        .into_iter()
        .map(|p| std::fs::read(p).unwrap())
        .collect()
}

fn walkdir(dir: &Path) -> Vec<std::path::PathBuf> {
    let mut out = Vec::new();
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            out.extend(walkdir(&path));
        } else {
            out.push(path);
        }
    }
    out
}

#[test]
#[cfg_attr(
    not(neff_real_neffs),
    ignore = "real NEFFs missing: set NEFF_REAL_NEFFS (default ../shared/real-neffs), see tests/real-neffs.md"
)]
fn every_real_neff_redacts_to_its_verdict_with_no_weight_or_private_string_left() {
    let profile = RuntimeProfile::default();
    for file in real_neff_files() {
        let name = file.display().to_string();
        let dir = tempfile::tempdir().unwrap();
        let (out, scratch) = (dir.path().join("r.neff"), dir.path().join("scratch"));
        std::fs::create_dir(&scratch).unwrap();
        let done = redact(&file, &out, &scratch, &RedactOptions::default()).unwrap();
        let original = Loader::new(&profile).verify_path(&file).unwrap();
        let redacted = Loader::new(&profile).verify_path(&out).unwrap();
        assert_eq!(
            same_verdict(&original, &redacted, &done.dropped),
            None,
            "{name}"
        );

        let (orig_tree, red_tree) = (dir.path().join("orig"), dir.path().join("red"));
        let limits = ExtractLimits::default();
        extract(&file, &orig_tree, &profile, false, &limits).unwrap();
        extract(&out, &red_tree, &profile, false, &limits).unwrap();
        let model = original.display_load().model.clone().unwrap();
        let mut windows: HashSet<[u8; 16]> = HashSet::new();
        for w in model.graphs.iter().flat_map(|g| &g.weights) {
            let bytes = std::fs::read(orig_tree.join(&w.member)).unwrap();
            let data = &bytes[bytes.len() - w.data_size.unwrap_or(0) as usize..];
            for window in data.windows(16).filter(|w| w.iter().any(|&b| b != 0)) {
                windows.insert(window.try_into().unwrap());
            }
        }
        let weight_members: HashSet<std::path::PathBuf> = model
            .graphs
            .iter()
            .flat_map(|g| &g.weights)
            .map(|w| orig_tree.join(&w.member))
            .collect();
        for path in walkdir(&orig_tree)
            .into_iter()
            .filter(|p| !weight_members.contains(p))
        {
            for window in std::fs::read(path).unwrap().windows(16) {
                windows.remove(<&[u8; 16]>::try_from(window).unwrap());
            }
        }
        let output = files(&red_tree);
        for bytes in &output {
            assert!(
                !bytes
                    .windows(16)
                    .any(|w| windows.contains(<&[u8; 16]>::try_from(w).unwrap())),
                "{name}: a window of a weight is left"
            );
        }
        let header = std::fs::read(&out).unwrap()[..1024].to_vec();
        let scrubbed = done.scrubbed.iter().map(|(_, s)| s.as_str());
        for s in scrubbed.filter(|s| s.len() >= 4) {
            for bytes in output.iter().chain([&header]) {
                assert!(
                    !bytes.windows(s.len()).any(|w| w == s.as_bytes()),
                    "{name}: {s:?} is left"
                );
            }
        }
        for dropped in &done.dropped {
            assert!(
                !red_tree.join(dropped).exists(),
                "{name}: {dropped} is left"
            );
        }
    }
}

#[test]
fn redact_check_passes_on_a_built_neff_and_keep_keeps_a_listing() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let tree = d.join("tree");
    copy_tree(&root.join("examples/allreduce"), &tree);
    std::fs::write(tree.join("sg00/pe.asm"), "nop ; /home/me/model\n").unwrap();
    let model = d.join("m.neff");
    assert_eq!(
        code(&neff(&[
            "pack",
            s(&tree),
            "-o",
            s(&model),
            "--name",
            "/home/me/m.neff",
            "-q"
        ])),
        0
    );
    let out = d.join("r.neff");
    let r = neff(&["redact", s(&model), "-o", s(&out), "--check"]);
    assert_eq!(code(&r), 0, "{}", stderr(&r));
    assert!(
        stderr(&r).contains("debug-info members: sg00/act.asm"),
        "{}",
        stderr(&r)
    );
    assert!(
        stderr(&r).contains("checked: the same verdict"),
        "{}",
        stderr(&r)
    );
    let header = stdout(&neff(&["inspect", s(&out)]));
    assert!(!header.contains("/home/me"), "{header}");
    let r = neff(&[
        "redact",
        s(&model),
        "-o",
        s(&out),
        "--keep",
        "sg00/pe.asm",
        "-q",
    ]);
    assert_eq!(code(&r), 0, "{}", stderr(&r));
    assert_eq!(code(&neff(&["cat", s(&out), "sg00/pe.asm", "--force"])), 0);
}
