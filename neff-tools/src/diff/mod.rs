//! Compares two NEFFs: header fields, members (type, size, SHA-256 of the
//! bytes, mtime) and the JSON members by key path; or, with
//! [`DiffOptions::programs`], only the engines' instruction streams.
//!
//! Each NEFF is read once, streaming ([`Snapshot::read`]): no gate is run,
//! so a NEFF the loader refuses compares too, as far as its header and tar
//! walk go (where the walk stops is the `walk` field). What is compared:
//!
//! * header: every field of the 1024-byte header by name, plus the payload's
//!   `compression` (`none`/`gzip`), the gzip header's `gzip_mtime`, and `walk`
//!   (`complete`, or why the tar walk stopped);
//! * members: every tar entry but directories, by name (`./` stripped; a
//!   repeated name counts once, the last entry, as in the runtime). The
//!   entries' order, owner, mode and tar dialect are not compared;
//! * manifests: each changed member named `*.json` that parses in both files
//!   (within the loader's JSON budget), key by key: at most
//!   [`DiffOptions::cap`] differences per member are listed, the rest counted.
//!
//! The header's `hash` and `data_size` describe the stored payload: they
//! differ whenever any member, any mtime or the compression does. Ignoring
//! `mtime` alone therefore still reports them; `framing` ignores them with
//! the rest of how the payload is stored.

mod keys;
mod snapshot;

use std::collections::{BTreeMap, BTreeSet};

use neff_schema::features;
use neff_schema::manifest::Engine;
use serde::Serialize;

pub use keys::KeyDiff;
use keys::KeyDiffs;
pub use snapshot::{member_key, open_members, MemberFacts, Opened, Snapshot};

use neff_loader::walk::in_dir;
use neff_loader::Compression;

/// The header fields, by the names `neff inspect --json` gives them.
pub const HEADER_FIELDS: [&str; 15] = [
    "pkg_version",
    "header_size",
    "data_size",
    "neff_version_major",
    "neff_version_minor",
    "build_version",
    "unused_0",
    "hash",
    "uuid",
    "name",
    "requested_tpb_count",
    "tpb_per_node",
    "feature_bits",
    "vnc_size",
    "pad",
];

/// Names [`DiffOptions::ignore`] accepts besides [`HEADER_FIELDS`], each with
/// what it ignores.
pub const IGNORE_GROUPS: [(&str, &[&str]); 5] = [
    ("compression", &["compression"]),
    ("gzip_mtime", &["gzip_mtime"]),
    ("digest", &["digest"]),
    ("mtime", &["mtime", "gzip_mtime"]),
    (
        "framing",
        &["data_size", "hash", "digest", "compression", "gzip_mtime"],
    ),
];

/// Default of [`DiffOptions::cap`].
pub const DEFAULT_CAP: usize = 100;

/// What to compare.
#[derive(Debug, Clone)]
pub struct DiffOptions {
    ignored: BTreeSet<&'static str>,
    /// Compare only the engines' instruction streams (and which subgraphs
    /// and engines exist).
    pub programs: bool,
    /// Most key-path differences listed per JSON member.
    pub cap: usize,
}

impl Default for DiffOptions {
    fn default() -> Self {
        DiffOptions {
            ignored: BTreeSet::new(),
            programs: false,
            cap: DEFAULT_CAP,
        }
    }
}

impl DiffOptions {
    /// Every name [`DiffOptions::ignore`] accepts.
    pub fn ignorable() -> Vec<&'static str> {
        let groups = IGNORE_GROUPS.iter().map(|(name, _)| *name);
        HEADER_FIELDS.into_iter().chain(groups).collect()
    }

    /// Ignores a header field (by name), or a group of [`IGNORE_GROUPS`]:
    /// `mtime` (member mtimes and the gzip MTIME) or `framing` (`data_size`,
    /// `hash`, `digest`, `compression`, `gzip_mtime`). An unknown name is an error
    /// listing the valid ones.
    pub fn ignore(&mut self, name: &str) -> Result<(), String> {
        if let Some(field) = HEADER_FIELDS.into_iter().find(|f| *f == name) {
            self.ignored.insert(field);
        } else if let Some((_, fields)) = IGNORE_GROUPS.iter().find(|(n, _)| *n == name) {
            self.ignored.extend(fields.iter().copied());
        } else {
            let valid = DiffOptions::ignorable().join(", ");
            return Err(format!("unknown --ignore name {name:?}: use {valid}"));
        }
        Ok(())
    }

    fn ignores(&self, field: &str) -> bool {
        self.ignored.contains(field)
    }
}

/// A field that differs: a header field, or one of a member's.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, schemars::JsonSchema)]
pub struct FieldDiff {
    /// The field's name.
    pub field: String,
    /// Its value in A.
    pub a: String,
    /// Its value in B.
    pub b: String,
}

/// A member in both files that differs.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, schemars::JsonSchema)]
pub struct MemberChange {
    /// The member's name.
    pub name: String,
    /// What differs: `type`, `size`, `sha256`, `mtime`.
    pub fields: Vec<FieldDiff>,
}

