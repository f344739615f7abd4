//! Every NEFF the real compilers wrote (`../shared/real-neffs/`, spec §11)
//! must pass the loader's gates with the hash check off (the hash layouts
//! are G9's business): on every arch it targets, without a wrong warning,
//! and with every member its manifests name counted as referenced.

use std::path::PathBuf;

use neff::loader::{load_file, verify_file, RuntimeProfile};

/// The real NEFFs (these tests are ignored without them).
fn real_neffs() -> Option<Vec<PathBuf>> {
    Some(crate::common::real_neff_files())
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
#[cfg_attr(
    not(neff_real_neffs),
    ignore = "real NEFFs missing: set NEFF_REAL_NEFFS (default ../shared/real-neffs), see tests/real-neffs.md"
)]
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

/// The typed manifests read every real def.json and engine JSON and write
/// them back unchanged (dynamic queues, queues without an owner, cast and
/// transpose descriptors, `cc_streams`, `dve_tables` arrays).
#[test]
#[cfg_attr(
    not(neff_real_neffs),
    ignore = "real NEFFs missing: set NEFF_REAL_NEFFS (default ../shared/real-neffs), see tests/real-neffs.md"
)]
fn the_typed_manifests_round_trip_every_real_def_json_and_engine_json() {
    use neff::schema::manifest::{from_slice, to_vec_pretty, DefJson, Engine, EngineJson};
    use serde_json::Value;

    let Some(files) = real_neffs() else { return };
    for path in files {
        let loaded = load_file(&path, &no_hash()).unwrap();
        let container = loaded.container.as_ref().unwrap();
        let text = |key: &str| -> Vec<u8> {
            container
                .member(key.as_bytes())
                .and_then(|m| m.data)
                .map(<[u8]>::to_vec)
                .unwrap_or_else(|| panic!("{}: {key} not kept", path.display()))
        };
        let defs: Vec<String> = container
            .members
            .keys()
            .map(|k| String::from_utf8_lossy(k).into_owned())
            .filter(|k| k.ends_with("/def.json"))
            .collect();
        assert!(!defs.is_empty(), "{}", path.display());
        for def_member in defs {
            let bytes = text(&def_member);
            let def: DefJson = from_slice(&def_member, &bytes).unwrap();
            let back: Value = serde_json::from_slice(&to_vec_pretty(&def).unwrap()).unwrap();
            let original: Value = serde_json::from_slice(&bytes).unwrap();
            assert_eq!(back, original, "{}: {def_member}", path.display());
            let dir = def_member.rsplit_once('/').map_or("", |(d, _)| d);
            for engine in Engine::ALL {
                let Some(file) = def.engine(engine) else {
                    continue;
                };
                let member = format!("{dir}/{file}");
                let bytes = text(&member);
                let eng: EngineJson = from_slice(&member, &bytes).unwrap();
                let back: Value = serde_json::from_slice(&to_vec_pretty(&eng).unwrap()).unwrap();
                let original: Value = serde_json::from_slice(&bytes).unwrap();
                assert_eq!(back, original, "{}: {member}", path.display());
            }
        }
    }
}
