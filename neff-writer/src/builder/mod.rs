//! A fluent builder for whole models: it writes the manifest chain (`neff.json`
//! → `kelf-0.json` → `sgNN/def.json` → `sgNN/<eng>.json` → `.bin`, weights and
//! ucode libraries) from a description of the subgraphs, then packs it with
//! [`Packager`], whose check of the output runs every loader gate.
//!
//! ```no_run
//! use neff_schema::manifest::{Dtype, Engine};
//! use neff_schema::Target;
//! use neff_writer::builder::{NeffBuilder, Tensor, Weight};
//!
//! let outcome = NeffBuilder::new()
//!     .name("m")
//!     .target(Target::CAYMAN)
//!     .subgraph("sg00", |sg| {
//!         sg.input("x", Tensor::new(Dtype::Float32, [4]))
//!             .output("y", Tensor::new(Dtype::Float32, [4]))
//!             .tmp_buf("scratch", Tensor::bytes(64))
//!             .weight("w", Weight::npy(std::path::PathBuf::from("w.npy")))
//!             .instructions(Engine::Pe, vec![0u8; 64])
//!     })
//!     .write_to_path("m.neff")?;
//! println!("{}", outcome.report.summary());
//! # Ok::<(), neff_writer::Error>(())
//! ```
//!
//! Two doors, as in wasm-encoder:
//! * **checked** (the default): the builder refuses what only it knows
//!   (names that clash, a shape whose element count or byte size overflows
//!   64 bits, weight data whose length is not its dtype × shape, an
//!   unreadable or malformed `.npy`…); the loader's gates then run on the
//!   bytes as they are written (the streamed check; with
//!   [`NeffBuilder::paranoid_readback`], on the whole file read back), and a
//!   NEFF they refuse is never renamed into place or handed to a writer (an
//!   [`Error`] of kind [`crate::ErrorKind::Refused`]: gate and runtime
//!   message). A refused model is compressed before it is refused: there is
//!   no second copy of the gates to run over the members in memory;
//! * **unchecked**: [`NeffBuilder::unchecked`] skips the builder's own
//!   checks, and [`NeffBuilder::keep_refused`] (a separate choice) keeps an
//!   output the gates refuse; with them [`NeffBuilder::raw_member`] /
//!   [`NeffBuilder::omit_member`] replace or drop any generated member with
//!   any bytes — for negative fixtures.
//!
//! What gets generated:
//! * var_ids dense 0..N-1 per subgraph: inputs first, then outputs, then every
//!   other variable, each group in declaration order (spec §4.3.1's binding
//!   contract). A variable may pin its id ([`Tensor::var_id`]); the others
//!   fill the free ids in that order.
//! * `neff.json`: one `null` node per model input, then one `tvm_op` node
//!   (`sg_tonga0`, `attrs.func_name "__kelf"`, `attrs.kelf` = the KELF member)
//!   producing every output. The model's inputs and outputs are those of the
//!   subgraphs (by name, first subgraph first), each subgraph's in var_id order.
//! * `kelf-0.json` listing every subgraph; `sgNN/def.json`; all five
//!   `sgNN/<eng>.json` + `sgNN/<eng>.bin` (empty when no instructions are given);
//!   ucode libraries as members, inline in def.json and in `sgNN/ucode_lib.json`;
//!   `runtime_statebuffer_reservation` always (at least `[]`).
//! * header: `feature_bits` gets `custom_ops` (0x4) when any ucode library is
//!   present and `neff_feature_vnc` (0x400) with `vnc_size` = the subgraph
//!   count when there is more than one subgraph.
//!
//! Every manifest is pretty-printed with sorted keys, or compact when the
//! pretty form would pass the loader's parse limit
//! ([`neff_loader::MANIFEST_MAX`], 128 MiB); the same description always
//! gives the same bytes. Generation is linear in the number of variables.

pub mod npy;
mod style;
pub(crate) mod subgraph;
mod tensor;
pub(crate) mod weights;

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::io::Write;
use std::path::Path;

use neff_loader::RuntimeProfile;
use neff_schema::features;
use neff_schema::manifest::neff_json::IoTensor;
use neff_schema::manifest::{self, KelfDescriptor, Manifest, NeffJson};
use neff_schema::{Framing, FramingPreset, PkgVersion, Target};

