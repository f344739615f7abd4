//! The `neff` command line: exit codes, JSON output, unpack containment, the
//! unpack → pack round trip, and `--help` pinned by golden files.

use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;

use crate::common::*;

fn example() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/allreduce")
}

/// Every file under `root`, relative path → bytes.
fn tree(root: &Path) -> Vec<(String, Vec<u8>)> {
    let mut out = Vec::new();
    let mut stack = vec![root.to_path_buf()];
    while let Some(dir) = stack.pop() {
        for e in fs::read_dir(dir).unwrap() {
            let p = e.unwrap().path();
            if p.is_dir() {
                stack.push(p);
            } else {
                let rel = p.strip_prefix(root).unwrap().to_string_lossy().into_owned();
                // The header an unpack records beside the members is not one.
                if rel != neff::writer::RECORDED_HEADER {
                    out.push((rel, fs::read(&p).unwrap()));
                }
            }
        }
    }
    out.sort();
    out
}

#[test]
fn pack_then_verify_the_example() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("allreduce.neff");
    let r = neff(&["pack", s(&example()), "-o", s(&out), "--name", "allreduce"]);
    assert_eq!(code(&r), 0, "{}", stderr(&r));
    assert!(stderr(&r).contains("wrote"), "{}", stderr(&r));
    let r = neff(&["verify", s(&out)]);
    assert_eq!(code(&r), 0);
    assert!(
        stdout(&r).contains("ACCEPTED on sunda, cayman, mariana"),
        "{}",
        stdout(&r)
    );
    // Packing twice gives identical bytes.
    let again = dir.path().join("again.neff");
    assert_eq!(
        code(&neff(&[
            "pack",
            s(&example()),
            "-o",
            s(&again),
            "--name",
            "allreduce"
        ])),
        0
    );
    assert_eq!(fs::read(&out).unwrap(), fs::read(&again).unwrap());
    // And so does stdout.
    let piped = neff(&[
        "pack",
        s(&example()),
        "-o",
        "-",
        "--name",
        "allreduce",
        "-q",
    ]);
    assert_eq!(code(&piped), 0);
    assert_eq!(piped.stdout, fs::read(&out).unwrap());
}

#[test]
fn verify_json_is_one_object_with_the_verdict() {
    let dir = tempfile::tempdir().unwrap();
    let bad = dir.path().join("bad.neff");
    let mut n = valid_neff();
    n[0xAC] ^= 1;
    fs::write(&bad, &n).unwrap();
    let r = neff(&["verify", s(&bad), "--json"]);
    assert_eq!(code(&r), 1);
    let v: serde_json::Value = serde_json::from_str(&stdout(&r)).expect("exactly one JSON object");
    assert_eq!(v["file"], s(&bad));
    assert_eq!(v["accepted"], false);
    assert_eq!(v["status"], 2);
    assert_eq!(v["status_name"], "NRT_INVALID");
    assert_eq!(v["gate"], "G9");
    assert_eq!(v["message"], "MD5 mismatch!");
    assert!(v["error_cause"].is_null());
    assert!(v["warnings"].is_array());
    assert_eq!(
        v["instance_arch"], "all",
        "--instance-arch all is the default"
    );
    assert_eq!(v["profile"]["verify_hash"], true);
    assert_eq!(v["tiers_run"], serde_json::json!(["container"]));
    assert!(v.get("tiers_not_implemented").is_none());
    assert_eq!(v["per_arch"]["sunda"]["gate"], "G9");

    let r = neff(&["verify", s(&bad), "--json", "--no-verify-hash"]);
    assert_eq!(code(&r), 0, "{}", stdout(&r));
    let v: serde_json::Value = serde_json::from_str(&stdout(&r)).unwrap();
    assert_eq!(v["instance_arch"], "all");
    assert_eq!(v["accepted"], true);
    assert_eq!(v["target"], "*");
    assert_eq!(
        v["targeted_arches"],
        serde_json::json!(["sunda", "cayman", "mariana"])
    );
    assert_eq!(v["per_arch"]["sunda"]["profile"]["instance_arch"], "sunda");
    assert_eq!(v["per_arch"]["mariana"]["profile"]["verify_hash"], false);
    assert_eq!(
        v["tiers_run"],
        serde_json::json!(["container", "manifests", "sections", "staging"])
    );

    let r = neff(&["verify", s(&bad), "--json", "--instance-arch", "cayman"]);
    let v: serde_json::Value = serde_json::from_str(&stdout(&r)).unwrap();
    assert_eq!(v["instance_arch"], "cayman");
    assert!(v.get("per_arch").is_none());

    let r = neff(&["verify", s(&bad), "--json", "--supported-features", "0x1"]);
    let v: serde_json::Value = serde_json::from_str(&stdout(&r)).unwrap();
    assert_eq!(v["profile"]["supported_features"], "0x1");
}

