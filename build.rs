//! Sets the cfgs that mark tests ignored, not passed, where what they need
//! is missing:
//! * `neff_real_neffs` when the folder of real compiler NEFFs the tests check
//!   exists: `NEFF_REAL_NEFFS` names it (relative to the repository), default
//!   `../shared/real-neffs` (also when empty); its absolute path is `NEFF_REAL_NEFFS_DIR` to the
//!   tests either way. Only a folder that exists is watched: cargo takes a
//!   missing watched path as changed and would rebuild every time. A folder
//!   added after a build is seen once the setting changes or the build
//!   script runs again;
//! * `neff_libarchive` when the Python named by `NEFF_LIBARCHIVE_PYTHON`
//!   (default `python3`) imports `libarchive` (libarchive-c) and `archi`
//!   (the wheel that bundles libarchive 3.8), which the differential test
//!   against the runtime's reader drives;
//! * `neff_gnu_time` when GNU time is at `/usr/bin/time` (peak-RSS checks),
//!   `neff_strace` when `strace` can trace a child here (fsync counts),
//!   `neff_jsonschema` when `python3` imports `jsonschema` (the schema checks),
//!   and `neff_setpriv` when `setpriv` can run a program as `nobody` (as root:
//!   the permission checks).

use std::path::Path;
use std::process::Command;

fn main() {
    println!("cargo::rustc-check-cfg=cfg(neff_real_neffs)");
    println!("cargo::rustc-check-cfg=cfg(neff_libarchive)");
    for cfg in [
        "neff_gnu_time",
        "neff_strace",
        "neff_jsonschema",
        "neff_setpriv",
    ] {
        println!("cargo::rustc-check-cfg=cfg({cfg})");
    }
    let runs = |program: &str, args: &[&str]| {
        Command::new(program)
            .args(args)
            .output()
            .is_ok_and(|o| o.status.success())
    };
    // Installing a tool (apt-get) changes /usr/bin: probe again then.
    if Path::new("/usr/bin").is_dir() {
        println!("cargo::rerun-if-changed=/usr/bin");
    }
    if runs("/usr/bin/time", &["-f", "%M", "true"]) {
        println!("cargo::rustc-cfg=neff_gnu_time");
    }
    if runs("strace", &["-o", "/dev/null", "true"]) {
        println!("cargo::rustc-cfg=neff_strace");
    }
    let nobody = ["--reuid=65534", "--regid=65534", "--clear-groups", "true"];
    if runs("setpriv", &nobody) {
        println!("cargo::rustc-cfg=neff_setpriv");
    }
    if runs("python3", &["-c", "import jsonschema"]) {
        println!("cargo::rustc-cfg=neff_jsonschema");
    }
    println!("cargo::rerun-if-env-changed=NEFF_REAL_NEFFS");
    let setting = std::env::var_os("NEFF_REAL_NEFFS")
        .filter(|s| !s.is_empty())
        .unwrap_or_else(|| "../shared/real-neffs".into());
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join(setting);
    println!("cargo::rustc-env=NEFF_REAL_NEFFS_DIR={}", dir.display());
    if dir.is_dir() {
        println!("cargo::rerun-if-changed={}", dir.display());
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
