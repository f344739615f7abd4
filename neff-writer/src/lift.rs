//! Lift: a NEFF as the typed model, and back byte for byte.
//!
//! [`Model`] holds every member of a payload. The manifests the runtime
//! reads are typed (`neff.json`, the KELF descriptors it names, the
//! `def.json` each descriptor names, the engine manifests each def.json
//! names and the `act_info.json` an ACT manifest names); every other member
//! is bytes. Which member is which follows the references, as the loader
//! follows them: member names are data, never constants.
//!
//! A typed member lifted from a NEFF remembers its original bytes
//! (`source`). While its typed value still equals what those bytes hold, it
//! is written with exactly those bytes; once edited, it is written again in
//! their style ([`neff_schema::manifest::restyle`]): only the changed values
//! differ. With the recorded header and framing this rebuilds an unedited
//! NEFF byte for byte.
//!
//! The serde form of a [`Model`] is the `payload` form of the build spec
//! (`neff unpack --spec`, `neff build`).

use std::borrow::Cow;
use std::collections::{BTreeMap, BTreeSet};
use std::path::{Component, Path, PathBuf};

use neff_loader::MANIFEST_MAX;
use neff_schema::framing::MemberOrder;
use neff_schema::header::Blob as HashBlob;
use neff_schema::manifest::{
    restyle, ActInfo, DefJson, Engine, EngineJson, KelfDescriptor, Manifest, NeffJson, VarType,
};
use neff_schema::Framing;
use serde::{Deserialize, Serialize};

use crate::blob::Blob;
use crate::error::{Error, ErrorKind};
use crate::header_options::{HeaderFile, HeaderPatch};
use crate::pretty_json::Streamed;
use crate::tree_walk::{TreeItem, TreeWalk};
use crate::typing_budget::TypingBudget;
use crate::{MemberSource, PackOptions, PackSettings, Packager};

/// A NEFF's payload as the typed model, with the header and framing it was
/// recorded with.
#[serde_with::skip_serializing_none]
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Model {
    /// Header fields (as `neff inspect --json` prints them); the payload's
    /// own fields (`data_size`, `hash`) are computed.
    pub header: Option<HeaderPatch>,
    /// How the payload is framed (tar fields, member order, gzip header,
    /// deflate, hash layout), as `neff unpack --header-out` records it.
    pub framing: Option<Framing>,
    /// The header `hash` of the NEFF this was lifted from: the recorded UUID
    /// is kept only while the payload still hashes to it.
    pub source_hash: Option<HashBlob<32>>,
    /// Every member, in name order (the framing decides the tar order).
    pub payload: Vec<PayloadMember>,
}

/// One member of a [`Model`].
#[serde_with::skip_serializing_none]
#[derive(Debug, Clone, PartialEq, Serialize, schemars::JsonSchema)]
pub struct PayloadMember {
    /// The member name (`sg00/def.json`).
    pub name: String,
    /// What the member holds.
    #[serde(flatten)]
    pub content: Content,
    /// The member's original bytes (a typed member's): written as they are
    /// while the typed value equals what they hold, and used as the style of
    /// an edited one (indentation, key order, number spelling).
    pub source: Option<Blob>,
}

/// A member's content: one typed manifest, or bytes.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Content {
    /// `neff.json`.
    NeffJson(Box<NeffJson>),
    /// A KELF descriptor (named by neff.json's `__kelf` node).
    Kelf(Box<KelfDescriptor>),
    /// A subgraph's `def.json` (named by a KELF descriptor's graphs).
    DefJson(Box<DefJson>),
    /// An engine manifest (named by a def.json's `pe`/`act`/`pool`/`dve`/`sp`).
    Engine(Box<EngineJson>),
    /// `act_info.json` (named by an ACT manifest's `act_info`).
    ActInfo(Box<ActInfo>),
    /// Bytes: a path relative to the spec, or inline base64 or text.
    Data(Blob),
}

