//! `neff inspect --memory`, `--show-weights` and `--ntff` on the real NEFFs
//! in `../shared/real-neffs/`, and the builder's conventional members shown
//! as referenced. The memory figures are checked against an independent
//! reading of the same manifests by Python's tarfile and json.

use crate::common;

use std::ffi::OsStr;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use serde_json::Value;

fn neff<S: AsRef<OsStr>>(args: &[S]) -> Output {
    crate::common::neff_command()
        .args(args)
        .output()
        .expect("run neff")
}

fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

fn real_neffs(dir: &Path) -> Vec<PathBuf> {
    let mut files: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().and_then(|e| e.to_str()) == Some("neff"))
        .collect();
    files.sort();
    assert!(files.len() >= 14, "the real NEFFs: {files:?}");
    files
}

/// Reads each NEFF given on the command line with tarfile and json alone and
/// prints, per file, one object per graph with the same categories.
const INDEPENDENT: &str = r##"
import gzip, io, json, math, sys, tarfile
def hw(d):
    outer = lambda k: math.prod(d.get(k, [1])[1:])
    return max(outer("from_sizes"), outer("to_sizes"), 1)
out = []
for path in sys.argv[1:]:
    b = open(path, "rb").read()
    size = int.from_bytes(b[16:24], "little")
    payload = b[1024:1024 + size]
    raw = gzip.decompress(payload) if payload[:2] == b"\x1f\x8b" else payload
    t = tarfile.open(fileobj=io.BytesIO(raw))
    m = {x.name[2:] if x.name.startswith("./") else x.name: x for x in t.getmembers() if x.isfile()}
    read = lambda n: t.extractfile(m[n]).read()
    kelf = json.loads(read([n for n in m if n.startswith("kelf-")][0]))
    cores = []
    for g in kelf["graphs"]:
        sg = g["definition"].rsplit("/", 1)[0]
        d = json.loads(read(g["definition"]))
        var = d["var"].values()
        io_names = {n for n, v in d["var"].items() if v["type"] in ("input", "output")}
        c = dict(graph=g["name"], model_code=0, constants=0, shared_scratchpad=0, scratchpad=0,
                 dma_rings_io=0, dma_rings_spill=0, io_tensors=0)
        page = 512 << 20
        for v in var:
            if v["type"] == "file":
                if "size" in v:
                    c["constants"] += v["size"]
                else:
                    data = read(sg + "/" + v["file_name"])
                    c["constants"] += len(data) - 10 - int.from_bytes(data[8:10], "little")
            elif v["type"] == "virtual":
                off = v.get("backing_variable_off", 0)
                c["shared_scratchpad"] = max(c["shared_scratchpad"], off + v["size"])
                if off % page + v["size"] > page:
                    c["scratchpad"] += v["size"]
            elif v["type"] in ("input", "output"):
                c["io_tensors"] += v["size"]
        blocks = list(d.get("dma", []))
        for e in ("pe", "act", "pool", "dve", "sp"):
            if e in d:
                ej = json.loads(read(sg + "/" + d[e]))
                c["model_code"] += m[sg + "/" + ej["instr"]].size
                blocks += ej.get("dma", [])
        for bl in blocks:
            n = 0
            for desc in bl.get("desc", []):
                k = "dma_rings_io" if {desc.get("from"), desc.get("to")} & io_names else "dma_rings_spill"
                c[k] += 16 * hw(desc)
                n += hw(desc)
            # neuron-cc 1.15 writes the count itself: the rule must match it.
            assert bl.get("#block_num_descs", n) == n, (path, bl.get("id"), n)
        c["total"] = sum(c[k] for k in ("model_code", "constants", "shared_scratchpad",
                                         "scratchpad", "dma_rings_io", "dma_rings_spill"))
        cores.append(c)
    out.append(cores)
print(json.dumps(out))
"##;

