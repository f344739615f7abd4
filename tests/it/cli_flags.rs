//! Flags shared by every command: feature bits by name, `-o/--output` (with
//! `--out` kept as an alias), `-q/--quiet`, the `info`/`create` aliases,
//! completions, the man page, `--version`, and `--json` printing exactly one
//! JSON document even when the command fails.

use crate::common::*;

use std::fs;
use std::path::{Path, PathBuf};
use std::process::Output;

use serde_json::Value;

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

fn example(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("examples")
        .join(name)
}

/// stdout as exactly one JSON document (serde_json refuses trailing data).
fn one_json(out: &Output) -> Value {
    serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
        panic!(
            "stdout is not one JSON document ({e}):\n{}\nstderr:\n{}",
            text(&out.stdout),
            text(&out.stderr)
        )
    })
}

/// The real NEFFs, smallest first (none when the folder is missing: the
/// tests that need them are ignored then).
fn real_neffs() -> Vec<PathBuf> {
    let mut files = crate::common::real_neff_files_if_any();
    files.sort_by_key(|p| fs::metadata(p).map_or(u64::MAX, |m| m.len()));
    files
}

/// The header's feature_bits of a NEFF, as `inspect --json` shows them.
fn feature_bits(file: &Path) -> u64 {
    let r = neff(&["inspect", s(file), "--json"]);
    one_json(&r)["header"]["feature_bits"].as_u64().unwrap()
}

