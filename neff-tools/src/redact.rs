//! `neff redact`: a NEFF safe to attach to a bug report. Through the lifted
//! model ([`neff_writer::lift::Model`]): every weight's data zeroed (the
//! `.npy` header, so dtype and shape, kept), the header's name and build
//! version replaced, every absolute path or host-like string in the JSON
//! members scrubbed, and the debug-info members dropped. What the runtime
//! reads keeps its shape, so the verdict and the memory figures stay.

use std::path::Path;

use neff_loader::Verdict;
use neff_schema::header::Text;
use neff_writer::build_spec::Blob;
use neff_writer::lift::{Content, Model};
use neff_writer::{Error, ErrorKind, PackOutcome, PackSettings};
use serde_json::Value;

use crate::MemoryReport;

/// What stands for a scrubbed string and the header's name.
pub const REDACTED: &str = "redacted";

/// What to keep.
#[derive(Debug, Clone, Default)]
pub struct RedactOptions {
    /// Debug-info members to keep (by name).
    pub keep: Vec<String>,
}

/// What [`redact`] changed.
#[derive(Debug, Default)]
pub struct Redacted {
    /// Weight members whose data was zeroed.
    pub weights: Vec<String>,
    /// Bytes of weight data zeroed.
    pub weight_bytes: u64,
    /// Members dropped.
    pub dropped: Vec<String>,
    /// Strings scrubbed, each with the member it was in.
    pub scrubbed: Vec<(String, String)>,
    /// The header's name and build version before.
    pub header: Vec<String>,
    /// The NEFF written.
    pub outcome: Option<PackOutcome>,
}

/// Writes `neff` redacted at `out`; `scratch` is a folder it is lifted into.
pub fn redact(
    neff: &Path,
    out: &Path,
    scratch: &Path,
    options: &RedactOptions,
) -> Result<Redacted, Error> {
    let crate::recovering::Lifted {
        mut model,
        summary,
        tree,
    } = crate::recovering::lift_for_edit(neff, scratch, true)?;
    let mut done = Redacted::default();
    for (i, w) in summary.graphs.iter().flat_map(|g| &g.weights).enumerate() {
        let path = tree.join(&w.member);
        let mut bytes = std::fs::read(&path).map_err(|e| Error::io("cannot read", &path, e))?;
        let start = match neff_schema::npy::parse_header(&bytes) {
            Ok(h) if w.member.ends_with(".npy") => {
                (10 + usize::from(h.header_len)).min(bytes.len())
            }
            _ => 0,
        };
        bytes[start..].fill(0);
        let zeroed = scratch.join(format!("zeroed-{i}"));
        std::fs::write(&zeroed, &bytes).map_err(|e| Error::io("cannot write", &zeroed, e))?;
        if let Some(m) = model.member_mut(&w.member) {
            m.content = Content::Data(Blob::Path(zeroed));
            m.source = None;
            done.weight_bytes += (bytes.len() - start) as u64;
            done.weights.push(w.member.clone());
        }
    }
    let keep = |name: &str| options.keep.iter().any(|k| k == name);
    model.payload.retain(|m| {
        let drop = is_debug_info(&m.name) && !keep(&m.name);
        if drop {
            done.dropped.push(m.name.clone());
        }
        !drop
    });
    for i in 0..model.payload.len() {
        scrub_member(&mut model, i, &tree, scratch, &mut done.scrubbed)?;
    }
    let header = model.header.get_or_insert_with(Default::default);
    if let Some(name) = header
        .name
        .and_then(|n| n.as_clean_str().map(str::to_string))
    {
        done.header.push(format!("name {name:?}"));
    }
    if let Some(v) = header
        .build_version
        .and_then(|n| n.as_clean_str().map(str::to_string))
    {
        done.header.push(format!("build_version {v:?}"));
    }
    header.name = Some(Text::new(REDACTED)?);
    header.build_version = Some(Text::new("")?);
    done.outcome = Some(model.write_to_path(scratch, out, &PackSettings::default())?);
    Ok(done)
}

/// Whether a member is debug information the runtime never reads: the
/// compilers' `debug_info/` folder and `*.dbg`, `*_dbg*` and `.asm` listings.
pub fn is_debug_info(name: &str) -> bool {
    let file = name.rsplit('/').next().unwrap_or(name);
    name.starts_with("debug_info/")
        || file.starts_with("debug_info")
        || file.ends_with(".dbg")
        || file.contains(".dbg_")
        || file.ends_with(".asm")
}

