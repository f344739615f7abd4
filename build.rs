//! Sets `cfg(neff_real_neffs)` when `../shared/real-neffs` (the real compiler
//! NEFFs the tests check) is beside the repository, so that the tests that
//! need it are marked ignored, not passed, where it is missing.

use std::path::Path;

fn main() {
    println!("cargo::rustc-check-cfg=cfg(neff_real_neffs)");
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../shared/real-neffs");
    println!("cargo::rerun-if-changed={}", dir.display());
    if dir.is_dir() {
        println!("cargo::rustc-cfg=neff_real_neffs");
    }
}
