//! Benchmark harness: `neff pack` / `neff verify` against the stock command-line
//! pipelines that do the same work.
//!
//! # What it measures
//!
//! Wall time and peak resident memory of the release `neff` binary against
//! baselines built from standard tools, on a generated test tree:
//!
//! * (a) `neff pack DIR -o OUT --level 1 -q` (pkg 2: gzip tar + MD5) against
//!   `tar | pigz -p2 -1 | tee out | md5sum` and `bsdtar -cz (level 1) | tee out | md5sum`,
//!   and at `--level 6` against pigz; each against two limits: the
//!   `libdeflate-gzip` CLI plus `md5sum`, and libdeflate on 1 MiB chunks plus
//!   MD5 in process (`bench --libdeflate-chunks`, its compress and hash time
//!   only), each over two cores;
//! * (b) `neff pack DIR -o OUT --pkg-version 1 -q` (pkg 1: raw tar + SHA-256)
//!   against `tar | tee out | openssl dgst -sha256; sync out`, and the same with
//!   `--no-fsync` against the baseline without `sync`;
//! * (c) `neff pack` of 1,000, 10,000 and 100,000 small members (64 B to
//!   4 KiB; 1,000,000 with `--million`), with `--no-fsync` (the baselines do
//!   not sync either), against the baselines of (a), and
//!   `neff verify` of the result against those of (d), with members/s and RSS;
//! * (d) `neff verify OUT` (the NEFF from (a)) against `md5sum` and `gzip -t`
//!   of its payload (everything after the 1024-byte header);
//! * (e) `neff pack` of a second tree holding one `--member-mib` MiB member
//!   (default 1024, f32 weights) against the baselines of (a): the peak-RSS
//!   check for a NEFF with a 1 GiB member;
//! * (f) `neff corpus --count 1000`, with and without `--no-fsync`: fuzz-seed
//!   generation speed, in files/s;
//! * (g) `neff verify DIR` over a compile-cache-like folder of 1,000 small
//!   valid NEFFs, and over 1,000 copies of the real compiler NEFFs (11 KB to
//!   1.5 MB), with `--threads 1` and `--threads 2`, in files/s, against a
//!   Python `gzip` + `tarfile` + `hashlib` walk that reads and hashes each
//!   one, and `md5sum` of the files;
//! * (h) `neff verify OUT` (the NEFF of (d)) from Python,
//!   `python3 -c "import neff; neff.verify(p)"`, against the CLI: the Python
//!   package's overhead (skipped with a note unless `python3 -c "import neff"`
//!   works, e.g. after `pip install ./python`);
//! * (i) the per-process fixed cost: 100 calls of `neff verify` on the smallest
//!   real NEFF against 100 `python3 -c` runs that read it with `tarfile`;
//! * (j) `neff pack --level 1|6|9` of a `--levels-mib` MiB tree (default 256)
//!   against `tar | pigz -p2 -1|-6|-9 | tee out | md5sum`, with output sizes;
//! * (k) `neff unpack` of the NEFF from (a) against `tar -xzf` of its payload
//!   plus `md5sum` of it;
//! * (m) the framing recovery, `neff unpack --header-out`, against a plain
//!   `neff unpack`, on the largest real NEFF (1.5 MB) and the model of (l).
//!
//! `--only LETTERS` runs a subset (e.g. `--only bj`).
//!
//! The baselines only stream, hash and write, while `neff pack` also runs
//! every loader gate on the bytes it writes, so a ratio near 1 already means
//! the extra work is cheap.
//!
//! The tree is `--size-mib` MiB (default 1024) in a few large files, half
//! PRNG bytes (incompressible) and half f32 "weights" rounded to bf16 precision
//! (about 2:1 compressible), plus 200 small JSON files in subfolders. It is
//! generated deterministically, and reused when `--dir` already holds it.
//!
//! Every command runs `--runs` times (default 3) under `/usr/bin/time -v`
//! (through `sh -c`), interleaved per workload (ours, baseline 1, baseline 2,
//! ours, ...) so that drift and noise hit all of them alike. The table shows
//! the **median** wall time of those runs, throughput in MB/s (10^6 bytes of
//! input tree, or of NEFF payload for (d), per second), the ratio
//! baseline time / our time (> 1 means `neff` is faster) and the largest peak
//! RSS seen. For a pipeline, `time` reports the peak RSS of its largest single
//! process, not the sum over the pipeline.
//!
//! # Running it
//!
//! ```text
//! cargo bench --bench bench -- [--size-mib N] [--runs N] [--dir PATH] [--keep]
//! ```
//!
//! Cargo builds the `neff` binary it measures in the same (optimised)
//! profile. Baselines
//! whose tool (`pigz`, `bsdtar`, `openssl`) is missing are skipped with a note.
//! `--keep` keeps the temporary directory (tree and NEFFs) and prints its path.

use std::env;
use std::fmt::Write as _;
use std::fs::{self, File};
use std::io::{self, Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode, Stdio};
use std::time::{Duration, Instant};

use neff::schema::manifest::Dtype;
use neff::smith::corpus::Mix;
use neff::writer::builder::{Tensor, Weight};
use neff::writer::NeffBuilder;

#[path = "bench/floor.rs"]
mod floor;

type Result<T> = std::result::Result<T, Box<dyn std::error::Error>>;

/// Size of the NEFF header; the payload starts right after it.
const HEADER_SIZE: u64 = 1024;
/// Seed of the tree generator; changing it changes every generated byte.
const SEED: u64 = 0x5EED_4E45_4646_0001;
/// Number of small JSON files in the tree.
const JSON_FILES: usize = 200;
/// Number of subfolders the JSON files are spread over.
const JSON_FOLDERS: usize = 10;
/// Large files per half (random / weights).
const LARGE_FILES_PER_KIND: u64 = 1;
/// Name of the marker file that records which tree a directory holds.
const MARKER: &str = "BENCH_TREE.json";
/// Bump when the generator changes, so stale trees are regenerated.
const GENERATOR_VERSION: u64 = 3;

fn main() -> ExitCode {
    let mut args = env::args().skip(1).peekable();
    // The bench runs these modes of itself as timed commands: the same code
    // the floors stand for, not a stand-in tool.
    let result = match args.peek().map(String::as_str) {
        Some("--floor") => floor::main(args.skip(1)),
        Some("--sha256") => sha256_file(args.nth(1)),
        Some("--libdeflate-chunks") => libdeflate_chunks(args.nth(1), args.next()),
        _ => run(),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("bench: error: {e}");
            ExitCode::FAILURE
        }
    }
}

