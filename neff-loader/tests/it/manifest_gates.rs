//! One negative test per manifest gate (G13–G31), asserting the runtime's
//! status and message under the right profile and the legacy override where
//! it applies; plus positive loads per arch.

use crate::assert_refused as refused;
use neff_loader::{load_buffer, Loaded, Report, RuntimeProfile};
use neff_schema::Arch;
use neff_testkit::bytes::*;
use serde_json::{json, Value};

fn on(arch: Arch, bytes: &[u8]) -> Report {
    load_buffer(Some(bytes), &RuntimeProfile::for_arch(arch)).report
}

fn legacy(arch: Arch, bytes: &[u8]) -> Report {
    let profile = RuntimeProfile {
        allow_legacy_neff: true,
        ..RuntimeProfile::for_arch(arch)
    };
    load_buffer(Some(bytes), &profile).report
}

#[track_caller]
fn accepted(r: &Report) {
    assert!(r.accepted, "{r:#?}");
}

fn edit(text: &str, f: impl FnOnce(&mut Value)) -> Vec<u8> {
    let mut v: Value = serde_json::from_str(text).unwrap();
    f(&mut v);
    serde_json::to_vec_pretty(&v).unwrap()
}

/// The minimal model with def.json edited.
fn with_def(f: impl FnOnce(&mut Value)) -> Vec<u8> {
    model_neff(&[("sg00/def.json", &edit(DEF_JSON, f))])
}

/// The minimal model with neff.json edited.
fn with_nn(f: impl FnOnce(&mut Value)) -> Vec<u8> {
    model_neff(&[("neff.json", &edit(NEFF_JSON, f))])
}

/// The minimal model with the KELF descriptor edited.
fn with_kelf(f: impl FnOnce(&mut Value)) -> Vec<u8> {
    model_neff(&[("kelf-0.json", &edit(KELF_JSON, f))])
}

fn ucode_lib(library: &str) -> Value {
    json!({"library": library, "ulib_to_ucode_version": "1.21.1.0", "cpu_id": 0, "total_cpus": 8,
           "functions": [{"name": "f0", "opcode": 133, "sub_opcode": 0}]})
}

/// The minimal model with ucode libs (and their library members).
fn with_ucode(libs: Vec<Value>, members: &[&str]) -> Vec<u8> {
    let def = edit(DEF_JSON, |d| d["ucode_lib"] = Value::Array(libs));
    let mut replace: Vec<(String, Vec<u8>)> = vec![("sg00/def.json".into(), def)];
    for m in members {
        replace.push((format!("sg00/{m}"), b"\x7fELF".to_vec()));
    }
    let refs: Vec<(&str, &[u8])> = replace
        .iter()
        .map(|(n, d)| (n.as_str(), d.as_slice()))
        .collect();
    model_neff(&refs)
}

#[test]
fn the_minimal_model_loads_on_every_arch_without_warnings() {
    for arch in Arch::ALL {
        let r = on(arch, &valid_neff());
        accepted(&r);
        assert!(r.warnings.is_empty(), "{arch}: {:?}", r.warnings);
        assert_eq!(r.tiers_run, neff_loader::Tier::ALL);
    }
}

#[test]
fn a_named_target_loads_on_its_arch_only() {
    for (target, arch) in [
        ("sunda", Arch::Sunda),
        ("v3", Arch::Cayman),
        ("mariana", Arch::Mariana),
        ("", Arch::Sunda),
    ] {
        let n = with_kelf(|k| k["target"] = json!(target));
        for instance in Arch::ALL {
            let r = on(instance, &n);
            assert_eq!(
                r.accepted,
                instance == arch,
                "target {target:?} on {instance}: {r:#?}"
            );
        }
    }
}

#[test]
fn g13_neff_json_missing() {
    let n = neff_of(&model_files_without(&[], &["neff.json"]));
    refused(
        &on(Arch::Cayman, &n),
        "G13",
        2,
        "Invalid NN: t, neff.json is missing",
    );
    // kelp.json is the runtime's fallback name.
    let mut files = model_files_without(&[], &["neff.json"]);
    files.push(("kelp.json".into(), NEFF_JSON.as_bytes().to_vec()));
    accepted(&on(Arch::Cayman, &neff_of(&files)));
}

#[test]
fn g14_neff_json_structure() {
    let cases: Vec<(Vec<u8>, &str)> = vec![
        (
            with_nn(|v| {
                v.as_object_mut().unwrap().remove("heads");
            }),
            "Missing required fields in NEFF JSON",
        ),
        (
            with_nn(|v| {
                v["attrs"].as_object_mut().unwrap().remove("shape");
            }),
            "Missing dltype or shape in attrs",
        ),
        (
            with_nn(|v| v["attrs"]["dltype"] = json!("float32")),
            "Invalid dltype data format",
        ),
        (
            with_nn(|v| v["attrs"]["shape"] = json!({})),
            "Invalid shape data format",
        ),
        (
            with_nn(|v| v["node_row_ptr"] = json!([7, 8, 9])),
            "EID 7 out of bounds for dtypes/shapes",
        ),
        (
            with_nn(|v| v["heads"] = json!([[5, 0, 0]])),
            "Output node ID 5 out of bounds",
        ),
        (
            with_nn(|v| v["attrs"]["shape"][1][0] = json!(vec![1; 33])),
            "Too many dimensions (33)",
        ),
        (
            with_nn(|v| v["nodes"][1]["attrs"]["func_name"] = json!("main")),
            "No KELF node found in NEFF JSON",
        ),
        (
            with_nn(|v| {
                v["nodes"][1]["attrs"]
                    .as_object_mut()
                    .unwrap()
                    .remove("kelf");
            }),
            "KELF node found but missing 'kelf' attribute",
        ),
        (
            with_nn(|v| v["nodes"][1]["attrs"]["kelf"] = json!(7)),
            "KELF attribute is not a string",
        ),
    ];
    for (n, message) in cases {
        refused(&on(Arch::Cayman, &n), "G14", 2, message);
    }
    let r = on(
        Arch::Cayman,
        &model_neff(&[("neff.json", b"{\"nodes\": [")]),
    );
    assert_eq!(r.gate_id(), Some("G14"));
    assert!(r.message.unwrap().starts_with("Failed to parse neff.json"));
    // The producer's op "__kelf" node is accepted only in lenient mode.
    let n = with_nn(|v| {
        v["nodes"][1]["op"] = json!("__kelf");
        v["nodes"][1]["attrs"]["func_name"] = json!("0");
    });
    refused(
        &on(Arch::Cayman, &n),
        "G14",
        2,
        "No KELF node found in NEFF JSON",
    );
    let lenient = RuntimeProfile {
        lenient_kelf_node: true,
        ..RuntimeProfile::default()
    };
    accepted(&load_buffer(Some(&n), &lenient).report);
}

