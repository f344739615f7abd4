//! `neff build`: every example spec builds, verifies and survives unpack →
//! pack byte for byte; the generated manifests have the documented shape; the
//! unchecked path; spec errors; `--help` pinned by golden files.

use crate::common::*;

use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;

use md5::{Digest, Md5};
use serde_json::{json, Value};

const EXAMPLES: [&str; 4] = ["allreduce", "weights", "cayman-ucode", "two-subgraphs"];

fn examples() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("examples")
}

fn spec(name: &str) -> PathBuf {
    examples().join(format!("{name}.json"))
}

fn md5_hex(bytes: &[u8]) -> String {
    Md5::digest(bytes)
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

/// Builds `example` into `dir` and unpacks it; returns (neff path, tree).
fn build_and_unpack(dir: &Path, example: &str) -> (PathBuf, PathBuf) {
    let out = dir.join(format!("{example}.neff"));
    let r = neff(&["build", s(&spec(example)), "-o", s(&out)]);
    assert_eq!(code(&r), 0, "{example}: {}", stderr(&r));
    let tree = dir.join(format!("{example}-tree"));
    let r = neff(&["unpack", s(&out), "-o", s(&tree)]);
    assert_eq!(code(&r), 0, "{example}: {}", stderr(&r));
    (out, tree)
}

fn json_at(path: &Path) -> Value {
    serde_json::from_slice(&fs::read(path).unwrap()).unwrap()
}

#[test]
fn every_example_builds_verifies_and_repacks_to_identical_bytes() {
    let dir = tempfile::tempdir().unwrap();
    for example in EXAMPLES {
        let out = dir.path().join(format!("{example}.neff"));
        let r = neff(&["build", s(&spec(example)), "-o", s(&out)]);
        assert_eq!(code(&r), 0, "{example}: {}", stderr(&r));
        assert!(stderr(&r).contains("built"), "{}", stderr(&r));

        let r = neff(&["verify", s(&out)]);
        assert_eq!(code(&r), 0, "{example}: {}{}", stdout(&r), stderr(&r));

        // Building twice gives the same bytes, and so does stdout.
        let again = neff(&["build", s(&spec(example)), "-o", "-", "-q"]);
        assert_eq!(code(&again), 0, "{}", stderr(&again));
        assert_eq!(again.stdout, fs::read(&out).unwrap(), "{example}");

        // unpack → pack --header rebuilds the identical file.
        let tree = dir.path().join(format!("{example}-tree"));
        let header = dir.path().join(format!("{example}-header.json"));
        let r = neff(&[
            "unpack",
            s(&out),
            "-o",
            s(&tree),
            "--header-out",
            s(&header),
        ]);
        assert_eq!(code(&r), 0, "{example}: {}", stderr(&r));
        let repacked = dir.path().join(format!("{example}-repacked.neff"));
        let r = neff(&["pack", s(&tree), "-o", s(&repacked), "--header", s(&header)]);
        assert_eq!(code(&r), 0, "{example}: {}", stderr(&r));
        assert_eq!(
            fs::read(&out).unwrap(),
            fs::read(&repacked).unwrap(),
            "{example}: unpack → pack changed the bytes"
        );
    }
}

#[test]
fn the_allreduce_example_is_the_runtime_fixture_model() {
    let fixture = examples().join("allreduce/sg00");
    assert_eq!(
        md5_hex(&fs::read(fixture.join("pe.bin")).unwrap()),
        "f5c01e499e4e49ac4ef559ce7e673436"
    );
    assert_eq!(
        md5_hex(&fs::read(fixture.join("pool.bin")).unwrap()),
        "25daba764d4de4444cbf460a1e52df2f"
    );

    let dir = tempfile::tempdir().unwrap();
    let (_, tree) = build_and_unpack(dir.path(), "allreduce");
    // The same members as the fixture (18 files), instruction streams byte-exact.
    let mut names: Vec<String> = fs::read_dir(tree.join("sg00"))
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .collect();
    names.sort();
    let mut fixture_names: Vec<String> = fs::read_dir(&fixture)
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .collect();
    fixture_names.sort();
    assert_eq!(names, fixture_names);
    assert!(tree.join("kelf-a.json").exists() && tree.join("neff.json").exists());
    for f in ["pe.bin", "pool.bin", "act.bin", "pe.asm", "pool.asm"] {
        assert_eq!(
            fs::read(tree.join("sg00").join(f)).unwrap(),
            fs::read(fixture.join(f)).unwrap(),
            "{f}"
        );
    }
    // Engine manifests are byte-identical to the fixture's.
    for f in ["pe.json", "act.json", "pool.json", "dve.json", "sp.json"] {
        assert_eq!(
            fs::read(tree.join("sg00").join(f)).unwrap(),
            fs::read(fixture.join(f)).unwrap(),
            "{f}"
        );
    }

    // def.json: the fixture's content plus dtype/shape on the I/O vars.
    let mut def = json_at(&tree.join("sg00/def.json"));
    for io in ["input", "output"] {
        let var = def["var"][io].as_object_mut().unwrap();
        assert_eq!(var.remove("dtype"), Some(json!("float32")));
        assert_eq!(var.remove("shape"), Some(json!([32])));
    }
    assert_eq!(def, json_at(&fixture.join("def.json")));

    // neff.json: the fixture's graph plus the producer's output_names.
    let mut graph = json_at(&tree.join("neff.json"));
    let kelf_node = graph["nodes"][1].as_object_mut().unwrap();
    assert_eq!(kelf_node.remove("output_names"), Some(json!(["output"])));
    assert_eq!(graph, json_at(&examples().join("allreduce/neff.json")));

    // kelf-a.json: the fixture descriptor.
    assert_eq!(
        json_at(&tree.join("kelf-a.json")),
        json_at(&examples().join("allreduce/kelf-a.json"))
    );
}

#[test]
fn the_ucode_example_carries_both_forms_the_library_and_the_custom_ops_bit() {
    let dir = tempfile::tempdir().unwrap();
    let (out, tree) = build_and_unpack(dir.path(), "cayman-ucode");
    let r = neff(&["inspect", s(&out), "--json"]);
    assert_eq!(code(&r), 0, "{}", stderr(&r));
    let inspect: Value = serde_json::from_str(&stdout(&r)).unwrap();
    assert_eq!(
        inspect["header"]["feature_bits"].as_u64().unwrap() & 0x4,
        0x4
    );
    assert_eq!(inspect["header"]["name"], "cayman-ucode");

    let def = json_at(&tree.join("sg00/def.json"));
    let standalone = json_at(&tree.join("sg00/ucode_lib.json"));
    assert_eq!(
        def["ucode_lib"], standalone["ucode_lib"],
        "the two forms agree"
    );
    let lib = &def["ucode_lib"][0];
    assert_eq!(lib["library"], "libcustom_topk.so");
    assert_eq!(lib["ulib_to_ucode_version"], "1.21.1.0");
    assert_eq!(lib["cpu_id"], 0);
    assert_eq!(lib["total_cpus"], 1);
    assert_eq!(
        lib["functions"],
        json!([
            {"name": "custom_topk", "opcode": 133, "sub_opcode": 0},
            {"name": "custom_sort", "opcode": 133, "sub_opcode": 1}
        ])
    );
    let library = fs::read(tree.join("sg00/libcustom_topk.so")).unwrap();
    assert_eq!(&library[..4], b"\x7fELF");
    assert_eq!(library[4], 1, "ELFCLASS32");
    assert_eq!(
        def["runtime_statebuffer_reservation"],
        json!([{"type": "evtaccel", "offset": 0x37FF8, "size": 8, "base_partition": 0, "partitions": 128}])
    );
    assert_eq!(json_at(&tree.join("kelf-0.json"))["target"], "cayman");
    assert_eq!(
        fs::read_to_string(tree.join("hlo_stats.json")).unwrap(),
        "{\n  \"mac_count\": 0\n}"
    );
}

#[test]
fn the_weights_example_streams_npy_and_raw_files_as_they_are() {
    let dir = tempfile::tempdir().unwrap();
    let (_, tree) = build_and_unpack(dir.path(), "weights");
    let src = examples().join("weights");
    for (member, file) in [
        ("w1.npy", "w1.npy"),
        ("embedding.npy", "emb.npy"),
        ("b1.bin", "b1.bin"),
    ] {
        assert_eq!(
            fs::read(tree.join("sg00").join(member)).unwrap(),
            fs::read(src.join(file)).unwrap(),
            "{member}"
        );
    }
    let w1 = fs::read(src.join("w1.npy")).unwrap();
    assert_eq!(&w1[..8], b"\x93NUMPY\x01\x00", "npy version 1");
    let def = json_at(&tree.join("sg00/def.json"));
    let var = &def["var"];
    assert_eq!(var["w1"]["type"], "file");
    assert_eq!(var["w1"]["file_name"], "w1.npy");
    assert_eq!(var["w1"]["dtype"], "float32");
    assert_eq!(var["w1"]["shape"], json!([4, 4]));
    assert_eq!(var["emb"]["file_name"], "embedding.npy");
    assert_eq!(var["emb"]["dtype"], "uint8");
    assert_eq!(var["emb"]["shape"], json!([3, 2]));
    assert_eq!(var["b1"]["file_name"], "b1.bin");
    // Dense ids: inputs, outputs, then tmp_bufs and weights in spec order.
    let ids: Vec<(&str, u64)> = ["x", "y", "acc", "w1", "emb", "b1"]
        .iter()
        .map(|n| (*n, var[n]["var_id"].as_u64().unwrap()))
        .collect();
    assert_eq!(
        ids,
        [
            ("x", 0),
            ("y", 1),
            ("acc", 2),
            ("w1", 3),
            ("emb", 4),
            ("b1", 5)
        ]
    );
    assert_eq!(var["acc"]["size"], 16);
}

#[test]
fn the_two_subgraph_example_sets_vnc_size_and_lists_both_graphs() {
    let dir = tempfile::tempdir().unwrap();
    let (out, tree) = build_and_unpack(dir.path(), "two-subgraphs");
    let r = neff(&["inspect", s(&out), "--json"]);
    let inspect: Value = serde_json::from_str(&stdout(&r)).unwrap();
    assert_eq!(inspect["header"]["vnc_size"], 2);
    assert_eq!(inspect["header"]["feature_bits"], 0x400);
    let kelf = json_at(&tree.join("kelf-0.json"));
    assert_eq!(
        kelf["graphs"],
        json!([
            {"definition": "sg00/def.json", "name": "sg00"},
            {"definition": "sg01/def.json", "name": "sg01"}
        ])
    );
    let graph = json_at(&tree.join("neff.json"));
    assert_eq!(graph["arg_nodes"], json!([0]));
    assert_eq!(
        graph["attrs"]["dltype"],
        json!(["list_str", ["bfloat16", "bfloat16"]])
    );
    assert_eq!(
        graph["attrs"]["shape"],
        json!(["list_shape", [[2, 64], [2, 64]]])
    );
    assert_eq!(graph["nodes"][1]["attrs"]["func_name"], "__kelf");
    assert_eq!(graph["nodes"][1]["attrs"]["kelf"], "kelf-0.json");
    assert!(tree.join("sg01/def.json").exists());
}

/// Writes a spec into `dir` and returns its path.
fn write_spec(dir: &Path, name: &str, spec: &Value) -> PathBuf {
    let path = dir.join(name);
    fs::write(&path, serde_json::to_vec_pretty(spec).unwrap()).unwrap();
    path
}

fn minimal() -> Value {
    json!({
        "subgraphs": [{
            "name": "sg00",
            "inputs": [{"name": "x", "dtype": "float32", "shape": [4]}],
            "outputs": [{"name": "y", "dtype": "float32", "shape": [4]}]
        }]
    })
}

#[test]
fn the_unchecked_path_and_flags() {
    let dir = tempfile::tempdir().unwrap();
    let mut bad = minimal();
    bad["raw_members"] = json!({"sg00/def.json": {
        "text": r#"{"var": {"x": {"type": "input", "var_id": 0, "size": 16}}}"#
    }});
    let spec_path = write_spec(dir.path(), "bad.json", &bad);
    let out = dir.path().join("bad.neff");
    let r = neff(&["build", s(&spec_path), "-o", s(&out)]);
    assert_eq!(code(&r), 1, "{}", stderr(&r));
    assert!(stderr(&r).contains("G20b"), "{}", stderr(&r));
    assert!(stderr(&r).contains("--keep-refused"), "{}", stderr(&r));
    assert!(!out.exists());

    let r = neff(&[
        "build",
        s(&spec_path),
        "-o",
        s(&out),
        "--unchecked",
        "--keep-refused",
        "--json",
    ]);
    assert_eq!(code(&r), 0, "{}", stderr(&r));
    let v: Value = serde_json::from_str(&stdout(&r)).unwrap();
    assert_eq!(v["verdict"]["gate"], "G20b");
    assert_eq!(v["verdict"]["accepted"], false);
    assert_eq!(code(&neff(&["verify", s(&out)])), 1);

    // A member left out with null.
    let mut omit = minimal();
    omit["raw_members"] = json!({"neff.json": null});
    omit["unchecked"] = json!(true);
    omit["keep_refused"] = json!(true);
    let spec_path = write_spec(dir.path(), "omit.json", &omit);
    let r = neff(&["build", s(&spec_path), "-o", s(&out), "--json"]);
    assert_eq!(code(&r), 0, "{}", stderr(&r));
    let v: Value = serde_json::from_str(&stdout(&r)).unwrap();
    assert_eq!(v["verdict"]["gate"], "G13");

    // Flags reach the header; a header file is merged over the spec's.
    let mut spec = minimal();
    spec["header"] = json!({"neff_version_minor": 7, "build_version": "spec"});
    let spec_path = write_spec(dir.path(), "flags.json", &spec);
    let header = dir.path().join("h.json");
    fs::write(&header, br#"{"build_version": "file"}"#).unwrap();
    let r = neff(&[
        "build",
        s(&spec_path),
        "-o",
        s(&out),
        "--pkg-version",
        "1",
        "--level",
        "9",
        "--uuid",
        "561826fb-125f-4bb8-991c-29e085c8949a",
        "--header",
        s(&header),
        "--json",
    ]);
    assert_eq!(code(&r), 0, "{}", stderr(&r));
    let v: Value = serde_json::from_str(&stdout(&r)).unwrap();
    let h = &v["header"];
    assert_eq!(h["pkg_version"], 1);
    assert_eq!(h["uuid"], "561826fb-125f-4bb8-991c-29e085c8949a");
    assert_eq!(h["neff_version_minor"], 7);
    assert_eq!(h["build_version"], "file");
    assert_eq!(v["verdict"]["accepted"], true);
}

#[test]
fn spec_errors_name_the_key_or_position() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("x.neff");

    let mut typo = minimal();
    typo["subgraphs"][0]["inputz"] = json!([]);
    let path = write_spec(dir.path(), "typo.json", &typo);
    let r = neff(&["build", s(&path), "-o", s(&out)]);
    assert_eq!(code(&r), 2);
    assert!(
        stderr(&r).contains("unknown field `inputz`"),
        "{}",
        stderr(&r)
    );
    assert!(stderr(&r).contains("line "), "{}", stderr(&r));

    let mut missing = minimal();
    missing["subgraphs"][0]["engines"] = json!({"pe": {"instructions": "no/such.bin"}});
    let path = write_spec(dir.path(), "missing.json", &missing);
    let r = neff(&["build", s(&path), "-o", s(&out)]);
    assert_eq!(code(&r), 2);
    assert!(
        stderr(&r).contains("subgraphs[0].engines.pe.instructions: cannot read"),
        "{}",
        stderr(&r)
    );

    let mut rule = minimal();
    rule["subgraphs"][0]["outputs"] = json!([]);
    let path = write_spec(dir.path(), "rule.json", &rule);
    let r = neff(&["build", s(&path), "-o", s(&out)]);
    // A runtime rule: the loader's gate refuses it before anything is written.
    assert_eq!(code(&r), 1);
    assert!(
        stderr(&r).contains("G20b") && stderr(&r).contains("has no Outputs"),
        "{}",
        stderr(&r)
    );
    assert!(!out.exists());

    let r = neff(&["build", "/nonexistent/spec.json", "-o", s(&out)]);
    assert_eq!(code(&r), 2);
    assert!(
        stderr(&r).contains("/nonexistent/spec.json"),
        "{}",
        stderr(&r)
    );
    assert!(!out.exists());
}

/// A spec of `n` float32 inputs and one output.
fn inputs_spec(n: usize) -> Value {
    let inputs: Vec<Value> = (0..n)
        .map(|i| json!({"name": format!("x{i}"), "dtype": "float32", "shape": [4]}))
        .collect();
    json!({"subgraphs": [{
        "name": "sg00",
        "inputs": inputs,
        "outputs": [{"name": "y", "dtype": "float32", "shape": [4]}]
    }]})
}

/// `neff build SPEC --json` under /usr/bin/time: (CPU seconds, peak RSS
/// KiB, the verdict's `accepted`).
fn timed_build(dir: &Path, n: usize) -> (f64, u64, Value) {
    let spec_path = write_spec(dir, &format!("in{n}.json"), &inputs_spec(n));
    let out = dir.join(format!("in{n}.neff"));
    let time = Path::new("/usr/bin/time");
    assert!(
        time.exists(),
        "/usr/bin/time is missing: apt-get install -y time"
    );
    let r = Command::new(time)
        .args(["-f", "%U %S %M"])
        .arg(env!("CARGO_BIN_EXE_neff"))
        .args(["build", s(&spec_path), "-o", s(&out), "--json"])
        .output()
        .unwrap();
    assert_eq!(code(&r), 0, "{n} inputs: {}", stderr(&r));
    let err = stderr(&r);
    let fields: Vec<f64> = err
        .lines()
        .last()
        .unwrap_or_default()
        .split(' ')
        .filter_map(|f| f.parse().ok())
        .collect();
    let [user, sys, kib] = fields[..] else {
        panic!("no times in {err}");
    };
    let v: Value = serde_json::from_str(&stdout(&r)).unwrap();
    (user + sys, kib as u64, v["verdict"]["accepted"].clone())
}

/// A spec with 10^5 inputs builds, and ten times the inputs cost about ten
/// times the work (the model I/O merge and the loader's I/O join were a
/// search per tensor: 100× here).
#[test]
#[cfg_attr(
    not(neff_gnu_time),
    ignore = "GNU time (/usr/bin/time) is missing: apt-get install -y time"
)]
fn a_hundred_thousand_inputs_build_in_linear_time_and_memory() {
    let dir = tempfile::tempdir().unwrap();
    let (small_cpu, small_kib, small_ok) = timed_build(dir.path(), 10_000);
    let (big_cpu, big_kib, big_ok) = timed_build(dir.path(), 100_000);
    eprintln!(
        "10^4 inputs: {small_cpu:.2} s, {small_kib} KiB; 10^5: {big_cpu:.2} s, {big_kib} KiB"
    );
    assert_eq!((small_ok, big_ok), (json!(true), json!(true)));
    assert!(
        big_cpu < 30.0 * small_cpu.max(0.1),
        "10^5 inputs took {big_cpu:.2} s of CPU against {small_cpu:.2} s for 10^4"
    );
    assert!(
        big_kib < 30 * small_kib && big_kib < 2 << 20,
        "peak RSS {big_kib} KiB for 10^5 inputs, {small_kib} KiB for 10^4"
    );
}

