//! Command-line interface: argument definitions and dispatch.

mod barrier;
mod build;
mod cache;
mod cat;
mod corpus;
mod coverage;
mod diff;
pub mod documents;
mod extract;
mod fixtures;
mod generated;
mod input;
mod inspect;
mod pack;
mod progress;
mod redact;
mod schema;
mod shrink;
pub mod signals;
mod units;
mod unpack;
mod verify;
mod weights;

use std::process::ExitCode;

use clap::builder::{PossibleValuesParser, TypedValueParser};
use clap::{CommandFactory, FromArgMatches, Parser, Subcommand};
use neff::schema::framing::DeflateEngine;
use neff::schema::{FramingPreset, HashLayout};

/// Exit status: success, or the NEFF was accepted.
pub const EXIT_OK: u8 = 0;
/// Exit status: a loader gate refused the NEFF.
pub const EXIT_REJECTED: u8 = 1;
/// Exit status: bad usage or an I/O error.
pub const EXIT_ERROR: u8 = 2;

/// The overwrite policy of every command that writes, shown in its `--help`.
const OUTPUT_POLICY: &str =
    "Outputs: a file is written to a temp file beside it and renamed into place \
(an existing file is replaced whole; on an error or a signal it is left untouched); \
a folder is created if absent and must be empty unless --force.";

/// `--no-fsync`, on every command that writes a file or a folder.
#[derive(clap::Args, Debug, Clone, Copy)]
pub struct FsyncArgs {
    /// Skip the fsyncs: faster, but a power cut soon after may lose outputs.
    ///
    /// By default a file is fsynced before it is renamed into place and its
    /// folder after; a folder of outputs is synced once, at the end. Without,
    /// an error, Ctrl-C or a crash of this process still never leaves a partly
    /// written file under an output's name, but after a power cut or an OS
    /// crash soon after, an output may be the old file, the new one, or (on
    /// some filesystems) an empty file.
    #[arg(long)]
    no_fsync: bool,
}

impl FsyncArgs {
    /// Whether outputs are fsynced (no `--no-fsync`).
    pub fn fsync(self) -> bool {
        !self.no_fsync
    }

    /// The folder half: makes everything written under `dir` durable at once
    /// (nothing with `--no-fsync`).
    pub fn sync_folder(self, dir: &std::path::Path) -> std::io::Result<()> {
        if self.no_fsync {
            return Ok(());
        }
        neff::writer::fs::sync_tree(dir)
    }
}

/// `neff --version`: this tool's version and the runtime the gates model.
static VERSION: std::sync::LazyLock<String> = std::sync::LazyLock::new(|| {
    format!(
        "{} (gates model Neuron runtime {}, ucode ABI {})",
        env!("CARGO_PKG_VERSION"),
        neff::loader::RUNTIME_VERSION,
        neff::loader::UCODE_ABI_2_31
    )
});

/// Write NEFF files and check them against the Neuron runtime loader's gates.
#[derive(Parser, Debug)]
#[command(
    name = "neff",
    version = VERSION.as_str(),
    about,
    long_about = None,
    after_help = "Exit status: 0 success or accepted, 1 refused by a loader gate, 2 usage or I/O error.\n\
With --json, stdout holds exactly one JSON document, {\"error\": {...}} on an error.\n\
Run `neff <COMMAND> --help` for each command's flags."
)]
pub struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand, Debug)]
enum Command {
    #[command(visible_alias = "create", after_help = OUTPUT_POLICY)]
    Pack(pack::PackArgs),
    #[command(after_help = OUTPUT_POLICY)]
    Unpack(unpack::UnpackArgs),
    #[command(visible_alias = "info")]
    Inspect(inspect::InspectArgs),
    Verify(verify::VerifyArgs),
    #[command(after_help = OUTPUT_POLICY)]
    Build(build::BuildArgs),
    Schema(schema::SchemaArgs),
    #[command(after_help = OUTPUT_POLICY)]
    Barrier(barrier::BarrierArgs),
    #[command(after_help = OUTPUT_POLICY)]
    Corpus(corpus::CorpusArgs),
    Coverage(coverage::CoverageArgs),
    #[command(after_help = OUTPUT_POLICY)]
    Fixtures(fixtures::FixturesArgs),
    Diff(diff::DiffArgs),
    Cat(cat::CatArgs),
    #[command(after_help = OUTPUT_POLICY)]
    Extract(extract::ExtractArgs),
    #[command(after_help = OUTPUT_POLICY)]
    Weights(weights::WeightsArgs),
    #[command(after_help = OUTPUT_POLICY)]
    Redact(redact::RedactArgs),
    Shrink(shrink::ShrinkArgs),
    Cache(cache::CacheArgs),
    Completions(generated::CompletionsArgs),
    #[command(after_help = OUTPUT_POLICY)]
    Man(generated::ManArgs),
}

