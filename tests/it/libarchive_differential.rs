//! The payload walk against the real libarchive 3.8 (the runtime's reader).
//!
//! Every payload is walked twice: by this crate's reader (the gzip and tar
//! readers `neff verify` uses, through [`neff::loader::payload_stream`]) and
//! by libarchive through `tests/support/libarchive_walk.py`, which makes the
//! runtime's calls. Both list every entry (name, directory or not, size,
//! SHA-256 of the data read) and whether the walk ended cleanly; they must
//! agree. The sets: the real NEFFs, the fixtures, corpus seeds, and the
//! tar/gzip dialect cases built here.
//!
//! Needs Python with `libarchive-c` and the `archi` wheel (it bundles
//! libarchive 3.8): `NEFF_LIBARCHIVE_PYTHON` names that Python (default
//! `python3`). Without them the test is ignored (the root build script sets
//! `cfg(neff_libarchive)` when they import); `.ci/run` installs them.

use crate::common;

use std::path::{Path, PathBuf};
use std::process::Command;

use crate::payload_walk::{neff_walk, Listed, Walk};
use serde_json::Value;

/// libarchive's walks of `paths`, in order.
pub(crate) fn theirs(paths: &[PathBuf], tmp: &Path) -> Vec<Walk> {
    let python = std::env::var("NEFF_LIBARCHIVE_PYTHON").unwrap_or_else(|_| "python3".into());
    let find = Command::new(&python)
        .args(["-c", "import archi, glob, os; d = os.path.join(os.path.dirname(archi.__file__), 'archi.libs'); print(sorted(glob.glob(os.path.join(d, 'libarchive*.so*')))[0])"])
        .output()
        .expect("python");
    assert!(find.status.success(), "the archi wheel: {find:?}");
    let lib = String::from_utf8(find.stdout).unwrap().trim().to_string();
    let list = tmp.join("list.json");
    std::fs::write(&list, serde_json::to_vec(paths).unwrap()).unwrap();
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/support/libarchive_walk.py");
    let out = Command::new(&python)
        .arg(script)
        .arg(&list)
        .env("LIBARCHIVE", &lib)
        .output()
        .expect("python");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let doc: Value = serde_json::from_slice(&out.stdout).unwrap();
    let version = doc["libarchive"].as_str().unwrap();
    assert!(version.starts_with("libarchive 3.8."), "{version}");
    doc["results"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| {
            let entries = r["entries"]
                .as_array()
                .unwrap()
                .iter()
                .map(|e| Listed {
                    name: e["name"].as_str().unwrap().to_string(),
                    dir: e["dir"].as_bool().unwrap(),
                    size: e["size"].as_i64().unwrap(),
                    sha256: e["sha256"].as_str().map(str::to_string),
                })
                .collect::<Vec<_>>();
            let end = &r["end"];
            let failure = (end["stage"] != "eof").then(|| end.to_string());
            let mut walk = Walk { entries, failure };
            // A short data read: the bytes read before it are not compared.
            if walk
                .failure
                .as_deref()
                .is_some_and(|f| f.contains("\"data\""))
            {
                if let Some(last) = walk.entries.last_mut() {
                    last.sha256 = None;
                }
            }
            walk
        })
        .collect()
}

/// Every file below `dir`.
fn walk_files(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    for e in std::fs::read_dir(dir).unwrap().flatten() {
        let path = e.path();
        if path.is_dir() {
            out.extend(walk_files(&path));
        } else {
            out.push(path);
        }
    }
    out.sort();
    out
}

/// The payload bytes of a NEFF file (header `data_size` after 1 KiB).
fn payload_of(neff: &[u8]) -> Vec<u8> {
    let size = u64::from_le_bytes(neff[0x10..0x18].try_into().unwrap()) as usize;
    neff[1024..(1024 + size).min(neff.len())].to_vec()
}

/// Compares both walks of every case; returns the mismatches as text.
fn compare(cases: &[(String, Vec<u8>)], tmp: &Path) -> Vec<String> {
    let mut paths = Vec::new();
    for (i, (_, payload)) in cases.iter().enumerate() {
        let path = tmp.join(format!("case{i}.bin"));
        std::fs::write(&path, payload).unwrap();
        paths.push(path);
    }
    let theirs = theirs(&paths, tmp);
    let mut mismatches = Vec::new();
    for ((name, payload), theirs) in cases.iter().zip(theirs) {
        let ours = neff_walk(payload);
        let same = ours.agrees_with(&theirs);
        if !same {
            mismatches.push(format!(
                "{name}:\n  ours:   {}\n  theirs: {}",
                ours.summary(),
                theirs.summary()
            ));
        }
    }
    mismatches
}

#[test]
#[cfg_attr(
    not(neff_libarchive),
    ignore = "Python with libarchive-c and archi (libarchive 3.8) is missing"
)]
fn every_payload_walks_as_libarchive_3_8_walks_it() {
    let tmp = tempfile::tempdir().unwrap();
    let mut cases: Vec<(String, Vec<u8>)> = Vec::new();
    for path in crate::common::real_neff_files_if_any() {
        let bytes = std::fs::read(&path).unwrap();
        cases.push((path.display().to_string(), payload_of(&bytes)));
    }
    for (name, payload) in dialects::cases() {
        cases.push((name.clone(), payload.clone()));
        cases.push((format!("{name} (gzip)"), common::gzip(&payload)));
    }
    for (name, payload) in dialects::gzip_cases() {
        cases.push((name, payload));
    }
    // The fixtures and a corpus of generated seeds (valid and invalid).
    let neff = env!("CARGO_BIN_EXE_neff");
    let fixtures = tmp.path().join("fixtures");
    let corpus = tmp.path().join("corpus");
    for args in [
        vec!["fixtures", "-o", fixtures.to_str().unwrap()],
        vec![
            "corpus",
            "-o",
            corpus.to_str().unwrap(),
            "--count",
            "150",
            "--seed",
            "23",
            "--invalid-ratio",
            "0.5",
        ],
    ] {
        let out = Command::new(neff).args(&args).output().unwrap();
        assert!(out.status.success(), "{args:?}: {out:?}");
    }
    for dir in [&fixtures, &corpus] {
        for path in walk_files(dir) {
            if path.extension().is_some_and(|e| e == "neff") {
                let bytes = std::fs::read(&path).unwrap();
                if bytes.len() >= 1024 {
                    cases.push((path.display().to_string(), payload_of(&bytes)));
                }
            }
        }
    }
    let total = cases.len();
    let mismatches = compare(&cases, tmp.path());
    assert!(
        mismatches.is_empty(),
        "{} of {total} payloads walk differently:\n{}",
        mismatches.len(),
        mismatches.join("\n")
    );
    eprintln!("{total} payloads walk as libarchive 3.8 walks them");
}