#[test]
fn exit_codes_for_usage_and_io_errors() {
    let r = neff(&["verify", "/nonexistent/file.neff"]);
    assert_eq!(code(&r), 2);
    assert!(
        stderr(&r).contains("/nonexistent/file.neff"),
        "{}",
        stderr(&r)
    );
    assert_eq!(code(&neff(&["verify"])), 2);
    assert_eq!(code(&neff(&["frobnicate"])), 2);
    assert_eq!(
        code(&neff(&["pack", "/nonexistent", "-o", "/tmp/x.neff"])),
        2
    );
    let r = neff(&["pack", s(&example()), "-o", "/tmp/x.neff", "--uuid", "nope"]);
    assert_eq!(code(&r), 2);
    assert!(stderr(&r).contains("invalid UUID"), "{}", stderr(&r));
    let r = neff(&["pack", s(&example()), "-o", "/tmp/x.neff", "--level", "10"]);
    assert_eq!(code(&r), 2);
}

#[test]
fn pack_refuses_an_invalid_result_unless_allowed() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("m.neff");
    let r = neff(&["pack", s(&example()), "-o", s(&out), "--major", "3"]);
    assert_eq!(code(&r), 1);
    assert!(stderr(&r).contains("G4"), "{}", stderr(&r));
    assert!(!out.exists());
    let r = neff(&[
        "pack",
        s(&example()),
        "-o",
        s(&out),
        "--major",
        "3",
        "--keep-refused",
        "--json",
    ]);
    assert_eq!(code(&r), 0, "{}", stderr(&r));
    let v: serde_json::Value = serde_json::from_str(&stdout(&r)).unwrap();
    assert_eq!(v["verdict"]["gate"], "G4");
    assert_eq!(code(&neff(&["verify", s(&out)])), 1);
}

#[test]
fn pack_flags_reach_the_header() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("m.neff");
    let r = neff(&[
        "pack",
        s(&example()),
        "-o",
        s(&out),
        "--pkg-version",
        "1",
        "--level",
        "9",
        "--name",
        "m",
        "--uuid",
        "561826fb-125f-4bb8-991c-29e085c8949a",
        "--feature-bits",
        "0x404",
        "--major",
        "1",
        "--minor",
        "5",
        "--build-version",
        "b1",
        "--vnc-size",
        "2",
        "--requested-tpb-count",
        "3",
    ]);
    assert_eq!(code(&r), 0, "{}", stderr(&r));
    let r = neff(&["inspect", s(&out), "--json"]);
    assert_eq!(code(&r), 0);
    let v: serde_json::Value = serde_json::from_str(&stdout(&r)).unwrap();
    let h = &v["header"];
    assert_eq!(h["pkg_version"], 1);
    assert_eq!(h["name"], "m");
    assert_eq!(h["uuid"], "561826fb-125f-4bb8-991c-29e085c8949a");
    assert_eq!(h["feature_bits"], 0x404);
    assert_eq!(
        (
            h["neff_version_major"].as_u64(),
            h["neff_version_minor"].as_u64()
        ),
        (Some(1), Some(5))
    );
    assert_eq!(h["build_version"], "b1");
    assert_eq!(
        (h["vnc_size"].as_u64(), h["requested_tpb_count"].as_u64()),
        (Some(2), Some(3))
    );
    assert_eq!(v["compression"], "none");
    assert_eq!(v["members"][0]["name"], "kelf-a.json");
    assert_eq!(v["members"][2]["type"], "directory");
}

