//! Durability where it matters, speed where it does not: `--no-fsync` on
//! every command that writes, one sync per folder of outputs (not two per
//! file), and `neff corpus` the same on any number of threads.

use crate::common::*;

use std::fs;
use std::path::{Path, PathBuf};

fn example(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("examples")
        .join(name)
}

fn ok(args: &[&str]) {
    let r = neff(args);
    assert_eq!(
        code(&r),
        0,
        "{args:?}: {}",
        String::from_utf8_lossy(&r.stderr)
    );
}

/// Every writing command, writing under `d` (`tag` keeps runs apart), and
/// the output it makes. `d/in.neff` must exist (the unpack input).
fn writers(d: &Path, tag: &str) -> Vec<(Vec<String>, PathBuf)> {
    let at = |name: &str| d.join(format!("{tag}-{name}"));
    let args = |v: &[&str]| v.iter().map(|a| a.to_string()).collect::<Vec<_>>();
    let (model, spec) = (example("allreduce"), example("allreduce.json"));
    let compose = ["barrier", "compose", "--leader-base", "0x8280000000"];
    let mut runs = vec![
        (
            args(&["pack", s(&model), "-o", s(&at("p.neff"))]),
            at("p.neff"),
        ),
        (
            args(&["create", s(&model), "-o", s(&at("c.neff"))]),
            at("c.neff"),
        ),
        (
            args(&["build", s(&spec), "-o", s(&at("b.neff"))]),
            at("b.neff"),
        ),
        (
            args(&[&compose[..], &["-o", s(&at("c.bin"))]].concat()),
            at("c.bin"),
        ),
        (
            args(&["fixtures", "-o", s(&at("fx"))]),
            at("fx/manifest.json"),
        ),
        (
            args(&["corpus", "-o", s(&at("co")), "--count", "3"]),
            at("co/corpus.json"),
        ),
        (args(&["man", "-o", s(&at("man"))]), at("man/neff.1")),
        (
            args(&[
                "unpack",
                s(&d.join("in.neff")),
                "-o",
                s(&at("u")),
                "--header-out",
                s(&at("h.json")),
            ]),
            at("h.json"),
        ),
    ];
    // encode reads what compose wrote.
    let json = d.join("barrier.json");
    runs.push((
        args(&["barrier", "encode", s(&json), "-o", s(&at("e.bin"))]),
        at("e.bin"),
    ));
    runs
}

/// `d/in.neff` and `d/barrier.json`, the inputs of [`writers`].
fn inputs(d: &Path) {
    ok(&[
        "pack",
        s(&example("allreduce")),
        "-o",
        s(&d.join("in.neff")),
    ]);
    let bin = d.join("barrier.bin");
    ok(&[
        "barrier",
        "compose",
        "--leader-base",
        "0x8280000000",
        "-o",
        s(&bin),
    ]);
    let r = neff(&["barrier", "decode", "--json", s(&bin)]);
    fs::write(d.join("barrier.json"), &r.stdout).unwrap();
}

#[test]
fn no_fsync_is_accepted_by_every_writing_command_and_documented_in_help() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    inputs(d);
    for (mut args, output) in writers(d, "nofsync") {
        args.push("--no-fsync".into());
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        ok(&args);
        assert!(output.is_file(), "{args:?}: no {}", output.display());
        let sub = if args[0] == "barrier" { 2 } else { 1 };
        let help = neff(&[&args[..sub], &["--help"]].concat());
        let help = String::from_utf8_lossy(&help.stdout);
        assert!(
            help.contains("--no-fsync") && help.contains("power cut"),
            "{:?} --help does not document --no-fsync:\n{help}",
            &args[..sub]
        );
    }
}

/// Every file under `dir`, relative, with its bytes.
fn tree(dir: &Path) -> Vec<(String, Vec<u8>)> {
    let mut files: Vec<(String, Vec<u8>)> = fs::read_dir(dir)
        .unwrap()
        .map(|e| {
            let path = e.unwrap().path();
            let name = path.file_name().unwrap().to_string_lossy().into_owned();
            (name, fs::read(&path).unwrap())
        })
        .collect();
    files.sort();
    files
}

#[test]
fn corpus_is_the_same_with_one_and_many_threads() {
    let dir = tempfile::tempdir().unwrap();
    let run = |threads: Option<&str>| {
        let out = dir
            .path()
            .join(format!("t{}", threads.unwrap_or("default")));
        let mut args = vec![
            "corpus",
            "-o",
            s(&out),
            "--count",
            "40",
            "--seed",
            "9",
            "-q",
        ];
        args.extend(threads.iter().flat_map(|t| ["--threads", t]));
        ok(&args);
        tree(&out)
    };
    let one = run(Some("1"));
    assert_eq!(one.len(), 41, "40 seeds and corpus.json");
    assert!(one.iter().any(|(name, _)| name.ends_with("-invalid.neff")));
    for threads in [Some("3"), Some("8"), None] {
        let many = run(threads);
        let names = |t: &[(String, Vec<u8>)]| t.iter().map(|f| f.0.clone()).collect::<Vec<_>>();
        assert_eq!(names(&many), names(&one), "--threads {threads:?}");
        for (a, b) in one.iter().zip(&many) {
            assert!(a.1 == b.1, "{} differs with --threads {threads:?}", a.0);
        }
    }
}

