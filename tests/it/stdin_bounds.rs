//! `-` (stdin) is read as one NEFF: its header and the `data_size` bytes it
//! declares, no more. A pipe that goes on after them is not drained, and the
//! spool is an unnamed temp file that nothing can leave behind.

use std::io::Write;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use crate::common::{neff_command, s, write_model_tree};

fn small_neff(tmp: &std::path::Path) -> Vec<u8> {
    let tree = tmp.join("model");
    write_model_tree(&tree);
    let out = tmp.join("m.neff");
    let packed = neff_command()
        .args(["pack", s(&tree), "-o", s(&out), "-q", "--no-fsync"])
        .output()
        .unwrap();
    assert!(packed.status.success(), "{packed:?}");
    std::fs::read(out).unwrap()
}

/// `neff ARGS` started with a piped stdin and its outputs dropped.
fn piped(mut command: Command, args: &[&str]) -> std::process::Child {
    command
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap()
}

/// Runs `neff ARGS` with the NEFF and then endless zero bytes on stdin;
/// returns its exit code once it exits (it must, within a generous limit).
fn with_endless_stdin(args: &[&str], neff: &[u8]) -> i32 {
    let mut child = piped(neff_command(), args);
    let mut stdin = child.stdin.take().unwrap();
    let neff = neff.to_vec();
    let feeder = std::thread::spawn(move || {
        if stdin.write_all(&neff).is_err() {
            return;
        }
        let zeros = vec![0u8; 1 << 16];
        // Until the reader is gone (a broken pipe).
        while stdin.write_all(&zeros).is_ok() {}
    });
    let started = Instant::now();
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        if started.elapsed() > Duration::from_secs(60) {
            let _ = child.kill();
            panic!("neff {args:?} still reads stdin after 60 s");
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    feeder.join().unwrap();
    status.code().unwrap_or(-1)
}

#[test]
fn a_pipe_that_goes_on_after_the_neff_is_not_drained() {
    let tmp = tempfile::tempdir().unwrap();
    let neff = small_neff(tmp.path());
    let out = tmp.path().join("unpacked");
    for args in [
        vec!["verify", "-"],
        vec!["inspect", "-"],
        vec!["cat", "-", "neff.json"],
        vec!["diff", "-", s(&tmp.path().join("m.neff"))],
        vec!["unpack", "-", "-o", s(&out), "--force", "-q"],
    ] {
        assert_eq!(with_endless_stdin(&args, &neff), 0, "neff {args:?}");
    }
}

#[test]
fn unpack_of_stdin_names_no_temp_file() {
    let tmp = tempfile::tempdir().unwrap();
    let neff = small_neff(tmp.path());
    let temp_dir = tmp.path().join("tmpdir");
    std::fs::create_dir(&temp_dir).unwrap();
    let mut command = neff_command();
    command.env("TMPDIR", &temp_dir);
    let out = tmp.path().join("out");
    let mut child = piped(command, &["unpack", "-", "-o", s(&out), "-q"]);
    let mut stdin = child.stdin.take().unwrap();
    // The header and half the payload: the spool is being written.
    stdin
        .write_all(&neff[..1024 + (neff.len() - 1024) / 2])
        .unwrap();
    std::thread::sleep(Duration::from_millis(300));
    let named: Vec<_> = std::fs::read_dir(&temp_dir).unwrap().collect();
    child.kill().unwrap();
    child.wait().unwrap();
    assert!(named.is_empty(), "a named spool in TMPDIR: {named:?}");
    assert_eq!(std::fs::read_dir(&temp_dir).unwrap().count(), 0);
}
