//! Lift (`neff unpack --spec`) and build back (`neff build`), on every real
//! compiler NEFF in `../shared/real-neffs/` (ignored where the folder is
//! missing): byte-identical rebuilds, every runtime-read key typed, and a
//! typed edit that loads and differs from the original by that edit only.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::Output;

use neff::smith::coverage::{manifest_paths, RUNTIME_READ};
use neff::writer::lift::{Content, Model};
use serde_json::Value;

fn real_neffs() -> Vec<PathBuf> {
    crate::common::real_neff_files()
}

fn neff(args: &[&std::ffi::OsStr]) -> Output {
    crate::common::neff_command()
        .args(args)
        .output()
        .expect("run neff")
}

/// `neff unpack FILE -o DIR --spec SPEC` in `tmp`; the unpack report.
fn lift(file: &Path, tmp: &Path) -> (PathBuf, PathBuf, Value) {
    let (dir, spec) = (tmp.join("tree"), tmp.join("spec.json"));
    let out = neff(&[
        "unpack".as_ref(),
        file.as_os_str(),
        "-o".as_ref(),
        dir.as_os_str(),
        "--spec".as_ref(),
        spec.as_os_str(),
        "--json".as_ref(),
    ]);
    assert!(out.status.success(), "{}: {out:?}", file.display());
    (dir, spec, serde_json::from_slice(&out.stdout).unwrap())
}

fn build(spec: &Path, out: &Path, extra: &[&str]) -> Output {
    let mut args: Vec<&std::ffi::OsStr> = vec![
        "build".as_ref(),
        spec.as_os_str(),
        "-o".as_ref(),
        out.as_os_str(),
        "--json".as_ref(),
        "--no-fsync".as_ref(),
    ];
    args.extend(extra.iter().map(std::ffi::OsStr::new));
    neff(&args)
}

fn uuid_of(report: &Output) -> String {
    let v: Value = serde_json::from_slice(&report.stdout).unwrap();
    v["header"]["uuid"].as_str().unwrap().to_string()
}

fn original_uuid(file: &Path) -> String {
    let bytes = std::fs::read(file).unwrap();
    let raw: [u8; 1024] = bytes[..1024].try_into().unwrap();
    neff::schema::NeffHeader::from_bytes(raw)
        .fields()
        .uuid
        .to_string()
}

#[test]
#[cfg_attr(
    not(neff_real_neffs),
    ignore = "real NEFFs missing: set NEFF_REAL_NEFFS (default ../shared/real-neffs), see tests/real-neffs.md"
)]
fn every_real_neff_lifts_and_builds_back_byte_for_byte() {
    for file in real_neffs() {
        let name = file.display().to_string();
        let tmp = tempfile::tempdir().unwrap();
        let (_, spec, report) = lift(&file, tmp.path());
        assert_eq!(report["byte_identical_repack"], true, "{name}: {report:#}");
        // Every real stream is below the default proof's 16 MiB: proven whole.
        let proof = &report["deflate_proof"];
        assert!(proof["stream"].as_u64().unwrap() > 0, "{name}: {report:#}");
        assert_eq!(proof["compared"], proof["stream"], "{name}: {report:#}");
        assert_eq!(report["lift_notes"], serde_json::json!([]), "{name}");
        // neff.json or the KELF, a def.json and five engines at least.
        assert!(
            report["typed_members"].as_u64().unwrap() >= 7,
            "{name}: {report:#}"
        );
        let out = tmp.path().join("rebuilt.neff");
        let built = build(&spec, &out, &[]);
        assert!(built.status.success(), "{name}: {built:?}");
        assert!(
            std::fs::read(&out).unwrap() == std::fs::read(&file).unwrap(),
            "{name}: the rebuilt NEFF differs"
        );
        assert_eq!(uuid_of(&built), original_uuid(&file), "{name}");
        let doc: Value = serde_json::from_slice(&built.stdout).unwrap();
        assert_eq!(doc["payload_matches_source"], true, "{name}: {doc:#}");
    }
}

