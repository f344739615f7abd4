//! `neff diff` and `neff cat`: equal and different NEFFs built from one tree
//! (uuid, framing, a weight, an instruction stream, a manifest key), the JSON
//! report, the real compilers' NEFFs, and cat's streaming (peak RSS of the
//! child far below the member's size).

use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

use crate::common::*;
use serde_json::Value;

fn neff_in(dir: &Path, args: &[&str]) -> Output {
    neff_command()
        .current_dir(dir)
        .args(args)
        .output()
        .expect("run neff")
}

/// A temp dir holding `tree/`, the weights example built and unpacked.
fn workdir() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    let spec = Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/weights.json");
    let r = neff_in(
        dir.path(),
        &["build", spec.to_str().unwrap(), "-o", "w.neff"],
    );
    assert_eq!(code(&r), 0, "{}", stderr(&r));
    let r = neff_in(dir.path(), &["unpack", "w.neff", "-o", "tree"]);
    assert_eq!(code(&r), 0, "{}", stderr(&r));
    dir
}

/// Packs `tree/` into `out` with extra flags.
fn pack(dir: &Path, out: &str, flags: &[&str]) {
    // The flags alone, not the header the unpack recorded.
    let mut args = vec!["pack", "tree", "-o", out, "-q", "--no-recorded-header"];
    args.extend_from_slice(flags);
    let r = neff_in(dir, &args);
    assert_eq!(code(&r), 0, "pack {flags:?}: {}", stderr(&r));
}

/// Flips the last byte of `tree/<member>`.
fn flip(dir: &Path, member: &str) {
    let path = dir.join("tree").join(member);
    let mut bytes = fs::read(&path).unwrap();
    *bytes.last_mut().unwrap() ^= 0xFF;
    fs::write(&path, bytes).unwrap();
}

fn diff(dir: &Path, flags: &[&str]) -> Output {
    let mut args = vec!["diff", "a.neff", "b.neff"];
    args.extend_from_slice(flags);
    neff_in(dir, &args)
}

#[test]
fn a_file_is_equal_to_itself() {
    let dir = workdir();
    let r = neff_in(dir.path(), &["diff", "w.neff", "w.neff"]);
    assert_eq!(code(&r), 0, "{}", stdout(&r));
    assert_eq!(stdout(&r), "w.neff and w.neff: equal\n");
}

#[test]
fn a_different_uuid_differs_unless_ignored() {
    let dir = workdir();
    let d = dir.path();
    pack(
        d,
        "a.neff",
        &["--uuid", "11111111-2222-4333-8444-555555555555"],
    );
    pack(
        d,
        "b.neff",
        &["--uuid", "11111111-2222-4333-8444-666666666666"],
    );
    let r = diff(d, &[]);
    assert_eq!(code(&r), 1, "{}", stdout(&r));
    assert!(
        stdout(&r).contains(
            "uuid: 11111111-2222-4333-8444-555555555555 -> 11111111-2222-4333-8444-666666666666"
        ),
        "{}",
        stdout(&r)
    );
    assert!(!stdout(&r).contains("members:"), "{}", stdout(&r));
    let r = diff(d, &["--ignore", "uuid"]);
    assert_eq!(code(&r), 0, "{}", stdout(&r));
}

#[test]
fn a_repack_with_other_framing_has_equal_members() {
    let dir = workdir();
    let d = dir.path();
    pack(d, "a.neff", &[]);
    // What differs besides the framing: pkg 1's version; neuronx-cc's header defaults.
    let cases: [(&[&str], &str); 4] = [
        (&["--level", "9"], "framing"),
        (&["--deflate", "zlib", "--gzip-mtime", "7"], "framing"),
        (&["--pkg-version", "1"], "framing,pkg_version"),
        (
            &["--framing", "neuronx-cc"],
            "framing,neff_version_major,build_version,name,tpb_per_node",
        ),
    ];
    for (flags, ignore) in cases {
        pack(d, "b.neff", flags);
        let r = diff(d, &[]);
        let out = stdout(&r);
        assert_eq!(code(&r), 1, "{flags:?}: {out}");
        assert!(!out.contains("members:"), "{flags:?}: {out}");
        let r = diff(d, &["--ignore", ignore, "--ignore", "uuid"]);
        assert_eq!(code(&r), 0, "{flags:?}: {}", stdout(&r));
    }
}

#[test]
fn an_unknown_ignore_name_is_a_usage_error_listing_the_valid_ones() {
    let dir = workdir();
    let r = neff_in(
        dir.path(),
        &["diff", "w.neff", "w.neff", "--ignore", "uuid,bogus"],
    );
    assert_eq!(code(&r), 2);
    assert!(stderr(&r).contains("framing"), "{}", stderr(&r));
}

