//! The floor for `neff verify DIR`: only read, inflate and/or hash the
//! payloads of every `*.neff` under a folder, on N threads. The bench runs
//! it as a command of its own (`bench --floor DIR [--threads N] [--mode
//! inflate|md5|both|read]`), timed like every other.
//!
//! Each thread takes the next file, reads it whole into a reused buffer and
//! then, by `--mode`: inflates its payload (the bytes after the 1024-byte
//! header) with flate2 + zlib-rs, as the loader does, into a reused 256 KiB
//! buffer that is dropped (`inflate`, the default); hashes the payload with
//! MD5 (`md5`); both (`both`); both, with the tar inflated into a reused
//! buffer, walked, and every `*.json` member's syntax checked by serde_json
//! without building anything (`manifests`: the runtime parses each manifest
//! it reads, so a verifier cannot skip that either); or nothing (`read`).
//! Prints files/s and the bytes seen. A verifier that must see every tar
//! header cannot beat `inflate`'s files/s on the same threads.

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
    Manifests,
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
                    Some("manifests") => Mode::Manifests,
                    _ => return Err("--mode inflate|md5|both|manifests|read".into()),
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
    let (mut file_buf, mut out, mut tar) = (Vec::new(), vec![0u8; 256 << 10], Vec::new());
    let (mut stored, mut inflated) = (0u64, 0u64);
    while let Some(path) = files.get(next.fetch_add(1, Ordering::Relaxed)) {
        file_buf.clear();
        fs::File::open(path)
            .and_then(|mut f| f.read_to_end(&mut file_buf))
            .map_err(|e| format!("{}: {e}", path.display()))?;
        let payload = file_buf.get(HEADER..).unwrap_or_default();
        stored += payload.len() as u64;
        if matches!(mode, Mode::Md5 | Mode::Both | Mode::Manifests) {
            std::hint::black_box(Md5::digest(payload));
        }
        if mode == Mode::Manifests {
            tar.clear();
            GzDecoder::new(payload)
                .read_to_end(&mut tar)
                .map_err(|e| format!("{}: {e}", path.display()))?;
            inflated += tar.len() as u64;
            check_manifests(&tar).map_err(|e| format!("{}: {e}", path.display()))?;
            continue;
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

/// Walks the (ustar or GNU) tar in `tar` and checks the JSON syntax of every
/// `*.json` member with serde_json, building nothing.
fn check_manifests(tar: &[u8]) -> Result<(), String> {
    let mut at = 0;
    while let Some(header) = tar.get(at..at + 512) {
        if header.iter().all(|&b| b == 0) {
            break;
        }
        let octal = &header[124..136];
        let text = std::str::from_utf8(octal).map_err(|e| e.to_string())?;
        let size = usize::from_str_radix(text.trim_matches(|c| c == '\0' || c == ' '), 8)
            .map_err(|e| format!("size field at {at}: {e}"))?;
        let name = header[..100].split(|&b| b == 0).next().unwrap_or_default();
        let data = tar
            .get(at + 512..at + 512 + size)
            .ok_or("truncated member")?;
        // Regular files only: not pax or GNU long-name records.
        if matches!(header[156], b'0' | 0) && name.ends_with(b".json") {
            serde_json::from_slice::<serde::de::IgnoredAny>(data)
                .map_err(|e| format!("{}: {e}", String::from_utf8_lossy(name)))?;
        }
        at += 512 + size.div_ceil(512) * 512;
    }
    Ok(())
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
