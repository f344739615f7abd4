//! Helpers shared by the integration tests: hand-built tar blocks and NEFFs,
//! for inputs the packager deliberately refuses to write.
#![allow(dead_code)]

use std::io::Write;
use std::path::Path;
use std::process::{Command, Output};

use md5::{Digest, Md5};
use sha2::Sha256;

/// One GNU-style tar header with a correct checksum.
pub fn tar_header(name: &[u8], type_flag: u8, size_field: &[u8]) -> [u8; 512] {
    use neff::schema::tar;
    let mut h = [0u8; 512];
    h[..name.len()].copy_from_slice(name);
    h[tar::MODE.range()].copy_from_slice(b"0000644\0");
    h[tar::SIZE.at..tar::SIZE.at + size_field.len()].copy_from_slice(size_field);
    h[tar::TYPE_FLAG.at] = type_flag;
    h[tar::MAGIC_VERSION.range()].copy_from_slice(tar::GNU_MAGIC);
    fix_checksum(&mut h);
    h
}

/// Recomputes a header block's checksum.
pub fn fix_checksum(h: &mut [u8; 512]) {
    neff::schema::tar::set_checksum(h);
}

/// An octal size field.
pub fn size_field(size: u64) -> Vec<u8> {
    format!("{size:011o}\0").into_bytes()
}

/// A tar of regular files (name, data), with end blocks and record padding.
pub fn tar_of(files: &[(&str, &[u8])]) -> Vec<u8> {
    let mut out = Vec::new();
    for (name, data) in files {
        out.extend_from_slice(&tar_header(
            name.as_bytes(),
            b'0',
            &size_field(data.len() as u64),
        ));
        push_padded(&mut out, data);
    }
    finish_tar(out)
}

/// Appends data padded to a 512-byte boundary.
pub fn push_padded(out: &mut Vec<u8>, data: &[u8]) {
    out.extend_from_slice(data);
    out.resize(out.len().div_ceil(512) * 512, 0);
}

/// Appends the end blocks and pads to 10240 bytes.
pub fn finish_tar(mut out: Vec<u8>) -> Vec<u8> {
    out.extend_from_slice(&[0u8; 1024]);
    out.resize(out.len().div_ceil(10240) * 10240, 0);
    out
}

/// gzip at level 6.
pub fn gzip(data: &[u8]) -> Vec<u8> {
    let mut e = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::new(6));
    e.write_all(data).unwrap();
    e.finish().unwrap()
}

/// A NEFF around stored payload bytes with a correct hash for `pkg` (1 or 2).
pub fn neff_with_payload(pkg: u64, payload: &[u8]) -> Vec<u8> {
    let mut h = neff_header(pkg, payload.len() as u64);
    set_hash(&mut h, pkg, payload);
    h.extend_from_slice(payload);
    h
}

/// The 1024-byte header of a NEFF whose payload is `len` bytes, its hash
/// not set (see [`set_hash`], [`set_md5`]).
pub fn neff_header(pkg: u64, len: u64) -> Vec<u8> {
    let mut h = vec![0u8; 1024];
    h[0..8].copy_from_slice(&pkg.to_le_bytes());
    h[8..16].copy_from_slice(&0x400u64.to_le_bytes());
    h[16..24].copy_from_slice(&len.to_le_bytes());
    h[24..32].copy_from_slice(&2u64.to_le_bytes());
    h[0xA8..0xAC].copy_from_slice(&1u32.to_le_bytes());
    h[0xDC] = b't';
    h[0x1DC..0x1E0].copy_from_slice(&1u32.to_le_bytes());
    h[0x228..0x22C].copy_from_slice(&1u32.to_le_bytes());
    h
}

/// Writes the digest `pkg` selects over `payload` into the header.
pub fn set_hash(h: &mut [u8], pkg: u64, payload: &[u8]) {
    if pkg == 1 {
        h[0xAC..0xCC].copy_from_slice(&Sha256::digest(payload));
    } else {
        set_md5(h, &Md5::digest(payload));
    }
}

/// Writes a pkg-2 payload's MD5 into the header.
pub fn set_md5(h: &mut [u8], md5: &[u8]) {
    h[0xAC..0xBC].copy_from_slice(md5);
    h[0xBC..0xCC].copy_from_slice(&[b'0'; 16]);
}

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

/// Sets a u64 header field.
pub fn set_u64(neff: &mut [u8], offset: usize, value: u64) {
    neff[offset..offset + 8].copy_from_slice(&value.to_le_bytes());
}

/// neff.json of the minimal model: one input x, one output y, the `__kelf` node.
pub const NEFF_JSON: &str = r#"{"nodes": [{"op": "null", "name": "x", "inputs": []},
  {"op": "tvm_op", "name": "sg", "attrs": {"func_name": "__kelf", "kelf": "kelf-0.json", "num_inputs": "1", "num_outputs": "1"}, "inputs": [[0, 0, 0]]}],
 "arg_nodes": [0], "heads": [[1, 0, 0]], "node_row_ptr": [0, 1, 2],
 "attrs": {"dltype": ["list_str", ["float32", "float32"]], "shape": ["list_shape", [[4], [4]]], "storage_id": ["list_int", [0, 1]]}}"#;

