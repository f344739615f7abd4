//! Issue 12's "broken today" items: output modes follow the umask, `-o -` is
//! stdout for barrier outputs, repeated spec keys and unknown targets are
//! refused, gate refusals exit 1 naming the gate, corpus seeds are named by
//! their verdict.

use crate::common::*;

use std::fs;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

/// Runs neff under `umask` (set in a shell that then execs it).
fn neff_umask(umask: &str, args: &[&str]) -> Output {
    Command::new("sh")
        .arg("-c")
        .arg(format!("umask {umask}; exec \"$0\" \"$@\""))
        .arg(env!("CARGO_BIN_EXE_neff"))
        .args(args)
        .output()
        .expect("run neff")
}

#[track_caller]
fn exit(out: &Output, code: i32) {
    assert_eq!(out.status.code(), Some(code), "{}", stderr(out));
}

fn example(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("examples")
        .join(name)
}

fn mode(path: &Path) -> u32 {
    fs::metadata(path).unwrap().permissions().mode() & 0o777
}

/// `barrier compose` with one leader, writing to `out`.
const COMPOSE: [&str; 4] = ["barrier", "compose", "--leader-base", "0x8280000000"];

/// A barrier config as `decode --json` prints it, from a one-leader compose.
fn barrier_json(dir: &Path) -> PathBuf {
    let bin = dir.join("seed.bin");
    exit(&neff(&[&COMPOSE[..], &["-o", s(&bin)]].concat()), 0);
    let out = neff(&["barrier", "decode", "--json", s(&bin)]);
    exit(&out, 0);
    let json = dir.join("seed.json");
    fs::write(&json, &out.stdout).unwrap();
    json
}

#[test]
fn every_output_follows_the_umask_also_when_it_replaces_a_file() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let json = barrier_json(d);
    let model = example("allreduce");
    let spec = example("two-subgraphs.json");
    for (umask, want) in [("022", 0o644), ("027", 0o640)] {
        let at = |name: &str| d.join(format!("{umask}-{name}"));
        let (pack, build, enc, comp, hdr) = (
            at("p.neff"),
            at("b.neff"),
            at("e.bin"),
            at("c.bin"),
            at("h.json"),
        );
        let (fixtures, corpus, unpacked) = (at("fixtures"), at("corpus"), at("unpacked"));
        // Each run with the file it replaces on a second and third run (made
        // 0600 and 0666 first); unpack, fixtures and corpus refuse a
        // non-empty DIR, so they run once.
        let runs: [(Vec<&str>, Option<&Path>); 7] = [
            (vec!["pack", s(&model), "-o", s(&pack)], Some(&pack)),
            (vec!["build", s(&spec), "-o", s(&build)], Some(&build)),
            (
                vec!["barrier", "encode", s(&json), "-o", s(&enc)],
                Some(&enc),
            ),
            ([&COMPOSE[..], &["-o", s(&comp)]].concat(), Some(&comp)),
            (
                vec![
                    "unpack",
                    s(&pack),
                    "-o",
                    s(&unpacked),
                    "--header-out",
                    s(&hdr),
                ],
                None,
            ),
            (vec!["fixtures", "--out", s(&fixtures), "-q"], None),
            (vec!["corpus", "--out", s(&corpus), "--count", "3"], None),
        ];
        for (args, output) in &runs {
            exit(&neff_umask(umask, args), 0);
            for m in output.map_or(vec![], |_| vec![0o600, 0o666]) {
                let path = output.unwrap();
                fs::set_permissions(path, fs::Permissions::from_mode(m)).unwrap();
                exit(&neff_umask(umask, args), 0);
            }
        }
        for p in [&pack, &build, &enc, &comp, &hdr] {
            assert_eq!(mode(p), want, "{} under umask {umask}", p.display());
        }
        for p in [
            fixtures.join("manifest.json"),
            corpus.join("corpus.json"),
            corpus.join("000000-valid.neff"),
            unpacked.join("neff.json"),
        ] {
            assert_eq!(mode(&p), want, "{} under umask {umask}", p.display());
        }
        let any_fixture = fs::read_dir(fixtures.join("valid"))
            .unwrap()
            .next()
            .unwrap();
        assert_eq!(mode(&any_fixture.unwrap().path()), want);
    }
}

