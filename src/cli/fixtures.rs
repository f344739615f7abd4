//! `neff fixtures`: write the deterministic fixture corpus.

use std::path::PathBuf;

use clap::Args;
use neff::smith::fixtures::{generate_with, FixtureKind, MANIFEST_FILE};

use super::{prepare_output_dir, FsyncArgs, EXIT_OK};

/// Write a corpus of valid, negative and edge-case NEFFs with a manifest.
///
/// DIR gets valid/ (one NEFF per target and packaging version), negative/ (for
/// every loader gate a file can reach, at least one NEFF refused by exactly that
/// gate; names start with the gate id), edge/ (unusual inputs the runtime
/// accepts) and manifest.json: for each entry the file, the `neff verify`
/// arguments it is checked under, and the expected verdict (accepted, status,
/// gate, the runtime's message, error cause, warnings), plus the gates no file
/// can reach. `neff schema fixtures-manifest` prints the manifest's schema. The
/// verdicts are computed by the loader itself and generation fails if any
/// fixture does not trip its intended gate. The same command always writes the
/// same bytes. Each file is written to a temp file and renamed into place; DIR
/// is synced once at the end.
///
/// With --check DIR, nothing is written: every entry of DIR/manifest.json is
/// checked again under its runtime, in parallel; exit 1 lists each file whose
/// verdict differs from the recorded one.
///
///   neff fixtures -o fx && neff fixtures --check fx
#[derive(Args, Debug)]
pub struct FixturesArgs {
    /// Output directory (created if absent; must be empty unless --force).
    #[arg(
        short,
        long = "output",
        visible_alias = "out",
        value_name = "DIR",
        required_unless_present = "check",
        conflicts_with = "check"
    )]
    out: Option<PathBuf>,
    /// Check the fixtures in DIR against DIR/manifest.json instead of writing.
    #[arg(long, value_name = "DIR")]
    check: Option<PathBuf>,
    /// Threads for --check (default: the available cores).
    #[arg(long, value_name = "N", requires = "check", value_parser = clap::value_parser!(u64).range(1..=256))]
    threads: Option<u64>,
    /// Write into a non-empty DIR, replacing files of the same name (other files
    /// are left alone).
    #[arg(long)]
    force: bool,
    #[command(flatten)]
    fsync: FsyncArgs,
    /// Print nothing on success.
    #[arg(short, long)]
    quiet: bool,
}

pub fn run(args: FixturesArgs) -> Result<u8, Box<dyn std::error::Error>> {
    if let Some(dir) = &args.check {
        let checked = neff::smith::check::check_fixtures(dir, super::check_threads(args.threads))?;
        return Ok(super::report_checked(
            &checked,
            &dir.join(MANIFEST_FILE),
            args.quiet,
        ));
    }
    let out = args.out.clone().unwrap_or_default();
    prepare_output_dir(&out, args.force)?;
    let manifest = generate_with(&out, args.fsync.fsync())?;
    if !args.quiet {
        let mut files: Vec<&str> = manifest.fixtures.iter().map(|f| f.file.as_str()).collect();
        files.dedup();
        let count = |kind| manifest.fixtures.iter().filter(|f| f.kind == kind).count();
        eprintln!(
            "wrote {} NEFFs and {} ({} entries: {} valid, {} negative, {} edge, {} relaxed; unreachable: {})",
            files.len(),
            out.join(MANIFEST_FILE).display(),
            manifest.fixtures.len(),
            count(FixtureKind::Valid),
            count(FixtureKind::Negative),
            count(FixtureKind::Edge),
            count(FixtureKind::Relaxed),
            manifest
                .unreachable
                .iter()
                .map(|u| u.gate.as_str())
                .collect::<Vec<_>>()
                .join(", ")
        );
    }
    Ok(EXIT_OK)
}
