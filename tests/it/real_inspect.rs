//! `neff inspect` on the real compiler output in `../shared/real-neffs/`
//! (spec §11): the model's inputs and outputs, the tar stream's length and the
//! gzip member's zero padding, checked against values read by hand from the
//! manifests and against an independent reading of the bytes. Also the model
//! read past a G9 refusal, on a synthetic NEFF.

use crate::common;

use std::io::{Cursor, Read};
use std::path::Path;

use neff::loader::{Loader, RuntimeProfile};
use neff::tools::InspectReport;
use serde_json::{json, Value};

/// The report `neff inspect --json` prints, as JSON.
fn inspect(bytes: &[u8], file: &str) -> Value {
    let verdict = Loader::new(&RuntimeProfile::default())
        .verify(Some(Cursor::new(bytes)))
        .unwrap_or_else(|e| panic!("{file}: {e}"));
    serde_json::to_value(InspectReport::new(file, &verdict)).expect("serializable")
}

/// Per file: gzip member length, bytes after it inside data_size, the whole
/// tar stream's length, and where its end-of-archive marker starts (read by
/// hand with Python's zlib and tarfile).
const LAYOUT: &[(&str, u64, u64, u64, u64)] = &[
    (
        "ncc1.15_optimum-neuron_neuron_model.neff",
        356442,
        0,
        3297280,
        3288064,
    ),
    (
        "ncc2.0.99229_ericcsr_stream_256k_fd1k.neff",
        8927,
        1313,
        100352,
        99328,
    ),
    (
        "ncc2.16_ichuniq_stream_256k_fd1k.neff",
        7598,
        2642,
        67072,
        66048,
    ),
    (
        "ncc2.18_waahm7_file_pool_1_float16.neff",
        204776,
        24,
        1411072,
        1410048,
    ),
    (
        "ncc2.18_waahm7_stream_256k_fd1k.neff",
        7682,
        2558,
        67072,
        66048,
    ),
    (
        "ncc2.21_chengli2003_conv2d_1_float16_smaller.neff",
        42092,
        9108,
        337920,
        336896,
    ),
    (
        "ncc2.21_chengli2003_stream_256k_fd1k.neff",
        14705,
        5775,
        149504,
        148480,
    ),
    (
        "ncc2.21_riya-ranjan_transpose_1024_0.neff",
        29095,
        1625,
        343040,
        342016,
    ),
    (
        "ncc2.23_kernel-fusion_baseline_fp32_s512.neff",
        38437,
        2523,
        366080,
        365056,
    ),
    (
        "ncc2.23_nkipy_matmul_large.neff",
        1514364,
        1156,
        9285120,
        9284096,
    ),
    (
        "ncc2.23_nkipy_matmul_small.neff",
        53601,
        7839,
        356864,
        355840,
    ),
    (
        "ncc2.24_nki-moe-megakernel_ref_ws3.neff",
        170810,
        3270,
        899072,
        898048,
    ),
    (
        "ncc2.27_pave-univr_upload_vnc_0.neff",
        4590,
        0,
        47616,
        46592,
    ),
    (
        "ncc2.6_optimum-neuron_neuronx_model.neff",
        438163,
        0,
        1300480,
        1295872,
    ),
];

/// The payload read independently of the loader: flate2's single-member
/// decoder, then a plain walk over 512-byte tar headers.
struct Independent {
    member: u64,
    after: Vec<u8>,
    tar_len: u64,
    end_marker: u64,
}

fn independent(bytes: &[u8]) -> Independent {
    let data_size = u64::from_le_bytes(bytes[16..24].try_into().unwrap()) as usize;
    let payload = &bytes[1024..1024 + data_size];
    let mut decoder = flate2::bufread::GzDecoder::new(payload);
    let mut tar = Vec::new();
    decoder.read_to_end(&mut tar).unwrap();
    let rest = decoder.into_inner();
    let mut at = 0usize;
    while tar[at..at + 512].iter().any(|&b| b != 0) {
        let field = std::str::from_utf8(&tar[at + 124..at + 136]).unwrap();
        let size = u64::from_str_radix(field.trim_matches(|c: char| c == '\0' || c == ' '), 8)
            .unwrap() as usize;
        at += 512 + size.div_ceil(512) * 512;
    }
    Independent {
        member: (payload.len() - rest.len()) as u64,
        after: rest.to_vec(),
        tar_len: tar.len() as u64,
        end_marker: at as u64,
    }
}