#[test]
fn inspect_shows_header_and_members() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("m.neff");
    assert_eq!(
        code(&neff(&[
            "pack",
            s(&example()),
            "-o",
            s(&out),
            "--name",
            "x"
        ])),
        0
    );
    let r = neff(&["inspect", s(&out)]);
    assert_eq!(code(&r), 0);
    let text = stdout(&r);
    for needle in [
        "pkg_version:         2",
        "header_size:         0x400",
        "name:                \"x\"",
        "feature_bits:        0x0",
        "sg00/pe.bin",
        "directory",
        "verdict: ACCEPTED",
    ] {
        assert!(text.contains(needle), "missing {needle:?} in\n{text}");
    }
    let hash_line = text.lines().find(|l| l.contains("hash:")).unwrap();
    assert!(
        hash_line
            .trim_end()
            .ends_with("30303030303030303030303030303030"),
        "{hash_line}"
    );
}

#[test]
fn unpack_then_pack_gives_identical_bytes() {
    let dir = tempfile::tempdir().unwrap();
    // Defaults.
    let a = dir.path().join("a.neff");
    assert_eq!(code(&neff(&["pack", s(&example()), "-o", s(&a)])), 0);
    let tree_dir = dir.path().join("tree");
    let r = neff(&["unpack", s(&a), "-o", s(&tree_dir)]);
    assert_eq!(code(&r), 0, "{}", stderr(&r));
    assert_eq!(tree(&tree_dir), tree(&example()), "members are byte-exact");
    let b = dir.path().join("b.neff");
    assert_eq!(code(&neff(&["pack", s(&tree_dir), "-o", s(&b)])), 0);
    assert_eq!(fs::read(&a).unwrap(), fs::read(&b).unwrap());

    // Non-default header fields travel through --header-out / --header.
    let c = dir.path().join("c.neff");
    let r = neff(&[
        "pack",
        s(&example()),
        "-o",
        s(&c),
        "--name",
        "net",
        "--pkg-version",
        "1",
        "--feature-bits",
        "4",
        "--uuid",
        "random",
    ]);
    assert_eq!(code(&r), 0);
    let tree2 = dir.path().join("tree2");
    let header = dir.path().join("header.json");
    assert_eq!(
        code(&neff(&[
            "unpack",
            s(&c),
            "-o",
            s(&tree2),
            "--header-out",
            s(&header)
        ])),
        0
    );
    let d = dir.path().join("d.neff");
    assert_eq!(
        code(&neff(&[
            "pack",
            s(&tree2),
            "-o",
            s(&d),
            "--header",
            s(&header)
        ])),
        0
    );
    assert_eq!(fs::read(&c).unwrap(), fs::read(&d).unwrap());
}

#[test]
fn unpack_refuses_a_non_empty_directory_without_force() {
    let dir = tempfile::tempdir().unwrap();
    let a = dir.path().join("a.neff");
    fs::write(&a, valid_neff()).unwrap();
    let dest = dir.path().join("dest");
    fs::create_dir(&dest).unwrap();
    fs::write(dest.join("keep.txt"), b"mine").unwrap();
    let r = neff(&["unpack", s(&a), "-o", s(&dest)]);
    assert_eq!(code(&r), 2);
    assert!(stderr(&r).contains("--force"), "{}", stderr(&r));
    assert!(!dest.join("neff.json").exists());
    assert_eq!(
        code(&neff(&["unpack", s(&a), "-o", s(&dest), "--force"])),
        0
    );
    assert_eq!(
        fs::read(dest.join("sg00/def.json")).unwrap(),
        DEF_JSON.as_bytes()
    );
    assert_eq!(fs::read(dest.join("keep.txt")).unwrap(), b"mine");
}

