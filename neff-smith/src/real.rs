//! Seeds one structure-aware change away from real NEFFs (`neff corpus
//! --from`): each source is lifted into the typed model ([`Model`]), and
//! each seed is that model with one change, packed again. The payload hash
//! is computed over the changed payload, so a seed reaches the gate its
//! change is aimed at. A change is one of: a typed value set to another
//! valid or invalid one, a key removed or repeated, a table entry (a def.json
//! variable) changed, a member dropped, swapped with another or resized, a
//! header field changed. Everything is a function of the seed and the draw.

use std::collections::BTreeMap;
use std::fs::File;
use std::io::{Read, Seek, SeekFrom};
use std::path::{Path, PathBuf};
use std::sync::{Arc, OnceLock};

use neff_writer::build_spec::Blob;
use neff_writer::lift::{Content, Model, PayloadMember};
use neff_writer::{DeflateCache, MemberSource, PackSettings, Packager};
use serde_json::Value;

use crate::seed::{adversarial, Mix, Seed, SeedVerdict};

/// Members up to this size are held in memory for the seeds; larger ones
/// are streamed from the lifted folder for each seed.
const MAX_HELD: u64 = 4 << 20;

/// The deflate cache every seed is packed through: a seed differs from its
/// source in one place, so most of its payload's chunks were deflated for an
/// earlier seed. One per process, bounded by [`DeflateCache::default`]'s
/// capacity; it changes no byte of any seed.
fn deflate_cache() -> Arc<DeflateCache> {
    static CACHE: OnceLock<Arc<DeflateCache>> = OnceLock::new();
    CACHE.get_or_init(Arc::default).clone()
}

/// A real NEFF lifted for mutation: its model and the folder holding its
/// members (removed when the source is dropped).
#[derive(Debug)]
pub struct Source {
    /// The file it was lifted from, as given.
    pub path: PathBuf,
    /// The typed model (member blobs are absolute paths into `_tree`).
    pub model: Model,
    /// Every member's bytes as the model packs them, by name: an unchanged
    /// member of a seed is packed from here (shared, not copied), not
    /// encoded again.
    bytes: BTreeMap<String, Arc<[u8]>>,
    largest_manifest: u64,
    _tree: tempfile::TempDir,
}

/// Why a NEFF could not be lifted.
#[derive(Debug, thiserror::Error)]
#[error("{path}: {message}")]
pub struct LiftError {
    /// The file.
    pub path: String,
    /// What failed.
    pub message: String,
}

impl Source {
    /// The length of its largest manifest (`*.json` member): what one
    /// check of a seed drawn from it holds in memory grows with it.
    pub fn largest_manifest(&self) -> u64 {
        self.largest_manifest
    }

    /// Lifts the NEFF at `path` as `neff unpack --spec` does (unpacked into
    /// a temporary folder, the framing recovered, the manifests typed). A
    /// NEFF whose header alone the gates refuse is lifted as a runtime
    /// without those checks reads it.
    pub fn lift(path: &Path) -> Result<Source, LiftError> {
        let fail = |message: String| LiftError {
            path: path.display().to_string(),
            message,
        };
        let (model, tree) = lifted(path)?;
        let mut bytes = BTreeMap::new();
        let mut largest_manifest = 0;
        for (i, member) in model.payload.iter().enumerate() {
            let source = model
                .member_source(Path::new("/"), i)
                .map_err(|e| fail(e.to_string()))?;
            if member.name.ends_with(".json") {
                largest_manifest = largest_manifest.max(source.len());
            }
            if source.len() > MAX_HELD {
                continue;
            }
            let mut data = Vec::new();
            source
                .open()
                .and_then(|mut r| r.read_to_end(&mut data))
                .map_err(|e| fail(format!("{}: {e}", member.name)))?;
            bytes.insert(member.name.clone(), Arc::from(data));
        }
        Ok(Source {
            path: path.to_path_buf(),
            model,
            bytes,
            largest_manifest,
            _tree: tree,
        })
    }
}

/// The NEFF at `path` as a typed model (member blobs are absolute paths into
/// the returned folder), unpacked and its framing recovered as `neff unpack
/// --spec` does it; a NEFF whose header alone the gates refuse is lifted as
/// a runtime without those checks reads it.
pub fn lifted(path: &Path) -> Result<(Model, tempfile::TempDir), LiftError> {
    let fail = |message: String| LiftError {
        path: path.display().to_string(),
        message,
    };
    let tree = tempfile::tempdir().map_err(|e| fail(e.to_string()))?;
    let dir = tree.path().join("tree");
    let (profile, limits) = (Default::default(), Default::default());
    let proof = neff_writer::DeflateProof::Whole;
    let unpacked =
        neff_tools::extract_recovering(path, &dir, &profile, false, &limits, true, proof)
            .map_err(|e| fail(e.to_string()))?;
    let file = unpacked.recovered.map_err(|e| fail(e.to_string()))?.file;
    let (model, _) = Model::from_tree(&dir, file, None).map_err(|e| fail(e.to_string()))?;
    Ok((model, tree))
}

