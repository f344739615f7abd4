//! `neff unpack` in one pass: the payload is read once (check and write
//! together), entries go to a temp dir inside DIR that is moved into place
//! only when every gate passed, and removed on a refusal or a signal.
#![cfg(target_os = "linux")]

use crate::common::*;

use std::fs;
use std::os::unix::process::ExitStatusExt;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use neff::loader::RuntimeProfile;
use neff::tools::{extract, ExtractLimits};

/// A NEFF in `dir` of `n` incompressible members of 4 MiB each.
fn big_neff(dir: &Path, n: usize) -> std::path::PathBuf {
    let tree = dir.join("tree");
    write_model_tree(&tree);
    let mut x = 0x9E37_79B9_7F4A_7C15u64;
    for i in 0..n {
        let data: Vec<u8> = (0..4 << 20)
            .map(|_| {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                x as u8
            })
            .collect();
        fs::write(tree.join(format!("blob{i}.bin")), data).unwrap();
    }
    let out = dir.join("big.neff");
    let r = neff(&["pack", s(&tree), "-o", s(&out), "-q"]);
    assert_eq!(code(&r), 0, "{}", stderr(&r));
    out
}

/// Bytes this thread has read through `read` so far (`/proc/thread-self/io`
/// rchar). Per thread, not per process: the other tests of this binary read
/// files on their own threads at the same time, and `extract` reads on the
/// thread that calls it.
fn bytes_read() -> u64 {
    let io = fs::read_to_string("/proc/thread-self/io").unwrap();
    io.lines()
        .find_map(|l| l.strip_prefix("rchar: "))
        .unwrap()
        .parse()
        .unwrap()
}

#[test]
fn unpack_reads_the_payload_once() {
    let dir = tempfile::tempdir().unwrap();
    let file = big_neff(dir.path(), 8);
    let size = fs::metadata(&file).unwrap().len();
    let before = bytes_read();
    let dest = dir.path().join("out");
    let (summary, _) = extract(
        &file,
        &dest,
        &RuntimeProfile::default(),
        false,
        &ExtractLimits::default(),
    )
    .unwrap();
    let read = bytes_read() - before;
    assert!(summary.bytes >= 32 << 20);
    // The check and the write share one read of the file (before: two).
    assert!(
        read >= size && read < size + size / 4,
        "{read} bytes read for a {size}-byte NEFF"
    );
    assert_eq!(
        fs::read(dest.join("blob3.bin")).unwrap(),
        fs::read(dir.path().join("tree/blob3.bin")).unwrap()
    );
    assert!(!names(&dest).iter().any(|n| n.starts_with(".neff-unpack")));
}

#[test]
fn a_refusal_after_the_entries_streamed_leaves_dir_as_it_was() {
    let dir = tempfile::tempdir().unwrap();
    let tree = dir.path().join("tree");
    write_model_tree(&tree);
    let file = dir.path().join("m.neff");
    assert_eq!(code(&neff(&["pack", s(&tree), "-o", s(&file), "-q"])), 0);
    // The hash is only known wrong once every entry was read (G9).
    let mut bytes = fs::read(&file).unwrap();
    bytes[0xAC] ^= 1;
    fs::write(&file, &bytes).unwrap();
    let dest = dir.path().join("out");
    fs::create_dir(&dest).unwrap();
    fs::write(dest.join("neff.json"), b"kept").unwrap();
    let r = neff(&["unpack", s(&file), "-o", s(&dest), "--force"]);
    assert_eq!(code(&r), 1, "{}", stderr(&r));
    assert!(stderr(&r).contains("MD5 mismatch"), "{}", stderr(&r));
    assert_eq!(names(&dest), ["neff.json"]);
    assert_eq!(fs::read(dest.join("neff.json")).unwrap(), b"kept");
    // An absent DIR is absent again.
    let absent = dir.path().join("absent");
    assert_eq!(code(&neff(&["unpack", s(&file), "-o", s(&absent)])), 1);
    assert!(!absent.exists());
    // A member the rules refuse, after members already written: the same.
    let mut tar = model_entries(&[]);
    tar.extend(tar_header(b"zz/escape", b'2', b"00000000000\0"));
    let bad = dir.path().join("bad.neff");
    fs::write(&bad, neff_with_payload(2, &gzip(&finish_tar(tar)))).unwrap();
    let r = neff(&["unpack", s(&bad), "-o", s(&dest), "--force"]);
    assert_eq!(code(&r), 2, "{}", stderr(&r));
    assert!(stderr(&r).contains("is a symlink"), "{}", stderr(&r));
    assert_eq!(names(&dest), ["neff.json"]);
}

#[test]
fn a_signal_mid_unpack_removes_the_temp_dir() {
    let dir = tempfile::tempdir().unwrap();
    let file = big_neff(dir.path(), 48);
    let dest = dir.path().join("out");
    fs::create_dir(&dest).unwrap();
    let mut child = neff_command()
        .args(["unpack", s(&file), "-o", s(&dest), "-q"])
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let start = Instant::now();
    while names(&dest).is_empty() {
        assert!(child.try_wait().unwrap().is_none(), "unpack ended early");
        assert!(start.elapsed() < Duration::from_secs(60), "no temp dir");
        std::thread::sleep(Duration::from_millis(1));
    }
    let signal = |name: &str| {
        let pid = child.id().to_string();
        assert!(Command::new("kill")
            .args([name, &pid])
            .status()
            .unwrap()
            .success());
    };
    signal("-STOP");
    let temp = names(&dest);
    assert!(
        temp.len() == 1 && temp[0].starts_with(".neff-unpack."),
        "{temp:?}"
    );
    signal("-TERM");
    signal("-CONT");
    let status = child.wait().unwrap();
    assert_eq!(status.signal(), Some(15), "{status:?}");
    assert!(names(&dest).is_empty(), "{:?}", names(&dest));
}
