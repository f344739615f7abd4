//! `neff verify` (and `inspect`) on stdin, on several files and on folders:
//! one line per file in input order and a summary, the exit status over all
//! of them, `--json` as one document, `--threads` not changing the output,
//! and the default text output per targeted arch.

use std::fs;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Output, Stdio};

use crate::common::*;

/// `neff ARGS` with `input` written into a pipe on stdin.
fn neff_piped(args: &[&str], input: &[u8]) -> Output {
    let mut child = neff_command()
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("run neff");
    let mut stdin = child.stdin.take().expect("stdin");
    let input = input.to_vec();
    let writer = std::thread::spawn(move || stdin.write_all(&input));
    let out = child.wait_with_output().expect("wait for neff");
    writer.join().expect("writer").expect("write stdin");
    out
}

/// `neff ARGS` with the file `path` as stdin (a seekable stdin).
fn neff_redirected(args: &[&str], path: &Path) -> Output {
    neff_command()
        .args(args)
        .stdin(fs::File::open(path).expect("open stdin file"))
        .output()
        .expect("run neff")
}

/// The minimal model refused by the hash check (G9).
fn bad_hash_neff() -> Vec<u8> {
    let mut n = valid_neff();
    n[0xAC] ^= 1;
    n
}

/// The minimal model targeting cayman only.
fn cayman_neff() -> Vec<u8> {
    let kelf = KELF_JSON.replace(r#""target": "*""#, r#""target": "cayman""#);
    model_neff(&[("kelf-0.json", kelf.as_bytes())])
}

fn write(path: &Path, bytes: &[u8]) -> PathBuf {
    if let Some(parent) = path.parent() {
        fs::create_dir_all(parent).unwrap();
    }
    fs::write(path, bytes).unwrap();
    path.to_path_buf()
}

#[test]
fn verify_reads_stdin_from_a_pipe_and_from_a_redirected_file() {
    let dir = tempfile::tempdir().unwrap();
    let good = write(&dir.path().join("good.neff"), &valid_neff());
    for out in [
        neff_piped(&["verify", "-"], &valid_neff()),
        neff_redirected(&["verify", "-"], &good),
    ] {
        assert_eq!(code(&out), 0, "{}", stdout(&out));
        assert!(
            stdout(&out).contains("<stdin>: ACCEPTED (targets sunda, cayman, mariana)"),
            "{}",
            stdout(&out)
        );
    }
    let out = neff_piped(&["verify", "-", "--json"], &valid_neff());
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).expect("one JSON object");
    assert_eq!(v["file"], "<stdin>");
    assert_eq!(v["accepted"], true);
    assert_eq!(v["per_arch"]["cayman"]["file"], "<stdin>");
}

#[test]
fn a_refused_neff_on_stdin_is_exit_1_with_the_gate() {
    let out = neff_piped(&["verify", "-"], &bad_hash_neff());
    assert_eq!(code(&out), 1, "{}", stdout(&out));
    assert!(
        stdout(&out).contains("<stdin>: REJECTED by G9 (2 NRT_INVALID): MD5 mismatch!"),
        "{}",
        stdout(&out)
    );
}

#[test]
fn an_empty_stdin_is_refused_by_g2_as_an_empty_file_is() {
    let dir = tempfile::tempdir().unwrap();
    let empty = write(&dir.path().join("empty.neff"), b"");
    let from_file = neff(&["verify", s(&empty)]);
    let out = neff_piped(&["verify", "-"], b"");
    assert_eq!(code(&out), 1);
    assert_eq!(code(&from_file), 1);
    let text = stdout(&out);
    assert!(
        text.contains(
            "<stdin>: REJECTED by G2 (2 NRT_INVALID): Invalid number of NEFF bytes received 0"
        ),
        "{text}"
    );
    // The same verdict as the empty file, only named <stdin>.
    assert_eq!(text, stdout(&from_file).replace(s(&empty), "<stdin>"));
}

#[test]
fn inspect_reads_stdin() {
    let out = neff_piped(&["inspect", "-"], &valid_neff());
    assert_eq!(code(&out), 0, "{}", stdout(&out));
    assert!(
        stdout(&out).starts_with("file: <stdin>\n"),
        "{}",
        stdout(&out)
    );
    let out = neff_piped(&["inspect", "-", "--json"], &bad_hash_neff());
    assert_eq!(code(&out), 1);
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).expect("one JSON object");
    assert_eq!(v["file"], "<stdin>");
    assert_eq!(v["verdict"]["gate"], "G9");
}