/// The KELF descriptor of the minimal model (target `*`).
pub const KELF_JSON: &str = r#"{"graphs": [{"definition": "sg00/def.json", "name": "sg00"}], "version": "0.5", "target": "*"}"#;

/// def.json of the minimal model.
pub const DEF_JSON: &str = r#"{"var": {"x": {"type": "input", "var_id": 0, "size": 16}, "y": {"type": "output", "var_id": 1, "size": 16}},
 "runtime_statebuffer_reservation": [],
 "pe": "pe.json", "act": "act.json", "pool": "pool.json", "dve": "dve.json", "sp": "sp.json"}"#;

/// The members of a minimal model that passes every gate on every arch
/// without warnings, with `replace` swapping in (or adding) members.
pub fn model_files(replace: &[(&str, &[u8])]) -> Vec<(String, Vec<u8>)> {
    let mut files: Vec<(String, Vec<u8>)> = vec![
        ("hlo_stats.json".into(), br#"{"mac_count": 0}"#.to_vec()),
        ("kelf-0.json".into(), KELF_JSON.as_bytes().to_vec()),
        ("neff.json".into(), NEFF_JSON.as_bytes().to_vec()),
        ("sg00/def.json".into(), DEF_JSON.as_bytes().to_vec()),
    ];
    for eng in ["pe", "act", "pool", "dve", "sp"] {
        let json = format!(r#"{{"dma": [], "instr": "{eng}.bin", "name": "{eng}"}}"#);
        files.push((format!("sg00/{eng}.json"), json.into_bytes()));
        let bin = if eng == "pe" {
            vec![0u8; 64]
        } else {
            Vec::new()
        };
        files.push((format!("sg00/{eng}.bin"), bin));
    }
    for (name, data) in replace {
        match files.iter_mut().find(|(n, _)| n == name) {
            Some(slot) => slot.1 = data.to_vec(),
            None => files.push((name.to_string(), data.to_vec())),
        }
    }
    files
}

/// [`model_files`] with some members left out.
pub fn model_files_without(replace: &[(&str, &[u8])], remove: &[&str]) -> Vec<(String, Vec<u8>)> {
    let mut files = model_files(replace);
    files.retain(|(n, _)| !remove.contains(&n.as_str()));
    files
}

/// A pkg-2 NEFF of any member list.
pub fn neff_of(files: &[(String, Vec<u8>)]) -> Vec<u8> {
    let refs: Vec<(&str, &[u8])> = files
        .iter()
        .map(|(n, d)| (n.as_str(), d.as_slice()))
        .collect();
    neff_with_payload(2, &gzip(&tar_of(&refs)))
}

/// The tar entries of [`model_files`], without end blocks.
pub fn model_entries(replace: &[(&str, &[u8])]) -> Vec<u8> {
    let mut out = Vec::new();
    for (name, data) in model_files(replace) {
        out.extend_from_slice(&tar_header(
            name.as_bytes(),
            b'0',
            &size_field(data.len() as u64),
        ));
        push_padded(&mut out, &data);
    }
    out
}

/// A tar of [`model_files`].
pub fn model_tar(replace: &[(&str, &[u8])]) -> Vec<u8> {
    finish_tar(model_entries(replace))
}

/// A pkg-2 NEFF of the minimal model with some members replaced.
pub fn model_neff(replace: &[(&str, &[u8])]) -> Vec<u8> {
    neff_with_payload(2, &gzip(&model_tar(replace)))
}

/// A small valid pkg-2 NEFF (the minimal model).
pub fn valid_neff() -> Vec<u8> {
    model_neff(&[])
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
/// `need` bytes and 250,000 inodes free, else in the usual place. For the tests that create or
/// unpack many thousands of files: on a disk filesystem each creation costs a
/// journal update (about 0.3 ms on this VM against 0.03 ms in memory), and
/// what they test is the tools' walk and memory, not the disk.
pub fn memory_tempdir(need: u64) -> tempfile::TempDir {
    #[cfg(target_os = "linux")]
    {
        let shm = Path::new("/dev/shm");
        // SAFETY: `stat` is a plain C struct that statvfs fills in.
        let mut stat: libc::statvfs = unsafe { std::mem::zeroed() };
        // SAFETY: a NUL-terminated path and a valid out pointer.
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

/// `../shared/real-neffs/` (the real compiler output), or None (the test is
/// skipped) when it is missing outside CI.
pub fn real_neff_dir() -> Option<std::path::PathBuf> {
    let dir = std::path::Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/../shared/real-neffs"));
    if dir.is_dir() {
        return Some(dir.to_path_buf());
    }
    if std::env::var("CI").as_deref() == Ok("true") {
        panic!("{} is missing (required when CI=true)", dir.display());
    }
    println!("skip: {} is missing", dir.display());
    None
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
                for sig in [libc::SIGINT, libc::SIGTERM, libc::SIGHUP] {
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
