//! `neff schema`: every schema is pinned by a golden file under
//! tests/golden/schemas/ (regenerate with NEFF_UPDATE_GOLDEN=1), and the
//! example build specs are checked against the build-spec schema's keys.

use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use serde_json::Value;

fn neff(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_neff"))
        .args(args)
        .output()
        .expect("run neff")
}

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
    let update = std::env::var_os("NEFF_UPDATE_GOLDEN").is_some();
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
        "ucode-lib",
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
        let path = dir.join(format!("{name}.json"));
        if update {
            fs::create_dir_all(&dir).unwrap();
            fs::write(&path, &r.stdout).unwrap();
        }
        let golden = fs::read(&path).unwrap_or_else(|_| {
            panic!("{} missing: run with NEFF_UPDATE_GOLDEN=1", path.display())
        });
        assert!(
            golden == r.stdout,
            "{} drifted from `neff schema {name}`: review, then NEFF_UPDATE_GOLDEN=1",
            path.display()
        );
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
#[should_panic(expected = "key \"instrs\" is not in the schema")]
fn the_key_check_catches_a_stray_key() {
    let schema: Value = serde_json::from_slice(&neff(&["schema", "build-spec"]).stdout).unwrap();
    let spec =
        serde_json::json!({"subgraphs": [{"name": "sg00", "engines": {"pe": {"instrs": "x"}}}]});
    check(&schema, &spec, &schema["$defs"], "spec");
}
