//! NEFFs inside other files: a compile-cache HLO module (`wrapped_neff.hlo`)
//! and a torch-neuron(x) TorchScript zip (`model.neuron`). Every command
//! reads them as the NEFF inside, found by parsing the carrier; `extract`
//! writes one out byte for byte. The carriers here come from the real files
//! in `../shared/real-neffs/` and from an independent writer (Python's
//! zipfile and a hand-encoded protobuf, `tests/scripts/carriers.py`), with
//! two NEFFs each; damaged ones get errors, never a panic.

use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::Value;

use crate::common::{code, neff, s, stderr, stdout, write_model_tree};

const SCRIPT: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/scripts/carriers.py");

fn json(args: &[&str]) -> Value {
    let out = neff(args);
    assert!(
        out.status.success() || code(&out) == 1,
        "neff {args:?}: {out:?}"
    );
    serde_json::from_slice(&out.stdout).unwrap_or_else(|e| panic!("{args:?}: {e}: {out:?}"))
}

/// `value` without the keys that name the file read.
fn without_names(mut value: Value) -> Value {
    if let Some(object) = value.as_object_mut() {
        object.remove("file");
        object.remove("carried");
        if let Some(verdict) = object.get_mut("verdict").and_then(Value::as_object_mut) {
            verdict.remove("file");
        }
    }
    value
}

/// `neff ARGS`, with `--index N` when `index` is set.
fn picked(args: &[&str], index: Option<usize>) -> std::process::Output {
    let n = index.map(|i| i.to_string());
    let mut all = args.to_vec();
    if let Some(n) = &n {
        all.extend(["--index", n.as_str()]);
    }
    neff(&all)
}

/// [`picked`]'s JSON output.
fn picked_json(args: &[&str], index: Option<usize>) -> Value {
    let out = picked(args, index);
    assert!(matches!(code(&out), 0 | 1), "neff {args:?}: {out:?}");
    serde_json::from_slice(&out.stdout).unwrap_or_else(|e| panic!("{args:?}: {e}: {out:?}"))
}

/// Every command on `carrier` reads what it does on `inner`, the NEFF it
/// carries (number `index` of several).
fn reads_as(carrier: &Path, inner: &Path, index: Option<usize>, tmp: &Path) {
    let what = carrier.display().to_string();
    let inspected = picked_json(&["inspect", "--json", s(carrier)], index);
    assert_eq!(inspected["carried"]["index"], index.unwrap_or(0), "{what}");
    assert_eq!(
        without_names(inspected),
        without_names(json(&["inspect", "--json", s(inner)])),
        "{what}: inspect"
    );
    assert_eq!(
        without_names(picked_json(
            &["inspect", "--memory", "--json", s(carrier)],
            index
        )),
        without_names(json(&["inspect", "--memory", "--json", s(inner)])),
        "{what}: --memory"
    );
    let verified = picked(&["verify", "-q", s(carrier)], index);
    assert_eq!(
        code(&verified),
        code(&neff(&["verify", "-q", s(inner)])),
        "{what}: verify"
    );

    let cat = picked(&["cat", s(carrier), "neff.json"], index);
    assert_eq!(
        cat.stdout,
        neff(&["cat", s(inner), "neff.json"]).stdout,
        "{what}: cat"
    );
    let diff = picked(&["diff", "-q", s(carrier), s(inner)], index);
    assert_eq!(code(&diff), 0, "{what}: diff says they differ: {diff:?}");

    let out = tmp.join("extracted.neff");
    let extracted = picked(
        &["extract", s(carrier), "-o", s(&out), "--no-fsync", "-q"],
        index,
    );
    assert!(extracted.status.success(), "{what}: {extracted:?}");
    assert_eq!(
        std::fs::read(&out).unwrap(),
        std::fs::read(inner).unwrap(),
        "{what}: extract"
    );

    let (tree, spec, built) = (
        tmp.join("tree"),
        tmp.join("spec.json"),
        tmp.join("built.neff"),
    );
    let lifted = picked(
        &[
            "unpack",
            s(carrier),
            "-o",
            s(&tree),
            "--spec",
            s(&spec),
            "-q",
        ],
        index,
    );
    assert!(lifted.status.success(), "{what}: {lifted:?}");
    let build = neff(&["build", s(&spec), "-o", s(&built), "-q", "--no-fsync"]);
    assert!(build.status.success(), "{what}: {build:?}");
    assert_eq!(
        std::fs::read(&built).unwrap(),
        std::fs::read(inner).unwrap(),
        "{what}: lift"
    );
}

#[test]
#[cfg_attr(
    not(neff_real_neffs),
    ignore = "real NEFFs missing: set NEFF_REAL_NEFFS (default ../shared/real-neffs), see tests/real-neffs.md"
)]
fn the_real_carriers_read_as_the_neff_inside() {
    let Some(dir) = crate::common::real_neff_dir() else {
        return;
    };
    for (carrier, inner, offset) in [
        (
            "ncc2.24_nki-moe-megakernel_wrapped_neff.hlo",
            "ncc2.24_nki-moe-megakernel_ref_ws3.neff",
            1680,
        ),
        (
            "ncc2.6_optimum-neuron_neuronx_model.neuron",
            "ncc2.6_optimum-neuron_neuronx_model.neff",
            230,
        ),
    ] {
        let tmp = tempfile::tempdir().unwrap();
        let listed = json(&["extract", "--list", "--json", s(&dir.join(carrier))]);
        assert_eq!(
            listed["neffs"][0]["offset"], offset,
            "{carrier}: {listed:#}"
        );
        assert_eq!(listed["neffs"].as_array().unwrap().len(), 1, "{carrier}");
        reads_as(&dir.join(carrier), &dir.join(inner), None, tmp.path());
    }
}