/// Tar and gzip constructs, each after valid members (the shapes of issue 23
/// and more from libarchive's readers).
mod dialects {
    use super::common::{fix_checksum, gzip};

    /// A header block: `name`, type, size field, magic+version.
    pub fn header(name: &[u8], kind: u8, size: u64, magic: &[u8; 8]) -> [u8; 512] {
        let mut h = [0u8; 512];
        h[..name.len().min(100)].copy_from_slice(&name[..name.len().min(100)]);
        h[100..108].copy_from_slice(b"0000644\0");
        h[108..116].copy_from_slice(b"0000000\0");
        h[116..124].copy_from_slice(b"0000000\0");
        h[124..136].copy_from_slice(format!("{size:011o}\0").as_bytes());
        h[136..148].copy_from_slice(b"00000000000\0");
        h[156] = kind;
        h[257..265].copy_from_slice(magic);
        fix_checksum(&mut h);
        h
    }

    pub const USTAR: &[u8; 8] = b"ustar\x0000";
    pub const GNU: &[u8; 8] = b"ustar  \0";

    /// `header` plus data padded to 512.
    pub fn member(name: &[u8], kind: u8, data: &[u8], magic: &[u8; 8]) -> Vec<u8> {
        let mut out = header(name, kind, data.len() as u64, magic).to_vec();
        pad(&mut out, data);
        out
    }

    fn pad(out: &mut Vec<u8>, data: &[u8]) {
        out.extend_from_slice(data);
        out.resize(out.len().div_ceil(512) * 512, 0);
    }

    /// A special header (`x`, `g`, `L`, `K`, …) with `body`.
    pub fn special(kind: u8, body: &[u8]) -> Vec<u8> {
        member(b"././@Special", kind, body, USTAR)
    }

    /// pax records from (key, value) pairs.
    pub fn pax(records: &[(&str, &[u8])]) -> Vec<u8> {
        let mut out = Vec::new();
        for (key, value) in records {
            let body_len = key.len() + value.len() + 3;
            let mut len = body_len + 1;
            while format!("{len}").len() + body_len != len {
                len = format!("{}", len).len() + body_len;
            }
            out.extend_from_slice(format!("{len} {key}=").as_bytes());
            out.extend_from_slice(value);
            out.push(b'\n');
        }
        out
    }

    /// A valid start: `neff.json` and `sg00/def.json`.
    fn start() -> Vec<u8> {
        let mut out = member(b"neff.json", b'0', b"{\"a\":1}", USTAR);
        out.extend(member(b"sg00/def.json", b'0', b"{\"b\":2}", USTAR));
        out
    }

    /// `start`, `tail`, then two zero blocks.
    fn archive(tail: &[u8]) -> Vec<u8> {
        let mut out = start();
        out.extend_from_slice(tail);
        out.extend_from_slice(&[0u8; 1024]);
        out
    }

    fn cat(parts: &[&[u8]]) -> Vec<u8> {
        parts.concat()
    }