#[test]
fn g15_kelf_descriptor() {
    refused(
        &on(Arch::Cayman, &with_kelf(|k| k["version"] = json!("05"))),
        "G15",
        2,
        "invalid string (.) in 05",
    );
    let n = with_nn(|v| v["nodes"][1]["attrs"]["kelf"] = json!("kelf-9.json"));
    refused(
        &on(Arch::Cayman, &n),
        "G15",
        2,
        "Failed to find KELF kelf-9.json in NEFF",
    );
}

#[test]
fn g16_unknown_target() {
    refused(
        &on(Arch::Cayman, &with_kelf(|k| k["target"] = json!("trn2"))),
        "G16",
        2,
        "Invalid target 'trn2'",
    );
    refused(
        &on(Arch::Cayman, &with_kelf(|k| k["target"] = json!("Cayman"))),
        "G16",
        2,
        "Invalid target 'Cayman'",
    );
}

#[test]
fn g17_arch_mismatch_and_the_legacy_override() {
    let n = with_kelf(|k| k["target"] = json!("cayman"));
    let r = on(Arch::Sunda, &n);
    refused(&r, "G17", 2, "Loading a NEFF compiled for a different arch is not allowed, NEFF arch: v3, instance arch: v2");
    assert_eq!(r.error_cause.as_deref(), Some("NEFF_ARCH_INCOMPAT"));
    assert!(r.detail.unwrap().contains("NEURON_RT_ALLOW_LEGACY_NEFF=1"));
    let r = legacy(Arch::Sunda, &n);
    accepted(&r);
    assert!(
        r.warnings.contains(
            &"Loading a NEFF compiled for a different arch, NEFF arch: v3, instance arch: v2"
                .to_string()
        ),
        "{r:#?}"
    );
}

#[test]
fn g18_repeated_graph_name_asserts() {
    let n = with_kelf(
        |k| k["graphs"] = json!([{"definition": "sg00/def.json", "name": "sg00"}, {"definition": "sg00/def.json", "name": "sg00"}]),
    );
    let r = on(Arch::Cayman, &n);
    refused(&r, "G18", 134, "/opt/workspace/KaenaRuntime/kelf/kelf.cpp:217: Assertion `graphs.count(name) == 1' failed.");
    assert_eq!(r.status.name(), "ABORT");
}

#[test]
fn g19_variables() {
    let cases: Vec<(Vec<u8>, &str)> = vec![
        (
            with_def(|d| {
                d.as_object_mut().unwrap().remove("var");
            }),
            "Failed to parse, key: var",
        ),
        (
            with_def(|d| {
                d["var"]["x"].as_object_mut().unwrap().remove("type");
            }),
            "Failed to parse, key: type",
        ),
        (
            with_def(|d| {
                d["var"]["x"].as_object_mut().unwrap().remove("var_id");
            }),
            "missing <var_id>",
        ),
        (
            with_def(|d| d["var"]["x"]["alignment"] = json!(3)),
            "alignment provided not power of 2. alignment=3",
        ),
        (
            with_def(|d| {
                d["var"]["x"].as_object_mut().unwrap().remove("size");
            }),
            "Failed to parse, key: size",
        ),
        (
            with_def(|d| d["var"]["p"] = json!({"type": "pointer", "var_id": 2, "size": 4})),
            "Invalid pointer size 4 for p, must be 8",
        ),
        (
            with_def(|d| d["var"]["l"] = json!({"type": "list", "var_id": 2, "list": ["a"]})),
            "Failed to parse, key: list",
        ),
        (
            with_def(|d| {
                d["var"]["w"] = json!({"type": "file", "var_id": 2, "file_name": "w.bin"})
            }),
            "Failed to load weights file sg00/w.bin",
        ),
        (
            with_def(|d| d["var"]["z"] = json!({"type": "weird", "var_id": 2})),
            "Unknown variable type weird",
        ),
    ];
    for (n, message) in cases {
        refused(&on(Arch::Cayman, &n), "G19", 2, message);
    }
    // Weights: .npy must start with the numpy magic; raw .bin is free.
    let def = edit(DEF_JSON, |d| {
        d["var"]["w"] = json!({"type": "file", "var_id": 2, "file_name": "w.npy"});
        d["var"]["b"] = json!({"type": "file", "var_id": 3, "file_name": "b.bin"});
    });
    let bad = model_neff(&[
        ("sg00/def.json", &def),
        ("sg00/w.npy", b"NUMPY..."),
        ("sg00/b.bin", b"raw"),
    ]);
    refused(
        &on(Arch::Cayman, &bad),
        "G19",
        2,
        "NUMPY sg00/w.npy bad header 554e != 0x4e93",
    );
    let good = model_neff(&[
        ("sg00/def.json", &def),
        ("sg00/w.npy", b"\x93NUMPY\x01\x00\x00\x00"),
        ("sg00/b.bin", b"raw"),
    ]);
    accepted(&on(Arch::Cayman, &good));
}

#[test]
fn g20_dense_ids_and_an_output() {
    let n = with_def(|d| d["var"]["y"]["var_id"] = json!(5));
    refused(
        &on(Arch::Cayman, &n),
        "G20a",
        2,
        "Unexpected var_ids set! max=5, size=2",
    );
    let relaxed = RuntimeProfile {
        check_var_ids: false,
        ..RuntimeProfile::default()
    };
    accepted(&load_buffer(Some(&n), &relaxed).report);
    let n = with_def(|d| d["var"]["y"]["type"] = json!("tmp-buf"));
    refused(
        &on(Arch::Cayman, &n),
        "G20b",
        2,
        "Invalid NEFF: graph sg00/def.json has no Outputs",
    );
}

#[test]
fn g21_dma_queues() {
    let q = |v: Value| with_def(|d| d["dma_queue"] = json!({"q0": v}));
    refused(
        &on(Arch::Cayman, &q(json!({"owner": "gpu", "type": "in"}))),
        "G21a",
        2,
        "Invalid owner 'gpu' for DMA queue q0",
    );
    refused(
        &on(Arch::Cayman, &q(json!({"owner": "pool"}))),
        "G21b",
        2,
        "missing <type> in q0",
    );
    refused(
        &on(
            Arch::Cayman,
            &q(json!({"owner": "pool", "type": "sideways"})),
        ),
        "G21b",
        2,
        "Invalid DMA queue type 'sideways' for q0",
    );
    refused(
        &on(
            Arch::Cayman,
            &q(json!({"owner": "pool", "type": "out", "queue_instances": ["q0_0", "q0_1"]})),
        ),
        "G21c",
        2,
        "Invalid Neff: Queue set instances are not supported for output queues (q0)",
    );
    let sems: Vec<u64> = (0..33).collect();
    refused(
        &on(
            Arch::Cayman,
            &q(json!({"owner": "pool", "type": "data", "semaphore_set": sems})),
        ),
        "G21d",
        2,
        "Runtime supports maximum of 32 semaphores per queue set, found: 33",
    );
    let two = with_def(
        |d| d["dma_queue"] = json!({"a": {"owner": "act", "type": "act_load"}, "b": {"owner": "act", "type": "act_load"}}),
    );
    assert_eq!(on(Arch::Cayman, &two).gate_id(), Some("G21d"));
    accepted(&on(
        Arch::Cayman,
        &q(json!({"owner": "pool", "type": "data", "num_queues": 4, "semaphore": 3})),
    ));
}