/// The members added, removed and changed from A to B, by name.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, schemars::JsonSchema)]
pub struct MemberDiffs {
    /// In B only.
    pub added: Vec<MemberFacts>,
    /// In A only.
    pub removed: Vec<MemberFacts>,
    /// In both, different.
    pub changed: Vec<MemberChange>,
}

impl MemberDiffs {
    /// Whether no member differs.
    pub fn is_empty(&self) -> bool {
        self.added.is_empty() && self.removed.is_empty() && self.changed.is_empty()
    }
}

/// The key-path differences of one JSON member.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, schemars::JsonSchema)]
pub struct ManifestDiff {
    /// The member's name.
    pub member: String,
    /// The first differences, in key order.
    pub differences: Vec<KeyDiff>,
    /// How many more there were, not listed.
    pub more: usize,
}

/// One engine's program: the instruction member its engine JSON names.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, schemars::JsonSchema)]
pub struct Program {
    /// The engine JSON def.json names.
    pub json: String,
    /// The instruction member it names (`instr`), when it does.
    pub instr: Option<String>,
    /// That member's size, when it is in the NEFF.
    pub size: Option<u64>,
    /// That member's SHA-256, when it is in the NEFF.
    pub sha256: Option<String>,
}

impl Program {
    /// Whether both run the same instructions (the members' names may differ).
    fn same(&self, other: &Program) -> bool {
        (self.size, &self.sha256) == (other.size, &other.sha256)
    }
}

/// An engine whose program differs, or that exists in one file only.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, schemars::JsonSchema)]
pub struct ProgramDiff {
    /// `<subgraph folder>/<engine>`, e.g. `sg00/pe`.
    pub program: String,
    /// In A (absent: no such engine).
    pub a: Option<Program>,
    /// In B.
    pub b: Option<Program>,
}

/// What differs between two NEFFs.
#[serde_with::skip_serializing_none]
#[derive(Debug, Clone, PartialEq, Eq, Serialize, schemars::JsonSchema)]
pub struct DiffReport {
    /// True when nothing compared differs.
    pub equal: bool,
    /// The fields ignored (groups expanded).
    pub ignored: Vec<String>,
    /// Header and payload fields that differ (only `walk` with `programs`).
    pub header: Vec<FieldDiff>,
    /// Members added, removed and changed (empty with `programs`).
    pub members: MemberDiffs,
    /// Key-path differences of the changed JSON members (empty with `programs`).
    pub manifests: Vec<ManifestDiff>,
    /// With `programs`: the engines whose programs differ.
    pub programs: Option<Vec<ProgramDiff>>,
}

/// Compares `a` with `b`.
pub fn diff(a: &Snapshot, b: &Snapshot, options: &DiffOptions) -> DiffReport {
    let mut header = header_diffs(a, b, options);
    let mut report = DiffReport {
        equal: false,
        ignored: options.ignored.iter().map(|s| s.to_string()).collect(),
        header: Vec::new(),
        members: MemberDiffs::default(),
        manifests: Vec::new(),
        programs: None,
    };
    if options.programs {
        header.retain(|d| d.field == "walk");
        let programs = program_diffs(&programs(a), &programs(b));
        report.equal = header.is_empty() && programs.is_empty();
        report.programs = Some(programs);
    } else {
        report.members = member_diffs(a, b, options);
        report.manifests = manifest_diffs(a, b, &report.members, options.cap);
        report.equal = header.is_empty() && report.members.is_empty();
    }
    report.header = header;
    report
}

/// Each header field and payload property, rendered.
fn header_values(s: &Snapshot) -> Vec<(&'static str, String)> {
    let fields = serde_json::to_value(s.header.fields()).unwrap_or_default();
    let bits = s.header.feature_bits();
    let mut out: Vec<_> = HEADER_FIELDS
        .into_iter()
        .map(|name| {
            let text = match (name, &fields[name]) {
                ("feature_bits", _) => feature_text(bits),
                (_, serde_json::Value::String(text)) => text.clone(),
                (_, value) => value.to_string(),
            };
            (name, text)
        })
        .collect();
    let compression = match s.compression {
        Compression::None => "none",
        Compression::Gzip => "gzip",
    };
    out.push(("digest", or_dash(s.digest.as_deref())));
    out.push(("compression", compression.to_string()));
    out.push(("gzip_mtime", or_dash(s.gzip_mtime)));
    let walk = s.walk_error.clone().unwrap_or_else(|| "complete".into());
    out.push(("walk", walk));
    out
}

/// The value, or `-` when absent.
fn or_dash(value: Option<impl std::fmt::Display>) -> String {
    value.map_or("-".to_string(), |v| v.to_string())
}

/// `0x401 (collective_has_offset, neff_feature_vnc)`.
fn feature_text(bits: u64) -> String {
    match features::names(bits).join(", ") {
        names if names.is_empty() => format!("{bits:#x}"),
        names => format!("{bits:#x} ({names})"),
    }
}

