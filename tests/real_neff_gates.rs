//! Every NEFF the real compilers wrote (`../shared/real-neffs/`, spec §11)
//! must pass the loader's gates with the hash check off (the hash layouts
//! are G9's business): on every arch it targets, without a wrong warning,
//! and with every member its manifests name counted as referenced.

use std::path::{Path, PathBuf};

use neff::loader::{load_file, verify_file, RuntimeProfile};

/// The real NEFFs, or `None` (after a skip line) when the folder is absent
/// outside CI.
fn real_neffs() -> Option<Vec<PathBuf>> {
    let dir = Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/../shared/real-neffs"));
    let Ok(entries) = std::fs::read_dir(dir) else {
        if std::env::var("CI").as_deref() == Ok("true") {
            panic!("{} is missing; CI must provide it", dir.display());
        }
        println!("skipped: {} is missing", dir.display());
        return None;
    };
    let mut files: Vec<PathBuf> = entries
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "neff"))
        .collect();
    files.sort();
    assert!(!files.is_empty(), "no .neff in {}", dir.display());
    Some(files)
}

fn no_hash() -> RuntimeProfile {
    RuntimeProfile {
        verify_hash: false,
        ..RuntimeProfile::default()
    }
}

/// Members no manifest names (the runtime never looks at them).
fn never_referenced(member: &str) -> bool {
    let base = member.rsplit('/').next().unwrap_or(member);
    member.starts_with("debug_info/")
        || matches!(
            base,
            "info.json" | "metrics.json" | "tensor_map.json" | "cpu.so" | "cpu.params"
        )
}

#[test]
fn every_real_neff_is_accepted_with_the_hash_check_off() {
    let Some(files) = real_neffs() else { return };
    for path in files {
        let name = path.display();
        let verdict = verify_file(&path, &no_hash()).unwrap();
        assert!(verdict.accepted, "{name}: {:#?}", verdict.report());
        for arch in verdict.targeted {
            let profile = RuntimeProfile {
                verify_hash: false,
                ..RuntimeProfile::for_arch(arch)
            };
            let loaded = load_file(&path, &profile).unwrap();
            let r = &loaded.report;
            assert!(r.accepted, "{name} on {arch}: {r:#?}");
            let wrong: Vec<&String> = r
                .warnings
                .iter()
                .filter(|w| {
                    w.contains("not in the NEFF")
                        || w.contains("is not listed")
                        || w.contains("not resolved")
                        || w.contains("is not an unsigned integer")
                        || w.contains("has no num_streams")
                })
                .collect();
            assert!(wrong.is_empty(), "{name} on {arch}: {wrong:?}");
            let model = loaded.model.as_ref().unwrap();
            assert!(
                model.missing_references.is_empty(),
                "{name} on {arch}: {:?}",
                model.missing_references
            );
            let unreferenced: Vec<&String> = model
                .unreferenced_members
                .iter()
                .filter(|m| !never_referenced(m))
                .collect();
            assert!(
                unreferenced.is_empty(),
                "{name} on {arch}: {unreferenced:?}"
            );
        }
    }
}