#[test]
fn barrier_dash_output_is_stdout_and_creates_no_file() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let json = barrier_json(d);
    let file = fs::read(d.join("seed.bin")).unwrap();
    let compose = neff_command()
        .current_dir(d)
        .args(COMPOSE)
        .args(["-o", "-"])
        .output()
        .unwrap();
    exit(&compose, 0);
    assert_eq!(compose.stdout, file);
    let encode = neff_command()
        .current_dir(d)
        .args(["barrier", "encode", s(&json), "-o", "-"])
        .output()
        .unwrap();
    exit(&encode, 0);
    assert_eq!(encode.stdout.len(), 296);
    assert_eq!(encode.stdout, file);
    assert!(!d.join("-").exists(), "a file named - was written");
    let both = neff(&[&COMPOSE[..], &["--json", "-o", "-"]].concat());
    exit(&both, 2);
    assert!(
        stderr(&both).contains("--json and -o -"),
        "{}",
        stderr(&both)
    );
}

/// A one-subgraph spec with an input and, when `output`, an output.
fn spec(dir: &Path, name: &str, text: &str) -> PathBuf {
    let path = dir.join(name);
    fs::write(&path, text).unwrap();
    path
}

#[test]
fn a_model_with_no_output_is_refused_by_g20b_in_build_and_pack() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let no_output = spec(
        d,
        "noout.json",
        r#"{"subgraphs": [{"name": "sg00",
            "inputs": [{"name": "x", "dtype": "float32", "shape": [4]}]}]}"#,
    );
    let built = neff(&["build", s(&no_output), "-o", s(&d.join("b.neff"))]);
    exit(&built, 1);
    assert!(
        stderr(&built).contains("REJECTED by G20b"),
        "{}",
        stderr(&built)
    );
    assert!(!d.join("b.neff").exists());
    // The same model as a tree: written with --unchecked --keep-refused, unpacked, packed.
    let forced = d.join("forced.neff");
    let args = [
        "build",
        s(&no_output),
        "-o",
        s(&forced),
        "--unchecked",
        "--keep-refused",
    ];
    exit(&neff(&args), 0);
    let tree = d.join("tree");
    exit(&neff(&["unpack", s(&forced), "-o", s(&tree)]), 0);
    let packed = neff(&["pack", s(&tree), "-o", s(&d.join("p.neff"))]);
    exit(&packed, 1);
    assert!(
        stderr(&packed).contains("REJECTED by G20b"),
        "{}",
        stderr(&packed)
    );
}

#[test]
fn a_repeated_spec_key_is_refused_naming_the_key_and_both_lines() {
    let dir = tempfile::tempdir().unwrap();
    let text = r#"{"subgraphs": [{"name": "sg00",
  "inputs": [{"name": "x", "dtype": "float32", "shape": [4]}],
  "outputs": [{"name": "y", "dtype": "float32", "shape": [4]}],
  "dma_queues": {
    "q_in": {"owner": "pool", "type": "in", "semaphore": 10},
    "q_in": {"owner": "pool", "type": "out", "semaphore": 11}}}]}"#;
    let path = spec(dir.path(), "spec.json", text);
    let out = neff(&["build", s(&path), "-o", s(&dir.path().join("o.neff"))]);
    exit(&out, 2);
    let want = format!(
        "{}: 6:5: repeated key \"subgraphs[0].dma_queues.q_in\" (first at line 5, column 5)",
        path.display()
    );
    assert!(stderr(&out).contains(&want), "{}", stderr(&out));
}