#[test]
#[cfg_attr(
    not(neff_real_neffs),
    ignore = "real NEFFs missing: set NEFF_REAL_NEFFS (default ../shared/real-neffs), see tests/real-neffs.md"
)]
fn every_real_neff_has_its_tar_length_and_padding() {
    let Some(dir) = common::real_neff_dir() else {
        return;
    };
    let mut seen = 0;
    for entry in std::fs::read_dir(&dir).unwrap() {
        let path = entry.unwrap().path();
        if path.extension().and_then(|e| e.to_str()) != Some("neff") {
            continue;
        }
        let name = path.file_name().unwrap().to_str().unwrap().to_string();
        let &(_, member, padding, tar_len, end) = LAYOUT
            .iter()
            .find(|l| l.0 == name)
            .unwrap_or_else(|| panic!("{name}: not in LAYOUT"));
        let bytes = std::fs::read(&path).unwrap();
        let r = inspect(&bytes, &name);
        let ind = independent(&bytes);
        assert_eq!(
            (
                ind.member,
                ind.after.len() as u64,
                ind.tar_len,
                ind.end_marker
            ),
            (member, padding, tar_len, end),
            "{name}: the independent reading disagrees with the table"
        );
        assert!(ind.after.iter().all(|&b| b == 0), "{name}: padding");
        assert_eq!(r["compression"], "gzip", "{name}");
        assert_eq!(r["gzip_members"], 1, "{name}: gzip_members");
        assert_eq!(r["gzip_member_size"], member, "{name}: gzip_member_size");
        assert_eq!(
            r["payload_padding"],
            json!({"bytes": padding, "all_zero": true}),
            "{name}: payload_padding"
        );
        assert_eq!(r["tar_size"], tar_len, "{name}: tar_size");
        assert_eq!(r["tar_end_offset"], end, "{name}: tar_end_offset");
        // W files end with exactly two zero blocks; P files pad to 10240;
        // neuronx-cc 2.27's packager ends with two zero blocks and does not
        // pad the gzip member (data_size is its length).
        let p = name.starts_with("ncc1.15") || name.starts_with("ncc2.6");
        if p {
            assert_eq!(tar_len % 10240, 0, "{name}: P tar padded to 10240");
        } else if name.starts_with("ncc2.27") {
            assert_eq!(tar_len, end + 1024, "{name}: two zero blocks");
            assert_eq!(padding, 0, "{name}: no padding");
        } else {
            assert_eq!(tar_len, end + 1024, "{name}: W tar ends in two zero blocks");
            assert_eq!((member + padding) % 10240, 0, "{name}: W data_size");
        }
        seen += 1;
    }
    assert_eq!(seen, LAYOUT.len(), "every real NEFF was inspected");
}

#[test]
#[cfg_attr(
    not(neff_real_neffs),
    ignore = "real NEFFs missing: set NEFF_REAL_NEFFS (default ../shared/real-neffs), see tests/real-neffs.md"
)]
fn every_real_neff_shows_consistent_inputs_and_outputs() {
    let Some(dir) = common::real_neff_dir() else {
        return;
    };
    for &(name, ..) in LAYOUT {
        let bytes = std::fs::read(dir.join(name)).unwrap();
        let r = inspect(&bytes, name);
        let model = &r["model"];
        assert!(
            model.is_object(),
            "{name}: the model is shown even though the verdict is {}",
            r["verdict"]["gate"]
        );
        if let Some(past) = r["model_read_past"].as_object() {
            assert_eq!(
                past["gate"], r["verdict"]["gate"],
                "{name}: the verdict stays the refusal"
            );
            assert_eq!(r["verdict"]["accepted"], false, "{name}");
            assert_eq!(r["verdict"]["tiers_run"], json!(["container"]), "{name}");
        }
        for side in ["inputs", "outputs"] {
            let list = model[side].as_array().unwrap();
            assert!(!list.is_empty(), "{name}: no {side}");
            for t in list {
                let what = format!("{name}: {side} {}", t["name"]);
                assert!(t["dtype"].is_string(), "{what}: dtype");
                assert!(t["shape"].is_array(), "{what}: shape");
                let size = t["size"].as_u64().unwrap_or_else(|| panic!("{what}: size"));
                for v in t["vars"].as_array().unwrap() {
                    assert_eq!(v["size"], size, "{what}: def.json var {v} size");
                }
            }
        }
    }
}

