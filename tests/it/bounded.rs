//! Commands whose own peak RSS is bounded on large or hostile inputs.

use std::fs;
use std::io::Write;
use std::process::Stdio;

use crate::common::*;

/// 800 entries, each named by a GNU long name of 1 MiB (a 700 KiB NEFF),
/// compressed as they are made (the test process never holds the 800 MiB
/// tar, whose pages would count in a forked child's peak).
fn long_named_entries(tail: u8) -> Vec<u8> {
    let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::best());
    let base = b"d/".repeat(((1 << 20) - 8) / 2);
    for i in 0..800u32 {
        let mut name = base.clone();
        name.extend_from_slice(format!("{i:06}").as_bytes());
        name.push(0);
        gz.write_all(&tar_header(
            b"././@LongLink",
            b'L',
            &size_field(name.len() as u64),
        ))
        .unwrap();
        gz.write_all(&name).unwrap();
        gz.write_all(&vec![0u8; name.len().next_multiple_of(512) - name.len()])
            .unwrap();
        gz.write_all(&tar_header(b"x", b'0', &size_field(4)))
            .unwrap();
        let mut data = vec![0u8; 512];
        data[..4].copy_from_slice(&[b'a', b'b', b'c', tail]);
        gz.write_all(&data).unwrap();
    }
    gz.write_all(&[0u8; 1024]).unwrap();
    neff_with_payload(2, &gz.finish().unwrap())
}

#[test]
fn diff_keeps_the_member_map_budget_and_cuts_names_short() {
    let dir = tempfile::tempdir().unwrap();
    let (a, b) = (dir.path().join("a.neff"), dir.path().join("b.neff"));
    std::fs::write(&a, long_named_entries(b'd')).unwrap();
    std::fs::write(&b, long_named_entries(b'e')).unwrap();
    assert!(std::fs::metadata(&a).unwrap().len() < 1 << 20);
    for extra in [&[][..], &["--programs"][..], &["--json"][..]] {
        let mut args = vec!["diff", a.to_str().unwrap(), b.to_str().unwrap()];
        args.extend_from_slice(extra);
        let start = std::time::Instant::now();
        let (code, rss_kib) = neff_peak_rss(&args);
        let took = start.elapsed();
        assert!(code.is_some(), "{args:?}");
        assert!(rss_kib < 256 << 10, "{args:?}: {rss_kib} KiB");
        assert!(took.as_secs() < 10, "{args:?}: {took:?}");
    }
    let r = neff(&["diff", a.to_str().unwrap(), b.to_str().unwrap()]);
    assert!(r.stdout.len() < 1 << 20, "{} bytes printed", r.stdout.len());
    let text = String::from_utf8_lossy(&r.stdout);
    assert!(text.lines().all(|l| l.len() < 1000), "names are cut short");
    assert!(
        text.contains("changed d/d/d/") && text.contains("…(1048574 bytes)"),
        "{}",
        &text[..text.len().min(2000)]
    );
}

/// A NEFF from a pipe is spooled to disk, not memory: a 192 MiB pkg-1 NEFF
/// (raw tar, so the file is that big) on stdin keeps the child's own peak
/// RSS under 64 MiB.
#[cfg(unix)]
#[test]
fn a_large_neff_on_a_pipe_keeps_memory_bounded() {
    // Built by `neff pack` and written in chunks: a big buffer in this
    // process is not what the child reports, but keeps the test light.
    let dir = tempfile::tempdir().unwrap();
    let tree = dir.path().join("tree");
    write_model_tree(&tree);
    let mut weights = fs::File::create(tree.join("weights.bin")).unwrap();
    let chunk = vec![0u8; 1 << 20];
    (0..192).for_each(|_| weights.write_all(&chunk).unwrap());
    drop(weights);
    let path = dir.path().join("big.neff");
    let packed = neff(&["pack", s(&tree), "-o", s(&path), "--pkg-version", "1", "-q"]);
    assert_eq!(
        code(&packed),
        0,
        "{}",
        String::from_utf8_lossy(&packed.stderr)
    );
    let mut command = neff_command();
    let report = report_peak_rss(&mut command);
    #[allow(clippy::zombie_processes)] // reaped by wait_peak_rss below
    let mut child = command
        .args(["verify", "-"])
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .spawn()
        .expect("run neff");
    let mut stdin = child.stdin.take().expect("stdin");
    let writer =
        std::thread::spawn(move || std::io::copy(&mut fs::File::open(path)?, &mut stdin).map(drop));
    let (status, rss_kib) = wait_peak_rss(&child, &report);
    writer.join().expect("writer").expect("write stdin");
    assert_eq!(status, Some(0));
    eprintln!("verify - of a 192 MiB pipe: peak RSS {rss_kib} KiB");
    assert!(rss_kib < 64 * 1024, "peak RSS {rss_kib} KiB");
}
