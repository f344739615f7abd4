//! The floor for `neff verify DIR`: only read, inflate and/or hash the
//! payloads of every `*.neff` under a folder, on N threads. The bench runs
//! it as a command of its own (`bench --floor DIR [--threads N] [--mode
//! inflate|md5|both|read]`), timed like every other.
//!
//! Each thread takes the next file, reads it whole into a reused buffer and
//! then, by `--mode`: inflates its payload (the bytes after the 1024-byte
//! header) with flate2 + zlib-rs, as the loader does, into a reused 256 KiB
//! buffer that is dropped (`inflate`, the default); hashes the payload with
//! MD5 (`md5`); both (`both`); or nothing (`read`). Prints files/s and the
//! bytes seen. A verifier that must see every tar header cannot beat
//! `inflate`'s files/s on the same threads.

use std::fs;
use std::io::Read;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Instant;

use flate2::read::GzDecoder;
use md5::{Digest, Md5};

/// The NEFF header before the payload.
const HEADER: usize = 1024;

/// What each file gets.
#[derive(Clone, Copy, PartialEq)]
enum Mode {
    Read,
    Inflate,
    Md5,
    Both,
}

/// `--floor`'s arguments (after `--floor`).
pub fn main(mut args: impl Iterator<Item = String>) -> Result<(), Box<dyn std::error::Error>> {
    let (mut dir, mut threads, mut mode) = (None, 2, Mode::Inflate);
    while let Some(arg) = args.next() {
        match arg.as_str() {
            "--threads" => threads = args.next().ok_or("--threads N")?.parse()?,
            "--mode" => {
                mode = match args.next().as_deref() {
                    Some("read") => Mode::Read,
                    Some("inflate") => Mode::Inflate,
                    Some("md5") => Mode::Md5,
                    Some("both") => Mode::Both,
                    _ => return Err("--mode inflate|md5|both|read".into()),
                }
            }
            _ => dir = Some(PathBuf::from(arg)),
        }
    }
    let mut files = Vec::new();
    collect(
        &dir.ok_or("usage: bench --floor DIR [--threads N] [--mode M]")?,
        &mut files,
    )?;
    files.sort();
    let start = Instant::now();
    let next = AtomicUsize::new(0);
    let totals: Vec<(u64, u64)> = std::thread::scope(|s| {
        let workers: Vec<_> = (0..threads)
            .map(|_| s.spawn(|| worker(&files, &next, mode)))
            .collect();
        workers
            .into_iter()
            .map(|w| w.join().unwrap_or_else(|_| Err("worker panicked".into())))
            .collect::<Result<_, String>>()
    })?;
    let secs = start.elapsed().as_secs_f64();
    let (stored, inflated) = totals.iter().fold((0, 0), |(a, b), (c, d)| (a + c, b + d));
    println!(
        "{} files in {secs:.3} s = {:.0} files/s on {threads} threads; {stored} payload bytes, {inflated} inflated",
        files.len(),
        files.len() as f64 / secs
    );
    Ok(())
}

/// Takes files until none is left; returns (payload bytes, inflated bytes).
fn worker(files: &[PathBuf], next: &AtomicUsize, mode: Mode) -> Result<(u64, u64), String> {
    let (mut file_buf, mut out) = (Vec::new(), vec![0u8; 256 << 10]);
    let (mut stored, mut inflated) = (0u64, 0u64);
    while let Some(path) = files.get(next.fetch_add(1, Ordering::Relaxed)) {
        file_buf.clear();
        fs::File::open(path)
            .and_then(|mut f| f.read_to_end(&mut file_buf))
            .map_err(|e| format!("{}: {e}", path.display()))?;
        let payload = file_buf.get(HEADER..).unwrap_or_default();
        stored += payload.len() as u64;
        if matches!(mode, Mode::Md5 | Mode::Both) {
            std::hint::black_box(Md5::digest(payload));
        }
        if matches!(mode, Mode::Inflate | Mode::Both) {
            let mut gz = GzDecoder::new(payload);
            loop {
                match gz.read(&mut out) {
                    Ok(0) => break,
                    Ok(n) => inflated += n as u64,
                    Err(e) => return Err(format!("{}: {e}", path.display())),
                }
            }
        }
    }
    Ok((stored, inflated))
}

/// Every `*.neff` under `dir`.
fn collect(dir: &Path, out: &mut Vec<PathBuf>) -> std::io::Result<()> {
    for entry in fs::read_dir(dir)? {
        let path = entry?.path();
        if path.is_dir() {
            collect(&path, out)?;
        } else if path.extension().is_some_and(|e| e == "neff") {
            out.push(path);
        }
    }
    Ok(())
}
