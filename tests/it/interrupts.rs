//! Interrupted and failed writes leave nothing behind, and an output never
//! replaces an input: signals mid-pack, `ulimit -f`, stale temp files of a
//! killed run, outputs that are inputs.
#![cfg(unix)]

use crate::common::*;

use std::fs;
use std::os::unix::process::ExitStatusExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

fn examples() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("examples")
}

/// The example model plus a sparse member of `size` bytes, in `dir/tree`.
fn tree_with(dir: &Path, size: u64) -> PathBuf {
    let tree = dir.join("tree");
    copy_tree(&examples().join("allreduce"), &tree);
    let big = fs::File::create(tree.join("sg00/big.bin")).unwrap();
    big.set_len(size).unwrap();
    tree
}

/// The temp files of `model.neff` in `dir` (any naming scheme).
fn temp_files(dir: &Path) -> Vec<String> {
    names(dir)
        .into_iter()
        .filter(|n| n.starts_with(".model.neff."))
        .collect()
}

fn kill(child: &Child, signal: &str) {
    let status = Command::new("kill")
        .args([&format!("-{signal}"), &child.id().to_string()])
        .status()
        .unwrap();
    assert!(status.success(), "kill -{signal}");
}

/// The descriptors the child holds open on files in `dir` that have no name there: its
/// unnamed (`O_TMPFILE`) temp files (`/proc/PID/fd` shows them as
/// `DIR/#INODE (deleted)`).
fn unnamed_files(child: &Child, dir: &Path) -> usize {
    let fds = format!("/proc/{}/fd", child.id());
    let Ok(entries) = fs::read_dir(fds) else {
        return 0;
    };
    let prefix = format!("{}/#", dir.display());
    entries
        .flatten()
        .filter_map(|e| fs::read_link(e.path()).ok())
        .filter(|t| {
            let t = t.to_string_lossy();
            t.starts_with(&prefix) && t.ends_with(" (deleted)")
        })
        .count()
}

/// Waits (polling) until the child has created its temp file in `dir`:
/// unnamed where the OS allows, else `.model.neff.neff-tmp.*`.
fn wait_for_temp(child: &mut Child, dir: &Path) {
    let start = Instant::now();
    while temp_files(dir).is_empty() && unnamed_files(child, dir) == 0 {
        assert!(child.try_wait().unwrap().is_none(), "neff ended early");
        assert!(start.elapsed() < Duration::from_secs(60), "no temp file");
        std::thread::sleep(Duration::from_millis(1));
    }
}

/// SIGKILL too: the temp file, unnamed, leaves nothing to sweep.
#[test]
fn a_signal_mid_pack_removes_the_temp_file_and_keeps_the_old_output() {
    let dir = tempfile::tempdir().unwrap();
    let tree = tree_with(dir.path(), 256 << 20);
    let outdir = dir.path().join("out");
    fs::create_dir(&outdir).unwrap();
    let target = outdir.join("model.neff");
    fs::write(&target, b"the previous output").unwrap();
    for (name, number) in [("INT", 2), ("TERM", 15), ("HUP", 1), ("KILL", 9)] {
        let mut child = neff_command()
            .args(["pack", s(&tree), "-o", s(&target), "--quiet"])
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        wait_for_temp(&mut child, &outdir);
        // Frozen mid-write: the temp file is there and the target is old.
        kill(&child, "STOP");
        assert!(
            child.try_wait().unwrap().is_none(),
            "SIG{name}: ended early"
        );
        // Linux: the temp file has no name, nothing is in the folder.
        // (The writer holds the one file by several descriptors.)
        assert!(unnamed_files(&child, &outdir) >= 1, "SIG{name}");
        assert_eq!(names(&outdir), ["model.neff"], "SIG{name}");
        kill(&child, name);
        kill(&child, "CONT");
        let status = child.wait().unwrap();
        assert_eq!(status.signal(), Some(number), "SIG{name}: {status:?}");
        assert_eq!(names(&outdir), ["model.neff"], "SIG{name}");
        assert_eq!(fs::read(&target).unwrap(), b"the previous output");
    }
}

#[test]
fn a_file_size_limit_is_a_clean_error_naming_the_output() {
    let dir = tempfile::tempdir().unwrap();
    let tree = tree_with(dir.path(), 1 << 20);
    let target = dir.path().join("model.neff");
    fs::write(&target, b"old").unwrap();
    // 64 blocks: 32 KiB (dash) or 64 KiB (bash), far below the 1 MiB raw tar.
    let r = Command::new("sh")
        .args(["-c", "ulimit -f 64 && exec \"$0\" \"$@\""])
        .args([
            env!("CARGO_BIN_EXE_neff"),
            "pack",
            s(&tree),
            "-o",
            s(&target),
        ])
        .args(["--pkg-version", "1"])
        .output()
        .unwrap();
    let err = stderr(&r);
    assert_eq!(r.status.code(), Some(2), "{:?}: {err}", r.status);
    assert!(
        err.contains(&format!("cannot write {}", target.display())),
        "{err}"
    );
    assert!(err.contains("File too large"), "{err}");
    assert!(err.contains(".model.neff.neff-tmp."), "{err}");
    assert_eq!(names(dir.path()), ["model.neff", "tree"]);
    assert_eq!(fs::read(&target).unwrap(), b"old");
}

