//! Helpers shared by the integration tests: hand-built tar blocks and NEFFs
//! (`bytes`, shared with neff-loader's gate tests, for inputs the packager
//! deliberately refuses to write), and running the `neff` binary.
#![allow(dead_code)]

use std::path::Path;
use std::process::{Command, Output};

// The hand-built NEFFs, shared with neff-loader's gate tests.
pub use neff_testkit::bytes::*;

/// Asks the `neff` that `command` runs to report its own peak RSS into a
/// file (`NEFF_TEST_PEAK_RSS`); [`wait_peak_rss`] reads it. The kernel's
/// `ru_maxrss` of a child also counts its parent's peak at `exec`, which in
/// a test binary running many tests at once says nothing about the child.
#[cfg(unix)]
pub fn report_peak_rss(command: &mut Command) -> tempfile::TempPath {
    let report = tempfile::NamedTempFile::new()
        .expect("temp file")
        .into_temp_path();
    command.env("NEFF_TEST_PEAK_RSS", &report);
    report
}

/// Waits for `child` and returns its exit code and the peak RSS in KiB it
/// wrote into `report` ([`report_peak_rss`]).
#[cfg(unix)]
pub fn wait_peak_rss(child: &std::process::Child, report: &std::path::Path) -> (Option<i32>, u64) {
    let mut status = 0;
    // SAFETY: a plain out-parameter for waitpid.
    let got = unsafe { libc::waitpid(child.id() as libc::pid_t, &mut status, 0) };
    assert!(got > 0, "waitpid failed");
    let code = libc::WIFEXITED(status).then(|| libc::WEXITSTATUS(status));
    (code, read_peak_rss(report))
}

/// The peak RSS in KiB a `neff` wrote into `report`.
#[cfg(unix)]
pub fn read_peak_rss(report: &std::path::Path) -> u64 {
    let text = std::fs::read_to_string(report).expect("the peak RSS report");
    text.trim().parse().expect("a number of KiB")
}

/// Runs `neff ARGS` (stdout discarded) and returns its exit code and own
/// peak RSS in KiB (see [`wait_peak_rss`]).
#[cfg(unix)]
pub fn neff_peak_rss(args: &[&str]) -> (Option<i32>, u64) {
    let mut command = neff_command();
    let report = report_peak_rss(&mut command);
    #[allow(clippy::zombie_processes)] // reaped by wait_peak_rss
    let child = command
        .args(args)
        .stdout(std::process::Stdio::null())
        .spawn()
        .expect("run neff");
    wait_peak_rss(&child, &report)
}

/// Writes the minimal model as a directory tree under `root`.
pub fn write_model_tree(root: &std::path::Path) {
    for (name, data) in model_files(&[]) {
        let path = root.join(&name);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, data).unwrap();
    }
}

/// A temporary folder in memory (`/dev/shm`) where the machine has one with
/// `need` bytes and 250,000 inodes free, else in the usual place. For the
/// tests that create or unpack many thousands of files: on a disk filesystem
/// each creation costs a journal update (about 0.3 ms on this VM against
/// 0.03 ms in memory), and what they test is the tools' walk and memory, not
/// the disk.
pub fn memory_tempdir(need: u64) -> tempfile::TempDir {
    #[cfg(target_os = "linux")]
    {
        let shm = Path::new("/dev/shm");
        // SAFETY: `stat` is a plain C struct that statvfs fills in.
        let mut stat: libc::statvfs = unsafe { std::mem::zeroed() };
        // SAFETY: a NUL-terminated path (`shm`'s) and a valid out pointer.
        let ok = unsafe { libc::statvfs(c"/dev/shm".as_ptr(), &mut stat) } == 0;
        let free = stat.f_bavail as u64 * stat.f_frsize as u64;
        if ok && free >= need && stat.f_favail as u64 >= 250_000 {
            if let Ok(dir) = tempfile::tempdir_in(shm) {
                return dir;
            }
        }
    }
    let _ = need;
    tempfile::tempdir().unwrap()
}

/// The folder of real compiler NEFFs (`NEFF_REAL_NEFFS` at build time,
/// default `../shared/real-neffs`), or None when it was missing at build
/// time: a test that needs it is then ignored (`REAL_NEFFS_MISSING`), and
/// one that only adds its files to built ones runs without them.
pub fn real_neff_dir() -> Option<std::path::PathBuf> {
    cfg!(neff_real_neffs).then(|| std::path::PathBuf::from(env!("NEFF_REAL_NEFFS_DIR")))
}

/// The `.neff` files of the real-NEFF folder, sorted by name; none when it
/// was missing at build time (for a test that also runs on built NEFFs).
pub fn real_neff_files_if_any() -> Vec<std::path::PathBuf> {
    let Some(dir) = real_neff_dir() else {
        return Vec::new();
    };
    let mut files: Vec<std::path::PathBuf> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "neff"))
        .collect();
    files.sort();
    files
}

/// [`real_neff_files_if_any`] for a test ignored without the folder: at
/// least one file.
pub fn real_neff_files() -> Vec<std::path::PathBuf> {
    let files = real_neff_files_if_any();
    assert!(!files.is_empty(), "no .neff in {}", real_neffs().display());
    files
}