/// The members of the NEFF `source` as the runtime stores them, read as
/// [`lifted`] reads them: only the header's feature bits and the payload
/// hash (G5, G9) may be refused, as a negative fixture's are; any other
/// container refusal is the error.
pub fn stored_members(source: &mut File) -> Result<neff_loader::Container, String> {
    let relaxed = neff_loader::RuntimeProfile {
        verify_hash: false,
        supported_features: u64::MAX,
        ..Default::default()
    };
    let limits = neff_loader::Limits::default();
    let tier1 =
        neff_loader::walk::walk_entries(source, &relaxed, &limits, &mut neff_loader::walk::NoSink)
            .map_err(|e| e.to_string())?;
    match (tier1.rejection, tier1.container) {
        (None, Some(container)) => Ok(container),
        (rejection, _) => {
            let report = neff_loader::Report::new(
                &relaxed,
                rejection.as_ref(),
                tier1.warnings,
                &[neff_loader::Tier::Container],
            );
            Err(report.detail.or(report.message).unwrap_or_default())
        }
    }
}

/// Seed `index` for `seed`: a source drawn from `sources`, one change
/// applied, packed into `spool` (at gzip `level`, else the source's own).
/// `None` when the drawn change does not apply (the caller moves on).
pub fn seed_from(
    sources: &[Source],
    seed: u64,
    index: u64,
    level: Option<u32>,
    spool: &mut File,
) -> Option<Seed> {
    let mut mix = Mix(seed ^ index.wrapping_mul(0xA24B_AED4_963E_E407) ^ 0x5EED);
    let source = sources.get(mix.below(sources.len()))?;
    let mut model = source.model.clone();
    let change = change(&mut model, &mut mix)?;
    let settings = PackSettings {
        keep_refused: true,
        threads: Some(1),
        level,
        ..PackSettings::default()
    };
    // Members the change left alone are packed from the source's bytes
    // (found by name through one map: a lookup per member stays linear).
    let originals: std::collections::HashMap<&str, &PayloadMember> = source
        .model
        .payload
        .iter()
        .map(|m| (m.name.as_str(), m))
        .collect();
    let mut packager = Packager::new();
    for (i, member) in model.payload.iter().enumerate() {
        let kept = originals.get(member.name.as_str()) == Some(&member);
        let bytes = match source.bytes.get(&member.name) {
            Some(bytes) if kept => MemberSource::Reader {
                len: bytes.len() as u64,
                reader: Box::new(std::io::Cursor::new(Arc::clone(bytes))),
            },
            _ => model.member_source(Path::new("/"), i).ok()?,
        };
        packager.add(&member.name, bytes).ok()?;
    }
    drop(originals);
    let mut options = settings.options(model.into_header_file()).ok()?;
    options.fsync = false;
    options.deflate_cache = Some(deflate_cache());
    let outcome = packager.write_file(spool, &options).ok()?;
    let mut bytes = Vec::new();
    spool.seek(SeekFrom::Start(0)).ok()?;
    spool.read_to_end(&mut bytes).ok()?;
    let name = source.path.file_name().map_or_else(
        || source.path.display().to_string(),
        |n| n.to_string_lossy().into_owned(),
    );
    Some(Seed {
        bytes,
        verdict: SeedVerdict::from_report(&outcome.report),
        mutation: Some(format!("{name}: {change}")),
    })
}

/// Applies one change to `model`; says what it changed.
fn change(model: &mut Model, mix: &mut Mix) -> Option<String> {
    match mix.below(8) {
        0 | 1 => typed_value(model, mix),
        2 => removed_key(model, mix),
        3 => repeated_key(model, mix),
        4 => table_entry(model, mix),
        5 => member_change(model, mix),
        _ => header_field(model, mix),
    }
}

/// A typed manifest member, drawn.
fn typed_member(model: &Model, mix: &mut Mix) -> Option<usize> {
    let typed: Vec<usize> = (0..model.payload.len())
        .filter(|&i| !matches!(model.payload[i].content, Content::Data(_)))
        .collect();
    typed.get(mix.below(typed.len())).copied()
}

/// The manifest as JSON (`None` for bytes).
pub(crate) fn value_of(content: &Content) -> Option<Value> {
    content.to_value()?.ok()
}

