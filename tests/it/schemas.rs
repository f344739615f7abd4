//! `neff schema`: every schema is pinned by a golden file under
//! tests/golden/schemas/ (regenerate with NEFF_UPDATE_GOLDEN=1), and the
//! example build specs are checked against the build-spec schema's keys.

use crate::common::*;

use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::Value;

fn golden_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/golden/schemas")
}

/// The names `neff schema` lists.
fn names() -> Vec<String> {
    let r = neff(&["schema"]);
    assert_eq!(r.status.code(), Some(0));
    String::from_utf8(r.stdout)
        .unwrap()
        .lines()
        .filter_map(|l| l.split_whitespace().next().map(str::to_string))
        .collect()
}

#[test]
fn every_schema_matches_its_golden_file() {
    let dir = golden_dir();
    let names = names();
    for expected in [
        "build-spec",
        "verify-report",
        "inspect-report",
        "memory-report",
        "neff-json",
        "kelf",
        "def-json",
        "engine",
        "act-info",
        "ucode-lib",
        "pack-report",
        "unpack-report",
        "error",
        "corpus-manifest",
        "coverage-report",
        "fixtures-manifest",
        "extract-report",
    ] {
        assert!(names.iter().any(|n| n == expected), "{expected} not listed");
    }
    for name in &names {
        let r = neff(&["schema", name]);
        assert_eq!(r.status.code(), Some(0), "{name}");
        let schema: Value = serde_json::from_slice(&r.stdout).expect("a JSON schema");
        assert_eq!(
            schema["$schema"], "https://json-schema.org/draft/2020-12/schema",
            "{name}"
        );
        golden(&format!("schemas/{name}.json"), &r.stdout);
    }
    // No stale golden files.
    for entry in fs::read_dir(&dir).unwrap() {
        let file = entry.unwrap().file_name().into_string().unwrap();
        let name = file.trim_end_matches(".json");
        assert!(
            names.iter().any(|n| n == name),
            "{file} is not a schema `neff schema` prints"
        );
    }
}

#[test]
fn an_unknown_schema_name_is_a_usage_error() {
    let r = neff(&["schema", "nope"]);
    assert_eq!(r.status.code(), Some(2));
    let err = String::from_utf8_lossy(&r.stderr);
    assert!(err.contains("unknown schema \"nope\""), "{err}");
    assert!(err.contains("build-spec"), "{err}");
}

/// Every key an example spec uses is a property the schema declares, at every
/// level the schema describes with `additionalProperties: false` (a small
/// structural check; no JSON Schema validator is a dependency).
#[test]
fn the_examples_use_only_keys_the_build_spec_schema_declares() {
    let schema: Value = serde_json::from_slice(&neff(&["schema", "build-spec"]).stdout).unwrap();
    let defs = &schema["$defs"];
    let examples = Path::new(env!("CARGO_MANIFEST_DIR")).join("examples");
    for name in ["allreduce", "weights", "cayman-ucode", "two-subgraphs"] {
        let spec: Value =
            serde_json::from_slice(&fs::read(examples.join(format!("{name}.json"))).unwrap())
                .unwrap();
        check(&schema, &spec, defs, name);
    }
}

fn resolve<'a>(schema: &'a Value, defs: &'a Value) -> &'a Value {
    match schema["$ref"].as_str() {
        Some(r) => &defs[r.trim_start_matches("#/$defs/")],
        None => schema,
    }
}

fn check(schema: &Value, value: &Value, defs: &Value, at: &str) {
    let schema = resolve(schema, defs);
    if let Some(any) = schema["anyOf"].as_array() {
        // Option<T>: T or null.
        for s in any {
            if s["type"] != "null" && !value.is_null() {
                check(s, value, defs, at);
            }
        }
        return;
    }
    match value {
        Value::Object(map) => {
            let props = &schema["properties"];
            for (k, v) in map {
                if let Some(p) = props.get(k) {
                    check(p, v, defs, &format!("{at}.{k}"));
                } else if schema["additionalProperties"] == false {
                    panic!("{at}: key {k:?} is not in the schema");
                } else if let Some(extra) =
                    schema.get("additionalProperties").filter(|a| a.is_object())
                {
                    check(extra, v, defs, &format!("{at}.{k}"));
                }
            }
        }
        Value::Array(items) if schema["items"].is_object() => {
            for (i, v) in items.iter().enumerate() {
                check(&schema["items"], v, defs, &format!("{at}[{i}]"));
            }
        }
        _ => {}
    }
}

#[test]
#[should_panic(expected = "key \"engiens\" is not in the schema")]
fn the_key_check_catches_a_stray_key() {
    let schema: Value = serde_json::from_slice(&neff(&["schema", "build-spec"]).stdout).unwrap();
    let spec = serde_json::json!({"subgraphs": [{"name": "sg00", "engiens": {"pe": {}}}]});
    check(&schema, &spec, &schema["$defs"], "spec");
}