/// [`real_neff_dir`] for a test ignored without it (run anyway with
/// `--ignored`: a clear panic).
pub fn real_neffs() -> std::path::PathBuf {
    real_neff_dir().unwrap_or_else(|| {
        panic!(
            "the real NEFFs are missing: {} (set NEFF_REAL_NEFFS; see tests/real-neffs.md)",
            env!("NEFF_REAL_NEFFS_DIR")
        )
    })
}

/// Compares `actual` with tests/golden/`name` (`name` may name a subfolder);
/// `NEFF_UPDATE_GOLDEN=1` rewrites the file instead. A difference names the
/// file and its first differing line.
#[track_caller]
pub fn golden(name: &str, actual: &[u8]) {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/golden")
        .join(name);
    if std::env::var_os("NEFF_UPDATE_GOLDEN").is_some() {
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(&path, actual).unwrap();
    }
    let want = std::fs::read(&path)
        .unwrap_or_else(|_| panic!("{} missing: run with NEFF_UPDATE_GOLDEN=1", path.display()));
    if want != actual {
        let (want, actual) = (
            String::from_utf8_lossy(&want),
            String::from_utf8_lossy(actual),
        );
        let line = want.lines().zip(actual.lines()).position(|(a, b)| a != b);
        let line = line.unwrap_or(want.lines().count().min(actual.lines().count()));
        panic!(
            "{} changed at line {}: review, then NEFF_UPDATE_GOLDEN=1\n  golden: {:?}\n  now:    {:?}",
            path.display(),
            line + 1,
            want.lines().nth(line).unwrap_or("<end>"),
            actual.lines().nth(line).unwrap_or("<end>"),
        );
    }
}

/// [`golden`] for text.
#[track_caller]
pub fn golden_text(name: &str, actual: &str) {
    golden(name, actual.as_bytes());
}

// The CLI helpers most test files share.

/// A command running the `neff` binary, with SIGINT, SIGTERM and SIGHUP at
/// their default actions in the child even when this test process was
/// started with them ignored (a background job, `nohup`): `neff` keeps a
/// signal ignored that was ignored when it started, and the tests that
/// signal it expect it to die of the signal.
pub fn neff_command() -> Command {
    #[allow(unused_mut)]
    let mut command = Command::new(env!("CARGO_BIN_EXE_neff"));
    #[cfg(unix)]
    {
        use std::os::unix::process::CommandExt;
        // SAFETY: `signal` is async-signal-safe; nothing else runs between
        // fork and exec.
        unsafe {
            command.pre_exec(|| {
                for sig in neff::writer::fs::TERMINATION_SIGNALS {
                    libc::signal(sig, libc::SIG_DFL);
                }
                Ok(())
            });
        }
    }
    command
}

/// Runs the `neff` binary with `args`.
pub fn neff(args: &[&str]) -> Output {
    neff_command().args(args).output().expect("run neff")
}

/// The exit code of a finished command.
pub fn code(out: &Output) -> i32 {
    out.status.code().expect("exit code")
}

/// stdout as text.
pub fn stdout(out: &Output) -> String {
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// stderr as text.
pub fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

/// A path as `&str` (test paths are UTF-8).
pub fn s(p: &Path) -> &str {
    p.to_str().unwrap()
}

/// The names in `dir`, sorted.
pub fn names(dir: &Path) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .collect();
    names.sort();
    names
}

/// strace's log of the `calls` a `neff` run makes (one line per call, with
/// its arguments); `None` without a working strace.
pub fn traced_log(args: &[&str], calls: &[&str]) -> Option<String> {
    let log = tempfile::NamedTempFile::new().unwrap();
    let status = Command::new("strace")
        .args([
            "-f",
            "-qq",
            "-e",
            &format!("trace={}", calls.join(",")),
            "-o",
        ])
        .arg(log.path())
        .arg(env!("CARGO_BIN_EXE_neff"))
        .args(args)
        .output()
        .ok()?;
    if !status.status.success() {
        let probe = Command::new("strace")
            .args(["-o", "/dev/null", "true"])
            .status();
        // strace missing or not allowed to trace here: nothing to count.
        if !probe.is_ok_and(|s| s.success()) {
            return None;
        }
        panic!("{args:?}: {}", String::from_utf8_lossy(&status.stderr));
    }
    Some(std::fs::read_to_string(log.path()).unwrap())
}

/// The system calls of a `neff` run (and its threads), counted by strace, one
/// count per group of `calls`; `None` without a working strace. The run must
/// succeed.
pub fn traced_calls(args: &[&str], calls: &[&[&str]]) -> Option<Vec<usize>> {
    let names: Vec<&str> = calls
        .iter()
        .flat_map(|group| group.iter().copied())
        .collect();
    let text = traced_log(args, &names)?;
    let count = |group: &[&str]| {
        text.lines()
            .filter(|line| {
                let call = line.split_whitespace().nth(1).unwrap_or("");
                group.iter().any(|n| call.starts_with(&format!("{n}(")))
            })
            .count()
    };
    Some(calls.iter().map(|group| count(group)).collect())
}

/// Copies the folder `from` (files and folders) to `to`.
pub fn copy_tree(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for e in std::fs::read_dir(from).unwrap() {
        let e = e.unwrap();
        if e.file_type().unwrap().is_dir() {
            copy_tree(&e.path(), &to.join(e.file_name()));
        } else {
            std::fs::copy(e.path(), to.join(e.file_name())).unwrap();
        }
    }
}