#[test]
fn unpack_stays_contained() {
    let evil: Vec<(&str, Vec<u8>)> = vec![
        ("dotdot", finish_tar(entry(b"../evil.txt", b'0', b"x"))),
        (
            "nested dotdot",
            finish_tar(entry(b"a/../../evil.txt", b'0', b"x")),
        ),
        (
            "absolute",
            finish_tar(entry(b"/tmp/neff-evil-abs.txt", b'0', b"x")),
        ),
        ("symlink", finish_tar(link(b"ln", b'2', b"/etc/passwd"))),
        ("hardlink", finish_tar(link(b"hl", b'1', b"/etc/passwd"))),
        ("device", finish_tar(link(b"dev", b'3', b""))),
    ];
    for (what, tar) in evil {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("evil.neff");
        let mut tar_with_good_first = entry(b"neff.json", b'0', b"{}");
        tar_with_good_first.extend_from_slice(&tar);
        fs::write(&file, neff_with_payload(2, &gzip(&tar_with_good_first))).unwrap();
        let dest = dir.path().join("out");
        let r = neff(&["unpack", s(&file), "-o", s(&dest)]);
        assert_eq!(code(&r), 2, "{what}: {}", stderr(&r));
        assert!(
            stderr(&r).contains("refusing to unpack"),
            "{what}: {}",
            stderr(&r)
        );
        assert!(!dir.path().join("evil.txt").exists(), "{what}");
        assert!(!Path::new("/tmp/neff-evil-abs.txt").exists(), "{what}");
        assert!(
            !dest.join("neff.json").exists(),
            "{what}: nothing is written before the check"
        );
    }
}

#[cfg(unix)]
#[test]
fn unpack_never_writes_through_a_symlink_in_the_destination() {
    let dir = tempfile::tempdir().unwrap();
    let outside = dir.path().join("outside");
    fs::create_dir(&outside).unwrap();
    let dest = dir.path().join("dest");
    fs::create_dir(&dest).unwrap();
    std::os::unix::fs::symlink(&outside, dest.join("sg00")).unwrap();
    let file = dir.path().join("m.neff");
    fs::write(&file, valid_neff()).unwrap();
    let r = neff(&["unpack", s(&file), "-o", s(&dest), "--force"]);
    assert_eq!(code(&r), 2, "{}", stderr(&r));
    assert!(stderr(&r).contains("symlink"), "{}", stderr(&r));
    assert_eq!(fs::read_dir(&outside).unwrap().count(), 0);
    assert!(
        !dest.join("neff.json").exists(),
        "nothing is written before the check"
    );
}

/// A tar entry with data, padded.
fn entry(name: &[u8], type_flag: u8, data: &[u8]) -> Vec<u8> {
    let mut out = tar_header(name, type_flag, &size_field(data.len() as u64)).to_vec();
    push_padded(&mut out, data);
    out
}

/// A link or device entry.
fn link(name: &[u8], type_flag: u8, target: &[u8]) -> Vec<u8> {
    let mut h = tar_header(name, type_flag, &size_field(0));
    h[157..157 + target.len()].copy_from_slice(target);
    fix_checksum(&mut h);
    h.to_vec()
}

/// An entry under a GNU long name (`L` header first).
fn long_named(name: &[u8], type_flag: u8, data: &[u8]) -> Vec<u8> {
    let mut out = entry(b"././@LongLink", b'L', &[name, b"\0"].concat());
    out.extend(entry(&name[..name.len().min(100)], type_flag, data));
    out
}

/// Writes a pkg-2 NEFF of `tar` (end blocks added) into `dir`.
fn neff_of_tar(dir: &Path, tar: Vec<u8>) -> PathBuf {
    let file = dir.join("t.neff");
    fs::write(&file, neff_with_payload(2, &gzip(&finish_tar(tar)))).unwrap();
    file
}

#[test]
fn unpack_checks_every_entry_first_even_past_the_entry_table() {
    // 64 KiB names (`./` repeated) fill the walk's 64 MiB entry table within
    // 100 entries: the symlink after them must still refuse before any folder is made.
    let dir = tempfile::tempdir().unwrap();
    let mut tar = Vec::new();
    for i in 0..120 {
        let name = format!("{}d{i}/", "./".repeat(32 << 10));
        tar.extend(long_named(name.as_bytes(), b'5', b""));
    }
    tar.extend(link(b"ln", b'2', b"/etc/passwd"));
    let file = neff_of_tar(dir.path(), tar);
    let r = neff(&["inspect", s(&file)]);
    assert!(
        stdout(&r).contains("member table is cut short"),
        "{}",
        stdout(&r)
    );
    let dest = dir.path().join("out");
    let r = neff(&["unpack", s(&file), "-o", s(&dest)]);
    assert_eq!(code(&r), 2, "{}", stderr(&r));
    assert!(
        stderr(&r).contains("entry ln is a symlink"),
        "{}",
        stderr(&r)
    );
    assert!(!dest.exists(), "nothing is written before the check");
}

