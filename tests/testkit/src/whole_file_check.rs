//! The `whole_file` check: a whole NEFF (header, gzip layers, tar) compared between the
//! runtime's reader and the library entry points behind each command. No
//! fuzzing dependency: `tests/it/whole_file_differential.rs` runs it and
//! gives it libarchive's walk made by `tests/support/libarchive_walk.py`.
//!
//! The runtime runs libarchive on `data_size` bytes after the header only once
//! the header gates (G1–G9) passed. Past them:
//! * libarchive's walk fails ⇒ the loader refuses at G10–G12 and its walk is
//!   not complete; `cat`'s and `diff`'s reader fails too; `unpack` fails;
//! * libarchive's walk ends cleanly ⇒ the loader's walk completes (or it
//!   refuses a construct by name, as the README lists), its member map is
//!   the runtime's (last entry of a key wins, directories and
//!   `*wavegraph-bin.json` skipped) with the same sizes and the same bytes
//!   for every member it keeps; `cat`'s reader lists the same entries;
//!   `unpack` writes each member's bytes.

use std::collections::BTreeMap;
use std::path::{Component, Path, PathBuf};

use neff_loader::{load_buffer, Gate, Loaded, RuntimeProfile};
use neff_tools::{extract_recovering, ExtractLimits};
use neff_writer::DeflateProof;
use sha2::{Digest, Sha256};

use crate::payload_walk::{hex, neff_walk, unhex, Walk};

/// The runtime's member map after a clean walk: key → (size, SHA-256).
pub fn runtime_members(theirs: &Walk) -> BTreeMap<Vec<u8>, (i64, Option<String>)> {
    let mut map = BTreeMap::new();
    for e in &theirs.entries {
        if e.dir {
            continue;
        }
        let name = unhex(&e.name);
        let key = name.strip_prefix(b"./").unwrap_or(&name).to_vec();
        if key.ends_with(b"wavegraph-bin.json") {
            continue;
        }
        map.insert(key, (e.size, e.sha256.clone()));
    }
    map
}

/// Whether the loader refused a construct on purpose (the README's list).
fn refused_by_name(loaded: &Loaded) -> bool {
    loaded.rejection.as_ref().is_some_and(|r| {
        let text = format!("{} {}", r.message, r.detail.as_deref().unwrap_or(""));
        text.contains("Unsupported tar construct")
    })
}

/// Checks one whole file against libarchive's walk of its payload.
pub fn check(bytes: &[u8], theirs: &Walk) {
    let payload = neff_smith::whole_file::payload_of(bytes);
    let profile = RuntimeProfile::default();
    let loaded = load_buffer(Some(bytes), &profile);
    let gate = loaded.rejection.as_ref().map(|r| r.gate);
    let header_refused = gate.is_some_and(|g| g <= Gate::G9);
    if header_refused {
        // The runtime never hands this payload to libarchive.
        return;
    }
    let ours = neff_walk(payload);
    assert!(
        ours.agrees_with(theirs),
        "cat's and diff's reader and libarchive differ:\n  neff:       {}\n  libarchive: {}",
        ours.summary(),
        theirs.summary()
    );
    let by_name = refused_by_name(&loaded);
    let complete = loaded.container.as_ref().is_some_and(|c| c.walk_complete);
    if theirs.failure.is_some() {
        assert!(
            !complete && matches!(gate, Some(Gate::G10 | Gate::G11 | Gate::G12)),
            "libarchive fails ({}) but the loader's walk {} (gate {gate:?})",
            theirs.summary(),
            if complete { "completes" } else { "stops" },
        );
    } else if !by_name {
        assert!(
            complete,
            "libarchive reads the payload ({}) but the loader refuses: {:?}",
            theirs.summary(),
            loaded.rejection
        );
        let container = loaded.container.as_ref().expect("a complete walk");
        let runtime = runtime_members(theirs);
        let shown: BTreeMap<Vec<u8>, u64> = container
            .members
            .iter()
            .map(|m| (m.key.to_vec(), m.size))
            .collect();
        let expected: BTreeMap<Vec<u8>, u64> = runtime
            .iter()
            .map(|(k, (size, _))| (k.clone(), *size as u64))
            .collect();
        assert_eq!(shown, expected, "the member map is not the runtime's");
        for m in container.members.iter() {
            if let (Some(data), Some((_, Some(sha)))) = (m.data, runtime.get(m.key)) {
                assert_eq!(
                    &hex(&Sha256::digest(data)),
                    sha,
                    "the bytes kept of {:?}",
                    m.key
                );
            }
        }
    }
    check_unpack(bytes, theirs, complete && !by_name);
}

/// `unpack` (with its framing recovery, as the CLI runs it): it fails where
/// libarchive fails, and every member it writes holds the runtime's bytes.
fn check_unpack(bytes: &[u8], theirs: &Walk, walk_ok: bool) {
    let dir = tempfile::tempdir().expect("a temp folder");
    let input = dir.path().join("in.neff");
    std::fs::write(&input, bytes).expect("writing the input");
    let dest = dir.path().join("out");
    let result = extract_recovering(
        &input,
        &dest,
        &RuntimeProfile::default(),
        false,
        &ExtractLimits::default(),
        false,
        DeflateProof::DEFAULT,
    );
    if result.is_err() {
        return;
    }
    assert!(
        theirs.failure.is_none(),
        "unpack succeeds where libarchive fails ({})",
        theirs.summary()
    );
    if !walk_ok {
        return;
    }
    let runtime = runtime_members(theirs);
    let mut paths: BTreeMap<PathBuf, usize> = BTreeMap::new();
    for key in runtime.keys() {
        if let Some(path) = plain_path(key) {
            *paths.entry(path).or_default() += 1;
        }
    }
    for (key, (_, sha)) in &runtime {
        let Some(path) = plain_path(key) else {
            continue;
        };
        // Two keys for one path (`a//b`, `a/b`) or a file under a file:
        // which one unpack keeps is not the runtime's concern.
        let shadowed = paths[&path] > 1
            || path
                .ancestors()
                .skip(1)
                .any(|a| runtime.contains_key(a.to_string_lossy().as_bytes()));
        if shadowed {
            continue;
        }
        let Ok(written) = std::fs::read(dest.join(&path)) else {
            panic!("unpack did not write {}", path.display());
        };
        if let Some(sha) = sha {
            assert_eq!(
                &hex(&Sha256::digest(&written)),
                sha,
                "unpacked {}",
                path.display()
            );
        }
    }
}

/// A key as a plain relative path (UTF-8, no `..`, not absolute), else None.
fn plain_path(key: &[u8]) -> Option<PathBuf> {
    let text = std::str::from_utf8(key).ok()?;
    if text.is_empty()
        || text.ends_with('/')
        || text.bytes().any(|b| b < 0x20 || b == 0x7f || b == b'\\')
    {
        return None;
    }
    let path = Path::new(text);
    path.components()
        .all(|c| matches!(c, Component::Normal(_) | Component::CurDir))
        .then(|| {
            path.components()
                .filter(|c| matches!(c, Component::Normal(_)))
                .collect()
        })
}