#[test]
fn g21a_owner_is_optional_but_a_present_one_must_be_an_engine() {
    let q = |v: Value| with_def(|d| d["dma_queue"] = json!({"q0": v}));
    // neuron-cc 1.15 `pinned` queues carry no owner.
    accepted(&on(
        Arch::Cayman,
        &q(json!({"fabric_path": "main", "pinned": true, "type": "data"})),
    ));
    for owner in ["pe", "act", "pool", "dve", "sp"] {
        accepted(&on(Arch::Cayman, &q(json!({"owner": owner, "type": "in"}))));
    }
    refused(
        &on(Arch::Cayman, &q(json!({"owner": "gpsimd", "type": "data"}))),
        "G21a",
        2,
        "Invalid owner 'gpsimd' for DMA queue q0",
    );
    // An empty or non-string owner is present and not an engine.
    refused(
        &on(Arch::Cayman, &q(json!({"owner": "", "type": "data"}))),
        "G21a",
        2,
        "Invalid owner '' for DMA queue q0",
    );
    refused(
        &on(Arch::Cayman, &q(json!({"owner": 2, "type": "data"}))),
        "G21a",
        2,
        "Invalid owner '' for DMA queue q0",
    );
}

#[test]
fn g21b_dynamic_queues_are_known_and_unknown_types_are_not() {
    let q = |v: Value| with_def(|d| d["dma_queue"] = json!({"q0": v}));
    // Every queue neuronx-cc 2.23 writes.
    accepted(&on(
        Arch::Cayman,
        &q(json!({"owner": "act", "type": "dynamic", "num_queues": 16,
                  "semaphore_set": (0..16).collect::<Vec<u64>>(), "fabric_path": "main",
                  "dynamic_dma": {"SB_scratch_partition_offset": 0, "SB_scratch_partition_size": 16384}})),
    ));
    for kind in ["Dynamic", "dyn", "indirect_memcpy"] {
        refused(
            &on(Arch::Cayman, &q(json!({"owner": "pool", "type": kind}))),
            "G21b",
            2,
            &format!("Invalid DMA queue type '{kind}' for q0"),
        );
    }
}

#[test]
fn g21c_refuses_queue_instances_not_num_queues() {
    let q = |v: Value| with_def(|d| d["dma_queue"] = json!({"q0": v}));
    // num_queues 16 on in queues: every neuronx-cc file.
    for kind in ["in", "out", "data", "embedding_update", "dynamic"] {
        let r = on(
            Arch::Cayman,
            &q(json!({"owner": "pool", "type": kind, "num_queues": 16})),
        );
        accepted(&r);
        assert!(r.warnings.is_empty(), "{kind}: {:?}", r.warnings);
    }
    // Above AWS's documented 16: loaded, with a note.
    let r = on(
        Arch::Cayman,
        &q(json!({"owner": "pool", "type": "in", "num_queues": 17})),
    );
    accepted(&r);
    assert!(
        r.warnings
            .iter()
            .any(|w| w.contains("num_queues 17 is above 16")),
        "{:?}",
        r.warnings
    );
    for (kind, label) in [
        ("in", "input"),
        ("out", "output"),
        ("embedding_update", "embedding update"),
    ] {
        let r = on(
            Arch::Cayman,
            &q(json!({"owner": "pool", "type": kind, "queue_instances": ["a", "b"]})),
        );
        refused(
            &r,
            "G21c",
            2,
            &format!("Invalid Neff: Queue set instances are not supported for {label} queues (q0)"),
        );
        // An empty list names no instance.
        accepted(&on(
            Arch::Cayman,
            &q(json!({"owner": "pool", "type": kind, "queue_instances": []})),
        ));
    }
    // Queue sets are fine on data queues.
    accepted(&on(
        Arch::Cayman,
        &q(json!({"owner": "pool", "type": "data", "queue_instances": ["a", "b"]})),
    ));
    // act_load still needs num_queues 1.
    assert_eq!(
        on(
            Arch::Cayman,
            &q(json!({"owner": "act", "type": "act_load", "num_queues": 16}))
        )
        .gate_id(),
        Some("G21d")
    );
}

#[test]
fn g26_cast_and_transpose_descriptors() {
    let block =
        |desc: Value| with_def(|d| d["dma"] = json!([{"queue": "q", "id": 0, "desc": [desc]}]));
    // neuronx-cc 2.18+: a dtype conversion (not a CCE op).
    accepted(&on(
        Arch::Cayman,
        &block(
            json!({"from": "SB", "from_dtype": "float32", "from_off": 0, "from_sizes": [8, 2],
                      "from_steps": [1, 8], "num_tiling_dimensions": 1, "op": "cast", "to": "y",
                      "to_dtype": "float16", "to_off": 0, "to_sizes": [8, 2], "to_steps": [1, 8]}),
        ),
    ));
    // neuronx-cc 2.21: transposes carry the transpose keys and no op.
    accepted(&on(
        Arch::Cayman,
        &block(
            json!({"from": "x", "to": "y", "from_sizes": [4], "from_steps": [1],
                      "to_sizes": [4], "to_steps": [1], "transpose_op": "WZXY",
                      "transpose_shape": [1, 1, 128, 128], "transpose_element_size": 2}),
        ),
    ));
    for op in ["copy", "transpose", "transpose_op"] {
        accepted(&on(Arch::Cayman, &block(json!({ "op": op }))));
    }
    for op in ["Cast", "convert", "mul"] {
        refused(
            &on(Arch::Cayman, &block(json!({ "op": op }))),
            "G26",
            2,
            &format!("Unknown dma operation: {op}"),
        );
    }
    // The documented compute ops still need their dtype.
    refused(
        &on(Arch::Cayman, &block(json!({"op": "fma"}))),
        "G26",
        2,
        "Invalid cce desc ap without dtype",
    );
}

#[test]
fn g29_vnc_size_0_reads_as_1() {
    let zero = graphs(1, 0, &[]);
    accepted(&on(Arch::Sunda, &zero));
    accepted(&on(Arch::Cayman, &zero));
    let r = on(Arch::Cayman, &graphs(2, 0, &[]));
    refused(
        &r,
        "G29a",
        2,
        "Insufficient number of pncs, required 2, available 1",
    );
    assert!(
        r.detail.as_deref().is_some_and(|d| d.contains("not set")),
        "{r:#?}"
    );
}