#[test]
fn unpack_writes_only_the_last_of_repeated_names() {
    let dir = tempfile::tempdir().unwrap();
    let mut tar = entry(b"a.bin", b'0', b"1");
    tar.extend(entry(b"./a.bin", b'0', b"22"));
    tar.extend(entry(b"a.bin", b'0', b"333"));
    let file = neff_of_tar(dir.path(), tar);
    let dest = dir.path().join("out");
    let r = neff(&["unpack", s(&file), "-o", s(&dest), "--json"]);
    assert_eq!(code(&r), 0, "{}", stderr(&r));
    let summary: serde_json::Value = serde_json::from_str(&stdout(&r)).unwrap();
    assert_eq!(summary["files"], 1);
    assert_eq!(summary["replaced"], 2);
    assert_eq!(summary["bytes"], 3);
    assert_eq!(fs::read(dest.join("a.bin")).unwrap(), b"333");

    // A path both a file and a folder is refused before anything is written.
    let mut tar = entry(b"first.bin", b'0', b"x");
    tar.extend(entry(b"a.bin", b'0', b"x"));
    tar.extend(entry(b"a.bin/b.bin", b'0', b"x"));
    let file = neff_of_tar(dir.path(), tar);
    let dest = dir.path().join("out2");
    let r = neff(&["unpack", s(&file), "-o", s(&dest)]);
    assert_eq!(code(&r), 2, "{}", stderr(&r));
    assert!(
        stderr(&r).contains("needs a.bin as a folder"),
        "{}",
        stderr(&r)
    );
    assert!(!dest.exists());
}

#[test]
fn unpack_caps_entries_bytes_and_depth() {
    let dir = tempfile::tempdir().unwrap();
    // 20 entries, 30 bytes, 3 components deep at most.
    let mut tar = entry(b"a/b/c.bin", b'0', b"hello world");
    for i in 0..19 {
        tar.extend(entry(format!("f{i}.bin").as_bytes(), b'0', b"x"));
    }
    let file = neff_of_tar(dir.path(), tar);
    let cases = [
        ("--max-entries", "19", "20", "more than 19 entries"),
        ("--max-bytes", "29", "30", "hold 30 bytes, more than 29"),
        ("--max-depth", "2", "3", "is 3 folders deep, more than 2"),
    ];
    for (n, (flag, low, enough, why)) in cases.into_iter().enumerate() {
        let dest = dir.path().join(format!("low{n}"));
        let r = neff(&["unpack", s(&file), "-o", s(&dest), flag, low]);
        assert_eq!(code(&r), 2, "{flag}: {}", stderr(&r));
        assert!(stderr(&r).contains(why), "{flag}: {}", stderr(&r));
        assert!(stderr(&r).contains(flag), "{flag}: {}", stderr(&r));
        assert!(!dest.exists(), "{flag}: nothing is written");
        let dest = dir.path().join(format!("enough{n}"));
        let r = neff(&["unpack", s(&file), "-o", s(&dest), flag, enough]);
        assert_eq!(code(&r), 0, "{flag}: {}", stderr(&r));
        assert_eq!(fs::read(dest.join("a/b/c.bin")).unwrap(), b"hello world");
    }

    // The default depth cap is 64 components.
    let deep = format!("{}f.bin", "a/".repeat(64));
    let file = neff_of_tar(dir.path(), long_named(deep.as_bytes(), b'0', b"x"));
    let dest = dir.path().join("deep");
    let r = neff(&["unpack", s(&file), "-o", s(&dest)]);
    assert_eq!(code(&r), 2, "{}", stderr(&r));
    assert!(
        stderr(&r).contains("65 folders deep, more than 64 (raise the cap with --max-depth)"),
        "{}",
        stderr(&r)
    );
    assert!(!dest.exists());
    let r = neff(&["unpack", s(&file), "-o", s(&dest), "--max-depth", "65"]);
    assert_eq!(code(&r), 0, "{}", stderr(&r));
}

