//! `neff build`: a JSON build spec → a NEFF, manifests generated.

use std::io;
use std::path::{Path, PathBuf};

use clap::Args;
use neff::writer::build_spec::{parse_uuid, BuildSpec};
use neff::writer::HeaderPatch;

use super::progress::Progress;
use super::{report_written, Output, PackagingArgs, PkgArg, WriteArgs};

/// Build a NEFF from a JSON build spec, generating its manifests.
///
/// The manifests (neff.json, the KELF descriptor, each subgraph's def.json and
/// engine JSON, ucode_lib.json) are generated from the spec. The spec names the subgraphs with their inputs, outputs, buffers, weights
/// (.npy v1 or raw), DMA queues and blocks, engine instruction streams, ucode
/// libraries and carveouts; blobs are paths relative to the spec file or inline
/// base64/text. `neff schema build-spec` prints its JSON Schema. The result is
/// packed like `neff pack` (deterministic, atomic) and checked by every loader
/// gate as it is written (--paranoid-readback reads it back instead); a refused
/// NEFF is not written unless --keep-refused (--unchecked also skips the
/// builder's own checks). A spec from `neff unpack --spec` (the lifted form)
/// builds the NEFF it was lifted from, byte for byte, plus any edits.
#[derive(Args, Debug)]
pub struct BuildArgs {
    /// The build spec (JSON).
    spec: PathBuf,
    /// Output file; `-` writes to stdout.
    #[arg(short, long, value_name = "OUT.neff")]
    output: PathBuf,
    #[command(flatten)]
    packaging: PackagingArgs,
    /// Header UUID: an explicit UUID, or `random` (overrides the spec). Default:
    /// derived from the payload.
    #[arg(long, value_name = "UUID|random")]
    uuid: Option<String>,
    /// Header fields as JSON (every key optional), set over the spec's `header`.
    #[arg(long, value_name = "HEADER.json")]
    header: Option<PathBuf>,
    /// Skip the builder's checks before writing (a var with no data, sizes
    /// that disagree); the output still goes through the loader's gates.
    #[arg(long)]
    unchecked: bool,
    /// A folder blobs may be read from besides the spec's own (repeatable).
    /// Without it, a blob path that leads out of the spec's folder (`..`, an
    /// absolute path, a symlink) is refused: a spec cannot read other files.
    #[arg(long, value_name = "DIR")]
    blob_root: Vec<PathBuf>,
    #[command(flatten)]
    write: WriteArgs,
}

pub fn run(args: BuildArgs) -> Result<u8, Box<dyn std::error::Error>> {
    let mut spec = read_spec(&args.spec)?;
    let base = neff::writer::fs::parent_dir(&args.spec);
    neff::writer::build_spec::confine_blobs(&mut spec, base, &args.blob_root)
        .map_err(|e| in_spec(e, &args.spec))?;
    if spec.is_lifted() {
        return run_lifted(spec, &args);
    }
    spec.unchecked |= args.unchecked;
    spec.keep_refused |= args.write.keep_refused;
    if let Some(pkg) = args.packaging.pkg_version {
        spec.pkg_version = Some(pkg.version().value());
    }
    if let Some(uuid) = &args.uuid {
        if uuid == "keep" {
            return Err("--uuid keep: this spec records no UUID (only a lifted spec, from `neff unpack --spec`, does)".into());
        }
        parse_uuid(uuid).map_err(|e| format!("--uuid: {e}"))?;
        spec.uuid = Some(uuid.clone());
        if let Some(header) = spec.header.as_mut() {
            header.uuid = None;
        }
    }
    let mut header_framing = None;
    if let Some(path) = &args.header {
        let file = neff::writer::HeaderFile::from_path(path)?;
        spec.header
            .get_or_insert_with(HeaderPatch::default)
            .merge(&file.header);
        header_framing = file.framing;
    }
    if let Some(preset) = args.packaging.framing.framing {
        spec.framing = Some(neff::writer::build_spec::FramingSpec::Preset(
            preset.name().to_string(),
        ));
    }
    let out = spec_output(&args)?;
    let base = neff::writer::fs::parent_dir(&args.spec);
    let mut builder = spec
        .into_builder(base)
        .map_err(|e| in_spec(e, &args.spec))?
        .fsync(args.write.fsync.fsync());
    if let Some(threads) = args.packaging.threads {
        builder = builder.threads(threads as usize);
    }
    let mut build = builder.build().map_err(|e| in_spec(e, &args.spec))?;
    if let Some(framing) = header_framing {
        // The header file's recorded framing, over the spec's (the spec's
        // preset still chooses the content style and header conventions).
        build.options_mut().framing = framing;
    }
    args.packaging
        .framing
        .apply(&mut build.options_mut().framing);
    if let Some(level) = args.packaging.level {
        build.options_mut().set_level(level);
    }
    build.options_mut().paranoid_readback = args.write.paranoid_readback;
    let progress = Progress::start(
        args.write.quiet || args.write.json,
        || build.input_bytes(),
        "building",
    );
    let build = build.progress(progress.tracker());
    let result = if out.to_stdout {
        build.write_to(&mut io::stdout().lock())
    } else {
        build.write_to_path(&args.output)
    };
    drop(progress);
    report_written(result, &out, "built")
}