/// Two different NEFFs packed from the minimal model.
pub(crate) fn two_neffs(tmp: &Path) -> [PathBuf; 2] {
    let tree = tmp.join("model");
    write_model_tree(&tree);
    let out = |name: &str, framing: &str| {
        let path = tmp.join(name);
        let packed = neff(&[
            "pack",
            s(&tree),
            "-o",
            s(&path),
            "--framing",
            framing,
            "-q",
            "--no-fsync",
        ]);
        assert!(packed.status.success(), "{packed:?}");
        path
    };
    [out("a.neff", "gnu"), out("b.neff", "neuronx-cc-2.27")]
}

pub(crate) fn carrier(kind: &str, out: &Path, neffs: &[PathBuf]) {
    let run = Command::new("python3")
        .arg(SCRIPT)
        .arg(kind)
        .arg(out)
        .args(neffs)
        .output()
        .expect("python3 is required by this test (apt-get install -y python3)");
    assert!(run.status.success(), "{run:?}");
}

#[test]
fn carriers_from_an_independent_writer_hold_two_neffs_each() {
    let tmp = tempfile::tempdir().unwrap();
    let neffs = two_neffs(tmp.path());
    let folder = tmp.path().join("carriers");
    std::fs::create_dir(&folder).unwrap();
    for (kind, name) in [
        ("hlo", "wrapped.hlo"),
        ("zip-stored", "stored.neuron"),
        ("zip-deflated", "deflated.neuron"),
    ] {
        let path = folder.join(name);
        carrier(kind, &path, &neffs);
        let listed = json(&["extract", "--list", "--json", s(&path)]);
        let listed = listed["neffs"].as_array().unwrap();
        assert_eq!(listed.len(), 2, "{kind}: {listed:?}");
        // Where the carrier stores a NEFF as it is, it lies at the offset said.
        let bytes = std::fs::read(&path).unwrap();
        for (entry, neff) in listed.iter().zip(&neffs) {
            let want = std::fs::read(neff).unwrap();
            match entry["offset"].as_u64() {
                Some(at) => assert_eq!(
                    &bytes[at as usize..at as usize + want.len()],
                    &want[..],
                    "{kind}"
                ),
                None => assert_eq!(kind, "zip-deflated"),
            }
        }
        // Several NEFFs and no --index: the commands that read one list them.
        let unpicked = neff(&["inspect", s(&path)]);
        assert_eq!(code(&unpicked), 2, "{kind}: {unpicked:?}");
        assert!(
            stderr(&unpicked).contains("carries 2 NEFFs; pick one"),
            "{kind}: {unpicked:?}"
        );
        let beyond = neff(&["inspect", "--index", "2", s(&path)]);
        assert!(
            stderr(&beyond).contains("--index 2: the file carries 2 NEFFs"),
            "{beyond:?}"
        );
        for (index, inner) in neffs.iter().enumerate() {
            let sub = tmp.path().join(format!("{kind}-{index}"));
            std::fs::create_dir(&sub).unwrap();
            reads_as(&path, inner, Some(index), &sub);
        }
    }
    // A folder's carriers give one verdict per NEFF, named FILE[N].
    let many = neff(&["verify", s(&folder)]);
    let text = stdout(&many);
    assert!(text.contains("wrapped.hlo[1]: ACCEPTED"), "{text}");
    assert!(
        text.ends_with("6 accepted, 0 refused, 0 errors\n"),
        "{text}"
    );
}

#[test]
fn damaged_carriers_are_errors_that_say_what_and_where() {
    let tmp = tempfile::tempdir().unwrap();
    let neffs = two_neffs(tmp.path());
    for (kind, name) in [
        ("hlo", "c.hlo"),
        ("zip-stored", "c.neuron"),
        ("zip-deflated", "d.neuron"),
    ] {
        let path = tmp.path().join(name);
        carrier(kind, &path, &neffs);
        let whole = std::fs::read(&path).unwrap();
        let cuts = [
            1,
            7,
            40,
            whole.len() / 3,
            whole.len() / 2,
            whole.len() - 30,
            whole.len() - 1,
        ];
        for (i, cut) in cuts.into_iter().enumerate() {
            let mut bytes = whole.clone();
            if i % 2 == 0 {
                bytes.truncate(cut);
            } else {
                bytes[cut] ^= 0x5a;
            }
            let damaged = tmp.path().join(format!("damaged-{i}-{name}"));
            std::fs::write(&damaged, &bytes).unwrap();
            for args in [
                vec!["extract", "--list", s(&damaged)],
                vec!["inspect", "--index", "0", s(&damaged)],
                vec!["verify", s(&damaged)],
            ] {
                let out = neff(&args);
                let err = stderr(&out);
                assert!(matches!(code(&out), 0..=2), "{args:?}: {out:?}");
                assert!(!err.contains("panicked"), "{args:?}: {err}");
                if code(&out) == 2 {
                    assert!(
                        err.contains(name),
                        "{args:?}: the error names no file: {err}"
                    );
                }
            }
        }
    }
    // An HLO module over the bound is refused before it is read.
    let big = tmp.path().join("big.hlo");
    std::fs::File::create(&big)
        .unwrap()
        .set_len((256 << 20) + 1)
        .unwrap();
    let out = neff(&["inspect", s(&big)]);
    assert_eq!(code(&out), 2, "{out:?}");
    assert!(stderr(&out).contains("over the 256 MiB read"), "{out:?}");
}

#[test]
fn help_of_extract_matches_the_golden_file() {
    let r = neff(&["extract", "--help"]);
    assert_eq!(code(&r), 0);
    crate::common::golden_text("help-extract.txt", &stdout(&r));
}