/// The minimal model with the activation and DVE engine files replaced and
/// `extra` members added.
fn with_engines(act: Value, dve: Value, extra: &[(&str, &[u8])]) -> Loaded {
    let act = serde_json::to_vec(&act).unwrap();
    let dve = serde_json::to_vec(&dve).unwrap();
    let mut replace: Vec<(&str, &[u8])> = vec![("sg00/act.json", &act), ("sg00/dve.json", &dve)];
    replace.extend_from_slice(extra);
    load_buffer(
        Some(&model_neff(&replace)),
        &RuntimeProfile::for_arch(Arch::Cayman),
    )
}

#[test]
fn engine_tables_count_as_referenced() {
    let act_info = serde_json::to_vec(&json!({
        "pwp_file_keys": ["bkt_bin", "ctrl_bin", "profile_json"],
        "act_func_sets": [
            {"name": "exp_and_others", "bkt_bin": "exp_and_others_bkt.bin",
             "ctrl_bin": "exp_and_others_ctrl.bin", "profile_json": "exp_and_others.json",
             "act": {"exp": 400}},
            // Listed in act_info.json but not used: its files need not be stored.
            {"name": "small", "bkt_bin": "small_bkt.bin", "ctrl_bin": "small_ctrl.bin",
             "profile_json": "small.json", "act": {"identity": 1}}
        ]
    }))
    .unwrap();
    let act = json!({"act_info": "act_info.json", "act_semaphore": 12,
                     "activation_function_sets": ["exp_and_others"], "dma": [],
                     "instr": "act.bin", "name": "act.json"});
    let members: Vec<(&str, &[u8])> = vec![
        ("sg00/act_info.json", &act_info),
        ("sg00/exp_and_others.json", b"{}"),
        ("sg00/exp_and_others_bkt.bin", b"\0"),
        ("sg00/exp_and_others_ctrl.bin", b"\0"),
        ("sg00/default_control_table.bin", b"\0"),
        ("sg00/default_control_fast_table.bin", b"\0"),
        ("sg00/default_control_slow_table.bin", b"\0"),
        ("sg00/default_datapath_table.bin", b"\0"),
        ("sg00/default_opcode_table.bin", b"\0"),
    ];
    let old = json!([{"control_table": "default_control_table.bin",
                      "datapath_table": "default_datapath_table.bin",
                      "opcode_table": "default_opcode_table.bin"}]);
    let new = json!([{"control_fast_table": "default_control_fast_table.bin",
                      "control_slow_table": "default_control_slow_table.bin",
                      "datapath_table": "default_datapath_table.bin",
                      "opcode_table": "default_opcode_table.bin"}]);
    let object = json!({"control_table": "default_control_table.bin",
                        "datapath_table": "default_datapath_table.bin",
                        "opcode_table": "default_opcode_table.bin"});
    for (tables, unused) in [
        (
            old,
            &[
                "sg00/default_control_fast_table.bin",
                "sg00/default_control_slow_table.bin",
            ][..],
        ),
        (new, &["sg00/default_control_table.bin"][..]),
        (
            object,
            &[
                "sg00/default_control_fast_table.bin",
                "sg00/default_control_slow_table.bin",
            ],
        ),
    ] {
        let dve = json!({"dma": [], "dve_tables": tables, "instr": "dve.bin", "name": "dve.json"});
        let loaded = with_engines(act.clone(), dve, &members);
        accepted(&loaded.report);
        assert!(
            loaded.report.warnings.is_empty(),
            "{:?}",
            loaded.report.warnings
        );
        let model = loaded.model.unwrap();
        assert!(
            model.missing_references.is_empty(),
            "{:?}",
            model.missing_references
        );
        let mut left = model.unreferenced_members.clone();
        left.retain(|m| !unused.contains(&m.as_str()));
        assert!(left.is_empty(), "{left:?}");
    }
    // A set act_info.json does not list, and a set whose files are absent, are noted.
    let act = json!({"act_info": "act_info.json", "activation_function_sets": ["small", "nope"],
                     "dma": [], "instr": "act.bin"});
    let dve = json!({"dma": [], "instr": "dve.bin"});
    let loaded = with_engines(act, dve, &members[..1]);
    accepted(&loaded.report);
    let missing: Vec<String> = loaded
        .model
        .unwrap()
        .missing_references
        .iter()
        .map(|m| m.member.clone())
        .collect();
    assert_eq!(
        missing,
        [
            "sg00/small_bkt.bin",
            "sg00/small_ctrl.bin",
            "sg00/small.json"
        ]
    );
    assert!(
        loaded
            .report
            .warnings
            .iter()
            .any(|w| w.contains("\"nope\" is not listed in sg00/act_info.json")),
        "{:?}",
        loaded.report.warnings
    );
}

#[test]
fn debug_listings_and_streams_of_real_def_json() {
    let def = edit(DEF_JSON, |d| {
        d["cc_streams"] = json!({"num_streams": 0});
        d["pe_dbg"] = json!(["debug_info_backend_PE.dbg"]);
        d["dma_dbg"] = json!(["debug_info_backend_DMA.dbg"]);
    });
    let n = model_neff(&[
        ("sg00/def.json", &def),
        ("sg00/debug_info_backend_PE.dbg", b"x"),
        ("sg00/debug_info_backend_DMA.dbg", b"x"),
    ]);
    let loaded = load_buffer(Some(&n), &RuntimeProfile::for_arch(Arch::Cayman));
    accepted(&loaded.report);
    assert!(
        loaded.report.warnings.is_empty(),
        "{:?}",
        loaded.report.warnings
    );
    let model = loaded.model.unwrap();
    assert!(
        model.unreferenced_members.is_empty(),
        "{:?}",
        model.unreferenced_members
    );
    let bad = with_def(|d| d["cc_streams"] = json!({"num_streams": "two"}));
    let r = on(Arch::Cayman, &bad);
    accepted(&r);
    assert_eq!(
        r.warnings,
        ["sg00/def.json: cc_streams.num_streams \"two\" is not an unsigned integer"]
    );
}

#[test]
fn a_wavegraph_member_in_the_archive_is_not_missing() {
    // neuron-cc 1.15: def.json names sg00/wavegraph-bin.json, which the
    // runtime's walk skips but the archive holds.
    let def = edit(DEF_JSON, |d| {
        d["debug_info"] = json!({"wavegraph": "wavegraph-bin.json"})
    });
    let n = model_neff(&[("sg00/def.json", &def), ("sg00/wavegraph-bin.json", b"{}")]);
    let loaded = load_buffer(Some(&n), &RuntimeProfile::for_arch(Arch::Cayman));
    accepted(&loaded.report);
    assert_eq!(
        loaded.report.warnings,
        ["member sg00/wavegraph-bin.json skipped: the runtime never stores members whose names end in wavegraph-bin.json"]
    );
    assert!(loaded.model.unwrap().missing_references.is_empty());
    // Absent from the archive: a missing reference.
    let n = model_neff(&[("sg00/def.json", &def)]);
    let loaded = load_buffer(Some(&n), &RuntimeProfile::for_arch(Arch::Cayman));
    accepted(&loaded.report);
    assert_eq!(loaded.model.unwrap().missing_references.len(), 1);
}

