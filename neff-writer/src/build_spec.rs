//! The JSON build spec `neff build` reads: everything [`NeffBuilder`] can
//! do, as data. `neff schema build-spec` prints its JSON Schema (these doc
//! comments are the descriptions).
//!
//! Spec objects refuse unknown keys. Blobs are a path relative to the spec
//! file (`"sg00/pe.bin"` or `{"path": ...}`), inline base64
//! (`{"base64": "..."}`) or inline text (`{"text": "..."}`). Manifest objects
//! passed through as they are (DMA blocks, fp8 config, carveouts) and every
//! `extra` map keep any key, like the manifests themselves.

use std::collections::BTreeMap;
use std::fmt;
use std::path::{Path, PathBuf};

use neff_schema::features;
use neff_schema::header::Blob as HashBlob;
use neff_schema::manifest::{
    Carveout, DmaBlock, DmaQueue, Dtype, Engine, EngineJson, Extra, Fp8Config, UcodeFunction,
    UcodeLib,
};
use neff_schema::{Framing, FramingPreset, PkgVersion, Target, Uuid};
use serde::de::{self, Deserializer, MapAccess, Visitor};
use serde::Deserialize;

use crate::builder::{Data, EngineProgram, NeffBuilder, Subgraph, Tensor, Weight};
use crate::error::{Error, ErrorKind};
use crate::header_options::{HeaderPatch, UuidChoice};
use crate::lift::{Model, PayloadMember, WeightEdit};
use crate::PackSettings;

/// A model to build: its subgraphs, extra members and packaging.
#[derive(Debug, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct BuildSpec {
    /// Ignored: room for an editor's schema reference.
    #[serde(rename = "$schema", default)]
    pub schema: Option<String>,
    /// The model name stored in the header (at most 255 bytes).
    #[serde(default)]
    pub name: Option<String>,
    /// The KELF descriptor's target (default `"*"`, any instance), written as
    /// given: the loader's G16 refuses a string the runtime does not know
    /// (the schema's enum is the same list).
    #[serde(default)]
    #[schemars(with = "Option<Target>")]
    pub target: Option<String>,
    /// The KELF descriptor's member name (default `kelf-0.json`; the runtime's
    /// fixture uses `kelf-a.json`).
    #[serde(default)]
    pub kelf_member: Option<String>,
    /// The `__kelf` node's name in neff.json (default `sg_tonga0`).
    #[serde(default)]
    pub kelf_node_name: Option<String>,
    /// The KELF descriptor's `version` (default `"0.5"`).
    #[serde(default)]
    pub kelf_version: Option<String>,
    /// Extra keys written into the KELF descriptor as they are.
    #[serde(default)]
    pub kelf_extra: Extra,
    /// Extra top-level keys written into neff.json as they are.
    #[serde(default)]
    pub neff_json_extra: Extra,
    /// The subgraphs, in KELF order (usually `sg00`, `sg01`, ...). More than one
    /// sets the header's `vnc_size` to their count and feature bit
    /// `neff_feature_vnc`. Required unless `payload` is given.
    #[serde(default)]
    pub subgraphs: Vec<SubgraphSpec>,
    /// The lifted form (`neff unpack --spec`): every member of the payload,
    /// each a typed manifest (`neff_json`, `kelf`, `def_json`, `engine`,
    /// `act_info`) or bytes (`data`). Nothing is generated: the payload is
    /// exactly these members. Not with `subgraphs`, `members`,
    /// `raw_members` or the keys that only shape generated manifests.
    #[serde(default)]
    pub payload: Vec<PayloadMember>,
    /// The lifted form: weights to replace, in order
    /// ([`crate::lift::Model::replace_weight`]): each `file` var's member
    /// gets the new `.npy`, and the var's `size` follows its data length.
    #[serde(default)]
    pub weights: Vec<WeightEdit>,
    /// The lifted form: the header `hash` of the NEFF it was lifted from.
    /// The header's `uuid` is kept only while the payload still hashes to
    /// it (or when `uuid` is `"keep"`); otherwise a new one is derived.
    #[serde(default)]
    pub source_hash: Option<HashBlob<32>>,
    /// Members no manifest generates (`hlo_stats.json`, `.asm` listings, ...):
    /// member name → blob. Clashing with a generated member is an error.
    #[serde(default)]
    pub members: BTreeMap<String, Blob>,
    /// The unchecked path: member name → blob replaces (or adds) that member
    /// after generation; `null` leaves a generated member out.
    #[serde(default)]
    pub raw_members: BTreeMap<String, Option<Blob>>,
    /// Packaging: 2 (gzip + MD5, default) or 1 (raw tar + SHA-256).
    #[serde(default)]
    pub pkg_version: Option<u64>,
    /// The framing: a preset, `"gnu"` (default), `"neuronx-cc"` (exactly as
    /// neuronx-cc 2.21+ writes, gzip MTIME 0) or `"neuronx-cc-2.16"`; or a
    /// recorded framing object (as `neff unpack --header-out` writes under
    /// `"framing"`).
    #[serde(default)]
    pub framing: Option<FramingSpec>,
    /// gzip level 1-9 (default 1).
    #[serde(default)]
    pub level: Option<u32>,
    /// The header UUID, `"random"`, or `"keep"` (the header's recorded one even
    /// after an edit). Default: derived from the content (a lifted spec keeps
    /// its recorded UUID while the payload is unchanged).
    #[serde(default)]
    pub uuid: Option<String>,
    /// Feature bits to set besides those the content implies: names from
    /// `neff_schema::features::KNOWN` (e.g. `"collective_has_offset"`) or
    /// single `0x...` bits.
    #[serde(default)]
    pub features: Vec<String>,
    /// Header fields set over everything computed (as `neff inspect --json`
    /// prints them under `header`); `feature_bits` and `vnc_size` here replace
    /// the computed values, and `pkg_version` selects the packaging unless
    /// the spec's own `pkg_version` is set.
    #[serde(default)]
    pub header: Option<HeaderPatch>,
    /// Skip the builder's checks before writing (the unchecked path: a
    /// var with no data, sizes that disagree). The output is still read back
    /// through the loader's gates; see `keep_refused`.
    #[serde(default)]
    pub unchecked: bool,
    /// Keep an output the loader's gates refuse (for negative fixtures);
    /// otherwise a refused NEFF is not written.
    #[serde(default)]
    pub keep_refused: bool,
}