/// The whole benchmark: options, tree, binary, workloads, report.
fn run() -> Result<()> {
    let opts = Options::parse(env::args().skip(1))?;
    check_required_tools()?;

    let work = tempfile::Builder::new().prefix("neff-bench-").tempdir()?;
    let tree = opts.dir.clone().unwrap_or_else(|| work.path().join("tree"));
    let tree_bytes = ensure_tree(&tree, opts.size_mib)?;
    warm_cache(&tree)?;

    let neff = neff_binary()?;
    eprintln!("bench: using {}", neff.display());

    let out_dir = work.path().join("out");
    fs::create_dir_all(&out_dir)?;
    let neff_a = out_dir.join("a.neff");
    let neff_b = out_dir.join("b.neff");
    let base_out = out_dir.join("baseline.out");

    let mut results = Vec::new();
    let mut notes = Vec::new();
    let mut lines = Vec::new();
    let mut limits = Vec::new();
    // Runs `w` in every regime; returns the measurements of the last.
    let mut measure = |w: &Workload, results: &mut Vec<Measured>| -> Result<Vec<Measured>> {
        let mut measured = Vec::new();
        for &regime in &opts.regimes {
            measured = run_workload(w, opts.runs, regime)?;
            results.extend(measured.iter().cloned());
            limits.extend(w.limit_rows(&measured));
        }
        notes.extend(w.notes.iter().cloned());
        Ok(measured)
    };
    // The tree as one tar: what the limits of (a) and (b) are timed on.
    let tree_tar = work.path().join("tree.tar");
    if opts.wants('a') || opts.wants('b') {
        let status = Command::new("tar")
            .arg("-cf")
            .arg(&tree_tar)
            .arg("-C")
            .arg(&tree)
            .arg(".")
            .status()?;
        if !status.success() {
            return Err(format!("tar of {} failed: {status}", tree.display()).into());
        }
    }
    let bench = env::current_exe()?;
    if opts.wants('a') || opts.wants('d') || opts.wants('h') || opts.wants('k') {
        let a = pack_gzip_workload(
            "(a) pack pkg 2",
            &neff,
            &tree,
            &neff_a,
            &base_out,
            1,
            tree_bytes,
        );
        let a = if opts.wants('a') {
            two_core_deflate_limit(a, &bench, &tree_tar, &out_dir.join("limit.gz"), 1)
        } else {
            a
        };
        measure(&a, &mut results)?;
    }
    if opts.wants('a') {
        let neff_a6 = out_dir.join("a6.neff");
        let a6 = pack_gzip_workload(
            "(a) pack pkg 2, level 6",
            &neff,
            &tree,
            &neff_a6,
            &base_out,
            6,
            tree_bytes,
        );
        let a6 = two_core_deflate_limit(a6, &bench, &tree_tar, &out_dir.join("limit.gz"), 6);
        measure(&a6, &mut results)?;
        lines.push(format!(
            "(a) output: pkg 2 level 1 payload {} bytes, level 6 {} bytes",
            payload_len(&neff_a)?,
            payload_len(&neff_a6)?
        ));
        fs::remove_file(&neff_a6)?;
    }
    if opts.wants('b') {
        for fsync in [true, false] {
            let b = pack_raw_workload(&neff, &tree, &neff_b, &base_out, fsync, tree_bytes);
            let b = disk_limit(b, &bench, &tree_tar, &out_dir.join("limit.tar"), fsync);
            measure(&b, &mut results)?;
        }
    }
    if opts.wants('j') {
        let levels_tree = work.path().join("levels");
        let levels_bytes = ensure_tree(&levels_tree, opts.levels_mib)?;
        warm_cache(&levels_tree)?;
        let ours_out = out_dir.join("levels.neff");
        for level in [1, 6, 9] {
            let name = format!("(j) level {level}, {} MiB", opts.levels_mib);
            let j = pack_gzip_workload(
                &name,
                &neff,
                &levels_tree,
                &ours_out,
                &base_out,
                level,
                levels_bytes,
            );
            measure(&j, &mut results)?;
            let ours = payload_len(&ours_out)?;
            let pigz = fs::metadata(&base_out).map(|m| m.len()).ok();
            lines.push(match pigz {
                Some(pigz) => format!(
                    "(j) level {level}: our payload {ours} bytes, pigz -p2 -{level} {pigz} bytes ({:+.2}%)",
                    (ours as f64 / pigz as f64 - 1.0) * 100.0
                ),
                None => format!("(j) level {level}: our payload {ours} bytes"),
            });
        }
    }
    let payload_bytes = fs::metadata(&neff_a).map_or(0, |m| m.len().saturating_sub(HEADER_SIZE));
    if opts.wants('d') {
        measure(
            &verify_workload(&neff, &neff_a, payload_bytes),
            &mut results,
        )?;
    }
    if opts.wants('k') {
        let k = unpack_workload(&neff, &neff_a, &out_dir.join("unpacked"), tree_bytes);
        measure(&k, &mut results)?;
    }
    if opts.wants('h') {
        let h = python_verify_workload(&neff, &neff_a, payload_bytes);
        let from_python = measure(&h, &mut results)?;
        if let Some(py) = from_python.iter().find(|m| !m.ours) {
            lines.push(format!(
                "(h) `neff.verify(p)` from Python {:.2} s vs `neff verify p` {:.2} s: {:+.1}% (goal <= +5%)",
                py.median_seconds,
                py.our_seconds,
                (py.median_seconds / py.our_seconds.max(1e-9) - 1.0) * 100.0
            ));
        }
        let largest = largest_file(&tree)?;
        let read = python_read_workload(
            &neff,
            &neff_a,
            &work.path().join("read.py"),
            &largest,
            payload_bytes,
        )?;
        for m in measure(&read, &mut results)?.iter().filter(|m| !m.ours) {
            lines.push(format!(
                "(h) `{}` {:.3} s vs `neff cat` of the largest member {:.3} s: {:.2}x (goal <= 1.2x)",
                m.label,
                m.median_seconds,
                m.our_seconds,
                m.median_seconds / m.our_seconds.max(1e-9)
            ));
        }
    }
    if opts.wants('c') {
        let mut counts = vec![1_000, 10_000, 100_000];
        if opts.million {
            counts.push(1_000_000);
        }
        for count in counts {
            let small = work.path().join(format!("small-{count}"));
            let small_bytes = ensure_small_members_tree(&small, count)?;
            warm_cache(&small)?;
            let neff_c = out_dir.join(format!("c-{count}.neff"));
            let name = format!("(c) pack {count} small members");
            // Neither side syncs, like the baselines: on this shared disk one fsync
            // can add 40 ms to a 40 ms run.
            let c = pack_gzip_workload(&name, &neff, &small, &neff_c, &base_out, 1, small_bytes)
                .ours_flag("--no-fsync");
            let packed = measure(&c, &mut results)?;
            let name = format!("(c) verify {count} small members");
            let v = verify_workload_named(&name, &neff, &neff_c, payload_len(&neff_c)?);
            measure(&v, &mut results)?;
            if let Some(ours) = packed.iter().find(|m| m.ours) {
                lines.push(format!(
                    "(c) {count} members packed in {:.2} s = {:.0} members/s, peak RSS {:.1} MiB",
                    ours.median_seconds,
                    ours.per_second(count as u64),
                    ours.peak_rss_kib as f64 / 1024.0
                ));
            }
            fs::remove_dir_all(&small)?;
        }
    }
    if opts.wants('e') {
        let single = work.path().join("single");
        let single_bytes = ensure_single_member_tree(&single, opts.member_mib)?;
        let e = pack_gzip_workload(
            "(e) pack one large member",
            &neff,
            &single,
            &out_dir.join("e.neff"),
            &base_out,
            1,
            single_bytes,
        );
        measure(&e, &mut results)?;
        fs::remove_dir_all(&single)?;
    }
    if opts.wants('f') {
        const CORPUS_FILES: u64 = 1000;
        let f = corpus_workload(&neff, &work.path().join("corpus"), CORPUS_FILES);
        for m in measure(&f, &mut results)? {
            lines.push(format!(
                "(f) `{}`: {CORPUS_FILES} seeds (25% mutated, every one checked by all gates on every targeted arch) in {:.2} s = {:.0} files/s",
                m.label,
                m.median_seconds,
                m.per_second(CORPUS_FILES)
            ));
        }
    }
    if opts.wants('n') {
        let cache = work.path().join("cache-10k");
        let bytes = ensure_cache_tree_of(&cache, BIG_CACHE_ENTRIES)?;
        let (bin, dir) = (quote(&neff), quote(&cache));
        let w = Workload::new(
            &format!("(n) cache verify, {BIG_CACHE_ENTRIES} entries"),
            bytes,
            ours(
                "neff cache verify ROOT",
                format!("{bin} cache verify {dir} --threads 2 >/dev/null"),
            ),
        )
        .baseline(
            "xargs",
            "find ROOT -name model.neff | xargs neff verify",
            format!("find {dir} -name model.neff -print0 | xargs -0 {bin} verify --threads 2 -q >/dev/null"),
        );
        for m in measure(&w, &mut results)? {
            lines.push(format!(
                "{}: `{}` {:.0} entries/s",
                w.name,
                m.label,
                m.per_second(BIG_CACHE_ENTRIES as u64)
            ));
        }
    }
    if opts.wants('g') {
        let cache = work.path().join("cache");
        let cache_bytes = ensure_cache_tree(&cache)?;
        let script = work.path().join("walk.py");
        let g = verify_dir_workload("(g) verify DIR, small", &neff, &cache, &script, cache_bytes)?;
        let real = work.path().join("real-cache");
        match ensure_real_cache_tree(&real)? {
            Some(real_bytes) => {
                let g2 = verify_dir_workload(
                    "(g) verify DIR, real-sized",
                    &neff,
                    &real,
                    &script,
                    real_bytes,
                )?
                .limit_part(
                    "sh",
                    "floor: inflate + MD5 of each payload, 2 threads",
                    format!(
                        "{} --floor {} --threads 2 --mode both >/dev/null",
                        quote(&bench),
                        quote(&real)
                    ),
                )
                .limit("inflate + MD5 floor", Combine::Slowest)
                .baseline(
                    "sh",
                    MANIFEST_FLOOR_LABEL,
                    format!(
                        "{} --floor {} --threads 2 --mode manifests >/dev/null",
                        quote(&bench),
                        quote(&real)
                    ),
                );
                for (w, dir_bytes) in [(g, cache_bytes), (g2, real_bytes)] {
                    let measured = measure(&w, &mut results)?;
                    // Every regime's rows (`measured` holds the last one's).
                    let name = w.name.as_str();
                    let rows = |label: &'static str| {
                        results
                            .iter()
                            .filter(move |m| m.workload == name && m.label == label)
                    };
                    for floor in rows(MANIFEST_FLOOR_LABEL) {
                        lines.push(format!(
                            "{} ({}): the floor with every manifest's JSON syntax checked too: {:.3} s against `neff verify DIR` {:.3} s: limit / ours {:.2}",
                            w.name,
                            floor.regime.name(),
                            floor.median_seconds,
                            floor.our_seconds,
                            floor.median_seconds / floor.our_seconds.max(1e-9)
                        ));
                    }
                    for py in rows(VERIFY_MANY_LABEL) {
                        lines.push(format!(
                            "{} ({}): `neff.verify_many` {:.3} s vs `neff verify DIR` {:.3} s: {:+.1}% (goal <= +10%)",
                            w.name,
                            py.regime.name(),
                            py.median_seconds,
                            py.our_seconds,
                            (py.median_seconds / py.our_seconds.max(1e-9) - 1.0) * 100.0
                        ));
                    }
                    for m in measured {
                        lines.push(format!(
                            "{}: `{}` {:.0} files/s ({CACHE_NEFFS} NEFFs, {dir_bytes} bytes)",
                            w.name,
                            m.label,
                            m.per_second(CACHE_NEFFS as u64)
                        ));
                    }
                }
            }
            None => {
                measure(&g, &mut results)?;
                lines.push(format!(
                    "(g) real-sized: skipped: {} not found",
                    real_neff_dir().display()
                ));
            }
        }
    }
    if opts.wants('l') {
        let model = work.path().join("model.neff");
        let model_bytes = ensure_model(&work.path().join("model-src"), &model, opts.size_mib)?;
        let (lift, build) =
            lift_build_workloads(&neff, &model, &work.path().join("lift"), model_bytes);
        for w in [lift, build] {
            for m in measure(&w, &mut results)?.iter().filter(|m| !m.ours) {
                lines.push(format!(
                    "{}: `{}` {:.3} s vs ours {:.3} s: ours at {:.2} of its speed (goal >= 0.9)",
                    w.name,
                    m.label,
                    m.median_seconds,
                    m.our_seconds,
                    m.median_seconds / m.our_seconds.max(1e-9)
                ));
            }
        }
    }
    if opts.wants('m') {
        let model = work.path().join("model.neff");
        let model_bytes = ensure_model(&work.path().join("model-src"), &model, opts.size_mib)?;
        let mut inputs = vec![(model, model_bytes)];
        if let Some(largest) = largest_real_neff()? {
            let bytes = fs::metadata(&largest)?.len();
            inputs.insert(0, (largest, bytes));
        }
        for (input, bytes) in inputs {
            let w = recovery_workload(&neff, &input, &work.path().join("recover"), bytes);
            for m in measure(&w, &mut results)?.iter().filter(|m| !m.ours) {
                lines.push(format!(
                    "{}: `neff unpack --header-out` {:.3} s = {:.2} x `{}` {:.3} s",
                    w.name,
                    m.our_seconds,
                    m.our_seconds / m.median_seconds.max(1e-9),
                    m.label,
                    m.median_seconds
                ));
            }
        }
    }
    if opts.wants('i') {
        if let Some(small) = smallest_real_neff()? {
            let i = fixed_cost_workload(&neff, &small);
            for m in measure(&i, &mut results)? {
                lines.push(format!(
                    "(i) `{}` on {}: {:.1} ms per call ({FIXED_COST_CALLS} calls)",
                    m.label,
                    small
                        .file_name()
                        .map_or(String::new(), |n| n.to_string_lossy().into_owned()),
                    m.median_seconds * 1000.0 / FIXED_COST_CALLS as f64
                ));
            }
        } else {
            lines.push(format!(
                "(i) skipped: no NEFF in {}",
                real_neff_dir().display()
            ));
        }
    }

    println!();
    print_machine();
    println!(
        "- tree: {}{} ({} bytes, {} large files + {JSON_FILES} JSON files)",
        tree.display(),
        if opts.dir.is_none() && !opts.keep {
            " (temporary)"
        } else {
            ""
        },
        tree_bytes,
        2 * LARGE_FILES_PER_KIND
    );
    for (label, path) in [("pkg 2 (a)", &neff_a), ("pkg 1 (b)", &neff_b)] {
        if let Ok(m) = fs::metadata(path) {
            println!("- NEFF size: {label} {} bytes", m.len());
        }
    }
    println!(
        "- runs per command: {} (interleaved; medians shown)",
        opts.runs
    );
    println!();
    print_table(&results);
    println!();
    print_limits(&limits);
    println!();
    for line in lines {
        println!("- {line}");
    }
    for note in notes {
        println!("\nNote: {note}");
    }

    if opts.keep {
        let kept = work.keep();
        println!("\nKept {}", kept.display());
    }
    Ok(())
}

