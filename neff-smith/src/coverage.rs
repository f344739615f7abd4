//! Which shapes of real NEFFs a corpus contains (`neff coverage`): the
//! normalized manifest key paths (map keys `*`, array items `[]`, as the
//! typed model's JSON Schemas say), the enum values (string values whose
//! schema is an enum) and the member-name patterns (digits `N`, weights
//! `*.npy`).

use std::borrow::Cow;
use std::collections::BTreeSet;
use std::fs::File;
use std::io::Read;
use std::path::Path;
use std::sync::OnceLock;

use neff_loader::walk::reread_member;
use neff_loader::{EntryKind, MANIFEST_MAX, READ_MAX, READ_PER_TAR_BYTE};
use neff_schema::manifest::{act_info::ActInfo, DefJson, EngineJson, KelfDescriptor, NeffJson};
use neff_writer::lift::{too_long, typed_manifests, Content, Model};
use serde::Serialize;
use serde_json::Value;

use crate::real::{value_of, LiftError};

/// The key paths the runtime reads (or `neff inspect` shows), per typed
/// manifest; map keys are `*`, array items `[]`. Taken from the loader's
/// section readers (`neff-loader/src/manifests.rs`, `sections/`).
pub const RUNTIME_READ: &[(&str, &[&str])] = &[
    (
        "neff-json",
        &[
            "nodes",
            "nodes[].op",
            "nodes[].name",
            "nodes[].inputs",
            "nodes[].attrs",
            "nodes[].attrs.func_name",
            "nodes[].attrs.kelf",
            "nodes[].attrs.num_inputs",
            "nodes[].attrs.num_outputs",
            "nodes[].output",
            "nodes[].output_names",
            "arg_nodes",
            "heads",
            "node_row_ptr",
            "attrs",
            "attrs.dltype",
            "attrs.shape",
            "metadata",
            "metadata.signatures",
            "metadata.signatures.*",
            "metadata.signatures.*.inputs",
            "metadata.signatures.*.outputs",
            "metadata.signatures.*.inputs.*.dtype",
            "metadata.signatures.*.inputs.*.id",
            "metadata.signatures.*.inputs.*.shape",
            "metadata.signatures.*.outputs.*.dtype",
            "metadata.signatures.*.outputs.*.id",
            "metadata.signatures.*.outputs.*.shape",
        ],
    ),
    (
        "kelf",
        &[
            "graphs",
            "graphs[].definition",
            "graphs[].name",
            "target",
            "version",
        ],
    ),
    (
        "def-json",
        &[
            "var",
            "var.*.type",
            "var.*.var_id",
            "var.*.size",
            "var.*.dtype",
            "var.*.shape",
            "var.*.internal_shape",
            "var.*.alignment",
            "var.*.backing_variable_off",
            "var.*.referenced_var_id",
            "var.*.list",
            "var.*.file_name",
            "var.*.fabric_path",
            "dma_queue",
            "dma_queue.*.owner",
            "dma_queue.*.type",
            "dma_queue.*.semaphore",
            "dma_queue.*.semaphore_set",
            "dma_queue.*.num_queues",
            "dma_queue.*.indirect_memcpy",
            "dma_queue.*.dynamic_dma",
            "dma_queue.*.dynamic_dma.SB_scratch_partition_offset",
            "dma_queue.*.dynamic_dma.SB_scratch_partition_size",
            "dma_queue.*.fabric_path",
            "dma_queue.*.pinned",
            "replica_groups",
            "src_target_pairs",
            "ucode_lib",
            "runtime_statebuffer_reservation",
            "num_streams",
            "cc_streams",
            "cc_streams.num_streams",
            "dma",
            "fp8_conversion_config",
            "pe",
            "act",
            "pool",
            "dve",
            "sp",
            "ext_isa_ucode_lib_def",
            "name",
            "debug_info",
            "debug_info.wavegraph",
            "pe_dbg",
            "act_dbg",
            "pool_dbg",
            "dve_dbg",
            "sp_dbg",
            "pe_asm_dbg",
            "act_asm_dbg",
            "pool_asm_dbg",
            "dve_asm_dbg",
            "sp_asm_dbg",
            "dma_dbg",
        ],
    ),
    (
        "engine",
        &[
            "instr",
            "name",
            "dma",
            "dma[].queue",
            "dma[].id",
            "dma[].semaphore",
            "dma[].desc",
            "dma[].desc[].op",
            "dma[].desc[].from",
            "dma[].desc[].to",
            "dma[].desc[].from_sizes",
            "dma[].desc[].from_steps",
            "dma[].desc[].to_sizes",
            "dma[].desc[].to_steps",
            "dma[].desc[].from_off",
            "dma[].desc[].to_off",
            "dma[].desc[].from_dtype",
            "dma[].desc[].to_dtype",
            "dma[].desc[].from_arr",
            "dma[].desc[].num_tiling_dimensions",
            "dma[].desc[].transpose_op",
            "dma[].desc[].transpose_shape",
            "dma[].desc[].transpose_element_size",
            "act_info",
            "act_semaphore",
            "activation_function_sets",
            "dve_tables",
            "dve_tables[].control_table",
            "dve_tables[].control_fast_table",
            "dve_tables[].control_slow_table",
            "dve_tables[].datapath_table",
            "dve_tables[].opcode_table",
        ],
    ),
    (
        "act-info",
        &[
            "act_func_sets",
            "act_func_sets[].name",
            "act_func_sets[].bkt_bin",
            "act_func_sets[].ctrl_bin",
            "act_func_sets[].profile_json",
            "pwp_file_keys",
        ],
    ),
];