/// `framing`: a preset name or a recorded framing.
#[derive(Debug, Clone, Deserialize, schemars::JsonSchema)]
#[serde(untagged)]
pub enum FramingSpec {
    /// A preset name (`gnu`, `neuronx-cc`, `neuronx-cc-2.16`).
    Preset(String),
    /// A recorded framing.
    Exact(Box<Framing>),
}

impl FramingSpec {
    /// The preset this names (an error names the presets).
    fn preset(name: &str) -> Result<FramingPreset, Error> {
        FramingPreset::parse(name).map_or_else(
            || {
                let names: Vec<&str> = FramingPreset::ALL.iter().map(|p| p.name()).collect();
                invalid(
                    "framing",
                    format!("{name:?} is not a framing preset ({})", names.join(", ")),
                )
            },
            Ok,
        )
    }
}

/// One subgraph (`sgNN/`). Variables get dense var_ids: inputs, then outputs,
/// then tmp_bufs, state_buffers, weights and vars in that order, each in list
/// order, except those that pin a `var_id`.
#[derive(Debug, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SubgraphSpec {
    /// The folder and KELF graph name (`sg00`).
    pub name: String,
    /// def.json `name` (default: the subgraph name; `"definition"`, as the
    /// compilers write it, under the `neuronx-cc` framing presets).
    #[serde(default)]
    pub def_name: Option<String>,
    /// def.json `version` (not read by the loader; the fixture's is `"0.6-"`,
    /// the compilers' `"0.6"`, the default under the `neuronx-cc` presets).
    #[serde(default)]
    pub def_version: Option<String>,
    /// Model inputs (`type: "input"`); each needs a dtype and a shape.
    #[serde(default)]
    pub inputs: Vec<TensorSpec>,
    /// Model outputs (`type: "output"`); each needs a dtype and a shape; at least one.
    #[serde(default)]
    pub outputs: Vec<TensorSpec>,
    /// Scratch buffers (`type: "tmp-buf"`); each needs a size or a dtype and shape.
    #[serde(default)]
    pub tmp_bufs: Vec<TensorSpec>,
    /// State-buffer variables (`type: "state-buffer"`).
    #[serde(default)]
    pub state_buffers: Vec<TensorSpec>,
    /// Weights (`type: "file"`), as .npy v1 or raw bytes.
    #[serde(default)]
    pub weights: Vec<WeightSpec>,
    /// Variables of any other type (`virtual`, `pointer`, `list`, `remote`, ...).
    #[serde(default)]
    pub vars: Vec<VarSpec>,
    /// DMA queues by name.
    #[serde(default)]
    pub dma_queues: BTreeMap<String, DmaQueue>,
    /// Top-level def.json DMA blocks (manifest objects, written as they are).
    #[serde(default)]
    pub dma: Vec<DmaBlock>,
    /// Engine programs by engine (`pe`, `act`, `pool`, `dve`, `sp`). All five
    /// engines are always written; an engine not listed gets an empty program.
    #[serde(default)]
    pub engines: BTreeMap<Engine, EngineSpec>,
    /// GPSIMD ucode libraries. Written inline in def.json, in
    /// `<sg>/ucode_lib.json` and as members; sets feature bit `custom_ops`.
    #[serde(default)]
    pub ucode_libs: Vec<UcodeLibSpec>,
    /// Add the EVTACCEL carveout CAYMAN requires
    /// (`{"type": "evtaccel", "offset": 229368, "size": 8, "base_partition": 0, "partitions": 128}`).
    #[serde(default)]
    pub evtaccel: bool,
    /// Other `runtime_statebuffer_reservation` entries, as they are.
    #[serde(default)]
    pub carveouts: Vec<Carveout>,
    /// def.json `replica_groups` (collectives).
    #[serde(default)]
    pub replica_groups: Option<Vec<serde_json::Value>>,
    /// def.json `src_target_pairs` (collectives).
    #[serde(default)]
    pub src_target_pairs: Option<Vec<serde_json::Value>>,
    /// def.json `num_streams`.
    #[serde(default)]
    pub num_streams: Option<u64>,
    /// def.json `fp8_conversion_config`.
    #[serde(default)]
    pub fp8_conversion_config: Option<Fp8Config>,
    /// Extra def.json keys written as they are (a generated key's name replaces it).
    #[serde(default)]
    pub extra: Extra,
}