/// The fsync(2)/fdatasync(2) and syncfs(2) calls of a `neff` run, counted by
/// strace; `None` without a working strace.
fn sync_calls(args: &[&str]) -> Option<(usize, usize)> {
    let counts = traced_calls(args, &[&["fsync", "fdatasync"], &["syncfs"]])?;
    Some((counts[0], counts[1]))
}

#[test]
#[cfg_attr(
    not(neff_strace),
    ignore = "strace is missing or cannot trace here: apt-get install -y strace"
)]
fn a_folder_of_outputs_is_synced_once_and_no_fsync_syncs_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let at = |name: &str| dir.path().join(name);
    let (a, b, fx, u, out) = (at("a"), at("b"), at("fx"), at("u"), at("p.neff"));
    let default = sync_calls(&["corpus", "-o", s(&a), "--count", "20"])
        .expect("strace could trace when the tests were built");
    // One syncfs of the folder and one fsync of it: not two fsyncs per file.
    assert_eq!(default, (1, 1), "corpus of 20: (fsyncs, syncfs)");
    let fixtures = sync_calls(&["fixtures", "-o", s(&fx)]).unwrap();
    assert_eq!(fixtures, (1, 1), "fixtures: (fsyncs, syncfs)");
    let args = ["corpus", "-o", s(&b), "--count", "20", "--no-fsync"];
    assert_eq!(sync_calls(&args).unwrap(), (0, 0), "corpus --no-fsync");
    // A single file: the file, then its folder.
    let model = example("allreduce");
    let pack = ["pack", s(&model), "-o", s(&out)];
    assert_eq!(sync_calls(&pack).unwrap(), (2, 0), "pack");
    let no_fsync = [&pack[..], &["--no-fsync"]].concat();
    assert_eq!(sync_calls(&no_fsync).unwrap(), (0, 0), "pack --no-fsync");
    let unpack = ["unpack", s(&out), "-o", s(&u)];
    assert_eq!(sync_calls(&unpack).unwrap(), (1, 1), "unpack");
}

/// A pack of 32 MiB run under strace (twice, so the second replaces the
/// first's output): the log of its futex, rename and unlink calls.
fn pack_replacing_log(dir: &Path, extra: &[&str]) -> Option<String> {
    let tree = dir.join("tree");
    copy_tree(&example("allreduce"), &tree);
    let weights: Vec<u8> = (0..32u32 << 20)
        .map(|i| (i.wrapping_mul(2_654_435_761) >> 24) as u8)
        .collect();
    fs::write(tree.join("weights.bin"), weights).unwrap();
    let out = dir.join("out.neff");
    let mut args = vec!["pack", s(&tree), "-o", s(&out), "-q"];
    args.extend(extra);
    ok(&args);
    traced_log(
        &args,
        &[
            "futex",
            "rename",
            "renameat",
            "renameat2",
            "unlink",
            "unlinkat",
        ],
    )
}

/// Replacing an existing output swaps the new file in
/// (`renameat2(RENAME_EXCHANGE)`) and removes the old one: a `rename` over
/// it made ext4 write the whole new file to the device inside the call.
/// And the payload goes to the streaming check and the hash thread in large
/// pieces: 64 KiB hand-offs cost about 20 futex calls per MiB.
#[test]
#[cfg(target_os = "linux")]
#[cfg_attr(
    not(neff_strace),
    ignore = "strace is missing or cannot trace here: apt-get install -y strace"
)]
fn a_replaced_output_is_swapped_in_and_the_payload_handed_off_in_large_pieces() {
    for extra in [
        &["--pkg-version", "1", "--no-fsync"][..],
        &["--level", "1"][..],
    ] {
        let dir = tempfile::tempdir().unwrap();
        let log = pack_replacing_log(dir.path(), extra)
            .expect("strace could trace when the tests were built");
        let calls = |name: &str| {
            log.lines()
                .filter(|l| l.contains(&format!(" {name}(")))
                .count()
        };
        let swaps = log
            .lines()
            .filter(|l| l.contains("RENAME_EXCHANGE"))
            .count();
        assert_eq!(swaps, 1, "{extra:?}: {log}");
        assert_eq!(calls("rename") + calls("renameat"), 0, "{extra:?}: {log}");
        assert!(
            log.contains(".neff-tmp."),
            "the old file is removed under the temp name"
        );
        // pkg 1's hand-offs are only the hash thread's and the check's (pkg 2
        // adds the parallel deflate's 256 KiB jobs): 1,194 calls with 64 KiB.
        if extra[0] == "--pkg-version" {
            let futexes = calls("futex");
            assert!(futexes < 400, "{extra:?}: {futexes} futex calls for 32 MiB");
        }
    }
}