#[test]
fn a_changed_weight_differs_but_the_programs_are_equal() {
    let dir = workdir();
    let d = dir.path();
    pack(d, "a.neff", &[]);
    flip(d, "sg00/w1.npy");
    pack(d, "b.neff", &[]);
    let r = diff(d, &[]);
    assert_eq!(code(&r), 1, "{}", stdout(&r));
    assert!(
        stdout(&r).contains("changed sg00/w1.npy: sha256: "),
        "{}",
        stdout(&r)
    );
    let r = diff(d, &["--programs"]);
    assert_eq!(code(&r), 0, "{}", stdout(&r));
}

#[test]
fn a_changed_instruction_stream_is_a_different_program() {
    let dir = workdir();
    let d = dir.path();
    pack(d, "a.neff", &[]);
    fs::write(d.join("tree/sg00/pool.bin"), [1u8, 2, 3, 4]).unwrap();
    pack(d, "b.neff", &[]);
    let r = diff(d, &["--programs"]);
    assert_eq!(code(&r), 1, "{}", stdout(&r));
    let out = stdout(&r);
    assert!(
        out.contains("programs:\n  sg00/pool: sg00/pool.bin ("),
        "{out}"
    );
    assert_eq!(out.matches("sg00/").count(), 3, "only pool differs: {out}");
}

/// `def.json` with a var resized, a key added and one removed.
fn edit_def(dir: &Path) {
    let path = dir.join("tree/sg00/def.json");
    let mut def: Value = serde_json::from_slice(&fs::read(&path).unwrap()).unwrap();
    def["var"]["acc"]["size"] = 32.into();
    def["var"]["acc"]["shape"] = serde_json::json!([8]);
    def["note"] = "added".into();
    def.as_object_mut()
        .unwrap()
        .remove("runtime_statebuffer_reservation");
    fs::write(&path, serde_json::to_vec_pretty(&def).unwrap()).unwrap();
}

#[test]
fn manifest_differences_by_key_path_match_the_golden_file() {
    let dir = workdir();
    let d = dir.path();
    pack(d, "a.neff", &[]);
    edit_def(d);
    pack(d, "b.neff", &["--keep-refused"]);
    let r = diff(d, &["--ignore", "framing,uuid"]);
    assert_eq!(code(&r), 1);
    let out = stdout(&r);
    assert!(
        out.contains("sg00/def.json: .var.acc.size: 16 -> 32\n"),
        "{out}"
    );
    golden_text("diff-manifests.txt", &out);
}