#[test]
fn weight_sizes_and_shapes_that_overflow_are_refused_by_name() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("x.neff");
    fs::write(dir.path().join("w.bin"), [0u8; 16]).unwrap();
    let mut raw = minimal();
    raw["subgraphs"][0]["weights"] =
        json!([{"name": "w", "raw": "w.bin", "dtype": "float32", "shape": [1000]}]);
    let path = write_spec(dir.path(), "raw.json", &raw);
    let r = neff(&["build", s(&path), "-o", s(&out)]);
    assert_eq!(code(&r), 2, "{}", stderr(&r));
    let shown = dir.path().join("w.bin").display().to_string();
    for needle in ["var \"w\"", &shown, "4000 bytes", "the file has 16"] {
        assert!(stderr(&r).contains(needle), "{needle:?}: {}", stderr(&r));
    }
    assert!(!out.exists());

    let mut count = minimal();
    count["subgraphs"][0]["inputs"][0]["shape"] = json!([1u64 << 32, 1u64 << 32, 2]);
    let path = write_spec(dir.path(), "count.json", &count);
    let r = neff(&["build", s(&path), "-o", s(&out)]);
    assert_eq!(code(&r), 2, "{}", stderr(&r));
    let needle =
        "var \"x\": shape [4294967296, 4294967296, 2]: the element count overflows 64 bits";
    assert!(stderr(&r).contains(needle), "{}", stderr(&r));

    let mut bytes = minimal();
    bytes["subgraphs"][0]["outputs"][0]["shape"] = json!([1u64 << 62]);
    let path = write_spec(dir.path(), "bytes.json", &bytes);
    let r = neff(&["build", s(&path), "-o", s(&out)]);
    assert_eq!(code(&r), 2, "{}", stderr(&r));
    let needle = "var \"y\": shape [4611686018427387904] of float32: the byte size (4611686018427387904 elements × 4 bytes) overflows 64 bits";
    assert!(stderr(&r).contains(needle), "{}", stderr(&r));
}