/// `(name, dtype, shape, size)` of each input or output, in order.
fn io(r: &Value, side: &str) -> Vec<(String, String, Vec<u64>, u64)> {
    r["model"][side]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| {
            (
                t["name"].as_str().unwrap().to_string(),
                t["dtype"].as_str().unwrap().to_string(),
                serde_json::from_value(t["shape"].clone()).unwrap(),
                t["size"].as_u64().unwrap(),
            )
        })
        .collect()
}

fn io_of(dir: &Path, name: &str) -> Value {
    inspect(&std::fs::read(dir.join(name)).unwrap(), name)
}

fn t(name: &str, dtype: &str, shape: &[u64], size: u64) -> (String, String, Vec<u64>, u64) {
    (name.into(), dtype.into(), shape.to_vec(), size)
}

#[test]
#[cfg_attr(
    not(neff_real_neffs),
    ignore = "real NEFFs missing: set NEFF_REAL_NEFFS (default ../shared/real-neffs), see tests/real-neffs.md"
)]
fn conv2d_pool_2_18_inputs_and_outputs() {
    let Some(dir) = common::real_neff_dir() else {
        return;
    };
    let r = io_of(&dir, "ncc2.18_waahm7_file_pool_1_float16.neff");
    assert_eq!(
        io(&r, "inputs"),
        [
            t("X", "float16", &[1, 256, 224, 224], 25690112),
            t("W", "float16", &[256, 256, 3, 3], 1179648),
            t("bias", "float16", &[256], 512),
        ]
    );
    assert_eq!(
        io(&r, "outputs"),
        [t("X_out", "float16", &[1, 256, 222, 222], 25233408)]
    );
    let out = &r["model"]["outputs"][0];
    assert_eq!(
        out["vars"],
        json!([{"graph": "sg00", "var_id": 4, "size": 25233408}])
    );
    assert_eq!(r["model"]["inputs"][0]["signature"], "X");
}

#[test]
#[cfg_attr(
    not(neff_real_neffs),
    ignore = "real NEFFs missing: set NEFF_REAL_NEFFS (default ../shared/real-neffs), see tests/real-neffs.md"
)]
fn stream_2_21_has_one_output_on_two_cores() {
    let Some(dir) = common::real_neff_dir() else {
        return;
    };
    let r = io_of(&dir, "ncc2.21_chengli2003_stream_256k_fd1k.neff");
    assert_eq!(
        io(&r, "inputs"),
        [
            t("a_vec", "float32", &[256000], 1024000),
            t("b_vec", "float32", &[256000], 1024000),
        ]
    );
    assert_eq!(io(&r, "outputs"), [t("out", "float32", &[256000], 1024000)]);
    // Two heads name `out`: one per core of the vnc-2 NEFF.
    assert_eq!(r["model"]["outputs"][0]["entries"], 2);
    assert_eq!(r["model"]["outputs"][0]["entry_id"], 2);
}

#[test]
#[cfg_attr(
    not(neff_real_neffs),
    ignore = "real NEFFs missing: set NEFF_REAL_NEFFS (default ../shared/real-neffs), see tests/real-neffs.md"
)]
fn bert_1_15_outputs_are_named_by_output_names() {
    let Some(dir) = common::real_neff_dir() else {
        return;
    };
    let r = io_of(&dir, "ncc1.15_optimum-neuron_neuron_model.neff");
    assert_eq!(
        io(&r, "inputs"),
        [
            t("0:0", "int64", &[1, 16], 128),
            t("2:0", "int64", &[1, 16], 128),
            t("tensor.1:0", "int64", &[1, 16], 128),
        ]
    );
    let add = "BertModel_1/BertEncoder_28/BertLayer_14/BertOutput_5/LayerNorm_7/aten_layer_norm/batchnorm/add_1:0";
    let tanh = "BertModel_1/BertPooler_29/Tanh_11/aten_tanh/Tanh:0";
    assert_eq!(
        io(&r, "outputs"),
        [
            t(add, "float32", &[1, 16, 32], 2048),
            t(tanh, "float32", &[1, 32], 128),
        ]
    );
    let outputs = &r["model"]["outputs"];
    // The signature names the KELF node for entry 7.
    assert_eq!(outputs[0]["signature"], "sg_tonga0");
    assert_eq!(outputs[0]["vars"][0]["var_id"], 109);
    assert_eq!(outputs[1]["vars"][0]["var_id"], 108);
    assert_eq!(r["model"]["nn_outputs"][0]["node"], "sg_tonga0");
    // Weights: 104 file variables, each a stored .npy.
    let weights = r["model"]["graphs"][0]["weights"].as_array().unwrap();
    assert_eq!(weights.len(), 104);
    assert!(weights
        .iter()
        .all(|w| w["member"].as_str().unwrap().starts_with("sg00/value_")
            && w["member_size"].as_u64().unwrap() > 0));
}