/// The keys of a [`PayloadMember`]: `name`, `source`, then the content
/// keys, one per [`Content`] variant.
const MEMBER_KEYS: [&str; 8] = [
    "name",
    "source",
    "neff_json",
    "kelf",
    "def_json",
    "engine",
    "act_info",
    "data",
];

/// Read key by key, each value straight from the text (a flattened
/// `content` would be buffered first: an error would name only the member,
/// at the line where it ends, not the key path and line of the bad value).
impl<'de> Deserialize<'de> for PayloadMember {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct Member;
        impl<'de> serde::de::Visitor<'de> for Member {
            type Value = PayloadMember;

            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("a payload member: `name`, one content key and `source`")
            }

            fn visit_map<A: serde::de::MapAccess<'de>>(
                self,
                mut map: A,
            ) -> Result<PayloadMember, A::Error> {
                use serde::de::Error as _;
                let (mut name, mut content, mut source) = (None, None, None);
                while let Some(key) = map.next_key::<String>()? {
                    let value = match key.as_str() {
                        "name" if name.is_none() => {
                            name = Some(map.next_value()?);
                            continue;
                        }
                        "source" if source.is_none() => {
                            source = Some(map.next_value()?);
                            continue;
                        }
                        "neff_json" => Content::NeffJson(map.next_value()?),
                        "kelf" => Content::Kelf(map.next_value()?),
                        "def_json" => Content::DefJson(map.next_value()?),
                        "engine" => Content::Engine(map.next_value()?),
                        "act_info" => Content::ActInfo(map.next_value()?),
                        "data" => Content::Data(map.next_value()?),
                        "name" => return Err(A::Error::duplicate_field("name")),
                        "source" => return Err(A::Error::duplicate_field("source")),
                        other => return Err(A::Error::unknown_field(other, &MEMBER_KEYS)),
                    };
                    if content.replace(value).is_some() {
                        return Err(A::Error::custom(format!(
                            "a second content key `{key}`: a member holds one of {}",
                            MEMBER_KEYS[2..].join(", ")
                        )));
                    }
                }
                Ok(PayloadMember {
                    name: name.ok_or_else(|| A::Error::missing_field("name"))?,
                    content: content.ok_or_else(|| {
                        A::Error::custom(format!(
                            "no content key: give one of {}",
                            MEMBER_KEYS[2..].join(", ")
                        ))
                    })?,
                    source: source.flatten(),
                })
            }
        }
        d.deserialize_map(Member)
    }
}

impl Content {
    /// The typed value as JSON, or `None` for bytes.
    pub fn to_value(&self) -> Option<Result<serde_json::Value, serde_json::Error>> {
        Some(match self {
            Content::NeffJson(m) => serde_json::to_value(m),
            Content::Kelf(m) => serde_json::to_value(m),
            Content::DefJson(m) => serde_json::to_value(m),
            Content::Engine(m) => serde_json::to_value(m),
            Content::ActInfo(m) => serde_json::to_value(m),
            Content::Data(_) => return None,
        })
    }

    /// `value` as a manifest of the same kind as this one (bytes: as text),
    /// or why the typed model cannot hold it.
    pub fn with_value(&self, value: serde_json::Value) -> Result<Content, serde_json::Error> {
        use serde_json::from_value;
        Ok(match self {
            Content::NeffJson(_) => Content::NeffJson(from_value(value)?),
            Content::Kelf(_) => Content::Kelf(from_value(value)?),
            Content::DefJson(_) => Content::DefJson(from_value(value)?),
            Content::Engine(_) => Content::Engine(from_value(value)?),
            Content::ActInfo(_) => Content::ActInfo(from_value(value)?),
            Content::Data(_) => Content::Data(Blob::Text(value.to_string())),
        })
    }