pub use crate::blob::Data;
use crate::blob::{blob_data, Blob};
use crate::build_spec::{BuildSpec, FramingSpec};
use crate::error::{invalid, spec_error as spec_invalid, Error, ErrorKind};
use crate::header_options::{HeaderPatch, UuidChoice};
use crate::member::{MemberName, MemberSource};
use crate::packager::{PackOptions, PackOutcome, Packager};

pub use style::{ContentStyle, COMPILER_DEF_NAME, COMPILER_DEF_VERSION};
pub use subgraph::{dtype_hint, EngineProgram, FunctionSpec, Subgraph, UcodeLibSpec};
pub use tensor::{Tensor, VarSpec, Weight, WeightFormat};

/// The KELF descriptor member the builder writes (producer naming).
pub const DEFAULT_KELF_MEMBER: &str = "kelf-0.json";
/// The name of the `__kelf` node in `neff.json` (the fixture's).
pub const DEFAULT_KELF_NODE_NAME: &str = "sg_tonga0";

/// Building a spec: the builder it describes.
impl BuildSpec {
    /// The builder this spec describes; relative blob paths resolve against
    /// `base` (the spec file's folder).
    pub fn into_builder(self, base: &Path) -> Result<NeffBuilder, Error> {
        self.into_builder_with(&mut |key, blob| blob_data(base, key, blob))
    }

    /// The builder this spec describes, each blob turned into data by
    /// `resolve(key, blob)` (`key` is the blob's path in the spec, for
    /// errors); [`blob_data`] is what [`BuildSpec::into_builder`] uses. A
    /// caller with data of its own (the Python bindings' buffers) maps its
    /// placeholders here. A lifted spec (`payload`) is refused when built.
    pub fn into_builder_with(
        mut self,
        resolve: &mut dyn FnMut(&str, Blob) -> Result<Data, Error>,
    ) -> Result<NeffBuilder, Error> {
        self.resolve_blobs(resolve)?;
        Ok(NeffBuilder::from_spec(self))
    }
}

/// The member name a barrier config is attached under (see
/// [`NeffBuilder::barrier_config`]).
pub const BARRIER_CONFIG_MEMBER: &str = "barrier_config.json";

/// Builds a NEFF from subgraphs, tensors, weights, queues and programs:
/// convenience over the model's one statement, [`BuildSpec`] (each method
/// sets the spec key of its name), plus how to write it (threads, fsync,
/// read-back, the runtime profile).
#[derive(Debug, Default)]
pub struct NeffBuilder {
    spec: BuildSpec,
    style: Option<ContentStyle>,
    options: PackOptions,
}

impl NeffBuilder {
    /// An empty model: target `"*"`, KELF member `kelf-0.json`, pkg 2 level 1,
    /// content-derived UUID.
    pub fn new() -> NeffBuilder {
        NeffBuilder::default()
    }

    /// The generated form of a build spec, its blobs resolved
    /// ([`BuildSpec::resolve_blobs`]; an unresolved path is relative to the
    /// working directory). A lifted spec (`payload`) is built as a
    /// [`crate::lift::Model`] instead: [`NeffBuilder::build`] refuses it.
    pub fn from_spec(spec: BuildSpec) -> NeffBuilder {
        NeffBuilder {
            spec,
            ..NeffBuilder::default()
        }
    }

    /// The model as described so far.
    pub fn spec(&self) -> &BuildSpec {
        &self.spec
    }

    /// The model name stored in the header (at most 255 bytes).
    pub fn name(mut self, name: impl Into<String>) -> Self {
        self.spec.name = Some(name.into());
        self
    }

    /// The KELF descriptor's `target` (default `"*"`, any instance).
    pub fn target(self, target: Target) -> Self {
        self.target_text(target.as_str())
    }

    /// The KELF descriptor's `target` as written, any string: the loader's
    /// G16 refuses one the runtime does not know (`"Cayman"`: it compares
    /// exactly).
    pub fn target_text(mut self, target: impl Into<String>) -> Self {
        self.spec.target = Some(target.into());
        self
    }