#[test]
fn the_json_report_has_the_schema_s_shape() {
    let dir = workdir();
    let d = dir.path();
    pack(d, "a.neff", &[]);
    edit_def(d);
    flip(d, "sg00/b1.bin");
    fs::write(d.join("tree/extra.bin"), b"new").unwrap();
    pack(d, "b.neff", &["--keep-refused"]);
    let r = diff(d, &["--json"]);
    assert_eq!(code(&r), 1);
    let report: Value = serde_json::from_slice(&r.stdout).expect("one JSON document");
    assert_eq!(report["equal"], false);
    assert!(report["header"]
        .as_array()
        .unwrap()
        .iter()
        .any(|f| f["field"] == "hash"));
    assert_eq!(report["members"]["added"][0]["name"], "extra.bin");
    assert_eq!(report["members"]["removed"], serde_json::json!([]));
    let changed = report["members"]["changed"].as_array().unwrap();
    let names: Vec<&str> = changed
        .iter()
        .map(|c| c["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["sg00/b1.bin", "sg00/def.json"]);
    let manifests = report["manifests"].as_array().unwrap();
    assert_eq!(manifests[0]["member"], "sg00/def.json");
    let first = &manifests[0]["differences"][0];
    assert_eq!(first["path"], ".note");
    assert_eq!(first["a"], Value::Null);
    assert_eq!(first["b"], "\"added\"");
    // Every property the schema requires is there.
    let schema = neff_in(d, &["schema", "diff-report"]);
    assert_eq!(code(&schema), 0, "{}", stderr(&schema));
    let schema: Value = serde_json::from_slice(&schema.stdout).unwrap();
    for key in schema["required"].as_array().unwrap() {
        assert!(report.get(key.as_str().unwrap()).is_some(), "{key} missing");
    }
    let r = neff_in(d, &["diff", "--json", "missing.neff", "a.neff"]);
    assert_eq!(code(&r), 2);
    let error: Value = serde_json::from_slice(&r.stdout).expect("an error object");
    assert_eq!(error["error"]["path"], "missing.neff", "{error}");
    assert_eq!(error["error"]["kind"], "io", "{error}");
}

#[test]
fn a_key_path_diff_is_capped_per_member() {
    let dir = workdir();
    let d = dir.path();
    pack(d, "a.neff", &[]);
    let path = d.join("tree/info.json");
    let mut info: Value = serde_json::from_slice(&fs::read(&path).unwrap()).unwrap();
    for i in 0..150 {
        info[format!("k{i:03}")] = i.into();
    }
    fs::write(&path, serde_json::to_vec(&info).unwrap()).unwrap();
    pack(d, "b.neff", &[]);
    let out = stdout(&diff(d, &[]));
    assert_eq!(out.matches("info.json: .k").count(), 100, "{out}");
    assert!(out.contains("info.json: … 50 more\n"), "{out}");
}

#[test]
fn an_unreadable_file_is_exit_2() {
    let dir = workdir();
    let d = dir.path();
    fs::write(d.join("short.neff"), b"tiny").unwrap();
    let r = neff_in(d, &["diff", "w.neff", "short.neff"]);
    assert_eq!(code(&r), 2);
    assert!(
        stderr(&r).contains("short.neff: not a NEFF"),
        "{}",
        stderr(&r)
    );
    let r = neff_in(d, &["diff", "w.neff", "absent.neff"]);
    assert_eq!(code(&r), 2);
    assert!(stderr(&r).contains("absent.neff"), "{}", stderr(&r));
}

#[test]
fn a_refused_neff_still_compares() {
    let dir = workdir();
    let d = dir.path();
    pack(d, "a.neff", &[]);
    let mut bytes = fs::read(d.join("a.neff")).unwrap();
    bytes[0xAC] ^= 0xFF; // the hash: G9 refuses it
    fs::write(d.join("b.neff"), bytes).unwrap();
    let r = neff_in(d, &["verify", "b.neff"]);
    assert_eq!(code(&r), 1, "{}", stdout(&r));
    let r = diff(d, &[]);
    assert_eq!(code(&r), 1);
    assert!(
        stdout(&r).starts_with("header:\n  hash: "),
        "{}",
        stdout(&r)
    );
    assert_eq!(code(&diff(d, &["--ignore", "hash"])), 0);
}

#[test]
fn cat_writes_a_member_and_names_the_members_when_missing() {
    let dir = workdir();
    let d = dir.path();
    let r = neff_in(d, &["cat", "w.neff", "sg00/def.json"]);
    assert_eq!(code(&r), 0, "{}", stderr(&r));
    assert_eq!(r.stdout, fs::read(d.join("tree/sg00/def.json")).unwrap());
    let r = neff_in(d, &["cat", "w.neff", "./neff.json"]);
    assert_eq!(r.stdout, fs::read(d.join("tree/neff.json")).unwrap());
    let r = neff_in(d, &["cat", "w.neff", "nope.json"]);
    assert_eq!(code(&r), 2);
    assert!(r.stdout.is_empty());
    let err = stderr(&r);
    assert!(
        err.contains("w.neff: no member nope.json (members: info.json, kelf-0.json, neff.json, sg00/act.bin,"),
        "{err}"
    );
    let r = neff_in(d, &["cat", "w.neff", "sg00"]);
    assert_eq!(code(&r), 2);
    assert!(stderr(&r).contains("sg00 is a directory"), "{}", stderr(&r));
    let r = neff_command()
        .args(["cat", "-", "neff.json"])
        .stdin(fs::File::open(d.join("w.neff")).unwrap())
        .output()
        .unwrap();
    assert_eq!(code(&r), 0, "{}", stderr(&r));
    assert_eq!(r.stdout, fs::read(d.join("tree/neff.json")).unwrap());
}

#[test]
fn cat_writes_the_entry_the_runtime_keeps_when_a_name_repeats() {
    let dir = tempfile::tempdir().unwrap();
    let tar = tar_of(&[
        ("a.txt", b"first"),
        ("b.txt", b"other"),
        ("./a.txt", b"second"),
    ]);
    let path = dir.path().join("dup.neff");
    fs::write(&path, neff_with_payload(2, &gzip(&tar))).unwrap();
    let r = neff(&["cat", s(&path), "a.txt"]);
    assert_eq!(code(&r), 0, "{}", stderr(&r));
    assert_eq!(r.stdout, b"second");
    let r = neff_command()
        .args(["cat", "-", "a.txt"])
        .stdin(fs::File::open(&path).unwrap())
        .output()
        .unwrap();
    assert_eq!(r.stdout, b"second");
}

/// Runs `neff <args>` under `/usr/bin/time -v` with stdout to `out`;
/// returns the exit code and the child's peak RSS in KiB.
fn run_measured(dir: &Path, args: &[&str], out: &Path) -> (i32, u64) {
    let r = Command::new("/usr/bin/time")
        .arg("-v")
        .arg(env!("CARGO_BIN_EXE_neff"))
        .args(args)
        .current_dir(dir)
        .stdout(fs::File::create(out).unwrap())
        .stderr(Stdio::piped())
        .output()
        .expect("run /usr/bin/time");
    let err = stderr(&r);
    let rss = err
        .lines()
        .find_map(|l| {
            l.trim()
                .strip_prefix("Maximum resident set size (kbytes): ")
        })
        .and_then(|v| v.parse().ok())
        .unwrap_or_else(|| panic!("no RSS in {err}"));
    (code(&r), rss)
}

#[test]
#[cfg_attr(
    not(neff_gnu_time),
    ignore = "GNU time (/usr/bin/time) is missing: apt-get install -y time"
)]
fn cat_and_diff_stream_a_large_member() {
    const SIZE: usize = 64 << 20;
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let mut big: Vec<u8> = (0..SIZE).map(|i| (i / 4096) as u8).collect();
    for (name, last) in [("a.neff", 0u8), ("b.neff", 1)] {
        *big.last_mut().unwrap() = last;
        let tar = tar_of(&[("neff.json", b"{}"), ("big.bin", &big)]);
        fs::write(d.join(name), neff_with_payload(2, &gzip(&tar))).unwrap();
    }
    let out = d.join("out.bin");
    let (code, rss) = run_measured(d, &["cat", "b.neff", "big.bin"], &out);
    eprintln!("cat of a 64 MiB member: peak RSS {rss} KiB");
    assert_eq!(code, 0);
    assert!(fs::read(&out).unwrap() == big, "cat wrote other bytes");
    assert!(rss < 24 << 10, "peak RSS {rss} KiB for a 64 MiB member");
    let (code, rss) = run_measured(d, &["diff", "a.neff", "b.neff"], &out);
    eprintln!("diff of a 64 MiB member: peak RSS {rss} KiB");
    assert_eq!(code, 1);
    assert!(fs::read_to_string(&out)
        .unwrap()
        .contains("changed big.bin: sha256: "));
    assert!(rss < 24 << 10, "peak RSS {rss} KiB for a 64 MiB member");
}