    /// The first key of `value` (this content as JSON) that looks like a
    /// typo of a modelled key and is not in `original` at the same place.
    fn typo(
        &self,
        value: &serde_json::Value,
        original: Option<&serde_json::Value>,
    ) -> Option<crate::unknown_keys::Typo> {
        use crate::unknown_keys::first_typo;
        match self {
            Content::NeffJson(_) => first_typo::<NeffJson>(value, original),
            Content::Kelf(_) => first_typo::<KelfDescriptor>(value, original),
            Content::DefJson(_) => first_typo::<DefJson>(value, original),
            Content::Engine(_) => first_typo::<EngineJson>(value, original),
            Content::ActInfo(_) => first_typo::<ActInfo>(value, original),
            Content::Data(_) => None,
        }
    }

    /// The schema name of the typed manifest (`def-json`), or `data`.
    pub fn kind(&self) -> &'static str {
        match self {
            Content::NeffJson(_) => NeffJson::SCHEMA_NAME,
            Content::Kelf(_) => KelfDescriptor::SCHEMA_NAME,
            Content::DefJson(_) => DefJson::SCHEMA_NAME,
            Content::Engine(_) => EngineJson::SCHEMA_NAME,
            Content::ActInfo(_) => ActInfo::SCHEMA_NAME,
            Content::Data(_) => "data",
        }
    }
}

/// A weights edit (the spec's `weights`, [`Model::replace_weight`]): the
/// `file` var `var` of the def.json member `def_json` gets the `.npy` `npy`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct WeightEdit {
    /// The def.json member (`sg00/def.json`).
    pub def_json: String,
    /// The var's name in its `var` map.
    pub var: String,
    /// The new `.npy` (version 1): a path relative to the spec, or inline.
    pub npy: Blob,
    /// Allow a new dtype or shape: by default the new `.npy` must have the
    /// `descr` and shape of the one it replaces (when that is a `.npy`).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub retype: bool,
}

/// What [`Model::replace_weight`] changed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WeightChange {
    /// The weights member now holding the new `.npy`.
    pub member: String,
    /// The var's `size` before, if it has one.
    pub old_size: Option<u64>,
    /// The var's `size` after (the new data length), if it has one.
    pub new_size: Option<u64>,
}

/// What lifting noticed: members kept as bytes although a manifest names
/// them as a typed one, with the reason.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct LiftNotes(pub Vec<String>);

/// Which typed manifest a member is, as the references say.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Role {
    NeffJson,
    Kelf,
    DefJson,
    Engine,
    ActInfo,
}

impl Model {
    /// Lifts an unpacked tree (as `neff unpack` writes it): every regular
    /// file below `dir` is a member, typed when a reference names it as a
    /// manifest. `header` is what `--header-out` records. Blob paths are
    /// relative to `base` where they can be (the spec's folder), else (with
    /// no `base`) absolute.
    pub fn from_tree(
        dir: &Path,
        header: HeaderFile,
        base: Option<&Path>,
    ) -> Result<(Model, LiftNotes), Error> {
        // Every regular file, in byte order; symlinks and special files are
        // refused (an unpacked tree has none).
        let mut names = Vec::new();
        for item in TreeWalk::unpacked(dir) {
            if let TreeItem::File(name, _) = item? {
                names.push(name);
            }
        }
        let mut notes = LiftNotes::default();
        let mut typed = typed_manifests(&names.iter().map(String::as_str).collect(), |name| {
            let path = dir.join(name);
            let len = std::fs::metadata(&path).map_err(|e| e.to_string())?.len();
            if len > MANIFEST_MAX {
                return Err(too_long(len));
            }
            std::fs::read(&path)
                .map(Cow::Owned)
                .map_err(|e| e.to_string())
        });
        let mut payload = Vec::with_capacity(names.len());
        for name in names {
            let path = dir.join(&name);
            let blob = Blob::Path(match base {
                Some(base) => relative_to(&path, base),
                None => std::path::absolute(&path).unwrap_or(path.clone()),
            });
            let content = match typed.remove(&name) {
                Some(Ok(content)) => content,
                Some(Err(why)) => {
                    notes.0.push(format!("{name}: kept as bytes: {why}"));
                    Content::Data(blob.clone())
                }
                None => Content::Data(blob.clone()),
            };
            let is_typed = !matches!(content, Content::Data(_));
            payload.push(PayloadMember {
                name,
                content,
                source: is_typed.then_some(blob),
            });
        }
        Ok((
            Model {
                header: Some(header.header),
                framing: header.framing,
                source_hash: header.source_hash,
                payload,
            },
            notes,
        ))
    }

