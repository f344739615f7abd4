//! `neff shrink`: reduce a NEFF to the smallest that keeps a predicate.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use clap::Args;
use neff::smith::shrink::{shrink, ShrinkOptions};

use super::EXIT_OK;

/// Reduce a NEFF to the smallest one that is still "interesting".
///
/// A reducer over the typed model, as wasm-tools' wasm-shrink is over Wasm:
/// it drops members, zeroes and halves member bytes, and removes keys and
/// array elements of the manifests (graphs, variables, DMA blocks…), keeping
/// each step that leaves the NEFF smaller and still interesting. Every
/// candidate is written by this tool's writer from the lifted model, so it
/// is a readable NEFF whatever the gates say of it. OUT holds the smallest so
/// far from the first step on. Deterministic for a --seed.
///
/// Interesting is, with --until CMD, CMD exiting 0 when given the candidate's
/// path as its last argument (run by `sh -c`, killed after --timeout), or
/// with --stderr-matches RE its stderr matching RE; with --refused-by GATE,
/// the loader refusing it by that gate (on --instance-arch, default every
/// targeted arch, and under the profile flags); with --accepted, the loader
/// accepting it. --raw then also tries byte-level steps on the file.
///
///   neff shrink big.neff -o small.neff --refused-by G17 --instance-arch sunda
///   neff shrink big.neff -o small.neff --until './my-loader-crashes.sh'
#[derive(Args, Debug)]
pub struct ShrinkArgs {
    /// The NEFF to reduce.
    file: PathBuf,
    /// Where the smallest interesting NEFF is written.
    #[arg(short, long, value_name = "OUT.neff")]
    output: PathBuf,
    /// A shell command that exits 0 when the candidate (its last argument) is
    /// still interesting.
    #[arg(long, value_name = "CMD", required_unless_present_any = ["refused_by", "accepted"],
          conflicts_with_all = ["refused_by", "accepted"])]
    until: Option<String>,
    /// With --until: interesting when CMD's stderr matches this regular
    /// expression (whatever its exit status).
    #[arg(long, value_name = "RE", requires = "until")]
    stderr_matches: Option<String>,
    /// Interesting: refused by this gate (e.g. G21a).
    #[arg(long, value_name = "GATE", conflicts_with = "accepted")]
    refused_by: Option<String>,
    /// Interesting: accepted by the loader.
    #[arg(long)]
    accepted: bool,
    /// With --refused-by or --accepted: the runtime the loader simulates.
    #[command(flatten)]
    runtime: super::RuntimeArgs,
    /// Once the model steps keep nothing, also cut and zero byte ranges of the
    /// file (candidates the writer did not produce).
    #[arg(long)]
    raw: bool,
    /// Check at most N candidates.
    #[arg(long, value_name = "N", default_value_t = 10_000)]
    max_steps: u64,
    /// With --until: seconds a check may take before it is killed (and the
    /// candidate counted as not interesting).
    #[arg(long, value_name = "SECONDS", default_value_t = 60)]
    timeout: u64,
    /// Shuffle the order the steps are tried in (0: a fixed order).
    #[arg(long, default_value_t = 0)]
    seed: u64,
    /// Print nothing but errors.
    #[arg(short, long)]
    quiet: bool,
}

pub fn run(args: ShrinkArgs) -> Result<u8, Box<dyn std::error::Error>> {
    let scratch = tempfile::tempdir()?;
    let runtime = args.runtime.runtime();
    let pattern = match &args.stderr_matches {
        Some(re) => {
            Some(regex_lite::Regex::new(re).map_err(|e| format!("--stderr-matches {re:?}: {e}"))?)
        }
        None => None,
    };
    let mut interesting = |path: &Path| -> bool {
        if let Some(cmd) = &args.until {
            return run_until(
                cmd,
                path,
                Duration::from_secs(args.timeout),
                pattern.as_ref(),
            );
        }
        let Ok(checked) = runtime.check_path(path) else {
            return false;
        };
        match &args.refused_by {
            Some(gate) => checked.report.gate_id() == Some(gate.as_str()),
            None => checked.report.accepted,
        }
    };
    let quiet = args.quiet;
    let mut progress = |s: &neff::smith::shrink::Shrunk| {
        if !quiet {
            let last = s.kept.last().map_or("", String::as_str);
            eprintln!("{} bytes after {} checks ({last})", s.to, s.steps);
        }
    };
    let options = ShrinkOptions {
        max_steps: args.max_steps,
        seed: args.seed,
        raw: args.raw,
    };
    let done = shrink(
        &args.file,
        &args.output,
        scratch.path(),
        &options,
        &mut interesting,
        &mut progress,
    )?;
    if !args.quiet {
        eprintln!(
            "wrote {}: {} bytes, from {} ({} checks, {} steps kept)",
            args.output.display(),
            done.to,
            done.from,
            done.steps,
            done.kept.len()
        );
    }
    Ok(EXIT_OK)
}

/// Whether `cmd PATH` exits 0 (or, with `pattern`, writes to stderr what
/// matches it) within `timeout` (killed after it).
fn run_until(
    cmd: &str,
    path: &Path,
    timeout: Duration,
    pattern: Option<&regex_lite::Regex>,
) -> bool {
    let stderr_file = tempfile::tempfile().ok();
    let stderr = match (&stderr_file, pattern) {
        (Some(f), Some(_)) => f.try_clone().map_or(Stdio::null(), Stdio::from),
        _ => Stdio::null(),
    };
    let child = Command::new("sh")
        .arg("-c")
        .arg(format!("{cmd} \"$1\""))
        .arg("sh")
        .arg(path)
        .stdout(Stdio::null())
        .stderr(stderr)
        .spawn();
    let Ok(mut child) = child else {
        return false;
    };
    let started = Instant::now();
    loop {
        match child.try_wait() {
            Ok(Some(status)) => {
                let (Some(pattern), Some(mut file)) = (pattern, stderr_file) else {
                    return status.success();
                };
                // At most the first MiB of what it wrote.
                use std::io::{Read, Seek};
                let mut text = Vec::new();
                let read = file
                    .rewind()
                    .and_then(|()| (&mut file).take(1 << 20).read_to_end(&mut text));
                return read.is_ok() && pattern.is_match(&String::from_utf8_lossy(&text));
            }
            Ok(None) if started.elapsed() < timeout => std::thread::sleep(Duration::from_millis(5)),
            _ => {
                let _ = child.kill();
                let _ = child.wait();
                return false;
            }
        }
    }
}