#[test]
fn the_next_run_removes_temp_files_left_by_a_killed_one() {
    let dir = tempfile::tempdir().unwrap();
    let tree = tree_with(dir.path(), 16);
    let outdir = dir.path().join("out");
    fs::create_dir(&outdir).unwrap();
    let mut gone = Command::new("true").spawn().unwrap();
    gone.wait().unwrap();
    let dead = gone.id();
    let stale = format!(".model.neff.neff-tmp.{dead}.0");
    let alive = format!(".model.neff.neff-tmp.{}.0", std::process::id());
    let not_ours = [
        format!(".model.neff.{dead}.tmp"),
        format!(".neff-tmp.{dead}.0"),
    ];
    for name in [&stale, &alive].into_iter().chain(&not_ours) {
        fs::write(outdir.join(name), b"partial").unwrap();
    }
    let target = outdir.join("model.neff");
    let r = neff(&["pack", s(&tree), "-o", s(&target)]);
    let err = stderr(&r);
    assert!(r.status.success(), "{err}");
    let note = format!("removed {}", outdir.join(&stale).display());
    assert!(err.contains(&note), "{err}");
    let mut expected = vec![alive, "model.neff".to_string()];
    expected.extend(not_ours);
    expected.sort();
    assert_eq!(names(&outdir), expected);
}

#[test]
fn pack_refuses_an_output_that_is_an_input_or_inside_the_tree() {
    let dir = tempfile::tempdir().unwrap();
    let tree = tree_with(dir.path(), 16);
    let input = tree.join("sg00/big.bin");
    let alias = dir.path().join("alias");
    std::os::unix::fs::symlink(&tree, &alias).unwrap();
    let hard = dir.path().join("hard.bin");
    fs::hard_link(&input, &hard).unwrap();
    let header = dir.path().join("header.json");
    fs::write(&header, b"{}").unwrap();
    let before = names(&tree);
    for (output, why) in [
        (input.clone(), "it is the input"),
        (tree.join("new.neff"), "inside"),
        (alias.join("sg00/new.neff"), "inside"),
        (tree.clone(), "it is the input"),
        (hard.clone(), "it is the input"),
        (header.clone(), "it is the input"),
    ] {
        let r = neff(&["pack", s(&tree), "-o", s(&output), "--header", s(&header)]);
        let err = stderr(&r);
        assert_eq!(r.status.code(), Some(2), "{}: {err}", output.display());
        assert!(
            err.contains("refusing to write") && err.contains(why),
            "{err}"
        );
    }
    assert_eq!(names(&tree), before);
    assert_eq!(fs::read(&input).unwrap(), [0u8; 16]);
    assert_eq!(fs::read(&header).unwrap(), b"{}");
}

#[test]
fn build_refuses_an_output_that_is_its_spec_or_a_weight() {
    let dir = tempfile::tempdir().unwrap();
    copy_tree(&examples().join("weights"), &dir.path().join("weights"));
    let spec = dir.path().join("weights.json");
    fs::copy(examples().join("weights.json"), &spec).unwrap();
    let weight = dir.path().join("weights/b1.bin");
    let (spec_bytes, weight_bytes) = (fs::read(&spec).unwrap(), fs::read(&weight).unwrap());
    for output in [&spec, &weight] {
        let r = neff(&["build", s(&spec), "-o", s(output)]);
        let err = stderr(&r);
        assert_eq!(r.status.code(), Some(2), "{}: {err}", output.display());
        assert!(err.contains("it is the input"), "{err}");
    }
    assert_eq!(fs::read(&spec).unwrap(), spec_bytes);
    assert_eq!(fs::read(&weight).unwrap(), weight_bytes);
    let ok = neff(&["build", s(&spec), "-o", s(&dir.path().join("w.neff"))]);
    assert!(ok.status.success(), "{}", stderr(&ok));
}

/// A signal that arrives before the rename always keeps the old output and
/// ends the process by that signal: the process is held just before the
/// rename (`NEFF_TEST_HOLD_BEFORE_RENAME`), signalled, then released, 200
/// times over the three signals.
#[test]
fn a_signal_before_the_rename_is_never_lost() {
    let dir = tempfile::tempdir().unwrap();
    let tree = dir.path().join("tree");
    copy_tree(&examples().join("allreduce"), &tree);
    let outdir = dir.path().join("out");
    fs::create_dir(&outdir).unwrap();
    let target = outdir.join("model.neff");
    fs::write(&target, b"the previous output").unwrap();
    let hold = dir.path().join("held");
    let signals = [("INT", 2), ("TERM", 15), ("HUP", 1)];
    for round in 0..200 {
        let (name, number) = signals[round % 3];
        let mut child = neff_command()
            .args(["pack", s(&tree), "-o", s(&target), "--quiet", "--no-fsync"])
            .env("NEFF_TEST_HOLD_BEFORE_RENAME", &hold)
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let start = Instant::now();
        while !hold.exists() {
            assert!(
                child.try_wait().unwrap().is_none(),
                "round {round}: ended early"
            );
            assert!(
                start.elapsed() < Duration::from_secs(60),
                "round {round}: never held"
            );
            std::thread::sleep(Duration::from_millis(1));
        }
        kill(&child, name);
        fs::remove_file(&hold).unwrap();
        let status = child.wait().unwrap();
        assert_eq!(
            status.signal(),
            Some(number),
            "round {round} (SIG{name}): {status:?}"
        );
        assert_eq!(names(&outdir), ["model.neff"], "round {round}");
        assert_eq!(
            fs::read(&target).unwrap(),
            b"the previous output",
            "round {round}"
        );
    }
}