    /// Every tar case, raw.
    pub fn cases() -> Vec<(String, Vec<u8>)> {
        let data = b"{\"evil\":true}";
        let file = |name: &[u8]| member(name, b'0', data, USTAR);
        let with_size = |mut h: [u8; 512], field: &[u8]| {
            h[124..136].fill(0);
            h[124..124 + field.len()].copy_from_slice(field);
            fix_checksum(&mut h);
            h.to_vec()
        };
        let mut c: Vec<(String, Vec<u8>)> = Vec::new();
        let mut add = |name: &str, tail: Vec<u8>| c.push((name.to_string(), archive(&tail)));
        add("plain", Vec::new());
        // A hard link of size 0 takes its file type from its mode: with a
        // directory's mode libarchive reads a directory (not an empty member
        // over the file); with a file's, a hard link.
        for (label, mode) in [("directory", b"0040755\0"), ("file", b"0100644\0")] {
            let mut link = header(b"x.bin", b'1', 0, USTAR);
            link[100..108].copy_from_slice(mode);
            link[157..162].copy_from_slice(b"x.bin");
            fix_checksum(&mut link);
            add(
                &format!("a hard link with a {label}'s mode"),
                [file(b"x.bin"), link.to_vec()].concat(),
            );
        }
        // The limits libarchive puts on pax values (a failure, or a warning
        // the runtime takes as one), each just under and just over.
        let dir = member(b"d/", b'5', b"", USTAR);
        let long_time = |n: usize| format!("1{}", "0".repeat(n - 1)).into_bytes();
        let xattr = |n: usize| format!("SCHILY.xattr.{}", "n".repeat(n));
        let limits: Vec<(String, Vec<u8>, Vec<u8>)> = vec![
            (
                "a 128-byte mtime".into(),
                pax(&[("mtime", &long_time(128)[..])]),
                file(b"neff.json"),
            ),
            (
                "a 129-byte mtime".into(),
                pax(&[("mtime", &long_time(129)[..])]),
                file(b"neff.json"),
            ),
            (
                "a 129-byte atime".into(),
                pax(&[("atime", &long_time(129)[..])]),
                file(b"neff.json"),
            ),
            (
                "a 128-byte xattr name".into(),
                pax(&[(&xattr(128)[..], b"v")]),
                file(b"neff.json"),
            ),
            (
                "a 129-byte xattr name".into(),
                pax(&[(&xattr(129)[..], b"v")]),
                file(b"neff.json"),
            ),
            (
                "an empty xattr name".into(),
                pax(&[("SCHILY.xattr.", b"v")]),
                file(b"neff.json"),
            ),
            (
                "511 bytes of fflags".into(),
                pax(&[("SCHILY.fflags", &vec![b'x'; 511][..])]),
                file(b"neff.json"),
            ),
            (
                "512 bytes of fflags".into(),
                pax(&[("SCHILY.fflags", &vec![b'x'; 512][..])]),
                file(b"neff.json"),
            ),
            (
                "a bare GNU.sparse on a folder".into(),
                pax(&[("GNU.sparse", b"1")]),
                dir.clone(),
            ),
        ];
        for (label, body, next) in limits {
            add(
                &format!("pax limit: {label}"),
                [special(b'x', &body), next].concat(),
            );
        }
        // pax records: (label, special header kind, its body, what follows).
        let specials: Vec<(&str, u8, Vec<u8>, Vec<u8>)> = vec![
            (
                "pax size=+N",
                b'x',
                pax(&[("size", b"+13")]),
                file(b"neff.json"),
            ),
            (
                "pax size=-1",
                b'x',
                pax(&[("size", b"-1")]),
                file(b"neff.json"),
            ),
            (
                "pax size with junk",
                b'x',
                pax(&[("size", b"13x")]),
                file(b"neff.json"),
            ),
            (
                "pax size empty",
                b'x',
                pax(&[("size", b"")]),
                file(b"neff.json"),
            ),
            (
                "pax size huge",
                b'x',
                pax(&[("size", b"99999999999999999999999")]),
                file(b"neff.json"),
            ),
            (
                "pax size leading space",
                b'x',
                pax(&[("size", b" 13")]),
                file(b"neff.json"),
            ),
            (
                "pax size=0 over a real size",
                b'x',
                pax(&[("size", b"0")]),
                file(b"neff.json"),
            ),
            (
                "pax signed record length",
                b'x',
                b"+17 path=neff.json\n".to_vec(),
                file(b"x.json"),
            ),
            (
                "pax record length with leading zero",
                b'x',
                b"018 path=neff.json\n".to_vec(),
                file(b"x.json"),
            ),
            (
                "pax empty key",
                b'x',
                b"6 =abc\n".to_vec(),
                file(b"neff.json"),
            ),
            (
                "pax trailing NULs",
                b'x',
                cat(&[&pax(&[("path", b"neff.json")]), &[0u8; 7]]),
                file(b"x.json"),
            ),
            (
                "pax path with NUL",
                b'x',
                pax(&[("path", b"neff.json\0tail")]),
                file(b"x.json"),
            ),
            (
                "pax empty path",
                b'x',
                pax(&[("path", b"")]),
                file(b"neff.json"),
            ),
            (
                "pax record without newline",
                b'x',
                b"18 path=neff.jsonX".to_vec(),
                file(b"x.json"),
            ),
            (
                "pax record length too long",
                b'x',
                b"99 path=neff.json\n".to_vec(),
                file(b"x.json"),
            ),
            (
                "pax record without =",
                b'x',
                b"14 pathneff.js\n".to_vec(),
                file(b"x.json"),
            ),
            (
                "pax linkpath",
                b'x',
                pax(&[("linkpath", b"neff.json")]),
                member(b"l", b'2', b"", USTAR),
            ),
        ];
        for (label, kind, body, tail) in specials {
            add(label, cat(&[&special(kind, &body), &tail]));
        }
        add(
            "pax GNU.sparse.name",
            cat(&[
                &special(
                    b'x',
                    &pax(&[("GNU.sparse.name", b"neff.json"), ("path", b"x.json")]),
                ),
                &file(b"y.json"),
            ]),
        );
        add(
            "pax GNU.sparse.name after path",
            cat(&[
                &special(
                    b'x',
                    &pax(&[("path", b"x.json"), ("GNU.sparse.name", b"neff.json")]),
                ),
                &file(b"y.json"),
            ]),
        );
        add(
            "pax mtime and junk keys",
            cat(&[
                &special(
                    b'x',
                    &pax(&[("mtime", b"1.5"), ("SCHILY.xattr.a", b"b"), ("uname", b"u")]),
                ),
                &file(b"neff.json"),
            ]),
        );
        add(
            "pax x over 1 MiB",
            cat(&[
                &special(
                    b'x',
                    &cat(&[
                        &pax(&[("comment", &vec![b'a'; (1 << 20) + 100])]),
                        &pax(&[("path", b"neff.json")]),
                    ]),
                ),
                &file(b"x.json"),
            ]),
        );
        add(
            "pax path over 1 MiB",
            cat(&[
                &special(b'x', &pax(&[("path", &vec![b'a'; (1 << 20) + 100])])),
                &file(b"x.json"),
            ]),
        );
        add(
            "pax g",
            cat(&[
                &special(b'g', &pax(&[("path", b"neff.json")])),
                &file(b"x.json"),
            ]),
        );
        add(
            "pax g over 1 MiB",
            cat(&[
                &special(b'g', &vec![b'a'; (1 << 20) + 100]),
                &file(b"neff.json"),
            ]),
        );
        add(
            "pax g only at the end",
            special(b'g', &pax(&[("comment", b"x")])),
        );
        // Repeated special headers.
        add(
            "two x",
            cat(&[
                &special(b'x', &pax(&[("path", b"a.json")])),
                &special(b'x', &pax(&[("path", b"neff.json")])),
                &file(b"x.json"),
            ]),
        );
        add(
            "two g",
            cat(&[
                &special(b'g', &pax(&[("comment", b"a")])),
                &special(b'g', &pax(&[("comment", b"b")])),
                &file(b"neff.json"),
            ]),
        );
        add(
            "two L",
            cat(&[
                &special(b'L', b"a.json\0"),
                &special(b'L', b"neff.json\0"),
                &file(b"x.json"),
            ]),
        );
        add(
            "two K",
            cat(&[
                &special(b'K', b"a\0"),
                &special(b'K', b"b\0"),
                &member(b"l", b'2', b"", USTAR),
            ]),
        );
        add(
            "x then L",
            cat(&[
                &special(b'x', &pax(&[("path", b"a.json")])),
                &special(b'L', b"neff.json\0"),
                &file(b"x.json"),
            ]),
        );
        add(
            "L then x",
            cat(&[
                &special(b'L', b"a.json\0"),
                &special(b'x', &pax(&[("path", b"neff.json")])),
                &file(b"x.json"),
            ]),
        );
        add(
            "L with data past its NUL",
            cat(&[&special(b'L', b"neff.json\0junk"), &file(b"x.json")]),
        );
        add(
            "L without NUL",
            cat(&[&special(b'L', b"neff.json"), &file(b"x.json")]),
        );
        add("L empty", cat(&[&special(b'L', b""), &file(b"neff.json")]));
        add(
            "L over 1 MiB",
            cat(&[
                &special(b'L', &vec![b'a'; (1 << 20) + 1]),
                &file(b"neff.json"),
            ]),
        );
        add("L at the end", special(b'L', b"neff.json\0"));
        add(
            "x at the end",
            special(b'x', &pax(&[("path", b"neff.json")])),
        );
        // Entry types libarchive treats specially.
        add(
            "Sun X",
            cat(&[
                &special(b'X', &pax(&[("path", b"neff.json")])),
                &file(b"x.json"),
            ]),
        );
        add(
            "Solaris A",
            cat(&[&special(b'A', b"1000001\0user::rw-\0"), &file(b"neff.json")]),
        );
        add(
            "GNU V volume",
            cat(&[&member(b"volume", b'V', b"", GNU), &file(b"neff.json")]),
        );
        add(
            "GNU V with a size",
            cat(&[&header(b"volume", b'V', 1024, GNU), &file(b"neff.json")]),
        );
        add(
            "GNU D dumpdir",
            cat(&[
                &member(b"dir/", b'D', b"Yneff.json\0\0", GNU),
                &file(b"neff.json"),
            ]),
        );
        add(
            "GNU M multivolume",
            cat(&[&member(b"neff.json", b'M', data, GNU)]),
        );
        add(
            "GNU N old long name",
            cat(&[&member(b"neff.json", b'N', data, GNU)]),
        );
        add(
            "GNU S sparse",
            cat(&[&member(b"neff.json", b'S', data, GNU)]),
        );
        add(
            "ustar hardlink with size",
            cat(&[&member(b"neff.json", b'1', data, USTAR)]),
        );
        add(
            "GNU hardlink with size",
            cat(&[&member(b"neff.json", b'1', data, GNU)]),
        );
        add(
            "v7 hardlink with size",
            cat(&[&member(b"neff.json", b'1', data, b"\0\0\0\0\0\0\0\0")]),
        );
        add(
            "pax hardlink with size",
            cat(&[
                &special(b'x', &pax(&[("comment", b"c")])),
                &member(b"neff.json", b'1', data, USTAR),
            ]),
        );
        add(
            "symlink with size",
            cat(&[&member(b"neff.json", b'2', data, USTAR)]),
        );
        add(
            "char device with size",
            cat(&[&member(b"neff.json", b'3', data, USTAR)]),
        );
        add(
            "block device with size",
            cat(&[&member(b"neff.json", b'4', data, USTAR)]),
        );
        add(
            "directory with size",
            cat(&[&member(b"d", b'5', data, USTAR)]),
        );
        add(
            "FIFO with size",
            cat(&[&member(b"neff.json", b'6', data, USTAR)]),
        );
        add(
            "contiguous 7",
            cat(&[&member(b"neff.json", b'7', data, USTAR)]),
        );
        add(
            "unknown type Z",
            cat(&[&member(b"neff.json", b'Z', data, USTAR)]),
        );
        add("type NUL", cat(&[&member(b"neff.json", 0, data, USTAR)]));
        add(
            "file named with a slash",
            cat(&[&member(b"neff.json/", b'0', data, USTAR)]),
        );
        add("GNU realsize", {
            let mut h = header(b"neff.json", b'0', data.len() as u64, GNU);
            h[483..495].copy_from_slice(b"00000000777\0");
            fix_checksum(&mut h);
            cat(&[&h, data, &[0u8; 512 - 13]])
        });
        for (name, map) in [
            // The fuzz target's first finding: a negative entry fails.
            (
                "GNU old sparse map in a regular file, malformed",
                [0xFFu8; 24],
            ),
            (
                "GNU old sparse map in a regular file",
                *b"00000000001\x0000000000004\x00",
            ),
        ] {
            add(name, {
                let mut h = header(b"neff.json", b'0', data.len() as u64, GNU);
                h[386..410].copy_from_slice(&map);
                fix_checksum(&mut h);
                cat(&[&h, data, &[0u8; 512 - 13]])
            });
        }
        // Names.
        add("ustar prefix", {
            let mut h = header(b"def.json", b'0', data.len() as u64, USTAR);
            h[345..349].copy_from_slice(b"sg00");
            fix_checksum(&mut h);
            cat(&[&h, data, &[0u8; 512 - 13]])
        });
        add("ustar prefix ending in /", {
            let mut h = header(b"def.json", b'0', data.len() as u64, USTAR);
            h[345..350].copy_from_slice(b"sg00/");
            fix_checksum(&mut h);
            cat(&[&h, data, &[0u8; 512 - 13]])
        });
        add("magic ustarX prefix", {
            let mut h = header(b"def.json", b'0', data.len() as u64, b"ustarX00");
            h[345..349].copy_from_slice(b"sg00");
            fix_checksum(&mut h);
            cat(&[&h, data, &[0u8; 512 - 13]])
        });
        add("GNU magic with a prefix", {
            let mut h = header(b"def.json", b'0', data.len() as u64, GNU);
            h[345..349].copy_from_slice(b"sg00");
            fix_checksum(&mut h);
            cat(&[&h, data, &[0u8; 512 - 13]])
        });
        add("v7 with a prefix", {
            let mut h = header(b"def.json", b'0', data.len() as u64, b"\0\0\0\0\0\0\0\0");
            h[345..349].copy_from_slice(b"sg00");
            fix_checksum(&mut h);
            cat(&[&h, data, &[0u8; 512 - 13]])
        });
        add("name of 100 bytes", file(&[b'n'; 100]));
        add("dot-slash name", file(b"./neff.json"));
        // Checksums and numbers.
        add("checksum with bytes after its NUL", {
            let mut h = header(b"neff.json", b'0', data.len() as u64, USTAR);
            let sum = h[148..154].to_vec();
            h[148..156].copy_from_slice(&[sum[0], sum[1], sum[2], sum[3], sum[4], sum[5], 0, b'7']);
            cat(&[&h, data, &[0u8; 512 - 13]])
        });
        add("checksum with a space inside", {
            let mut h = header(b"neff.json", b'0', data.len() as u64, USTAR);
            h[148] = b' ';
            cat(&[&h, data, &[0u8; 512 - 13]])
        });
        add("signed checksum", {
            let mut h = header(&[0xE9; 20], b'0', data.len() as u64, USTAR);
            h[148..156].copy_from_slice(b"        ");
            let sum: i64 = h.iter().map(|&b| i64::from(b as i8)).sum();
            h[148..156].copy_from_slice(format!("{sum:06o}\0 ").as_bytes());
            cat(&[&h, data, &[0u8; 512 - 13]])
        });
        add("bad checksum", {
            let mut h = header(b"neff.json", b'0', data.len() as u64, USTAR);
            h[0] = b'm';
            cat(&[&h, data, &[0u8; 512 - 13]])
        });
        for (label, field) in [
            ("size with a leading tab", &b"\t0000000015\0"[..]),
            ("size with leading spaces", b"   000000015"),
            ("size with trailing junk", b"00000000015x"),
            ("size 15 then junk", b"15zzzzzzzzzz"),
            ("size all spaces", b"            "),
            ("size empty", b"\0\0\0\0\0\0\0\0\0\0\0\0"),
            ("size digits 8 and 9", b"00000000089\0"),
            ("size base-256", &[0x80, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 13]),
            ("size base-256 negative", &[0xFF; 12]),
            ("size 12 octal digits", b"000000000015"),
        ] {
            add(
                label,
                cat(&[
                    &with_size(header(b"neff.json", b'0', 0, USTAR), field),
                    data,
                    &[0u8; 512 - 13],
                ]),
            );
        }
        // pax values libarchive checks.
        let x = |records: &[(&str, &[u8])]| special(b'x', &pax(records));
        for key in [
            "comment",
            "charset",
            "hdrcharset",
            "mtime",
            "uname",
            "gname",
            "atime",
            "linkpath",
            "size",
            "SCHILY.xattr.a",
            "LIBARCHIVE.creationtime",
            "GNU.sparse.name",
            "realtime.x",
            "security.x",
            "uid",
            "ctime",
            "path",
            "a",
        ] {
            add(
                &format!("g {key}=1"),
                cat(&[&special(b'g', &pax(&[(key, b"1")])), &file(b"neff.json")]),
            );
        }
        let numbers: [&[u8]; 16] = [
            b"+13",
            b"13x",
            b"",
            b" 13",
            b"\t13",
            b"-0",
            b"0x10",
            &[b'9'; 70],
            b"9223372036854775807",
            b"9223372036854775806",
            b"2147483648",
            b"-1",
            b"5x",
            &[b'0'; 63],
            &[b'0'; 64],
            &[b'1'; 64],
        ];
        for key in [
            "size",
            "uid",
            "gid",
            "SCHILY.dev",
            "SCHILY.ino",
            "SCHILY.nlink",
        ] {
            for v in numbers {
                add(
                    &format!("x {key}={}", String::from_utf8_lossy(&v[..v.len().min(20)])),
                    cat(&[&x(&[(key, v)]), &file(b"neff.json")]),
                );
            }
        }
        let times: [&[u8]; 17] = [
            b"abc",
            b"-1.5",
            b"1e5",
            b"",
            b".",
            b"1.",
            b"-",
            b"1.5.5",
            b"  1",
            b"1 ",
            b"+1",
            &[b'9'; 18],
            &[b'9'; 19],
            b"-9223372036854775808",
            b"0x1",
            b"1.a",
            b"1.99999999999999999999999",
        ];
        for key in ["mtime", "atime", "ctime", "LIBARCHIVE.creationtime"] {
            for v in times {
                add(
                    &format!("x {key}={}", String::from_utf8_lossy(v)),
                    cat(&[&x(&[(key, v)]), &file(b"neff.json")]),
                );
            }
        }
        for (key, v) in [
            ("hdrcharset", &b"foo"[..]),
            ("hdrcharset", b"BINARY"),
            ("hdrcharset", b"ISO-IR 10646 2000 UTF-8"),
            ("charset", b"foo"),
            ("comment", b"\xff"),
            ("SCHILY.acl.access", b"garbage"),
            ("SCHILY.xattr.user.a", b"\xff"),
            ("LIBARCHIVE.xattr.user.a", b"!!!"),
            ("SCHILY.fflags", b"x"),
            ("SUN.holesdata", b"x"),
            ("LIBARCHIVE.symlinktype", b"x"),
            ("GNU.sparse.size", b"5"),
            ("GNU.sparse.realsize", b"5"),
            ("SCHILY.realsize", b"100"),
            ("unknown", b"\xff"),
            ("path", b"\xc3\xa9.json"),
            ("path", b"p\xff.json"),
            ("linkpath", b"\xff"),
            ("uname", b"\xff"),
            ("gname", b"\xc3\xa9"),
            ("uname", b"nobody"),
            ("path", b"\0neff.json"),
        ] {
            add(
                &format!("x {key}={}", String::from_utf8_lossy(v)),
                cat(&[&x(&[(key, v)]), &file(b"neff.json")]),
            );
        }
        for n in [(1 << 20) - 1, 1 << 20, (1 << 20) + 1] {
            add(
                &format!("pax path of {n}"),
                cat(&[&x(&[("path", &vec![b'a'; n])]), &file(b"x.json")]),
            );
            add(
                &format!("L of {n}"),
                cat(&[&special(b'L', &vec![b'a'; n]), &file(b"x.json")]),
            );
        }
        for n in [100, 65536, 65537] {
            add(
                &format!("pax uname of {n}"),
                cat(&[&x(&[("uname", &vec![b'a'; n])]), &file(b"neff.json")]),
            );
        }
        // pax record structure.
        for (label, body) in [
            ("value empty without newline", &b"7 path="[..]),
            ("length exactly without value", b"8 path=\n"),
            ("length shorter than the key", b"3 path=neff.json\n"),
            ("length 0", b"0 path=neff.json\n"),
            ("leading space", b" 18 path=neff.json\n"),
            ("two spaces", b"19  path=neff.json\n"),
            ("= in the value", b"19 path=neff=json\n"),
            ("key with a space", b"19 pa th=neff.jso\n"),
            ("length of 9 digits", b"100000000 path=x\n"),
            ("a zero length body", b""),
        ] {
            add(
                &format!("pax record: {label}"),
                cat(&[&special(b'x', body), &file(b"neff.json")]),
            );
        }
        // pax size and entry types.
        let sized = x(&[("size", b"13")]);
        add(
            "pax size then symlink",
            cat(&[&sized, &header(b"s", b'2', 0, USTAR), data, &[0u8; 499]]),
        );
        add(
            "pax size then dir",
            cat(&[&sized, &header(b"d", b'5', 0, USTAR), data, &[0u8; 499]]),
        );
        add(
            "pax size then slash name",
            cat(&[&sized, &header(b"d/", b'0', 0, USTAR), data, &[0u8; 499]]),
        );
        add(
            "pax size then hardlink",
            cat(&[&sized, &header(b"h", b'1', 0, USTAR), data, &[0u8; 499]]),
        );
        add(
            "pax path with a slash",
            cat(&[&x(&[("path", b"dd/")]), &file(b"neff.json")]),
        );
        add(
            "L with a slash",
            cat(&[&special(b'L', b"dd/\0"), &file(b"neff.json")]),
        );
        add(
            "x path empty then L",
            cat(&[
                &x(&[("path", b"")]),
                &special(b'L', b"L.json\0"),
                &file(b"neff.json"),
            ]),
        );
        add(
            "x size then L",
            cat(&[&sized, &special(b'L', b"L.json\0"), &file(b"neff.json")]),
        );
        add(
            "g then hardlink",
            cat(&[
                &special(b'g', &pax(&[("comment", b"c")])),
                &member(b"h.json", b'1', data, USTAR),
            ]),
        );
        add(
            "x then two hardlinks",
            cat(&[
                &x(&[("comment", b"c")]),
                &member(b"h.json", b'1', data, USTAR),
                &member(b"h2.json", b'1', data, USTAR),
            ]),
        );
        add(
            "two V",
            cat(&[
                &member(b"v", b'V', b"", GNU),
                &member(b"v", b'V', b"", GNU),
                &file(b"neff.json"),
            ]),
        );
        add(
            "ustar V with data",
            cat(&[&member(b"v", b'V', b"abc", USTAR), &file(b"neff.json")]),
        );
        add(
            "ustar D with data",
            cat(&[
                &member(b"d", b'D', &[b'x'; 700], USTAR),
                &file(b"neff.json"),
            ]),
        );
        let negative = |kind: u8| {
            let mut h = header(b"n", kind, 0, USTAR);
            h[124..136].copy_from_slice(b"-0000000001\0");
            fix_checksum(&mut h);
            h.to_vec()
        };
        for kind in [b'V', b'x', b'L', b'0'] {
            add(
                &format!("{} with a negative size", kind as char),
                cat(&[&negative(kind), &file(b"neff.json")]),
            );
        }
        add(
            "pax g of a 1 MiB comment",
            cat(&[
                &special(b'g', &pax(&[("comment", &vec![b'c'; (1 << 20) + 100])])),
                &file(b"neff.json"),
            ]),
        );
        add("symlink of 2^60 bytes", {
            let mut h = header(b"s", b'2', 0, USTAR);
            h[124..136].copy_from_slice(&[0x80, 0, 0, 0, 0x10, 0, 0, 0, 0, 0, 0, 0]);
            fix_checksum(&mut h);
            h.to_vec()
        });
        add(
            "pax size 2^60",
            cat(&[&x(&[("size", b"1152921504606846976")]), &file(b"neff.json")]),
        );
        add("empty g", cat(&[&special(b'g', b""), &file(b"neff.json")]));
        add(
            "ustar magic without version",
            member(b"n.json", b'0', data, b"ustar\0xx"),
        );
        add("GNU magic with another version", {
            let mut h = header(b"def.json", b'0', data.len() as u64, b"ustar \0\0");
            h[345..349].copy_from_slice(b"sg00");
            fix_checksum(&mut h);
            cat(&[&h, data, &[0u8; 499]])
        });
        // Ends.
        add("one zero block only", Vec::new());
        c.push(("no end marker".into(), start()));
        c.push((
            "a partial block at the end".into(),
            cat(&[&start(), &[1u8; 100]]),
        ));
        c.push((
            "truncated data".into(),
            cat(&[
                &start(),
                &header(b"neff.json", b'0', 4096, USTAR),
                &[0u8; 512],
            ]),
        ));
        c.push((
            "zero block then garbage".into(),
            cat(&[&start(), &[0u8; 512], &file(b"neff.json")]),
        ));
        c.push((
            "zero block then a member".into(),
            cat(&[&start(), &[0u8; 512], &[1u8; 512], &file(b"neff.json")]),
        ));
        c.push(("only zeros".into(), vec![0u8; 1024]));
        c.push(("empty".into(), Vec::new()));
        c.push(("not tar".into(), vec![b'x'; 2048]));
        c.push((
            "g then the end of the stream".into(),
            special(b'g', &pax(&[("comment", b"c")])),
        ));
        c.push((
            "V then the end of the stream".into(),
            member(b"v", b'V', b"", GNU),
        ));
        c.push((
            "L then the end of the stream".into(),
            cat(&[&start(), &special(b'L', b"a\0")]),
        ));
        c.push((
            "L then a bad checksum".into(),
            cat(&[&start(), &special(b'L', b"a\0"), &[1u8; 512]]),
        ));
        c.push((
            "a bad checksum first".into(),
            cat(&[&[1u8; 512], &file(b"neff.json")]),
        ));
        // libarchive's bid on the first header: type flag and mode.
        for (label, kind, mode) in [
            ("type '!'", b'!', &b"0000644\0"[..]),
            ("mode '9'", b'0', b"9000644\0"),
            ("mode ' '", b'0', b" 000644\0"),
            ("mode base-256", b'0', &[0x80, 0, 0, 0, 0, 0, 1, 0xa4][..]),
            ("mode 0xC0", b'0', &[0xC0, 0, 0, 0, 0, 0, 1, 0xa4][..]),
            ("mode 0x90", b'0', &[0x90, 0, 0, 0, 0, 0, 1, 0xa4][..]),
            ("mode 0xFF", b'0', &[0xFF; 8][..]),
        ] {
            let mut h = header(b"neff.json", kind, data.len() as u64, USTAR);
            h[100..108].copy_from_slice(mode);
            fix_checksum(&mut h);
            c.push((
                format!("first header with {label}"),
                cat(&[&h, data, &[0u8; 499], &[0u8; 1024]]),
            ));
        }
        c
    }