fn real_neffs() -> Vec<PathBuf> {
    crate::common::real_neff_files()
}

#[test]
#[cfg_attr(
    not(neff_real_neffs),
    ignore = "real NEFFs missing: set NEFF_REAL_NEFFS (default ../shared/real-neffs), see tests/real-neffs.md"
)]
fn real_neffs_equal_themselves_and_differ_from_each_other() {
    let files = real_neffs();
    let here = Path::new(".");
    for (i, file) in files.iter().enumerate() {
        let f = file.to_str().unwrap();
        let r = neff_in(here, &["diff", f, f]);
        assert_eq!(code(&r), 0, "{f}: {}{}", stdout(&r), stderr(&r));
        let r = neff_in(here, &["diff", "--programs", f, f]);
        assert_eq!(code(&r), 0, "{f}: {}", stdout(&r));
        let next = files[(i + 1) % files.len()].to_str().unwrap();
        let r = neff_in(here, &["diff", "--json", f, next]);
        assert_eq!(code(&r), 1, "{f} vs {next}: {}", stderr(&r));
        let report: Value = serde_json::from_slice(&r.stdout).unwrap();
        assert!(report["header"]
            .as_array()
            .unwrap()
            .iter()
            .any(|h| h["field"] == "uuid"));
    }
}

#[test]
#[cfg_attr(
    not(neff_real_neffs),
    ignore = "real NEFFs missing: set NEFF_REAL_NEFFS (default ../shared/real-neffs), see tests/real-neffs.md"
)]
fn cat_of_neff_json_matches_gnu_tar_on_every_real_neff() {
    for file in real_neffs() {
        let f = file.to_str().unwrap();
        let r = neff_in(Path::new("."), &["cat", f, "neff.json"]);
        assert_eq!(code(&r), 0, "{f}: {}", stderr(&r));
        let script = "tail -c +1025 \"$1\" | tar -xzO neff.json";
        let tar = Command::new("sh")
            .args(["-c", script, "sh", f])
            .output()
            .unwrap();
        assert!(tar.status.success(), "{f}: tar: {}", stderr(&tar));
        assert!(!r.stdout.is_empty(), "{f}");
        assert!(r.stdout == tar.stdout, "{f}: cat and tar differ");
    }
}