/// The output's folder is opened once: when the path to it is made to point
/// elsewhere while the output is written (the folder renamed away and a
/// symlink to another folder put in its place), the output still lands in
/// the folder it was started in, and the other folder is not touched.
#[test]
fn a_folder_swapped_mid_write_does_not_redirect_the_output() {
    let dir = tempfile::tempdir().unwrap();
    let tree = dir.path().join("tree");
    copy_tree(&examples().join("allreduce"), &tree);
    let (outdir, moved, elsewhere) = (
        dir.path().join("out"),
        dir.path().join("out.moved"),
        dir.path().join("elsewhere"),
    );
    fs::create_dir(&outdir).unwrap();
    fs::create_dir(&elsewhere).unwrap();
    fs::write(elsewhere.join("model.neff"), b"not ours").unwrap();
    let hold = dir.path().join("held");
    let mut child = neff_command()
        .args([
            "pack",
            s(&tree),
            "-o",
            s(&outdir.join("model.neff")),
            "--quiet",
        ])
        .env("NEFF_TEST_HOLD_BEFORE_RENAME", &hold)
        .spawn()
        .unwrap();
    let start = Instant::now();
    while !hold.exists() {
        assert!(child.try_wait().unwrap().is_none(), "ended early");
        assert!(start.elapsed() < Duration::from_secs(60), "never held");
        std::thread::sleep(Duration::from_millis(1));
    }
    fs::rename(&outdir, &moved).unwrap();
    std::os::unix::fs::symlink(&elsewhere, &outdir).unwrap();
    fs::remove_file(&hold).unwrap();
    assert!(child.wait().unwrap().success());
    assert_eq!(names(&moved), ["model.neff"]);
    assert_eq!(fs::read(elsewhere.join("model.neff")).unwrap(), b"not ours");
    assert_eq!(names(&elsewhere), ["model.neff"]);
    let ok = neff(&["verify", s(&moved.join("model.neff"))]);
    assert!(ok.status.success(), "{}", stderr(&ok));
}

/// A folder its user may write in but not list (mode `-wx`) takes an output
/// and its replacement: the folder is then held by an `O_PATH` descriptor.
/// Run as `nobody` (through `setpriv`, as root), with a copy of the binary.
#[test]
#[cfg_attr(
    not(neff_setpriv),
    ignore = "needs root and setpriv (util-linux) to run neff as nobody"
)]
fn a_folder_that_cannot_be_listed_takes_the_output() {
    use std::os::unix::fs::PermissionsExt;
    let dir = tempfile::tempdir().unwrap();
    let open_to_all =
        |p: &Path, mode: u32| fs::set_permissions(p, fs::Permissions::from_mode(mode)).unwrap();
    open_to_all(dir.path(), 0o755);
    let tree = dir.path().join("tree");
    copy_tree(&examples().join("allreduce"), &tree);
    let status = Command::new("chmod")
        .args(["-R", "a+rX", s(&tree)])
        .status()
        .unwrap();
    assert!(status.success());
    let binary = dir.path().join("neff");
    fs::copy(env!("CARGO_BIN_EXE_neff"), &binary).unwrap();
    open_to_all(&binary, 0o755);
    let out = dir.path().join("out");
    fs::create_dir(&out).unwrap();
    std::os::unix::fs::chown(&out, Some(65534), Some(65534)).unwrap();
    open_to_all(&out, 0o300);
    let target = out.join("model.neff");
    let pack_as_nobody = || {
        Command::new("setpriv")
            .args(["--reuid=65534", "--regid=65534", "--clear-groups"])
            .arg(&binary)
            .args(["pack", s(&tree), "-o", s(&target), "--quiet"])
            .output()
            .unwrap()
    };
    for round in 0..2 {
        let mut done = pack_as_nobody();
        // The copy's write descriptor may still be open in a child another
        // test thread forked meanwhile: exec then fails with ETXTBSY.
        for _ in 0..20 {
            if !stderr(&done).contains("Text file busy") {
                break;
            }
            std::thread::sleep(Duration::from_millis(50));
            done = pack_as_nobody();
        }
        assert!(done.status.success(), "round {round}: {}", stderr(&done));
    }
    assert_eq!(names(&out), ["model.neff"]);
    let ok = neff(&["verify", s(&target)]);
    assert!(ok.status.success(), "{}", stderr(&ok));
}