#[test]
fn help_for_build_and_schema_matches_the_golden_files() {
    for cmd in ["build", "schema"] {
        let r = neff(&[cmd, "--help"]);
        assert_eq!(code(&r), 0);
        golden(&format!("help-{cmd}.txt"), &r.stdout);
    }
}

/// One subgraph as neuronx-cc 2.23 writes them: two inputs, an output, a
/// weight, a dge-table var over the I/O, dynamic queues with `dynamic_dma`
/// and `fabric_path`, ACT activation tables, DVE tables, a ucode library and
/// the EVTACCEL carveout.
fn compiler_subgraph(name: &str) -> Value {
    json!({
        "name": name,
        "inputs": [{"name": "x", "dtype": "float16", "shape": [128, 256]},
                   {"name": "y", "dtype": "float16", "shape": [256, 128]}],
        "outputs": [{"name": "output0", "dtype": "float16", "shape": [128, 128]}],
        "weights": [{"name": "identity_82", "npy": "w.npy",
                     "file_name": "value_identity_82_CRSM.npy", "size": 32768,
                     "extra": {"alignment": 32768, "fabric_path": "main"}}],
        "vars": [{"name": "DGETable0", "type": "dge-table", "extra": {"list": [1, 2, 3]}}],
        "dma_queues": {
            "qPoolDynamic": {"owner": "pool", "type": "dynamic", "num_queues": 16,
                "semaphore_set": (24..40).collect::<Vec<u64>>(),
                "fabric_path": "main", "dynamic_dma":
                    {"SB_scratch_partition_offset": 0, "SB_scratch_partition_size": 16384}},
            "qSPDynamicHW": {"owner": "sp", "type": "dynamic", "num_queues": 16,
                "semaphore_set": (8..24).collect::<Vec<u64>>(),
                "fabric_path": "main"}
        },
        "engines": {
            "act": {"act_info": "act_info.json", "act_semaphore": 12,
                    "activation_function_sets": ["exp_and_others"]},
            "dve": {"dve_tables": [{
                "control_fast_table": "default_control_fast_table.bin",
                "control_slow_table": "default_control_slow_table.bin",
                "datapath_table": "default_datapath_table.bin",
                "opcode_table": "default_opcode_table.bin"}]}
        },
        "ucode_libs": [{"library": "libcustom.so", "data": {"base64": "f0VMRgEBAQ=="},
                        "ulib_to_ucode_version": "1.21.1.0", "functions": [{"name": "f"}]}],
        "evtaccel": true
    })
}

