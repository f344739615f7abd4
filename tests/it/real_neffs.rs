//! The real compilers' NEFFs (`../shared/real-neffs/`, spec §11), one named
//! case per file: accepted with the hash check on (reporting the layout that
//! matched), its I/O shown by inspect, and `unpack --header-out` then
//! `pack --header` giving back the very same bytes. A last case runs the
//! same checks on any other `.neff` put in the folder.
//!
//! Without the folder (a clone of the project alone) the cases are ignored,
//! naming the setting (`NEFF_REAL_NEFFS`, see `tests/real-neffs.md`).

use std::path::{Path, PathBuf};

use neff::loader::{verify_file, Loader, RuntimeProfile};
use neff::schema::HashLayout;
use neff::tools::{extract, InspectReport};

fn folder() -> PathBuf {
    crate::common::real_neffs()
}

fn neff(args: &[&std::ffi::OsStr]) -> std::process::Output {
    crate::common::neff_command()
        .args(args)
        .output()
        .expect("run neff")
}

/// Every check on one file; `layout` is the hash layout it must report.
fn check(path: &Path, layout: Option<HashLayout>) {
    let name = path.display().to_string();
    let verdict = verify_file(path, &RuntimeProfile::default()).unwrap();
    let report = verdict.report();
    assert!(verdict.accepted, "{name}: {report:#?}");
    let matched = report.hash_layout.expect("the hash was checked");
    if let Some(layout) = layout {
        assert_eq!(matched, layout, "{name}");
    }
    assert!(
        !report.warnings.iter().any(|w| w.contains("missing")),
        "{name}: {:?}",
        report.warnings
    );

    let inspect = InspectReport::new(&name, &verdict);
    let model = inspect.model.as_ref().expect("a model");
    assert!(!model.inputs.is_empty(), "{name}: no inputs shown");
    assert!(!model.outputs.is_empty(), "{name}: no outputs shown");
    for io in model.inputs.iter().chain(&model.outputs) {
        assert!(!io.name.is_empty() && io.dtype.is_some(), "{name}: {io:?}");
    }

    let tmp = tempfile::tempdir().unwrap();
    // The verdict that goes on from an unpack's container check is the
    // verdict of a whole verification.
    let limits = neff::tools::ExtractLimits::default();
    let profile = RuntimeProfile::default();
    let (_, tier1) = extract(path, &tmp.path().join("walked"), &profile, false, &limits).unwrap();
    let walked = Loader::new(&profile).verify_walked(tier1, path).unwrap();
    assert_eq!(
        serde_json::to_value(walked.combined_report()).unwrap(),
        serde_json::to_value(verdict.combined_report()).unwrap(),
        "{name}"
    );

    let tree = tmp.path().join("tree");
    let header = tmp.path().join("header.json");
    let rebuilt = tmp.path().join("rebuilt.neff");
    let out = neff(&[
        "unpack".as_ref(),
        path.as_os_str(),
        "-o".as_ref(),
        tree.as_os_str(),
        "--header-out".as_ref(),
        header.as_os_str(),
        "--json".as_ref(),
    ]);
    assert!(out.status.success(), "{name}: {out:?}");
    let summary: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(
        summary["byte_identical_repack"], true,
        "{name}: {summary:#}"
    );
    let out = neff(&[
        "pack".as_ref(),
        tree.as_os_str(),
        "-o".as_ref(),
        rebuilt.as_os_str(),
        "--header".as_ref(),
        header.as_os_str(),
        "-q".as_ref(),
    ]);
    assert!(out.status.success(), "{name}: {out:?}");
    let original = std::fs::read(path).unwrap();
    let again = std::fs::read(&rebuilt).unwrap();
    if let Some(at) = original.iter().zip(&again).position(|(a, b)| a != b) {
        panic!("{name}: the repack differs first at byte {at:#x}");
    }
    assert_eq!(original.len(), again.len(), "{name}: lengths differ");
}

macro_rules! real_neff_cases {
    ($($test:ident: $file:literal => $layout:ident;)*) => {
        /// The files the cases below name.
        const NAMED: &[&str] = &[$($file),*];
        $(
            #[test]
            #[cfg_attr(not(neff_real_neffs), ignore = "real NEFFs missing: set NEFF_REAL_NEFFS (default ../shared/real-neffs), see tests/real-neffs.md")]
            fn $test() {
                check(&folder().join($file), Some(HashLayout::$layout));
            }
        )*
    };
}

real_neff_cases! {
    neuron_cc_1_15_optimum_neuron: "ncc1.15_optimum-neuron_neuron_model.neff" => Standard;
    neuronx_cc_2_0_stream: "ncc2.0.99229_ericcsr_stream_256k_fd1k.neff" => Standard;
    neuronx_cc_2_6_optimum_neuronx: "ncc2.6_optimum-neuron_neuronx_model.neff" => Standard;
    neuronx_cc_2_16_stream: "ncc2.16_ichuniq_stream_256k_fd1k.neff" => Standard;
    neuronx_cc_2_18_file_pool: "ncc2.18_waahm7_file_pool_1_float16.neff" => WordReversed;
    neuronx_cc_2_18_stream: "ncc2.18_waahm7_stream_256k_fd1k.neff" => WordReversed;
    neuronx_cc_2_21_conv2d: "ncc2.21_chengli2003_conv2d_1_float16_smaller.neff" => WordReversed;
    neuronx_cc_2_21_stream: "ncc2.21_chengli2003_stream_256k_fd1k.neff" => WordReversed;
    neuronx_cc_2_21_transpose: "ncc2.21_riya-ranjan_transpose_1024_0.neff" => WordReversed;
    neuronx_cc_2_23_kernel_fusion: "ncc2.23_kernel-fusion_baseline_fp32_s512.neff" => WordReversed;
    neuronx_cc_2_23_matmul_large: "ncc2.23_nkipy_matmul_large.neff" => WordReversed;
    neuronx_cc_2_23_matmul_small: "ncc2.23_nkipy_matmul_small.neff" => WordReversed;
    neuronx_cc_2_24_moe_trn3: "ncc2.24_nki-moe-megakernel_ref_ws3.neff" => WordReversed;
    neuronx_cc_2_27_vnc_trn3: "ncc2.27_pave-univr_upload_vnc_0.neff" => Standard;
}

#[test]
#[cfg_attr(
    not(neff_real_neffs),
    ignore = "real NEFFs missing: set NEFF_REAL_NEFFS (default ../shared/real-neffs), see tests/real-neffs.md"
)]
fn any_other_real_neff_in_the_folder() {
    let dir = folder();
    for entry in std::fs::read_dir(&dir).unwrap() {
        let path = entry.unwrap().path();
        let file = path.file_name().and_then(|n| n.to_str()).unwrap_or("");
        if file.ends_with(".neff") && !NAMED.contains(&file) {
            check(&path, None);
        }
    }
}