fn python(script: &str, args: &[PathBuf]) -> Value {
    let out = Command::new("python3")
        .arg("-c")
        .arg(script)
        .args(args)
        .output()
        .unwrap_or_else(|e| panic!("python3 is required by this test: {e}"));
    assert!(
        out.status.success(),
        "python3 failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).expect("python printed JSON")
}

const CATEGORIES: [&str; 8] = [
    "model_code",
    "constants",
    "shared_scratchpad",
    "scratchpad",
    "dma_rings_io",
    "dma_rings_spill",
    "total",
    "io_tensors",
];

#[test]
#[cfg_attr(
    not(neff_real_neffs),
    ignore = "real NEFFs missing: set NEFF_REAL_NEFFS (default ../shared/real-neffs), see tests/real-neffs.md"
)]
fn memory_equals_an_independent_reading_on_every_real_neff() {
    let Some(dir) = common::real_neff_dir() else {
        return;
    };
    let files = real_neffs(&dir);
    let expected = python(INDEPENDENT, &files);
    for (file, want) in files.iter().zip(expected.as_array().unwrap()) {
        let name = file.file_name().unwrap().to_string_lossy();
        let o = neff(&[
            OsStr::new("inspect"),
            OsStr::new("--memory"),
            OsStr::new("--json"),
            file.as_os_str(),
        ]);
        assert_eq!(
            o.status.code(),
            Some(0),
            "{name}: {}",
            String::from_utf8_lossy(&o.stderr)
        );
        let r: Value = serde_json::from_slice(&o.stdout).unwrap();
        assert_eq!(&r["cores"], want, "{name}: per-core figures");
        for k in CATEGORIES {
            let sum: u64 = r["cores"]
                .as_array()
                .unwrap()
                .iter()
                .map(|c| c[k].as_u64().unwrap())
                .sum();
            assert_eq!(
                r["total"][k], sum,
                "{name}: total.{k} is the sum over the cores"
            );
        }
        for row in r["cores"].as_array().unwrap().iter().chain([&r["total"]]) {
            let parts: u64 = CATEGORIES[..6]
                .iter()
                .map(|k| row[*k].as_u64().unwrap())
                .sum();
            assert_eq!(
                row["total"], parts,
                "{name}: total is the sum of the categories"
            );
        }
    }
}

#[test]
#[cfg_attr(
    not(neff_real_neffs),
    ignore = "real NEFFs missing: set NEFF_REAL_NEFFS (default ../shared/real-neffs), see tests/real-neffs.md"
)]
fn memory_text_of_the_real_neffs_matches_its_golden_file() {
    let Some(dir) = common::real_neff_dir() else {
        return;
    };
    let mut text = String::new();
    for file in real_neffs(&dir) {
        let o = crate::common::neff_command()
            .current_dir(&dir)
            .args(["inspect", "--memory"])
            .arg(file.file_name().unwrap())
            .output()
            .unwrap();
        assert_eq!(o.status.code(), Some(0));
        text.push_str(&format!(
            "== {}\n{}",
            file.file_name().unwrap().to_string_lossy(),
            stdout(&o)
        ));
    }
    common::golden_text("inspect-memory-real.txt", &text);
}