#[test]
fn help_of_diff_and_cat_matches_the_golden_files() {
    for cmd in ["diff", "cat"] {
        let r = neff_in(Path::new("."), &[cmd, "--help"]);
        assert_eq!(code(&r), 0);
        golden_text(&format!("help-{cmd}.txt"), &stdout(&r));
    }
}

/// A pkg-2 NEFF of one member whose tar mtime and gzip MTIME are `mtime`.
fn neff_with_mtime(mtime: u32) -> Vec<u8> {
    let mut tar = tar_of(&[("neff.json", b"{\"a\": 1}")]);
    let mut header: [u8; 512] = tar[..512].try_into().unwrap();
    header[136..148].copy_from_slice(format!("{mtime:011o}\0").as_bytes());
    fix_checksum(&mut header);
    tar[..512].copy_from_slice(&header);
    let mut payload = gzip(&tar);
    payload[4..8].copy_from_slice(&mtime.to_le_bytes());
    neff_with_payload(2, &payload)
}

#[test]
fn mtimes_are_ignored_by_mtime_and_the_hash_by_framing() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    fs::write(d.join("a.neff"), neff_with_mtime(0)).unwrap();
    fs::write(d.join("b.neff"), neff_with_mtime(1_700_000_000)).unwrap();
    let out = stdout(&diff(d, &[]));
    assert!(out.contains("  gzip_mtime: 0 -> 1700000000\n"), "{out}");
    assert!(
        out.contains("changed neff.json: mtime: 0 -> 1700000000\n"),
        "{out}"
    );
    let r = diff(d, &["--ignore", "mtime"]);
    assert_eq!(code(&r), 1);
    let out = stdout(&r);
    assert!(out.contains("  hash: ") && !out.contains("mtime"), "{out}");
    let r = diff(d, &["--ignore", "mtime,framing"]);
    assert_eq!(code(&r), 0, "{}", stdout(&r));
}

#[test]
fn a_damaged_payload_compares_as_far_as_the_walk_goes() {
    let dir = workdir();
    let d = dir.path();
    let bytes = fs::read(d.join("w.neff")).unwrap();
    fs::write(
        d.join("cut.neff"),
        &bytes[..1024 + (bytes.len() - 1024) / 2],
    )
    .unwrap();
    let r = neff_in(d, &["diff", "w.neff", "cut.neff"]);
    assert_eq!(code(&r), 1);
    let out = stdout(&r);
    assert!(out.contains("  walk: complete -> "), "{out}");
    assert!(out.contains("removed "), "the members past the cut: {out}");
    let r = neff_in(d, &["diff", "cut.neff", "cut.neff"]);
    assert_eq!(code(&r), 0, "{}", stdout(&r));
    let r = neff_in(d, &["cat", "cut.neff", "sg00/w1.npy"]);
    assert_eq!(code(&r), 2);
    assert!(
        stderr(&r).starts_with("neff: error: cut.neff: "),
        "{}",
        stderr(&r)
    );
}

#[test]
fn diff_shows_the_payload_digest_in_the_standard_layout() {
    let dir = workdir();
    let d = dir.path();
    pack(d, "a.neff", &[]);
    flip(d, "sg00/b1.bin");
    pack(d, "b.neff", &[]);
    let r = diff(d, &["--json"]);
    let report: Value = serde_json::from_slice(&r.stdout).unwrap();
    let digest = report["header"]
        .as_array()
        .unwrap()
        .iter()
        .find(|f| f["field"] == "digest")
        .expect("a digest line")
        .clone();
    for (side, file) in [("a", "a.neff"), ("b", "b.neff")] {
        let bytes = fs::read(d.join(file)).unwrap();
        let size = u64::from_le_bytes(bytes[16..24].try_into().unwrap()) as usize;
        let md5 = format!(
            "{:x}",
            <md5::Md5 as md5::Digest>::digest(&bytes[1024..1024 + size])
        );
        assert_eq!(digest[side], md5, "{file}");
    }
    let r = diff(d, &["--json", "--ignore", "framing"]);
    let report: Value = serde_json::from_slice(&r.stdout).unwrap();
    assert!(!report["header"]
        .as_array()
        .unwrap()
        .iter()
        .any(|f| f["field"] == "digest"));
}