/// The JSON Schema of each typed manifest kind.
fn schemas() -> &'static [(&'static str, Value)] {
    static SCHEMAS: OnceLock<Vec<(&'static str, Value)>> = OnceLock::new();
    SCHEMAS.get_or_init(|| {
        vec![
            ("neff-json", schemars::schema_for!(NeffJson).to_value()),
            ("kelf", schemars::schema_for!(KelfDescriptor).to_value()),
            ("def-json", schemars::schema_for!(DefJson).to_value()),
            ("engine", schemars::schema_for!(EngineJson).to_value()),
            ("act-info", schemars::schema_for!(ActInfo).to_value()),
        ]
    })
}

/// The shapes of one manifest.
#[derive(Debug, Default)]
pub struct ManifestPaths {
    /// Every key path (`var.*.size`).
    pub paths: BTreeSet<String>,
    /// The paths the schema does not declare (kept in an `extra` map).
    pub untyped: BTreeSet<String>,
    /// Enum values as `path=value` (`var.*.type=virtual`).
    pub enum_values: BTreeSet<String>,
}

/// The shapes of `doc`, a manifest of `kind` (`def-json`, …); `None` for
/// an unknown kind.
pub fn manifest_paths(kind: &str, doc: &Value) -> Option<ManifestPaths> {
    let (_, schema) = schemas().iter().find(|(k, _)| *k == kind)?;
    let mut out = ManifestPaths::default();
    walk(doc, schema, &schema["$defs"], "", &mut out);
    Some(out)
}

/// The schemas a JSON value may match at one place: `$ref`s resolved,
/// `anyOf`/`oneOf`/`allOf` alternatives flattened.
fn alternatives<'a>(schema: &'a Value, defs: &'a Value, out: &mut Vec<&'a Value>) {
    if let Some(name) = schema.get("$ref").and_then(Value::as_str) {
        if let Some(name) = name.rsplit('/').next() {
            alternatives(&defs[name], defs, out);
        }
    }
    for key in ["anyOf", "oneOf", "allOf"] {
        for alt in schema
            .get(key)
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
        {
            alternatives(alt, defs, out);
        }
    }
    out.push(schema);
}

/// Records the shapes of `doc` at `at` in `out`.
fn walk(doc: &Value, schema: &Value, defs: &Value, at: &str, out: &mut ManifestPaths) {
    let mut alts = Vec::new();
    alternatives(schema, defs, &mut alts);
    let join = |key: &str| match at {
        "" => key.to_string(),
        _ => format!("{at}.{key}"),
    };
    match doc {
        Value::Object(map) => {
            for (key, value) in map {
                let declared = alts.iter().find_map(|s| s.get("properties")?.get(key));
                let map_of = alts
                    .iter()
                    .find_map(|s| s.get("additionalProperties").filter(|a| a.is_object()));
                let (path, sub) = match (declared, map_of) {
                    (Some(sub), _) => (join(key), Some(sub)),
                    (None, Some(sub)) => (join("*"), Some(sub)),
                    (None, None) => (join(key), None),
                };
                out.paths.insert(path.clone());
                match sub {
                    Some(sub) => walk(value, sub, defs, &path, out),
                    None => {
                        out.untyped.insert(path);
                    }
                }
            }
        }
        Value::Array(items) => {
            let item = alts
                .iter()
                .find_map(|s| s.get("items").filter(|i| i.is_object()));
            if let Some(item) = item {
                for value in items {
                    walk(value, item, defs, &format!("{at}[]"), out);
                }
            }
        }
        Value::String(text) if alts.iter().any(|s| s.get("enum").is_some()) => {
            out.enum_values.insert(format!("{at}={text}"));
        }
        _ => {}
    }
}

