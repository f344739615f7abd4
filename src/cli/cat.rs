//! `neff cat`: one member's bytes to stdout, streamed.

use std::io::{self, BufWriter, IsTerminal, Seek, SeekFrom, Write};
use std::path::PathBuf;

use clap::Args;
use neff::loader::{EntryKind, MANIFEST_MAX};
use neff::tools::diff::{member_key, open_members};

use super::{input, EXIT_OK};

/// Members named in the "no member" error before the rest are counted.
const NAMES_SHOWN: usize = 20;

/// Write one member's bytes to stdout.
///
/// The member is streamed out of the payload: no unpack, memory of one buffer. MEMBER
/// is the name as `neff inspect` lists it (a leading `./` is optional). When the
/// archive repeats a name, the last entry of that name is written, as the runtime keeps
/// the last (the payload is read twice then: once to find it, once to write it). cat
/// does not check the header's hash, which covers the whole payload: run `neff verify`
/// for that. Binary output to a terminal is refused unless --force; --pretty prints a
/// JSON member indented (to a terminal too).
#[derive(Args, Debug)]
pub struct CatArgs {
    /// The NEFF (`-` reads stdin; a pipe is spooled to an unlinked temp file),
    /// or a file that carries one (`wrapped_neff.hlo`, `model.neuron`).
    file: PathBuf,
    /// The member to write, e.g. neff.json or sg00/def.json.
    member: String,
    /// Write to stdout even when it is a terminal.
    #[arg(long)]
    force: bool,
    /// Print a JSON member indented by two spaces, one value per line: every key
    /// in its order (a repeated one too) and every number as written, as the
    /// runtime reads them. A member that is not JSON, or of more than 128 MiB
    /// (the loader's manifest limit), is refused.
    #[arg(long)]
    pretty: bool,
    /// When FILE carries several NEFFs (an HLO module from a compile cache,
    /// a torch-neuron(x) TorchScript zip), read NEFF number N (from 0). A
    /// carrier's NEFF is found by parsing it; where it lay is said on stderr.
    #[arg(long, value_name = "N")]
    index: Option<usize>,
}

pub fn run(args: CatArgs) -> Result<u8, Box<dyn std::error::Error>> {
    if io::stdout().is_terminal() && !args.force && !args.pretty {
        return Err(
            "stdout is a terminal: redirect it (`neff cat FILE MEMBER > out`), or pass --force"
                .into(),
        );
    }
    let resolved = input::resolve(&args.file, args.index, false)?;
    let shown = resolved.name.clone();
    let fail = |e: &dyn std::fmt::Display| format!("{shown}: {e}");
    let mut source = input::open(&resolved.path).map_err(|e| fail(&e))?;
    let wanted = args.member.strip_prefix("./").unwrap_or(&args.member);
    let matches = |key: &str| key.trim_end_matches('/') == wanted.trim_end_matches('/');
    // Pass 1: the last entry of that name (the runtime's), and the names for
    // the error when there is none.
    let mut tar = open_members(&mut source).map_err(|e| fail(&e))?.tar;
    let mut last = None;
    let mut names = Vec::new();
    let mut count = 0usize;
    while let Some(entry) = tar.next_entry().map_err(|e| fail(&e))? {
        let key = member_key(&entry);
        if matches(&key) {
            last = Some((entry.header_offset, entry.kind));
        } else if entry.kind != EntryKind::Directory {
            count += 1;
            if names.len() < NAMES_SHOWN {
                names.push(key);
            }
        }
    }
    drop(tar);
    let Some((offset, kind)) = last else {
        let more = match count - names.len() {
            0 => String::new(),
            n => format!(", … {n} more"),
        };
        let names = names.join(", ");
        return Err(format!("{shown}: no member {wanted} (members: {names}{more})").into());
    };
    if kind != EntryKind::File {
        return Err(format!("{shown}: {wanted} is a {}, not a file", kind.name()).into());
    }
    // Pass 2: stream that entry out.
    source.seek(SeekFrom::Start(0)).map_err(|e| fail(&e))?;
    let mut tar = open_members(&mut source).map_err(|e| fail(&e))?.tar;
    while let Some(entry) = tar.next_entry().map_err(|e| fail(&e))? {
        if entry.header_offset == offset {
            let mut out = BufWriter::with_capacity(64 << 10, io::stdout().lock());
            if args.pretty {
                let size = u64::try_from(entry.size).unwrap_or(0);
                if size > MANIFEST_MAX {
                    return Err(format!("{shown}: {wanted}: {size} bytes is over the {MANIFEST_MAX}-byte limit of --pretty (the loader's manifest limit)").into());
                }
                let mut text = Vec::new();
                tar.copy_data(&mut text)
                    .map_err(|e| format!("{shown}: {wanted}: {e}"))?;
                serde_json::from_slice::<serde::de::IgnoredAny>(&text)
                    .map_err(|e| format!("{shown}: {wanted} is not JSON: {e}"))?;
                out.write_all(&pretty(&text))?;
            } else {
                tar.copy_data(&mut out)
                    .map_err(|e| format!("{shown}: {wanted}: {e}"))?;
            }
            out.flush()?;
            return Ok(EXIT_OK);
        }
    }
    Err(format!("{shown}: {wanted}: the input changed while it was read").into())
}

/// `json` (valid JSON text) indented by two spaces, one value per line,
/// token by token: keys keep their order (repeats too) and numbers and
/// strings their exact text, which a parsed tree would not.
fn pretty(json: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(json.len() * 2);
    let mut depth = 0usize;
    let newline = |out: &mut Vec<u8>, depth: usize| {
        out.push(b'\n');
        out.resize(out.len() + 2 * depth, b' ');
    };
    let mut i = 0;
    while i < json.len() {
        let b = json[i];
        match b {
            b'"' => {
                let start = i;
                i += 1;
                while i < json.len() && json[i] != b'"' {
                    i += if json[i] == b'\\' { 2 } else { 1 };
                }
                out.extend_from_slice(&json[start..(i + 1).min(json.len())]);
            }
            b'{' | b'[' => {
                let close = if b == b'{' { b'}' } else { b']' };
                let next = json[i + 1..].iter().position(|c| !c.is_ascii_whitespace());
                if next.is_some_and(|n| json[i + 1 + n] == close) {
                    out.extend_from_slice(&[b, close]);
                    i += 1 + next.unwrap_or(0);
                } else {
                    out.push(b);
                    depth += 1;
                    newline(&mut out, depth);
                }
            }
            b'}' | b']' => {
                depth = depth.saturating_sub(1);
                newline(&mut out, depth);
                out.push(b);
            }
            b',' => {
                out.push(b);
                newline(&mut out, depth);
            }
            b':' => out.extend_from_slice(b": "),
            b' ' | b'\t' | b'\n' | b'\r' => {}
            _ => out.push(b),
        }
        i += 1;
    }
    out.push(b'\n');
    out
}

#[cfg(test)]
mod tests {
    use super::pretty;

    #[test]
    fn pretty_keeps_every_key_and_number_as_written() {
        let text = br#"{"b":1.50,"a":[],"a":{"k":"x,\"y:"},"n":[1,{}]}"#;
        let want = "{\n  \"b\": 1.50,\n  \"a\": [],\n  \"a\": {\n    \"k\": \"x,\\\"y:\"\n  },\n  \"n\": [\n    1,\n    {}\n  ]\n}\n";
        assert_eq!(String::from_utf8(pretty(text)).unwrap(), want);
    }
}