/// A variable of a fixed type.
#[derive(Debug, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct TensorSpec {
    /// The variable (and, for inputs and outputs, tensor) name.
    pub name: String,
    /// Element type.
    #[serde(default)]
    pub dtype: Option<Dtype>,
    /// Shape.
    #[serde(default)]
    pub shape: Option<Vec<u64>>,
    /// Size in bytes (default: elements × element size).
    #[serde(default)]
    pub size: Option<u64>,
    /// Pins the var_id (the others fill the free ids).
    #[serde(default)]
    pub var_id: Option<u64>,
    /// Extra keys in the def.json var object (`"#transfer-type"`,
    /// `internal_shape`, `alignment`, ...).
    #[serde(default)]
    pub extra: Extra,
}

/// A variable of any type.
#[derive(Debug, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct VarSpec {
    /// The variable name.
    pub name: String,
    /// The def.json `type`.
    #[serde(rename = "type")]
    pub kind: String,
    /// Element type.
    #[serde(default)]
    pub dtype: Option<Dtype>,
    /// Shape.
    #[serde(default)]
    pub shape: Option<Vec<u64>>,
    /// Size in bytes (`virtual` needs one; `pointer` defaults to 8).
    #[serde(default)]
    pub size: Option<u64>,
    /// Pins the var_id.
    #[serde(default)]
    pub var_id: Option<u64>,
    /// Extra keys (`list`, `referenced_var_id`, `backing_buf`, ...).
    #[serde(default)]
    pub extra: Extra,
}

/// Weights: exactly one of `npy` and `raw`.
#[derive(Debug, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct WeightSpec {
    /// The variable name.
    pub name: String,
    /// A .npy version 1 file (checked; its dtype and shape fill the var).
    #[serde(default)]
    pub npy: Option<Blob>,
    /// Raw bytes (streamed as they are). With a `dtype` of known element size
    /// and a `shape`, their length must be elements × element size.
    #[serde(default)]
    pub raw: Option<Blob>,
    /// The member name in the subgraph folder (default `<name>.npy` / `<name>.bin`).
    #[serde(default)]
    pub file_name: Option<String>,
    /// Element type (default: from the .npy header; one given must fit the
    /// data's length with the shape).
    #[serde(default)]
    pub dtype: Option<Dtype>,
    /// Shape (default: from the .npy header).
    #[serde(default)]
    pub shape: Option<Vec<u64>>,
    /// `size` for the var entry (none by default).
    #[serde(default)]
    pub size: Option<u64>,
    /// Pins the var_id.
    #[serde(default)]
    pub var_id: Option<u64>,
    /// Extra keys in the def.json var object.
    #[serde(default)]
    pub extra: Extra,
}

/// One engine's program: its instruction stream and its manifest, the
/// typed model's engine manifest (`neff schema engine`: `dma`, `name`,
/// `act_semaphore`, `act_info`, `activation_function_sets`, `dve_tables`, …;
/// any other key is written as it is). What the manifest leaves out is
/// filled in: `instr` (the instruction member), `dma` (`[]`) and `name`.
/// An `extra` object (the older spelling) is merged in.
#[derive(Debug, Default, Deserialize, schemars::JsonSchema)]
pub struct EngineSpec {
    /// The instruction stream (`<eng>.bin`); empty when absent.
    #[serde(default)]
    pub instructions: Option<Blob>,
    /// The engine manifest.
    #[serde(flatten)]
    pub manifest: EngineJson,
}