/// Every key path the typed model declares for the manifest kinds it
/// writes (`def-json:var.*.size`…): what a corpus can hold at most.
pub fn model_key_paths() -> BTreeSet<String> {
    let mut out = BTreeSet::new();
    for (kind, schema) in schemas() {
        let mut paths = BTreeSet::new();
        declared(schema, &schema["$defs"], "", 0, &mut paths);
        out.extend(paths.into_iter().map(|p| format!("{kind}:{p}")));
    }
    out
}

/// The key paths `schema` declares below `at` (at most 8 levels deep: the
/// model is not recursive deeper than that).
fn declared(schema: &Value, defs: &Value, at: &str, depth: usize, out: &mut BTreeSet<String>) {
    if depth > 8 {
        return;
    }
    let mut alts = Vec::new();
    alternatives(schema, defs, &mut alts);
    let join = |key: &str| match at {
        "" => key.to_string(),
        _ => format!("{at}.{key}"),
    };
    for alt in alts {
        if let Some(props) = alt.get("properties").and_then(Value::as_object) {
            for (key, sub) in props {
                let path = join(key);
                out.insert(path.clone());
                declared(sub, defs, &path, depth + 1, out);
            }
        }
        if let Some(sub) = alt.get("additionalProperties").filter(|a| a.is_object()) {
            let path = join("*");
            if !sub.as_object().is_some_and(|o| o.is_empty()) {
                out.insert(path.clone());
                declared(sub, defs, &path, depth + 1, out);
            }
        }
        if let Some(item) = alt.get("items").filter(|i| i.is_object()) {
            declared(item, defs, &format!("{at}[]"), depth + 1, out);
        }
    }
}

/// The shapes of a set of NEFFs.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct Shapes {
    /// Manifest key paths as `kind:path` (`def-json:var.*.size`).
    pub key_paths: BTreeSet<String>,
    /// Enum values as `kind:path=value`.
    pub enum_values: BTreeSet<String>,
    /// Member-name patterns ([`member_pattern`]).
    pub members: BTreeSet<String>,
}

impl Shapes {
    /// Adds the shapes of `model`.
    pub fn add_model(&mut self, model: &Model) {
        for member in &model.payload {
            let typed = match &member.content {
                Content::Data(_) => None,
                content => Some(content),
            };
            self.add_member(&member.name, typed);
        }
    }

    /// Adds the shapes of the member `name`, a typed manifest or (`None`)
    /// bytes.
    fn add_member(&mut self, name: &str, typed: Option<&Content>) {
        self.members.insert(member_pattern(name, typed.is_some()));
        let Some((content, doc)) = typed.and_then(|c| Some((c, value_of(c)?))) else {
            return;
        };
        let kind = content.kind();
        if let Some(found) = manifest_paths(kind, &doc) {
            self.key_paths
                .extend(found.paths.iter().map(|p| format!("{kind}:{p}")));
            self.enum_values
                .extend(found.enum_values.iter().map(|v| format!("{kind}:{v}")));
        }
    }

    /// The shapes of the NEFF at `path`: its members as the runtime stores
    /// them, with the manifests typed as a lift types them (`neff unpack
    /// --spec`). Nothing is written to disk, and the framing is not
    /// recovered: shapes do not depend on it.
    pub fn add_file(&mut self, path: &Path) -> Result<(), LiftError> {
        let fail = |message: String| LiftError {
            path: path.display().to_string(),
            message,
        };
        let mut file = File::open(path).map_err(|e| fail(e.to_string()))?;
        let container = crate::real::stored_members(&mut file).map_err(fail)?;
        // The entries the runtime skips by name (`wavegraph-bin.json`) are
        // members of the lift too.
        let names: Vec<String> = (container.members.iter())
            .chain(container.skipped.iter())
            .filter(|m| m.kind == EntryKind::File)
            .map(|m| String::from_utf8_lossy(m.key).into_owned())
            .collect();
        let data_size = container.header.data_size();
        // A manifest the walk did not keep is read again from the file (the
        // tar stream inflated up to it), within the loader's own budget for
        // such reads, so many of them cost time linear in the input.
        let tar = container.tar_size.unwrap_or_default();
        let mut reread_left = READ_MAX.saturating_add(tar.saturating_mul(READ_PER_TAR_BYTE));
        let mut typed = typed_manifests(&names.iter().map(String::as_str).collect(), |name| {
            let member = container.members.get(name.as_bytes()).ok_or("not stored")?;
            if let Some(data) = member.data {
                return Ok(Cow::Borrowed(data));
            }
            if member.size > MANIFEST_MAX {
                return Err(too_long(member.size));
            }
            let cost = member.header_offset.saturating_add(member.size);
            reread_left = reread_left.checked_sub(cost).ok_or(
                "reading it again would pass the bytes the loader reads to parse manifests",
            )?;
            let read = |data: &mut dyn Read| {
                let mut bytes = Vec::new();
                data.read_to_end(&mut bytes).map(|_| bytes)
            };
            match reread_member(&mut file, data_size, member.header_offset, read) {
                Ok(Some(bytes)) => bytes.map(Cow::Owned).map_err(|e| e.to_string()),
                Ok(None) => Err("not found on a second read".into()),
                Err(e) => Err(e.to_string()),
            }
        });
        for name in &names {
            self.add_member(name, typed.remove(name).and_then(Result::ok).as_ref());
        }
        Ok(())
    }
}