    /// The member named `name`.
    pub fn member(&self, name: &str) -> Option<&PayloadMember> {
        self.payload.iter().find(|m| m.name == name)
    }

    /// The member named `name`, to edit.
    pub fn member_mut(&mut self, name: &str) -> Option<&mut PayloadMember> {
        self.payload.iter_mut().find(|m| m.name == name)
    }

    /// The def.json named `name`, to edit.
    pub fn def_json_mut(&mut self, name: &str) -> Option<&mut DefJson> {
        match &mut self.member_mut(name)?.content {
            Content::DefJson(def) => Some(def),
            _ => None,
        }
    }

    /// Renames the member `from` to `to`, and every reference to it that a
    /// typed manifest holds (a def.json's engine keys, an engine's `instr`
    /// and `act_info`, a KELF graph's definition, neff.json's `kelf`).
    pub fn rename_member(&mut self, from: &str, to: &str) -> Result<(), Error> {
        if self.member(to).is_some() {
            return Err(spec_error(format!(
                "cannot rename {from} to {to}: {to} exists"
            )));
        }
        let Some(member) = self.member_mut(from) else {
            return Err(spec_error(format!("cannot rename {from}: no such member")));
        };
        member.name = to.to_string();
        let (from_dir, from_file) = split(from);
        let (to_dir, to_file) = split(to);
        let local = from_dir == to_dir;
        let swap = |slot: &mut Option<String>, full: bool| {
            let (old, new) = if full {
                (from, to)
            } else {
                (from_file, to_file)
            };
            if slot.as_deref() == Some(old) {
                *slot = Some(new.to_string());
            }
        };
        for m in &mut self.payload {
            let here = split(&m.name).0 == from_dir;
            match &mut m.content {
                Content::DefJson(def) if here && local => {
                    for e in Engine::ALL {
                        let mut slot = def.engine(e).map(str::to_string);
                        swap(&mut slot, false);
                        def.set_engine(e, slot);
                    }
                }
                Content::Engine(eng) if here && local => {
                    swap(&mut eng.instr, false);
                    swap(&mut eng.act_info, false);
                }
                Content::Kelf(kelf) => {
                    for g in &mut kelf.graphs {
                        if g.definition == from {
                            g.definition = to.to_string();
                        }
                    }
                }
                Content::NeffJson(graph) => {
                    for node in &mut graph.nodes {
                        if let Some(attrs) = node.attrs.as_mut() {
                            swap(&mut attrs.kelf, true);
                        }
                    }
                }
                _ => {}
            }
        }
        if let Some(f) = self.framing.as_mut() {
            for e in &mut f.tar.entries {
                if e.name == from {
                    e.name = to.to_string();
                }
            }
        }
        Ok(())
    }

