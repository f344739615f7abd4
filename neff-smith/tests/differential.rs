//! The checked builder and the loader share one rule set: for generated specs
//! and mutations of them, the checked build accepts exactly when the loader
//! accepts the NEFF written through the unchecked path, and refuses with the
//! loader's gate.

use arbitrary::Unstructured;
use neff_loader::RuntimeProfile;
use neff_smith::corpus::Mix;
use neff_smith::generate::{generate, GenConfig};
use neff_writer::build_spec::BuildSpec;
use serde_json::{json, Value};

const CASES: u64 = 2_000;

/// Picks one of `items`.
fn pick<'v, T>(mix: &mut Mix, items: &'v [T]) -> &'v T {
    &items[mix.below(items.len())]
}

/// Every object under `value` that has `key`, as JSON pointers.
fn objects_with(value: &Value, key: &str, at: String, out: &mut Vec<String>) {
    match value {
        Value::Object(map) => {
            if map.contains_key(key) {
                out.push(at.clone());
            }
            for (k, v) in map {
                objects_with(
                    v,
                    key,
                    format!("{at}/{}", k.replace('~', "~0").replace('/', "~1")),
                    out,
                );
            }
        }
        Value::Array(items) => {
            for (i, v) in items.iter().enumerate() {
                objects_with(v, key, format!("{at}/{i}"), out);
            }
        }
        _ => {}
    }
}

/// Sets `key` on a random object that already has `key` (or `anchor`).
fn set_somewhere(spec: &mut Value, anchor: &str, key: &str, value: Value, mix: &mut Mix) -> bool {
    let mut at = Vec::new();
    objects_with(spec, anchor, String::new(), &mut at);
    if at.is_empty() {
        return false;
    }
    let pointer = pick(mix, &at).clone();
    match spec.pointer_mut(&pointer).and_then(Value::as_object_mut) {
        Some(object) => {
            object.insert(key.to_string(), value);
            true
        }
        None => false,
    }
}

/// One targeted change of the spec, aimed at a runtime rule.
fn mutate(spec: &mut Value, mix: &mut Mix) -> bool {
    match mix.below(14) {
        0 => {
            let kind = *pick(
                mix,
                &[
                    "in",
                    "out",
                    "data",
                    "act_load",
                    "embedding_update",
                    "dynamic",
                ],
            );
            set_somewhere(spec, "semaphore", "type", json!(kind), mix)
                || set_somewhere(spec, "semaphore_set", "type", json!(kind), mix)
        }
        1 => {
            let n = *pick(mix, &[0u64, 1, 2, 16, 17]);
            set_somewhere(spec, "owner", "num_queues", json!(n), mix)
        }
        2 => {
            let owner = *pick(mix, &["pe", "act", "pool", "PE", "gpsimd", "", " sp"]);
            set_somewhere(spec, "owner", "extra", json!({ "owner": owner }), mix)
        }
        3 => set_somewhere(
            spec,
            "owner",
            "extra",
            json!({ "queue_instances": ["a", "b"] }),
            mix,
        ),
        4 => {
            let n = *pick(mix, &[1usize, 32, 33]);
            set_somewhere(spec, "owner", "semaphore_set", json!(vec![1; n]), mix)
        }
        5 => {
            let op = *pick(mix, &["copy", "transpose", "add", "max", "xor", ""]);
            set_somewhere(spec, "from_sizes", "op", json!(op), mix)
        }
        6 => set_somewhere(spec, "from_sizes", "to_sizes", json!([0]), mix),
        7 => set_somewhere(spec, "from_sizes", "from_steps", json!([1, 2, 3, 4]), mix),
        8 => {
            let v = format!("{}.{}.0.0", pick(mix, &[0, 1, 1, 2, 3]), mix.below(30));
            set_somewhere(
                spec,
                "ulib_to_ucode_version",
                "ulib_to_ucode_version",
                json!(v),
                mix,
            )
        }
        9 => {
            let n = mix.below(10) as u64;
            set_somewhere(spec, "ulib_to_ucode_version", "total_cpus", json!(n), mix)
        }
        10 => {
            let id = mix.below(6) as u64;
            set_somewhere(spec, "dtype", "var_id", json!(id), mix)
        }
        11 => {
            let version = *pick(mix, &["0.5", "5", "1.0", ""]);
            spec["kelf_version"] = json!(version);
            true
        }
        12 => {
            let target = *pick(mix, &["*", "sunda", "cayman", "mariana"]);
            spec["target"] = json!(target);
            true
        }
        _ => {
            let patch = match mix.below(3) {
                0 => json!({ "feature_bits": 1u64 << mix.below(12) }),
                1 => json!({ "vnc_size": mix.below(4) }),
                _ => json!({ "neff_version_major": mix.below(4) }),
            };
            spec["header"] = patch;
            true
        }
    }
}