/// `--sha256 FILE`: SHA-256 of a file with the `sha2` crate neff uses (SHA-NI
/// when the CPU has it), the hash pkg 1 cannot avoid; prints the digest.
fn sha256_file(path: Option<String>) -> Result<()> {
    use sha2::{Digest, Sha256};
    let path = path.ok_or("usage: bench --sha256 FILE")?;
    let mut file = File::open(&path)?;
    let (mut hasher, mut buf) = (Sha256::new(), vec![0u8; 1 << 20]);
    loop {
        match file.read(&mut buf)? {
            0 => break,
            n => hasher.update(&buf[..n]),
        }
    }
    println!("{:x}  {path}", hasher.finalize());
    Ok(())
}

/// What a self-timed command prints before its own seconds.
const SELF_TIMED: &str = "bench-seconds ";

/// `--libdeflate-chunks FILE LEVEL`: libdeflate at `LEVEL` on the file's 1 MiB
/// chunks, in process, read into one reused buffer and compressed into
/// another, then MD5 (md-5, as neff) of each compressed chunk; prints the
/// time of the compression and the MD5 alone (the reads left out): the
/// deflate and hash work of pkg 2, with none of a CLI's memory costs.
fn libdeflate_chunks(path: Option<String>, level: Option<String>) -> Result<()> {
    use md5::{Digest, Md5};
    let usage = "usage: bench --libdeflate-chunks FILE LEVEL";
    let (path, level) = (path.ok_or(usage)?, level.ok_or(usage)?);
    let level = libdeflater::CompressionLvl::new(level.parse()?)
        .map_err(|_| format!("libdeflate has no level {level}"))?;
    let mut compressor = libdeflater::Compressor::new(level);
    let mut file = File::open(&path)?;
    let mut input = vec![0u8; 1 << 20];
    let mut output = vec![0u8; compressor.deflate_compress_bound(input.len())];
    let (mut md5, mut busy, mut out_bytes) = (Md5::new(), Duration::ZERO, 0u64);
    loop {
        let mut filled = 0;
        while filled < input.len() {
            match file.read(&mut input[filled..])? {
                0 => break,
                n => filled += n,
            }
        }
        if filled == 0 {
            break;
        }
        let started = Instant::now();
        let len = compressor
            .deflate_compress(&input[..filled], &mut output)
            .map_err(|e| format!("libdeflate: {e:?}"))?;
        md5.update(&output[..len]);
        busy += started.elapsed();
        out_bytes += len as u64;
    }
    println!("{out_bytes} bytes, md5 {:x}", md5.finalize());
    println!("{SELF_TIMED}{}", busy.as_secs_f64());
    Ok(())
}

/// Bytes of a NEFF after its header.
fn payload_len(path: &Path) -> Result<u64> {
    Ok(fs::metadata(path)?.len().saturating_sub(HEADER_SIZE))
}

// ---------------------------------------------------------------------------
// Options

/// Command-line options.
#[derive(Debug)]
struct Options {
    /// Total size of the large files, in MiB.
    size_mib: u64,
    /// Runs per command.
    runs: usize,
    /// Where the tree lives (reused if it already holds it); default: a temp dir.
    dir: Option<PathBuf>,
    /// Keep the temp dir after the run.
    keep: bool,
    /// Size of the single member of workload (e), MiB.
    member_mib: u64,
    /// Size of the tree of workload (j) (levels 1, 6 and 9), MiB.
    levels_mib: u64,
    /// Also run (c) at 1,000,000 members.
    million: bool,
    /// The workload letters to run (all when `None`).
    only: Option<String>,
    /// The disk regimes each workload runs in.
    regimes: Vec<Regime>,
}

/// Whether the disk is let to drain before each timed command.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Regime {
    /// `sync` (untimed) before each command: every command starts on an idle
    /// disk.
    Idle,
    /// No `sync` between commands: each one starts while the writeback of
    /// the ones before it is still running, as in a compile pipeline that
    /// writes many outputs.
    Sustained,
}

impl Regime {
    fn name(self) -> &'static str {
        match self {
            Regime::Idle => "idle",
            Regime::Sustained => "sustained",
        }
    }
}

impl Options {
    const USAGE: &'static str =
        "usage: bench [--size-mib N] [--member-mib N] [--levels-mib N] [--runs N] [--dir PATH] [--keep] [--million] [--only LETTERS] [--regime idle|sustained|both]\n  (defaults: 1024 MiB tree, 1024 MiB member, 256 MiB levels tree, 3 runs, every workload a-k, both regimes; --only bj runs (b) and (j))";

    /// Parses the arguments after the program name.
    fn parse(mut args: impl Iterator<Item = String>) -> Result<Self> {
        let mut opts = Options {
            size_mib: 1024,
            runs: 3,
            dir: None,
            keep: false,
            member_mib: 1024,
            levels_mib: 256,
            million: false,
            only: None,
            regimes: vec![Regime::Idle, Regime::Sustained],
        };
        while let Some(arg) = args.next() {
            let mut value = |name: &str| {
                args.next()
                    .ok_or_else(|| format!("{name} needs a value\n{}", Self::USAGE))
            };
            match arg.as_str() {
                // What `cargo bench` adds for a harness-less target.
                "--bench" => {}
                "--size-mib" => opts.size_mib = parse_positive(&value("--size-mib")?)?,
                "--member-mib" => opts.member_mib = parse_positive(&value("--member-mib")?)?,
                "--levels-mib" => opts.levels_mib = parse_positive(&value("--levels-mib")?)?,
                "--runs" => opts.runs = parse_positive(&value("--runs")?)? as usize,
                "--dir" => opts.dir = Some(PathBuf::from(value("--dir")?)),
                "--keep" => opts.keep = true,
                "--million" => opts.million = true,
                "--only" => opts.only = Some(value("--only")?),
                "--regime" => {
                    opts.regimes = match value("--regime")?.as_str() {
                        "idle" => vec![Regime::Idle],
                        "sustained" => vec![Regime::Sustained],
                        "both" => vec![Regime::Idle, Regime::Sustained],
                        other => {
                            return Err(format!(
                                "--regime {other:?}: use idle, sustained or both\n{}",
                                Self::USAGE
                            )
                            .into())
                        }
                    }
                }
                "-h" | "--help" => {
                    println!("{}", Self::USAGE);
                    std::process::exit(0);
                }
                other => return Err(format!("unknown argument {other:?}\n{}", Self::USAGE).into()),
            }
        }
        Ok(opts)
    }

    /// Whether workload `letter` runs.
    fn wants(&self, letter: char) -> bool {
        self.only.as_ref().is_none_or(|only| only.contains(letter))
    }
}

/// Parses an integer that must be at least 1.
fn parse_positive(text: &str) -> Result<u64> {
    match text.parse::<u64>() {
        Ok(n) if n > 0 => Ok(n),
        _ => Err(format!("expected a positive integer, got {text:?}").into()),
    }
}

// ---------------------------------------------------------------------------
// Test tree

/// One large file of the tree.
struct LargeFile {
    /// Path relative to the tree root.
    rel: String,
    size: u64,
    kind: DataKind,
}