#[test]
#[cfg_attr(
    not(neff_real_neffs),
    ignore = "real NEFFs missing: set NEFF_REAL_NEFFS (default ../shared/real-neffs), see tests/real-neffs.md"
)]
fn every_runtime_read_key_of_real_output_is_typed() {
    let kinds = ["neff-json", "kelf", "def-json", "engine", "act-info"];
    let mut seen: BTreeSet<String> = BTreeSet::new();
    let mut untyped: BTreeSet<String> = BTreeSet::new();
    for file in real_neffs() {
        let tmp = tempfile::tempdir().unwrap();
        let (_, spec, _) = lift(&file, tmp.path());
        let spec: Value = serde_json::from_slice(&std::fs::read(&spec).unwrap()).unwrap();
        for member in spec["payload"].as_array().unwrap() {
            for kind in kinds {
                let Some(doc) = member.get(kind.replace('-', "_")) else {
                    continue;
                };
                let found = manifest_paths(kind, doc).unwrap();
                seen.extend(found.paths.iter().map(|p| format!("{kind}:{p}")));
                untyped.extend(found.untyped.iter().map(|p| format!("{kind}:{p}")));
            }
        }
    }
    let mut missing = Vec::new();
    let mut read_seen = 0;
    for (kind, keys) in RUNTIME_READ {
        for key in *keys {
            let path = format!("{kind}:{key}");
            read_seen += usize::from(seen.contains(&path));
            if untyped.contains(&path) {
                missing.push(path);
            }
        }
    }
    assert!(
        missing.is_empty(),
        "runtime-read keys in extra: {missing:?}"
    );
    assert!(read_seen >= 90, "only {read_seen} runtime-read paths seen");
    println!(
        "{} key paths in the typed manifests, {} untyped (kept in extra): {untyped:?}",
        seen.len(),
        untyped.len()
    );
}

/// Lines of `a` and `b` that differ (same line count required).
fn changed_lines(a: &[u8], b: &[u8]) -> usize {
    let (a, b) = (String::from_utf8_lossy(a), String::from_utf8_lossy(b));
    let (a, b): (Vec<&str>, Vec<&str>) = (a.lines().collect(), b.lines().collect());
    assert_eq!(
        a.len(),
        b.len(),
        "line count changed:\n{}\n---\n{}",
        a.join("\n"),
        b.join("\n")
    );
    a.iter().zip(&b).filter(|(x, y)| x != y).count()
}

#[test]
#[cfg_attr(
    not(neff_real_neffs),
    ignore = "real NEFFs missing: set NEFF_REAL_NEFFS (default ../shared/real-neffs), see tests/real-neffs.md"
)]
fn a_typed_edit_loads_and_differs_by_that_edit_only() {
    for file in real_neffs() {
        let name = file.display().to_string();
        let tmp = tempfile::tempdir().unwrap();
        let (tree, spec_path, _) = lift(&file, tmp.path());
        let mut spec: Value = serde_json::from_slice(&std::fs::read(&spec_path).unwrap()).unwrap();
        // Edit the label of the first subgraph's PE manifest, in the spec.
        let def = spec["payload"]
            .as_array()
            .unwrap()
            .iter()
            .find(|m| m["name"].as_str().unwrap().ends_with("def.json"))
            .unwrap()
            .clone();
        let def_name = def["name"].as_str().unwrap();
        let dir = def_name.rsplit_once('/').map_or("", |(d, _)| d);
        let pe = def["def_json"]["pe"].as_str().unwrap();
        let pe_member = format!("{dir}/{pe}");
        let entry = spec["payload"]
            .as_array_mut()
            .unwrap()
            .iter_mut()
            .find(|m| m["name"] == pe_member.as_str())
            .unwrap();
        entry["engine"]["name"] = "edited_by_neff".into();
        std::fs::write(&spec_path, serde_json::to_vec_pretty(&spec).unwrap()).unwrap();

        let out = tmp.path().join("edited.neff");
        let built = build(&spec_path, &out, &[]);
        assert!(built.status.success(), "{name}: {built:?}");
        // A new UUID: the payload is no longer the one the UUID was recorded for.
        assert_ne!(uuid_of(&built), original_uuid(&file), "{name}");
        let doc: Value = serde_json::from_slice(&built.stdout).unwrap();
        assert_eq!(doc["payload_matches_source"], false, "{name}: {doc:#}");
        let verify = neff(&["verify".as_ref(), out.as_os_str(), "-q".as_ref()]);
        assert!(verify.status.success(), "{name}: {verify:?}");

        // The diff is that edit: one member, one key (and the payload fields).
        let (diff, changed) = diff_of(&file, &out);
        assert_eq!(
            changed,
            BTreeSet::from([pe_member.clone()]),
            "{name}: {diff:#}"
        );
        assert!(
            diff["members"]["added"].as_array().unwrap().is_empty(),
            "{name}"
        );
        assert!(
            diff["members"]["removed"].as_array().unwrap().is_empty(),
            "{name}"
        );
        let header: BTreeSet<&str> = diff["header"]
            .as_array()
            .unwrap()
            .iter()
            .map(|h| h["field"].as_str().unwrap())
            .collect();
        assert!(
            header.is_subset(&BTreeSet::from(["data_size", "hash", "digest", "uuid"])),
            "{name}: {header:?}"
        );
        let text = diff["manifests"].to_string();
        assert!(text.contains("edited_by_neff"), "{name}: {text}");

        // The edited member is the original but for the edited line.
        let original = std::fs::read(tree.join(&pe_member)).unwrap();
        let edited = extract_member(&out, &pe_member, tmp.path());
        assert_eq!(changed_lines(&original, &edited), 1, "{name}");

        // --uuid keep pins the recorded UUID even after the edit.
        let pinned = tmp.path().join("pinned.neff");
        let built = build(&spec_path, &pinned, &["--uuid", "keep"]);
        assert!(built.status.success(), "{name}: {built:?}");
        assert_eq!(uuid_of(&built), original_uuid(&file), "{name}");
    }
}

