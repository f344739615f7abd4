//! `neff unpack`: a NEFF → a directory tree.

use std::io;
use std::path::{Path, PathBuf};

use clap::Args;
use neff::loader::Report;
use neff::loader::RuntimeProfile;
use neff::tools::{
    extract, extract_recovering, extract_refused, refusal_after_unpack, ExtractLimits, UnpackReport,
};
use neff::writer::lift::{Content, Model};
use neff::writer::{DeflateProof, Recovered};

use super::progress::Progress;
use super::units::human_bytes;
use super::{print_json, FsyncArgs, EXIT_OK, EXIT_REJECTED};

/// Unpack every member of a NEFF into a directory, byte-exactly.
///
/// One pass: the container gates run as the members are written into a temp dir
/// inside DIR (.neff-unpack.PID.RANDOM), which is moved into place only once every
/// gate passed; on a refusal, an error or a signal it is removed and DIR is as it
/// was (then DIR is synced once). Entries with absolute names or `..` components, symlink, hardlink and
/// device entries, and an archive past a cap (--max-entries, --max-bytes,
/// --max-depth) refuse the whole unpack, each before it is written; so does, with
/// --force, a symlink, FIFO, device or folder in DIR where a member goes. Each file
/// is renamed into place: nothing is ever written outside DIR, through a symlink or
/// into an existing file. Of members with the same path, the last is kept (as the
/// runtime keeps it).
/// `neff pack DIR --header HEADER.json` then rebuilds the same bytes.
#[derive(Args, Debug)]
pub struct UnpackArgs {
    /// The NEFF to unpack (`-` reads stdin, spooled to a temp file first), or a
    /// file that carries one (`wrapped_neff.hlo`, `model.neuron`).
    file: PathBuf,
    /// Destination directory (created if absent; must be empty unless --force).
    #[arg(short, long, value_name = "DIR")]
    output: PathBuf,
    /// Write into a non-empty DIR, replacing files of the same name (by renaming a
    /// new file over them: their other hardlinked names keep their content).
    #[arg(long)]
    force: bool,
    /// Refuse an archive of more than N tar entries (files, folders, repeated names).
    #[arg(long, value_name = "N", default_value_t = ExtractLimits::default().max_entries)]
    max_entries: u64,
    /// Refuse an archive whose files hold more than BYTES bytes (default 64 GiB).
    #[arg(long, value_name = "BYTES", default_value_t = ExtractLimits::default().max_bytes)]
    max_bytes: u64,
    /// Refuse an entry whose path has more than N components.
    #[arg(long, value_name = "N", default_value_t = ExtractLimits::default().max_depth)]
    max_depth: usize,
    /// Unpack even when the payload hash does not match.
    #[arg(long)]
    no_verify_hash: bool,
    /// Also write, as JSON, everything a byte-identical repack needs that the tree
    /// does not carry (a path outside DIR, else refused: `neff pack DIR` would pack
    /// it, or it would replace a member; written atomically): every header field but the
    /// payload-derived ones (and the UUID when it is content-derived), and under
    /// "framing" the tar dialect and per-entry fields, member order, gzip header,
    /// deflate engine and level, padding and hash layout. What cannot be
    /// reproduced is listed under "not_reproduced" and printed.
    #[arg(long, value_name = "HEADER.json")]
    header_out: Option<PathBuf>,
    /// Also write the NEFF as a build spec (the typed model): every manifest the
    /// runtime reads (neff.json, the KELF descriptors, def.json, the engine
    /// manifests, act_info.json) as typed JSON, every other member as a path into
    /// DIR, plus what --header-out records. Edit it, then `neff build SPEC.json -o
    /// OUT` writes the NEFF; unedited, OUT is byte-identical to FILE. A path outside
    /// DIR, else refused.
    #[arg(long, value_name = "SPEC.json")]
    spec: Option<PathBuf>,
    /// Also unpack a NEFF the container gates refuse for its header alone
    /// (unsupported feature bits, G5; a payload hash that does not match, G9),
    /// as a runtime without those checks reads it: for lifting negative
    /// fixtures. The refusal is printed and reported ("refused" in --json); a
    /// lifted spec of it builds with `neff build --keep-refused`.
    #[arg(long)]
    keep_refused: bool,
    /// With --header-out or --spec: re-deflate the whole deflate stream to prove
    /// a repack writes it again (as long as a pack of it). By default the first
    /// 16 MiB are proven, which tells the engine and its parameters apart; `neff
    /// pack --header` and `neff build` then say whether the payload they wrote is
    /// this NEFF's.
    #[arg(long)]
    prove_deflate: bool,
    /// Do not record the NEFF's header and framing in DIR/.neff-unpack.header.json
    /// (what --header-out writes; never packed). By default they are recorded, so
    /// that `neff pack DIR` keeps them; with this flag an older such file in DIR is
    /// removed.
    #[arg(long)]
    no_recorded_header: bool,
    #[command(flatten)]
    fsync: FsyncArgs,
    /// Print a JSON summary on stdout.
    #[arg(long)]
    json: bool,
    /// Print nothing on success.
    #[arg(short, long)]
    quiet: bool,
    /// When FILE carries several NEFFs (an HLO module, a TorchScript zip),
    /// unpack NEFF number N (from 0).
    #[arg(long, value_name = "N")]
    index: Option<usize>,
}