#[test]
fn several_files_give_one_line_each_a_summary_and_the_worst_exit_status() {
    let dir = tempfile::tempdir().unwrap();
    let good = write(&dir.path().join("good.neff"), &valid_neff());
    let bad = write(&dir.path().join("bad.neff"), &bad_hash_neff());
    let missing = dir.path().join("missing.neff");

    let out = neff(&["verify", s(&good), s(&bad), s(&missing)]);
    assert_eq!(code(&out), 2, "an unreadable input is exit 2");
    let lines: Vec<String> = stdout(&out).lines().map(str::to_string).collect();
    assert_eq!(
        lines,
        [
            format!("{}: ACCEPTED (targets sunda, cayman, mariana)", s(&good)),
            format!("{}: REJECTED by G9 (2 NRT_INVALID): MD5 mismatch!", s(&bad)),
            format!(
                "{}: ERROR: cannot open: No such file or directory (os error 2)",
                s(&missing)
            ),
            "1 accepted, 1 refused (by gate: G9 1), 1 error".to_string(),
        ]
    );
    let out = neff(&["verify", s(&bad), s(&good)]);
    assert_eq!(code(&out), 1, "a refusal without errors is exit 1");
    let out = neff(&["verify", s(&good), s(&good)]);
    assert_eq!(code(&out), 0);
    assert!(stdout(&out).ends_with("2 accepted, 0 refused, 0 errors\n"));
}

/// A compile-cache-like tree: nested folders, files that are not NEFFs, a
/// symlink loop and a dangling `.neff` symlink.
fn cache_tree(root: &Path) -> Vec<PathBuf> {
    let neffs = vec![
        write(&root.join("a/model.neff"), &valid_neff()),
        write(&root.join("a/b/c/deep.neff"), &bad_hash_neff()),
        write(&root.join("b.neff"), &cayman_neff()),
        write(&root.join("z/last.neff"), &valid_neff()),
    ];
    write(&root.join("a/notes.txt"), b"not a NEFF");
    write(&root.join("a/model.neff.lock"), b"");
    #[cfg(unix)]
    std::os::unix::fs::symlink(root, root.join("a/b/loop")).unwrap();
    neffs
}

#[test]
fn a_folder_is_walked_recursively_in_path_order_without_following_symlinked_folders() {
    let dir = tempfile::tempdir().unwrap();
    let neffs = cache_tree(dir.path());
    let out = neff(&["verify", s(dir.path())]);
    assert_eq!(code(&out), 1, "{}", stdout(&out));
    let text = stdout(&out);
    let (summary, lines) = text
        .lines()
        .collect::<Vec<_>>()
        .split_last()
        .map(|(l, r)| (*l, r.to_vec()))
        .unwrap();
    let files: Vec<&str> = lines.iter().filter_map(|l| l.split(": ").next()).collect();
    let mut expected: Vec<&str> = neffs.iter().map(|p| s(p)).collect();
    expected.sort();
    assert_eq!(files, expected, "{text}");
    assert_eq!(summary, "3 accepted, 1 refused (by gate: G9 1), 0 errors");
}

#[cfg(unix)]
#[test]
fn an_unreadable_entry_in_a_folder_is_reported_and_the_rest_checked() {
    let dir = tempfile::tempdir().unwrap();
    let good = write(&dir.path().join("good.neff"), &valid_neff());
    let dangling = dir.path().join("dangling.neff");
    std::os::unix::fs::symlink(dir.path().join("nowhere"), &dangling).unwrap();
    let out = neff(&["verify", s(dir.path())]);
    assert_eq!(code(&out), 2, "{}", stdout(&out));
    let text = stdout(&out);
    assert!(
        text.starts_with(&format!("{}: ERROR: cannot read: ", s(&dangling))),
        "{text}"
    );
    assert!(text.contains(&format!("{}: ACCEPTED", s(&good))), "{text}");
    assert!(text.ends_with("1 accepted, 0 refused, 1 error\n"), "{text}");
}