    /// gzip framing cases (each over a valid tar).
    pub fn gzip_cases() -> Vec<(String, Vec<u8>)> {
        let small = archive(&[]);
        let mut big = start();
        big.extend(member(b"big.bin", b'0', &vec![7u8; 200_000], USTAR));
        big.extend_from_slice(&[0u8; 1024]);
        let mut padded = big.clone();
        padded.extend_from_slice(&vec![0u8; 70_000]);
        let mut c = Vec::new();
        for (label, tar) in [
            ("small", &small),
            ("big", &big),
            ("70 KiB of padding", &padded),
        ] {
            let gz = gzip(tar);
            let n = gz.len();
            let mut crc = gz.clone();
            crc[n - 8] ^= 1;
            c.push((format!("{label}: bad CRC"), crc));
            let mut isize = gz.clone();
            isize[n - 1] ^= 1;
            c.push((format!("{label}: bad ISIZE"), isize));
            for cut in [1, 4, 8] {
                c.push((
                    format!("{label}: trailer cut by {cut}"),
                    gz[..n - cut].to_vec(),
                ));
            }
            c.push((format!("{label}: deflate cut"), gz[..n - 20].to_vec()));
            c.push((
                format!("{label}: zero padding after"),
                [&gz[..], &[0u8; 10240]].concat(),
            ));
            c.push((
                format!("{label}: garbage after"),
                [&gz[..], &b"garbage!garbage!"[..]].concat(),
            ));
            c.push((
                format!("{label}: a second member"),
                [&gz[..], &gzip(b"more")[..]].concat(),
            ));
            c.push((
                format!("{label}: a partial second header"),
                [&gz[..], &[0x1f, 0x8b, 8, 0, 0][..]].concat(),
            ));
            // After the member, headers libarchive ends on or fails on: a
            // FEXTRA running past the data (alone: fails; with FNAME:
            // ends), a bare 10-byte header (fails), a cut FNAME (ends).
            for (what, tail) in [
                (
                    "FEXTRA past the end",
                    &b"\x1f\x8b\x08\x04\0\0\0\0\0\x03\x05\0ab"[..],
                ),
                (
                    "FEXTRA+FNAME past the end",
                    b"\x1f\x8b\x08\x0c\0\0\0\0\0\x03\x05\0ab",
                ),
                ("a bare header", b"\x1f\x8b\x08\0\0\0\0\0\0\x03"),
                ("a cut FNAME", b"\x1f\x8b\x08\x08\0\0\0\0\0\x03name"),
            ] {
                c.push((format!("{label}: {what} after"), [&gz[..], tail].concat()));
            }
            let mut flipped = gz.clone();
            flipped[n / 2] ^= 0x55;
            c.push((format!("{label}: damaged deflate"), flipped));
        }
        // Split into two members in the middle of the tar.
        let (a, b) = big.split_at(100_000);
        c.push((
            "two members splitting the tar".into(),
            [gzip(a), gzip(b)].concat(),
        ));
        let mut named = gzip(&small);
        named[3] = 0x08;
        named.splice(10..10, b"name.tar\0".iter().copied());
        c.push(("FNAME".into(), named));
        let mut reserved = gzip(&small);
        reserved[3] = 0x20;
        c.push(("reserved flag".into(), reserved));
        // libarchive bids its filters again on each filter's output: gzip
        // inside gzip is decoded again; a tar whose first bytes are a gzip
        // header is taken for gzip (and fails).
        c.push(("gzip inside gzip".into(), gzip(&gzip(&small))));
        c.push((
            "gzip inside gzip inside gzip".into(),
            gzip(&gzip(&gzip(&big))),
        ));
        let mut magic = small.clone();
        magic[..10].copy_from_slice(b"\x1f\x8b\x08\0\0\0\0\0\0\x03");
        fix_checksum((&mut magic[..512]).try_into().unwrap());
        c.push((
            "a tar whose first name starts with a gzip header".into(),
            gzip(&magic),
        ));
        c
    }
}