pub fn run(mut args: UnpackArgs) -> Result<u8, Box<dyn std::error::Error>> {
    if !super::input::is_stdin(&args.file) {
        // A file that carries a NEFF: its NEFF, copied to a temp file that
        // errors name as the carrier.
        let resolved = super::input::resolve(&args.file, args.index, args.quiet || args.json)?;
        if resolved.carried.is_none() {
            let shown = args.file.display().to_string();
            return unpack(args, &shown);
        }
        let shown = resolved.name.clone();
        args.file = resolved.path.clone();
        return unpack(args, &shown).map_err(|e| named_as(e, &resolved.path, &shown));
    }
    // The unpack reads the file by path (twice, for --spec): stdin is spooled
    // to a temp file, which errors name as <stdin>.
    let spool = super::input::spool_stdin()?;
    args.file = spool.path();
    let stdin = super::input::STDIN_NAME;
    unpack(args, stdin).map_err(|e| named_as(e, &spool.path(), stdin))
}

/// An error about the spool at `spooled` names `shown` (`<stdin>`, the
/// carrier) instead, keeping its kind and the rest of its location (for
/// `--json`).
fn named_as(
    e: Box<dyn std::error::Error>,
    spooled: &Path,
    shown: &str,
) -> Box<dyn std::error::Error> {
    let stdin = shown;
    let e = match e.downcast::<neff::loader::Error>() {
        Ok(e) if e.location().path.as_deref() == Some(spooled) => {
            return Box::new(e.at_path(stdin))
        }
        Ok(e) => return e,
        Err(e) => e,
    };
    match e.downcast::<neff::writer::Error>() {
        Ok(e) if e.location().path.as_deref() == Some(spooled) => Box::new(e.at_path(stdin)),
        Ok(e) => e,
        Err(e) => e
            .to_string()
            .replace(&spooled.display().to_string(), stdin)
            .into(),
    }
}

