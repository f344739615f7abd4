//! Whole NEFF files (header, gzip layers, tar) read by the real libarchive 3.8
//! and by every command: the `whole_file` fuzz target's check
//! ([`crate::whole_file_check`]) replayed on the regressions it found
//! (`tests/regressions/whole-file-*.neff`) and on 300 files drawn by
//! `neff_smith::whole_file` from the example models, then the same files
//! through the CLI: `neff verify` refuses every file whose payload
//! libarchive cannot read, and `neff cat` prints the runtime's bytes of
//! `neff.json` or fails where the runtime has none.
//!
//! Needs Python with `libarchive-c` and the `archi` wheel, as
//! `libarchive_differential` does; ignored without them.

use std::path::{Path, PathBuf};
use std::process::Command;

use neff_loader::{load_buffer, Gate, RuntimeProfile};
use neff_smith::whole_file::{draw, payload_of, Template};
use sha2::{Digest, Sha256};

use crate::libarchive_differential::theirs;
use crate::payload_walk::{hex, neff_walk, Walk};
use crate::whole_file_check::runtime_members;

/// Files drawn per run (each example model is a template in turn).
const DRAWN: usize = 300;

/// The cases: the committed regressions, then the drawn files.
fn cases(dir: &Path) -> Vec<PathBuf> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut out: Vec<PathBuf> = std::fs::read_dir(root.join("tests/regressions"))
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .filter(|p| {
            p.file_name()
                .and_then(|n| n.to_str())
                .is_some_and(|n| n.starts_with("whole-file-") && n.ends_with(".neff"))
        })
        .collect();
    out.sort();
    let templates: Vec<Template> = ["allreduce", "weights", "two-subgraphs", "cayman-ucode"]
        .iter()
        .map(|name| {
            let path = root.join(format!("fuzz/seeds/read_verify/{name}.neff"));
            Template::of(&std::fs::read(path).unwrap()).expect("an example walks")
        })
        .collect();
    let mut state = 0x9e37_79b9_7f4a_7c15u64;
    let mut drawn = 0;
    while drawn < DRAWN {
        let bytes: Vec<u8> = (0..2048)
            .map(|_| {
                state ^= state << 13;
                state ^= state >> 7;
                state ^= state << 17;
                (state >> 24) as u8
            })
            .collect();
        let template = &templates[drawn % templates.len()];
        let Ok(file) = draw(&mut arbitrary::Unstructured::new(&bytes), template) else {
            continue;
        };
        let path = dir.join(format!("drawn-{drawn:03}.neff"));
        std::fs::write(&path, &file.bytes).unwrap();
        out.push(path);
        drawn += 1;
    }
    out
}

/// The runtime's bytes of `neff.json` after a clean walk (its SHA-256),
/// `None` when there is none or the walk failed.
fn runtime_neff_json(walk: &Walk) -> Option<String> {
    if walk.failure.is_some() {
        return None;
    }
    runtime_members(walk).remove(&b"neff.json"[..])?.1
}

#[test]
#[cfg_attr(
    not(neff_libarchive),
    ignore = "Python with libarchive-c and archi (libarchive 3.8) is missing"
)]
fn whole_files_read_as_libarchive_3_8_reads_them_in_every_command() {
    let tmp = tempfile::tempdir().unwrap();
    let paths = cases(tmp.path());
    let walks = theirs(&paths, tmp.path());
    let neff = env!("CARGO_BIN_EXE_neff");
    let mut failures = Vec::new();
    for (path, walk) in paths.iter().zip(&walks) {
        let bytes = std::fs::read(path).unwrap();
        let name = path.file_name().unwrap().to_string_lossy().into_owned();
        if let Err(panic) =
            std::panic::catch_unwind(|| crate::whole_file_check::check(&bytes, walk))
        {
            let why = panic
                .downcast_ref::<String>()
                .cloned()
                .or_else(|| panic.downcast_ref::<&str>().map(|s| s.to_string()))
                .unwrap_or_default();
            failures.push(format!("{name}: {why}"));
            continue;
        }
        // The CLI: a payload libarchive cannot read is never accepted.
        let verify = Command::new(neff).arg("verify").arg(path).output().unwrap();
        if walk.failure.is_some() && verify.status.success() {
            failures.push(format!(
                "{name}: neff verify accepts; libarchive: {}",
                walk.summary()
            ));
        }
        // `neff cat` prints the runtime's neff.json, or fails without one.
        // (A payload the header gates refuse never reaches libarchive.)
        let loaded = load_buffer(Some(&bytes), &RuntimeProfile::default());
        let header_refused = loaded
            .rejection
            .as_ref()
            .is_some_and(|r| r.gate <= Gate::G9);
        let refused_by_name = neff_walk(payload_of(&bytes))
            .failure
            .is_some_and(|f| f.contains("Unsupported tar construct"));
        let cat = Command::new(neff)
            .args(["cat", "--force"])
            .arg(path)
            .arg("neff.json")
            .output()
            .unwrap();
        match runtime_neff_json(walk) {
            Some(sha) if !header_refused && !refused_by_name => {
                if !cat.status.success() || hex(&Sha256::digest(&cat.stdout)) != sha {
                    failures.push(format!(
                        "{name}: neff cat neff.json gives {} ({}), the runtime reads {}",
                        if cat.status.success() {
                            "other bytes"
                        } else {
                            "an error"
                        },
                        String::from_utf8_lossy(&cat.stderr).trim(),
                        &sha[..12]
                    ));
                }
            }
            _ if header_refused || refused_by_name => {}
            _ => {
                if cat.status.success() {
                    failures.push(format!(
                        "{name}: neff cat prints a neff.json the runtime does not have ({})",
                        walk.summary()
                    ));
                }
            }
        }
    }
    let clean = walks.iter().filter(|w| w.failure.is_none()).count();
    let with_json = walks
        .iter()
        .filter(|w| runtime_neff_json(w).is_some())
        .count();
    eprintln!(
        "{} whole files: libarchive reads {clean} to the end, {with_json} with a neff.json",
        paths.len()
    );
    // The draws must reach both outcomes, or the comparison proves little.
    assert!(
        clean >= paths.len() / 10 && clean <= paths.len() * 9 / 10,
        "{clean} clean walks"
    );
    assert!(
        failures.is_empty(),
        "{} of {} whole files differ:\n{}",
        failures.len(),
        paths.len(),
        failures.join("\n")
    );
}
