//! `neff weights`: an export read back gives the NEFF byte for byte, a
//! changed tensor shows in `neff diff`, and an import refuses a tensor that
//! names no weight or changes a weight's shape unless told.

use std::collections::HashMap;
use std::fs;
use std::path::Path;

use safetensors::tensor::TensorView;
use safetensors::SafeTensors;

use crate::common::*;

/// Exports `neff` to `st`, imports it back into `out`; the two NEFFs' bytes.
fn round_trip(neff_file: &Path, st: &Path, out: &Path) {
    let r = neff(&["weights", s(neff_file), "--export", s(st), "-q"]);
    assert_eq!(code(&r), 0, "{}: {}", neff_file.display(), stderr(&r));
    let r = neff(&[
        "weights",
        s(neff_file),
        "--import",
        s(st),
        "-o",
        s(out),
        "-q",
    ]);
    assert_eq!(code(&r), 0, "{}: {}", neff_file.display(), stderr(&r));
    assert!(
        fs::read(neff_file).unwrap() == fs::read(out).unwrap(),
        "{}: not byte for byte",
        neff_file.display()
    );
}

#[test]
#[cfg_attr(
    not(neff_real_neffs),
    ignore = "real NEFFs missing: set NEFF_REAL_NEFFS (default ../shared/real-neffs), see tests/real-neffs.md"
)]
fn every_real_neffs_weights_round_trip_byte_for_byte() {
    let dir = tempfile::tempdir().unwrap();
    for file in real_neff_files() {
        round_trip(
            &file,
            &dir.path().join("w.safetensors"),
            &dir.path().join("back.neff"),
        );
    }
}

#[test]
fn a_changed_tensor_shows_in_diff_and_bad_tensors_are_refused() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let model = d.join("m.neff");
    let spec = root.join("examples/weights.json");
    assert_eq!(code(&neff(&["build", s(&spec), "-o", s(&model), "-q"])), 0);
    let st = d.join("w.safetensors");
    round_trip(&model, &st, &d.join("back.neff"));

    let bytes = fs::read(&st).unwrap();
    let file = SafeTensors::deserialize(&bytes).unwrap();
    let mut tensors: Vec<(String, safetensors::Dtype, Vec<usize>, Vec<u8>)> = file
        .tensors()
        .into_iter()
        .map(|(k, v)| (k, v.dtype(), v.shape().to_vec(), v.data().to_vec()))
        .collect();
    tensors.sort();
    let write = |tensors: &[(String, safetensors::Dtype, Vec<usize>, Vec<u8>)], path: &Path| {
        let views: Vec<(&str, TensorView<'_>)> = tensors
            .iter()
            .map(|(k, t, s, d)| (k.as_str(), TensorView::new(*t, s.clone(), d).unwrap()))
            .collect();
        fs::write(
            path,
            safetensors::serialize(views, None::<HashMap<String, String>>).unwrap(),
        )
        .unwrap();
    };
    // One tensor's values changed: the NEFF differs in that weight's member only.
    let (key, _, _, data) = tensors
        .iter_mut()
        .find(|t| t.3.iter().any(|&b| b != 0))
        .unwrap();
    let key = key.clone();
    data.iter_mut().for_each(|b| *b ^= 0x01);
    let edited_st = d.join("edited.safetensors");
    write(&tensors, &edited_st);
    let edited = d.join("edited.neff");
    let r = import(&model, &edited_st, &edited, &[]);
    assert_eq!(code(&r), 0, "{}", stderr(&r));
    assert!(
        stderr(&r).contains(&format!("changed {key}")),
        "{}",
        stderr(&r)
    );
    let diff = neff(&["diff", s(&model), s(&edited)]);
    assert_eq!(code(&diff), 1, "{}", stdout(&diff));
    let var = key.split('/').nth(1).unwrap();
    assert!(stdout(&diff).contains(var), "{}", stdout(&diff));

    // A tensor naming no weight, and a shape change without --retype.
    let mut unknown = tensors.clone();
    unknown[0].0 = "sg00/nope".into();
    write(&unknown, &edited_st);
    let r = import(&model, &edited_st, &edited, &[]);
    assert_eq!(code(&r), 2, "{}", stderr(&r));
    assert!(
        stderr(&r).contains("tensor \"sg00/nope\" names no weight"),
        "{}",
        stderr(&r)
    );
    let mut reshaped = tensors.clone();
    let t = reshaped
        .iter_mut()
        .find(|t| t.2.len() > 1)
        .expect("a weight of 2 or more dimensions");
    let elements: usize = t.2.iter().product();
    t.2 = vec![elements];
    t.3.iter_mut().for_each(|b| *b = b.wrapping_add(1));
    write(&reshaped, &edited_st);
    let r = import(&model, &edited_st, &edited, &[]);
    assert_eq!(code(&r), 2, "{}", stderr(&r));
    assert!(stderr(&r).contains("retype"), "{}", stderr(&r));
    let r = import(&model, &edited_st, &edited, &["--retype"]);
    assert_eq!(code(&r), 0, "{}", stderr(&r));
}

/// `neff weights MODEL --import TENSORS -o OUT` with `extra` flags.
fn import(model: &Path, tensors: &Path, out: &Path, extra: &[&str]) -> std::process::Output {
    let args = [
        &["weights", s(model), "--import", s(tensors), "-o", s(out)][..],
        extra,
    ]
    .concat();
    neff(&args)
}