#[test]
#[cfg_attr(
    not(neff_real_neffs),
    ignore = "real NEFFs missing: set NEFF_REAL_NEFFS (default ../shared/real-neffs), see tests/real-neffs.md"
)]
fn show_weights_lists_every_file_variable() {
    let Some(dir) = common::real_neff_dir() else {
        return;
    };
    let o = crate::common::neff_command()
        .current_dir(&dir)
        .args([
            "inspect",
            "--show-weights",
            "ncc2.21_riya-ranjan_transpose_1024_0.neff",
        ])
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(0));
    common::golden_text("inspect-show-weights-real.txt", &stdout(&o));
    // 1.15 gives no `size`: the data bytes after the .npy header stand in;
    // dtype and shape come from the .npy header.
    let o = neff(&[
        OsStr::new("inspect"),
        OsStr::new("--show-weights"),
        dir.join("ncc1.15_optimum-neuron_neuron_model.neff")
            .as_os_str(),
    ]);
    let text = stdout(&o);
    assert!(text.starts_with("weights: 104 (229028 bytes)\n"), "{text}");
    assert_eq!(text.lines().count(), 2 + 104);
    assert!(
        text.contains("  sg00         4         1024         1152  float32    [8, 32, 1, 1]    t20-3854-4024-v0  sg00/value_sg00_t20-3854-4024_CRSM_0.npy\n"),
        "{text}"
    );
    let o = neff(&[
        OsStr::new("inspect"),
        OsStr::new("--show-weights"),
        OsStr::new("--json"),
        dir.join("ncc1.15_optimum-neuron_neuron_model.neff")
            .as_os_str(),
    ]);
    assert_eq!(o.status.code(), Some(2), "--show-weights is text only");
}

/// The two real profiles with their NEFFs.
const PAIRS: [(&str, &str); 2] = [
    (
        "ncc2.21_chengli2003_stream_256k_fd1k",
        "81b6457e-0b41-4a62-b568-b6afca396901",
    ),
    (
        "ncc2.18_waahm7_stream_256k_fd1k",
        "3e35b3d8-249d-4b15-99fa-3691933d7c87",
    ),
];

fn ntff_check(dir: &Path, neff_file: &str, ntff: &Path) -> Output {
    neff(&[
        OsStr::new("inspect"),
        dir.join(format!("{neff_file}.neff")).as_os_str(),
        OsStr::new("--ntff"),
        ntff.as_os_str(),
    ])
}

#[test]
#[cfg_attr(
    not(neff_real_neffs),
    ignore = "real NEFFs missing: set NEFF_REAL_NEFFS (default ../shared/real-neffs), see tests/real-neffs.md"
)]
fn ntff_belongs_to_its_neff_and_not_to_the_other() {
    let Some(dir) = common::real_neff_dir() else {
        return;
    };
    for (i, (name, uuid)) in PAIRS.iter().enumerate() {
        let ntff = dir.join(format!("{name}.ntff"));
        let o = ntff_check(&dir, name, &ntff);
        assert_eq!(o.status.code(), Some(0), "{name}");
        let text = stdout(&o);
        assert!(text.contains("belongs to this NEFF"), "{text}");
        assert!(text.contains(&format!("(uuid {uuid})")), "{text}");
        let (other, other_uuid) = PAIRS[1 - i];
        let o = ntff_check(&dir, other, &ntff);
        assert_eq!(o.status.code(), Some(1), "{name}.ntff against {other}.neff");
        let text = stdout(&o);
        assert!(
            text.contains(&format!(
                "does NOT belong to this NEFF (profile uuid {uuid}, NEFF uuid {other_uuid})"
            )),
            "{text}"
        );
    }
}

#[test]
#[cfg_attr(
    not(neff_real_neffs),
    ignore = "real NEFFs missing: set NEFF_REAL_NEFFS (default ../shared/real-neffs), see tests/real-neffs.md"
)]
fn a_truncated_or_foreign_ntff_is_an_error() {
    let Some(dir) = common::real_neff_dir() else {
        return;
    };
    let (name, _) = PAIRS[0];
    let tmp = tempfile::tempdir().unwrap();
    let cut = tmp.path().join("cut.ntff");
    let bytes = std::fs::read(dir.join(format!("{name}.ntff"))).unwrap();
    std::fs::write(&cut, &bytes[..150]).unwrap();
    let o = ntff_check(&dir, name, &cut);
    assert_eq!(o.status.code(), Some(2));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.contains("cut.ntff: truncated: 150 bytes"), "{err}");
    // A NEFF is not a profile.
    let o = ntff_check(&dir, name, &dir.join(format!("{name}.neff")));
    assert_eq!(o.status.code(), Some(2));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        err.contains("not a runtime profile: byte 128 is 0x00"),
        "{err}"
    );
}