/// Parses the command line; also says whether the command asked for `--json`.
pub fn parse() -> Result<(Cli, bool), clap::Error> {
    let matches = Cli::command().try_get_matches()?;
    let json = wants_json(&matches);
    Ok((Cli::from_arg_matches(&matches)?, json))
}

/// Whether the innermost subcommand (or one on the way to it) has `--json` set.
fn wants_json(matches: &clap::ArgMatches) -> bool {
    matches.subcommand().is_some_and(|(_, sub)| {
        matches!(sub.try_get_one::<bool>("json"), Ok(Some(true))) || wants_json(sub)
    })
}

/// Runs a parsed command line.
pub fn run(cli: Cli) -> Result<ExitCode, Box<dyn std::error::Error>> {
    let code = match cli.command {
        Command::Pack(args) => pack::run(args)?,
        Command::Unpack(args) => unpack::run(args)?,
        Command::Inspect(args) => inspect::run(args)?,
        Command::Verify(args) => verify::run(args)?,
        Command::Build(args) => build::run(args)?,
        Command::Schema(args) => schema::run(args)?,
        Command::Barrier(args) => barrier::run(args)?,
        Command::Corpus(args) => corpus::run(args)?,
        Command::Coverage(args) => coverage::run(args)?,
        Command::Fixtures(args) => fixtures::run(args)?,
        Command::Diff(args) => diff::run(args)?,
        Command::Cat(args) => cat::run(args)?,
        Command::Extract(args) => extract::run(args)?,
        Command::Weights(args) => weights::run(args)?,
        Command::Redact(args) => redact::run(args)?,
        Command::Shrink(args) => shrink::run(args)?,
        Command::Cache(args) => cache::run(args)?,
        Command::Completions(args) => generated::completions(args)?,
        Command::Man(args) => generated::man(args)?,
    };
    Ok(ExitCode::from(code))
}

/// Creates `dir` if absent; refuses it when it holds anything, unless `force`
/// (the folder half of [`OUTPUT_POLICY`]).
pub fn prepare_output_dir(dir: &std::path::Path, force: bool) -> Result<(), String> {
    std::fs::create_dir_all(dir).map_err(|e| format!("cannot create {}: {e}", dir.display()))?;
    let mut entries =
        std::fs::read_dir(dir).map_err(|e| format!("cannot read {}: {e}", dir.display()))?;
    if !force && entries.next().is_some() {
        return Err(format!(
            "{} is not empty: pass --force to write into it",
            dir.display()
        ));
    }
    Ok(())
}

pub use neff::loader::{parse_features, parse_mask};

/// The runtime a check simulates, for the commands that check NEFFs besides
/// `verify` (`cache verify`, `shrink`'s built-in predicates).
#[derive(clap::Args, Debug)]
pub struct RuntimeArgs {
    /// The instance the runtime runs on (`all`: every arch a NEFF targets).
    #[arg(long, default_value = "all", value_parser = ["sunda", "cayman", "mariana", "all"])]
    instance_arch: String,
    /// Simulate NEURON_RT_ALLOW_LEGACY_NEFF=1.
    #[arg(long)]
    allow_legacy_neff: bool,
    /// Skip the payload hash check.
    #[arg(long)]
    no_verify_hash: bool,
}

impl RuntimeArgs {
    /// The runtime these flags describe.
    pub fn runtime(&self) -> neff::loader::Runtime {
        neff::loader::Runtime {
            scope: neff::loader::ArchScope::parse(&self.instance_arch)
                .unwrap_or(neff::loader::ArchScope::All),
            profile: neff::loader::RuntimeProfile {
                allow_legacy_neff: self.allow_legacy_neff,
                verify_hash: !self.no_verify_hash,
                ..neff::loader::RuntimeProfile::default()
            },
        }
    }
}