#[test]
#[cfg_attr(
    not(neff_real_neffs),
    ignore = "real NEFFs missing: set NEFF_REAL_NEFFS (default ../shared/real-neffs), see tests/real-neffs.md"
)]
fn bert_2_6_and_matmul_2_23() {
    let Some(dir) = common::real_neff_dir() else {
        return;
    };
    let r = io_of(&dir, "ncc2.6_optimum-neuron_neuronx_model.neff");
    assert_eq!(
        io(&r, "inputs"),
        [
            t("input0", "int32", &[192, 2], 1536),
            t("input1", "int32", &[3, 128], 1536),
            t("input2", "int32", &[192, 2], 1536),
        ]
    );
    assert_eq!(io(&r, "outputs"), [t("output0", "float32", &[3, 2], 24)]);
    let weights = r["model"]["graphs"][0]["weights"].as_array().unwrap();
    let w = weights
        .iter()
        .find(|w| w["name"] == "input88.weight.lit-4288")
        .unwrap();
    assert_eq!(w["var_id"], 5);
    assert_eq!(w["size"], 143872);
    assert_eq!(
        w["member"],
        "sg00/value_sg0000_input88.weight.lit-4288_CRSM.npy"
    );

    let r = io_of(&dir, "ncc2.23_nkipy_matmul_large.neff");
    assert_eq!(
        io(&r, "inputs"),
        [
            t("x", "float16", &[128, 32768], 8388608),
            t("y", "float16", &[32768, 65536], 4294967296),
        ]
    );
    assert_eq!(
        io(&r, "outputs"),
        [t("output0", "float16", &[128, 65536], 16777216)]
    );
}

#[test]
fn the_model_is_read_past_a_hash_refusal_but_the_verdict_stays() {
    let mut n = common::valid_neff();
    n[0xAC] ^= 0xFF;
    let r = inspect(&n, "bad-hash.neff");
    assert_eq!(r["verdict"]["gate"], "G9");
    assert_eq!(r["verdict"]["accepted"], false);
    assert_eq!(r["verdict"]["tiers_run"], json!(["container"]));
    assert!(r["verdict"]["target"].is_null(), "{:#}", r["verdict"]);
    assert_eq!(r["model_read_past"], json!({"gate": "G9", "then": null}));
    assert!(r["model"]["kelf"].is_string(), "{:#}", r["model"]);
    let good = inspect(&common::valid_neff(), "good.neff");
    assert!(good.get("model_read_past").is_none());
    assert_eq!(r["model"], good["model"], "the same model as when accepted");

    // A walk that fails is not read past.
    let mut n = common::valid_neff();
    let end = n.len();
    n.truncate(1024 + 40);
    n[16..24].copy_from_slice(&40u64.to_le_bytes());
    assert!(end > n.len());
    let r = inspect(&n, "cut.neff");
    assert!(r["model"].is_null(), "{:#}", r["model"]);
    assert!(r.get("model_read_past").is_none());
}

#[test]
#[cfg_attr(
    not(neff_real_neffs),
    ignore = "real NEFFs missing: set NEFF_REAL_NEFFS (default ../shared/real-neffs), see tests/real-neffs.md"
)]
fn inspect_text_of_a_real_neff_matches_its_golden_file() {
    let Some(dir) = common::real_neff_dir() else {
        return;
    };
    let name = "ncc2.21_riya-ranjan_transpose_1024_0.neff";
    let o = crate::common::neff_command()
        .current_dir(&dir)
        .args(["inspect", name])
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(0));
    let text = String::from_utf8(o.stdout).unwrap();
    common::golden_text("inspect-real-transpose.txt", &text);
}