/// A GPSIMD ucode library.
#[derive(Debug, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct UcodeLibSpec {
    /// The library member name in the subgraph folder (unique: G24e).
    pub library: String,
    /// The library bytes (an Xtensa ELF32; opaque to the builder).
    pub data: Blob,
    /// The ucode ABI version; the major must be 1 (e.g. `"1.21.1.0"`).
    pub ulib_to_ucode_version: String,
    /// The ISA version (producer field).
    #[serde(default)]
    pub ulib_to_isa_version: Option<String>,
    /// Built-in library (default false).
    #[serde(default)]
    pub is_builtin: Option<bool>,
    /// Must be 0 (default 0).
    #[serde(default)]
    pub cpu_id: Option<u64>,
    /// 0, 1 or 8 (default 1).
    #[serde(default)]
    pub total_cpus: Option<u64>,
    /// The functions; `sub_opcode`s left out are numbered densely per subgraph.
    #[serde(default)]
    pub functions: Vec<FunctionSpec>,
    /// Extra keys in the library object.
    #[serde(default)]
    pub extra: Extra,
}

/// A ucode function.
#[derive(Debug, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct FunctionSpec {
    /// The function name (at most 64 characters).
    pub name: String,
    /// The function id byte (default: next free, dense per subgraph).
    #[serde(default)]
    pub sub_opcode: Option<u64>,
    /// The opcode (default 133, CUSTOM_OP).
    #[serde(default)]
    pub opcode: Option<i64>,
}

/// Bytes for a member: a path relative to the spec file (a string or
/// `{"path": ...}`), `{"base64": ...}` or `{"text": ...}`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Blob {
    /// A file, streamed when the NEFF is written.
    Path(PathBuf),
    /// Standard base64.
    Base64(String),
    /// UTF-8 text.
    Text(String),
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct BlobObject {
    #[serde(default)]
    path: Option<PathBuf>,
    #[serde(default)]
    base64: Option<String>,
    #[serde(default)]
    text: Option<String>,
}

impl<'de> Deserialize<'de> for Blob {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct BlobVisitor;
        impl<'de> Visitor<'de> for BlobVisitor {
            type Value = Blob;

            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str(r#"a path string, {"path": ...}, {"base64": ...} or {"text": ...}"#)
            }

            fn visit_str<E: de::Error>(self, v: &str) -> Result<Blob, E> {
                Ok(Blob::Path(PathBuf::from(v)))
            }

            fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<Blob, A::Error> {
                let o = BlobObject::deserialize(de::value::MapAccessDeserializer::new(map))?;
                match (o.path, o.base64, o.text) {
                    (Some(p), None, None) => Ok(Blob::Path(p)),
                    (None, Some(b), None) => Ok(Blob::Base64(b)),
                    (None, None, Some(t)) => Ok(Blob::Text(t)),
                    _ => Err(de::Error::custom(
                        "a blob object needs exactly one of \"path\", \"base64\" and \"text\"",
                    )),
                }
            }
        }
        d.deserialize_any(BlobVisitor)
    }
}

impl serde::Serialize for Blob {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeMap;
        let (key, value) = match self {
            Blob::Path(path) => return s.serialize_str(&path.to_string_lossy()),
            Blob::Base64(text) => ("base64", text),
            Blob::Text(text) => ("text", text),
        };
        let mut map = s.serialize_map(Some(1))?;
        map.serialize_entry(key, value)?;
        map.end()
    }
}

impl schemars::JsonSchema for Blob {
    fn schema_name() -> std::borrow::Cow<'static, str> {
        "Blob".into()
    }

    fn json_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
        schemars::json_schema!({
            "description": "Member bytes: a path relative to the spec file, or an object with exactly one of path, base64 (standard alphabet) and text.",
            "oneOf": [
                { "type": "string" },
                { "type": "object", "properties": { "path": { "type": "string" } }, "required": ["path"], "additionalProperties": false },
                { "type": "object", "properties": { "base64": { "type": "string" } }, "required": ["base64"], "additionalProperties": false },
                { "type": "object", "properties": { "text": { "type": "string" } }, "required": ["text"], "additionalProperties": false }
            ]
        })
    }
}

/// A value is unusable; `key` is its path in the spec
/// (`subgraphs[0].weights[1].npy`), which the message also starts with.
fn invalid<T>(key: impl Into<String>, message: impl Into<String>) -> Result<T, Error> {
    let key = key.into();
    let message = format!("{key}: {}", message.into());
    Err(Error::new(ErrorKind::Spec, message).at_key(key))
}

impl BuildSpec {
    /// Reads and parses a spec file.
    pub fn from_path(path: &Path) -> Result<BuildSpec, Error> {
        let bytes =
            crate::small_file::read_small_file(path, crate::small_file::SPEC_MAX, "build spec")?;
        BuildSpec::from_slice(path, &bytes)
    }

    /// Parses spec bytes; `path` names them in errors. A key repeated in an
    /// object is refused with the line and column of both occurrences.
    pub fn from_slice(path: &Path, bytes: &[u8]) -> Result<BuildSpec, Error> {
        if let Some(repeated) = crate::repeated_keys::first_repeated_key(bytes) {
            return Err(Error::new(ErrorKind::Spec, repeated.to_string())
                .at_path(path)
                .at_key(repeated.path));
        }
        serde_json::from_slice(bytes).map_err(|e| {
            Error::new(ErrorKind::Spec, e.to_string())
                .at_path(path)
                .with_source(e)
        })
    }

