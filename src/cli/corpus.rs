//! `neff corpus`: deterministic fuzz seeds.

use std::path::PathBuf;
use std::time::Instant;

use clap::Args;
use neff::smith::corpus::{seeds, seeds_from, Seed};
use neff::smith::generate::GenConfig;
use neff::smith::real::Source;
use neff::writer::fs::write_atomic_with;

use super::documents::{CorpusEntry, CorpusManifest};
use super::{prepare_output_dir, FsyncArgs, EXIT_OK};

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
/// changed. The same seed always gives the same files, whatever --threads.
/// Each file is written to a temp file and renamed into place; DIR is synced
/// once at the end.
///
/// With --from, every seed is instead one structure-aware change away from a
/// real NEFF: each given file (or every *.neff under a given folder) is
/// lifted into the typed model, and each seed changes one thing in one of
/// them (a typed value, a key removed or repeated, a def.json variable, a
/// member dropped, swapped or resized, a header field), packed again with a
/// valid hash. Seeds are named by their verdict as above; corpus.json gives
/// each one's source and change.
///
/// With --check DIR, nothing is written: every seed of DIR/corpus.json is
/// verified again under `neff verify`'s defaults, in parallel; exit 1 lists
/// each file whose verdict differs from the recorded one.
///
///   neff corpus -o seeds --count 100 && neff corpus --check seeds
#[derive(Args, Debug)]
pub struct CorpusArgs {
    /// Output directory (created; must be empty unless --force).
    #[arg(
        short,
        long = "output",
        visible_alias = "out",
        value_name = "DIR",
        required_unless_present = "check",
        conflicts_with = "check"
    )]
    out: Option<PathBuf>,
    /// Check the seeds in DIR against DIR/corpus.json instead of writing.
    #[arg(long, value_name = "DIR")]
    check: Option<PathBuf>,
    /// How many files.
    #[arg(long, default_value_t = 100)]
    count: u64,
    /// The seed; the corpus is a function of it.
    #[arg(long, default_value_t = 0)]
    seed: u64,
    /// The share of invalid (mutated) files, 0.0 to 1.0 (not with --from:
    /// every seed there is a change).
    #[arg(long, default_value_t = 0.25, value_parser = parse_ratio)]
    invalid_ratio: f64,
    /// Mutate these NEFFs (files, or folders searched for *.neff) instead of
    /// generating models.
    #[arg(long, value_name = "PATH", num_args = 1..)]
    from: Vec<PathBuf>,
    /// gzip level 1-9 of the --from seeds (default: each source's own, as its
    /// framing was recovered). Seeds are deflated in content-defined chunks
    /// shared through a cache, not as one zlib stream like their source.
    #[arg(long, value_name = "N", requires = "from", value_parser = clap::value_parser!(u32).range(1..=9))]
    level: Option<u32>,
    /// Write into a non-empty DIR.
    #[arg(long)]
    force: bool,
    /// Threads generating and checking seeds (default: the available cores).
    /// The files are the same for any count.
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u64).range(1..=256))]
    threads: Option<u64>,
    #[command(flatten)]
    fsync: FsyncArgs,
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

/// Lifts every NEFF `paths` name (a folder: its `*.neff` files and the NEFFs
/// its `*.hlo` and `*.neuron` files carry, sorted).
fn lift_sources(paths: &[PathBuf]) -> Result<Vec<Source>, Box<dyn std::error::Error>> {
    let mut sources = Vec::new();
    for input in neff::loader::inputs::expand(paths) {
        match input {
            neff::loader::inputs::Input::Path(path) => {
                // A carrier gives each NEFF it holds.
                for neff in super::input::each_neff(&path)? {
                    let resolved = super::input::read_as(&path, neff, true)?;
                    let mut source = Source::lift(&resolved.path)?;
                    // Seeds name the file given, not the carrier's spool.
                    source.path = PathBuf::from(&resolved.name);
                    sources.push(source);
                }
            }
            neff::loader::inputs::Input::Unreadable(path, e) => {
                return Err(format!("{}: {e}", path.display()).into())
            }
        }
    }
    if sources.is_empty() && !paths.is_empty() {
        return Err(
            "--from names no NEFF (a folder is searched for *.neff, *.hlo and *.neuron files)"
                .into(),
        );
    }
    Ok(sources)
}

pub fn run(args: CorpusArgs) -> Result<u8, Box<dyn std::error::Error>> {
    if let Some(dir) = &args.check {
        let threads = super::check_threads(args.threads);
        let checked = neff::smith::check::check_corpus(dir, threads)?;
        let listing = dir.join(neff::smith::check::CORPUS_FILE);
        return Ok(super::report_checked(&checked, &listing, args.quiet));
    }
    let sources = lift_sources(&args.from)?;
    let out = args.out.clone().unwrap_or_default();
    prepare_output_dir(&out, args.force)?;
    let started = Instant::now();
    let mut listing = Vec::new();
    let mut bytes = 0u64;
    let threads = args.threads.unwrap_or(0) as usize;
    let config = GenConfig::default();
    let sink = |draw, seed: Seed| {
        let valid = seed.verdict.accepted;
        let kind = if valid { "valid" } else { "invalid" };
        let name = format!("{:06}-{kind}.neff", listing.len());
        write_atomic_with(&out.join(&name), &seed.bytes, false)?;
        bytes += seed.bytes.len() as u64;
        listing.push(CorpusEntry {
            file: name,
            valid,
            verdict: seed.verdict,
            draw,
            mutation: seed.mutation,
        });
        Ok::<_, std::io::Error>(())
    };
    let written = match sources.is_empty() {
        true => seeds(
            args.seed,
            args.count,
            args.invalid_ratio,
            &config,
            threads,
            sink,
        )?,
        false => seeds_from(&sources, args.seed, args.count, args.level, threads, sink)?,
    };
    let manifest = CorpusManifest {
        seed: args.seed,
        invalid_ratio: args.invalid_ratio,
        from: sources
            .iter()
            .map(|s| s.path.display().to_string())
            .collect(),
        files: listing,
    };
    write_atomic_with(
        &out.join(neff::smith::check::CORPUS_FILE),
        (serde_json::to_string_pretty(&manifest)? + "\n").as_bytes(),
        false,
    )?;
    args.fsync.sync_folder(&out)?;
    let secs = started.elapsed().as_secs_f64();
    if args.quiet {
        return Ok(EXIT_OK);
    }
    eprintln!(
        "wrote {written} files ({bytes} bytes) to {} in {secs:.2} s ({:.0} files/s)",
        out.display(),
        written as f64 / secs.max(1e-9)
    );
    Ok(EXIT_OK)
}