/// What a large file holds.
#[derive(Clone, Copy, PartialEq, Eq)]
enum DataKind {
    /// PRNG bytes: incompressible.
    Random,
    /// Little-endian f32 values, roughly normal, rounded to bf16 precision.
    Weights,
}

/// The large files for a tree of `size_mib` MiB: half random, half weights.
fn large_files(size_mib: u64) -> Vec<LargeFile> {
    let total = size_mib << 20;
    let half = total / 2;
    let mut files = Vec::new();
    for (kind, name, budget) in [
        (DataKind::Random, "random", half),
        (DataKind::Weights, "weights", total - half),
    ] {
        // Split evenly, 4-byte aligned so weights stay whole f32 values.
        let base = budget / LARGE_FILES_PER_KIND / 4 * 4;
        for i in 0..LARGE_FILES_PER_KIND {
            let size = if i + 1 == LARGE_FILES_PER_KIND {
                budget - base * (LARGE_FILES_PER_KIND - 1)
            } else {
                base
            };
            files.push(LargeFile {
                rel: format!("data/{name}-{i}.bin"),
                size,
                kind,
            });
        }
    }
    files
}

/// The marker contents that identify a complete tree of `size_mib` MiB.
fn marker_text(size_mib: u64) -> String {
    serde_json::json!({
        "generator_version": GENERATOR_VERSION,
        "seed": SEED,
        "size_mib": size_mib,
        "json_files": JSON_FILES,
    })
    .to_string()
}

/// Makes sure `root` holds the test tree, generating it unless the marker and
/// every large file's size say it is already there. Returns the tree's total
/// file bytes.
fn ensure_tree(root: &Path, size_mib: u64) -> Result<u64> {
    let marker = root.join(MARKER);
    let expected = marker_text(size_mib);
    let files = large_files(size_mib);
    let reusable = fs::read_to_string(&marker).is_ok_and(|t| t == expected)
        && files.iter().all(|f| {
            fs::metadata(root.join(&f.rel)).is_ok_and(|m| m.is_file() && m.len() == f.size)
        });
    if reusable {
        eprintln!("bench: reusing the tree in {}", root.display());
    } else {
        eprintln!(
            "bench: generating a {size_mib} MiB tree in {} ...",
            root.display()
        );
        let started = Instant::now();
        let _ = fs::remove_file(&marker);
        fs::create_dir_all(root.join("data"))?;
        let mut rng = Mix(SEED);
        for f in &files {
            write_large_file(&root.join(&f.rel), f.size, f.kind, &mut rng)?;
        }
        write_json_files(root, &mut rng)?;
        copy_model(root)?;
        // Written last: its presence means the tree is complete.
        fs::write(&marker, &expected)?;
        eprintln!(
            "bench: generated in {:.1} s",
            started.elapsed().as_secs_f64()
        );
    }
    tree_size(root)
}

/// Writes a tree holding one member of `member_mib` MiB of weights (plus
/// nothing else), unless it is already there. Returns its size in bytes.
fn ensure_single_member_tree(root: &Path, member_mib: u64) -> Result<u64> {
    let path = root.join("weights.bin");
    let size = member_mib << 20;
    if !fs::metadata(&path).is_ok_and(|m| m.len() == size) {
        eprintln!(
            "bench: generating a single {member_mib} MiB member in {} ...",
            root.display()
        );
        fs::create_dir_all(root)?;
        write_large_file(&path, size, DataKind::Weights, &mut Mix(SEED ^ 1))?;
        copy_model(root)?;
    }
    Ok(size)
}

/// Copies the example model (`examples/allreduce`) into `root`, so every
/// benchmark tree is a complete model that passes every loader gate.
fn copy_model(root: &Path) -> Result<()> {
    let model = Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/allreduce");
    let mut stack = vec![model.clone()];
    while let Some(dir) = stack.pop() {
        for item in fs::read_dir(&dir)? {
            let path = item?.path();
            let rel = path.strip_prefix(&model).map_err(|e| e.to_string())?;
            if path.is_dir() {
                fs::create_dir_all(root.join(rel))?;
                stack.push(path);
            } else {
                fs::copy(&path, root.join(rel))?;
            }
        }
    }
    Ok(())
}

/// Writes a tree of `count` small files (64 B to 4 KiB, f32 weights) in
/// folders of at most 1,000, plus the example model, unless present. Returns
/// its size in bytes.
fn ensure_small_members_tree(root: &Path, count: usize) -> Result<u64> {
    let marker = root.join(MARKER);
    if !marker.exists() {
        eprintln!(
            "bench: generating {count} small members in {} ...",
            root.display()
        );
        let folders = count.div_ceil(1000).max(100);
        let mut rng = Mix(SEED ^ 2);
        let mut buf = vec![0u8; 4096];
        for i in 0..count {
            let dir = root.join(format!("m{:04}", i % folders));
            if i < folders {
                fs::create_dir_all(&dir)?;
            }
            let len = 64 + (rng.next_u64() % 4032) as usize;
            fill_weights(&mut buf[..len / 4 * 4], &mut rng);
            fs::write(dir.join(format!("member-{i:07}.bin")), &buf[..len])?;
        }
        copy_model(root)?;
        fs::write(&marker, "small members")?;
    }
    tree_size(root)
}

/// NEFFs in the compile-cache folder of workload (g).
const CACHE_NEFFS: usize = 1000;

/// Writes a folder shaped like a Neuron compile cache, unless present:
/// [`CACHE_NEFFS`] small valid NEFFs (`neuronxcc-2.<k>/MODULE_<i>/model.neff`,
/// each of its own input shape, beside a `compile_flags.json`). Returns the
/// NEFFs' total size in bytes.
fn ensure_cache_tree(root: &Path) -> Result<u64> {
    ensure_cache_tree_of(root, CACHE_NEFFS)
}

/// Entries of (n)'s compile cache.
const BIG_CACHE_ENTRIES: usize = 10_000;

/// A libneuronxla compile cache of `count` entries, each a small builder
/// NEFF with its flags and `model.done`; returns the NEFFs' total size.
fn ensure_cache_tree_of(root: &Path, count: usize) -> Result<u64> {
    let marker = root.join(MARKER);
    if !marker.exists() {
        eprintln!("bench: generating {count} NEFFs in {} ...", root.display());
        for i in 0..count {
            let dir = root.join(format!("neuronxcc-2.{}/MODULE_{i:05}", i % 10));
            fs::create_dir_all(&dir)?;
            fs::write(dir.join("compile_flags.json"), "[\"--target=trn1\"]")?;
            fs::write(dir.join("model.done"), "")?;
            NeffBuilder::new()
                .name(format!("module-{i}"))
                .subgraph("sg00", |sg| {
                    sg.input("x", Tensor::new(Dtype::Float32, [1 + i as u64]))
                        .output("y", Tensor::new(Dtype::Float32, [4]))
                })
                .write_to_path(dir.join("model.neff"))?;
        }
        fs::write(&marker, "compile cache")?;
    }
    let mut total = 0;
    for entry in fs::read_dir(root)? {
        for module in fs::read_dir(entry?.path()).into_iter().flatten() {
            total += fs::metadata(module?.path().join("model.neff")).map_or(0, |m| m.len());
        }
    }
    Ok(total)
}

/// Weights per model of (l).
const MODEL_WEIGHTS: u64 = 8;

/// (l)'s model: one subgraph with [`MODEL_WEIGHTS`] raw bf16-like weights
/// of `size_mib` MiB in all, built with `NeffBuilder` (pkg 2, level 1) into
/// `model`; returns its payload size.
fn ensure_model(src: &Path, model: &Path, size_mib: u64) -> Result<u64> {
    fs::create_dir_all(src)?;
    let each = (size_mib << 20) / MODEL_WEIGHTS;
    let mut rng = Mix(SEED ^ 3);
    let mut paths = Vec::new();
    for i in 0..MODEL_WEIGHTS {
        let path = src.join(format!("w{i}.bin"));
        write_large_file(&path, each, DataKind::Weights, &mut rng)?;
        paths.push(path);
    }
    eprintln!(
        "bench: building a {size_mib} MiB model in {} ...",
        model.display()
    );
    NeffBuilder::new()
        .name("bench-model")
        .subgraph("sg00", |mut sg| {
            sg = sg
                .input("x", Tensor::new(Dtype::Float32, [1024]))
                .output("y", Tensor::new(Dtype::Float32, [1024]));
            for (i, path) in paths.iter().enumerate() {
                sg = sg.weight(format!("w{i}"), Weight::raw(path.clone()));
            }
            sg
        })
        .write_to_path(model)?;
    payload_len(model)
}

/// (l) lift and build of a model against plain unpack and pack of the same
/// bytes: `neff unpack --spec` against `neff unpack`, and `neff build` of the
/// lifted spec against `neff pack` of the unpacked tree (goal: ours at 0.9 of
/// their speed or better).
fn lift_build_workloads(neff: &Path, model: &Path, dir: &Path, bytes: u64) -> (Workload, Workload) {
    let q = |p: PathBuf| quote(&p);
    let (lifted, plain, spec) = (
        q(dir.join("lifted")),
        q(dir.join("plain")),
        q(dir.join("spec.json")),
    );
    let (built, packed) = (q(dir.join("built.neff")), q(dir.join("packed.neff")));
    let (neff, model) = (quote(neff), quote(model));
    let lift = Workload::new(
        "(l) lift a model",
        bytes,
        ours(
            "neff unpack --spec",
            format!("{neff} unpack {model} -o {lifted} --spec {spec} --force -q"),
        ),
    );
    let mut lift = lift;
    lift.commands.push(theirs(
        "neff unpack",
        format!("{neff} unpack {model} -o {plain} --force -q"),
    ));
    let mut build = Workload::new(
        "(l) build the lifted model",
        bytes,
        ours(
            "neff build SPEC",
            format!("{neff} build {spec} -o {built} -q"),
        ),
    );
    build.commands.push(theirs(
        "neff pack DIR (the unpacked tree)",
        format!("{neff} pack {plain} -o {packed} -q"),
    ));
    (lift, build)
}

