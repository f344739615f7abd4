//! `neff redact`: a NEFF safe to attach to a bug report.

use std::path::PathBuf;

use clap::Args;
use neff::loader::{Limits, RuntimeProfile};
use neff::tools::redact::{redact, same_verdict, RedactOptions};

use super::{input, EXIT_OK, EXIT_REJECTED};

/// Write a copy of a NEFF that is safe to attach to a bug report.
///
/// Every weight's data is zeroed (its .npy header, so its dtype and shape,
/// kept), the header's name becomes "redacted" and its build version empty,
/// every absolute path or host-like string (ip-10-0-0-1, *.internal,
/// user@host) in the JSON members is replaced by "redacted", and the
/// debug-info members (debug_info/, *.dbg, .asm listings) are dropped unless
/// named by --keep. What the runtime reads keeps its shape: the verdict and
/// the --memory figures stay (warnings naming a dropped member aside), which
/// --check proves by verifying both. Prints what it changed.
///
///   neff redact model.neff -o shareable.neff --check
#[derive(Args, Debug)]
pub struct RedactArgs {
    /// The NEFF to redact.
    file: PathBuf,
    /// Where to write the redacted NEFF (written to a temp file beside it,
    /// checked by the gates, renamed into place).
    #[arg(short, long, value_name = "OUT.neff")]
    output: PathBuf,
    /// A debug-info member to keep (repeatable).
    #[arg(long, value_name = "MEMBER")]
    keep: Vec<String>,
    /// Verify both NEFFs and exit 1 unless the redacted one gets the same
    /// verdict and memory figures.
    #[arg(long)]
    check: bool,
    /// Print nothing on success.
    #[arg(short, long)]
    quiet: bool,
}

pub fn run(args: RedactArgs) -> Result<u8, Box<dyn std::error::Error>> {
    let scratch = tempfile::tempdir()?;
    let options = RedactOptions {
        keep: args.keep.clone(),
    };
    let done = redact(&args.file, &args.output, scratch.path(), &options)?;
    if !args.quiet {
        eprintln!(
            "zeroed {} bytes of weights in {} members",
            done.weight_bytes,
            done.weights.len()
        );
        for h in &done.header {
            eprintln!("header {h} → replaced");
        }
        for (member, s) in &done.scrubbed {
            eprintln!("{member}: scrubbed {s:?}");
        }
        if !done.dropped.is_empty() {
            eprintln!(
                "dropped {} debug-info members: {}",
                done.dropped.len(),
                done.dropped.join(", ")
            );
        }
        eprintln!("wrote {}", args.output.display());
    }
    if args.check {
        let verify = |path: &PathBuf| {
            input::verify(
                path,
                &path.display().to_string(),
                &RuntimeProfile::default(),
                &Limits::default(),
            )
        };
        let (original, redacted) = (verify(&args.file)?, verify(&args.output)?);
        if let Some(what) = same_verdict(&original, &redacted, &done.dropped) {
            eprintln!(
                "neff: {}: the redacted NEFF differs in {what}",
                args.output.display()
            );
            return Ok(EXIT_REJECTED);
        }
        if !args.quiet {
            eprintln!("checked: the same verdict and memory figures");
        }
    }
    Ok(EXIT_OK)
}