/// The threads of a `--check` (`--threads`, else the available cores).
pub fn check_threads(threads: Option<u64>) -> usize {
    threads.map_or_else(
        || std::thread::available_parallelism().map_or(1, |n| n.get()),
        |n| n as usize,
    )
}

/// Prints what a `--check` of `manifest` found; the exit code: 0 when every
/// verdict is the recorded one, 1 when one differs.
pub fn report_checked(
    checked: &neff::smith::check::Checked,
    manifest: &std::path::Path,
    quiet: bool,
) -> u8 {
    for d in &checked.differences {
        eprintln!(
            "neff: {}: under `{}`: expected {}, got {}",
            d.file, d.runtime, d.expected, d.got
        );
    }
    if checked.differences.is_empty() {
        if !quiet {
            eprintln!(
                "checked {} entries of {}: every verdict is the recorded one",
                checked.entries,
                manifest.display()
            );
        }
        return EXIT_OK;
    }
    eprintln!(
        "{} of {} entries of {} differ",
        checked.differences.len(),
        checked.entries,
        manifest.display()
    );
    EXIT_REJECTED
}

/// Prints a value as pretty JSON on stdout.
pub fn print_json<T: serde::Serialize>(value: &T) -> Result<(), Box<dyn std::error::Error>> {
    println!("{}", serde_json::to_string_pretty(value)?);
    Ok(())
}

/// `-q` of `verify` and `inspect`: nothing when accepted, the refusal's
/// summary on stderr.
pub fn quiet_verdict(file: &std::path::Path, report: &neff::loader::Report) {
    if !report.accepted {
        eprintln!("neff: {}: {}", file.display(), report.summary());
    }
}

/// Where `pack` and `build` write a NEFF (`-` is stdout), and how they report it.
pub struct Output<'a> {
    path: &'a std::path::Path,
    to_stdout: bool,
    json: bool,
    quiet: bool,
}

impl<'a> Output<'a> {
    /// Refuses stdout when it is a terminal, and a file that is one of the
    /// `inputs` read before writing (a spec, a header file).
    pub fn new(
        path: &'a std::path::Path,
        json: bool,
        quiet: bool,
        inputs: &[&std::path::Path],
    ) -> Result<Self, Box<dyn std::error::Error>> {
        let to_stdout = path.as_os_str() == "-";
        if to_stdout {
            refuse_terminal("a binary NEFF")?;
        }
        if !to_stdout {
            let guard = neff::writer::fs::OutputGuard::new(path);
            inputs.iter().try_for_each(|input| guard.check(input))?;
        }
        Ok(Output {
            path,
            to_stdout,
            json,
            quiet,
        })
    }
}

/// Refuses to write binary `what` to stdout when it is a terminal.
fn refuse_terminal(what: &str) -> Result<(), String> {
    if std::io::IsTerminal::is_terminal(&std::io::stdout()) {
        return Err(format!(
            "refusing to write {what} to a terminal: redirect stdout or give -o FILE"
        ));
    }
    Ok(())
}

/// Writes a small binary output: `-` is stdout (refused when it is a
/// terminal), anything else a file written atomically (and fsynced unless
/// `--no-fsync`).
pub fn write_binary(
    path: &std::path::Path,
    bytes: &[u8],
    fsync: FsyncArgs,
) -> Result<(), Box<dyn std::error::Error>> {
    if path.as_os_str() != "-" {
        return Ok(neff::writer::fs::write_atomic_with(
            path,
            bytes,
            fsync.fsync(),
        )?);
    }
    refuse_terminal("binary output")?;
    let mut out = std::io::stdout().lock();
    std::io::Write::write_all(&mut out, bytes)?;
    Ok(std::io::Write::flush(&mut out)?)
}