#[test]
fn a_target_the_runtime_does_not_know_is_refused_by_g16() {
    let dir = tempfile::tempdir().unwrap();
    let model = |target: &str| {
        format!(
            r#"{{"target": "{target}", "subgraphs": [{{"name": "sg00",
            "inputs": [{{"name": "x", "dtype": "float32", "shape": [4]}}],
            "outputs": [{{"name": "y", "dtype": "float32", "shape": [4]}}]}}]}}"#
        )
    };
    let out_path = dir.path().join("o.neff");
    for bad in ["Cayman", "trn2"] {
        let path = spec(dir.path(), "bad.json", &model(bad));
        let out = neff(&["build", s(&path), "-o", s(&out_path)]);
        exit(&out, 1);
        assert!(stderr(&out).contains("REJECTED by G16"), "{}", stderr(&out));
        assert!(!out_path.exists());
    }
    let path = spec(dir.path(), "good.json", &model("cayman"));
    exit(&neff(&["build", s(&path), "-o", s(&out_path)]), 0);
    // The schema's enum is the runtime's list.
    let schema = neff(&["schema", "build-spec"]);
    let text = String::from_utf8_lossy(&schema.stdout);
    assert!(text.contains(r#""cayman""#) && !text.contains(r#""Cayman""#));
}

#[test]
fn every_invalid_corpus_seed_is_refused_and_corpus_json_has_verify_s_verdict() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("corpus");
    let args = [
        "corpus",
        "--out",
        s(&out),
        "--count",
        "60",
        "--invalid-ratio",
        "0.5",
    ];
    exit(&neff(&args), 0);
    let listing: serde_json::Value =
        serde_json::from_slice(&fs::read(out.join("corpus.json")).unwrap()).unwrap();
    let files = listing["files"].as_array().unwrap();
    assert_eq!(files.len(), 60);
    let mut invalid = 0;
    for entry in files {
        let name = entry["file"].as_str().unwrap();
        let verify = neff(&["verify", "--json", s(&out.join(name))]);
        let got: serde_json::Value = serde_json::from_slice(&verify.stdout).unwrap();
        let verdict = &entry["verdict"];
        for key in ["accepted", "gate", "status", "status_name"] {
            assert_eq!(verdict[key], got[key], "{name}: {key}");
        }
        let accepted = got["accepted"].as_bool().unwrap();
        assert_eq!(
            verify.status.code(),
            Some(if accepted { 0 } else { 1 }),
            "{name}"
        );
        assert_eq!(name.ends_with("-invalid.neff"), !accepted, "{name}: {got}");
        assert_eq!(entry["valid"], got["accepted"], "{name}");
        invalid += usize::from(!accepted);
    }
    assert!(invalid >= 20, "only {invalid} of 60 refused");
}