    /// The KELF descriptor's member name (default `kelf-0.json`; the
    /// runtime's fixture uses `kelf-a.json`).
    pub fn kelf_member(mut self, member: impl Into<String>) -> Self {
        self.spec.kelf_member = Some(member.into());
        self
    }

    /// The `__kelf` node's name in `neff.json` (default `sg_tonga0`).
    pub fn kelf_node_name(mut self, name: impl Into<String>) -> Self {
        self.spec.kelf_node_name = Some(name.into());
        self
    }

    /// The KELF descriptor's `version` (default `"0.5"`; must contain a `.`).
    pub fn kelf_version(mut self, version: impl Into<String>) -> Self {
        self.spec.kelf_version = Some(version.into());
        self
    }

    /// An extra key in the KELF descriptor.
    pub fn kelf_key(mut self, key: impl Into<String>, value: impl Into<serde_json::Value>) -> Self {
        self.spec.kelf_extra.insert(key.into(), value.into());
        self
    }

    /// An extra top-level key in `neff.json`.
    pub fn neff_json_key(
        mut self,
        key: impl Into<String>,
        value: impl Into<serde_json::Value>,
    ) -> Self {
        self.spec.neff_json_extra.insert(key.into(), value.into());
        self
    }

    /// Adds subgraph `name` (its folder and graph name, e.g. `sg00`),
    /// described by `describe`.
    pub fn subgraph(
        self,
        name: impl Into<String>,
        describe: impl FnOnce(Subgraph) -> Subgraph,
    ) -> Self {
        let sg = describe(Subgraph::new(name));
        self.add_subgraph(sg)
    }

    /// Adds a subgraph built separately.
    pub fn add_subgraph(mut self, subgraph: Subgraph) -> Self {
        self.spec.subgraphs.push(subgraph);
        self
    }

    /// Adds a member the manifests do not generate (e.g. `hlo_stats.json`,
    /// `.asm` listings). Clashing with a generated member is an error; use
    /// [`NeffBuilder::raw_member`] to replace one.
    pub fn member(mut self, name: impl Into<String>, data: impl Into<Data>) -> Self {
        self.spec.members.insert(name.into(), data.into());
        self
    }

    /// Attaches a barrier config as the member [`BARRIER_CONFIG_MEMBER`], in the
    /// firmware logger's JSON shape. The runtime never reads it (no manifest
    /// names it); `neff inspect` decodes it.
    pub fn barrier_config(mut self, configs: &neff_schema::barrier::BarrierConfigs) -> Self {
        self.spec.barrier_config = Some(configs.into());
        self
    }

    /// The unchecked path: sets member `name` to `data` after everything is
    /// generated, replacing a generated member of that name if there is one.
    pub fn raw_member(mut self, name: impl Into<String>, data: impl Into<Data>) -> Self {
        self.spec.raw_members.insert(name.into(), Some(data.into()));
        self
    }

    /// The unchecked path: leaves generated member `name` out.
    pub fn omit_member(mut self, name: impl Into<String>) -> Self {
        self.spec.raw_members.insert(name.into(), None);
        self
    }

    /// Packaging version (default 2: gzip + MD5).
    pub fn pkg_version(mut self, pkg: PkgVersion) -> Self {
        self.spec.pkg_version = Some(pkg.value());
        self
    }

    /// A named framing preset (default `gnu`): tar dialect and fields, member
    /// order, gzip header, deflate engine, padding and hash layout, plus, for
    /// the compiler presets, the compiler's header conventions and content
    /// style ([`ContentStyle::Compiler`]). [`NeffBuilder::level`] and
    /// [`NeffBuilder::content_style`] override it, in any order.
    pub fn framing(mut self, preset: FramingPreset) -> Self {
        self.spec.framing = Some(FramingSpec::Preset(preset.name().to_string()));
        self
    }

    /// How the generated manifests look (default: the framing preset's).
    pub fn content_style(mut self, style: ContentStyle) -> Self {
        self.style = Some(style);
        self
    }

    /// A framing given field by field (for example a preset with overrides).
    pub fn framing_with(mut self, framing: Framing) -> Self {
        self.spec.framing = Some(FramingSpec::Exact(Box::new(framing)));
        self
    }

    /// gzip level 1–9 (default 1).
    pub fn level(mut self, level: u32) -> Self {
        self.spec.level = Some(level);
        self
    }