/// Documents to validate, each against `neff schema NAME`, with Python's
/// `jsonschema` (an independent validator, draft 2020-12), in one run.
#[derive(Default)]
struct Batch {
    /// (label, schema name, document).
    cases: Vec<(String, String, Value)>,
}

impl Batch {
    fn add(&mut self, label: impl Into<String>, name: &str, instance: Value) {
        self.cases.push((label.into(), name.to_string(), instance));
    }

    /// stdout of a `--json` run, exiting `code`: one document, to validate
    /// against schema `name`.
    fn run(&mut self, name: &str, args: &[&str], code: i32) -> Value {
        let r = neff(args);
        assert_eq!(
            r.status.code(),
            Some(code),
            "{args:?}: {}",
            String::from_utf8_lossy(&r.stderr)
        );
        let doc: Value = serde_json::from_slice(&r.stdout).expect("one JSON document");
        self.add(format!("{args:?}"), name, doc.clone());
        doc
    }

    /// Each case's label and the validator's complaints (empty: valid).
    fn results(self) -> Vec<(String, String)> {
        let mut schemas = serde_json::Map::new();
        for (_, name, _) in &self.cases {
            let r = neff(&["schema", name]);
            assert_eq!(r.status.code(), Some(0), "{name}");
            schemas.insert(name.clone(), serde_json::from_slice(&r.stdout).unwrap());
        }
        let cases: Vec<Value> = self
            .cases
            .iter()
            .map(|(_, name, doc)| serde_json::json!([name, doc]))
            .collect();
        let dir = tempfile::tempdir().unwrap();
        let input = dir.path().join("cases.json");
        fs::write(
            &input,
            serde_json::json!({"schemas": schemas, "cases": cases}).to_string(),
        )
        .unwrap();
        let script = "import json, sys, jsonschema\n\
            V = jsonschema.Draft202012Validator\n\
            d = json.load(open(sys.argv[1]))\n\
            for s in d['schemas'].values(): V.check_schema(s)\n\
            out = [sorted(f'{list(e.absolute_path)}: {e.message}' for e in V(d['schemas'][n]).iter_errors(i))[:5] for n, i in d['cases']]\n\
            print(json.dumps(out))";
        let out = Command::new("python3")
            .args(["-c", script])
            .arg(&input)
            .output()
            .expect("run python3 (with the jsonschema package: pip install jsonschema)");
        assert!(
            out.status.success(),
            "python3 jsonschema failed: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        let errors: Vec<Vec<String>> = serde_json::from_slice(&out.stdout).unwrap();
        assert_eq!(errors.len(), self.cases.len());
        self.cases
            .into_iter()
            .zip(errors)
            .map(|((label, name, _), e)| (format!("{label} (schema {name})"), e.join("\n")))
            .collect()
    }

    fn assert_all_valid(self) {
        let bad: Vec<String> = self
            .results()
            .into_iter()
            .filter(|(_, e)| !e.is_empty())
            .map(|(label, e)| format!("{label}:\n{e}"))
            .collect();
        assert!(
            bad.is_empty(),
            "documents that do not match their schema:\n{}",
            bad.join("\n")
        );
    }
}

fn real_neffs() -> Vec<PathBuf> {
    crate::common::real_neff_files_if_any()
}

fn p(path: &Path) -> &str {
    path.to_str().unwrap()
}

#[test]
#[cfg_attr(
    not(neff_jsonschema),
    ignore = "python3's jsonschema is missing: pip install jsonschema"
)]
fn every_json_output_matches_its_schema() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let examples = Path::new(env!("CARGO_MANIFEST_DIR")).join("examples");
    let out = d.join("out.neff");
    let mut batch = Batch::default();
    let model = p(&examples.join("allreduce")).to_string();
    batch.run("pack-report", &["pack", &model, "-o", p(&out), "--json"], 0);
    for spec in [
        "allreduce.json",
        "cayman-ucode.json",
        "two-subgraphs.json",
        "weights.json",
    ] {
        let (spec, built) = (examples.join(spec), d.join(spec.replace(".json", ".neff")));
        let args = ["build", p(&spec), "-o", p(&built), "--json"];
        batch.run("pack-report", &args, 0);
    }
    // A refused pack: the verdict, not written.
    let refused = d.join("r.neff");
    let args = [
        "pack",
        &model,
        "-o",
        p(&refused),
        "--feature-bits",
        "0x8000000",
        "--json",
    ];
    assert_eq!(batch.run("pack-report", &args, 1)["written"], false);
    batch.run(
        "error",
        &["verify", p(&d.join("missing.neff")), "--json"],
        2,
    );
    batch.run(
        "error",
        &["pack", p(&d.join("missing")), "-o", p(&out), "--json"],
        2,
    );
    batch.run("error", &["inspect", "--json", "--bogus"], 2);

    for (i, file) in real_neffs().iter().chain([&out]).enumerate() {
        batch.run("verify-report", &["verify", p(file), "--json"], 0);
        // One arch: accepted or refused (G17 for a file that does not target it).
        let one_arch = neff(&["verify", p(file), "--json", "--instance-arch", "cayman"]);
        let doc: Value = serde_json::from_slice(&one_arch.stdout).expect("one JSON document");
        assert_eq!(
            one_arch.status.code(),
            Some(i32::from(doc["accepted"] == false))
        );
        batch.add(
            format!("verify {} on cayman", p(file)),
            "verify-report",
            doc,
        );
        batch.run("inspect-report", &["inspect", p(file), "--json"], 0);
        let (tree, header) = (d.join(format!("u{i}")), d.join(format!("h{i}.json")));
        let args = [
            "unpack",
            p(file),
            "-o",
            p(&tree),
            "--header-out",
            p(&header),
            "--json",
        ];
        let unpacked = batch.run("unpack-report", &args, 0);
        assert!(unpacked["byte_identical_repack"].is_boolean());
    }
    batch.run(
        "unpack-report",
        &["unpack", p(&out), "-o", p(&d.join("plain")), "--json"],
        0,
    );

    // The files that carry NEFFs: extract's report, and inspect's with `carried`.
    let real = crate::common::real_neff_dir().unwrap_or_default();
    for carrier in [
        "ncc2.24_nki-moe-megakernel_wrapped_neff.hlo",
        "ncc2.6_optimum-neuron_neuronx_model.neuron",
    ] {
        let carrier = real.join(carrier);
        if !carrier.is_file() {
            continue;
        }
        batch.run(
            "extract-report",
            &["extract", p(&carrier), "--list", "--json"],
            0,
        );
        let out = d.join("extracted.neff");
        let args = [
            "extract",
            p(&carrier),
            "-o",
            p(&out),
            "--json",
            "--no-fsync",
        ];
        batch.run("extract-report", &args, 0);
        let inspected = batch.run("inspect-report", &["inspect", p(&carrier), "--json"], 0);
        assert!(inspected["carried"].is_object(), "{inspected}");
    }

    let read =
        |path: PathBuf| -> Value { serde_json::from_slice(&fs::read(path).unwrap()).unwrap() };
    let corpus = d.join("corpus");
    let r = neff(&["corpus", "-o", p(&corpus), "--count", "8", "-q"]);
    assert_eq!(r.status.code(), Some(0));
    batch.add(
        "corpus.json",
        "corpus-manifest",
        read(corpus.join("corpus.json")),
    );
    batch.run(
        "coverage-report",
        &["coverage", p(&corpus), "--reference", p(&corpus), "--json"],
        0,
    );
    let fixtures = d.join("fixtures");
    assert_eq!(
        neff(&["fixtures", "-o", p(&fixtures), "-q"]).status.code(),
        Some(0)
    );
    batch.add(
        "fixtures manifest.json",
        "fixtures-manifest",
        read(fixtures.join("manifest.json")),
    );
    batch.assert_all_valid();
}