#[test]
fn g22_collectives_sections() {
    refused(
        &on(
            Arch::Cayman,
            &with_def(|d| d["replica_groups"] = json!([["a"]])),
        ),
        "G22",
        2,
        "Failed to parse replica_groups",
    );
    refused(
        &on(
            Arch::Cayman,
            &with_def(|d| d["src_target_pairs"] = json!([[0, 1, 2]])),
        ),
        "G22",
        2,
        "Failed to parse src_target_pairs",
    );
    accepted(&on(
        Arch::Cayman,
        &with_def(|d| {
            d["replica_groups"] = json!([[[0, 1], [2, 3]]]);
            d["src_target_pairs"] = json!([[0, 1], [1, 0]]);
        }),
    ));
}

#[test]
fn g23_ext_isa_op_limit() {
    let f: Vec<Value> = (0..19)
        .map(|i| json!({"name": format!("op{i}"), "opcode": i}))
        .collect();
    let n = with_def(|d| d["ext_isa_ucode_lib_def"] = json!({"functions": f}));
    refused(
        &on(Arch::Cayman, &n),
        "G23",
        2,
        "Number of ExtISA Op trying to load 19 exceeds the maximum 18",
    );
}

#[test]
fn g24_ucode_libraries() {
    let lib = |f: &dyn Fn(&mut Value)| {
        let mut l = ucode_lib("lib.so");
        f(&mut l);
        with_ucode(vec![l], &["lib.so"])
    };
    refused(
        &on(
            Arch::Cayman,
            &lib(&|l| {
                l.as_object_mut().unwrap().remove("ulib_to_ucode_version");
            }),
        ),
        "G24a",
        2,
        "Missing GPSIMD lib version!",
    );
    refused(
        &on(
            Arch::Cayman,
            &lib(&|l| l["ulib_to_ucode_version"] = json!("2.0.0.0")),
        ),
        "G24b",
        2,
        "Mismatch between GPSIMD lib version and NRT version!",
    );
    let r = on(
        Arch::Cayman,
        &lib(&|l| l["ulib_to_ucode_version"] = json!("x.1")),
    );
    refused(
        &r,
        "G24b",
        2,
        "Mismatch between GPSIMD lib version and NRT version!",
    );
    assert!(r.warnings.contains(
        &"GPSIMD lib: Failed to parse GPSIMD lib version string! Version: x.1".to_string()
    ));
    refused(
        &on(Arch::Cayman, &lib(&|l| l["total_cpus"] = json!(4))),
        "G24c",
        2,
        "UCode Library lib.so has invalid number of total cpus 4",
    );
    let r = on(Arch::Cayman, &lib(&|l| l["cpu_id"] = json!(1)));
    refused(&r, "G24d", 134, "/opt/workspace/KaenaRuntime/kelf/kelf2kbin.cpp:1681: NRT_STATUS parse_one_ucode_lib(const neff_t*, mla_resources&, const std::string&, simdjson::dom::element&): Assertion `cpu_id == 0' failed.");
    refused(
        &on(
            Arch::Cayman,
            &with_ucode(vec![ucode_lib("lib.so"), ucode_lib("lib.so")], &["lib.so"]),
        ),
        "G24e",
        2,
        "UCode Library lib.so has already been added",
    );
    refused(
        &on(Arch::Cayman, &with_ucode(vec![ucode_lib("lib.so")], &[])),
        "G24f",
        2,
        "Failed to load ucode library sg00/lib.so",
    );
    // A valid library; the ABI is a knob.
    let ok = lib(&|_| {});
    let r = on(Arch::Cayman, &ok);
    accepted(&r);
    assert!(r
        .warnings
        .iter()
        .any(|w| w.contains("not yet entirely stable")));
    let newer = RuntimeProfile {
        ucode_abi: "2.0.0.0".into(),
        ..RuntimeProfile::default()
    };
    assert_eq!(
        load_buffer(Some(&ok), &newer).report.gate_id(),
        Some("G24b")
    );
}

#[test]
fn g25_statebuffer_reservation() {
    let carveout = |kind: &str| json!([{"type": kind, "offset": 0x37FF8, "size": 8, "base_partition": 0, "partitions": 128}]);
    let n = with_def(|d| d["runtime_statebuffer_reservation"] = carveout("evaccel"));
    refused(
        &on(Arch::Cayman, &n),
        "G25a",
        2,
        "Invalid runtime_statebuffer_reservation type evaccel",
    );

    const FATAL: &str = "Missing or corrupted runtime_statebuffer_reservation field in def.json and NEURON_RT_ALLOW_LEGACY_NEFF=1 is not set. Potentially a legacy neff without proper compiler support";
    let missing = with_def(|d| {
        d.as_object_mut()
            .unwrap()
            .remove("runtime_statebuffer_reservation");
    });
    // "*" resolves to the instance: fatal on Cayman, fine elsewhere.
    refused(&on(Arch::Cayman, &missing), "G25b", 2, FATAL);
    accepted(&on(Arch::Sunda, &missing));
    accepted(&on(Arch::Mariana, &missing));
    let r = legacy(Arch::Cayman, &missing);
    accepted(&r);
    assert!(
        r.warnings
            .iter()
            .any(|w| w.contains("NEURON_RT_ALLOW_LEGACY_NEFF=1")),
        "{r:#?}"
    );
    let corrupt = with_def(|d| d["runtime_statebuffer_reservation"] = json!({"type": "evtaccel"}));
    refused(&on(Arch::Cayman, &corrupt), "G25b", 2, FATAL);
    accepted(&on(
        Arch::Cayman,
        &with_def(|d| d["runtime_statebuffer_reservation"] = carveout("evtaccel")),
    ));
}