#[test]
fn feature_bits_take_names_numbers_and_both() {
    let dir = tempfile::tempdir().unwrap();
    let model = example("allreduce");
    let mut bytes = Vec::new();
    for (i, bits) in [
        "0x1002",
        "dge,collective_has_offset",
        "0x1000,COLLECTIVE_HAS_OFFSET",
        "neff_feature_dge,2",
    ]
    .iter()
    .enumerate()
    {
        let out = dir.path().join(format!("{i}.neff"));
        let r = neff(&[
            "pack",
            s(&model),
            "-o",
            s(&out),
            "--feature-bits",
            bits,
            "-q",
        ]);
        assert_eq!(code(&r), 0, "{bits}: {}", text(&r.stderr));
        assert_eq!(feature_bits(&out), 0x1002, "{bits}");
        bytes.push(fs::read(&out).unwrap());
    }
    assert!(
        bytes.windows(2).all(|w| w[0] == w[1]),
        "names and numbers give the same NEFF"
    );

    let r = neff(&[
        "pack",
        s(&model),
        "-o",
        s(&dir.path().join("x.neff")),
        "--feature-bits",
        "vnc,nope",
    ]);
    assert_eq!(code(&r), 2);
    let err = text(&r.stderr);
    assert!(
        err.contains("\"nope\"")
            && err.contains("neff_feature_vnc")
            && err.contains("large_tensor_support"),
        "{err}"
    );

    // HEADER.json and a build spec's header take the same strings.
    let header = dir.path().join("h.json");
    fs::write(
        &header,
        r#"{"feature_bits": "neff_feature_dge,collective_has_offset"}"#,
    )
    .unwrap();
    let from_header = dir.path().join("h.neff");
    let r = neff(&[
        "pack",
        s(&model),
        "-o",
        s(&from_header),
        "--header",
        s(&header),
        "-q",
    ]);
    assert_eq!(code(&r), 0, "{}", text(&r.stderr));
    assert_eq!(fs::read(&from_header).unwrap(), bytes[0]);
    let spec = dir.path().join("spec.json");
    let mut value: Value =
        serde_json::from_str(&fs::read_to_string(example("allreduce.json")).unwrap()).unwrap();
    value["header"] = serde_json::json!({"feature_bits": "dge,0x2"});
    fs::write(&spec, value.to_string()).unwrap();
    std::os::unix::fs::symlink(example("allreduce"), dir.path().join("allreduce")).unwrap();
    let built = dir.path().join("b.neff");
    // The link leads out of the spec's folder: the build names that root.
    let root = example("allreduce");
    let r = neff(&[
        "build",
        s(&spec),
        "-o",
        s(&built),
        "-q",
        "--blob-root",
        s(&root),
    ]);
    assert_eq!(code(&r), 0, "{}", text(&r.stderr));
    assert_eq!(feature_bits(&built), 0x1002);
    fs::write(&header, r#"{"feature_bits": "dge,nope"}"#).unwrap();
    let r = neff(&[
        "pack",
        s(&model),
        "-o",
        s(&from_header),
        "--header",
        s(&header),
    ]);
    assert_eq!(code(&r), 2);
    assert!(text(&r.stderr).contains("\"nope\""), "{}", text(&r.stderr));

    // verify --supported-features: the same parser.
    let file = dir.path().join("0.neff");
    let r = neff(&[
        "verify",
        s(&file),
        "--supported-features",
        "collective_has_offset",
    ]);
    assert_eq!(code(&r), 1, "dge is not supported: G5 refuses");
    assert!(text(&r.stdout).contains("G5"));
    let r = neff(&[
        "verify",
        s(&file),
        "--supported-features",
        "neff_feature_dge,0x2",
    ]);
    assert_eq!(code(&r), 0, "{}", text(&r.stdout));
    let r = neff(&["verify", s(&file), "--supported-features", "bogus"]);
    assert_eq!(code(&r), 2);
    assert!(text(&r.stderr).contains("neff_feature_custom_ops"));
}

#[test]
fn output_dirs_take_o_output_and_the_out_alias() {
    let dir = tempfile::tempdir().unwrap();
    let mut listings = Vec::new();
    for flag in ["-o", "--output", "--out"] {
        let out = dir.path().join(flag.trim_start_matches('-'));
        let r = neff(&["corpus", flag, s(&out), "--count", "3", "-q"]);
        assert_eq!(code(&r), 0, "{flag}: {}", text(&r.stderr));
        listings.push(fs::read(out.join("corpus.json")).unwrap());
    }
    assert!(listings.windows(2).all(|w| w[0] == w[1]));
    let out = dir.path().join("fx");
    let r = neff(&["fixtures", "--out", s(&out), "-q"]);
    assert_eq!(code(&r), 0, "{}", text(&r.stderr));
    assert!(out.join("manifest.json").is_file());
    // The folder policy: a non-empty folder needs --force.
    let r = neff(&["fixtures", "-o", s(&out)]);
    assert_eq!(code(&r), 2);
    assert!(text(&r.stderr).contains("--force"));
    let r = neff(&["corpus", "-o", s(&out), "--count", "1"]);
    assert_eq!(code(&r), 2);
    assert!(text(&r.stderr).contains("--force"));
    // Every command that writes states the policy in its help.
    for cmd in [
        "pack", "build", "unpack", "fixtures", "corpus", "barrier", "man",
    ] {
        let r = neff(&[cmd, "--help"]);
        assert!(
            text(&r.stdout).contains("renamed into place"),
            "{cmd} --help"
        );
    }
}

#[test]
fn quiet_prints_nothing_on_success() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let neff_file = d.join("a.neff");
    let bin = d.join("b.bin");
    let spec_json = d.join("b.json");
    let runs: Vec<Vec<String>> = vec![
        vec![
            "pack".into(),
            s(&example("allreduce")).into(),
            "-o".into(),
            s(&neff_file).into(),
        ],
        vec![
            "build".into(),
            s(&example("allreduce.json")).into(),
            "-o".into(),
            s(&d.join("b.neff")).into(),
        ],
        vec![
            "unpack".into(),
            s(&neff_file).into(),
            "-o".into(),
            s(&d.join("u")).into(),
        ],
        vec!["verify".into(), s(&neff_file).into()],
        vec!["inspect".into(), s(&neff_file).into()],
        vec!["info".into(), s(&neff_file).into()],
        vec!["schema".into(), "build-spec".into()],
        vec!["schema".into()],
        vec![
            "barrier".into(),
            "compose".into(),
            "--leader-base".into(),
            "0x1000".into(),
            "-o".into(),
            s(&bin).into(),
        ],
        vec!["barrier".into(), "decode".into(), s(&bin).into()],
        vec!["barrier".into(), "tables".into()],
        vec![
            "corpus".into(),
            "-o".into(),
            s(&d.join("c")).into(),
            "--count".into(),
            "2".into(),
        ],
        vec!["fixtures".into(), "-o".into(), s(&d.join("f")).into()],
        vec!["man".into(), "-o".into(), s(&d.join("m")).into()],
    ];
    for (i, args) in runs.iter().enumerate() {
        let mut args: Vec<&str> = args.iter().map(String::as_str).collect();
        // Without -q each says something (so the test can fail).
        if i == 0 {
            let loud = neff(&[&args[..], &["--keep-refused"]].concat());
            assert!(!loud.stderr.is_empty(), "pack says what it wrote");
        }
        args.push(if i % 2 == 0 { "-q" } else { "--quiet" });
        let r = neff(&args);
        assert_eq!(code(&r), 0, "{args:?}: {}", text(&r.stderr));
        assert!(
            r.stdout.is_empty() && r.stderr.is_empty(),
            "{args:?} printed:\n{}{}",
            text(&r.stdout),
            text(&r.stderr)
        );
    }
    let decoded = neff(&["barrier", "decode", s(&bin), "--json"]);
    fs::write(&spec_json, &decoded.stdout).unwrap();
    let r = neff(&[
        "barrier",
        "encode",
        s(&spec_json),
        "-o",
        s(&d.join("c.bin")),
        "-q",
    ]);
    assert_eq!(
        (code(&r), r.stderr.is_empty()),
        (0, true),
        "{}",
        text(&r.stderr)
    );

    // A refusal under -q: one line on stderr, nothing on stdout, exit 1.
    let refused = d.join("refused.neff");
    let r = neff(&[
        "pack",
        s(&example("allreduce")),
        "-o",
        s(&refused),
        "--feature-bits",
        "0x8000000",
        "--keep-refused",
        "-q",
    ]);
    assert_eq!(code(&r), 0);
    for cmd in ["verify", "inspect"] {
        let r = neff(&[cmd, s(&refused), "-q"]);
        assert_eq!(code(&r), 1, "{cmd}");
        assert!(r.stdout.is_empty(), "{cmd}");
        let err = text(&r.stderr);
        assert_eq!(err.lines().count(), 1, "{cmd}: {err}");
        assert!(err.contains("G5"), "{cmd}: {err}");
    }
}