/// The lifted form: the payload's members as they are (typed manifests
/// encoded as their sources' bytes or style), the recorded header and framing.
fn run_lifted(spec: BuildSpec, args: &BuildArgs) -> Result<u8, Box<dyn std::error::Error>> {
    let (mut model, mut settings) = spec
        .into_model(neff::writer::fs::parent_dir(&args.spec))
        .map_err(|e| in_spec(e, &args.spec))?;
    if let Some(path) = &args.header {
        let file = neff::writer::HeaderFile::from_path(path)?;
        model
            .header
            .get_or_insert_with(HeaderPatch::default)
            .merge(&file.header);
        if file.framing.is_some() {
            model.framing = file.framing;
        }
    }
    settings.keep_refused |= args.write.keep_refused;
    settings.pkg_version = args
        .packaging
        .pkg_version
        .map(PkgArg::version)
        .or(settings.pkg_version);
    settings.uuid = args.uuid.clone().or(settings.uuid);
    settings.level = args.packaging.level.or(settings.level);
    settings.framing = args.packaging.framing.framing.or(settings.framing);
    if settings.framing.is_some() {
        model.framing = None;
    }
    settings.threads = args.packaging.threads.map(|t| t as usize);
    settings.paranoid_readback = args.write.paranoid_readback;
    settings.no_fsync = !args.write.fsync.fsync();
    let out = spec_output(args)?;
    let base = neff::writer::fs::parent_dir(&args.spec);
    let (packager, mut options) = model
        .prepare(base, &settings)
        .map_err(|e| in_spec(e, &args.spec))?;
    args.packaging.framing.apply(&mut options.framing);
    let progress = Progress::start(
        args.write.quiet || args.write.json,
        || packager.input_bytes(),
        "building",
    );
    options.progress = progress.tracker();
    let result = if out.to_stdout {
        packager.write_to(&mut io::stdout().lock(), &options)
    } else {
        packager.write_to_path(&args.output, &options)
    };
    drop(progress);
    report_written(result, &out, "built")
}

/// The build spec at `path`, or on stdin for `-` (at most as large as a spec
/// file may be; blob paths are then relative to the working folder).
fn read_spec(path: &Path) -> Result<BuildSpec, Box<dyn std::error::Error>> {
    if !super::input::is_stdin(path) {
        return Ok(BuildSpec::from_path(path)?);
    }
    let stdin = std::io::stdin();
    if std::io::IsTerminal::is_terminal(&stdin) {
        return Err(
            "stdin is a terminal: redirect a build spec into it (`neff build - < spec.json`)"
                .into(),
        );
    }
    let limit = neff::writer::fs::SPEC_MAX;
    let mut bytes = Vec::new();
    std::io::Read::read_to_end(
        &mut std::io::Read::take(stdin.lock(), limit + 1),
        &mut bytes,
    )?;
    if bytes.len() as u64 > limit {
        return Err(format!("<stdin>: the build spec is larger than {limit} bytes").into());
    }
    Ok(BuildSpec::from_slice(Path::new("<stdin>"), &bytes)?)
}

/// A writer error located in the spec file, unless it already names a file
/// (a blob's).
fn in_spec(e: neff::writer::Error, spec: &Path) -> neff::writer::Error {
    match e.location().path {
        Some(_) => e,
        None => e.at_path(spec),
    }
}

/// The output of a build: the spec and any --header file are its inputs.
fn spec_output(args: &BuildArgs) -> Result<Output<'_>, Box<dyn std::error::Error>> {
    let mut side_inputs = vec![args.spec.as_path()];
    side_inputs.extend(args.header.as_deref());
    args.write.output(&args.output, &side_inputs)
}