/// (m) the framing recovery (`neff unpack --header-out`: the tar and gzip
/// headers recorded on the unpack's walk, then the deflate engine found by
/// re-deflating the first 16 MiB with each candidate until one differs)
/// against a plain `neff unpack` of the same NEFF.
fn recovery_workload(neff: &Path, input: &Path, dir: &Path, bytes: u64) -> Workload {
    let q = |p: PathBuf| quote(&p);
    let (recovered, plain, header) = (
        q(dir.join("recovered")),
        q(dir.join("plain")),
        q(dir.join("header.json")),
    );
    let name = input
        .file_name()
        .map_or(String::new(), |n| n.to_string_lossy().into_owned());
    let (neff, input) = (quote(neff), quote(input));
    let mut w = Workload::new(
        &format!("(m) recover the framing of {name}"),
        bytes,
        ours(
            "neff unpack --header-out",
            format!("{neff} unpack {input} -o {recovered} --header-out {header} --force -q"),
        ),
    );
    w.commands.push(theirs(
        "neff unpack",
        format!("{neff} unpack {input} -o {plain} --force -q"),
    ));
    w
}

/// The largest real compiler NEFF, when the folder is there.
fn largest_real_neff() -> Result<Option<PathBuf>> {
    let mut largest = None;
    for path in real_neffs()? {
        let len = fs::metadata(&path)?.len();
        if largest.as_ref().is_none_or(|(l, _)| len > *l) {
            largest = Some((len, path));
        }
    }
    Ok(largest.map(|(_, p)| p))
}

/// The real compiler NEFFs (`../shared/real-neffs`, 11 KB to 1.5 MB).
fn real_neff_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../shared/real-neffs")
}

/// The real NEFFs, sorted by name; empty when the folder is missing.
fn real_neffs() -> Result<Vec<PathBuf>> {
    let Ok(entries) = fs::read_dir(real_neff_dir()) else {
        return Ok(Vec::new());
    };
    let mut found = Vec::new();
    for entry in entries {
        let path = entry?.path();
        if path.extension().is_some_and(|e| e == "neff") {
            found.push(path);
        }
    }
    found.sort();
    Ok(found)
}

/// The smallest real NEFF, for (i).
fn smallest_real_neff() -> Result<Option<PathBuf>> {
    let mut all = Vec::new();
    for path in real_neffs()? {
        all.push((fs::metadata(&path)?.len(), path));
    }
    Ok(all.into_iter().min().map(|(_, p)| p))
}

/// A compile-cache-like folder of [`CACHE_NEFFS`] real-sized NEFFs: copies
/// of the real compiler NEFFs in turn (`MODULE_<i>/model.neff`). Returns their
/// total size, or `None` when the real NEFFs are missing.
fn ensure_real_cache_tree(root: &Path) -> Result<Option<u64>> {
    let real = real_neffs()?;
    if real.is_empty() {
        return Ok(None);
    }
    let mut total = 0;
    for i in 0..CACHE_NEFFS {
        let dir = root.join(format!("neuronxcc-2.{}/MODULE_{i:04}", i % 10));
        fs::create_dir_all(&dir)?;
        total += fs::copy(&real[i % real.len()], dir.join("model.neff"))?;
    }
    Ok(Some(total))
}

/// The baseline of (g): every `*.neff` under a folder read, its payload
/// hashed (MD5) and inflated, and every tar member read.
const WALK_PY: &str = r#"import gzip, hashlib, io, os, sys, tarfile
n = 0
for root, dirs, files in os.walk(sys.argv[1]):
    for name in sorted(files):
        if name.endswith(".neff"):
            with open(os.path.join(root, name), "rb") as f:
                payload = f.read()[1024:]
            hashlib.md5(payload).digest()
            with tarfile.open(fileobj=io.BytesIO(gzip.decompress(payload))) as tar:
                for member in tar:
                    if member.isfile():
                        tar.extractfile(member).read()
            n += 1
assert n > 0
"#;

/// Writes `size` bytes of `kind` data to `path`.
fn write_large_file(path: &Path, size: u64, kind: DataKind, rng: &mut Mix) -> Result<()> {
    const CHUNK: usize = 4 << 20;
    let mut out = File::create(path)?;
    let mut buf = vec![0u8; CHUNK];
    let mut left = size;
    while left > 0 {
        let n = left.min(CHUNK as u64) as usize;
        match kind {
            DataKind::Random => fill_random(&mut buf[..n], rng),
            DataKind::Weights => fill_weights(&mut buf[..n], rng),
        }
        out.write_all(&buf[..n])?;
        left -= n as u64;
    }
    out.sync_all()?;
    Ok(())
}

/// Fills `buf` with PRNG bytes.
fn fill_random(buf: &mut [u8], rng: &mut Mix) {
    let mut chunks = buf.chunks_exact_mut(8);
    for c in &mut chunks {
        c.copy_from_slice(&rng.next_u64().to_le_bytes());
    }
    let rest = chunks.into_remainder();
    let last = rng.next_u64().to_le_bytes();
    rest.copy_from_slice(&last[..rest.len()]);
}

/// Fills `buf` (a multiple of 4 bytes, except possibly a zero tail) with
/// little-endian f32 values of a roughly normal distribution (mean 0, std
/// 0.02, like initialised weights), rounded to bf16 precision: the low 16
/// bits of every value are zero.
fn fill_weights(buf: &mut [u8], rng: &mut Mix) {
    // Irwin-Hall with 4 uniform 16-bit terms: mean 2 * 65535, variance
    // 4 * (65536^2 - 1) / 12, i.e. std ~= 37837.
    const MEAN: f32 = 2.0 * 65535.0;
    const SCALE: f32 = 0.02 / 37837.0;
    let mut chunks = buf.chunks_exact_mut(4);
    for c in &mut chunks {
        let r = rng.next_u64();
        let sum = (r & 0xFFFF) + ((r >> 16) & 0xFFFF) + ((r >> 32) & 0xFFFF) + (r >> 48);
        let value = (sum as f32 - MEAN) * SCALE;
        c.copy_from_slice(&round_to_bf16(value).to_le_bytes());
    }
    chunks.into_remainder().fill(0);
}

/// `value` rounded (to nearest, ties to even) to bf16 precision, as f32 bits.
fn round_to_bf16(value: f32) -> u32 {
    let bits = value.to_bits();
    let rounded = bits.wrapping_add(0x7FFF + ((bits >> 16) & 1));
    rounded & 0xFFFF_0000
}

/// Writes the small JSON files: `meta/gNN/tensor-NNN.json`, 1-4 KiB each.
fn write_json_files(root: &Path, rng: &mut Mix) -> Result<()> {
    for i in 0..JSON_FILES {
        let folder = root.join(format!("meta/g{:02}", i % JSON_FOLDERS));
        fs::create_dir_all(&folder)?;
        let target = 1024 + rng.below(3 * 1024);
        let text = json_document(i, target, rng)?;
        fs::write(folder.join(format!("tensor-{i:03}.json")), text)?;
    }
    Ok(())
}

/// A pretty-printed JSON description of a made-up tensor, padded with a
/// statistics array until it is about `target` bytes long.
fn json_document(index: usize, target: usize, rng: &mut Mix) -> Result<String> {
    let dims: Vec<u64> = (0..1 + rng.below(3))
        .map(|_| 1u64 << (4 + rng.below(8)))
        .collect();
    let mut doc = serde_json::json!({
        "name": format!("layers.{}.mlp.w{}", index / 4, index % 4),
        "dtype": "bfloat16",
        "shape": dims,
        "offset": rng.next_u64() >> 24,
        "quantized": index % 3 == 0,
        "stats": [],
    });
    let mut text = serde_json::to_string_pretty(&doc)?;
    let mut stats = Vec::new();
    while text.len() < target {
        stats.push(((rng.next_u64() >> 11) as f64 / (1u64 << 53) as f64 - 0.5) * 0.1);
        if stats.len() % 16 == 0 {
            doc["stats"] = serde_json::json!(stats);
            text = serde_json::to_string_pretty(&doc)?;
        }
    }
    Ok(text)
}

/// Total bytes of all regular files under `root`.
fn tree_size(root: &Path) -> Result<u64> {
    let mut total = 0;
    for entry in fs::read_dir(root)? {
        let entry = entry?;
        let kind = entry.file_type()?;
        if kind.is_dir() {
            total += tree_size(&entry.path())?;
        } else if kind.is_file() {
            total += entry.metadata()?.len();
        }
    }
    Ok(total)
}

/// Reads every file of the tree once so the first measured command does not
/// pay for a cold page cache that later ones do not.
fn warm_cache(root: &Path) -> Result<()> {
    let mut buf = vec![0u8; 1 << 20];
    for entry in fs::read_dir(root)? {
        let entry = entry?;
        if entry.file_type()?.is_dir() {
            warm_cache(&entry.path())?;
        } else {
            let mut file = File::open(entry.path())?;
            while file.read(&mut buf)? > 0 {}
        }
    }
    Ok(())
}

// ---------------------------------------------------------------------------
// Tools and the neff binary

/// Fails unless the tools every workload needs are present.
fn check_required_tools() -> Result<()> {
    if !Path::new("/usr/bin/time").is_file() {
        return Err("/usr/bin/time is missing (apt-get install -y time)".into());
    }
    let missing: Vec<&str> = ["sh", "tar", "md5sum", "gzip", "tail"]
        .into_iter()
        .filter(|t| find_in_path(t).is_none())
        .collect();
    if missing.is_empty() {
        Ok(())
    } else {
        Err(format!("required tools missing: {}", missing.join(", ")).into())
    }
}