/// A member name as a pattern: digit runs become `N` (`sgNN/def.json`) and
/// the stem of a `.npy` weights file `*` (its var's name).
pub fn member_pattern(name: &str, typed: bool) -> String {
    let mut pattern = String::with_capacity(name.len());
    let mut digits = false;
    for c in name.chars() {
        if c.is_ascii_digit() {
            if !digits {
                pattern.push('N');
            }
            digits = true;
        } else {
            pattern.push(c);
            digits = false;
        }
    }
    match pattern.rsplit_once('/') {
        Some((folder, file)) if !typed && file.ends_with(".npy") => format!("{folder}/*.npy"),
        None if !typed && pattern.ends_with(".npy") => "*.npy".into(),
        _ => pattern,
    }
}

/// How much of a reference set one kind of shape a corpus holds.
#[derive(Debug, Serialize, schemars::JsonSchema)]
pub struct Share {
    /// Reference shapes the corpus holds.
    pub covered: usize,
    /// Reference shapes.
    pub total: usize,
    /// Reference shapes the corpus lacks.
    pub missing: Vec<String>,
}

impl Share {
    fn of<'a>(reference: impl Iterator<Item = &'a String>, corpus: &BTreeSet<String>) -> Share {
        let (mut covered, mut total, mut missing) = (0, 0, Vec::new());
        for shape in reference {
            total += 1;
            match corpus.contains(shape) {
                true => covered += 1,
                false => missing.push(shape.clone()),
            }
        }
        Share {
            covered,
            total,
            missing,
        }
    }

    /// The covered share, 0.0 to 1.0 (1.0 of nothing).
    pub fn ratio(&self) -> f64 {
        match self.total {
            0 => 1.0,
            n => self.covered as f64 / n as f64,
        }
    }
}

/// What a corpus holds of a reference set's shapes.
#[derive(Debug, Serialize, schemars::JsonSchema)]
pub struct Coverage {
    /// All manifest key paths.
    pub key_paths: Share,
    /// The key paths the runtime reads ([`RUNTIME_READ`]) that the
    /// reference holds.
    pub runtime_read_key_paths: Share,
    /// Enum values.
    pub enum_values: Share,
    /// Member-name patterns.
    pub members: Share,
    /// The key paths the typed model declares ([`model_key_paths`]).
    pub model_key_paths: Share,
}

/// The share of `reference`'s shapes that `corpus` holds.
pub fn coverage(reference: &Shapes, corpus: &Shapes) -> Coverage {
    let read: BTreeSet<String> = RUNTIME_READ
        .iter()
        .flat_map(|(kind, keys)| keys.iter().map(move |k| format!("{kind}:{k}")))
        .collect();
    Coverage {
        key_paths: Share::of(reference.key_paths.iter(), &corpus.key_paths),
        runtime_read_key_paths: Share::of(
            reference.key_paths.iter().filter(|p| read.contains(*p)),
            &corpus.key_paths,
        ),
        enum_values: Share::of(reference.enum_values.iter(), &corpus.enum_values),
        members: Share::of(reference.members.iter(), &corpus.members),
        model_key_paths: Share::of(model_key_paths().iter(), &corpus.key_paths),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn member_patterns() {
        assert_eq!(member_pattern("sg00/def.json", true), "sgN/def.json");
        assert_eq!(member_pattern("sg01/weight_12.npy", false), "sgN/*.npy");
        assert_eq!(member_pattern("sg00/PE.bin", false), "sgN/PE.bin");
    }

    #[test]
    fn map_keys_are_stars_and_enums_are_values() {
        let doc = serde_json::json!({"var": {"x": {"type": "virtual", "size": 4}}});
        let found = manifest_paths("def-json", &doc).unwrap();
        assert!(found.paths.contains("var.*.size"), "{:?}", found.paths);
        assert!(
            found.enum_values.contains("var.*.type=virtual"),
            "{:?}",
            found.enum_values
        );
    }
}