    /// Replaces the weights of a `file` var: the member its `file_name`
    /// names (in the def.json's folder) gets the `.npy` `edit.npy` (a path
    /// relative to `base`, or inline), checked as a build checks weights
    /// (version 1, C order, as many data bytes as dtype and shape say), and
    /// the var's `size`, where it has one, follows the data length. The
    /// shape may change: the `.npy` header carries it. neff.json names no
    /// weights (it lists only the model's inputs and outputs), so nothing
    /// there follows.
    pub fn replace_weight(&mut self, base: &Path, edit: WeightEdit) -> Result<WeightChange, Error> {
        let at = format!("weights {} var {:?}", edit.def_json, edit.var);
        let (new, data_len) = npy_of(base, &at, &edit.npy)?;
        let def_json = edit.def_json.as_str();
        let Some(def) = self.def_json_mut(def_json) else {
            return Err(spec_error(format!(
                "{at}: {def_json} is not a typed def.json of this model"
            )));
        };
        let Some(var) = def.var.get_mut(&edit.var) else {
            return Err(spec_error(format!(
                "{at}: {def_json} has no var {:?}",
                edit.var
            )));
        };
        let (Some(VarType::File), Some(file)) = (VarType::parse(&var.kind), var.file_name.clone())
        else {
            return Err(spec_error(format!(
                "{at}: the var is of type {:?}, not a `file` var with a file_name",
                var.kind
            )));
        };
        let member = beside(def_json, &file);
        if !edit.retype {
            let old = match self.member(&member).map(|m| &m.content) {
                Some(Content::Data(blob)) if member.ends_with(".npy") => {
                    npy_of(base, &at, blob).ok().map(|(h, _)| h)
                }
                _ => None,
            };
            let changed = |old: &&neff_schema::npy::NpyHeader| {
                (&old.descr, &old.shape) != (&new.descr, &new.shape)
            };
            if let Some(old) = old.as_ref().filter(changed) {
                let show = |h: &neff_schema::npy::NpyHeader| {
                    format!(
                        "{} of shape {:?}",
                        h.descr.as_deref().unwrap_or("?"),
                        h.shape.as_deref().unwrap_or_default()
                    )
                };
                return Err(spec_error(format!(
                    "{at}: the new .npy is {} but {member} is {}: a dtype or shape change is refused unless asked (`\"retype\": true`)",
                    show(&new),
                    show(old)
                )));
            }
        }
        let Some(m) = self.member_mut(&member) else {
            return Err(spec_error(format!(
                "{at}: its file_name names {member}, which is not a member"
            )));
        };
        m.content = Content::Data(edit.npy);
        m.source = None;
        // The var follows the data: its size, and with `retype` its dtype
        // and shape where it states them.
        let var = self
            .def_json_mut(def_json)
            .and_then(|d| d.var.get_mut(&edit.var))
            .ok_or_else(|| spec_error(format!("{at}: the var went missing")))?;
        let old_size = var.size;
        if old_size.is_some() {
            var.size = Some(data_len);
        }
        if edit.retype {
            if let (Some(_), Some(dtype)) = (&var.dtype, new.dtype()) {
                var.dtype = Some(dtype);
            }
            if let (Some(_), Some(shape)) = (&var.shape, &new.shape) {
                var.shape = Some(shape.clone());
            }
        }
        Ok(WeightChange {
            member,
            old_size,
            new_size: old_size.map(|_| data_len),
        })
    }

    /// The header file this model packs with: its header fields, framing
    /// (listing only the members it has) and source hash.
    pub fn header_file(&self) -> HeaderFile {
        self.header_file_with(self.framing.clone())
    }

    /// [`Model::header_file`], the framing moved out instead of copied (its
    /// entry list holds one item per tar entry).
    pub fn into_header_file(mut self) -> HeaderFile {
        let framing = self.framing.take();
        self.header_file_with(framing)
    }

    /// The header file with `framing` (this model's).
    fn header_file_with(&self, mut framing: Option<Framing>) -> HeaderFile {
        if let Some(f) = framing.as_mut() {
            if f.tar.order == MemberOrder::Listed {
                // The members and every folder above one, as the framing names them.
                let mut present: BTreeSet<String> = BTreeSet::new();
                for m in &self.payload {
                    present.insert(m.name.clone());
                    let folders = m.name.match_indices('/').map(|(i, _)| &m.name[..=i]);
                    present.extend(folders.map(str::to_string));
                }
                f.tar.entries.retain(|e| present.contains(&e.name));
            }
        }
        HeaderFile {
            header: self.header.clone().unwrap_or_default(),
            framing,
            not_reproduced: Vec::new(),
            source_hash: self.source_hash,
        }
    }

    /// A packager holding every member: bytes streamed from their files,
    /// typed manifests as their source bytes while unedited, else encoded in
    /// the source's style (or, with no source, as [`Manifest::to_vec_pretty`]
    /// writes). Relative paths resolve against `base`.
    pub fn packager(&self, base: &Path) -> Result<Packager, Error> {
        let mut packager = Packager::new();
        for (i, m) in self.payload.iter().enumerate() {
            packager
                .add(&m.name, self.member_source(base, i)?)
                .map_err(|e| spec_error(format!("payload[{i}] ({}): {e}", m.name)))?;
        }
        Ok(packager)
    }