/// The first executable file called `name` on `PATH`.
fn find_in_path(name: &str) -> Option<PathBuf> {
    let path = env::var_os("PATH")?;
    env::split_paths(&path)
        .map(|dir| dir.join(name))
        .find(|p| p.is_file())
}

/// The `neff` binary Cargo built for this benchmark (the `bench` profile,
/// optimised as `release`).
fn neff_binary() -> Result<PathBuf> {
    Ok(PathBuf::from(env!("CARGO_BIN_EXE_neff")))
}

// ---------------------------------------------------------------------------
// Workloads

/// One command line to measure.
struct Cmd {
    /// Short label for the table.
    label: String,
    /// The `sh -c` script.
    script: String,
    /// Whether this is `neff` (the reference for the ratio).
    ours: bool,
    /// Whether the command prints its own time ([`SELF_TIMED`]), which
    /// stands for its wall time.
    self_timed: bool,
}

/// A workload: our command and its baselines, over the same input.
struct Workload {
    /// Table label, e.g. "(a) pack pkg 2".
    name: String,
    /// Bytes the throughput is computed over.
    bytes: u64,
    commands: Vec<Cmd>,
    /// Baselines skipped because a tool is missing.
    notes: Vec<String>,
    /// The floors this workload is judged against.
    limits: Vec<Limit>,
}

/// A workload's limit: what the work it cannot avoid costs on this machine,
/// from commands timed in the same run (they are baselines too).
struct Limit {
    /// What the limit is, for the report.
    what: String,
    /// The labels of the commands it is made of.
    parts: Vec<String>,
    combine: Combine,
}

/// How a limit is made of its parts' median times.
#[derive(Clone, Copy)]
enum Combine {
    /// Work that two cores can share: the sum over 2.
    TwoCores,
    /// Parts that can overlap: the slowest.
    Slowest,
}

impl Combine {
    fn of(self, seconds: &[f64]) -> f64 {
        match self {
            Combine::TwoCores => seconds.iter().sum::<f64>() / 2.0,
            Combine::Slowest => seconds.iter().copied().fold(0.0, f64::max),
        }
    }
}

/// One workload's limit in one regime.
struct LimitRow {
    workload: String,
    regime: Regime,
    what: String,
    our_seconds: f64,
    limit_seconds: f64,
}

impl Workload {
    fn new(name: &str, bytes: u64, ours: Cmd) -> Self {
        Workload {
            name: name.into(),
            bytes,
            commands: vec![ours],
            notes: Vec::new(),
            limits: Vec::new(),
        }
    }

    /// Adds a part of the workload's limit being described (a baseline as
    /// well); [`Workload::limit`] ends the description.
    fn limit_part(mut self, tool: &str, label: &str, script: String) -> Self {
        self = self.baseline(tool, label, script);
        self.limit_use(label)
    }

    /// [`Workload::limit_part`] of a command that prints its own time.
    fn self_timed_limit_part(mut self, label: &str, script: String) -> Self {
        let mut cmd = theirs(label, script);
        cmd.self_timed = true;
        self.commands.push(cmd);
        self.limit_use(label)
    }

    /// Makes the command `label` (when it runs) a part of the limit being
    /// described.
    fn limit_use(mut self, label: &str) -> Self {
        if self.commands.iter().any(|c| c.label == label) {
            if self.limits.last().is_none_or(|l| !l.what.is_empty()) {
                self.limits.push(Limit {
                    what: String::new(),
                    parts: Vec::new(),
                    combine: Combine::Slowest,
                });
            }
            if let Some(limit) = self.limits.last_mut() {
                limit.parts.push(label.into());
            }
        }
        self
    }

    /// Names the limit its parts make and how they combine.
    fn limit(mut self, what: &str, combine: Combine) -> Self {
        if let Some(limit) = self.limits.last_mut().filter(|l| l.what.is_empty()) {
            limit.what = what.into();
            limit.combine = combine;
        }
        self
    }

    /// This workload's limits among `measured` (one regime's), each whose
    /// every part was measured.
    fn limit_rows(&self, measured: &[Measured]) -> Vec<LimitRow> {
        let Some(ours) = measured.iter().find(|m| m.ours) else {
            return Vec::new();
        };
        self.limits
            .iter()
            .filter_map(|limit| {
                let parts: Option<Vec<f64>> = limit
                    .parts
                    .iter()
                    .map(|label| {
                        measured
                            .iter()
                            .find(|m| &m.label == label)
                            .map(|m| m.median_seconds)
                    })
                    .collect();
                Some(LimitRow {
                    workload: self.name.clone(),
                    regime: ours.regime,
                    what: limit.what.clone(),
                    our_seconds: ours.median_seconds,
                    limit_seconds: limit.combine.of(&parts?),
                })
            })
            .collect()
    }

    /// Adds `flag` to our command (and its label).
    fn ours_flag(mut self, flag: &str) -> Self {
        for cmd in self.commands.iter_mut().filter(|c| c.ours) {
            cmd.label = format!("{} {flag}", cmd.label);
            cmd.script = format!("{} {flag}", cmd.script);
        }
        self
    }

    /// Adds a baseline, or a note that it is skipped when `tool` is missing.
    fn baseline(mut self, tool: &str, label: &str, script: String) -> Self {
        if find_in_path(tool).is_some() {
            self.commands.push(theirs(label, script));
        } else {
            let note = format!(
                "{}: baseline `{label}` skipped: `{tool}` is not installed",
                self.name
            );
            eprintln!("bench: {note}");
            self.notes.push(note);
        }
        self
    }
}

/// `path` as one single-quoted `sh` word.
fn quote(path: &Path) -> String {
    format!("'{}'", path.display().to_string().replace('\'', r"'\''"))
}

/// Our command, labelled with the script itself minus the absolute paths.
fn ours(label: &str, script: String) -> Cmd {
    Cmd {
        label: label.into(),
        script,
        ours: true,
        self_timed: false,
    }
}

/// A baseline's command.
fn theirs(label: impl Into<String>, script: String) -> Cmd {
    Cmd {
        label: label.into(),
        script,
        ours: false,
        self_timed: false,
    }
}

/// (a), (c), (e) and (j): pack to pkg 2 (gzip at `level` + MD5). The
/// baselines write their output too (through `tee` into `base_out`).
fn pack_gzip_workload(
    name: &str,
    neff: &Path,
    tree: &Path,
    out: &Path,
    base_out: &Path,
    level: u32,
    bytes: u64,
) -> Workload {
    let (neff, tree, out, base) = (quote(neff), quote(tree), quote(out), quote(base_out));
    let w = Workload::new(
        name,
        bytes,
        ours(
            &format!("neff pack --level {level}"),
            format!("{neff} pack {tree} -o {out} --level {level} -q"),
        ),
    )
    .baseline(
        "pigz",
        &format!("tar | pigz -p2 -{level} | tee out | md5sum"),
        format!("tar -cf - -C {tree} . | pigz -p2 -{level} | tee {base} | md5sum"),
    );
    if level != 1 {
        return w;
    }
    w.baseline(
        "bsdtar",
        "bsdtar -cz (level 1) | tee out | md5sum",
        format!(
            "bsdtar -czf - --options gzip:compression-level=1 -C {tree} . | tee {base} | md5sum"
        ),
    )
}

/// (a)'s limits: what pkg 2 at `level` cannot avoid, spread over two cores.
/// First the CLIs: libdeflate (the fastest deflate here) of the tree's tar on
/// one core (`libdeflate-gzip`, which reads the whole tar into fresh memory
/// and writes its output from there), then `md5sum` of its output; (sum) / 2.
/// Then the same work as a streaming packager does it (`bench
/// --libdeflate-chunks`): libdeflate on 1 MiB chunks in process, one reused
/// buffer each way, and MD5 of the output, compress and hash time only; / 2.
fn two_core_deflate_limit(
    w: Workload,
    bench: &Path,
    tar: &Path,
    out: &Path,
    level: u32,
) -> Workload {
    let (bench, tar, out) = (quote(bench), quote(tar), quote(out));
    w.limit_part(
        "libdeflate-gzip",
        &format!("limit: libdeflate-gzip -{level} tar > out (one core)"),
        format!("libdeflate-gzip -{level} -c {tar} > {out}"),
    )
    .limit_part(
        "md5sum",
        "limit: md5sum out",
        format!("md5sum {out} >/dev/null"),
    )
    .limit(
        &format!("(libdeflate-gzip -{level} + md5sum) / 2"),
        Combine::TwoCores,
    )
    .self_timed_limit_part(
        &format!("limit: libdeflate -{level} on 1 MiB chunks + MD5, in process (one core)"),
        format!("{bench} --libdeflate-chunks {tar} {level}"),
    )
    .limit(
        &format!("(libdeflate -{level} on 1 MiB chunks + MD5) / 2"),
        Combine::TwoCores,
    )
}

/// (b)'s limit: what pkg 1 cannot avoid. The same bytes to the disk (`dd
/// conv=fsync` with fsync, else `cat` into a file) and SHA-256 of them with
/// neff's own `sha2` (`bench --sha256`), which can overlap: the slower.
fn disk_limit(w: Workload, bench: &Path, tar: &Path, out: &Path, fsync: bool) -> Workload {
    let (bench, tar, out) = (quote(bench), quote(tar), quote(out));
    let (label, script) = if fsync {
        (
            "limit: dd conv=fsync tar to out",
            format!("dd if={tar} of={out} bs=1M conv=fsync status=none"),
        )
    } else {
        ("limit: cat tar > out", format!("cat {tar} > {out}"))
    };
    w.limit_part("dd", label, script)
        .limit_part(
            "sh",
            "limit: sha256 tar (sha2, as neff)",
            format!("{bench} --sha256 {tar} >/dev/null"),
        )
        .limit(
            if fsync {
                "max(dd conv=fsync, SHA-256)"
            } else {
                "max(cat, SHA-256)"
            },
            Combine::Slowest,
        )
}