/// `value` as the same kind of manifest as `like` (written in the source's
/// style), or, when the model cannot hold it, as its JSON text.
fn retyped(like: &Content, value: Value) -> Content {
    like.with_value(value.clone()).unwrap_or_else(|_| {
        Content::Data(Blob::Text(
            serde_json::to_string_pretty(&value).unwrap_or_default(),
        ))
    })
}

/// Sets member `i` to `value`, typed when the model can hold it.
fn set_value(model: &mut Model, i: usize, value: Value) {
    let member = &mut model.payload[i];
    member.content = retyped(&member.content, value);
}

/// A value somewhere in a manifest set to another (valid or not).
fn typed_value(model: &mut Model, mix: &mut Mix) -> Option<String> {
    let i = typed_member(model, mix)?;
    let mut value = value_of(&model.payload[i].content)?;
    let path = mutate_at(&mut value, mix, &mut String::new());
    set_value(model, i, value);
    Some(format!("{} {path}: value changed", model.payload[i].name))
}

/// Walks down `value` to a random node and replaces it: a number nearby or
/// extreme, or an adversarial value. Returns its path.
fn mutate_at(value: &mut Value, mix: &mut Mix, path: &mut String) -> String {
    if mix.below(4) != 0 {
        match value {
            Value::Object(map) if !map.is_empty() => {
                let key = map.keys().nth(mix.below(map.len())).cloned();
                if let Some((key, child)) = key.and_then(|k| map.get_mut(&k).map(|c| (k, c))) {
                    path.push_str(&format!(".{key}"));
                    return mutate_at(child, mix, path);
                }
            }
            Value::Array(items) if !items.is_empty() => {
                let i = mix.below(items.len());
                path.push_str(&format!("[{i}]"));
                return mutate_at(&mut items[i], mix, path);
            }
            _ => {}
        }
    }
    match value {
        Value::Number(n) if mix.below(2) == 0 => {
            let v = n.as_u64().unwrap_or(0);
            let near = [
                v.wrapping_add(1),
                v.saturating_sub(1),
                v.wrapping_mul(2),
                0,
                u64::MAX,
            ];
            *value = near[mix.below(near.len())].into();
        }
        _ => *value = adversarial(mix),
    }
    path.clone()
}

/// A key removed from a manifest object.
fn removed_key(model: &mut Model, mix: &mut Mix) -> Option<String> {
    let i = typed_member(model, mix)?;
    let mut value = value_of(&model.payload[i].content)?;
    let mut path = String::new();
    let depth = mix.below(4);
    let key = remove_in(&mut value, depth, mix, &mut path)?;
    set_value(model, i, value);
    Some(format!(
        "{} {path}: key {key:?} removed",
        model.payload[i].name
    ))
}

/// Removes a key of an object up to `depth` levels below `value` (`value`'s
/// own when none deeper is found); returns it.
fn remove_in(value: &mut Value, depth: usize, mix: &mut Mix, path: &mut String) -> Option<String> {
    if depth > 0 {
        let step = match value {
            Value::Object(map) if !map.is_empty() => {
                let key = map.keys().nth(mix.below(map.len()))?.clone();
                Some((format!(".{key}"), map.get_mut(&key)?))
            }
            Value::Array(items) if !items.is_empty() => {
                let at = mix.below(items.len());
                Some((format!("[{at}]"), &mut items[at]))
            }
            _ => None,
        };
        if let Some((segment, child)) = step {
            let len = path.len();
            path.push_str(&segment);
            if let Some(key) = remove_in(child, depth - 1, mix, path) {
                return Some(key);
            }
            path.truncate(len);
        }
    }
    let map = value.as_object_mut()?;
    let key = map.keys().nth(mix.below(map.len()))?.clone();
    map.remove(&key);
    Some(key)
}

/// A top-level key of a manifest written twice (the second time with
/// another value): the loader refuses repeated keys.
fn repeated_key(model: &mut Model, mix: &mut Mix) -> Option<String> {
    let i = typed_member(model, mix)?;
    let value = value_of(&model.payload[i].content)?;
    let map = value.as_object()?;
    let key = map.keys().nth(mix.below(map.len()))?.clone();
    let text = serde_json::to_string_pretty(&value).ok()?;
    let again = format!(
        "{{\n  {}: {},",
        Value::String(key.clone()),
        adversarial(mix)
    );
    let text = text.replacen('{', &again, 1);
    model.payload[i].content = Content::Data(Blob::Text(text));
    Some(format!("{}: key {key:?} repeated", model.payload[i].name))
}