#[cfg(unix)]
#[test]
fn unpack_force_replaces_a_hardlinked_file_without_writing_through_it() {
    let dir = tempfile::tempdir().unwrap();
    let victim = dir.path().join("victim");
    fs::write(&victim, b"precious").unwrap();
    let dest = dir.path().join("dest");
    fs::create_dir(&dest).unwrap();
    fs::hard_link(&victim, dest.join("neff.json")).unwrap();
    let file = dir.path().join("m.neff");
    fs::write(&file, valid_neff()).unwrap();
    let r = neff(&["unpack", s(&file), "-o", s(&dest), "--force"]);
    assert_eq!(code(&r), 0, "{}", stderr(&r));
    assert_eq!(fs::read(&victim).unwrap(), b"precious");
    assert_eq!(
        fs::read(dest.join("neff.json")).unwrap(),
        NEFF_JSON.as_bytes()
    );
}

#[cfg(unix)]
#[test]
fn unpack_force_never_opens_a_fifo_in_the_destination() {
    let dir = tempfile::tempdir().unwrap();
    let dest = dir.path().join("dest");
    fs::create_dir(&dest).unwrap();
    let fifo = dest.join("neff.json");
    let made = Command::new("mkfifo")
        .arg(&fifo)
        .status()
        .expect("run mkfifo");
    assert!(made.success());
    let file = dir.path().join("m.neff");
    fs::write(&file, valid_neff()).unwrap();
    let mut child = neff_command()
        .args(["unpack", s(&file), "-o", s(&dest), "--force"])
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("run neff");
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
    while child.try_wait().unwrap().is_none() {
        if std::time::Instant::now() > deadline {
            child.kill().unwrap();
            panic!("neff unpack hangs on a FIFO in the destination");
        }
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    let r = child.wait_with_output().unwrap();
    assert_eq!(code(&r), 2, "{}", stderr(&r));
    assert!(
        stderr(&r).contains(&format!("{} is a FIFO", fifo.display())),
        "{}",
        stderr(&r)
    );
    use std::os::unix::fs::FileTypeExt;
    assert!(fs::symlink_metadata(&fifo).unwrap().file_type().is_fifo());
    assert!(
        !dest.join("sg00").exists(),
        "nothing is written before the check"
    );
}

#[test]
fn unpack_header_out_never_lands_inside_the_destination() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("m.neff");
    fs::write(&file, valid_neff()).unwrap();
    let dest = dir.path().join("dest");
    let inside = dest.join("neff.json");
    let r = neff(&[
        "unpack",
        s(&file),
        "-o",
        s(&dest),
        "--header-out",
        s(&inside),
    ]);
    assert_eq!(code(&r), 2, "{}", stderr(&r));
    assert!(stderr(&r).contains("--header-out"), "{}", stderr(&r));
    assert!(!dest.exists(), "refused before unpacking");
    #[cfg(unix)]
    {
        let link = dir.path().join("h.json");
        std::os::unix::fs::symlink(&inside, &link).unwrap();
        let r = neff(&["unpack", s(&file), "-o", s(&dest), "--header-out", s(&link)]);
        assert_eq!(code(&r), 2, "{}", stderr(&r));
        assert!(
            stderr(&r).contains("is inside the destination"),
            "{}",
            stderr(&r)
        );
        fs::remove_file(&link).unwrap();
    }
    let header = dir.path().join("h.json");
    let r = neff(&[
        "unpack",
        s(&file),
        "-o",
        s(&dest),
        "--header-out",
        s(&header),
    ]);
    assert_eq!(code(&r), 0, "{}", stderr(&r));
    assert_eq!(
        fs::read(dest.join("neff.json")).unwrap(),
        NEFF_JSON.as_bytes()
    );
    assert!(fs::read_to_string(&header).unwrap().contains("framing"));
    // A bare relative name is beside the working folder, outside DIR.
    let r = neff_command()
        .args(["unpack", s(&file), "-o", "rel", "--header-out", "h2.json"])
        .current_dir(dir.path())
        .output()
        .unwrap();
    assert_eq!(code(&r), 0, "{}", stderr(&r));
    assert!(dir.path().join("h2.json").exists());
}

