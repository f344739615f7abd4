//! `neff cat`: one member's bytes to stdout, streamed.

use std::fs::File;
use std::io::{self, BufReader, BufWriter, Read, Write};
use std::path::PathBuf;

use clap::Args;
use neff::loader::diff::{member_key, open_members};
use neff::loader::EntryKind;

use super::EXIT_OK;

/// Members named in the "no member" error before the rest are counted.
const NAMES_SHOWN: usize = 20;

/// Write one member's bytes to stdout.
///
/// The member is streamed out of the payload: no temp file, no unpack, memory of one
/// buffer. MEMBER is the name as `neff inspect` lists it (a leading `./` is optional).
/// When the archive repeats a name, the first entry of that name is written (the
/// runtime keeps the last). cat does not check the header's hash, which covers the
/// whole payload: it writes as it reads. Run `neff verify` for that.
#[derive(Args, Debug)]
pub struct CatArgs {
    /// The NEFF (`-` reads stdin).
    file: PathBuf,
    /// The member to write, e.g. neff.json or sg00/def.json.
    member: String,
}

pub fn run(args: CatArgs) -> Result<u8, Box<dyn std::error::Error>> {
    let shown = args.file.display();
    let source: Box<dyn Read> = if args.file.as_os_str() == "-" {
        Box::new(io::stdin().lock())
    } else {
        let file = File::open(&args.file).map_err(|e| format!("{shown}: {e}"))?;
        Box::new(BufReader::new(file))
    };
    let wanted = args.member.strip_prefix("./").unwrap_or(&args.member);
    let mut tar = open_members(source)
        .map_err(|e| format!("{shown}: {e}"))?
        .tar;
    let mut names = Vec::new();
    let mut count = 0usize;
    while let Some(entry) = tar.next_entry().map_err(|e| format!("{shown}: {e}"))? {
        let key = member_key(&entry);
        if key.trim_end_matches('/') == wanted.trim_end_matches('/') {
            if entry.kind != EntryKind::File {
                let kind = entry.kind.name();
                return Err(format!("{shown}: {wanted} is a {kind}, not a file").into());
            }
            let mut out = BufWriter::with_capacity(64 << 10, io::stdout().lock());
            tar.copy_data(&mut out)
                .map_err(|e| format!("{shown}: {wanted}: {e}"))?;
            out.flush()?;
            return Ok(EXIT_OK);
        }
        if entry.kind != EntryKind::Directory {
            count += 1;
            if names.len() < NAMES_SHOWN {
                names.push(key);
            }
        }
    }
    let more = match count - names.len() {
        0 => String::new(),
        n => format!(", … {n} more"),
    };
    let names = names.join(", ");
    Err(format!("{shown}: no member {wanted} (members: {names}{more})").into())
}
