//! What a new user trips on: mistakes that are never silent and errors that
//! point at the mistake (no Rust `Debug` text, the usual dtype names known,
//! an empty model said to be empty).

use std::fs;
use std::path::{Path, PathBuf};

use crate::common::*;

/// Writes `text` as `name` in `dir`.
fn file(dir: &Path, name: &str, text: &str) -> PathBuf {
    let path = dir.join(name);
    fs::write(&path, text).unwrap();
    path
}

/// A one-subgraph spec whose input has `dtype`.
fn spec_with_dtype(dtype: &str) -> String {
    format!(
        r#"{{"subgraphs": [{{"name": "sg00",
  "inputs": [{{"name": "x", "dtype": "{dtype}", "shape": [4]}}],
  "outputs": [{{"name": "y", "dtype": "float32", "shape": [4]}}]}}]}}"#
    )
}

/// The allreduce example built into `d/m.neff`.
fn built_example(d: &Path) -> PathBuf {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let built = d.join("m.neff");
    let model = root.join("examples/allreduce.json");
    assert_eq!(code(&neff(&["build", s(&model), "-o", s(&built), "-q"])), 0);
    built
}

/// The allreduce example built and lifted into `d/tree` and the spec
/// `d/lifted.json`: the spec's path and its JSON.
fn lifted_example(d: &Path) -> (PathBuf, serde_json::Value) {
    let built = built_example(d);
    let lifted = d.join("lifted.json");
    let tree = d.join("tree");
    let r = neff(&[
        "unpack",
        s(&built),
        "-o",
        s(&tree),
        "--spec",
        s(&lifted),
        "-q",
    ]);
    assert_eq!(code(&r), 0, "{}", stderr(&r));
    let spec = serde_json::from_slice(&fs::read(&lifted).unwrap()).unwrap();
    (lifted, spec)
}