#[test]
fn g26_dma_blocks() {
    let block =
        |desc: Value| with_def(|d| d["dma"] = json!([{"queue": "q", "id": 0, "desc": [desc]}]));
    refused(
        &on(Arch::Cayman, &block(json!({"op": "xor"}))),
        "G26",
        2,
        "Unknown dma operation: xor",
    );
    refused(
        &on(
            Arch::Cayman,
            &block(json!({"from_sizes": [0, 1], "from_steps": [1, 1]})),
        ),
        "G26",
        2,
        "Size cannot be 0",
    );
    refused(
        &on(
            Arch::Cayman,
            &block(json!({"op": "add", "from_sizes": [4], "from_steps": [1]})),
        ),
        "G26",
        2,
        "Invalid cce desc ap without dtype",
    );
    refused(
        &on(
            Arch::Cayman,
            &block(json!({"from_sizes": [4, 1], "from_steps": [1]})),
        ),
        "G26",
        2,
        "invalid dma block: from_sizes and from_steps differ in length",
    );
    refused(
        &on(
            Arch::Cayman,
            &block(json!({"scale": 2.0, "scale_dtype": "float16"})),
        ),
        "G26",
        2,
        "invalid dma block: scale_dtype must be float32",
    );
    // neuronx-cc 2.24 (trn3): each access pattern names its own dtype.
    accepted(&on(
        Arch::Cayman,
        &block(
            json!({"op": "add", "from_dtype": "float32", "to_dtype": "float32", "from": "x", "to": "y", "from_sizes": [4, 1], "from_steps": [1, 4], "to_sizes": [4, 1], "to_steps": [1, 4]}),
        ),
    ));
    accepted(&on(
        Arch::Cayman,
        &block(
            json!({"op": "add", "to": "y", "to_dtype": "float32", "from_arr": [
            {"from": "SB", "from_dtype": "float32", "from_sizes": [4, 1], "from_steps": [1, 4]},
            {"from": "SB{1}", "from_dtype": "float32", "from_sizes": [4, 1], "from_steps": [1, 4]}]}),
        ),
    ));
    // The reference's `_dtype` key is not a dtype of any access pattern.
    refused(
        &on(
            Arch::Cayman,
            &block(json!({"op": "add", "_dtype": "float32", "from": "x", "to": "y"})),
        ),
        "G26",
        2,
        "Invalid cce desc ap without dtype",
    );
    refused(
        &on(
            Arch::Cayman,
            &block(
                json!({"op": "max", "to": "y", "to_dtype": "float32", "from_arr": [
                {"from": "SB", "from_dtype": "float32"}, {"from": "SB{1}"}]}),
            ),
        ),
        "G26",
        2,
        "Invalid cce desc ap without dtype",
    );
    // Engine files' blocks go through the same checks.
    let pool = br#"{"dma": [{"queue": "q", "desc": [{"op": "nop"}]}], "instr": "pool.bin"}"#;
    refused(
        &on(Arch::Cayman, &model_neff(&[("sg00/pool.json", pool)])),
        "G26",
        2,
        "Unknown dma operation: nop",
    );
}

