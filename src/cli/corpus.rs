//! `neff corpus`: deterministic fuzz seeds.

use std::path::PathBuf;
use std::time::Instant;

use clap::Args;
use neff::smith::corpus::seed_file;
use neff::smith::generate::GenConfig;
use neff::writer::write_atomic;

use super::documents::{CorpusEntry, CorpusManifest};
use super::{prepare_output_dir, EXIT_OK};

/// Write fuzz seeds: valid NEFFs drawn from the structure-aware generator, and
/// invalid ones made by mutating a manifest or a header field.
///
/// Invalid seeds are rebuilt with a correct payload hash, so they reach the JSON
/// parsers and the manifest gates instead of dying at the MD5 gate. Each file is
/// named by the loader's verdict under `neff verify`'s defaults:
/// DIR/NNNNNN-valid.neff is accepted on every arch it targets,
/// DIR/NNNNNN-invalid.neff is refused (a mutation the loader still accepts is
/// redrawn up to 8 times, then kept as a valid seed). DIR/corpus.json lists
/// every file with its verdict (accepted, gate, status) and what its mutation
/// changed. The same seed always gives the same files.
#[derive(Args, Debug)]
pub struct CorpusArgs {
    /// Output directory (created; must be empty unless --force).
    #[arg(short, long = "output", visible_alias = "out", value_name = "DIR")]
    out: PathBuf,
    /// How many files.
    #[arg(long, default_value_t = 100)]
    count: u64,
    /// The seed; the corpus is a function of it.
    #[arg(long, default_value_t = 0)]
    seed: u64,
    /// The share of invalid (mutated) files, 0.0 to 1.0.
    #[arg(long, default_value_t = 0.25, value_parser = parse_ratio)]
    invalid_ratio: f64,
    /// Write into a non-empty DIR.
    #[arg(long)]
    force: bool,
    /// Print nothing on success.
    #[arg(short, long)]
    quiet: bool,
}

fn parse_ratio(text: &str) -> Result<f64, String> {
    match text.parse::<f64>() {
        Ok(r) if (0.0..=1.0).contains(&r) => Ok(r),
        _ => Err(format!("{text:?} is not a ratio between 0.0 and 1.0")),
    }
}

pub fn run(args: CorpusArgs) -> Result<u8, Box<dyn std::error::Error>> {
    prepare_output_dir(&args.out, args.force)?;
    let config = GenConfig::default();
    let started = Instant::now();
    let mut listing = Vec::new();
    let (mut index, mut written, mut bytes) = (0u64, 0u64, 0u64);
    // A draw the generator cannot use is skipped; give up after many in a row.
    while written < args.count && index < args.count.saturating_mul(4).saturating_add(64) {
        let this = index;
        index += 1;
        let Some(seed) = seed_file(args.seed, this, args.invalid_ratio, &config) else {
            continue;
        };
        let valid = seed.verdict.accepted;
        let name = format!(
            "{written:06}-{}.neff",
            if valid { "valid" } else { "invalid" }
        );
        write_atomic(&args.out.join(&name), &seed.bytes)?;
        bytes += seed.bytes.len() as u64;
        listing.push(CorpusEntry {
            file: name,
            valid,
            verdict: seed.verdict,
            draw: this,
            mutation: seed.mutation,
        });
        written += 1;
    }
    let manifest = CorpusManifest {
        seed: args.seed,
        invalid_ratio: args.invalid_ratio,
        files: listing,
    };
    write_atomic(
        &args.out.join("corpus.json"),
        (serde_json::to_string_pretty(&manifest)? + "\n").as_bytes(),
    )?;
    let secs = started.elapsed().as_secs_f64();
    if args.quiet {
        return Ok(EXIT_OK);
    }
    eprintln!(
        "wrote {written} files ({bytes} bytes) to {} in {secs:.2} s ({:.0} files/s)",
        args.out.display(),
        written as f64 / secs.max(1e-9)
    );
    Ok(EXIT_OK)
}