#[test]
fn a_compiler_style_model_from_scratch_passes_every_gate_in_the_compilers_shape() {
    let dir = tempfile::tempdir().unwrap();
    let npy = neff::writer::builder::npy::encode_v1("<f2", &[128, 128], &[0u8; 32768]);
    fs::write(dir.path().join("w.npy"), npy).unwrap();
    let mut members = serde_json::Map::new();
    for sg in ["sg00", "sg01"] {
        let info = json!({"pwp_file_keys": ["bkt_bin", "ctrl_bin", "profile_json"],
            "act_func_sets": [{"name": "exp_and_others", "bkt_bin": "exp_and_others_bkt.bin",
            "ctrl_bin": "exp_and_others_ctrl.bin", "profile_json": "exp_and_others.json",
            "act": {"exp": 400, "identity": 1}}]});
        members.insert(
            format!("{sg}/act_info.json"),
            json!({"text": info.to_string()}),
        );
        members.insert(format!("{sg}/exp_and_others.json"), json!({"text": "{}"}));
        for bin in [
            "exp_and_others_bkt.bin",
            "exp_and_others_ctrl.bin",
            "default_control_fast_table.bin",
            "default_control_slow_table.bin",
            "default_datapath_table.bin",
            "default_opcode_table.bin",
        ] {
            members.insert(format!("{sg}/{bin}"), json!({"base64": "AAAAAA=="}));
        }
    }
    let spec = json!({
        "name": "matmul",
        "target": "cayman",
        "framing": "neuronx-cc",
        "kelf_node_name": "sg_coreV10",
        "subgraphs": [compiler_subgraph("sg00"), compiler_subgraph("sg01")],
        "members": members,
    });
    let spec_path = write_spec(dir.path(), "compiler.json", &spec);
    let out = dir.path().join("m.neff");
    let r = neff(&["build", s(&spec_path), "-o", s(&out), "--json"]);
    assert_eq!(code(&r), 0, "{}", stderr(&r));
    let v: Value = serde_json::from_str(&stdout(&r)).unwrap();
    assert_eq!(v["verdict"]["accepted"], true, "{v:#}");
    let warnings = v["verdict"]["warnings"].to_string();
    assert!(
        !warnings.contains("not in the NEFF") && !warnings.contains("not listed"),
        "{warnings}"
    );

    let tree = dir.path().join("tree");
    let r = neff(&["unpack", s(&out), "-o", s(&tree)]);
    assert_eq!(code(&r), 0, "{}", stderr(&r));
    for stem in ["PE", "Activation", "Pool", "DVE", "SP"] {
        for ext in ["json", "bin"] {
            assert!(
                tree.join(format!("sg01/{stem}.{ext}")).is_file(),
                "{stem}.{ext}"
            );
        }
        let text = fs::read_to_string(tree.join(format!("sg00/{stem}.json"))).unwrap();
        assert!(
            !text.contains('\n') && text.contains(&format!("\"name\":\"{stem}.json\"")),
            "{text}"
        );
    }
    assert!(!tree.join("sg00/pe.json").exists());
    let def_text = fs::read_to_string(tree.join("sg00/def.json")).unwrap();
    assert!(
        def_text.starts_with("{\n    \"#") || def_text.starts_with("{\n    \"act\""),
        "{def_text}"
    );
    assert!(def_text.ends_with("}\n"));
    let def = json_at(&tree.join("sg00/def.json"));
    assert_eq!(def["name"], "definition");
    assert_eq!(def["version"], "0.6");
    assert_eq!(def["pe"], "PE.json");
    assert_eq!(def["act_instr"], "Activation.bin");
    assert_eq!(def["cc_streams"], json!({"num_streams": 0}));
    assert_eq!(def["neff_features"], json!(["neff_feature_vnc"]));
    assert!(def.get("num_streams").is_none());
    let ids: Vec<(&str, u64)> = ["SB", "x", "y", "output0", "identity_82", "DGETable0"]
        .iter()
        .map(|n| (*n, def["var"][n]["var_id"].as_u64().unwrap()))
        .collect();
    assert_eq!(
        ids,
        [
            ("SB", 0),
            ("x", 1),
            ("y", 2),
            ("output0", 3),
            ("identity_82", 4),
            ("DGETable0", 5)
        ]
    );
    for io in ["x", "y", "output0"] {
        let var = &def["var"][io];
        assert!(
            var.get("dtype").is_none() && var.get("shape").is_none(),
            "{var}"
        );
        assert_eq!(var["ops"], json!([]));
    }
    let graph = json_at(&tree.join("neff.json"));
    let kelf_node = &graph["nodes"][2];
    assert_eq!(kelf_node["output_names"], json!(["output0", "output0"]));
    assert!(kelf_node.get("output").is_none());
    assert_eq!(graph["nodes"][0]["output_names"], json!(["x"]));
    assert_eq!(graph["node_row_ptr"], json!([0, 1, 2, 4]));
    assert_eq!(
        graph["metadata"]["signatures"]["default"]["inputs"]["y"],
        json!({"id": 1, "dtype": "float16", "shape": [256, 128]})
    );
    let graph_text = fs::read_to_string(tree.join("neff.json")).unwrap();
    assert!(graph_text.starts_with("{\n    \"nodes\": [\n        {\n            \"op\": \"null\",\n            \"name\": \"x\","), "{graph_text}");
    let kelf_text = fs::read_to_string(tree.join("kelf-0.json")).unwrap();
    assert!(
        kelf_text.starts_with("{\n    \"graphs\"")
            && kelf_text.contains("\"version\": \"0.5\",\n    \"target\": \"cayman\"\n}\n"),
        "{kelf_text}"
    );

    // The default framing keeps this project's plain style.
    let mut plain = spec.clone();
    plain.as_object_mut().unwrap().remove("framing");
    let plain_path = write_spec(dir.path(), "plain.json", &plain);
    let plain_out = dir.path().join("plain.neff");
    let r = neff(&["build", s(&plain_path), "-o", s(&plain_out)]);
    assert_eq!(code(&r), 0, "{}", stderr(&r));
    let r = neff(&["cat", s(&plain_out), "sg00/def.json"]);
    let def: Value = serde_json::from_str(&stdout(&r)).unwrap();
    assert_eq!(
        (def["pe"].as_str(), def["name"].as_str()),
        (Some("pe.json"), Some("sg00"))
    );
    assert_eq!(def["var"]["x"]["dtype"], "float16");
}