#[test]
fn help_output_matches_the_golden_files() {
    for cmd in ["", "pack", "unpack", "inspect", "verify"] {
        let mut args: Vec<&str> = cmd.split_whitespace().collect();
        args.push("--help");
        let r = neff(&args);
        assert_eq!(code(&r), 0);
        let name = match cmd {
            "" => "help.txt".to_string(),
            cmd => format!("help-{cmd}.txt"),
        };
        golden(&name, &r.stdout);
    }
}

#[test]
fn unpack_accepts_a_dot_slash_root_and_checks_everything_first() {
    let dir = tempfile::tempdir().unwrap();
    // The shape `tar -C dir -czf x .` produces.
    let mut tar = tar_header(b"./", b'5', &size_field(0)).to_vec();
    tar.extend_from_slice(&tar_header(b"./a/", b'5', &size_field(0)));
    tar.extend(entry(b"./a/b.bin", b'0', b"hello"));
    let file = dir.path().join("dot.neff");
    fs::write(&file, neff_with_payload(2, &gzip(&finish_tar(tar)))).unwrap();
    let dest = dir.path().join("out");
    let r = neff(&["unpack", s(&file), "-o", s(&dest)]);
    assert_eq!(code(&r), 0, "{}", stderr(&r));
    assert_eq!(fs::read(dest.join("a/b.bin")).unwrap(), b"hello");

    // A file entry naming the destination itself is refused before anything is written.
    let mut tar = entry(b"a.bin", b'0', b"hello");
    tar.extend(entry(b".", b'0', b""));
    let file = dir.path().join("bad.neff");
    fs::write(&file, neff_with_payload(2, &gzip(&finish_tar(tar)))).unwrap();
    let dest = dir.path().join("out2");
    let r = neff(&["unpack", s(&file), "-o", s(&dest)]);
    assert_eq!(code(&r), 2, "{}", stderr(&r));
    assert!(
        !dest.join("a.bin").exists(),
        "nothing is written before the check"
    );
}

#[test]
fn inspect_json_describes_the_model() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("m.neff");
    let r = neff(&[
        "pack",
        s(&example()),
        "-o",
        s(&out),
        "--feature-bits",
        "0x1000004",
    ]);
    assert_eq!(code(&r), 0, "{}", stderr(&r));
    let r = neff(&["inspect", s(&out), "--json"]);
    assert_eq!(code(&r), 0);
    let v: serde_json::Value = serde_json::from_str(&stdout(&r)).unwrap();
    assert_eq!(
        v["feature_names"],
        serde_json::json!(["neff_feature_custom_ops", "arch_level_40"])
    );
    let m = &v["model"];
    assert_eq!(
        (
            m["kelf"].as_str(),
            m["version"].as_str(),
            m["target"].as_str()
        ),
        (Some("kelf-a.json"), Some("0.5"), Some("*"))
    );
    let g = &m["graphs"][0];
    assert_eq!(g["name"], "sg00");
    assert_eq!(g["inputs"][0]["name"], "input");
    assert_eq!(g["inputs"][0]["var_id"], 0);
    assert_eq!(g["inputs"][0]["size"], 128);
    assert_eq!(g["inputs"][0]["shape"], serde_json::json!([1, 1, 1, 32]));
    assert_eq!(g["outputs"][0]["var_id"], 2);
    assert_eq!(g["queues"][0]["name"], "q_gradient_in");
    assert_eq!(g["queues"][1]["type"], "out");
    let engines: Vec<(String, Option<u64>)> = g["engines"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| {
            (
                e["engine"].as_str().unwrap().to_string(),
                e["instr_size"].as_u64(),
            )
        })
        .collect();
    assert_eq!(engines[0], ("pe".to_string(), Some(64)));
    assert_eq!(engines[2], ("pool".to_string(), Some(192)));
    assert!(m["unreferenced_members"]
        .as_array()
        .unwrap()
        .contains(&"sg00/pe.asm".into()));
    let missing: Vec<&str> = m["missing_references"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["member"].as_str().unwrap())
        .collect();
    assert_eq!(missing, ["sg00/wavegraph-bin.json", "sg00/act_info.json"]);
    assert_eq!(v["verdict"]["accepted"], true);
    assert_eq!(v["verdict"]["instance_arch"], "all");
}