    /// The bytes of member `i` as [`Model::packager`] packs them (relative
    /// paths resolve against `base`).
    pub fn member_source(&self, base: &Path, i: usize) -> Result<MemberSource, Error> {
        let m = self
            .payload
            .get(i)
            .ok_or_else(|| spec_error(format!("payload[{i}]: no such member")))?;
        let key = format!("payload[{i}] ({})", m.name);
        match &m.content {
            Content::Data(blob) => blob_source(base, &key, blob),
            typed => {
                let value = typed
                    .to_value()
                    .unwrap_or(Ok(serde_json::Value::Null))
                    .map_err(|e| spec_error(format!("{key}: cannot encode: {e}")))?;
                manifest_bytes(base, &key, m.source.as_ref(), &value, typed)
            }
        }
    }

    /// Writes the NEFF at `out` (atomically, checked by the loader's gates
    /// as it is written), with `settings` over the recorded header.
    pub fn write_to_path(
        &self,
        base: &Path,
        out: &Path,
        settings: &PackSettings,
    ) -> Result<crate::PackOutcome, Error> {
        let (packager, options) = self.prepare(base, settings)?;
        packager.write_to_path(out, &options)
    }

    /// The packager and options [`Model::write_to_path`] uses.
    pub fn prepare(
        &self,
        base: &Path,
        settings: &PackSettings,
    ) -> Result<(Packager, PackOptions), Error> {
        let options = settings.options(self.header_file())?;
        Ok((self.packager(base)?, options))
    }

    /// The model as a build spec (pretty JSON, final newline), blob paths
    /// relative to the spec's folder.
    pub fn to_spec_json(&self) -> Result<String, Error> {
        let fail = |e: serde_json::Error| spec_error(format!("cannot encode the model: {e}"));
        // The member list and the framing's entry list (one item per tar
        // entry each) are written item by item, not held as one tree.
        let shallow = Model {
            header: self.header.clone(),
            framing: self.framing.as_ref().map(Framing::without_entries),
            source_hash: self.source_hash,
            payload: Vec::new(),
        };
        let mut value = serde_json::to_value(&shallow).map_err(fail)?;
        if let Some(header) = value.get_mut("header").and_then(|h| h.as_object_mut()) {
            header.retain(|_, v| !v.is_null());
        }
        let entries = self
            .framing
            .as_ref()
            .map_or(&[][..], |f| &f.tar.entries[..]);
        let lists = [
            Streamed::of("/framing/tar", "entries", entries, true),
            Streamed::of("", "payload", &self.payload[..], false),
        ];
        let text = crate::pretty_json::to_pretty(value, &lists).map_err(fail)?;
        Ok(text + "\n")
    }
}

/// The `.npy` header and data length of a blob (a file or inline bytes).
fn npy_of(base: &Path, at: &str, blob: &Blob) -> Result<(neff_schema::npy::NpyHeader, u64), Error> {
    match crate::blob::blob_data(base, at, blob.clone())? {
        crate::Data::Path(path) => crate::builder::weights::npy_file_data_len(&path, at),
        crate::Data::Source(crate::MemberSource::Bytes(bytes)) => {
            crate::builder::weights::npy_bytes_data_len(&bytes, at)
        }
        _ => Err(spec_error(format!(
            "{at}: the .npy must be a file or inline bytes"
        ))),
    }
}

fn spec_error(message: String) -> Error {
    Error::new(ErrorKind::Spec, message)
}

/// `dir/name` → (`dir`, `name`); a top-level name has dir `""`.
fn split(name: &str) -> (&str, &str) {
    name.rsplit_once('/').unwrap_or(("", name))
}

