//! `unpack` writes no member under a name of neff's own temp namespace (an
//! output's temp file `.<name>.neff-tmp.<pid>.<n>`, an unpack's temp folder
//! `.neff-unpack.<pid>.<x>`): a later run could take such a file for a stale
//! temp and delete it, or refuse to pack the tree.

use std::process::Command;

use crate::common::{code, neff, s, stderr, write_model_tree};

#[test]
fn members_named_like_neff_temp_files_are_refused_by_name() {
    let script = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/scripts/independent_neff.py"
    );
    for forged in [".out.neff.neff-tmp.1.0", ".neff-unpack.1.x/m"] {
        let tmp = tempfile::tempdir().unwrap();
        let tree = tmp.path().join("tree");
        write_model_tree(&tree);
        let path = tree.join(forged);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(&path, b"a user's file").unwrap();
        let file = tmp.path().join("m.neff");
        let written = Command::new("python3")
            .args([script, s(&tree), s(&file), "pax"])
            .output()
            .expect("python3 is required by this test");
        assert!(written.status.success(), "{written:?}");
        let out = tmp.path().join("out");
        let r = neff(&["unpack", s(&file), "-o", s(&out)]);
        assert_eq!(code(&r), 2, "{forged}: {r:?}");
        assert!(
            stderr(&r).contains("neff's temp namespace"),
            "{forged}: {r:?}"
        );
        assert!(!out.join(forged).exists(), "{forged}");
    }
}