#[test]
fn info_and_create_are_inspect_and_pack() {
    let dir = tempfile::tempdir().unwrap();
    let a = dir.path().join("a.neff");
    let b = dir.path().join("b.neff");
    let pack = neff(&["pack", s(&example("allreduce")), "-o", s(&a), "--json"]);
    let create = neff(&["create", s(&example("allreduce")), "-o", s(&b), "--json"]);
    assert_eq!((code(&pack), code(&create)), (0, 0));
    assert_eq!(fs::read(&a).unwrap(), fs::read(&b).unwrap());
    let mut created = one_json(&create);
    created["file"] = one_json(&pack)["file"].clone();
    assert_eq!(created, one_json(&pack));
    let files = [s(&a).to_string()]
        .into_iter()
        .chain(real_neffs().into_iter().take(1).map(|p| s(&p).to_string()));
    for file in files {
        for flags in [&[][..], &["--json"][..]] {
            let inspect = neff(&[&["inspect", &file][..], flags].concat());
            let info = neff(&[&["info", &file][..], flags].concat());
            assert_eq!(code(&inspect), code(&info));
            assert_eq!(inspect.stdout, info.stdout, "{file} {flags:?}");
            assert!(!inspect.stdout.is_empty());
        }
    }
    let help = text(&neff(&["--help"]).stdout);
    assert!(
        help.contains("[alias: create]") && help.contains("[alias: info]"),
        "{help}"
    );
}