#[test]
fn builder_ucode_lib_and_barrier_config_are_referenced() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut spec: Value =
        serde_json::from_slice(&std::fs::read(root.join("examples/cayman-ucode.json")).unwrap())
            .unwrap();
    let barrier =
        std::fs::read_to_string(root.join("tests/golden/barrier/compose-device-hostcc.json"))
            .unwrap();
    spec["members"]["barrier_config.json"] = serde_json::json!({ "text": barrier });
    let tmp = tempfile::tempdir().unwrap();
    let spec_path = tmp.path().join("spec.json");
    std::fs::write(&spec_path, spec.to_string()).unwrap();
    let out = tmp.path().join("u.neff");
    let o = neff(&[
        OsStr::new("build"),
        spec_path.as_os_str(),
        OsStr::new("-o"),
        out.as_os_str(),
    ]);
    assert_eq!(
        o.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    let o = neff(&[OsStr::new("inspect"), OsStr::new("--json"), out.as_os_str()]);
    let r: Value = serde_json::from_slice(&o.stdout).unwrap();
    let unreferenced = &r["model"]["unreferenced_members"];
    assert_eq!(
        unreferenced,
        &serde_json::json!(["info.json"]),
        "{unreferenced}"
    );
    let builder = r["model"]["builder_members"].as_array().unwrap();
    let names: Vec<&str> = builder
        .iter()
        .map(|b| b["member"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["barrier_config.json", "sg00/ucode_lib.json"]);
    assert!(builder[1]["referenced_by"]
        .as_str()
        .unwrap()
        .starts_with("sg00/def.json ucode_lib"));
    let text = stdout(&neff(&[OsStr::new("inspect"), out.as_os_str()]));
    assert!(
        text.contains(
            "  builder member: sg00/ucode_lib.json (referenced by sg00/def.json ucode_lib"
        ),
        "{text}"
    );
    assert!(
        text.contains("  unreferenced members: info.json\n"),
        "{text}"
    );
}

#[test]
fn memory_of_a_refused_neff_exits_1() {
    let tmp = tempfile::tempdir().unwrap();
    // The header alone: the container tier refuses before any model.
    let cut = tmp.path().join("cut.neff");
    let mut n = vec![0u8; 1024];
    n[0] = 2;
    std::fs::write(&cut, &n).unwrap();
    for flag in ["--memory", "--show-weights"] {
        let o = neff(&[OsStr::new("inspect"), OsStr::new(flag), cut.as_os_str()]);
        assert_eq!(o.status.code(), Some(1), "{flag}");
        assert!(o.stdout.is_empty(), "{flag}");
        let err = String::from_utf8_lossy(&o.stderr);
        assert!(
            err.contains("cut.neff: no model to show: REJECTED by G"),
            "{flag}: {err}"
        );
    }
}

/// Reads every `.npy` member's header dict with Python's tarfile and
/// ast.literal_eval: `{member: [descr, shape]}`.
const NPY_HEADERS_PY: &str = r#"
import ast, io, json, struct, sys, tarfile
out = {}
with open(sys.argv[1], "rb") as f:
    f.seek(1024)
    with tarfile.open(fileobj=io.BytesIO(f.read()), mode="r:*") as t:
        for m in t.getmembers():
            if m.isfile() and m.name.endswith(".npy"):
                data = t.extractfile(m).read(1 << 16)
                (hlen,) = struct.unpack("<H", data[8:10])
                d = ast.literal_eval(data[10:10 + hlen].decode("latin1"))
                out[m.name.removeprefix("./")] = [d["descr"], list(d["shape"])]
print(json.dumps(out))
"#;

#[test]
#[cfg_attr(
    not(neff_real_neffs),
    ignore = "real NEFFs missing: set NEFF_REAL_NEFFS (default ../shared/real-neffs), see tests/real-neffs.md"
)]
fn weights_show_the_npy_headers_dtype_and_shape_on_every_real_neff() {
    let Some(dir) = common::real_neff_dir() else {
        return;
    };
    // Codes a manifest spells map to its name; others (`|V2`, bf16 as raw
    // bytes) are shown as numpy's descr.
    fn dtype_of(descr: &str) -> &str {
        match descr.trim_start_matches(['<', '|', '=']) {
            "f4" => "float32",
            "f2" => "float16",
            "u1" => "uint8",
            "i1" => "int8",
            "i2" => "int16",
            "i4" => "int32",
            "i8" => "int64",
            // The 2-byte void the compilers write bfloat16 weights as.
            "V2" => "bfloat16",
            _ => descr,
        }
    }
    let mut checked = 0;
    for file in real_neffs(&dir) {
        let py = Command::new("python3")
            .args(["-c", NPY_HEADERS_PY])
            .arg(&file)
            .output()
            .unwrap();
        assert!(
            py.status.success(),
            "{}",
            String::from_utf8_lossy(&py.stderr)
        );
        let headers: Value = serde_json::from_slice(&py.stdout).unwrap();
        let o = neff(&[
            OsStr::new("inspect"),
            OsStr::new("--json"),
            file.as_os_str(),
        ]);
        let report: Value = serde_json::from_slice(&o.stdout).unwrap();
        for graph in report["model"]["graphs"].as_array().unwrap() {
            for w in graph["weights"].as_array().unwrap() {
                let member = w["member"].as_str().unwrap();
                let [descr, shape] = headers[member].as_array().unwrap().as_slice() else {
                    panic!("{member}: no npy header read by Python");
                };
                assert_eq!(w["dtype"], dtype_of(descr.as_str().unwrap()), "{member}");
                assert_eq!(&w["shape"], shape, "{member}");
                checked += 1;
            }
        }
    }
    assert!(checked >= 180, "only {checked} weights checked");
}

