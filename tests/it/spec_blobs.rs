//! A build spec file reads its blobs from its own folder only, unless
//! `--blob-root` names another: a spec from elsewhere cannot pack
//! `/etc/shadow`. The lift says which root its spec needs.

use std::path::Path;

use crate::common::{code, neff, s, stderr, write_model_tree};

const SPEC: &str = r#"{"subgraphs": [{"name": "sg00",
  "inputs": [{"name": "x", "dtype": "float32", "shape": [4]}],
  "outputs": [{"name": "y", "dtype": "float32", "shape": [4]}]}],
  "members": {"extra.txt": "BLOB"}}"#;

/// `neff build SPEC -o OUT`, with `--blob-root ROOT` when given.
fn build(spec: &Path, out: &Path, root: Option<&Path>) -> std::process::Output {
    let mut args = vec!["build", s(spec), "-o", s(out), "-q", "--no-fsync"];
    if let Some(root) = root {
        args.extend(["--blob-root", s(root)]);
    }
    neff(&args)
}

fn spec_naming(dir: &Path, blob: &str) -> std::path::PathBuf {
    let spec = dir.join("specs/spec.json");
    std::fs::create_dir_all(spec.parent().unwrap()).unwrap();
    std::fs::write(&spec, SPEC.replace("BLOB", blob)).unwrap();
    spec
}

#[test]
fn blobs_outside_the_spec_folder_need_a_named_root() {
    let tmp = tempfile::tempdir().unwrap();
    let other = tmp.path().join("other");
    std::fs::create_dir(&other).unwrap();
    std::fs::write(other.join("secret.txt"), b"not the spec's").unwrap();
    let out = tmp.path().join("out.neff");
    let inside = tmp.path().join("specs/inside.txt");
    std::fs::create_dir_all(inside.parent().unwrap()).unwrap();
    std::fs::write(&inside, b"the spec's").unwrap();
    #[cfg(unix)]
    std::os::unix::fs::symlink(other.join("secret.txt"), tmp.path().join("specs/link")).unwrap();
    let absolute = other.join("secret.txt");
    let mut outside = vec!["../other/secret.txt", s(&absolute)];
    if cfg!(unix) {
        outside.push("link");
    }
    for blob in outside {
        let spec = spec_naming(tmp.path(), blob);
        let refused = build(&spec, &out, None);
        assert_eq!(code(&refused), 2, "{blob}: {refused:?}");
        assert!(
            stderr(&refused).contains("lies outside the spec's folder"),
            "{refused:?}"
        );
        assert!(!out.exists(), "{blob}: nothing is written");
        let allowed = build(&spec, &out, Some(&other));
        assert!(allowed.status.success(), "{blob}: {allowed:?}");
        std::fs::remove_file(&out).unwrap();
    }
    let spec = spec_naming(tmp.path(), "inside.txt");
    let built = build(&spec, &out, None);
    assert!(built.status.success(), "{built:?}");
}

#[test]
fn a_lift_whose_tree_is_elsewhere_names_the_root_its_spec_needs() {
    let tmp = tempfile::tempdir().unwrap();
    let tree = tmp.path().join("model");
    write_model_tree(&tree);
    let packed = tmp.path().join("m.neff");
    assert!(
        neff(&["pack", s(&tree), "-o", s(&packed), "-q", "--no-fsync"])
            .status
            .success()
    );
    let (unpacked, spec) = (tmp.path().join("a/tree"), tmp.path().join("b/spec.json"));
    std::fs::create_dir_all(spec.parent().unwrap()).unwrap();
    let lifted = neff(&["unpack", s(&packed), "-o", s(&unpacked), "--spec", s(&spec)]);
    assert!(lifted.status.success(), "{lifted:?}");
    assert!(
        stderr(&lifted).contains(&format!("--blob-root {}", s(&unpacked))),
        "{lifted:?}"
    );
    let out = tmp.path().join("rebuilt.neff");
    let refused = build(&spec, &out, None);
    assert_eq!(code(&refused), 2, "{refused:?}");
    let built = build(&spec, &out, Some(&unpacked));
    assert!(built.status.success(), "{built:?}");
    assert_eq!(
        std::fs::read(&out).unwrap(),
        std::fs::read(&packed).unwrap()
    );
}
