//! Sets the cfgs that mark tests ignored, not passed, where what they need
//! is missing:
//! * `neff_real_neffs` when `../shared/real-neffs` (the real compiler NEFFs
//!   the tests check) is beside the repository;
//! * `neff_libarchive` when the Python named by `NEFF_LIBARCHIVE_PYTHON`
//!   (default `python3`) imports `libarchive` (libarchive-c) and `archi`
//!   (the wheel that bundles libarchive 3.8), which the differential test
//!   against the runtime's reader drives.

use std::path::Path;
use std::process::Command;

fn main() {
    println!("cargo::rustc-check-cfg=cfg(neff_real_neffs)");
    println!("cargo::rustc-check-cfg=cfg(neff_libarchive)");
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../shared/real-neffs");
    println!("cargo::rerun-if-changed={}", dir.display());
    if dir.is_dir() {
        println!("cargo::rustc-cfg=neff_real_neffs");
    }
    println!("cargo::rerun-if-env-changed=NEFF_LIBARCHIVE_PYTHON");
    let python = std::env::var("NEFF_LIBARCHIVE_PYTHON").unwrap_or_else(|_| "python3".into());
    let found = Command::new(python)
        .args(["-c", "import archi, libarchive"])
        .output()
        .is_ok_and(|o| o.status.success());
    if found {
        println!("cargo::rustc-cfg=neff_libarchive");
    }
}