#[test]
fn an_empty_model_says_it_has_no_subgraphs() {
    let dir = tempfile::tempdir().unwrap();
    let spec = file(dir.path(), "spec.json", r#"{"subgraphs": []}"#);
    let out = neff(&["build", s(&spec), "-o", s(&dir.path().join("o.neff"))]);
    assert_eq!(code(&out), 2, "{}", stderr(&out));
    assert!(
        stderr(&out).contains("subgraphs: no subgraphs"),
        "{}",
        stderr(&out)
    );
    assert!(!stderr(&out).contains("G29"), "{}", stderr(&out));
}

#[test]
fn a_dtype_by_another_tools_name_is_suggested_by_its_runtime_name() {
    let dir = tempfile::tempdir().unwrap();
    for (given, meant) in [
        ("bf16", "bfloat16"),
        ("fp16", "float16"),
        ("float", "float32"),
        ("torch.float32", "float32"),
        ("fp8_e4m3", "float8_e4m3fn"),
        ("int", "int32"),
        ("flaot32", "float32"),
    ] {
        let spec = file(dir.path(), "spec.json", &spec_with_dtype(given));
        let out = neff(&["build", s(&spec), "-o", s(&dir.path().join("o.neff"))]);
        assert_ne!(code(&out), 0, "{given}");
        let want =
            format!("dtype {given:?} is not a dtype the runtime knows (did you mean {meant:?}?)");
        assert!(stderr(&out).contains(&want), "{given}: {}", stderr(&out));
    }
}

#[test]
fn cat_pretty_indents_a_json_member_and_refuses_one_that_is_not() {
    let dir = tempfile::tempdir().unwrap();
    let out = built_example(dir.path());
    let raw = neff(&["cat", s(&out), "sg00/def.json"]);
    let pretty = neff(&["cat", "--pretty", s(&out), "sg00/def.json"]);
    assert_eq!((code(&raw), code(&pretty)), (0, 0), "{}", stderr(&pretty));
    let text = stdout(&pretty);
    assert!(text.starts_with("{\n  \""), "{text}");
    let parsed = |bytes: &[u8]| serde_json::from_slice::<serde_json::Value>(bytes).unwrap();
    assert_eq!(parsed(&pretty.stdout), parsed(&raw.stdout));
    let bin = neff(&["cat", "--pretty", s(&out), "sg00/pe.bin"]);
    assert_eq!(code(&bin), 2);
    assert!(
        stderr(&bin).contains("sg00/pe.bin is not JSON"),
        "{}",
        stderr(&bin)
    );
}

#[test]
fn unpack_then_pack_keeps_the_header_and_framing_and_never_packs_the_record() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let original = d.join("a.neff");
    let model = root.join("examples/allreduce");
    let flags = [
        "--name",
        "kept",
        "--build-version",
        "9.9",
        "--feature-bits",
        "0x2000",
    ];
    let args = [
        &[
            "pack",
            s(&model),
            "-o",
            s(&original),
            "-q",
            "--framing",
            "neuronx-cc",
        ][..],
        &flags,
    ]
    .concat();
    assert_eq!(code(&neff(&args)), 0);
    let tree = d.join("tree");
    let out = neff(&["unpack", s(&original), "-o", s(&tree)]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let record = tree.join(neff::writer::RECORDED_HEADER);
    assert!(record.is_file(), "{}", stderr(&out));
    assert!(stderr(&out).contains("keeps them"), "{}", stderr(&out));
    let again = d.join("b.neff");
    let packed = neff(&["pack", s(&tree), "-o", s(&again), "--json"]);
    assert_eq!(code(&packed), 0, "{}", stderr(&packed));
    assert_eq!(
        fs::read(&again).unwrap(),
        fs::read(&original).unwrap(),
        "byte for byte"
    );
    let listed = stdout(&neff(&["inspect", s(&again), "--json"]));
    assert!(
        !listed.contains(neff::writer::RECORDED_HEADER),
        "the record was packed"
    );
    // Without it: the defaults (and the header fields are lost, as before).
    let plain = d.join("c.neff");
    let r = neff(&[
        "pack",
        s(&tree),
        "-o",
        s(&plain),
        "--no-recorded-header",
        "--json",
    ]);
    assert_eq!(code(&r), 0, "{}", stderr(&r));
    let header = &serde_json::from_str::<serde_json::Value>(&stdout(&r)).unwrap()["header"];
    assert_ne!(header["name"], "kept");
    // An unpack told not to record removes an older record.
    let r = neff(&[
        "unpack",
        s(&plain),
        "-o",
        s(&tree),
        "--force",
        "--no-recorded-header",
    ]);
    assert_eq!(code(&r), 0, "{}", stderr(&r));
    assert!(!record.exists());
}

#[test]
fn a_cayman_model_without_evtaccel_loads_and_the_schema_says_it_may() {
    let dir = tempfile::tempdir().unwrap();
    let text = r#"{"target": "cayman", "subgraphs": [{"name": "sg00",
  "inputs": [{"name": "x", "dtype": "float32", "shape": [4]}],
  "outputs": [{"name": "y", "dtype": "float32", "shape": [4]}]}]}"#;
    let spec = file(dir.path(), "spec.json", text);
    let out = dir.path().join("o.neff");
    let built = neff(&["build", s(&spec), "-o", s(&out), "-q"]);
    assert_eq!(code(&built), 0, "{}", stderr(&built));
    let verified = neff(&["verify", s(&out), "--instance-arch", "cayman"]);
    assert_eq!(code(&verified), 0, "{}", stdout(&verified));
    let schema = stdout(&neff(&["schema", "build-spec"]));
    let schema: serde_json::Value = serde_json::from_str(&schema).unwrap();
    let text = schema.to_string();
    let at = text
        .find("Add the EVTACCEL carveout")
        .expect("the evtaccel key's description");
    let description = &text[at..at + 400];
    assert!(description.contains("Optional"), "{description}");
    assert!(!description.contains("requires"), "{description}");
}