/// `neff diff A B --json` and the names of the members it says changed.
fn diff_of(a: &Path, b: &Path) -> (Value, BTreeSet<String>) {
    let out = neff(&[
        "diff".as_ref(),
        a.as_os_str(),
        b.as_os_str(),
        "--json".as_ref(),
    ]);
    let diff: Value = serde_json::from_slice(&out.stdout).unwrap();
    let changed = diff["members"]["changed"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["name"].as_str().unwrap().to_string())
        .collect();
    (diff, changed)
}

fn extract_member(neff_file: &Path, member: &str, _tmp: &Path) -> Vec<u8> {
    let out = neff(&["cat".as_ref(), neff_file.as_os_str(), member.as_ref()]);
    assert!(out.status.success(), "{out:?}");
    out.stdout
}

#[test]
#[cfg_attr(
    not(neff_real_neffs),
    ignore = "real NEFFs missing: set NEFF_REAL_NEFFS (default ../shared/real-neffs), see tests/real-neffs.md"
)]
fn rust_api_renames_an_engine_member_and_def_json_follows() {
    let file = real_neffs()
        .into_iter()
        .find(|f| f.to_string_lossy().contains("ncc2.23_nkipy_matmul_small"))
        .unwrap();
    let tmp = tempfile::tempdir().unwrap();
    let (tree, _, _) = lift(&file, tmp.path());
    let recovered =
        neff::writer::recover_framing(&file, neff::writer::DeflateProof::Whole).unwrap();
    let (mut model, notes) = Model::from_tree(&tree, recovered.file, Some(tmp.path())).unwrap();
    assert!(notes.0.is_empty(), "{notes:?}");
    model.rename_member("sg00/PE.json", "sg00/pe.json").unwrap();
    let Some(Content::DefJson(def)) = model.member("sg00/def.json").map(|m| &m.content) else {
        panic!("sg00/def.json is not typed");
    };
    assert_eq!(def.pe.as_deref(), Some("pe.json"));
    let out = tmp.path().join("renamed.neff");
    let settings = neff::writer::PackSettings {
        no_fsync: true,
        ..Default::default()
    };
    let outcome = model.write_to_path(tmp.path(), &out, &settings).unwrap();
    assert!(outcome.report.accepted, "{:#?}", outcome.report);
    assert_eq!(
        outcome.notes.len(),
        1,
        "a new UUID is derived: {:?}",
        outcome.notes
    );
    let def = extract_member(&out, "sg00/def.json", tmp.path());
    let original = std::fs::read(tree.join("sg00/def.json")).unwrap();
    assert_eq!(changed_lines(&original, &def), 1);
    assert!(String::from_utf8_lossy(&def).contains("\"pe\": \"pe.json\""));
}