fn profile(mix: &mut Mix) -> RuntimeProfile {
    match mix.below(4) {
        0 => RuntimeProfile {
            ucode_abi: "2.0.0.0".into(),
            ..RuntimeProfile::default()
        },
        1 => RuntimeProfile {
            check_var_ids: false,
            ..RuntimeProfile::default()
        },
        _ => RuntimeProfile::default(),
    }
}

#[test]
fn the_checked_builder_accepts_exactly_what_the_loader_accepts() {
    const WORKERS: u64 = 2;
    let counts: Vec<(u64, u64, u64)> = std::thread::scope(|scope| {
        let workers: Vec<_> = (0..WORKERS)
            .map(|w| scope.spawn(move || run_cases((w..CASES).step_by(WORKERS as usize))))
            .collect();
        workers
            .into_iter()
            .map(|w| w.join().unwrap_or_else(|e| std::panic::resume_unwind(e)))
            .collect()
    });
    let (compared, refused, builder_only) = counts
        .iter()
        .fold((0, 0, 0), |a, c| (a.0 + c.0, a.1 + c.1, a.2 + c.2));
    eprintln!("{compared} compared, {refused} refused, {builder_only} builder-only");
    assert!(
        compared >= 1_800,
        "only {compared} cases compared ({builder_only} builder-only)"
    );
    assert!(
        refused >= compared / 5 && refused <= compared * 4 / 5,
        "{refused} of {compared} refused: the mutations should refuse a fair share"
    );
}

/// Runs `cases`; returns (compared, refused, refused by a builder-only rule).
fn run_cases(cases: impl Iterator<Item = u64>) -> (u64, u64, u64) {
    let base = std::env::temp_dir();
    let config = GenConfig {
        max_blob: 128,
        ..GenConfig::default()
    };
    let (mut compared, mut refused, mut builder_only) = (0u64, 0u64, 0u64);
    for case in cases {
        let mut mix = Mix(0x5EED ^ case.wrapping_mul(0x9E37_79B9_7F4A_7C15));
        let entropy = mix.bytes(4096);
        let Ok(generated) = generate(&mut Unstructured::new(&entropy), &config) else {
            continue;
        };
        let mut json = generated.json;
        for _ in 0..mix.below(3) {
            mutate(&mut json, &mut mix);
        }
        // Cheap to write and read back: no content UUID, no hash check.
        json["level"] = json!(1);
        json["uuid"] = json!("561826fb-125f-4bb8-991c-29e085c8949a");
        let profile = RuntimeProfile {
            verify_hash: false,
            ..profile(&mut mix)
        };
        let builder = |unchecked: bool| {
            let mut spec: BuildSpec = serde_json::from_value(json.clone()).ok()?;
            spec.unchecked = unchecked;
            spec.keep_refused = unchecked;
            Some(spec.into_builder(&base).ok()?.profile(profile.clone()))
        };
        let Some(checked) = builder(false) else {
            continue;
        };
        // The checked door refuses at the write, with the gates' report.
        let checked = checked.write_to(&mut Vec::new());
        let checked_gate = match &checked {
            Ok(_) => None,
            Err(e) if e.report().is_some() => e.report().and_then(|r| r.gate),
            // A rule of the builder's own (a description it cannot write).
            Err(_) => {
                builder_only += 1;
                continue;
            }
        };
        let Some(unchecked) = builder(true) else {
            panic!("case {case}: the spec parsed once but not twice");
        };
        let mut out = Vec::new();
        let outcome = match unchecked.write_to(&mut out) {
            Ok(outcome) => outcome,
            Err(e) => panic!("case {case}: the unchecked path failed: {e}\n{json:#}"),
        };
        assert_eq!(
            checked.is_ok(),
            outcome.report.accepted,
            "case {case}: checked build {:?}, loader {}\n{json:#}",
            checked_gate,
            outcome.report.summary()
        );
        assert_eq!(checked_gate, outcome.report.gate, "case {case}: {json:#}");
        compared += 1;
        refused += u64::from(checked.is_err());
    }
    (compared, refused, builder_only)
}
