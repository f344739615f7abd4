//! The JSON build spec `neff build` reads: everything [`NeffBuilder`](crate::NeffBuilder) can
//! do, as data. `neff schema build-spec` prints its JSON Schema (these doc
//! comments are the descriptions).
//!
//! Spec objects refuse unknown keys. Blobs are a path relative to the spec
//! file (`"sg00/pe.bin"` or `{"path": ...}`), inline base64
//! (`{"base64": "..."}`) or inline text (`{"text": "..."}`). Manifest objects
//! passed through as they are (DMA blocks, fp8 config, carveouts) and every
//! `extra` map keep any key, like the manifests themselves.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use neff_schema::features::FeatureMask;
use neff_schema::header::Blob as HashBlob;
use neff_schema::manifest::Extra;
use neff_schema::{Framing, FramingPreset, PkgVersion, Target, Uuid};
use serde::Deserialize;

use crate::blob::Data;
pub use crate::blob::{blob_data, Blob};
use crate::builder::subgraph::Subgraph;
use crate::error::{spec_error as invalid, Error, ErrorKind};
use crate::header_options::{HeaderFile, HeaderPatch, UuidChoice};
use crate::lift::{Model, PayloadMember, WeightEdit};
use crate::PackSettings;

/// A model to build: its subgraphs, extra members and packaging. In a spec
/// file, a blob's path resolves against the spec's folder and must lie in it
/// (`neff build --blob-root DIR` names another folder a blob may come from):
/// a spec cannot read files elsewhere. Paths given in code are used as given.
#[derive(Debug, Default, Deserialize, serde::Serialize, schemars::JsonSchema)]
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
    pub subgraphs: Vec<Subgraph>,
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
    /// A barrier config attached as the member `barrier_config.json`, in the
    /// firmware logger's JSON shape (as `neff barrier` writes it; `neff
    /// inspect` decodes it; the runtime never reads it). Checked when given:
    /// where both views are given, they must agree.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub barrier_config: Option<neff_schema::barrier::json::BarrierConfigsJson>,
    /// Members no manifest generates (`hlo_stats.json`, `.asm` listings, ...):
    /// member name → blob. Clashing with a generated member is an error.
    #[serde(default)]
    pub members: BTreeMap<String, Data>,
    /// The unchecked path: member name → blob replaces (or adds) that member
    /// after generation; `null` leaves a generated member out.
    #[serde(default)]
    pub raw_members: BTreeMap<String, Option<Data>>,
    /// Packaging: 2 (gzip + MD5, default) or 1 (raw tar + SHA-256).
    #[serde(default)]
    pub pkg_version: Option<u64>,
    /// The framing: a preset, `"gnu"` (default), `"neuronx-cc"` (exactly as
    /// neuronx-cc 2.21+ writes, gzip MTIME 0), `"neuronx-cc-2.16"` or
    /// `"neuronx-cc-2.27"`; or a
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
    /// Feature bits to set besides those the content implies, a
    /// [`FeatureMask`]: names from `neff_schema::features::KNOWN` (e.g.
    /// `"collective_has_offset"`) and numbers, as a list or comma-separated
    /// text.
    #[serde(default)]
    pub features: FeatureMask,
    /// Header fields set over everything computed (as `neff inspect --json`
    /// prints them under `header`); `feature_bits` and `vnc_size` here replace
    /// the computed values; a `pkg_version` of 1 or 2 here selects the
    /// packaging unless the spec's own `pkg_version` is set, and any other
    /// is written as it is (the loader's G7 refuses it).
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
#[derive(Debug, Clone, Deserialize, serde::Serialize, schemars::JsonSchema)]
#[serde(untagged)]
pub enum FramingSpec {
    /// A preset name (`gnu`, `neuronx-cc`, `neuronx-cc-2.16`, `neuronx-cc-2.27`).
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
        parse_at(path, "", bytes)
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
    pub fn into_model(mut self, base: &Path) -> Result<(Model, PackSettings), Error> {
        let generated = [
            ("subgraphs", !self.subgraphs.is_empty()),
            ("members", !self.members.is_empty()),
            ("raw_members", !self.raw_members.is_empty()),
            ("barrier_config", self.barrier_config.is_some()),
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
        let (settings, file, bits) = self.packaging()?;
        let mut header = file.header;
        header.feature_bits = match (header.feature_bits, bits) {
            (given, 0) => given,
            (given, bits) => Some(given.unwrap_or(0) | bits),
        };
        let mut model = Model {
            header: Some(header),
            framing: file.framing,
            source_hash: file.source_hash,
            payload: self.payload,
        };
        for (i, edit) in self.weights.into_iter().enumerate() {
            model
                .replace_weight(base, edit)
                .map_err(|e| e.at_key(format!("weights[{i}]")))?;
        }
        Ok((model, settings))
    }

    /// Turns every blob the spec gives ([`Data::Blob`]) into data with
    /// `resolve(key, blob)`.
    pub fn resolve_blobs(
        &mut self,
        resolve: &mut dyn FnMut(&str, Blob) -> Result<Data, Error>,
    ) -> Result<(), Error> {
        for (i, sg) in self.subgraphs.iter_mut().enumerate() {
            sg.resolve_blobs(&format!("subgraphs[{i}]"), resolve)?;
        }
        for (name, data) in &mut self.members {
            data.resolve(&format!("members.{name:?}"), resolve)?;
        }
        for (name, data) in &mut self.raw_members {
            if let Some(data) = data {
                data.resolve(&format!("raw_members.{name:?}"), resolve)?;
            }
        }
        Ok(())
    }

    /// The packaging keys as `neff pack`'s settings and header file, taken
    /// out of the spec ([`PackSettings::options`] is the one mapping from
    /// them to the writer's options), and the feature bits `features` names.
    pub(crate) fn packaging(&mut self) -> Result<(PackSettings, HeaderFile, u64), Error> {
        let mut settings = PackSettings {
            name: self.name.take(),
            level: self.level,
            uuid: self.uuid.take(),
            keep_refused: self.keep_refused,
            ..PackSettings::default()
        };
        if let Some(pkg) = self.pkg_version {
            settings.pkg_version = Some(PkgVersion::from_value(pkg).map_or_else(
                || invalid("pkg_version", format!("{pkg} is not 1 or 2")),
                Ok,
            )?);
        }
        if let Some(level) = self.level.filter(|l| !(1..=9).contains(l)) {
            return invalid("level", format!("{level} is out of range: use 1 to 9"));
        }
        if let Some(uuid) = settings.uuid.as_deref().filter(|u| *u != "keep") {
            parse_uuid(uuid).or_else(|e| invalid("uuid", e))?;
        }
        let mut file = HeaderFile {
            header: self.header.take().unwrap_or_default(),
            source_hash: self.source_hash.take(),
            ..HeaderFile::default()
        };
        match self.framing.take() {
            Some(FramingSpec::Preset(name)) => settings.framing = Some(FramingSpec::preset(&name)?),
            Some(FramingSpec::Exact(f)) => file.framing = Some(*f),
            None => {}
        }
        Ok((settings, file, self.features.0))
    }
}

/// Parses `bytes` as a `T` of the build spec at `prefix` (`""` for a whole
/// spec, `subgraphs[0].inputs[1]` for one entry): an error names the key of
/// the value at fault (`subgraphs[0].inputs[1].shape[0]`) and `path`.
pub fn parse_at<T: serde::de::DeserializeOwned>(
    path: &Path,
    prefix: &str,
    bytes: &[u8],
) -> Result<T, Error> {
    let error = |key: String, inner: serde_json::Error| {
        let key = match (prefix, key.as_str()) {
            (p, "") => p.to_string(),
            ("", k) => k.to_string(),
            (p, k) if k.starts_with('[') => format!("{p}{k}"),
            (p, k) => format!("{p}.{k}"),
        };
        let inner_text = crate::error::with_suggestion(&inner.to_string());
        let message = match key.as_str() {
            "" => inner_text,
            k => format!("{k}: {inner_text}"),
        };
        let error = Error::new(ErrorKind::Spec, message).at_path(path);
        match key.as_str() {
            "" => error,
            _ => error.at_key(key),
        }
        .with_source(inner)
    };
    let mut reader = serde_json::Deserializer::from_slice(bytes);
    let value: T = serde_path_to_error::deserialize(&mut reader).map_err(|e| {
        // An unknown key's path ends in that key, which the message names.
        let unknown = e.inner().to_string().starts_with("unknown field");
        let key = key_path(e.path(), unknown);
        error(key, e.into_inner())
    })?;
    reader.end().map_err(|e| error(String::new(), e))?;
    Ok(value)
}

/// A serde path as a spec key (`subgraphs[0].inputs[1].shape`), without
/// its last segment when `parent`.
fn key_path(path: &serde_path_to_error::Path, parent: bool) -> String {
    use serde_path_to_error::Segment;
    let segments: Vec<&Segment> = path.iter().collect();
    let keep = segments.len() - usize::from(parent && !segments.is_empty());
    let mut key = String::new();
    for segment in &segments[..keep] {
        match segment {
            Segment::Seq { index } => key.push_str(&format!("[{index}]")),
            Segment::Map { key: k } | Segment::Enum { variant: k } => {
                if !key.is_empty() {
                    key.push('.');
                }
                key.push_str(k);
            }
            Segment::Unknown => key.push_str(".?"),
        }
    }
    key
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

/// Refuses a spec file's blob whose path, resolved against `base` (the
/// spec's folder) with every symlink followed, lies neither under `base` nor
/// under one of `roots`: a spec from elsewhere (a pull request, a fuzzer)
/// cannot read files outside the folders its user names. A path that does
/// not resolve is left to the build, which says it cannot be read.
pub fn confine_blobs(spec: &mut BuildSpec, base: &Path, roots: &[PathBuf]) -> Result<(), Error> {
    let allowed: Vec<PathBuf> = std::iter::once(base)
        .chain(roots.iter().map(PathBuf::as_path))
        .filter_map(|root| std::fs::canonicalize(root).ok())
        .collect();
    let check = |key: &str, blob: &Blob| -> Result<(), Error> {
        let Blob::Path(path) = blob else {
            return Ok(());
        };
        let Ok(real) = std::fs::canonicalize(base.join(path)) else {
            return Ok(());
        };
        if allowed.iter().any(|root| real.starts_with(root)) {
            return Ok(());
        }
        invalid(
            key,
            format!(
                "{} lies outside the spec's folder {}: pass --blob-root with a folder that holds it to read it",
                path.display(),
                base.display()
            ),
        )
    };
    for (i, member) in spec.payload.iter().enumerate() {
        let key = format!("payload[{i}]");
        if let crate::lift::Content::Data(blob) = &member.content {
            check(&key, blob)?;
        }
        if let Some(source) = &member.source {
            check(&format!("{key}.source"), source)?;
        }
    }
    for (i, edit) in spec.weights.iter().enumerate() {
        check(&format!("weights[{i}].npy"), &edit.npy)?;
    }
    // The builder form's blobs, each put back as it was.
    spec.resolve_blobs(&mut |key, blob| {
        check(key, &blob)?;
        Ok(Data::Blob(blob))
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::NeffBuilder;

    fn parse(text: &str) -> Result<BuildSpec, Error> {
        BuildSpec::from_slice(Path::new("spec.json"), text.as_bytes())
    }

    #[test]
    fn a_bad_value_is_refused_with_its_key() {
        let err =
            parse(r#"{"subgraphs": [{"name": "s", "inputs": [{"name": "x", "shape": [4, -1]}]}]}"#)
                .unwrap_err();
        assert_eq!(
            err.location().key.as_deref(),
            Some("subgraphs[0].inputs[0].shape[1]")
        );
        assert!(
            err.to_string().starts_with(
                "spec.json: subgraphs[0].inputs[0].shape[1]: invalid value: integer `-1`"
            ),
            "{err}"
        );
        let err =
            parse(r#"{"subgraphs": [{"name": "s", "inputs": [{"name": "x", "dtyp": "f"}]}]}"#)
                .unwrap_err();
        assert_eq!(
            err.location().key.as_deref(),
            Some("subgraphs[0].inputs[0]")
        );
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

    fn blob(data: &Data) -> Blob {
        match data {
            Data::Blob(blob) => blob.clone(),
            other => panic!("not a blob: {other:?}"),
        }
    }

    #[test]
    fn resolving_keeps_data_that_is_not_a_blob() {
        let mut spec = BuildSpec::default();
        spec.members
            .insert("a".into(), Data::bytes(b"kept".to_vec()));
        spec.members.insert("b".into(), Data::Blob(Blob::Held(0)));
        let mut asked = Vec::new();
        spec.resolve_blobs(&mut |key, blob| {
            asked.push((key.to_string(), blob));
            Ok(Data::bytes(b"given".to_vec()))
        })
        .unwrap();
        assert_eq!(asked, [("members.\"b\"".to_string(), Blob::Held(0))]);
        for (name, want) in [("a", &b"kept"[..]), ("b", b"given")] {
            match &spec.members[name] {
                Data::Source(crate::MemberSource::Bytes(b)) => assert_eq!(b, want),
                other => panic!("{name}: {other:?}"),
            }
        }
    }

    #[test]
    fn blobs_in_every_form() {
        let spec = parse(
            r#"{"subgraphs": [], "members": {
                "a": "rel/a.bin", "b": {"path": "b.bin"}, "c": {"base64": "aGk="}, "d": {"text": "hi"}}}"#,
        )
        .unwrap();
        assert_eq!(blob(&spec.members["a"]), Blob::Path("rel/a.bin".into()));
        assert_eq!(blob(&spec.members["b"]), Blob::Path("b.bin".into()));
        assert_eq!(blob(&spec.members["c"]), Blob::Base64("aGk=".into()));
        assert_eq!(blob(&spec.members["d"]), Blob::Text("hi".into()));
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
        let err = parse(r#"{"subgraphs": [], "features": ["nope"]}"#)
            .unwrap_err()
            .to_string();
        assert!(err.contains("features: unknown feature \"nope\""), "{err}");
        assert!(err.contains("line 1 column 39"), "{err}");
    }

    #[test]
    fn features_take_the_grammar_of_the_feature_bits_flag() {
        // `"0x3"` was refused here while `--feature-bits 0x3` took it.
        let flag = neff_loader::parse_features("0x3").unwrap();
        for text in [r#"["0x3"]"#, r#""0x1,collective_has_offset""#, "3"] {
            let spec = parse(&format!(r#"{{"subgraphs": [], "features": {text}}}"#)).unwrap();
            assert_eq!(spec.features.0, flag, "{text}");
        }
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
                r#"{"subgraphs": [], "level": 0}"#,
                "level: 0 is out of range",
            ),
        ];
        for (text, needle) in cases {
            let err = parse(text)
                .unwrap()
                .into_builder(&dir)
                .and_then(NeffBuilder::build)
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

#[cfg(test)]
mod suggestion_tests {
    use crate::error::with_suggestion;

    #[test]
    fn the_nearest_key_is_suggested_when_close() {
        let m = "unknown field `inptus`, expected one of `name`, `inputs`, `outputs` at line 1 column 37";
        assert_eq!(
            with_suggestion(m),
            "unknown field `inptus` (did you mean `inputs`?), expected one of `name`, `inputs`, `outputs` at line 1 column 37"
        );
        let far = "unknown field `zzzzzz`, expected one of `name`, `inputs`";
        assert_eq!(with_suggestion(far), far);
        assert_eq!(
            with_suggestion("missing field `name`"),
            "missing field `name`"
        );
    }
}