/// The first `file` var of any def.json in a lifted spec: (def.json member,
/// var name, weights member).
fn first_weight(spec: &Value) -> Option<(String, String, String)> {
    spec["payload"].as_array()?.iter().find_map(|m| {
        let name = m["name"].as_str()?;
        let vars = m["def_json"]["var"].as_object()?;
        let (var, v) = vars.iter().find(|(_, v)| {
            v["type"] == "file" && v["file_name"].as_str().is_some_and(|f| f.ends_with(".npy"))
        })?;
        let dir = name.rsplit_once('/').map_or("", |(d, _)| d);
        let file = v["file_name"].as_str()?;
        let member = if dir.is_empty() {
            file.to_string()
        } else {
            format!("{dir}/{file}")
        };
        Some((name.to_string(), var.clone(), member))
    })
}

#[test]
#[cfg_attr(
    not(neff_real_neffs),
    ignore = "real NEFFs missing: set NEFF_REAL_NEFFS (default ../shared/real-neffs), see tests/real-neffs.md"
)]
fn a_weight_replaced_through_the_spec_takes_its_new_shape_and_size() {
    let mut edited = 0;
    for file in real_neffs() {
        let name = file.display().to_string();
        let tmp = tempfile::tempdir().unwrap();
        let (tree, spec_path, _) = lift(&file, tmp.path());
        let mut spec: Value = serde_json::from_slice(&std::fs::read(&spec_path).unwrap()).unwrap();
        let Some((def_json, var, member)) = first_weight(&spec) else {
            continue;
        };
        let old = std::fs::read(tree.join(&member)).unwrap();
        let header = neff::schema::npy::parse_header(&old).unwrap();
        let descr = header.descr.clone().unwrap();
        let item = header.item_size().unwrap();
        // A new shape: twice the elements, one more dimension.
        let elements: u64 = header
            .shape
            .as_ref()
            .unwrap()
            .iter()
            .product::<u64>()
            .max(1)
            * 2;
        let data: Vec<u8> = (0..elements * item).map(|i| (i % 251) as u8).collect();
        let npy = neff::writer::builder::npy::encode_v1(&descr, &[2, elements / 2], &data);
        std::fs::write(tmp.path().join("new.npy"), &npy).unwrap();
        spec["weights"] = serde_json::json!([{"def_json": def_json, "var": var, "npy": "new.npy", "retype": true}]);
        std::fs::write(&spec_path, serde_json::to_vec_pretty(&spec).unwrap()).unwrap();

        let out = tmp.path().join("edited.neff");
        let built = build(&spec_path, &out, &[]);
        assert!(built.status.success(), "{name}: {built:?}");
        assert_eq!(extract_member(&out, &member, tmp.path()), npy, "{name}");
        let old_def = std::fs::read(tree.join(&def_json)).unwrap();
        let new_def = extract_member(&out, &def_json, tmp.path());
        let old_var = &serde_json::from_slice::<Value>(&old_def).unwrap()["var"][&var];
        let new_var = &serde_json::from_slice::<Value>(&new_def).unwrap()["var"][&var];
        match old_var.get("size") {
            Some(_) => {
                assert_eq!(new_var["size"], elements * item, "{name}");
                assert_eq!(changed_lines(&old_def, &new_def), 1, "{name}");
            }
            None => assert_eq!(old_def, new_def, "{name}: no size to follow"),
        }
        let (diff, changed) = diff_of(&file, &out);
        let mut expected = BTreeSet::from([member.clone()]);
        if old_var.get("size").is_some() {
            expected.insert(def_json.clone());
        }
        assert_eq!(changed, expected, "{name}: {diff:#}");
        edited += 1;
    }
    assert!(edited > 0, "no real NEFF has a weights var");
}