#[test]
fn completions_and_man_page_come_from_the_definitions() {
    let r = neff(&["completions", "bash"]);
    assert_eq!(code(&r), 0);
    let bash = text(&r.stdout);
    assert!(bash.contains("_neff"), "{bash}");
    for sub in [
        "pack",
        "unpack",
        "inspect",
        "info",
        "verify",
        "build",
        "schema",
        "barrier",
        "corpus",
        "fixtures",
        "completions",
        "man",
        "--feature-bits",
        "--supported-features",
    ] {
        assert!(bash.contains(sub), "bash completions lack {sub}");
    }
    for shell in ["zsh", "fish"] {
        let r = neff(&["completions", shell]);
        assert_eq!(code(&r), 0);
        assert!(text(&r.stdout).contains("verify"), "{shell}");
    }
    assert_eq!(code(&neff(&["completions", "tcsh"])), 2);

    let r = neff(&["man"]);
    assert_eq!(code(&r), 0);
    let page = text(&r.stdout);
    let first_macro = page
        .lines()
        .find(|l| !l.starts_with(".ie") && !l.starts_with(".el"))
        .unwrap();
    assert!(first_macro.starts_with(".TH neff 1"), "{first_macro}");
    assert!(page.contains("Neuron runtime 2.31"));
    assert!(page.contains("pack") && page.contains("verify"));

    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("man");
    let r = neff(&["man", "-o", s(&out)]);
    assert_eq!(code(&r), 0, "{}", text(&r.stderr));
    for page in [
        "neff.1",
        "neff-pack.1",
        "neff-verify.1",
        "neff-barrier-decode.1",
        "neff-man.1",
    ] {
        let roff = fs::read_to_string(out.join(page)).unwrap_or_else(|_| panic!("{page}"));
        assert!(
            roff.contains(&format!(".TH {}", page.trim_end_matches(".1"))),
            "{page}"
        );
    }
    assert!(text(&fs::read(out.join("neff-pack.1")).unwrap()).contains("feature\\-bits"));
}

#[test]
fn version_names_the_runtime_the_gates_model() {
    let r = neff(&["--version"]);
    assert_eq!(code(&r), 0);
    assert_eq!(
        text(&r.stdout).trim(),
        format!(
            "neff {} (gates model Neuron runtime 2.31, ucode ABI 1.21.1.0)",
            env!("CARGO_PKG_VERSION")
        )
    );
}

/// The JSON error document: `error` with a kind and a message, nothing else.
fn assert_error_document(out: &Output, kind: &str, what: &str) {
    assert_eq!(code(out), 2, "{what}: {}", text(&out.stderr));
    let doc = one_json(out);
    let object = doc.as_object().unwrap();
    assert_eq!(object.keys().collect::<Vec<_>>(), ["error"], "{what}");
    assert_eq!(doc["error"]["kind"], kind, "{what}: {doc}");
    assert!(
        doc["error"]["message"]
            .as_str()
            .is_some_and(|m| !m.is_empty()),
        "{what}"
    );
}