/// (b) pack to pkg 1 (raw tar + SHA-256), the baseline writing its output
/// through `tee`; with `fsync`, both make it durable (ours by default, the
/// baseline with `sync` of the file and its folder), else neither does.
fn pack_raw_workload(
    neff: &Path,
    tree: &Path,
    out: &Path,
    base_out: &Path,
    fsync: bool,
    bytes: u64,
) -> Workload {
    let base_dir = base_out.parent().unwrap_or(Path::new("."));
    let (neff, tree, out, base, base_dir) = (
        quote(neff),
        quote(tree),
        quote(out),
        quote(base_out),
        quote(base_dir),
    );
    let (name, flag, sync, label) = if fsync {
        (
            "(b) pack pkg 1, fsync",
            "",
            format!("; sync {base} {base_dir}"),
            "; sync out",
        )
    } else {
        ("(b) pack pkg 1, no fsync", " --no-fsync", String::new(), "")
    };
    Workload::new(
        name,
        bytes,
        ours(
            &format!("neff pack --pkg-version 1{flag}"),
            format!("{neff} pack {tree} -o {out} --pkg-version 1 -q{flag}"),
        ),
    )
    .baseline(
        "openssl",
        &format!("tar | tee out | openssl dgst -sha256{label}"),
        format!("tar -cf - -C {tree} . | tee {base} | openssl dgst -sha256{sync}"),
    )
}

/// (d) verify the pkg 2 NEFF from (a).
fn verify_workload(neff: &Path, file: &Path, payload_bytes: u64) -> Workload {
    verify_workload_named("(d) verify pkg 2", neff, file, payload_bytes)
}

/// `neff verify FILE` against `md5sum` and `gzip -t` of its payload.
fn verify_workload_named(name: &str, neff: &Path, file: &Path, payload_bytes: u64) -> Workload {
    let (neff, file) = (quote(neff), quote(file));
    let skip = HEADER_SIZE + 1;
    Workload::new(
        name,
        payload_bytes,
        ours("neff verify", format!("{neff} verify {file} >/dev/null")),
    )
    .baseline(
        "md5sum",
        "tail | md5sum; tail | gzip -t",
        format!("tail -c +{skip} {file} | md5sum; tail -c +{skip} {file} | gzip -t"),
    )
}

/// (k) unpack the pkg 2 NEFF from (a) into a fresh folder, against
/// `tar -xzf` of its payload plus `md5sum` of it.
fn unpack_workload(neff: &Path, file: &Path, dir: &Path, tree_bytes: u64) -> Workload {
    let base_dir = dir.with_extension("tar");
    let (neff, file, dir, base_dir) = (quote(neff), quote(file), quote(dir), quote(&base_dir));
    let skip = HEADER_SIZE + 1;
    Workload::new(
        "(k) unpack pkg 2",
        tree_bytes,
        ours(
            "neff unpack",
            format!("rm -rf {dir} && {neff} unpack {file} -o {dir} -q"),
        ),
    )
    .baseline(
        "md5sum",
        "tar -xzf; md5sum",
        format!(
            "rm -rf {base_dir} && mkdir {base_dir} && tail -c +{skip} {file} | tar -xzf - -C {base_dir} && tail -c +{skip} {file} | md5sum"
        ),
    )
}

/// (f) fuzz-seed generation: `neff corpus --count N`, durable and not.
fn corpus_workload(neff: &Path, dir: &Path, count: u64) -> Workload {
    let (neff, dir) = (quote(neff), quote(dir));
    let script = |flag: &str| {
        format!(
            "rm -rf {dir} && {neff} corpus --out {dir} --count {count} --seed 1{flag} 2>/dev/null"
        )
    };
    let mut w = Workload::new(
        "(f) corpus",
        0,
        ours(&format!("neff corpus --count {count}"), script("")),
    );
    w.commands.push(theirs(
        format!("neff corpus --count {count} --no-fsync"),
        script(" --no-fsync"),
    ));
    w
}

/// Calls per command in (i).
const FIXED_COST_CALLS: usize = 100;

/// (i) per-process fixed cost: `neff verify` of one small real NEFF, called
/// [`FIXED_COST_CALLS`] times, against Python reading it with `tarfile`.
fn fixed_cost_workload(neff: &Path, file: &Path) -> Workload {
    let (neff, file) = (quote(neff), quote(file));
    let repeat = |body: String| {
        format!("i=0; while [ $i -lt {FIXED_COST_CALLS} ]; do {body}; i=$((i+1)); done")
    };
    Workload::new(
        "(i) fixed cost",
        0,
        ours(
            "neff verify small.neff",
            repeat(format!("{neff} verify {file} >/dev/null")),
        ),
    )
    .baseline(
        "python3",
        "python3 -c tarfile (read every member)",
        repeat(format!(
            "python3 -c 'import io, sys, tarfile; d = open(sys.argv[1], \"rb\").read()[1024:]; [t.extractfile(m).read() for t in [tarfile.open(fileobj=io.BytesIO(d))] for m in t if m.isfile()]' {file}"
        )),
    )
}

/// (h) verify the NEFF of (d) from Python against the CLI, when `python3`
/// can import the package.
fn python_verify_workload(neff: &Path, file: &Path, payload_bytes: u64) -> Workload {
    let (neff, file) = (quote(neff), quote(file));
    let mut w = Workload::new(
        "(h) verify from Python",
        payload_bytes,
        ours("neff verify", format!("{neff} verify {file}")),
    );
    if python_importable() {
        w.commands.push(theirs(
            "python3 neff.verify(p)",
            format!("python3 -c 'import sys, neff; neff.verify(sys.argv[1])' {file}"),
        ));
    } else {
        let note = "(h) verify from Python: skipped: `python3 -c \"import neff\"` fails (pip install ./python)";
        eprintln!("bench: {note}");
        w.notes.push(note.to_string());
    }
    w
}

/// Whether `python3 -c "import neff"` works (the Python workloads need it).
fn python_importable() -> bool {
    Command::new("python3")
        .args(["-c", "import neff"])
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success())
}

/// Reads `k` members of a NEFF: the largest member (argv 2) and the members
/// after it in archive order (argv 5: the member keys, listed untimed);
/// `open` (argv 4) opens the NEFF (a verify pass) and reads them with
/// `Neff.read_many` (one more pass), `direct` reads them with
/// `neff.read_members` (one pass).
const READ_PY: &str = r#"import sys, neff
path, largest, k, mode = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4]
names = sys.argv[5].split(",")
i = names.index(largest)
want = names[i:i + k]
want = names[max(0, i - (k - len(want))):i] + want
if mode == "open":
    got = neff.Neff(path).read_many(want)
else:
    got = neff.read_members(path, want)
assert len(got) == k, (len(got), k)
"#;

/// The `k`s of the Python read workload.
const READ_KS: [usize; 3] = [1, 5, 20];

/// (h) reading members from Python: `Neff.read_many` of k members (the
/// largest among them) against `neff cat` of the largest; one pass whatever
/// k (goal: within 1.2x of `neff cat`).
fn python_read_workload(
    neff: &Path,
    file: &Path,
    script: &Path,
    largest: &str,
    payload_bytes: u64,
) -> Result<Workload> {
    fs::write(script, READ_PY)?;
    let file_path = file;
    let (neff, file, script) = (quote(neff), quote(file), quote(script));
    let mut w = Workload::new(
        "(h) read members from Python",
        payload_bytes,
        ours(
            "neff cat FILE LARGEST",
            format!("{neff} cat {file} '{largest}' >/dev/null"),
        ),
    );
    if python_importable() {
        let names = member_names(file_path)?.join(",");
        for (mode, what) in [("open", "open + read_many"), ("direct", "read_members")] {
            for k in READ_KS {
                w.commands.push(theirs(
                    format!("python3 {what}(k={k})"),
                    format!("python3 {script} {file} '{largest}' {k} {mode} '{names}'"),
                ));
            }
        }
    } else {
        let note = "(h) read members from Python: skipped: `python3 -c \"import neff\"` fails";
        w.notes.push(note.to_string());
    }
    Ok(w)
}

/// The member keys of a NEFF in archive order (files only), as Python's
/// `Neff.names()` lists them (listed once, outside the timed commands).
fn member_names(file: &Path) -> Result<Vec<String>> {
    let out = Command::new("python3")
        .args([
            "-c",
            "import sys, neff; print(\",\".join(neff.open(sys.argv[1]).names()))",
        ])
        .arg(file)
        .output()?;
    if !out.status.success() {
        return Err(format!(
            "listing {}: {}",
            file.display(),
            String::from_utf8_lossy(&out.stderr)
        )
        .into());
    }
    Ok(String::from_utf8_lossy(&out.stdout)
        .trim()
        .split(',')
        .map(str::to_string)
        .collect())
}

/// The path (relative to `tree`, `/`-separated) of its largest file; of
/// equal sizes, the last in byte order (packed last of them).
fn largest_file(tree: &Path) -> Result<String> {
    fn walk(dir: &Path, rel: &str, best: &mut (u64, String)) -> Result<()> {
        let mut entries: Vec<_> = fs::read_dir(dir)?.collect::<io::Result<_>>()?;
        entries.sort_by_key(|e| e.file_name());
        for entry in entries {
            let name = format!("{rel}{}", entry.file_name().to_string_lossy());
            let meta = entry.metadata()?;
            if meta.is_dir() {
                walk(&entry.path(), &format!("{name}/"), best)?;
            } else if meta.len() >= best.0 {
                *best = (meta.len(), name);
            }
        }
        Ok(())
    }
    let mut best = (0, String::new());
    walk(tree, "", &mut best)?;
    Ok(best.1)
}