/// `name` resolved in the folder of `member` (as the loader resolves
/// manifest references: relative to the subgraph folder).
fn beside(member: &str, name: &str) -> String {
    match split(member).0 {
        "" => name.to_string(),
        dir => format!("{dir}/{name}"),
    }
}

/// Every typed member, found by following neff.json → KELF → def.json →
/// engine → act_info as the loader does; each is read and parsed once, and
/// the references are taken from its typed value. A manifest the model
/// cannot hold exactly maps to the reason it stays bytes. `read` gives a
/// member's bytes (from an unpacked tree, or the loader's member map).
pub fn typed_manifests<'a>(
    names: &BTreeSet<&str>,
    mut read: impl FnMut(&str) -> Result<Cow<'a, [u8]>, String>,
) -> BTreeMap<String, Result<Content, String>> {
    let mut found: BTreeMap<String, Result<Content, String>> = BTreeMap::new();
    let mut queue: Vec<(String, Role)> = Vec::new();
    let mut budget = TypingBudget::default();
    if names.contains("neff.json") {
        queue.push(("neff.json".into(), Role::NeffJson));
    } else {
        // neuronx-cc 2.21+ writes neff.json last; without one, the KELF
        // descriptors at the top level.
        let kelfs = names
            .iter()
            .filter(|n| !n.contains('/') && n.starts_with("kelf") && n.ends_with(".json"));
        queue.extend(kelfs.map(|n| (n.to_string(), Role::Kelf)));
    }
    while let Some((name, role)) = queue.pop() {
        if !names.contains(name.as_str()) || found.contains_key(&name) {
            continue;
        }
        let content = read(&name).and_then(|bytes| typed(&bytes, &name, role, &mut budget));
        if let Ok(content) = &content {
            queue.extend(references(&name, content));
        }
        found.insert(name, content);
    }
    found
}

/// The typed members `content` (the member `name`) names.
fn references(name: &str, content: &Content) -> Vec<(String, Role)> {
    match content {
        Content::NeffJson(graph) => graph
            .nodes
            .iter()
            .filter_map(|n| n.attrs.as_ref()?.kelf.clone())
            .map(|kelf| (kelf, Role::Kelf))
            .collect(),
        Content::Kelf(desc) => desc
            .graphs
            .iter()
            .map(|g| (g.definition.clone(), Role::DefJson))
            .collect(),
        Content::DefJson(def) => Engine::ALL
            .into_iter()
            .filter_map(|e| def.engine(e))
            .map(|e| (beside(name, e), Role::Engine))
            .collect(),
        Content::Engine(eng) => eng
            .act_info
            .iter()
            .map(|info| (beside(name, info), Role::ActInfo))
            .collect(),
        Content::ActInfo(_) | Content::Data(_) => Vec::new(),
    }
}

/// Reads `path` as the typed manifest `role`, checking that the typed value
/// holds every byte of meaning the file has (the same JSON value, no key
/// repeated); the error says why it cannot be typed.
/// Why a manifest of `len` bytes is not typed.
pub fn too_long(len: u64) -> String {
    format!("{len} bytes is more than the loader reads of a manifest ({MANIFEST_MAX})")
}

fn typed(
    bytes: &[u8],
    name: &str,
    role: Role,
    budget: &mut TypingBudget,
) -> Result<Content, String> {
    budget.take(bytes)?;
    let value: serde_json::Value = serde_json::from_slice(bytes).map_err(|e| e.to_string())?;
    if restyle::rewrite(bytes, &value).as_deref() != Some(bytes) {
        return Err("its text is not what its value writes in its own style".into());
    }
    fn from<T: Manifest>(value: serde_json::Value) -> Result<Box<T>, String> {
        serde_json::from_value(value)
            .map(Box::new)
            .map_err(|e| e.to_string())
    }
    let content = match role {
        Role::NeffJson => Content::NeffJson(from(value.clone())?),
        Role::Kelf => Content::Kelf(from(value.clone())?),
        Role::DefJson => Content::DefJson(from(value.clone())?),
        Role::Engine => Content::Engine(from(value.clone())?),
        Role::ActInfo => Content::ActInfo(from(value.clone())?),
    };
    match content.to_value() {
        Some(Ok(v)) if v == value => Ok(content),
        _ => Err(format!(
            "the typed {name} does not hold it exactly (a null or a value of another type)"
        )),
    }
}