#[test]
fn json_prints_one_document_on_failure() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let missing = d.join("missing.neff");
    let out = d.join("out.neff");
    for cmd in ["verify", "inspect", "info"] {
        let r = neff(&[cmd, "--json", s(&missing)]);
        assert_error_document(&r, "io", cmd);
        assert_eq!(one_json(&r)["error"]["path"], s(&missing));
    }
    let r = neff(&["unpack", "--json", s(&missing), "-o", s(&d.join("u"))]);
    assert_error_document(&r, "io", "unpack");
    let r = neff(&["pack", "--json", s(&d.join("no-dir")), "-o", s(&out)]);
    assert_error_document(&r, "io", "pack of a missing folder");
    let r = neff(&["build", "--json", s(&d.join("no-spec.json")), "-o", s(&out)]);
    assert_eq!(code(&r), 2);
    assert!(one_json(&r)["error"]["message"].is_string());
    let r = neff(&["barrier", "decode", "--json", s(&missing)]);
    assert_error_document(&r, "io", "barrier decode");
    let r = neff(&["verify", "--json", "--no-such-flag", "x"]);
    assert_error_document(&r, "usage", "a bad flag");

    // A refusal by the gates: the verdict, exit 1, nothing written.
    let empty = d.join("empty");
    fs::create_dir(&empty).unwrap();
    fs::write(empty.join("x.bin"), b"x").unwrap();
    let r = neff(&["pack", "--json", s(&empty), "-o", s(&out)]);
    assert_eq!(code(&r), 1, "{}", text(&r.stderr));
    let doc = one_json(&r);
    assert_eq!(doc["written"], false);
    assert_eq!(doc["verdict"]["accepted"], false);
    assert!(doc["verdict"]["gate"].is_string(), "{doc}");
    assert!(!out.exists());

    let spec = d.join("refused.json");
    let mut value: Value =
        serde_json::from_str(&fs::read_to_string(example("allreduce.json")).unwrap()).unwrap();
    value["header"] = serde_json::json!({"feature_bits": 1u64 << 40});
    fs::write(&spec, value.to_string()).unwrap();
    // The spec's blobs are relative to it: give it the example's folder.
    std::os::unix::fs::symlink(example("allreduce"), d.join("allreduce")).unwrap();
    let root = example("allreduce");
    let r = neff(&[
        "build",
        "--json",
        s(&spec),
        "-o",
        s(&out),
        "--blob-root",
        s(&root),
    ]);
    assert_eq!(code(&r), 1, "{}", text(&r.stderr));
    let doc = one_json(&r);
    assert_eq!(doc["written"], false);
    assert_eq!(doc["verdict"]["gate"], "G5", "{doc}");
    assert!(!out.exists());

    // unpack of a NEFF the container gates refuse (a bad hash).
    let good = d.join("good.neff");
    assert_eq!(
        code(&neff(&[
            "pack",
            s(&example("allreduce")),
            "-o",
            s(&good),
            "-q"
        ])),
        0
    );
    let mut bytes = fs::read(&good).unwrap();
    let last = bytes.len() - 1;
    bytes[last] ^= 0xff;
    let bad = d.join("bad.neff");
    fs::write(&bad, &bytes).unwrap();
    let r = neff(&["unpack", "--json", s(&bad), "-o", s(&d.join("u2"))]);
    assert_eq!(code(&r), 1, "{}", text(&r.stderr));
    assert_eq!(one_json(&r)["verdict"]["accepted"], false);
}

/// `--help` of the commands this file covers, pinned by golden files
/// (regenerate with NEFF_UPDATE_GOLDEN=1).
#[test]
fn help_of_new_and_changed_commands_matches_the_golden_files() {
    for cmd in ["completions", "man", "fixtures", "corpus"] {
        let r = neff(&[cmd, "--help"]);
        assert_eq!(code(&r), 0);
        golden(&format!("help-{cmd}.txt"), &r.stdout);
    }
}

/// On the real NEFFs: a runtime that supports exactly the file's features, by
/// name (as `inspect` names them), accepts it; without its first one, G5
/// refuses it; and a repack with those names as `--feature-bits` gives the
/// same header mask.
#[test]
#[cfg_attr(
    not(neff_real_neffs),
    ignore = "real NEFFs missing: set NEFF_REAL_NEFFS (default ../shared/real-neffs), see tests/real-neffs.md"
)]
fn real_neffs_by_their_feature_names() {
    let mut checked = 0;
    for file in real_neffs() {
        let report = one_json(&neff(&["inspect", s(&file), "--json"]));
        let names: Vec<&str> = report["feature_names"]
            .as_array()
            .unwrap()
            .iter()
            .map(|n| n.as_str().unwrap())
            .collect();
        if names.is_empty() {
            continue;
        }
        let all = names.join(",");
        let r = neff(&["verify", s(&file), "--supported-features", &all, "-q"]);
        assert_eq!(
            code(&r),
            0,
            "{}: {all}: {}",
            file.display(),
            text(&r.stderr)
        );
        let r = neff(&[
            "verify",
            s(&file),
            "--supported-features",
            &names[1..].join(","),
            "-q",
        ]);
        assert_eq!(code(&r), 1, "{}", file.display());
        assert!(text(&r.stderr).contains("G5"), "{}", text(&r.stderr));
        let mask = report["header"]["feature_bits"].as_u64().unwrap();
        let r = neff(&[
            "verify",
            s(&file),
            "--supported-features",
            &format!("{mask:#x}"),
            "-q",
        ]);
        assert_eq!(code(&r), 0);
        checked += 1;
    }
    assert!(checked >= 6, "only {checked} real NEFFs have feature bits");
}