/// A small deterministic PRNG (xorshift64*).
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }
    fn below(&mut self, n: usize) -> usize {
        (self.next() % n.max(1) as u64) as usize
    }
    fn pick<'a, T>(&mut self, items: &'a [T]) -> &'a T {
        &items[self.below(items.len())]
    }
}

/// The header offsets of a well-formed tar (a plain walk of octal sizes).
fn header_offsets(tar: &[u8]) -> Vec<usize> {
    let mut out = Vec::new();
    let mut at = 0;
    while at + 512 <= tar.len() && tar[at..at + 512].iter().any(|&b| b != 0) {
        out.push(at);
        let field = &tar[at + 124..at + 136];
        let size = std::str::from_utf8(field)
            .ok()
            .and_then(|s| {
                u64::from_str_radix(s.trim_matches(|c: char| c == '\0' || c == ' '), 8).ok()
            })
            .unwrap_or(0) as usize;
        at += 512 + size.div_ceil(512) * 512;
    }
    out
}

/// One mutation of a tar stream: header bytes, sizes, types, magic,
/// inserted special headers, truncation; checksums fixed most of the time.
fn mutate(tar: &[u8], rng: &mut Rng) -> Vec<u8> {
    let mut out = tar.to_vec();
    let headers = header_offsets(&out);
    if headers.is_empty() {
        return out;
    }
    for _ in 0..1 + rng.below(3) {
        let at = *rng.pick(&headers);
        if at + 512 > out.len() {
            continue;
        }
        match rng.below(8) {
            0 => {
                let i = rng.below(512);
                out[at + i] = rng.next() as u8;
            }
            1 => {
                let fields: [&[u8]; 8] = [
                    b"\t0000000015\0",
                    b"00000000015x",
                    b"-0000000001\0",
                    b"77777777777\0",
                    &[0x80, 0, 0, 0, 0, 0, 0, 0, 0, 0, 4, 0],
                    &[0xFF; 12],
                    b"            ",
                    b"00000001000\0",
                ];
                let field: &[u8] = fields[rng.below(fields.len())];
                out[at + 124..at + 136].copy_from_slice(field);
            }
            2 => {
                let types = b"0123456789xgLKVDSAXMN\0Z!";
                out[at + 156] = *rng.pick(types);
            }
            3 => {
                let magics: [&[u8; 8]; 5] = [
                    b"ustar\x0000",
                    b"ustar  \0",
                    b"ustar \0\0",
                    b"\0\0\0\0\0\0\0\0",
                    b"ustarX00",
                ];
                out[at + 257..at + 265].copy_from_slice(*rng.pick(&magics));
                if rng.below(2) == 0 {
                    out[at + 345..at + 349].copy_from_slice(b"sg0/");
                }
            }
            4 => {
                let bodies: [(u8, &[u8]); 8] = [
                    (b'x', b"18 path=neff.json\n"),
                    (b'x', b"11 size=13\n"),
                    (b'x', b"12 size=+13\n"),
                    (b'g', b"16 comment=abcd\n"),
                    (b'L', b"neff.json\0"),
                    (b'K', b"target\0"),
                    (b'x', b"18 path=neff.json\n\0\0"),
                    (b'V', b""),
                ];
                let (kind, body) = *rng.pick(&bodies);
                let special = dialects::special(kind, body);
                out.splice(at..at, special);
                continue;
            }
            5 => {
                let cut = at + rng.below(out.len() - at);
                out.truncate(cut);
                return out;
            }
            6 => {
                // Duplicate a header block in place of the next data.
                let copy = out[at..at + 512].to_vec();
                out.splice(at..at, copy);
                continue;
            }
            _ => {
                out[at + 100] = *rng.pick(&[b'9', 0x80, 0xC0, b' ', b'0']);
            }
        }
        if rng.below(5) != 0 {
            let mut h: [u8; 512] = out[at..at + 512].try_into().unwrap();
            common::fix_checksum(&mut h);
            out[at..at + 512].copy_from_slice(&h);
        }
    }
    out
}