    /// Compression threads (default: the available cores); the output does not
    /// depend on it.
    pub fn threads(mut self, threads: usize) -> Self {
        self.options.threads = threads.max(1);
        self
    }

    /// Read the written NEFF back through the loader in full instead of the
    /// streamed check ([`PackOptions::paranoid_readback`]; default off).
    pub fn paranoid_readback(mut self, on: bool) -> Self {
        self.options.paranoid_readback = on;
        self
    }

    /// Whether [`NeffBuilder::write_to_path`] fsyncs the file and its folder
    /// before returning (default true; see [`PackOptions::fsync`]).
    pub fn fsync(mut self, fsync: bool) -> Self {
        self.options.fsync = fsync;
        self
    }

    /// The header `hash` of the NEFF this build remakes: a
    /// [`UuidChoice::Recorded`] UUID is kept only while the payload hashes
    /// to it, and the outcome says whether it does
    /// ([`PackOutcome::payload_matches_source`]).
    pub fn source_hash(mut self, hash: neff_schema::header::Blob<32>) -> Self {
        self.spec.source_hash = Some(hash);
        self
    }

    /// How the header UUID is chosen (default: from the content).
    pub fn uuid(mut self, uuid: UuidChoice) -> Self {
        self.spec.uuid = match uuid {
            UuidChoice::FromContent => None,
            UuidChoice::Random => Some("random".to_string()),
            UuidChoice::Explicit(uuid) => Some(uuid.to_string()),
            UuidChoice::Recorded(uuid) => {
                self.spec
                    .header
                    .get_or_insert_with(HeaderPatch::default)
                    .uuid = Some(uuid);
                None
            }
        };
        self
    }

    /// Header fields to set over everything the builder computes (a
    /// `feature_bits`, `vnc_size` or `name` here replaces the computed one).
    pub fn header(mut self, patch: HeaderPatch) -> Self {
        self.spec.header = Some(patch);
        self
    }

    /// Feature bits to set in addition to those the content implies.
    pub fn feature_bits(mut self, bits: u64) -> Self {
        self.spec.features.0 |= bits;
        self
    }

    /// The unchecked door: skip the builder's own rules (a var with no data,
    /// sizes that disagree), for deliberately invalid inputs (with
    /// [`NeffBuilder::raw_member`] / [`NeffBuilder::omit_member`]). The
    /// loader's gates still run on the output; see
    /// [`NeffBuilder::keep_refused`].
    pub fn unchecked(mut self, unchecked: bool) -> Self {
        self.spec.unchecked = unchecked;
        self
    }

    /// Keep the written NEFF even when the loader's gates refuse it (the
    /// verdict is in the outcome). A separate choice from
    /// [`NeffBuilder::unchecked`]: a model only the gates refuse needs only
    /// this; one the builder's own rules refuse (a var with no data) also
    /// needs `unchecked`.
    pub fn keep_refused(mut self, keep: bool) -> Self {
        self.spec.keep_refused = keep;
        self
    }

    /// The runtime the output check simulates.
    pub fn profile(mut self, profile: RuntimeProfile) -> Self {
        self.options.profile = profile;
        self
    }

