//! `neff unpack`: a NEFF → a directory tree.

use std::path::PathBuf;

use clap::Args;
use neff::loader::RuntimeProfile;
use neff::loader::{extract, ExtractError};
use neff::writer::recover_framing;

use super::{print_json, EXIT_OK, EXIT_REJECTED};

/// Unpack every member of a NEFF into a directory, byte-exactly.
///
/// The container gates run first. Entries with absolute names or `..` components,
/// and symlink, hardlink and device entries, refuse the whole unpack before anything
/// is written; nothing is ever written outside DIR or through a symlink.
/// `neff pack DIR --header HEADER.json` then rebuilds the same bytes.
#[derive(Args, Debug)]
pub struct UnpackArgs {
    /// The NEFF to unpack.
    file: PathBuf,
    /// Destination directory (created if absent; must be empty unless --force).
    #[arg(short, long, value_name = "DIR")]
    output: PathBuf,
    /// Write into a non-empty DIR, replacing files of the same name.
    #[arg(long)]
    force: bool,
    /// Unpack even when the payload hash does not match.
    #[arg(long)]
    no_verify_hash: bool,
    /// Also write, as JSON, everything a byte-identical repack needs that the tree
    /// does not carry (give a path outside DIR): every header field but the
    /// payload-derived ones (and the UUID when it is content-derived), and under
    /// "framing" the tar dialect and per-entry fields, member order, gzip header,
    /// deflate engine and level, padding and hash layout. What cannot be
    /// reproduced is listed under "not_reproduced" and printed.
    #[arg(long, value_name = "HEADER.json")]
    header_out: Option<PathBuf>,
    /// Print a JSON summary on stdout.
    #[arg(long)]
    json: bool,
}

pub fn run(args: UnpackArgs) -> Result<u8, Box<dyn std::error::Error>> {
    let profile = RuntimeProfile {
        verify_hash: !args.no_verify_hash,
        ..RuntimeProfile::default()
    };
    let (summary, _container) = match extract(&args.file, &args.output, &profile, args.force) {
        Ok(done) => done,
        Err(ExtractError::Rejected(report)) => {
            eprintln!("neff: {}: {}", args.file.display(), report.summary());
            if let Some(detail) = &report.detail {
                eprintln!("  detail: {detail}");
            }
            return Ok(EXIT_REJECTED);
        }
        Err(e) => return Err(e.into()),
    };
    let mut repack = None;
    if let Some(path) = &args.header_out {
        let recovered = recover_framing(&args.file)?;
        neff::writer::write_atomic(path, recovered.file.to_json().as_bytes())?;
        repack = Some((path.clone(), recovered));
    }
    if args.json {
        let mut value = serde_json::to_value(&summary)?;
        if let (Some(object), Some((path, r))) = (value.as_object_mut(), &repack) {
            object.insert("header_out".into(), path.display().to_string().into());
            object.insert("byte_identical_repack".into(), r.exact.into());
            object.insert(
                "not_reproduced".into(),
                serde_json::to_value(&r.file.not_reproduced)?,
            );
        }
        print_json(&value)?;
    } else {
        eprintln!(
            "unpacked {} files and {} folders ({} bytes) into {}",
            summary.files,
            summary.directories,
            summary.bytes,
            args.output.display()
        );
        if let Some((path, r)) = &repack {
            if r.exact {
                eprintln!(
                    "wrote {}: `neff pack {} --header {}` rebuilds this NEFF byte for byte",
                    path.display(),
                    args.output.display(),
                    path.display()
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
    }
    Ok(EXIT_OK)
}