    /// Whether this is the lifted form (a `payload`), built by
    /// [`BuildSpec::into_model`] rather than [`BuildSpec::into_builder`].
    pub fn is_lifted(&self) -> bool {
        !self.payload.is_empty()
    }

    /// The lifted form as a [`Model`] and the settings it packs with, its
    /// `weights` edits applied (blob paths relative to `base`, the spec's
    /// folder). Keys that only shape generated manifests are refused, naming
    /// the key.
    pub fn into_model(self, base: &Path) -> Result<(Model, PackSettings), Error> {
        let generated = [
            ("subgraphs", !self.subgraphs.is_empty()),
            ("members", !self.members.is_empty()),
            ("raw_members", !self.raw_members.is_empty()),
            ("target", self.target.is_some()),
            ("kelf_member", self.kelf_member.is_some()),
            ("kelf_node_name", self.kelf_node_name.is_some()),
            ("kelf_version", self.kelf_version.is_some()),
            ("kelf_extra", !self.kelf_extra.is_empty()),
            ("neff_json_extra", !self.neff_json_extra.is_empty()),
        ];
        if let Some((key, _)) = generated.iter().find(|(_, set)| *set) {
            return invalid(
                *key,
                "shapes generated manifests; a spec with a payload has none (edit the payload's members instead)",
            );
        }
        let mut settings = PackSettings {
            name: self.name,
            level: self.level,
            uuid: self.uuid,
            keep_refused: self.keep_refused,
            ..PackSettings::default()
        };
        if let Some(pkg) = self.pkg_version {
            settings.pkg_version = Some(PkgVersion::from_value(pkg).map_or_else(
                || invalid("pkg_version", format!("{pkg} is not 1 or 2")),
                Ok,
            )?);
        }
        let mut framing = None;
        match self.framing {
            Some(FramingSpec::Preset(name)) => settings.framing = Some(FramingSpec::preset(&name)?),
            Some(FramingSpec::Exact(f)) => framing = Some(*f),
            None => {}
        }
        let mut header = self.header;
        if !self.features.is_empty() {
            let bits = features::mask_of(&self.features)
                .or_else(|e| invalid("features", e.to_string()))?;
            let h = header.get_or_insert_with(HeaderPatch::default);
            h.feature_bits = Some(h.feature_bits.unwrap_or(0) | bits);
        }
        let mut model = Model {
            header,
            framing,
            source_hash: self.source_hash,
            payload: self.payload,
        };
        for (i, edit) in self.weights.into_iter().enumerate() {
            model
                .replace_weight(base, edit)
                .map_err(|e| e.at_key(format!("weights[{i}]")))?;
        }
        Ok((model, settings))
    }

    /// The builder this spec describes; relative blob paths resolve against
    /// `base` (the spec file's folder).
    pub fn into_builder(self, base: &Path) -> Result<NeffBuilder, Error> {
        self.into_builder_with(&mut |key, blob| blob_data(base, key, blob))
    }

    /// The builder this spec describes, each blob turned into data by
    /// `resolve(key, blob)` (`key` is the blob's path in the spec, for
    /// errors); [`blob_data`] is what [`BuildSpec::into_builder`] uses. A
    /// caller with data of its own (the Python bindings' buffers) maps its
    /// placeholders here.
    pub fn into_builder_with(
        self,
        resolve: &mut dyn FnMut(&str, Blob) -> Result<Data, Error>,
    ) -> Result<NeffBuilder, Error> {
        if self.is_lifted() {
            return invalid(
                "payload",
                "a spec with a payload is built as a model (BuildSpec::into_model)",
            );
        }
        if !self.weights.is_empty() {
            return invalid(
                "weights",
                "edits a lifted model's weights (a spec with a payload); here give each weight in its subgraph",
            );
        }
        let mut blobs = Blobs { resolve };
        let mut b = NeffBuilder::new()
            .unchecked(self.unchecked)
            .keep_refused(self.keep_refused)
            .maybe(self.name, NeffBuilder::name)
            .maybe(self.target, NeffBuilder::target_text)
            .maybe(self.kelf_member, NeffBuilder::kelf_member)
            .maybe(self.kelf_node_name, NeffBuilder::kelf_node_name)
            .maybe(self.kelf_version, NeffBuilder::kelf_version)
            .each(self.kelf_extra, |b, (k, v)| b.kelf_key(k, v))
            .each(self.neff_json_extra, |b, (k, v)| b.neff_json_key(k, v));
        for (i, sg) in self.subgraphs.into_iter().enumerate() {
            b = b.add_subgraph(sg.into_subgraph(&format!("subgraphs[{i}]"), &mut blobs)?);
        }
        for (name, blob) in self.members {
            let data = blobs.data(&format!("members.{name:?}"), blob)?;
            b = b.member(name, data);
        }
        for (name, blob) in self.raw_members {
            b = match blob {
                Some(blob) => {
                    let data = blobs.data(&format!("raw_members.{name:?}"), blob)?;
                    b.raw_member(name, data)
                }
                None => b.omit_member(name),
            };
        }
        // A pkg_version in the header selects the packaging (as in `neff pack`),
        // unless the spec's own pkg_version says otherwise.
        let mut header = self.header;
        let header_pkg = header.as_mut().and_then(|h| h.pkg_version.take());
        if let Some(pkg) = self.pkg_version.or(header_pkg) {
            let Some(pkg) = PkgVersion::from_value(pkg) else {
                return invalid("pkg_version", format!("{pkg} is not 1 or 2"));
            };
            b = b.pkg_version(pkg);
        }
        match self.framing {
            Some(FramingSpec::Preset(name)) => b = b.framing(FramingSpec::preset(&name)?),
            Some(FramingSpec::Exact(framing)) => b = b.framing_with(*framing),
            None => {}
        }
        if let Some(level) = self.level {
            if !(1..=9).contains(&level) {
                return invalid("level", format!("{level} is out of range: use 1 to 9"));
            }
            b = b.level(level);
        }
        if let Some(uuid) = self.uuid {
            b = b.uuid(parse_uuid(&uuid).or_else(|e| invalid("uuid", e))?);
        }
        let bits =
            features::mask_of(&self.features).or_else(|e| invalid("features", e.to_string()))?;
        Ok(b.feature_bits(bits).maybe(header, NeffBuilder::header))
    }
}

