//! `neff unpack`: a NEFF → a directory tree.

use std::path::PathBuf;

use clap::Args;
use neff::loader::extract::{extract, ExtractError};
use neff::loader::RuntimeProfile;
use neff::schema::Uuid;
use neff::writer::HeaderPatch;
use sha2::{Digest, Sha256};

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
    /// Also write the header fields a repack needs as JSON (give a path outside
    /// DIR). Payload-derived fields are left out; so is the UUID when it is the
    /// content-derived one.
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
    let (summary, container) = match extract(&args.file, &args.output, &profile, args.force) {
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
    if let Some(path) = &args.header_out {
        let fields = container.header.fields();
        let mut patch = HeaderPatch::from_fields(&fields);
        patch.data_size = None;
        patch.hash = None;
        if fields.uuid == content_uuid(&args.file, fields.data_size)? {
            patch.uuid = None;
        }
        let text = serde_json::to_string_pretty(&patch)? + "\n";
        neff::writer::atomic::write_atomic(path, text.as_bytes())?;
    }
    if args.json {
        print_json(&summary)?;
    } else {
        eprintln!(
            "unpacked {} files and {} folders ({} bytes) into {}",
            summary.files,
            summary.directories,
            summary.bytes,
            args.output.display()
        );
    }
    Ok(EXIT_OK)
}

/// The UUID the packager derives from this NEFF's stored payload.
fn content_uuid(file: &std::path::Path, data_size: u64) -> std::io::Result<Uuid> {
    use std::io::{Read, Seek, SeekFrom};
    let mut f = std::fs::File::open(file)?;
    f.seek(SeekFrom::Start(1024))?;
    let mut hasher = Sha256::new();
    let mut payload = f.take(data_size);
    let mut buf = vec![0u8; 1 << 20];
    loop {
        let n = payload.read(&mut buf)?;
        if n == 0 {
            break;
        }
        hasher.update(&buf[..n]);
    }
    Ok(Uuid::from_sha256(&hasher.finalize().into()))
}