    /// Generates every member and the header settings (the loader's gates
    /// run when the NEFF is written).
    pub fn build(self) -> Result<Build, Error> {
        let NeffBuilder {
            mut spec,
            style,
            options: run,
        } = self;
        if spec.is_lifted() {
            return spec_invalid(
                "payload",
                "a spec with a payload is built as a model (BuildSpec::into_model)",
            );
        }
        if !spec.weights.is_empty() {
            return spec_invalid(
                "weights",
                "edits a lifted model's weights (a spec with a payload); here give each weight in its subgraph",
            );
        }
        let checked = !spec.unchecked;
        let (mut options, preset, feature_bits) = write_options(&mut spec, run)?;
        if checked && spec.subgraphs.is_empty() {
            // The runtime's G29b assert would say it less plainly.
            return spec_invalid(
                "subgraphs",
                "no subgraphs: a model needs at least one (or give a lifted spec's `payload`)",
            );
        }
        let style = style.unwrap_or(ContentStyle::of(preset));
        for sg in &spec.subgraphs {
            let name = sg.name();
            if name.is_empty() || name.contains('/') || MemberName::new(name).is_err() {
                return invalid(format!(
                    "subgraph name {name:?} must be one non-empty path component (like sg00)"
                ));
            }
        }
        let vnc = spec.subgraphs.len() > 1;
        let mut ctx = subgraph::Context {
            checked,
            style,
            vnc,
        };
        let mut members: BTreeMap<String, MemberSource> = BTreeMap::new();
        let mut kelf = KelfDescriptor::new(Target::Any);
        kelf.target = Some(
            spec.target
                .unwrap_or_else(|| Target::Any.as_str().to_string()),
        );
        kelf.version = spec
            .kelf_version
            .unwrap_or_else(|| manifest::kelf::KELF_VERSION.to_string());
        kelf.extra = spec.kelf_extra;
        let kelf_member = spec
            .kelf_member
            .unwrap_or_else(|| DEFAULT_KELF_MEMBER.to_string());
        let kelf_node_name = spec
            .kelf_node_name
            .unwrap_or_else(|| DEFAULT_KELF_NODE_NAME.to_string());
        let mut inputs = ModelIo::default();
        let mut outputs = ModelIo::default();
        let mut custom_ops = false;
        let subgraph_count = spec.subgraphs.len();
        let mut names = BTreeSet::new();
        for (index, sg) in spec.subgraphs.into_iter().enumerate() {
            let name = sg.name().to_string();
            let out = sg.generate(&mut ctx, index)?;
            kelf = kelf.graph(&name);
            if !names.insert(name.clone()) {
                // Listed again as asked, with the first one's members (one
                // folder per name): the loader's G18 refuses the repeat.
                continue;
            }
            custom_ops |= out.has_ucode;
            inputs.merge(out.inputs, &name, "input", checked)?;
            match style {
                ContentStyle::Plain => outputs.merge(out.outputs, &name, "output", checked)?,
                // neuronx-cc lists each subgraph's outputs, names repeated.
                ContentStyle::Compiler | ContentStyle::Compiler224 => {
                    outputs.tensors.extend(out.outputs)
                }
            }
            for (member, source) in out.members {
                insert_member(&mut members, member, source)?;
            }
        }
        let mut graph = NeffJson::single_kelf(
            &kelf_node_name,
            &kelf_member,
            &inputs.tensors,
            &outputs.tensors,
        );
        if style.is_compiler() {
            style::compiler_graph(&mut graph);
        }
        graph.extra = spec.neff_json_extra;
        if checked {
            subgraph::refuse_typo(&graph, "neff.json")?;
            subgraph::refuse_typo(&kelf, &kelf_member)?;
        }
        insert_member(&mut members, "neff.json".into(), style.graph_json(&graph)?)?;
        insert_member(&mut members, kelf_member, style.graph_json(&kelf)?)?;

        let info = info_json(&options.header, options.compiler_header);
        insert_member(
            &mut members,
            INFO_MEMBER.to_string(),
            MemberSource::Bytes(info),
        )?;
        if let Some(config) = &spec.barrier_config {
            let configs = config
                .to_configs()
                .or_else(|e| spec_invalid("barrier_config", e.to_string()))?;
            let text = neff_schema::barrier::json::to_json(&configs) + "\n";
            let source = MemberSource::Bytes(text.into_bytes());
            insert_member(&mut members, BARRIER_CONFIG_MEMBER.to_string(), source)?;
        }
        for (name, data) in spec.members {
            check_name(&name)?;
            if checked && name == BARRIER_CONFIG_MEMBER {
                check_barrier_member(&data)?;
            }
            let source = data.into_source(&format!("member {name}"))?;
            if members.contains_key(&name) {
                return invalid(format!(
                    "member {name} is generated by the builder; use a raw member to replace it"
                ));
            }
            members.insert(name, source);
        }
        for (name, data) in spec.raw_members {
            check_name(&name)?;
            match data {
                Some(data) => {
                    let source = data.into_source(&format!("raw member {name}"))?;
                    members.insert(name, source);
                }
                None => {
                    members.remove(&name);
                }
            }
        }

        let patch = &mut options.header;
        let mut bits = feature_bits;
        if custom_ops {
            bits |= features::CUSTOM_OPS;
        }
        if subgraph_count > 1 {
            bits |= features::VNC;
            if patch.vnc_size.is_none() {
                patch.vnc_size = Some(u32::try_from(subgraph_count).unwrap_or(u32::MAX));
            }
        }
        if patch.feature_bits.is_none() {
            patch.feature_bits = Some(bits);
        }
        Ok(Build { members, options })
    }