/// `"random"` or a UUID.
pub fn parse_uuid(text: &str) -> Result<UuidChoice, String> {
    if text == "random" {
        return Ok(UuidChoice::Random);
    }
    text.parse::<Uuid>()
        .map(UuidChoice::Explicit)
        .map_err(|e| e.to_string())
}

struct Blobs<'a> {
    resolve: &'a mut dyn FnMut(&str, Blob) -> Result<Data, Error>,
}

impl Blobs<'_> {
    fn data(&mut self, key: &str, blob: Blob) -> Result<Data, Error> {
        (self.resolve)(key, blob)
    }
}

/// Merges an `extra` object (the spec's older spelling of a manifest's
/// unknown keys) into the manifest's own keys; a key given both ways is an
/// error naming it.
fn merge_older_extra(extra: &mut Extra, key: &str) -> Result<(), Error> {
    let Some(older) = extra.remove("extra") else {
        return Ok(());
    };
    let serde_json::Value::Object(older) = older else {
        return invalid(format!("{key}.extra"), "must be an object");
    };
    for (k, v) in older {
        if extra.contains_key(&k) {
            return invalid(format!("{key}.extra.{k}"), "is also given directly");
        }
        extra.insert(k, v);
    }
    Ok(())
}

/// A blob's data: a path relative to `base` (checked to be a regular file,
/// streamed when written), decoded base64 or the text's bytes; `key` names
/// the blob in errors.
pub fn blob_data(base: &Path, key: &str, blob: Blob) -> Result<Data, Error> {
    match blob {
        Blob::Path(p) => {
            let path = base.join(&p);
            match std::fs::metadata(&path) {
                Ok(m) if m.is_file() => Ok(Data::Path(path)),
                Ok(_) => invalid(key, format!("{} is not a regular file", path.display())),
                Err(e) => invalid(key, format!("cannot read {}: {e}", path.display())),
            }
        }
        Blob::Base64(text) => crate::base64::decode(&text)
            .map(Data::bytes)
            .or_else(|e| invalid(format!("{key}.base64"), e.to_string())),
        Blob::Text(text) => Ok(Data::bytes(text.into_bytes())),
    }
}

fn tensor(
    dtype: Option<Dtype>,
    shape: Option<Vec<u64>>,
    size: Option<u64>,
    var_id: Option<u64>,
    extra: Extra,
) -> Tensor {
    Tensor::default()
        .maybe(dtype, Tensor::dtype)
        .maybe(shape, Tensor::shape)
        .maybe(size, Tensor::size)
        .maybe(var_id, Tensor::var_id)
        .each(extra, |t, (k, v)| t.key(k, v))
}

/// Builder steps for optional and repeated spec values.
trait Steps: Sized {
    /// `step(self, value)` when there is a value.
    fn maybe<T>(self, value: Option<T>, step: impl FnOnce(Self, T) -> Self) -> Self {
        match value {
            Some(v) => step(self, v),
            None => self,
        }
    }

    /// `step` once for each item, in order.
    fn each<T>(
        self,
        items: impl IntoIterator<Item = T>,
        step: impl FnMut(Self, T) -> Self,
    ) -> Self {
        items.into_iter().fold(self, step)
    }
}

impl<B> Steps for B {}