#[test]
fn a_weight_edit_names_what_is_wrong() {
    let tmp = tempfile::tempdir().unwrap();
    let def = serde_json::json!({"var": {
        "w": {"type": "file", "var_id": 0, "file_name": "w.npy", "size": 8},
        "x": {"type": "input", "var_id": 1, "size": 8}
    }});
    let mut model = Model {
        payload: vec![
            neff::writer::lift::PayloadMember {
                name: "sg00/def.json".into(),
                content: Content::DefJson(Box::new(serde_json::from_value(def).unwrap())),
                source: None,
            },
            neff::writer::lift::PayloadMember {
                name: "sg00/w.npy".into(),
                content: Content::Data(neff::writer::build_spec::Blob::Text("x".into())),
                source: None,
            },
        ],
        ..Default::default()
    };
    let npy = neff::writer::builder::npy::encode_v1("<f4", &[4], &[0u8; 16]);
    std::fs::write(tmp.path().join("good.npy"), &npy).unwrap();
    std::fs::write(tmp.path().join("short.npy"), &npy[..npy.len() - 4]).unwrap();
    let edit = |var: &str, file: &str| neff::writer::lift::WeightEdit {
        def_json: "sg00/def.json".into(),
        var: var.into(),
        npy: neff::writer::build_spec::Blob::Path(file.into()),
        retype: false,
    };
    let err = |r: Result<_, neff::writer::Error>| r.unwrap_err().to_string();
    let e = err(model.replace_weight(tmp.path(), edit("w", "short.npy")));
    assert!(
        e.contains("promises 16 data bytes") && e.contains("has 12"),
        "{e}"
    );
    let e = err(model.replace_weight(tmp.path(), edit("x", "good.npy")));
    assert!(e.contains("\"input\"") && e.contains("file"), "{e}");
    let e = err(model.replace_weight(tmp.path(), edit("nope", "good.npy")));
    assert!(e.contains("no var \"nope\""), "{e}");
    let e = err(model.replace_weight(tmp.path(), edit("w", "missing.npy")));
    assert!(e.contains("missing.npy"), "{e}");
    let change = model
        .replace_weight(tmp.path(), edit("w", "good.npy"))
        .unwrap();
    assert_eq!((change.old_size, change.new_size), (Some(8), Some(16)));
    assert_eq!(change.member, "sg00/w.npy");
    let Some(Content::DefJson(def)) = model.member("sg00/def.json").map(|m| &m.content) else {
        panic!("def.json")
    };
    assert_eq!(def.var["w"].size, Some(16));
    // Now the member is good.npy (<f4, [4]): another dtype or shape only with retype.
    let other = neff::writer::builder::npy::encode_v1("<f2", &[2, 2], &[0u8; 8]);
    std::fs::write(tmp.path().join("other.npy"), &other).unwrap();
    let e = err(model.replace_weight(tmp.path(), edit("w", "other.npy")));
    assert!(
        e.contains("<f2 of shape [2, 2]") && e.contains("<f4 of shape [4]"),
        "{e}"
    );
    assert!(e.contains("retype"), "{e}");
    let Some(Content::DefJson(def)) = model.member("sg00/def.json").map(|m| &m.content) else {
        panic!("def.json")
    };
    assert_eq!(
        def.var["w"].size,
        Some(16),
        "a refused edit changes nothing"
    );
    let retyped = neff::writer::lift::WeightEdit {
        retype: true,
        ..edit("w", "other.npy")
    };
    let change = model.replace_weight(tmp.path(), retyped).unwrap();
    assert_eq!(change.new_size, Some(8));
}

#[path = "../../examples/edit_real_neff.rs"]
#[allow(dead_code)]
mod edit_real_neff;