#[test]
fn json_of_many_is_one_document_with_every_file_and_the_summary() {
    let dir = tempfile::tempdir().unwrap();
    let neffs = cache_tree(&dir.path().join("cache"));
    let missing = dir.path().join("missing.neff");
    let out = neff(&[
        "verify",
        "--json",
        s(&dir.path().join("cache")),
        s(&missing),
    ]);
    assert_eq!(code(&out), 2);
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).expect("one JSON document");
    let files = v["files"].as_array().expect("files");
    assert_eq!(files.len(), neffs.len() + 1);
    let mut sorted: Vec<&str> = neffs.iter().map(|p| s(p)).collect();
    sorted.sort();
    sorted.push(s(&missing));
    let names: Vec<&str> = files.iter().map(|f| f["file"].as_str().unwrap()).collect();
    assert_eq!(names, sorted);
    let deep = &files[0];
    assert_eq!(deep["gate"], "G9");
    assert_eq!(deep["accepted"], false);
    assert_eq!(deep["per_arch"]["sunda"]["gate"], "G9");
    assert_eq!(files[2]["targeted_arches"], serde_json::json!(["cayman"]));
    let error = &files[4]["error"];
    assert_eq!(error["kind"], "read");
    assert!(error["message"].as_str().unwrap().contains("cannot open"));
    assert_eq!(
        v["summary"],
        serde_json::json!({"files": 5, "accepted": 3, "refused": 1, "errors": 1, "by_gate": {"G9": 1}})
    );
}

#[test]
fn the_output_does_not_depend_on_the_thread_count() {
    let dir = tempfile::tempdir().unwrap();
    for i in 0..24 {
        let bytes = match i % 3 {
            0 => valid_neff(),
            1 => bad_hash_neff(),
            _ => cayman_neff(),
        };
        write(&dir.path().join(format!("d{}/f{i:02}.neff", i % 4)), &bytes);
    }
    for json in [false, true] {
        let run = |threads: &str| {
            let mut args = vec!["verify", s(dir.path()), "--threads", threads];
            if json {
                args.push("--json");
            }
            let out = neff(&args);
            assert_eq!(code(&out), 1);
            out.stdout
        };
        let one = run("1");
        assert_eq!(one, run("4"), "json: {json}");
        assert_eq!(one, run("16"), "json: {json}");
    }
}

#[test]
fn the_text_output_shows_the_targeted_arches_and_one_line_for_the_others() {
    let dir = tempfile::tempdir().unwrap();
    let cayman = write(&dir.path().join("cayman.neff"), &cayman_neff());
    let out = neff(&["verify", s(&cayman)]);
    assert_eq!(code(&out), 0);
    let text = stdout(&out);
    let name = s(&cayman);
    assert!(
        !text.contains("G17 ("),
        "no block for the arches it does not target: {text}"
    );
    assert!(!text.contains("on sunda"), "{text}");
    assert_eq!(
        text.lines().next(),
        Some(
            format!(
                "{name}: ACCEPTED on cayman (tiers run: container, manifests, sections, staging)"
            )
            .as_str()
        )
    );
    assert!(
        text.ends_with(&format!(
            "  not targeted: sunda, mariana (refused by G17); --instance-arch ARCH shows one in full\n{name}: ACCEPTED (targets cayman)\n"
        )),
        "{text}"
    );
    // --instance-arch shows a non-targeted arch in full.
    let out = neff(&["verify", s(&cayman), "--instance-arch", "sunda"]);
    assert_eq!(code(&out), 1);
    assert!(
        stdout(&out).contains(": REJECTED by G17 "),
        "{}",
        stdout(&out)
    );
    // A NEFF targeting every arch: the arches that read alike share a line,
    // and no such line; -v gives a block per arch.
    let all = write(&dir.path().join("all.neff"), &valid_neff());
    let text = stdout(&neff(&["verify", s(&all)]));
    assert!(
        text.contains("ACCEPTED on sunda, cayman, mariana ("),
        "{text}"
    );
    assert!(!text.contains("not targeted"), "{text}");
    let text = stdout(&neff(&["verify", "-v", s(&all)]));
    for arch in ["sunda", "cayman", "mariana"] {
        assert!(text.contains(&format!("ACCEPTED on {arch} ")), "{text}");
    }
}