/// The flags that change what a refusal with this gate is about, where one
/// flag settles it.
fn fixing_flags(report: &neff::loader::Report) -> Option<&'static str> {
    use neff::loader::Gate;
    match report.gate? {
        Gate::G29a | Gate::G29b => {
            Some("--vnc-size N --feature-bits vnc sets the virtual core size to the N graphs")
        }
        Gate::G5 => Some("--feature-bits sets the header's feature bits"),
        Gate::G16 | Gate::G17 => Some("the KELF descriptor's `target` chooses the arch"),
        _ => None,
    }
}

/// Reports the result of writing a NEFF (`pack`, `build`): a refusal by the
/// read-back gates is exit 1 with the gate and how to force it; success prints
/// a summary on stderr, or the header and verdict as JSON on stdout.
pub fn report_written(
    result: Result<neff::writer::PackOutcome, neff::writer::Error>,
    out: &Output<'_>,
    verb: &str,
) -> Result<u8, Box<dyn std::error::Error>> {
    let (output, to_stdout, json, quiet) = (out.path, out.to_stdout, out.json, out.quiet);
    let outcome = match result {
        Ok(outcome) => outcome,
        Err(e) => {
            let Some(report) = e.report() else {
                return Err(e.into());
            };
            if json {
                let file = output.display().to_string();
                print_json(&documents::WrittenReport::refused(file, report.clone()))?;
            }
            eprintln!(
                "neff: {}: not written: the loader refuses it",
                output.display()
            );
            eprintln!("  {}", report.summary());
            if let Some(detail) = &report.detail {
                eprintln!("  detail: {detail}");
            }
            if let Some(fix) = fixing_flags(report) {
                eprintln!("  ({fix}; or pass --keep-refused to write it anyway)");
            } else {
                eprintln!("  (pass --keep-refused to write it anyway)");
            }
            return Ok(EXIT_REJECTED);
        }
    };
    if !quiet && !json {
        for note in &outcome.notes {
            eprintln!("neff: note: {note}");
        }
    }
    if json && !to_stdout {
        let file = output.display().to_string();
        print_json(&documents::WrittenReport::written(file, outcome))?;
    } else if !quiet {
        let h = &outcome.header;
        eprintln!(
            "{verb} {}: {} bytes, {} files, {} folders, pkg {}, uuid {}, feature_bits {:#x}",
            output.display(),
            1024 + h.data_size,
            outcome.files,
            outcome.directories,
            h.pkg_version,
            h.uuid,
            h.feature_bits
        );
        eprintln!("  {}", outcome.report.summary());
        match outcome.payload_matches_source {
            Some(true) => eprintln!("  the payload is the lifted NEFF's, byte for byte"),
            Some(false) => eprintln!("  the payload differs from the lifted NEFF's"),
            None => {}
        }
    }
    Ok(EXIT_OK)
}

/// How `pack` and `build` package the payload.
#[derive(clap::Args, Debug, Clone)]
pub struct PackagingArgs {
    /// Packaging: 2 = gzip tar + MD5 (what current compilers emit), 1 = raw tar + SHA-256
    /// (default: the spec's or the --header file's, else 2).
    #[arg(long, value_enum)]
    pub pkg_version: Option<PkgArg>,
    /// gzip compression level, 1 (fastest, the compiler's choice) to 9 (default:
    /// the spec's, else 1).
    #[arg(long, value_parser = clap::value_parser!(u32).range(1..=9))]
    pub level: Option<u32>,
    #[command(flatten)]
    pub framing: FramingArgs,
    /// Compression threads (default: the available cores). The output is the
    /// same for any count.
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u64).range(1..=256))]
    pub threads: Option<u64>,
}

/// How `pack` and `build` check, write and report their output.
#[derive(clap::Args, Debug, Clone, Copy)]
pub struct WriteArgs {
    /// Keep the NEFF even when the loader's gates refuse it (for negative
    /// fixtures); otherwise a refused NEFF is not written.
    #[arg(long)]
    pub keep_refused: bool,
    /// Read the whole output back through the loader's gates (inflate and hash it
    /// again) instead of checking it as it is written.
    #[arg(long)]
    pub paranoid_readback: bool,
    #[command(flatten)]
    pub fsync: FsyncArgs,
    /// Print the header and the loader's verdict as JSON on stdout.
    #[arg(long)]
    pub json: bool,
    /// Print nothing on success.
    #[arg(short, long)]
    pub quiet: bool,
}