/// Unpacks `args.file`, which messages call `shown`.
fn unpack(args: UnpackArgs, shown: &str) -> Result<u8, Box<dyn std::error::Error>> {
    let profile = RuntimeProfile {
        verify_hash: !args.no_verify_hash,
        ..RuntimeProfile::default()
    };
    for path in args.header_out.iter().chain(&args.spec) {
        refuse_inside(path, &args.output)?;
    }
    let progress = Progress::start(
        args.quiet || args.json,
        || std::fs::metadata(&args.file).map_or(0, |m| m.len()),
        "unpacking",
    );
    let limits = ExtractLimits {
        max_entries: args.max_entries,
        max_bytes: args.max_bytes,
        max_depth: args.max_depth,
        progress: progress.counter(),
    };
    // A lift recovers the framing on the unpack's own walk; the verdict of
    // the other gates (for --spec) goes on from its container check.
    let lifting = args.header_out.is_some() || args.spec.is_some();
    let recording = !args.no_recorded_header;
    let proof = DeflateProof::whole_if(args.prove_deflate);
    let (file, out, force) = (args.file.as_path(), args.output.as_path(), args.force);
    let unpacked = match (lifting || recording, args.keep_refused) {
        (true, keep_refused) => {
            extract_recovering(file, out, &profile, force, &limits, keep_refused, proof)
                .map(|r| (r.summary, r.tier1, r.refused, Some(r.recovered)))
        }
        (false, true) => extract_refused(file, out, &profile, force, &limits)
            .map(|(summary, tier1, refused)| (summary, tier1, refused, None)),
        (false, false) => extract(file, out, &profile, force, &limits)
            .map(|(summary, tier1)| (summary, tier1, None, None)),
    };
    drop(progress);
    let (summary, tier1, mut refused, recovered) = match unpacked {
        Ok(done) => done,
        Err(e) => {
            let Some(report) = e.report() else {
                return Err(e.into());
            };
            if args.json {
                print_json(&UnpackReport::refused(report.clone()))?;
            }
            eprintln!("neff: {shown}: {}", report.summary());
            if let Some(detail) = &report.detail {
                eprintln!("  detail: {detail}");
            }
            return Ok(EXIT_REJECTED);
        }
    };
    if !args.quiet {
        for stale in &summary.stale_removed {
            eprintln!(
                "neff: note: removed {}, the temp folder of an unpack that did not finish",
                stale.display()
            );
        }
    }
    let mut repack = None;
    let recovered = match recovered {
        // Only recording the header: a framing that cannot be read is said,
        // and the unpack stands.
        Some(Err(e)) if !lifting => {
            if !args.quiet {
                eprintln!("neff: note: the header is not recorded: {e}");
            }
            None
        }
        other => other.transpose()?,
    };
    let recorded = args.output.join(neff::writer::RECORDED_HEADER);
    let recorded = match (&recovered, recording) {
        (Some(r), true) => {
            // Synced with the tree, just below.
            neff::writer::fs::write_atomic_with(&recorded, r.file.to_json().as_bytes(), false)?;
            Some(recorded)
        }
        _ => {
            // An older record would describe another NEFF: it is ours to remove.
            match std::fs::symlink_metadata(&recorded) {
                Ok(meta) if meta.is_file() => std::fs::remove_file(&recorded)?,
                _ => {}
            }
            None
        }
    };
    args.fsync.sync_folder(&args.output)?;
    if let (Some(path), Some(recovered)) = (&args.header_out, &recovered) {
        let json = recovered.file.to_json();
        neff::writer::fs::write_atomic_with(path, json.as_bytes(), args.fsync.fsync())?;
        repack = Some((path.clone(), recovered.clone()));
    }
    let mut lifted = None;
    if let (Some(path), Some(recovered)) = (&args.spec, &recovered) {
        // A lift also says whether the manifest and section gates refuse it.
        refused = refusal_after_unpack(&args.file, &profile, tier1, refused)?;
        let base = neff::writer::fs::parent_dir(path);
        let (model, notes) = Model::from_tree(&args.output, recovered.file.clone(), Some(base))?;
        let json = model.to_spec_json()?;
        neff::writer::fs::write_atomic_with(path, json.as_bytes(), args.fsync.fsync())?;
        let typed = model
            .payload
            .iter()
            .filter(|m| !matches!(m.content, Content::Data(_)))
            .count();
        lifted = Some((path, model.payload.len(), typed, notes));
    }
    if args.json {
        let mut report = UnpackReport::unpacked(&summary);
        if let Some(r) = &recovered {
            report.recovered(r);
        }
        report.header_out = repack.as_ref().map(|(p, _)| p.display().to_string());
        report.recorded_header = recorded.as_ref().map(|p| p.display().to_string());
        if let Some((path, _, typed, notes)) = &lifted {
            report.spec = Some(path.display().to_string());
            report.typed_members = Some(*typed);
            report.lift_notes = Some(notes.0.clone());
        }
        report.refused = refused;
        print_json(&report)?;
    } else if !args.quiet {
        eprintln!(
            "unpacked {} files and {} folders ({}) into {}",
            summary.files,
            summary.directories,
            human_bytes(summary.bytes),
            args.output.display()
        );
        if let Some(path) = &recorded {
            eprintln!(
                "recorded the header and framing in {}: `neff pack {}` keeps them",
                path.display(),
                args.output.display()
            );
        }
        // The gates refuse it: pack and build write it only when told to.
        let keep = if refused.is_some() {
            " --keep-refused"
        } else {
            ""
        };
        if let Some((path, r)) = &repack {
            if r.exact {
                eprintln!(
                    "wrote {}: `neff pack {} --header {}{keep}` rebuilds this NEFF byte for byte{}",
                    path.display(),
                    args.output.display(),
                    path.display(),
                    proof_caveat(r)
                );
            } else {
                eprintln!(
                    "wrote {}: a repack will not be byte-identical:",
                    path.display()
                );
                for note in &r.file.not_reproduced {
                    eprintln!("  - {note}");
                }
            }
        }
        if let Some(report) = &refused {
            print_refusal(report, lifted.is_some());
        }
        if let (Some((path, members, typed, notes)), Some(r)) = (&lifted, &recovered) {
            for note in &notes.0 {
                eprintln!("neff: note: {note}");
            }
            let exact = match r.exact {
                true => format!(" byte for byte{}", proof_caveat(r)),
                false => " (not byte for byte: the framing cannot be reproduced)".into(),
            };
            // build reads blobs from the spec's folder only, unless told.
            let spec_dir = neff::writer::fs::parent_dir(path);
            let inside = match (spec_dir.canonicalize(), args.output.canonicalize()) {
                (Ok(dir), Ok(tree)) => tree.starts_with(dir),
                _ => true,
            };
            let root = match inside {
                true => String::new(),
                false => format!(" --blob-root {}", args.output.display()),
            };
            eprintln!(
                "wrote {}: {members} members, {typed} of them typed manifests; `neff build {} -o OUT{keep}{root}` rebuilds this NEFF{exact}",
                path.display(),
                path.display(),
            );
        }
    }
    Ok(EXIT_OK)
}