/// A def.json variable's `size`, `var_id` or `type` changed.
fn table_entry(model: &mut Model, mix: &mut Mix) -> Option<String> {
    let defs: Vec<usize> = (0..model.payload.len())
        .filter(|&i| matches!(model.payload[i].content, Content::DefJson(_)))
        .collect();
    let i = *defs.get(mix.below(defs.len()))?;
    let mut value = value_of(&model.payload[i].content)?;
    let vars = value.get_mut("var")?.as_object_mut()?;
    let name = vars.keys().nth(mix.below(vars.len()))?.clone();
    let var = vars.get_mut(&name)?.as_object_mut()?;
    let (field, new) = match mix.below(3) {
        0 => {
            let size = var.get("size").and_then(Value::as_u64).unwrap_or(0);
            (
                "size",
                Value::from([0, size / 2, size + 1, u64::MAX][mix.below(4)]),
            )
        }
        1 => {
            let id = var.get("var_id").and_then(Value::as_u64).unwrap_or(0);
            ("var_id", Value::from([id + 1, id + 1000, 0][mix.below(3)]))
        }
        _ => {
            let types = [
                "input",
                "output",
                "file",
                "virtual",
                "pointer",
                "state-buffer",
                "dge-table",
                "tmp-buf",
                "bogus",
            ];
            ("type", Value::from(types[mix.below(types.len())]))
        }
    };
    var.insert(field.into(), new.clone());
    set_value(model, i, value);
    Some(format!(
        "{} var {name:?}: {field} set to {new}",
        model.payload[i].name
    ))
}

/// A member dropped, swapped with another, or resized.
fn member_change(model: &mut Model, mix: &mut Mix) -> Option<String> {
    let n = model.payload.len();
    let i = mix.below(n);
    let name = model.payload.get(i)?.name.clone();
    match mix.below(3) {
        0 => {
            model.payload.remove(i);
            Some(format!("{name}: dropped"))
        }
        1 => {
            let j = mix.below(n);
            let other = model.payload.get(j)?.name.clone();
            let content = model.payload[j].content.clone();
            let source = model.payload[j].source.clone();
            model.payload[j].content = model.payload[i].content.clone();
            model.payload[j].source = model.payload[i].source.clone();
            model.payload[i].content = content;
            model.payload[i].source = source;
            Some(format!("{name}: swapped with {other}"))
        }
        _ => {
            let bytes = member_bytes(model, i)?;
            let mut resized = bytes.clone();
            match mix.below(3) {
                0 => resized.truncate(mix.below(bytes.len() + 1)),
                1 => {
                    let extra = 1 + mix.below(64);
                    resized.extend(mix.bytes(extra));
                }
                _ => resized.resize(bytes.len() + 64 * (1 + mix.below(4)), 0),
            }
            let len = resized.len();
            model.payload[i].content =
                Content::Data(Blob::Base64(neff_writer::base64::encode(&resized)));
            model.payload[i].source = None;
            Some(format!(
                "{name}: resized from {} to {len} bytes",
                bytes.len()
            ))
        }
    }
}

/// The bytes of member `i`, when at most 1 MiB.
fn member_bytes(model: &Model, i: usize) -> Option<Vec<u8>> {
    let member = &model.payload[i];
    let blob = match &member.content {
        Content::Data(blob) => blob,
        _ => member.source.as_ref()?,
    };
    match blob {
        Blob::Path(path) => {
            let file = File::open(path).ok()?;
            if file.metadata().ok()?.len() > 1 << 20 {
                return None;
            }
            let mut bytes = Vec::new();
            file.take(1 << 20).read_to_end(&mut bytes).ok()?;
            Some(bytes)
        }
        Blob::Text(text) => Some(text.as_bytes().to_vec()),
        Blob::Base64(text) => neff_writer::base64::decode(text).ok(),
        Blob::Held(_) => None,
    }
}

/// A header field set to another value.
fn header_field(model: &mut Model, mix: &mut Mix) -> Option<String> {
    let header = model.header.get_or_insert_with(Default::default);
    let what = match mix.below(5) {
        0 => {
            header.neff_version_major = Some(mix.below(5) as u64);
            "neff_version_major"
        }
        1 => {
            let bits = header.feature_bits.unwrap_or(0);
            header.feature_bits = Some(bits ^ (1 << mix.below(64)));
            "feature_bits"
        }
        2 => {
            header.vnc_size = Some(mix.below(5) as u32);
            "vnc_size"
        }
        3 => {
            header.requested_tpb_count = Some(mix.below(9) as u32);
            "requested_tpb_count"
        }
        _ => {
            header.neff_version_minor = Some(mix.below(8) as u64);
            "neff_version_minor"
        }
    };
    Some(format!("header {what} changed"))
}