#[test]
fn the_arches_not_targeted_are_listed_each_when_they_fare_differently() {
    let dir = tempfile::tempdir().unwrap();
    let cayman = write(&dir.path().join("cayman.neff"), &cayman_neff());
    // The legacy override turns the arch check into a warning: sunda and
    // mariana load too, and the line says so.
    let out = neff(&["verify", s(&cayman), "--allow-legacy-neff"]);
    assert_eq!(code(&out), 0);
    assert!(
        stdout(&out).contains("  not targeted: sunda, mariana (accepted); "),
        "{}",
        stdout(&out)
    );
}

#[test]
#[cfg_attr(
    not(neff_real_neffs),
    ignore = "real NEFFs missing: set NEFF_REAL_NEFFS (default ../shared/real-neffs), see tests/real-neffs.md"
)]
fn every_real_neff_is_accepted_in_one_folder_run() {
    let dir = crate::common::real_neffs();
    let dir = dir.as_path();
    // Every NEFF, and the one NEFF each carrier (.hlo, .neuron) holds.
    let neffs = std::fs::read_dir(dir)
        .unwrap()
        .filter(|e| {
            let path = e.as_ref().unwrap().path();
            path.extension()
                .is_some_and(|x| ["neff", "hlo", "neuron"].iter().any(|n| x == *n))
        })
        .count();
    assert!(neffs >= 16, "{dir:?} holds {neffs} NEFFs and carriers");
    let out = neff(&["verify", s(dir)]);
    let text = stdout(&out);
    assert_eq!(code(&out), 0, "{text}");
    let accepted = text
        .lines()
        .filter(|l| l.contains(": ACCEPTED (targets "))
        .count();
    assert_eq!(accepted, neffs, "{text}");
    assert!(
        text.ends_with(&format!("{neffs} accepted, 0 refused, 0 errors\n")),
        "{text}"
    );
}

#[test]
fn a_folder_without_neffs_is_an_error() {
    // A CI step over an empty or mis-populated cache must not pass.
    let dir = tempfile::tempdir().unwrap();
    write(&dir.path().join("notes.txt"), b"not a NEFF");
    for json in [false, true] {
        let mut args = vec!["verify", s(dir.path())];
        if json {
            args.push("--json");
        }
        let out = neff(&args);
        assert_eq!(code(&out), 2);
        assert_eq!(stdout(&out), "");
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(
            err.contains("no *.neff, *.hlo or *.neuron file in") && err.contains(s(dir.path())),
            "{err}"
        );
    }
}

/// A folder of small NEFFs is checked without handing memory back to the
/// kernel after each one: glibc's malloc starts by returning every free
/// 128 KiB at a heap's top (one `madvise` per NEFF per thread, and the pages
/// faulted in again for the next), which cost more than the checking.
#[test]
#[cfg_attr(
    not(neff_strace),
    ignore = "strace is missing or cannot trace here: apt-get install -y strace"
)]
fn a_folder_of_small_neffs_is_checked_without_a_trim_per_file() {
    let dir = tempfile::tempdir().unwrap();
    let neff = neff_of(&model_files(&[]));
    for i in 0..40 {
        fs::write(dir.path().join(format!("m{i:02}.neff")), &neff).unwrap();
    }
    let counts = traced_calls(
        &["verify", "-q", s(dir.path()), "--threads", "2"],
        &[&["madvise"]],
    )
    .expect("strace could trace when the tests were built");
    assert!(counts[0] < 8, "{} madvise calls for 40 NEFFs", counts[0]);
}

/// A manifest nested 1000 deep (simdjson's limit is 1024) loads on the
/// worker threads of `neff verify DIR` too: they get the loader's stack.
#[test]
fn manifests_nested_1000_deep_load_on_the_threads_of_verify_dir() {
    let depth = 1000;
    let deep = format!("{}{}", "[".repeat(depth), "]".repeat(depth));
    let neff_json = NEFF_JSON.replacen('{', &format!("{{\"deep\": {deep}, "), 1);
    let bytes = model_neff(&[("neff.json", neff_json.as_bytes())]);
    let dir = tempfile::tempdir().unwrap();
    for name in ["a.neff", "b.neff", "c.neff"] {
        write(&dir.path().join(name), &bytes);
    }
    let out = neff(&["verify", s(dir.path()), "--threads", "2", "-q"]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
}