/// What a byte-for-byte claim rests on when the deflate stream was proven
/// only in part (empty when proven whole).
fn proof_caveat(r: &Recovered) -> String {
    match r.deflate {
        Some(d) if !d.whole() => format!(
            " (its deflate stream proven over the first {} of {}, --prove-deflate proves it all; the rebuild says whether its payload is this NEFF's)",
            human_bytes(d.compared),
            human_bytes(d.stream)
        ),
        _ => String::new(),
    }
}

/// Refuses a `--header-out` path that is, or (as a symlink) points to, a path
/// inside `dir`: a member it would replace, or a file `neff pack DIR` would pack.
/// Says that the gates refuse the NEFF just unpacked (or lifted).
fn print_refusal(report: &Report, lifted: bool) {
    eprintln!(
        "neff: note: the gates refuse this NEFF: {}",
        report.summary()
    );
    if let Some(detail) = &report.detail {
        eprintln!("  detail: {detail}");
    }
    if lifted {
        eprintln!("  (`neff build SPEC --keep-refused` rebuilds it as it is)");
    }
}

fn refuse_inside(path: &Path, dir: &Path) -> Result<(), Box<dyn std::error::Error>> {
    let dir = resolve(dir)?;
    let parent = neff::writer::fs::parent_dir(path);
    let written = resolve(parent)?.join(path.file_name().unwrap_or_default());
    // A symlink is replaced, not followed, but it must not point inside DIR either.
    let pointed = match std::fs::read_link(path) {
        Ok(target) => resolve(&parent.join(target))?,
        Err(_) => written.clone(),
    };
    for landing in [written, pointed] {
        if landing.starts_with(&dir) {
            return Err(format!(
                "--header-out {} is inside the destination {} (as {}): give a path outside it",
                path.display(),
                dir.display(),
                landing.display()
            )
            .into());
        }
    }
    Ok(())
}

/// `path` made absolute, with the symlinks of its longest existing ancestor
/// resolved and the missing rest appended.
fn resolve(path: &Path) -> io::Result<PathBuf> {
    let absolute = std::path::absolute(path)?;
    let mut existing = absolute.as_path();
    let mut rest = Vec::new();
    loop {
        if let Ok(found) = existing.canonicalize() {
            return Ok(rest.iter().rev().fold(found, |p, c| p.join(c)));
        }
        match (existing.parent(), existing.file_name()) {
            (Some(parent), Some(name)) => {
                rest.push(name);
                existing = parent;
            }
            _ => return Ok(absolute),
        }
    }
}