#[test]
fn g27_engines() {
    // A missing engine key is only a warning.
    let n = with_def(|d| {
        d.as_object_mut().unwrap().remove("dve");
    });
    let r = on(Arch::Cayman, &n);
    accepted(&r);
    assert!(
        r.warnings
            .contains(&"Engine dve not found in NEFF t, using empty placeholder".to_string()),
        "{r:#?}"
    );
    let n = neff_of(&model_files_without(&[], &["sg00/act.json"]));
    refused(
        &on(Arch::Cayman, &n),
        "G27",
        2,
        "Failed to find engine file sg00/act.json in NEFF",
    );
    let n = model_neff(&[("sg00/act.json", br#"{"dma": []}"#)]);
    refused(
        &on(Arch::Cayman, &n),
        "G27",
        2,
        "missing <instr> in sg00/act.json",
    );
    let n = neff_of(&model_files_without(&[], &["sg00/sp.bin"]));
    refused(
        &on(Arch::Cayman, &n),
        "G27",
        2,
        "Failed to load instruction file sg00/sp.bin",
    );
}

/// A pkg-1 (raw tar) NEFF whose one large member is `zeros` zero bytes,
/// produced as the loader reads them: a member past 4 GiB without 4 GiB of
/// memory, disk or deflate.
struct SyntheticNeff {
    head: Vec<u8>,
    zeros: u64,
    tail: Vec<u8>,
    pos: u64,
}

impl SyntheticNeff {
    fn len(&self) -> u64 {
        self.head.len() as u64 + self.zeros + self.tail.len() as u64
    }
}

impl std::io::Read for SyntheticNeff {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let head = self.head.len() as u64;
        let (part, at): (Option<&[u8]>, u64) = if self.pos < head {
            (Some(&self.head), self.pos)
        } else if self.pos < head + self.zeros {
            (None, self.pos - head)
        } else {
            (Some(&self.tail), self.pos - head - self.zeros)
        };
        let n = match part {
            Some(bytes) => {
                let rest = bytes.get(at as usize..).unwrap_or_default();
                let n = rest.len().min(buf.len());
                buf[..n].copy_from_slice(&rest[..n]);
                n
            }
            None => {
                let n = (self.zeros - at).min(buf.len() as u64) as usize;
                buf[..n].fill(0);
                n
            }
        };
        self.pos += n as u64;
        Ok(n)
    }
}

impl std::io::Seek for SyntheticNeff {
    fn seek(&mut self, to: std::io::SeekFrom) -> std::io::Result<u64> {
        self.pos = match to {
            std::io::SeekFrom::Start(p) => p,
            std::io::SeekFrom::End(d) => self.len().saturating_add_signed(d),
            std::io::SeekFrom::Current(d) => self.pos.saturating_add_signed(d),
        };
        Ok(self.pos)
    }
}

#[test]
fn g27_instruction_streams_over_4_gib_are_refused() {
    const SIZE: u64 = (1 << 32) + 64;
    let pe = br#"{"dma": [], "instr": "big.bin"}"#;
    let mut tar = model_entries(&[("sg00/pe.json", pe)]);
    tar.extend_from_slice(&tar_header(b"sg00/big.bin", b'0', &size_field(SIZE)));
    // The member's padding to a block, then the end-of-archive blocks.
    let tail = vec![0u8; 448 + 1024];
    let payload_len = tar.len() as u64 + SIZE + tail.len() as u64;
    let mut head = neff_header(1, payload_len);
    head.extend_from_slice(&tar);
    let source = SyntheticNeff {
        head,
        zeros: SIZE,
        tail,
        pos: 0,
    };
    // The header's hash is not set: its gate is not the one under test.
    let profile = RuntimeProfile {
        verify_hash: false,
        ..RuntimeProfile::for_arch(Arch::Cayman)
    };
    let loaded = neff_loader::Loader::new(&profile)
        .load(Some(source))
        .unwrap();
    refused(
        &loaded.report,
        "G27",
        2,
        "Instruction size 4294967360 for sg00/big.bin exceeds maximum supported size 4294967295",
    );
}

#[test]
fn g28_cannot_fire_every_target_resolves_to_a_real_arch() {
    // gen_kbin refuses target 0, but parse_target never produces 0: every
    // accepted spelling resolves to SUNDA, CAYMAN or MARIANA on every instance.
    for text in ["sunda", "v2", "cayman", "v3", "mariana", "v4", "*", ""] {
        let target = neff_schema::Target::parse_runtime(text).unwrap();
        for instance in Arch::ALL {
            assert_ne!(target.resolve(instance).ordinal(), 0);
        }
    }
}

/// The minimal model with `n` graphs (each a copy of sg00 after `replace`)
/// and the header's vnc_size set.
fn graphs(n: usize, vnc_size: u32, replace: &[(&str, &[u8])]) -> Vec<u8> {
    let list: Vec<Value> = (0..n)
        .map(|i| json!({"definition": format!("sg{i:02}/def.json"), "name": format!("sg{i:02}")}))
        .collect();
    let kelf = edit(KELF_JSON, |k| k["graphs"] = Value::Array(list));
    let mut replace = replace.to_vec();
    replace.push(("kelf-0.json", &kelf));
    let mut files = model_files(&replace);
    let sg00: Vec<(String, Vec<u8>)> = files
        .iter()
        .filter(|(n, _)| n.starts_with("sg00/"))
        .cloned()
        .collect();
    for i in 1..n {
        for (name, data) in &sg00 {
            files.push((name.replacen("sg00", &format!("sg{i:02}"), 1), data.clone()));
        }
    }
    let mut neff = neff_of(&files);
    neff[0x228..0x22C].copy_from_slice(&vnc_size.to_le_bytes());
    let payload = neff[1024..].to_vec();
    set_hash(&mut neff, 2, &payload);
    neff
}

#[test]
fn g29_graphs_must_fit_the_virtual_core() {
    refused(
        &on(Arch::Cayman, &graphs(2, 1, &[])),
        "G29a",
        2,
        "Insufficient number of pncs, required 2, available 1",
    );
    let r = on(Arch::Cayman, &graphs(2, 4, &[]));
    refused(&r, "G29b", 134, "/opt/workspace/KaenaRuntime/kelf/dlr_kelf.cpp:167: Assertion `nkbin == 1 || nkbin == vtpb_core_size' failed.");
    accepted(&on(Arch::Cayman, &graphs(2, 2, &[])));
    accepted(&on(Arch::Cayman, &graphs(1, 4, &[])));
    // With feature bit 0x400 the runtime's configured virtual core size decides.
    let mut n = graphs(2, 2, &[]);
    n[0x220..0x228].copy_from_slice(&0x400u64.to_le_bytes());
    let from_config = |size| RuntimeProfile {
        virtual_core_size: Some(size),
        ..RuntimeProfile::default()
    };
    assert_eq!(
        load_buffer(Some(&n), &from_config(1)).report.gate_id(),
        Some("G29a")
    );
    accepted(&load_buffer(Some(&n), &from_config(2)).report);
}

#[test]
fn g30_evtaccel_carveout_on_cayman() {
    let carveout = |offset: u64, size: u64, base: u64, parts: u64| {
        with_def(
            |d| d["runtime_statebuffer_reservation"] = json!([{"type": "evtaccel", "offset": offset, "size": size, "base_partition": base, "partitions": parts}]),
        )
    };
    refused(
        &on(Arch::Cayman, &carveout(0x37FF8, 8, 1, 128)),
        "G30",
        2,
        "Event Accel carveout SB partition must start at 0. Got 1",
    );
    refused(
        &on(Arch::Cayman, &carveout(0x37FF8, 8, 0, 64)),
        "G30",
        2,
        "Event Accel carveout SB partition count must be 128. Got 64",
    );
    refused(
        &on(Arch::Cayman, &carveout(0x1000, 8, 0, 128)),
        "G30",
        2,
        "Event Accel carveout SB partition offset must start at 0x37ff8. Got 0x1000",
    );
    refused(
        &on(Arch::Cayman, &carveout(0x37FF8, 16, 0, 128)),
        "G30",
        2,
        "Event Accel carveout SB size must be 8. Got 16",
    );
    // Checked on Cayman instances only; the offset is a knob.
    accepted(&on(Arch::Sunda, &carveout(0x1000, 8, 0, 128)));
    let other = RuntimeProfile {
        evtaccel_offset: 0x1000,
        ..RuntimeProfile::default()
    };
    accepted(&load_buffer(Some(&carveout(0x1000, 8, 0, 128)), &other).report);
}

#[test]
fn g31_ucode_staging_caps() {
    let lib = |names: Vec<String>| {
        let f: Vec<Value> = names
            .iter()
            .enumerate()
            .map(|(i, n)| json!({"name": n, "opcode": 133, "sub_opcode": i}))
            .collect();
        let mut l = ucode_lib("lib.so");
        l["functions"] = Value::Array(f);
        l
    };
    let many = |n: usize| (0..n).map(|i| format!("f{i}")).collect::<Vec<_>>();
    refused(
        &on(Arch::Cayman, &with_ucode(vec![lib(many(29))], &["lib.so"])),
        "G31",
        2,
        "Number of ucode functions: 29 per core exceeded the maximum allowed 28",
    );
    accepted(&on(
        Arch::Cayman,
        &with_ucode(vec![lib(many(28))], &["lib.so"]),
    ));
    let long = "n".repeat(65);
    refused(
        &on(
            Arch::Cayman,
            &with_ucode(vec![lib(vec![long.clone()])], &["lib.so"]),
        ),
        "G31",
        2,
        &format!("ucode function name ({long}) is too long.  Max length = 64"),
    );
    // Four graphs of 25 functions: each core is within 28, the table is not within 97.
    let def = edit(DEF_JSON, |d| d["ucode_lib"] = json!([lib(many(25))]));
    let neff = graphs(
        4,
        4,
        &[("sg00/def.json", &def), ("sg00/lib.so", b"\x7fELF")],
    );
    refused(
        &on(Arch::Cayman, &neff),
        "G31",
        2,
        "too many ucode functions in this table.  Max is 97. Add support for mid-neff reload?",
    );
}

/// A small deterministic generator for the mutation smoke test.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }

    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }

    fn value(&mut self) -> Value {
        match self.below(9) {
            0 => Value::Null,
            1 => json!(self.next() % 3 == 0),
            2 => json!(self.next() % 40),
            3 => json!(-((self.next() % 5) as i64)),
            4 => json!(u64::MAX - self.next() % 3),
            5 => json!(["a", 1, [2]]),
            6 => json!({"type": "output", "var_id": 1}),
            7 => json!("sg00/pe.bin"),
            _ => json!(1.5e300),
        }
    }
}

/// Replaces a random node of `v` with a random value.
fn mutate(v: &mut Value, rng: &mut Rng) {
    let step = rng.below(3);
    match v {
        Value::Object(map) if !map.is_empty() && step > 0 => {
            let key = map.keys().nth(rng.below(map.len())).cloned().unwrap();
            mutate(map.get_mut(&key).unwrap(), rng);
        }
        Value::Array(items) if !items.is_empty() && step > 0 => {
            let i = rng.below(items.len());
            mutate(&mut items[i], rng);
        }
        _ => *v = rng.value(),
    }
}