fn tensors(specs: Vec<TensorSpec>) -> impl Iterator<Item = (String, Tensor)> {
    specs
        .into_iter()
        .map(|t| (t.name, tensor(t.dtype, t.shape, t.size, t.var_id, t.extra)))
}

impl SubgraphSpec {
    fn into_subgraph(self, key: &str, blobs: &mut Blobs<'_>) -> Result<Subgraph, Error> {
        let mut sg = Subgraph::new(self.name)
            .maybe(self.def_name, Subgraph::def_name)
            .maybe(self.def_version, Subgraph::def_version)
            .each(tensors(self.inputs), |sg, (n, t)| sg.input(n, t))
            .each(tensors(self.outputs), |sg, (n, t)| sg.output(n, t))
            .each(tensors(self.tmp_bufs), |sg, (n, t)| sg.tmp_buf(n, t))
            .each(tensors(self.state_buffers), |sg, (n, t)| {
                sg.state_buffer(n, t)
            });
        for (i, w) in self.weights.into_iter().enumerate() {
            let at = format!("{key}.weights[{i}]");
            let weight = match (w.npy, w.raw) {
                (Some(blob), None) => Weight::npy(blobs.data(&format!("{at}.npy"), blob)?),
                (None, Some(blob)) => Weight::raw(blobs.data(&format!("{at}.raw"), blob)?),
                _ => return invalid(at, "give exactly one of \"npy\" and \"raw\""),
            };
            let weight = weight.maybe(w.file_name, Weight::file_name);
            let t = tensor(w.dtype, w.shape, w.size, w.var_id, w.extra);
            sg = sg.weight(w.name, weight.tensor(t));
        }
        sg = sg.each(self.vars, |sg, v| {
            let t = tensor(v.dtype, v.shape, v.size, v.var_id, v.extra);
            sg.var(v.name, v.kind, t)
        });
        for (name, mut queue) in self.dma_queues {
            merge_older_extra(&mut queue.extra, &format!("{key}.dma_queues.{name}"))?;
            sg = sg.dma_queue(name, queue);
        }
        sg = sg.each(self.dma, Subgraph::dma);
        for (engine, e) in self.engines {
            let mut manifest = e.manifest;
            merge_older_extra(&mut manifest.extra, &format!("{key}.engines.{engine}"))?;
            let mut program = EngineProgram::new().manifest(manifest);
            if let Some(blob) = e.instructions {
                let at = format!("{key}.engines.{engine}.instructions");
                program = program.instructions(blobs.data(&at, blob)?);
            }
            sg = sg.engine(engine, program);
        }
        for (i, l) in self.ucode_libs.into_iter().enumerate() {
            let data = blobs.data(&format!("{key}.ucode_libs[{i}].data"), l.data)?;
            let mut lib = UcodeLib::new(l.library, l.ulib_to_ucode_version);
            lib.ulib_to_isa_version = l.ulib_to_isa_version;
            lib.is_builtin = l.is_builtin.or(lib.is_builtin);
            lib.cpu_id = l.cpu_id.or(lib.cpu_id);
            lib.total_cpus = l.total_cpus.or(lib.total_cpus);
            lib.functions = Some(
                l.functions
                    .into_iter()
                    .map(|f| {
                        let mut func = UcodeFunction::new(f.name);
                        func.sub_opcode = f.sub_opcode;
                        if let Some(op) = f.opcode {
                            func.opcode = op;
                        }
                        func
                    })
                    .collect(),
            );
            lib.extra = l.extra;
            sg = sg.ucode_lib(lib, data);
        }
        Ok(sg
            .maybe(self.evtaccel.then(Carveout::evtaccel), Subgraph::carveout)
            .each(self.carveouts, Subgraph::carveout)
            .maybe(self.replica_groups, Subgraph::replica_groups)
            .maybe(self.src_target_pairs, Subgraph::src_target_pairs)
            .maybe(self.num_streams, Subgraph::num_streams)
            .maybe(self.fp8_conversion_config, Subgraph::fp8_config)
            .each(self.extra, |sg, (k, v)| sg.key(k, v)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(text: &str) -> Result<BuildSpec, Error> {
        BuildSpec::from_slice(Path::new("spec.json"), text.as_bytes())
    }

    #[test]
    fn unknown_keys_are_refused_with_their_position() {
        let err = parse(r#"{"subgraphs": [], "nmae": "x"}"#)
            .unwrap_err()
            .to_string();
        assert!(err.starts_with("spec.json: unknown field `nmae`"), "{err}");
        assert!(err.contains("line 1 column"), "{err}");
        let err = parse(
            r#"{"subgraphs": [{"name": "sg00", "inputs": [{"name": "x", "dtyp": "float32"}]}]}"#,
        )
        .unwrap_err()
        .to_string();
        assert!(err.contains("unknown field `dtyp`"), "{err}");
        // A queue is the model's: its owner is kept as written, for the
        // loader's gates to judge (one rule set).
        let spec = parse(r#"{"subgraphs": [{"name": "s", "dma_queues": {"q": {"owner": "gpsimd", "type": "in"}}}]}"#)
            .unwrap();
        assert_eq!(
            spec.subgraphs[0].dma_queues["q"].owner.as_deref(),
            Some("gpsimd")
        );
    }

    #[test]
    fn repeated_keys_are_refused_with_both_lines() {
        let err = parse(
            "{\"subgraphs\": [{\"name\": \"s\", \"dma_queues\": {\n  \"q_in\": {\"type\": \"in\"},\n  \"q_in\": {\"type\": \"out\"}}}]}",
        )
        .unwrap_err();
        assert_eq!(err.kind(), ErrorKind::Spec);
        assert_eq!(
            err.to_string(),
            "spec.json: 3:3: repeated key \"subgraphs[0].dma_queues.q_in\" (first at line 2, column 3)"
        );
    }

    #[test]
    fn blobs_in_every_form() {
        let spec = parse(
            r#"{"subgraphs": [], "members": {
                "a": "rel/a.bin", "b": {"path": "b.bin"}, "c": {"base64": "aGk="}, "d": {"text": "hi"}}}"#,
        )
        .unwrap();
        assert_eq!(spec.members["a"], Blob::Path("rel/a.bin".into()));
        assert_eq!(spec.members["b"], Blob::Path("b.bin".into()));
        assert_eq!(spec.members["c"], Blob::Base64("aGk=".into()));
        assert_eq!(spec.members["d"], Blob::Text("hi".into()));
        let err = parse(r#"{"subgraphs": [], "members": {"a": {"path": "x", "text": "y"}}}"#)
            .unwrap_err()
            .to_string();
        assert!(err.contains("exactly one of"), "{err}");
        let err = parse(r#"{"subgraphs": [], "members": {"a": {"file": "x"}}}"#)
            .unwrap_err()
            .to_string();
        assert!(err.contains("unknown field `file`"), "{err}");
        let err = parse(r#"{"subgraphs": [], "members": {"a": 3}}"#)
            .unwrap_err()
            .to_string();
        assert!(err.contains("a path string"), "{err}");
    }

    #[test]
    fn conversion_errors_name_the_spec_key() {
        let dir = std::env::temp_dir();
        let cases = [
            (
                r#"{"subgraphs": [{"name": "sg00", "engines": {"pe": {"instructions": "nope/pe.bin"}}}]}"#,
                "subgraphs[0].engines.pe.instructions: cannot read",
            ),
            (
                r#"{"subgraphs": [{"name": "sg00", "ucode_libs": [{"library": "l.so", "ulib_to_ucode_version": "1.0", "data": {"base64": "!!"}}]}]}"#,
                "subgraphs[0].ucode_libs[0].data.base64: invalid base64 character '!' at offset 0",
            ),
            (
                r#"{"subgraphs": [{"name": "sg00", "weights": [{"name": "w"}]}]}"#,
                "subgraphs[0].weights[0]: give exactly one of",
            ),
            (
                r#"{"subgraphs": [], "pkg_version": 3}"#,
                "pkg_version: 3 is not 1 or 2",
            ),
            (r#"{"subgraphs": [], "uuid": "x"}"#, "uuid: "),
            (
                r#"{"subgraphs": [], "features": ["nope"]}"#,
                "features: unknown feature",
            ),
            (
                r#"{"subgraphs": [], "level": 0}"#,
                "level: 0 is out of range",
            ),
        ];
        for (text, needle) in cases {
            let err = parse(text)
                .unwrap()
                .into_builder(&dir)
                .err()
                .unwrap()
                .to_string();
            assert!(err.starts_with(needle), "{needle:?} vs {err:?}");
        }
    }

    #[test]
    fn a_resolver_supplies_every_blob_with_its_key() {
        let spec = parse(
            r#"{"subgraphs": [{"name": "sg00", "engines": {"pe": {"instructions": "pe.bin"}}}],
                "members": {"notes.txt": {"text": "as written"}}}"#,
        )
        .unwrap();
        let mut keys = Vec::new();
        let build = spec
            .into_builder_with(&mut |key, blob| {
                keys.push(key.to_string());
                match blob {
                    Blob::Path(p) => Ok(Data::bytes(format!("from {}", p.display()).into_bytes())),
                    other => blob_data(Path::new("."), key, other),
                }
            })
            .unwrap()
            .unchecked(true)
            .build()
            .unwrap();
        assert_eq!(
            keys,
            [
                "subgraphs[0].engines.pe.instructions",
                "members.\"notes.txt\""
            ]
        );
        assert_eq!(build.bytes("sg00/pe.bin"), Some(&b"from pe.bin"[..]));
        assert_eq!(build.bytes("notes.txt"), Some(&b"as written"[..]));
    }
}