/// Mutated payloads: `NEFF_FUZZ_CASES` (default 1500) mutations of the
/// dialect cases and the real NEFFs' tar streams with seed `NEFF_FUZZ_SEED`
/// (default 23), half of them gzipped, walked by both readers.
#[test]
#[cfg_attr(
    not(neff_libarchive),
    ignore = "Python with libarchive-c and archi (libarchive 3.8) is missing"
)]
fn mutated_payloads_walk_as_libarchive_3_8_walks_them() {
    let count: usize = std::env::var("NEFF_FUZZ_CASES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(1500);
    let seed: u64 = std::env::var("NEFF_FUZZ_SEED")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(23);
    let mut seeds: Vec<Vec<u8>> = dialects::cases().into_iter().map(|(_, t)| t).collect();
    for path in crate::common::real_neff_files_if_any() {
        let payload = payload_of(&std::fs::read(&path).unwrap());
        let mut tar = Vec::new();
        let (_, mut stream) = neff::loader::payload_stream(&payload[..]).unwrap();
        if std::io::Read::read_to_end(&mut stream, &mut tar).is_ok() && tar.len() < 4 << 20 {
            seeds.push(tar);
        }
    }
    let mut rng = Rng(seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1);
    let mut cases = Vec::with_capacity(count);
    for i in 0..count {
        let seed_tar = rng.pick(&seeds).clone();
        let tar = mutate(&seed_tar, &mut rng);
        let payload = if rng.below(2) == 0 {
            common::gzip(&tar)
        } else {
            tar
        };
        cases.push((format!("mutation {i} (seed {seed})"), payload));
    }
    let tmp = tempfile::tempdir().unwrap();
    let mismatches = compare(&cases, tmp.path());
    if !mismatches.is_empty() {
        let keep = tmp.keep();
        panic!(
            "{} of {count} mutated payloads walk differently (cases kept in {}):\n{}",
            mismatches.len(),
            keep.display(),
            mismatches.join("\n")
        );
    }
}