fn header_diffs(a: &Snapshot, b: &Snapshot, options: &DiffOptions) -> Vec<FieldDiff> {
    let values = header_values(a).into_iter().zip(header_values(b));
    changes(values.map(|((field, a), (_, b))| (field, a, b)), options)
}

/// The fields whose values differ, less the ignored ones.
fn changes<'f>(
    values: impl IntoIterator<Item = (&'f str, String, String)>,
    options: &DiffOptions,
) -> Vec<FieldDiff> {
    values
        .into_iter()
        .filter(|(field, a, b)| a != b && !options.ignores(field))
        .map(|(field, a, b)| FieldDiff {
            field: field.to_string(),
            a,
            b,
        })
        .collect()
}

fn member_diffs(a: &Snapshot, b: &Snapshot, options: &DiffOptions) -> MemberDiffs {
    let mut out = MemberDiffs::default();
    for (name, ma) in &a.members {
        match b.members.get(name) {
            None => out.removed.push(ma.clone()),
            Some(mb) => {
                let fields = member_fields(ma, mb, options);
                if !fields.is_empty() {
                    out.changed.push(MemberChange {
                        name: name.clone(),
                        fields,
                    });
                }
            }
        }
    }
    let added = b
        .members
        .iter()
        .filter(|(n, _)| !a.members.contains_key(*n));
    out.added = added.map(|(_, m)| m.clone()).collect();
    out
}

fn member_fields(a: &MemberFacts, b: &MemberFacts, options: &DiffOptions) -> Vec<FieldDiff> {
    let values = [
        ("type", a.kind.name().to_string(), b.kind.name().to_string()),
        ("size", a.size.to_string(), b.size.to_string()),
        ("sha256", a.sha256.clone(), b.sha256.clone()),
        ("mtime", or_dash(a.mtime), or_dash(b.mtime)),
    ];
    changes(values, options)
}

fn manifest_diffs(
    a: &Snapshot,
    b: &Snapshot,
    members: &MemberDiffs,
    cap: usize,
) -> Vec<ManifestDiff> {
    let changed = members.changed.iter().map(|c| c.name.as_str());
    changed
        .filter_map(|name| {
            let (da, db) = (a.doc(name)?, b.doc(name)?);
            let diffs = KeyDiffs::compare(da.root(), db.root(), cap);
            (!diffs.is_empty()).then(|| ManifestDiff {
                member: name.to_string(),
                differences: diffs.shown,
                more: diffs.more,
            })
        })
        .collect()
}

/// Every engine's program, by `<subgraph folder>/<engine>`: the engines each
/// `def.json` names, and the `instr` member each engine JSON names (both
/// resolved in the def.json's folder, as the loader does).
pub fn programs(s: &Snapshot) -> BTreeMap<String, Program> {
    let mut out = BTreeMap::new();
    let defs = s
        .docs
        .iter()
        .filter(|(name, _)| name.as_str() == "def.json" || name.ends_with("/def.json"));
    for (name, def) in defs {
        let sg_dir = name.rsplit_once('/').map_or("", |(dir, _)| dir);
        for engine in Engine::ALL.map(Engine::as_str) {
            let Some(file) = def.root().get(engine).and_then(|f| f.as_str()) else {
                continue;
            };
            let json = in_dir(sg_dir, file);
            let instr = s.doc(&json).and_then(|d| d.root().get("instr")?.as_str());
            let instr = instr.map(|i| in_dir(sg_dir, i));
            let facts = instr.as_ref().and_then(|i| s.members.get(i));
            let program = Program {
                json,
                size: facts.map(|m| m.size),
                sha256: facts.map(|m| m.sha256.clone()),
                instr,
            };
            out.insert(in_dir(sg_dir, engine), program);
        }
    }
    out
}

fn program_diffs(a: &BTreeMap<String, Program>, b: &BTreeMap<String, Program>) -> Vec<ProgramDiff> {
    let names: BTreeSet<&String> = a.keys().chain(b.keys()).collect();
    names
        .into_iter()
        .filter_map(|name| {
            let (pa, pb) = (a.get(name), b.get(name));
            let same = matches!((pa, pb), (Some(pa), Some(pb)) if pa.same(pb));
            (!same).then(|| ProgramDiff {
                program: name.clone(),
                a: pa.cloned(),
                b: pb.cloned(),
            })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ignore_names_expand_and_unknown_ones_list_the_valid_ones() {
        let mut options = DiffOptions::default();
        options.ignore("uuid").unwrap();
        options.ignore("framing").unwrap();
        let ignored: Vec<_> = options.ignored.iter().copied().collect();
        assert_eq!(
            ignored,
            [
                "compression",
                "data_size",
                "digest",
                "gzip_mtime",
                "hash",
                "uuid"
            ]
        );
        options.ignore("mtime").unwrap();
        assert!(options.ignores("mtime") && !options.ignores("name"));
        let e = options.ignore("walk").unwrap_err();
        assert!(e.contains("\"walk\"") && e.contains("uuid, name") && e.contains("framing"));
    }
}