#[test]
fn a_key_that_looks_like_a_typo_is_refused_with_the_key_it_is_near() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    // Written: an extra key of a generated var.
    let text = r#"{"subgraphs": [{"name": "sg00",
  "inputs": [{"name": "x", "dtype": "float32", "shape": [4], "extra": {"alignmnet": 64}}],
  "outputs": [{"name": "y", "dtype": "float32", "shape": [4]}]}]}"#;
    let spec = file(d, "spec.json", text);
    let out = neff(&["build", s(&spec), "-o", s(&d.join("o.neff"))]);
    assert_eq!(code(&out), 2, "{}", stderr(&out));
    assert!(stderr(&out).contains("var.x.alignmnet"), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("did you mean \"alignment\"?"),
        "{}",
        stderr(&out)
    );
    // Lifted: the same typo added to a lifted def.json.
    let (lifted, mut spec) = lifted_example(d);
    let payload = spec["payload"].as_array_mut().unwrap();
    let member = payload
        .iter_mut()
        .find(|m| m["name"] == "sg00/def.json")
        .unwrap();
    let def = &mut member["def_json"];
    def["var"]["input"]["alignmnet"] = serde_json::json!(64);
    fs::write(&lifted, serde_json::to_vec_pretty(&spec).unwrap()).unwrap();
    let r = neff(&["build", s(&lifted), "-o", s(&d.join("edited.neff"))]);
    assert_eq!(code(&r), 2, "{}", stderr(&r));
    assert!(stderr(&r).contains("var.input.alignmnet"), "{}", stderr(&r));
    assert!(
        stderr(&r).contains("did you mean \"alignment\"?"),
        "{}",
        stderr(&r)
    );
}

#[test]
fn a_type_error_in_a_lifted_spec_names_the_key_path_and_line_of_the_value() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let (lifted, mut spec) = lifted_example(d);
    let payload = spec["payload"].as_array_mut().unwrap();
    let i = payload
        .iter()
        .position(|m| m["name"] == "sg00/def.json")
        .unwrap();
    payload[i]["def_json"]["var"]["input"]["size"] = serde_json::json!("abc");
    let text = serde_json::to_string_pretty(&spec).unwrap();
    let line = 1 + text.lines().position(|l| l.contains("\"abc\"")).unwrap();
    fs::write(&lifted, &text).unwrap();
    let r = neff(&["build", s(&lifted), "-o", s(&d.join("o.neff"))]);
    assert_eq!(code(&r), 2, "{}", stderr(&r));
    let want = format!("payload[{i}].def_json.var.input.size: invalid type: string \"abc\", expected u64 at line {line} column");
    assert!(stderr(&r).contains(&want), "{want}\n{}", stderr(&r));
}

#[test]
fn a_barrier_config_in_the_spec_is_attached_and_a_bad_one_as_a_member_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let model = r#""subgraphs": [{"name": "sg00",
  "inputs": [{"name": "x", "dtype": "float32", "shape": [4]}],
  "outputs": [{"name": "y", "dtype": "float32", "shape": [4]}]}]"#;
    let good = file(
        d,
        "good.json",
        &format!(r#"{{"barrier_config": {{"execute_device_barrier": "0x1"}}, {model}}}"#),
    );
    let out = d.join("good.neff");
    let r = neff(&["build", s(&good), "-o", s(&out), "-q"]);
    assert_eq!(code(&r), 0, "{}", stderr(&r));
    let shown = stdout(&neff(&["inspect", s(&out)]));
    assert!(
        shown.contains("barrier config (barrier_config.json): execute_device_barrier 0x1"),
        "{shown}"
    );
    let member = r#"{"execute_device_barrier": "0x7"}"#;
    let text =
        format!(r#"{{"members": {{"barrier_config.json": {{"text": {member:?}}}}}, {model}}}"#);
    let bad = file(d, "bad.json", &text);
    let r = neff(&["build", s(&bad), "-o", s(&d.join("bad.neff"))]);
    assert_eq!(code(&r), 2, "{}", stderr(&r));
    assert!(
        stderr(&r).contains("members.\"barrier_config.json\": not a barrier config"),
        "{}",
        stderr(&r)
    );
    assert!(!d.join("bad.neff").exists());
}