/// Scrubs member `i`: a typed manifest's strings, or a JSON member's.
fn scrub_member(
    model: &mut Model,
    i: usize,
    tree: &Path,
    scratch: &Path,
    scrubbed: &mut Vec<(String, String)>,
) -> Result<(), Error> {
    let m = &mut model.payload[i];
    let name = m.name.clone();
    let mut found = Vec::new();
    match &m.content {
        Content::Data(_) if name.ends_with(".json") => {
            let path = tree.join(&name);
            let Ok(bytes) = std::fs::read(&path) else {
                return Ok(());
            };
            let Ok(mut value) = serde_json::from_slice::<Value>(&bytes) else {
                return Ok(());
            };
            scrub(&mut value, &mut found);
            if !found.is_empty() {
                let new = scratch.join(format!("scrubbed-{i}.json"));
                let text = serde_json::to_vec_pretty(&value).map_err(json_error)?;
                std::fs::write(&new, text).map_err(|e| Error::io("cannot write", &new, e))?;
                m.content = Content::Data(Blob::Path(new));
            }
        }
        Content::Data(_) => {}
        typed => {
            let mut value = typed
                .to_value()
                .transpose()
                .map_err(json_error)?
                .unwrap_or_default();
            scrub(&mut value, &mut found);
            if !found.is_empty() {
                m.content = typed.with_value(value).map_err(json_error)?;
            }
        }
    }
    scrubbed.extend(found.into_iter().map(|s| (name.clone(), s)));
    Ok(())
}

/// Replaces every string of `value` (keys too) that is an absolute path or
/// names a host with [`REDACTED`], noting each.
fn scrub(value: &mut Value, found: &mut Vec<String>) {
    match value {
        Value::String(s) if is_private(s) => {
            found.push(std::mem::replace(s, REDACTED.to_string()));
        }
        Value::Array(items) => items.iter_mut().for_each(|v| scrub(v, found)),
        Value::Object(map) => {
            let keys: Vec<String> = map.keys().filter(|k| is_private(k)).cloned().collect();
            for (n, key) in keys.into_iter().enumerate() {
                if let Some(v) = map.remove(&key) {
                    map.insert(format!("{REDACTED}-{n}"), v);
                    found.push(key);
                }
            }
            map.values_mut().for_each(|v| scrub(v, found));
        }
        _ => {}
    }
}

/// An absolute path (`/home/…`, `C:\…`, inside a longer string too) or a
/// host-like name (`ip-10-0-0-1`, `*.compute.internal`, `user@host`).
pub fn is_private(s: &str) -> bool {
    let absolute = s
        .split(|c: char| c.is_whitespace() || c == '-' || c == '=' || c == ':')
        .any(|w| w.starts_with('/') && w[1..].contains('/'));
    let windows = s
        .as_bytes()
        .windows(3)
        .any(|w| w[0].is_ascii_alphabetic() && w[1] == b':' && w[2] == b'\\');
    let host = s.contains(".internal")
        || s.contains(".local")
        || s.split(|c: char| !c.is_ascii_alphanumeric() && c != '-')
            .any(|w| {
                w.starts_with("ip-")
                    && w[3..]
                        .split('-')
                        .filter(|p| p.parse::<u8>().is_ok())
                        .count()
                        == 4
            })
        || (s.contains('@') && !s.contains(' '));
    absolute || windows || host
}

fn json_error(e: serde_json::Error) -> Error {
    Error::new(ErrorKind::Invalid, e.to_string())
}

/// Whether `redacted` gets the verdict `original` got (warnings that name
/// a member it dropped aside, and the header's name read as [`REDACTED`])
/// and the same memory figures; `None` when it does, else what differs.
pub fn same_verdict(original: &Verdict, redacted: &Verdict, dropped: &[String]) -> Option<String> {
    let (a, b) = (original.combined_report(), redacted.combined_report());
    if (a.accepted, a.gate, &a.message) != (b.accepted, b.gate, &b.message) {
        return Some(format!(
            "the verdict: {} became {}",
            a.summary(),
            b.summary()
        ));
    }
    let name = original
        .container
        .as_ref()
        .and_then(|c| c.header.fields().name.as_clean_str().map(str::to_string))
        .filter(|n| !n.is_empty());
    let kept = |w: &&String| !dropped.iter().any(|d| w.contains(d.as_str()));
    let renamed = |w: &String| match &name {
        Some(n) => w.replace(n.as_str(), REDACTED),
        None => w.clone(),
    };
    let (wa, wb): (Vec<String>, Vec<String>) = (
        a.warnings.iter().filter(kept).map(renamed).collect(),
        b.warnings.iter().filter(kept).cloned().collect(),
    );
    if wa != wb {
        return Some(format!("the warnings: {wa:?} became {wb:?}"));
    }
    let memory = |v: &Verdict| {
        v.display_load()
            .model
            .as_ref()
            .map(|m| MemoryReport::new("", m).total)
    };
    if memory(original) != memory(redacted) {
        return Some("the memory figures".to_string());
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_and_hosts_are_private_member_names_are_not() {
        for s in [
            "/tmp/tmptlh4jstn",
            "1.15.0.0+eec0c3604-/tmp/tmptlh4jstn",
            "C:\\Users\\me",
            "ip-10-0-12-7",
            "node.ec2.internal",
            "me@host",
        ] {
            assert!(is_private(s), "{s}");
        }
        for s in [
            "sg00/def.json",
            "pe.bin",
            "float32",
            "",
            "2.27.2878.0+8220f7ac",
            "a/b/c",
        ] {
            assert!(!is_private(s), "{s}");
        }
        assert!(is_debug_info("debug_info/debug_info_hlo.dbg_sg000000"));
        assert!(is_debug_info("sg00/debug_info_asm_PE.dbg"));
        assert!(!is_debug_info("sg00/def.json") && !is_debug_info("sg00/PE.bin"));
    }
}