#[test]
fn the_thread_count_does_not_change_the_bytes() {
    let dir = tempfile::tempdir().unwrap();
    let tree = dir.path().join("tree");
    write_model_tree(&tree);
    // Three compression chunks of mixed data.
    let data: Vec<u8> = (0..3_300_000u32)
        .map(|i| (i.wrapping_mul(2654435761) >> (i % 23)) as u8)
        .collect();
    fs::write(tree.join("sg00/weights.bin"), data).unwrap();
    let mut outputs = Vec::new();
    for threads in ["1", "2", "5"] {
        let out = dir.path().join(format!("t{threads}.neff"));
        let r = neff(&["pack", s(&tree), "-o", s(&out), "--threads", threads, "-q"]);
        assert_eq!(code(&r), 0, "{}", stderr(&r));
        outputs.push(fs::read(&out).unwrap());
    }
    assert_eq!(outputs[0], outputs[1]);
    assert_eq!(outputs[0], outputs[2]);
    let r = neff(&["verify", s(&dir.path().join("t2.neff"))]);
    assert_eq!(code(&r), 0, "{}", stdout(&r));
}

/// Every step of an unpack into a non-empty folder (each entry written into
/// the temp dir, each path checked, each moved into place) is held in turn
/// (`NEFF_TEST_HOLD_UNPACK`) while the folders it writes into, in DIR and in
/// its temp dir, are swapped for symlinks to a folder outside: nothing is
/// ever written outside.
#[cfg(unix)]
#[test]
fn swapping_a_folder_for_a_symlink_at_any_step_writes_nothing_outside() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("m.neff");
    fs::write(&file, valid_neff()).unwrap();
    for step in 0..200 {
        let run = dir.path().join(format!("run{step}"));
        let (dest, outside) = (run.join("dest"), run.join("outside"));
        fs::create_dir_all(dest.join("sg00")).unwrap();
        fs::create_dir_all(&outside).unwrap();
        fs::write(dest.join("keep.txt"), b"mine").unwrap();
        let marker = run.join("held");
        let mut child = crate::common::neff_command()
            .args(["unpack", s(&file), "-o", s(&dest), "--force", "-q"])
            .env(
                "NEFF_TEST_HOLD_UNPACK",
                format!("{step}:{}", marker.display()),
            )
            .stderr(std::process::Stdio::null())
            .spawn()
            .unwrap();
        let start = std::time::Instant::now();
        let held = loop {
            if marker.exists() {
                break true;
            }
            if child.try_wait().unwrap().is_some() {
                break false;
            }
            assert!(start.elapsed().as_secs() < 60, "step {step}: stuck");
            std::thread::sleep(std::time::Duration::from_millis(1));
        };
        if !held {
            // Past the last step: every step before was held once.
            assert!(step > 3, "only {step} steps");
            return;
        }
        // Swap every `sg00` folder (in DIR and in the temp dir) for a symlink.
        let mut folders = vec![dest.join("sg00")];
        for e in fs::read_dir(&dest).unwrap().flatten() {
            if e.file_name().to_string_lossy().starts_with(".neff-unpack.") {
                folders.push(e.path().join("sg00"));
            }
        }
        for folder in folders {
            if folder.is_dir() && !folder.is_symlink() {
                fs::rename(&folder, folder.with_extension("real")).unwrap();
                std::os::unix::fs::symlink(&outside, &folder).unwrap();
            }
        }
        fs::remove_file(&marker).unwrap();
        child.wait().unwrap();
        assert_eq!(
            fs::read_dir(&outside).unwrap().count(),
            0,
            "step {step}: something was written outside DIR"
        );
        assert_eq!(fs::read(dest.join("keep.txt")).unwrap(), b"mine");
    }
    panic!("more than 200 steps");
}
