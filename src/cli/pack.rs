//! `neff pack`: a directory tree → a NEFF.

use std::io;
use std::path::{Path, PathBuf};

use clap::Args;
use neff::writer::{HeaderFile, PackOptions, PackSettings, Packager};

use super::progress::Progress;
use super::{parse_features, report_written, PackagingArgs, PkgArg, WriteArgs};

/// Pack a directory tree into a NEFF, as it is (like `neuron-packager create`).
///
/// By default members are written in byte-sorted path order with a directory entry
/// for every folder, in deterministic GNU tar framing (mtime 0, uid/gid 0, owner
/// nobody), then gzip-compressed (pkg 2) or left raw (pkg 1) and hashed; `--framing
/// neuronx-cc` writes exactly as the compiler does instead. The same tree and flags
/// always give the same bytes. The output is written to a temp file beside OUT,
/// checked by the loader's gates as it is written (the same gates `neff verify`
/// runs, on the bytes as they go to the file; then the file's length, header and
/// first and last 4 KiB are compared with what was written; --paranoid-readback
/// reads the whole file back instead), fsynced, and only then renamed into place; on an
/// error, Ctrl-C, SIGTERM or SIGHUP the temp file is removed and OUT is untouched
/// (one left by `kill -9` is removed by the next run writing there). OUT may not
/// be inside DIR.
///
/// A tree `neff unpack` wrote holds the NEFF's header and framing in
/// DIR/.neff-unpack.header.json: without --header, pack keeps them (flags still win),
/// so `unpack` then `pack` rebuilds the NEFF; that file is never packed.
#[derive(Args, Debug)]
pub struct PackArgs {
    /// The directory to pack.
    dir: PathBuf,
    /// Output file; `-` writes to stdout (the NEFF is spooled to a temp file
    /// first, because the header is only known once the payload is hashed).
    #[arg(short, long, value_name = "OUT.neff")]
    output: PathBuf,
    #[command(flatten)]
    packaging: PackagingArgs,
    /// Model name stored in the header (at most 255 bytes).
    #[arg(long)]
    name: Option<String>,
    /// Header UUID: an explicit UUID, `random`, or `keep` (the --header file's UUID
    /// even after an edit). Default: the --header file's UUID while the payload is
    /// the one it was recorded from, else derived from the payload's SHA-256, so
    /// builds are reproducible and different contents never share one.
    #[arg(long, value_name = "UUID|random|keep")]
    uuid: Option<String>,
    /// feature_bits: comma-separated numbers (decimal, 0x hex or 0b binary) and
    /// feature names, with or without the `neff_feature_` prefix, any case
    /// (e.g. `neff_feature_vnc,custom_ops` or `0x400,custom_ops`).
    #[arg(long, value_name = "MASK|NAMES", value_parser = parse_features)]
    feature_bits: Option<u64>,
    /// neff_version_major (default 2).
    #[arg(long)]
    major: Option<u64>,
    /// neff_version_minor (default 0).
    #[arg(long)]
    minor: Option<u64>,
    /// neff_build_version string (default names this tool and its version).
    #[arg(long)]
    build_version: Option<String>,
    /// vnc_size (default 1).
    #[arg(long)]
    vnc_size: Option<u32>,
    /// requested_tpb_count (default 1).
    #[arg(long)]
    requested_tpb_count: Option<u32>,
    /// Header fields as JSON (the shape `neff inspect --json` prints under
    /// "header"; every key optional), e.g. from `neff unpack --header-out`, whose
    /// "framing" key (tar fields, member order, gzip header, deflate, padding, hash
    /// layout) makes the repack byte-identical. The flags above win over it. A
    /// pkg_version of 1 or 2 here selects the packaging; any other is written as
    /// it is (for a negative fixture).
    #[arg(long, value_name = "HEADER.json")]
    header: Option<PathBuf>,
    /// Ignore the header `neff unpack` recorded in DIR (.neff-unpack.header.json):
    /// without --header, a pack of an unpacked tree otherwise keeps the NEFF's header
    /// fields and framing from it (the file itself is never packed).
    #[arg(long, conflicts_with = "header")]
    no_recorded_header: bool,
    #[command(flatten)]
    write: WriteArgs,
}

pub fn run(args: PackArgs) -> Result<u8, Box<dyn std::error::Error>> {
    let recorded = match (&args.header, args.no_recorded_header) {
        (None, false) => HeaderFile::recorded_in(&args.dir)?,
        _ => None,
    };
    let file = match (&args.header, recorded) {
        (Some(path), _) => HeaderFile::from_path(path)?,
        (None, Some((path, file))) => {
            if !(args.write.quiet || args.write.json) {
                eprintln!(
                    "neff: note: keeping the header and framing `neff unpack` recorded in {} (--no-recorded-header ignores it)",
                    path.display()
                );
            }
            file
        }
        (None, None) => HeaderFile::default(),
    };
    for note in &file.not_reproduced {
        if !args.write.quiet {
            eprintln!("neff: note: this repack cannot match the original byte for byte: {note}");
        }
    }
    let settings = PackSettings {
        pkg_version: args.packaging.pkg_version.map(PkgArg::version),
        framing: args.packaging.framing.framing,
        level: args.packaging.level,
        uuid: args.uuid.clone(),
        name: args.name.clone(),
        build_version: args.build_version.clone(),
        feature_bits: args.feature_bits,
        major: args.major,
        minor: args.minor,
        vnc_size: args.vnc_size,
        requested_tpb_count: args.requested_tpb_count,
        threads: args.packaging.threads.map(|t| t as usize),
        keep_refused: args.write.keep_refused,
        paranoid_readback: args.write.paranoid_readback,
        no_fsync: !args.write.fsync.fsync(),
    };
    let mut options = settings.options(file)?;
    if let Some(note) = neff::writer::infer_virtual_core(&args.dir, &mut options) {
        if !(args.write.quiet || args.write.json) {
            eprintln!("neff: note: {note}");
        }
    }
    args.packaging.framing.apply(&mut options.framing);
    let side_inputs: Vec<&Path> = args.header.iter().map(PathBuf::as_path).collect();
    let out = args.write.output(&args.output, &side_inputs)?;
    let packager = Packager::from_dir(&args.dir)?;
    let progress = Progress::start(
        args.write.quiet || args.write.json,
        || packager.input_bytes(),
        "packing",
    );
    let options = PackOptions {
        progress: progress.tracker(),
        ..options
    };
    let result = if out.to_stdout {
        packager.write_to(&mut io::stdout().lock(), &options)
    } else {
        packager.write_to_path(&args.output, &options)
    };
    drop(progress);
    report_written(result, &out, "wrote")
}