/// The validator must be able to fail: a field of the wrong type, a field
/// the schema does not declare, and a missing field are each refused.
#[test]
#[cfg_attr(
    not(neff_jsonschema),
    ignore = "python3's jsonschema is missing: pip install jsonschema"
)]
fn the_validator_rejects_a_mistyped_or_stray_field() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("a.neff");
    let model = Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/allreduce");
    let mut valid = Batch::default();
    let doc = valid.run(
        "pack-report",
        &["pack", p(&model), "-o", p(&out), "--json"],
        0,
    );
    let inspect = valid.run("inspect-report", &["inspect", p(&out), "--json"], 0);
    valid.assert_all_valid();
    type Mutant = (&'static str, fn(&mut Value));
    let mutants: [Mutant; 4] = [
        ("tar_size as a string", |v| {
            v["tar_size"] = Value::from("20480")
        }),
        ("a stray top-level key", |v| v["extra"] = Value::from(1)),
        ("a stray header key", |v| {
            v["header"]["extra"] = Value::from(1)
        }),
        ("no verdict", |v| {
            v.as_object_mut().unwrap().remove("verdict");
        }),
    ];
    let mut invalid = Batch::default();
    for (what, mutate) in mutants {
        let mut bad = doc.clone();
        mutate(&mut bad);
        invalid.add(what, "pack-report", bad);
    }
    let error = serde_json::json!({"error": {"kind": "read", "message": "m", "offset": "0x10"}});
    invalid.add("a string offset", "error", error);
    let error = serde_json::json!({"error": {"kind": "read", "message": "m"}, "more": 1});
    invalid.add("a second key", "error", error);
    let mut bad = inspect;
    bad["verdict"]["accepted"] = Value::from("yes");
    invalid.add("accepted as a string", "inspect-report", bad);
    for (label, errors) in invalid.results() {
        assert!(!errors.is_empty(), "{label} passed the schema");
    }
}