/// The label of `neff.verify_many` in (g).
const VERIFY_MANY_LABEL: &str = "python3 neff.verify_many(DIR, threads=2)";

/// The (g) floor that also checks every manifest's JSON syntax (`bench
/// --floor --mode manifests`).
const MANIFEST_FLOOR_LABEL: &str = "floor + JSON syntax of every manifest, 2 threads";

/// (g) verify a folder of NEFFs, on 1 and 2 threads.
fn verify_dir_workload(
    name: &str,
    neff: &Path,
    dir: &Path,
    script: &Path,
    bytes: u64,
) -> Result<Workload> {
    fs::write(script, WALK_PY)?;
    let (neff, dir, script) = (quote(neff), quote(dir), quote(script));
    let mut w = Workload::new(
        name,
        bytes,
        ours(
            "neff verify DIR --threads 2",
            format!("{neff} verify {dir} --threads 2 >/dev/null"),
        ),
    );
    w.commands.push(theirs(
        "neff verify DIR --threads 1",
        format!("{neff} verify {dir} --threads 1 >/dev/null"),
    ));
    if python_importable() {
        w.commands.push(theirs(
            VERIFY_MANY_LABEL,
            format!(
                "python3 -c 'import sys, neff; neff.verify_many(sys.argv[1], threads=2)' {dir}"
            ),
        ));
    }
    Ok(w.baseline(
        "python3",
        "python3 gzip+tarfile+hashlib",
        format!("python3 {script} {dir}"),
    )
    .baseline(
        "md5sum",
        "find | xargs md5sum",
        format!("find {dir} -name '*.neff' -print0 | xargs -0 md5sum >/dev/null"),
    ))
}

// ---------------------------------------------------------------------------
// Measuring

/// One measured run.
#[derive(Clone, Copy)]
struct Sample {
    seconds: f64,
    peak_rss_kib: u64,
}

/// The summary of one command's runs.
#[derive(Clone)]
struct Measured {
    workload: String,
    label: String,
    ours: bool,
    bytes: u64,
    median_seconds: f64,
    /// The largest peak RSS over the runs.
    peak_rss_kib: u64,
    /// The median of our command in the same workload.
    our_seconds: f64,
    regime: Regime,
}

impl Measured {
    /// `count` items over the median time, per second.
    fn per_second(&self, count: u64) -> f64 {
        count as f64 / self.median_seconds.max(1e-9)
    }
}

/// Runs every command of `w` `runs` times, interleaved, and summarises.
fn run_workload(w: &Workload, runs: usize, regime: Regime) -> Result<Vec<Measured>> {
    eprintln!(
        "bench: {} ({} commands x {runs} runs, {} disk)",
        w.name,
        w.commands.len(),
        regime.name()
    );
    let mut samples: Vec<Vec<Sample>> = vec![Vec::new(); w.commands.len()];
    for run in 1..=runs {
        for (cmd, seen) in w.commands.iter().zip(&mut samples) {
            if regime == Regime::Idle {
                Command::new("sync").status()?;
            }
            let s = time_command(&cmd.script, cmd.self_timed)
                .map_err(|e| format!("{}: `{}`: {e}", w.name, cmd.label))?;
            eprintln!(
                "bench:   run {run}/{runs} {:<34} {:>8.3} s {:>8.1} MiB",
                cmd.label,
                s.seconds,
                s.peak_rss_kib as f64 / 1024.0
            );
            seen.push(s);
        }
    }
    let ours_index = w.commands.iter().position(|c| c.ours).unwrap_or(0);
    let our_seconds = median(samples[ours_index].iter().map(|s| s.seconds).collect());
    Ok(w.commands
        .iter()
        .zip(&samples)
        .map(|(cmd, seen)| Measured {
            workload: w.name.clone(),
            label: cmd.label.clone(),
            ours: cmd.ours,
            bytes: w.bytes,
            median_seconds: median(seen.iter().map(|s| s.seconds).collect()),
            peak_rss_kib: seen.iter().map(|s| s.peak_rss_kib).max().unwrap_or(0),
            our_seconds,
            regime,
        })
        .collect())
}

/// Runs `script` under `/usr/bin/time -v sh -c`, returning its wall time (or,
/// when `self_timed`, the time it prints after [`SELF_TIMED`]) and peak RSS;
/// fails if it exits unsuccessfully.
fn time_command(script: &str, self_timed: bool) -> Result<Sample> {
    let started = Instant::now();
    let output = Command::new("/usr/bin/time")
        .args(["-v", "sh", "-c", script])
        .stdin(Stdio::null())
        .stdout(if self_timed {
            Stdio::piped()
        } else {
            Stdio::null()
        })
        .stderr(Stdio::piped())
        .output()?;
    let mut seconds = started.elapsed().as_secs_f64();
    if self_timed {
        let stdout = String::from_utf8_lossy(&output.stdout);
        seconds = stdout
            .lines()
            .find_map(|l| l.strip_prefix(SELF_TIMED)?.trim().parse().ok())
            .ok_or_else(|| format!("no `{SELF_TIMED}` line in the output:\n{stdout}"))?;
    }
    let stderr = String::from_utf8_lossy(&output.stderr);
    if !output.status.success() {
        return Err(format!("failed ({}):\n{stderr}", output.status).into());
    }
    let peak_rss_kib = parse_max_rss(&stderr)
        .ok_or_else(|| format!("no peak RSS in /usr/bin/time output:\n{stderr}"))?;
    Ok(Sample {
        seconds,
        peak_rss_kib,
    })
}

/// The "Maximum resident set size (kbytes)" value from `time -v` output.
fn parse_max_rss(text: &str) -> Option<u64> {
    text.lines()
        .filter_map(|l| l.trim().strip_prefix("Maximum resident set size (kbytes):"))
        .next_back()?
        .trim()
        .parse()
        .ok()
}

/// The median (mean of the middle two for an even count); 0 when empty.
fn median(mut values: Vec<f64>) -> f64 {
    if values.is_empty() {
        return 0.0;
    }
    values.sort_by(f64::total_cmp);
    let mid = values.len() / 2;
    if values.len() % 2 == 1 {
        values[mid]
    } else {
        (values[mid - 1] + values[mid]) / 2.0
    }
}

// ---------------------------------------------------------------------------
// Report

/// Prints the machine: CPUs, CPU model, memory.
fn print_machine() {
    let nproc = Command::new("nproc")
        .output()
        .ok()
        .filter(|o| o.status.success())
        .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string())
        .unwrap_or_else(|| "?".into());
    let cpuinfo = fs::read_to_string("/proc/cpuinfo").unwrap_or_default();
    let model = proc_field(&cpuinfo, "model name")
        .or_else(|| proc_field(&cpuinfo, "Hardware"))
        .unwrap_or_else(|| "unknown".into());
    let meminfo = fs::read_to_string("/proc/meminfo").unwrap_or_default();
    let memory = proc_field(&meminfo, "MemTotal")
        .and_then(|v| v.trim_end_matches("kB").trim().parse::<u64>().ok())
        .map(|kib| format!("{:.1} GiB", kib as f64 / (1024.0 * 1024.0)))
        .unwrap_or_else(|| "unknown".into());
    println!("- machine: nproc {nproc}; CPU {model}; memory {memory}");
}

/// The value of the first `key: value` line of a /proc file.
fn proc_field(text: &str, key: &str) -> Option<String> {
    text.lines().find_map(|line| {
        let (k, v) = line.split_once(':')?;
        (k.trim() == key).then(|| v.trim().to_string())
    })
}

/// Prints each limit beside our time: limit / ours is the fraction of the
/// limit reached (1 = at the limit).
fn print_limits(limits: &[LimitRow]) {
    if limits.is_empty() {
        return;
    }
    let mut out = String::new();
    out.push_str("| workload | disk | limit | ours s | limit s | limit / ours |\n");
    out.push_str("|---|---|---|---:|---:|---:|\n");
    for l in limits {
        let _ = writeln!(
            out,
            "| {} | {} | {} | {:.3} | {:.3} | {:.2} |",
            l.workload,
            l.regime.name(),
            l.what.replace('|', "\\|"),
            l.our_seconds,
            l.limit_seconds,
            l.limit_seconds / l.our_seconds.max(1e-9)
        );
    }
    print!("{out}");
}

/// Prints the results as a Markdown table (pipes in commands escaped as `\|`,
/// which GitHub-flavoured Markdown renders as `|` even inside code spans).
fn print_table(results: &[Measured]) {
    let mut out = String::new();
    out.push_str(
        "| workload | disk | command | median s | MB/s | ratio (baseline/ours) | peak RSS MiB |\n",
    );
    out.push_str("|---|---|---|---:|---:|---:|---:|\n");
    for r in results {
        let mbps = if r.median_seconds > 0.0 {
            r.bytes as f64 / 1e6 / r.median_seconds
        } else {
            0.0
        };
        let ratio = if r.ours {
            "(ours)".to_string()
        } else if r.our_seconds > 0.0 {
            format!("{:.2}", r.median_seconds / r.our_seconds)
        } else {
            "n/a".to_string()
        };
        let _ = writeln!(
            out,
            "| {} | {} | `{}` | {:.3} | {:.0} | {} | {:.1} |",
            r.workload,
            r.regime.name(),
            r.label.replace('|', "\\|"),
            r.median_seconds,
            mbps,
            ratio,
            r.peak_rss_kib as f64 / 1024.0
        );
    }
    print!("{out}");
    let _ = io::stdout().flush();
}