    /// Builds and writes the NEFF at `path` atomically (see
    /// [`Packager::write_to_path`]); refused by the loader's gates unless
    /// [`NeffBuilder::unchecked`] and [`NeffBuilder::keep_refused`].
    pub fn write_to_path(self, path: impl AsRef<Path>) -> Result<PackOutcome, Error> {
        self.build()?.write_to_path(path)
    }

    /// Builds and writes the NEFF into any writer.
    pub fn write_to<W: Write>(self, out: &mut W) -> Result<PackOutcome, Error> {
        self.build()?.write_to(out)
    }
}

/// The options the spec's packaging keys give (the header patch's `name`
/// winning over the model's, as every header field set there wins over what
/// is computed), with `run`'s threads, fsync, read-back and profile; the
/// framing preset and the feature bits `features` names.
fn write_options(
    spec: &mut BuildSpec,
    run: PackOptions,
) -> Result<(PackOptions, FramingPreset, u64), Error> {
    let header_name = spec.header.as_ref().and_then(|h| h.name);
    let (settings, file, feature_bits) = spec.packaging()?;
    let mut options = settings.options(file)?;
    options.header.name = header_name.or(options.header.name);
    let options = PackOptions {
        threads: run.threads,
        paranoid_readback: run.paranoid_readback,
        fsync: run.fsync,
        profile: run.profile,
        ..options
    };
    Ok((options, settings.framing.unwrap_or_default(), feature_bits))
}

/// A `barrier_config.json` given as a member must read as a barrier config
/// (`neff inspect` decodes it; the runtime never reads it): refused at
/// build rather than found by `inspect` later.
fn check_barrier_member(data: &Data) -> Result<(), Error> {
    let key = format!("members.{BARRIER_CONFIG_MEMBER:?}");
    let bytes = match data {
        Data::Source(MemberSource::Bytes(bytes)) => std::borrow::Cow::Borrowed(bytes.as_slice()),
        Data::Path(path) => std::borrow::Cow::Owned(crate::small_file::read_small_file(
            path,
            crate::small_file::SMALL_MAX,
            "barrier config",
        )?),
        _ => return Ok(()),
    };
    match neff_schema::barrier::json::from_json(&bytes) {
        Ok(_) => Ok(()),
        Err(e) => spec_invalid(
            key,
            format!("not a barrier config ({e}); give it as `barrier_config`, or write it anyway with the unchecked path"),
        ),
    }
}

fn check_name(name: &str) -> Result<(), Error> {
    MemberName::new(name)
        .map(|_| ())
        .map_err(|e| Error::new(ErrorKind::Invalid, e.to_string()))
}

fn insert_member(
    members: &mut BTreeMap<String, MemberSource>,
    name: String,
    source: MemberSource,
) -> Result<(), Error> {
    check_name(&name)?;
    if members.contains_key(&name) {
        return invalid(format!(
            "two generated members are both named {name} (a weight, library or KELF name clashes with another member)"
        ));
    }
    members.insert(name, source);
    Ok(())
}

/// The model's inputs or outputs, gathered from the subgraphs by name (the
/// first subgraph's declaration of a name is the model's).
#[derive(Default)]
struct ModelIo {
    tensors: Vec<IoTensor>,
    index: HashMap<String, usize>,
}

impl ModelIo {
    /// Adds a subgraph's tensors; in checked mode a name must keep its
    /// dtype and shape.
    fn merge(
        &mut self,
        more: Vec<IoTensor>,
        subgraph: &str,
        what: &str,
        checked: bool,
    ) -> Result<(), Error> {
        for t in more {
            match self.index.get(&t.name) {
                Some(&i) => {
                    let known = &self.tensors[i];
                    if checked && (known.dtype != t.dtype || known.shape != t.shape) {
                        return invalid(format!(
                            "subgraph {subgraph}: {what} {:?} is {} {:?} here but {} {:?} in an earlier subgraph",
                            t.name, t.dtype, t.shape, known.dtype, known.shape
                        ));
                    }
                }
                None => {
                    self.index.insert(t.name.clone(), self.tensors.len());
                    self.tensors.push(t);
                }
            }
        }
        Ok(())
    }
}