#[test]
fn random_manifest_mutations_never_panic() {
    let mut rng = Rng(0x9E37_79B9_7F4A_7C15);
    let sources = [
        ("neff.json", NEFF_JSON),
        ("kelf-0.json", KELF_JSON),
        ("sg00/def.json", DEF_JSON),
    ];
    let mut refused = 0;
    for _ in 0..3000 {
        let (member, text) = sources[rng.below(sources.len())];
        let mut v: Value = serde_json::from_str(text).unwrap();
        for _ in 0..1 + rng.below(3) {
            mutate(&mut v, &mut rng);
        }
        let bytes = serde_json::to_vec(&v).unwrap();
        let arch = Arch::ALL[rng.below(3)];
        let r = on(arch, &model_neff(&[(member, &bytes)]));
        assert_eq!(r.accepted, r.gate.is_none(), "{r:#?}");
        if !r.accepted {
            refused += 1;
            assert!(r.message.is_some() && r.status.code() != 0, "{r:#?}");
        }
    }
    assert!(
        refused > 300,
        "mutations should often be refused: {refused}"
    );
}

#[test]
fn a_number_typed_neff_json_field_of_another_type_is_named_with_its_value() {
    let neff = model_neff(&[(
        "neff.json",
        &edit(NEFF_JSON, |v| v["arg_nodes"] = json!([0.0])),
    )]);
    let r = on(Arch::Cayman, &neff);
    assert_eq!(r.gate_id(), Some("G14"), "{r:?}");
    let detail = r.detail.unwrap_or_default();
    assert!(
        detail.contains("arg_nodes[0] is 0.0, not an unsigned integer"),
        "{detail}"
    );
    let neff = model_neff(&[(
        "neff.json",
        &edit(NEFF_JSON, |v| v["heads"] = json!([["x", 0, 0]])),
    )]);
    let r = on(Arch::Cayman, &neff);
    let detail = r.detail.unwrap_or_default();
    assert!(detail.contains(r#"heads[0][0] is "x""#), "{detail}");
}

/// simdjson, the runtime's JSON parser, reads nesting up to 1024 deep: a
/// manifest nested 1000 deep loads (it was refused past serde_json's 128).
/// (`neff verify DIR` on its worker threads: the `neff` crate's
/// `verify_many` tests.)
#[test]
fn manifests_nested_up_to_1024_deep_load() {
    let deep = |depth: usize| format!("{}{}", "[".repeat(depth), "]".repeat(depth));
    // neff.json with one more key, nested `depth` deep (serde_json cannot
    // build that many levels: the text is spliced in).
    let nested =
        |depth: usize| NEFF_JSON.replacen('{', &format!("{{\"deep\": {}, ", deep(depth)), 1);
    assert!(nested(3).contains("[[[]]]"));
    let neff = model_neff(&[("neff.json", nested(1000).as_bytes())]);
    accepted(&on(Arch::Cayman, &neff));
    let r = on(
        Arch::Cayman,
        &model_neff(&[("neff.json", nested(1100).as_bytes())]),
    );
    assert!(!r.accepted, "{r:?}");
}

/// A DMA block naming a queue def.json does not define, a descriptor naming
/// an undefined var, and a queue whose owner engine def.json does not list:
/// loaded (the runtime's behaviour is not known), each with a warning naming
/// the key path.
#[test]
fn undefined_dma_queues_vars_and_owners_are_warned_about() {
    let r = on(
        Arch::Cayman,
        &with_def(|d| {
            d["dma_queue"] = json!({"q": {"owner": "pool", "type": "in", "semaphore": 1}});
            d["dma"] = json!([{"queue": "q_typo", "id": 0, "desc": [
                {"from": "x", "to": "y", "from_sizes": [4], "from_steps": [1], "to_sizes": [4], "to_steps": [1]},
                {"from": "x", "to": "z", "from_sizes": [4], "from_steps": [1], "to_sizes": [4], "to_steps": [1]}]}]);
            d.as_object_mut().unwrap().remove("pool");
        }),
    );
    accepted(&r);
    crate::assert_no_debug_text(&r);
    let find = |needle: &str| r.warnings.iter().find(|w| w.contains(needle)).cloned();
    let blocks = find("dma[0].queue \"q_typo\" is no dma_queue").expect("the undefined queue");
    assert!(
        blocks.contains("dma[0].desc[1].to \"z\" is no var"),
        "{blocks}"
    );
    assert!(!blocks.contains("desc[0]"), "{blocks}");
    assert!(
        blocks.contains("the runtime's behaviour is not modelled"),
        "{blocks}"
    );
    let owner = find("dma_queue \"q\": its owner pool has no engine manifest").expect("the owner");
    assert!(owner.starts_with("sg00/def.json"), "{owner}");
}

/// A `.npy` v1 member of `descr` and `shape` holding `data`.
fn npy(descr: &str, shape: &str, data: &[u8]) -> Vec<u8> {
    let mut dict = format!("{{'descr': '{descr}', 'fortran_order': False, 'shape': {shape}, }}");
    while (10 + dict.len() + 1) % 64 != 0 {
        dict.push(' ');
    }
    dict.push('\n');
    let mut out = b"\x93NUMPY\x01\x00".to_vec();
    out.extend_from_slice(&(dict.len() as u16).to_le_bytes());
    out.extend_from_slice(dict.as_bytes());
    out.extend_from_slice(data);
    out
}

/// A weight whose `.npy` header disagrees with def.json's dtype and shape:
/// loaded (the runtime reads the bytes as they are), with a warning naming
/// both.
#[test]
fn a_weight_whose_npy_header_disagrees_with_def_json_is_warned_about() {
    let def = |dtype: &str| {
        edit(DEF_JSON, |d| {
            d["var"]["w"] = json!({"type": "file", "var_id": 2, "file_name": "w.npy",
                                   "dtype": dtype, "shape": [4]});
        })
    };
    let weight = npy("<f2", "(2, 2)", &[0; 8]);
    let r = on(
        Arch::Cayman,
        &model_neff(&[("sg00/def.json", &def("float32")), ("sg00/w.npy", &weight)]),
    );
    accepted(&r);
    let warning = r
        .warnings
        .iter()
        .find(|w| w.contains("var \"w\""))
        .expect("a warning");
    assert!(
        warning.contains("dtype float32 but its .npy header says float16"),
        "{warning}"
    );
    assert!(
        warning.contains("shape [4] but its .npy header says [2, 2]"),
        "{warning}"
    );
    let same = npy("<f2", "(4,)", &[0; 8]);
    let r = on(
        Arch::Cayman,
        &model_neff(&[("sg00/def.json", &def("float16")), ("sg00/w.npy", &same)]),
    );
    accepted(&r);
    assert!(
        !r.warnings.iter().any(|w| w.contains("var \"w\"")),
        "{:?}",
        r.warnings
    );
}