/// A member's bytes from a blob.
fn blob_source(base: &Path, key: &str, blob: &Blob) -> Result<MemberSource, Error> {
    Ok(match crate::blob::blob_data(base, key, blob.clone())? {
        crate::Data::Path(path) => {
            MemberSource::file(&path).map_err(|e| Error::io("cannot read", &path, e))?
        }
        other => other.into_source(key)?,
    })
}

/// A typed manifest's bytes: its source's when they hold `value`, else
/// `value` in the source's style, else in the producers' default style.
fn manifest_bytes(
    base: &Path,
    key: &str,
    source: Option<&Blob>,
    value: &serde_json::Value,
    content: &Content,
) -> Result<MemberSource, Error> {
    let original = match source {
        Some(blob) => match crate::blob::blob_data(base, key, blob.clone())? {
            crate::Data::Path(path) => {
                let len = std::fs::metadata(&path)
                    .map_err(|e| Error::io("cannot read", &path, e))?
                    .len();
                if len > MANIFEST_MAX {
                    return Err(spec_error(format!(
                        "{key}: source {} is {len} bytes, more than a manifest may be",
                        path.display()
                    )));
                }
                Some(std::fs::read(&path).map_err(|e| Error::io("cannot read", &path, e))?)
            }
            crate::Data::Source(MemberSource::Bytes(bytes)) => Some(bytes),
            _ => None,
        },
        None => None,
    };
    let parsed = original
        .as_deref()
        .and_then(|o| serde_json::from_slice::<serde_json::Value>(o).ok());
    if parsed.as_ref() == Some(value) {
        if let Some(original) = original {
            return Ok(MemberSource::Bytes(original));
        }
    }
    if let Some(t) = content.typo(value, parsed.as_ref()) {
        return Err(spec_error(format!(
            "{key}: key {} is not one this tool models nor in the source (did you mean {:?}?); to write it as it is, give the member as data",
            t.path, t.known
        ))
        .at_key(format!("{key}.{}", t.path)));
    }
    if let Some(original) = original {
        if let Some(bytes) = restyle::rewrite(&original, value) {
            return Ok(MemberSource::Bytes(bytes));
        }
    }
    neff_schema::manifest::to_vec_pretty(value)
        .map(MemberSource::Bytes)
        .map_err(|e| spec_error(format!("{key}: {e}")))
}

/// `path` relative to `base` when both resolve (`../tree/sg00/def.json`),
/// else `path` made absolute.
pub(crate) fn relative_to(path: &Path, base: &Path) -> PathBuf {
    let (Ok(path), Ok(base)) = (std::path::absolute(path), std::path::absolute(base)) else {
        return path.to_path_buf();
    };
    let path: Vec<Component> = path.components().collect();
    let base: Vec<Component> = base.components().collect();
    let common = path.iter().zip(&base).take_while(|(a, b)| a == b).count();
    if common == 0
        || base[common..]
            .iter()
            .any(|c| matches!(c, Component::ParentDir))
    {
        return path.iter().collect();
    }
    let mut out = PathBuf::new();
    for _ in common..base.len() {
        out.push("..");
    }
    out.extend(&path[common..]);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn relative_paths() {
        assert_eq!(
            relative_to(Path::new("/a/b/tree/x.json"), Path::new("/a/b")),
            PathBuf::from("tree/x.json")
        );
        assert_eq!(
            relative_to(Path::new("/a/tree/x.json"), Path::new("/a/spec")),
            PathBuf::from("../tree/x.json")
        );
    }

    #[test]
    fn beside_resolves_in_the_subgraph_folder() {
        assert_eq!(beside("sg01/def.json", "PE.json"), "sg01/PE.json");
        assert_eq!(beside("def.json", "PE.json"), "PE.json");
    }
}