#[test]
#[cfg_attr(
    not(neff_real_neffs),
    ignore = "real NEFFs missing: set NEFF_REAL_NEFFS (default ../shared/real-neffs), see tests/real-neffs.md"
)]
fn memory_of_real_neffs_loaded_together_adds_up_and_shares_one_scratchpad() {
    let files = crate::common::real_neff_files();
    let paths: Vec<&str> = files.iter().map(|p| p.to_str().unwrap()).collect();
    let mut args = vec!["inspect", "--memory", "--json"];
    args.extend(&paths);
    let out = neff(&args);
    assert_eq!(out.status.code(), Some(0), "{}", common::stderr(&out));
    let shared: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let page = shared["scratchpad_page"].as_u64().unwrap();
    assert_eq!(page, 512 << 20);
    let together = &shared["together"];
    let mut largest = 0;
    for key in [
        "model_code",
        "constants",
        "scratchpad",
        "dma_rings_io",
        "dma_rings_spill",
        "io_tensors",
    ] {
        let mut sum = 0;
        for path in &paths {
            let one = neff(&["inspect", "--memory", "--json", path]);
            let one: serde_json::Value = serde_json::from_slice(&one.stdout).unwrap();
            sum += one["total"][key].as_u64().unwrap();
            largest = largest.max(one["total"]["shared_scratchpad"].as_u64().unwrap());
        }
        assert_eq!(together[key].as_u64(), Some(sum), "{key}");
    }
    assert_eq!(
        together["shared_scratchpad"].as_u64(),
        Some(largest.div_ceil(page) * page)
    );
    assert_eq!(shared["neffs"].as_array().unwrap().len(), paths.len());
    assert!(!shared["estimated"].as_array().unwrap().is_empty());
    let text = stdout(&neff(&["inspect", "--memory", paths[0], paths[1]]));
    assert!(
        text.contains("together") && text.contains("estimated, not known"),
        "{text}"
    );
}