#[test]
#[cfg_attr(
    not(neff_real_neffs),
    ignore = "real NEFFs missing: set NEFF_REAL_NEFFS (default ../shared/real-neffs), see tests/real-neffs.md"
)]
fn the_documented_rust_edit_of_a_real_neff_changes_one_line() {
    for file in real_neffs() {
        let name = file.display().to_string();
        let tmp = tempfile::tempdir().unwrap();
        let out = tmp.path().join("edited.neff");
        edit_real_neff::edit(&file, &out, "edited_by_example").unwrap();
        let verify = neff(&["verify".as_ref(), out.as_os_str(), "-q".as_ref()]);
        assert!(verify.status.success(), "{name}: {verify:?}");
        let before = extract_member(&file, "sg00/def.json", tmp.path());
        let after = extract_member(&out, "sg00/def.json", tmp.path());
        assert_eq!(changed_lines(&before, &after), 1, "{name}");
        assert!(
            String::from_utf8_lossy(&after).contains("\"edited_by_example\""),
            "{name}"
        );
    }
}

#[test]
#[cfg_attr(
    not(neff_real_neffs),
    ignore = "real NEFFs missing: set NEFF_REAL_NEFFS (default ../shared/real-neffs), see tests/real-neffs.md"
)]
fn a_header_refused_neff_lifts_with_keep_refused_and_builds_back_as_it_is() {
    let file = real_neffs()
        .into_iter()
        .find(|f| f.to_string_lossy().contains("matmul_small"))
        .unwrap();
    let tmp = tempfile::tempdir().unwrap();
    // A feature bit no runtime knows: G5 refuses it (the payload is intact).
    let mut bytes = std::fs::read(&file).unwrap();
    bytes[0x220 + 5] |= 0x01;
    let refused = tmp.path().join("refused.neff");
    std::fs::write(&refused, &bytes).unwrap();
    let (tree, spec) = (tmp.path().join("tree"), tmp.path().join("spec.json"));
    let unpack = |extra: &[&str]| {
        let mut args: Vec<&std::ffi::OsStr> = vec![
            "unpack".as_ref(),
            refused.as_os_str(),
            "-o".as_ref(),
            tree.as_os_str(),
            "--spec".as_ref(),
            spec.as_os_str(),
            "--json".as_ref(),
        ];
        args.extend(extra.iter().map(std::ffi::OsStr::new));
        neff(&args)
    };
    let plain = unpack(&[]);
    assert_eq!(plain.status.code(), Some(1), "{plain:?}");
    assert!(!tree.exists() && !spec.exists());

    let kept = unpack(&["--keep-refused"]);
    assert!(kept.status.success(), "{kept:?}");
    let report: Value = serde_json::from_slice(&kept.stdout).unwrap();
    assert_eq!(report["refused"]["gate"], "G5", "{report:#}");
    assert_eq!(report["byte_identical_repack"], true);

    let out = tmp.path().join("out.neff");
    let built = build(&spec, &out, &[]);
    assert_eq!(
        built.status.code(),
        Some(1),
        "the gates still refuse it: {built:?}"
    );
    assert!(!out.exists());
    let built = build(&spec, &out, &["--keep-refused"]);
    assert!(built.status.success(), "{built:?}");
    assert_eq!(std::fs::read(&out).unwrap(), bytes, "rebuilt byte for byte");
}

#[test]
fn a_neff_the_manifest_gates_refuse_lifts_and_says_so() {
    let tmp = tempfile::tempdir().unwrap();
    let spec = serde_json::json!({
        "subgraphs": [{"name": "sg00",
            "inputs": [{"name": "x", "dtype": "float32", "shape": [4]}],
            "outputs": [{"name": "y", "dtype": "float32", "shape": [4]}]}],
        "raw_members": {"sg00/def.json": {"text": r#"{"var": {"x": {"type": "input", "var_id": 0, "size": 16}}}"#}},
        "keep_refused": true
    });
    let spec_path = tmp.path().join("bad.json");
    std::fs::write(&spec_path, spec.to_string()).unwrap();
    let bad = tmp.path().join("bad.neff");
    let built = build(&spec_path, &bad, &[]);
    assert!(built.status.success(), "{built:?}");
    let (_, lifted, report) = lift(&bad, tmp.path());
    assert_eq!(report["refused"]["gate"], "G20b", "{report:#}");
    let out = tmp.path().join("again.neff");
    let again = build(&lifted, &out, &["--keep-refused"]);
    assert!(again.status.success(), "{again:?}");
    assert_eq!(std::fs::read(&out).unwrap(), std::fs::read(&bad).unwrap());
}