impl WriteArgs {
    /// Where the NEFF goes, as these flags say to report it; `side_inputs`
    /// are the other files the command reads (never to be overwritten).
    pub fn output<'a>(
        &self,
        path: &'a std::path::Path,
        side_inputs: &[&std::path::Path],
    ) -> Result<Output<'a>, Box<dyn std::error::Error>> {
        Output::new(path, self.json, self.quiet, side_inputs)
    }
}

/// `--pkg-version 1|2`, shared by `pack` and `build`.
#[derive(Clone, Copy, Debug, clap::ValueEnum)]
pub enum PkgArg {
    // Raw tar + SHA-256 (not a doc comment: it would change --help).
    #[value(name = "1")]
    One,
    // gzip tar + MD5.
    #[value(name = "2")]
    Two,
}

impl PkgArg {
    /// The packaging version.
    pub fn version(self) -> neff::schema::PkgVersion {
        match self {
            PkgArg::One => neff::schema::PkgVersion::Sha256Tar,
            PkgArg::Two => neff::schema::PkgVersion::Md5Gzip,
        }
    }
}

/// `--framing` and its per-field overrides, shared by `pack` and `build`.
#[derive(clap::Args, Debug, Clone)]
pub struct FramingArgs {
    /// Framing preset: `gnu` (default: GNU tar with directory entries, owner nobody,
    /// mtime 0, parallel-libdeflate level 1, standard MD5 then '0' x 16; the framing of the
    /// runtime's embedded fixture), `neuronx-cc` (exactly as neuronx-cc 2.21+ writes,
    /// with gzip MTIME 0: POSIX ustar, uid/gid 1000, no directory entries, neff.json
    /// last, classic zlib level 1, padded to 10240, MD5 word-reversed; matches
    /// neuronx-cc 2.18 to 2.24), `neuronx-cc-2.16` (as neuronx-cc 2.16 and
    /// earlier 2.x: standard MD5, neff.json sorted) or `neuronx-cc-2.27` (as
    /// neuronx-cc 2.27's new packager: uid/gid 0 with no owner names, checksums
    /// ending in two NULs, no padding, standard MD5, the UUID equal to the MD5).
    #[arg(long, value_name = "NAME", value_parser = PossibleValuesParser::new(FramingPreset::ALL.map(FramingPreset::name))
        .map(|s| FramingPreset::parse(&s).unwrap_or_default()))]
    pub framing: Option<FramingPreset>,
    /// Override the preset's hash layout: `standard` or `word-reversed` (each 4-byte
    /// word of the digest byte-reversed, as neuronx-cc 2.18+ writes).
    #[arg(long, value_name = "LAYOUT", value_parser = PossibleValuesParser::new(HashLayout::ALL.map(HashLayout::name))
        .map(|s| HashLayout::parse(&s).unwrap_or(HashLayout::Standard)))]
    pub hash_layout: Option<HashLayout>,
    /// Override the preset's deflate engine: `parallel-libdeflate` (this tool's
    /// fastest stream, level 1 only: libdeflate on 32 KiB pieces), `parallel`
    /// (this tool's stream at any level: zlib-rs on 256 KiB or 1 MiB chunks) or
    /// `zlib` (classic zlib, one stream: the compilers' exact bytes).
    #[arg(long, value_name = "ENGINE", value_parser = PossibleValuesParser::new(DeflateEngine::ALL.map(DeflateEngine::name))
        .map(|s| DeflateEngine::parse(&s).unwrap_or(DeflateEngine::Parallel)))]
    pub deflate: Option<DeflateEngine>,
    /// Override the gzip header's MTIME (seconds; default 0, for reproducible output).
    #[arg(long, value_name = "SECONDS")]
    pub gzip_mtime: Option<u32>,
}

impl FramingArgs {
    /// Applies the per-field overrides to `framing`.
    pub fn apply(&self, framing: &mut neff::schema::Framing) {
        if let Some(layout) = self.hash_layout {
            framing.hash.layout = layout;
        }
        if let Some(engine) = self.deflate {
            framing.gzip.deflate.engine = engine;
        }
        if let Some(mtime) = self.gzip_mtime {
            framing.gzip.mtime = mtime;
        }
    }
}