#[test]
fn rules_the_builder_no_longer_copies_are_refused_by_the_loader_s_gates() {
    let dir = tempfile::tempdir().unwrap();
    let io = r#""inputs": [{"name": "x", "dtype": "float32", "shape": [4]}],
        "outputs": [{"name": "y", "dtype": "float32", "shape": [4]}]"#;
    let sg = format!(r#"{{"name": "sg00", {io}}}"#);
    let lib = r#"{"library": "l.so", "ulib_to_ucode_version": "1.0", "data": {"text": ""}}"#;
    let cases = [
        (format!(r#"{{"subgraphs": [{sg}, {sg}]}}"#), "G18"),
        (
            format!(
                r#"{{"subgraphs": [{{"name": "sg00", {io}, "tmp_bufs": [{{"name": "t"}}]}}]}}"#
            ),
            "G19",
        ),
        (
            format!(r#"{{"subgraphs": [{{"name": "sg00", {io}, "ucode_libs": [{lib}, {lib}]}}]}}"#),
            "G24e",
        ),
    ];
    for (text, gate) in cases {
        let path = spec(dir.path(), "spec.json", &text);
        let out = neff(&["build", s(&path), "-o", s(&dir.path().join("o.neff"))]);
        exit(&out, 1);
        let want = format!("REJECTED by {gate} ");
        assert!(stderr(&out).contains(&want), "{want}: {}", stderr(&out));
    }
}

/// A pid no process has (highest first, checked in /proc).
fn dead_pid() -> u32 {
    (400_000..4_000_000)
        .rev()
        .find(|p| !Path::new(&format!("/proc/{p}")).exists())
        .unwrap()
}

#[test]
fn an_unpack_killed_midway_leaves_nothing_the_next_unpack_or_pack_trips_on() {
    let dir = tempfile::tempdir().unwrap();
    let model = dir.path().join("m.neff");
    fs::write(&model, model_neff(&[])).unwrap();
    let tree = dir.path().join("tree");
    // What a SIGKILLed unpack leaves: its temp folder with a partial member.
    let stale = tree.join(format!(".neff-unpack.{}.AbCdEf", dead_pid()));
    fs::create_dir_all(stale.join("sg00")).unwrap();
    fs::write(stale.join("sg00/partial.bin"), b"half").unwrap();
    // A live process's temp folder is never touched.
    let live = tree.join(format!(".neff-unpack.{}.XyZ", std::process::id()));
    fs::create_dir_all(&live).unwrap();

    // pack refuses to pack one.
    let out = dir.path().join("packed.neff");
    let r = neff(&["pack", tree.to_str().unwrap(), "-o", out.to_str().unwrap()]);
    assert_eq!(code(&r), 2, "{}", stderr(&r));
    assert!(
        stderr(&r).contains("temp folder of an unpack that did not finish"),
        "{}",
        stderr(&r)
    );
    assert!(!out.exists());

    // The next unpack into the folder removes the dead one, says so, and
    // unpacks; the live one stays.
    let r = neff(&[
        "unpack",
        model.to_str().unwrap(),
        "-o",
        tree.to_str().unwrap(),
        "--force",
    ]);
    assert_eq!(code(&r), 0, "{}", stderr(&r));
    assert!(
        stderr(&r).contains("removed") && stderr(&r).contains(".neff-unpack."),
        "{}",
        stderr(&r)
    );
    assert!(!stale.exists());
    assert!(live.exists());
    assert!(tree.join("neff.json").is_file());
}

#[test]
fn reading_a_folder_as_a_neff_names_the_folder() {
    let dir = tempfile::tempdir().unwrap();
    let folder = dir.path().join("somedir");
    fs::create_dir(&folder).unwrap();
    let out = dir.path().join("out");
    for args in [
        vec![
            "unpack",
            folder.to_str().unwrap(),
            "-o",
            out.to_str().unwrap(),
        ],
        vec!["inspect", folder.to_str().unwrap()],
        vec!["cat", folder.to_str().unwrap(), "neff.json"],
    ] {
        let r = neff(&args);
        assert_eq!(code(&r), 2, "{args:?}");
        assert!(
            stderr(&r).contains(folder.to_str().unwrap()),
            "{args:?}: {}",
            stderr(&r)
        );
    }
    assert!(!out.exists());
}

#[test]
fn verify_merges_arches_that_read_alike_and_prints_each_warning_once() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("m.neff");
    let spec = Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/allreduce.json");
    let built = neff(&["build", s(&spec), "-o", s(&out)]);
    exit(&built, 0);
    let r = neff(&["verify", s(&out)]);
    exit(&r, 0);
    let text = String::from_utf8_lossy(&r.stdout).to_string();
    let lines: Vec<&str> = text.lines().collect();
    assert!(lines[0].ends_with(
        "ACCEPTED on sunda, cayman, mariana (tiers run: container, manifests, sections, staging)"
    ), "{text}");
    assert_eq!(
        lines.iter().filter(|l| l.contains("hash_layout")).count(),
        1,
        "{text}"
    );
    assert!(
        !text.contains("NEURON_RT_VALIDATE_HASH"),
        "the caveat is for -v: {text}"
    );
    let warnings: Vec<&&str> = lines.iter().filter(|l| l.contains("warning")).collect();
    let mut distinct = warnings.clone();
    distinct.dedup();
    assert!(
        !warnings.is_empty() && warnings.len() == distinct.len(),
        "{text}"
    );
    assert!(lines
        .last()
        .unwrap()
        .ends_with("ACCEPTED (targets sunda, cayman, mariana)"));
    // -v: each arch in full, with the caveat.
    let v = neff(&["verify", "-v", s(&out)]);
    exit(&v, 0);
    let verbose = String::from_utf8_lossy(&v.stdout).to_string();
    assert_eq!(
        verbose.matches("NEURON_RT_VALIDATE_HASH").count(),
        3,
        "{verbose}"
    );
    assert_eq!(
        verbose
            .matches("warning: Unable to find hlo_stats.json")
            .count(),
        3
    );
}

#[test]
fn pack_infers_the_virtual_core_of_a_two_graph_tree() {
    let dir = tempfile::tempdir().unwrap();
    let spec = Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/two-subgraphs.json");
    let built = dir.path().join("two.neff");
    exit(&neff(&["build", s(&spec), "-o", s(&built)]), 0);
    let tree = dir.path().join("tree");
    exit(&neff(&["unpack", s(&built), "-o", s(&tree)]), 0);
    // No flags: vnc_size 2 and the vnc bit come from the KELF's two graphs.
    let out = dir.path().join("packed.neff");
    let r = neff(&["pack", s(&tree), "-o", s(&out), "--json"]);
    exit(&r, 0);
    let report: serde_json::Value = serde_json::from_slice(&r.stdout).unwrap();
    assert_eq!(report["header"]["vnc_size"], 2);
    assert_eq!(report["header"]["feature_bits"], 0x400);
    // A flag wins; the refusal names the flags that fix it.
    let r = neff(&[
        "pack",
        s(&tree),
        "-o",
        s(&dir.path().join("one.neff")),
        "--vnc-size",
        "1",
    ]);
    exit(&r, 1);
    let err = String::from_utf8_lossy(&r.stderr);
    assert!(
        err.contains("G29a") && err.contains("--vnc-size N --feature-bits vnc"),
        "{err}"
    );
}

/// Runs `neff args` with `stdin` as its standard input.
fn neff_stdin(args: &[&str], stdin: &Path, cwd: &Path) -> Output {
    neff_command()
        .args(args)
        .current_dir(cwd)
        .stdin(fs::File::open(stdin).unwrap())
        .output()
        .unwrap()
}

#[test]
fn unpack_build_and_diff_read_stdin() {
    let dir = tempfile::tempdir().unwrap();
    let examples = Path::new(env!("CARGO_MANIFEST_DIR")).join("examples");
    let spec = examples.join("allreduce.json");
    let from_file = dir.path().join("file.neff");
    exit(&neff(&["build", s(&spec), "-o", s(&from_file)]), 0);
    // build -: blob paths are relative to the working folder.
    let from_stdin = dir.path().join("stdin.neff");
    exit(
        &neff_stdin(&["build", "-", "-o", s(&from_stdin)], &spec, &examples),
        0,
    );
    assert_eq!(
        fs::read(&from_file).unwrap(),
        fs::read(&from_stdin).unwrap()
    );
    // unpack -: the same tree as from the file.
    let (a, b) = (dir.path().join("a"), dir.path().join("b"));
    exit(&neff(&["unpack", s(&from_file), "-o", s(&a)]), 0);
    exit(
        &neff_stdin(&["unpack", "-", "-o", s(&b)], &from_file, dir.path()),
        0,
    );
    assert_eq!(
        fs::read(a.join("neff.json")).unwrap(),
        fs::read(b.join("neff.json")).unwrap()
    );
    // A refused stdin is named <stdin>, not the spool's path.
    let junk = dir.path().join("junk");
    fs::write(&junk, b"not a NEFF").unwrap();
    let r = neff_stdin(
        &["unpack", "-", "-o", s(&dir.path().join("c"))],
        &junk,
        dir.path(),
    );
    exit(&r, 1);
    assert!(String::from_utf8_lossy(&r.stderr).contains("neff: <stdin>: REJECTED by G2"));
    // diff - B.
    let r = neff_stdin(&["diff", "-", s(&from_file)], &from_stdin, dir.path());
    exit(&r, 0);
    exit(&neff_stdin(&["diff", "-", "-"], &from_file, dir.path()), 2);
}

#[test]
fn a_missing_input_is_one_json_error_kind_with_its_path_in_every_command() {
    let dir = tempfile::tempdir().unwrap();
    let missing = dir.path().join("missing");
    let out = dir.path().join("out");
    let m = s(&missing);
    let o = s(&out);
    let commands: [&[&str]; 7] = [
        &["verify", m, "--json"],
        &["inspect", m, "--json"],
        &["diff", m, m, "--json"],
        &["unpack", m, "-o", o, "--json"],
        &["pack", m, "-o", o, "--json"],
        &["build", m, "-o", o, "--json"],
        &["barrier", "decode", m, "--json"],
    ];
    for args in commands {
        let r = neff(args);
        exit(&r, 2);
        let doc: serde_json::Value = serde_json::from_slice(&r.stdout)
            .unwrap_or_else(|e| panic!("{args:?}: {e}: {}", String::from_utf8_lossy(&r.stdout)));
        let error = &doc["error"];
        assert_eq!(error["kind"], "io", "{args:?}: {doc}");
        assert_eq!(error["io_kind"], "not_found", "{args:?}: {doc}");
        assert_eq!(error["path"], m, "{args:?}: {doc}");
    }
}

#[test]
fn a_dtype_typo_is_named_with_the_nearest_dtype() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("spec.json");
    fs::write(
        &path,
        r#"{"subgraphs":[{"name":"sg00","outputs":[{"name":"y","dtype":"float32","shape":[4]}],
            "tmp_bufs":[{"name":"t","dtype":"floot32","shape":[4]}]}]}"#,
    )
    .unwrap();
    let r = neff(&[
        "build",
        s(&path),
        "-o",
        s(&dir.path().join("m.neff")),
        "--json",
    ]);
    exit(&r, 2);
    let doc: serde_json::Value = serde_json::from_slice(&r.stdout).unwrap();
    assert_eq!(
        doc["error"]["key"], "subgraphs[0].tmp_bufs[0].dtype",
        "{doc}"
    );
    let message = doc["error"]["message"].as_str().unwrap();
    assert!(
        message.contains(r#"dtype "floot32""#) && message.contains(r#"did you mean "float32"?"#),
        "{message}"
    );
}