/// A generated model: every member and the packaging options, ready to write.
#[derive(Debug)]
pub struct Build {
    members: BTreeMap<String, MemberSource>,
    options: PackOptions,
}

/// The member every real NEFF carries with the tensor-processor counts.
pub const INFO_MEMBER: &str = "info.json";

/// `info.json` (spec §11.1): `num_tpb`, `num_tpb_requested` and
/// `num_tpb_per_node` equal to the header's +0xA8, +0x1DC and +0x1E0 as the
/// packager will write them, plus this tool's version.
fn info_json(patch: &HeaderPatch, compiler_header: bool) -> Vec<u8> {
    let per_node: Vec<u8> = match &patch.tpb_per_node {
        Some(blob) => blob.0.to_vec(),
        None => {
            let mut v = vec![0u8; neff_schema::header::TPB_PER_NODE_LEN];
            if compiler_header {
                v[0] = 1;
            }
            v
        }
    };
    let info = serde_json::json!({
        "num_tpb": patch.unused_0.unwrap_or(1),
        "num_tpb_requested": patch.requested_tpb_count.unwrap_or(1),
        "num_tpb_per_node": per_node,
        "tool_version": concat!("neff-rs ", env!("CARGO_PKG_VERSION")),
    });
    let mut text = serde_json::to_vec_pretty(&info).unwrap_or_default();
    text.push(b'\n');
    text
}

impl Build {
    /// Total bytes of member data (for a progress display).
    pub fn input_bytes(&self) -> u64 {
        self.members.values().map(MemberSource::len).sum()
    }

    /// Reports the write's phase and bytes to `progress` (see
    /// [`PackOptions::progress`]).
    pub fn progress(mut self, progress: Option<std::sync::Arc<crate::Progress>>) -> Self {
        self.options.progress = progress;
        self
    }

    /// The member names, sorted.
    pub fn member_names(&self) -> impl Iterator<Item = &str> {
        self.members.keys().map(String::as_str)
    }

    /// A member's bytes, when they are in memory (every generated manifest is).
    pub fn bytes(&self, name: &str) -> Option<&[u8]> {
        match self.members.get(name)? {
            MemberSource::Bytes(b) => Some(b),
            _ => None,
        }
    }

    /// A member's length.
    pub fn len_of(&self, name: &str) -> Option<u64> {
        self.members.get(name).map(MemberSource::len)
    }

    /// Parses a generated manifest member as `T`.
    pub fn manifest<T: Manifest>(&self, name: &str) -> Result<T, Error> {
        let bytes = self
            .bytes(name)
            .ok_or_else(|| Error::new(ErrorKind::Invalid, format!("no in-memory member {name}")))?;
        Ok(T::from_slice(name, bytes)?)
    }

    /// The packaging options, header settings included.
    pub fn options(&self) -> &PackOptions {
        &self.options
    }

    /// The packaging options, to adjust before writing.
    pub fn options_mut(&mut self) -> &mut PackOptions {
        &mut self.options
    }

    /// The members as a [`Packager`], with the options to write it with.
    pub fn into_packager(self) -> Result<(Packager, PackOptions), Error> {
        let mut packager = Packager::new();
        for (name, source) in self.members {
            packager.add(&name, source)?;
        }
        Ok((packager, self.options))
    }

    /// Writes the NEFF at `path` atomically, checked by the loader's gates.
    pub fn write_to_path(self, path: impl AsRef<Path>) -> Result<PackOutcome, Error> {
        let (packager, options) = self.into_packager()?;
        packager.write_to_path(path, &options)
    }

    /// Writes the NEFF into any writer, checked by the loader's gates.
    pub fn write_to<W: Write>(self, out: &mut W) -> Result<PackOutcome, Error> {
        let (packager, options) = self.into_packager()?;
        packager.write_to(out, &options)
    }
}
