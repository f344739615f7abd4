//! Member access for the manifest tiers: kept bytes first, a second read of
//! the source for manifests too large to keep, and a record of every member
//! a manifest refers to.

use std::cell::Cell;
use std::collections::BTreeSet;
use std::io::{Read, Seek};

use crate::container::{reread_member, Container};
use crate::gate::{Gate, Rejection};
use crate::json::{self, Budget, Doc, Duplicates, ParseError};
use crate::members::MemberRef;
use crate::model::{MissingReference, ModelSummary};
use crate::profile::RuntimeProfile;
use crate::report::Warnings;
use crate::tar_reader::display_name;

/// Largest manifest the manifest tiers parse (re-read from the source when it
/// was too large to keep during the walk).
pub const MANIFEST_MAX: u64 = 128 << 20;

/// Bytes the manifest tiers of one load may read to parse manifests (kept
/// bytes parsed, plus the tar stream inflated again to reach and read the
/// others), over [`READ_PER_TAR_BYTE`] times the tar stream's size. Bounds
/// the work however often a manifest is named (many graphs sharing one
/// def.json) or has to be read again.
pub const READ_MAX: u64 = 512 << 20;

/// How many times the whole tar stream the manifest tiers may read again,
/// on top of [`READ_MAX`].
pub const READ_PER_TAR_BYTE: u64 = 4;

/// What one manifest read costs at least against [`READ_MAX`] (so that a
/// small manifest named over and over is bounded too).
pub const READ_MIN: u64 = 16 << 10;

/// Most items (variables, weights, queues, libraries, carveouts, missing
/// references) the model summary of one load lists; the rest are checked
/// but only counted.
pub const LISTED_MAX: usize = 200_000;

/// Most members no manifest refers to that the model summary lists; the
/// rest are counted in a warning (a tree of a million data files would
/// otherwise cost a string per file and arch).
pub const UNREFERENCED_LISTED_MAX: usize = 10_000;

/// What the manifest tiers of one load count across all their runs.
#[derive(Debug, Default)]
pub struct Load {
    /// Bytes read for parsing (see [`READ_MAX`]).
    read: Cell<u64>,
    /// Summary items listed, and those past [`LISTED_MAX`].
    listed: Cell<usize>,
    unlisted: Cell<usize>,
}

impl Load {
    /// Adds `item` to a list of the model summary, or counts it once the
    /// load has listed [`LISTED_MAX`].
    pub fn list<T>(&self, list: &mut Vec<T>, item: T) {
        if self.listed.get() < LISTED_MAX {
            self.listed.set(self.listed.get() + 1);
            list.push(item);
        } else {
            self.unlisted.set(self.unlisted.get() + 1);
        }
    }

    /// The warning for the items not listed, if any were left out.
    pub fn unlisted_warning(&self) -> Option<String> {
        let n = self.unlisted.get();
        (n > 0).then(|| {
            format!("{n} more summary items (variables, queues, libraries, carveouts, references) are checked but not listed (the summary lists {LISTED_MAX})")
        })
    }
}

/// A readable, seekable NEFF source.
pub trait Source: Read + Seek {}
impl<T: Read + Seek> Source for T {}

/// What the manifest tiers share while they run.
pub struct Ctx<'a> {
    /// The container read by Tier 1.
    pub container: &'a Container,
    source: Option<&'a mut dyn Source>,
    /// What this load counts across its runs.
    pub load: &'a Load,
    /// The simulated runtime.
    pub profile: &'a RuntimeProfile,
    /// Warnings, appended in load order.
    pub warnings: Warnings,
    /// Everything learned about the model.
    pub model: ModelSummary,
    referenced: BTreeSet<Vec<u8>>,
    /// Set when a check's outcome depended on the arch the target resolved
    /// to (so that it cannot stand for another arch's).
    pub arch_dependent: bool,
}

impl std::fmt::Debug for Ctx<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Ctx")
            .field("container", &self.container)
            .field("profile", &self.profile)
            .field("warnings", &self.warnings)
            .field("model", &self.model)
            .finish_non_exhaustive()
    }
}

/// What a run of checks left behind, to be carried over to another run:
/// warnings, what was learned, the members referred to.
#[derive(Debug, Clone, Default)]
pub struct Effects {
    warnings: Warnings,
    model: ModelSummary,
    referenced: BTreeSet<Vec<u8>>,
}

impl<'a> Ctx<'a> {
    /// A context over a container; `source` allows re-reading large
    /// manifests; `load` counts what the load's runs read and list.
    pub fn new(
        container: &'a Container,
        source: Option<&'a mut dyn Source>,
        load: &'a Load,
        profile: &'a RuntimeProfile,
    ) -> Self {
        Ctx::resume(container, source, load, profile, Effects::default())
    }

    /// A context that goes on from what an earlier run left.
    pub fn resume(
        container: &'a Container,
        source: Option<&'a mut dyn Source>,
        load: &'a Load,
        profile: &'a RuntimeProfile,
        earlier: Effects,
    ) -> Self {
        Ctx {
            container,
            source,
            load,
            profile,
            warnings: earlier.warnings,
            model: earlier.model,
            referenced: earlier.referenced,
            arch_dependent: false,
        }
    }

    /// What this run left.
    pub fn effects(self) -> Effects {
        Effects {
            warnings: self.warnings,
            model: self.model,
            referenced: self.referenced,
        }
    }

    /// Adds what a run of the section checks left (warnings, graphs,
    /// missing references and references: all they add).
    pub fn append(&mut self, sections: &Effects) {
        self.warnings.append(&sections.warnings);
        self.model.graphs.extend_from_slice(&sections.model.graphs);
        self.model
            .missing_references
            .extend_from_slice(&sections.model.missing_references);
        self.referenced.extend(sections.referenced.iter().cloned());
    }

    /// The model name from the header (what the runtime prints as the NEFF's name).
    pub fn neff_name(&self) -> String {
        self.container.header.fields().name.to_lossy_string()
    }

    /// The stored member `key`; records the reference when there is one.
    fn member(&mut self, key: &str) -> Option<MemberRef<'a>> {
        let container: &'a Container = self.container;
        let member = container.members.get(key.as_bytes())?;
        self.referenced.insert(key.as_bytes().to_vec());
        Some(member)
    }

    /// True when the member is stored; records the reference.
    pub fn exists(&mut self, key: &str) -> bool {
        self.member(key).is_some()
    }

    /// A stored member's size; records the reference.
    pub fn size(&mut self, key: &str) -> Option<u64> {
        self.member(key).map(|m| m.size)
    }

    /// The first bytes of a stored member (its `prefix`), if stored.
    pub fn prefix(&mut self, key: &str) -> Option<&'a [u8]> {
        self.member(key).map(|m| m.prefix)
    }

    /// True when the archive holds an entry stored under `key` that the
    /// runtime's walk skipped (a `wavegraph-bin.json`): it is in the NEFF
    /// even though the runtime never keeps it.
    pub fn skipped_in_archive(&self, key: &str) -> bool {
        self.container.skipped.contains_key(key.as_bytes())
    }

    /// Notes a reference to a member the runtime never opens; warns when it
    /// is not in the archive at all (one the walk skipped is in the archive).
    pub fn tolerated_reference(&mut self, from: &str, key: impl std::fmt::Display, member: &str) {
        if !self.exists(member) && !self.skipped_in_archive(member) {
            self.warnings.push(format!(
                "{from}: {key} refers to {member}, which is not in the NEFF (the runtime never opens it)"
            ));
            let missing = MissingReference {
                from: from.to_string(),
                key: key.to_string(),
                member: member.to_string(),
            };
            self.load.list(&mut self.model.missing_references, missing);
        }
    }

    /// A member parsed as JSON the way simdjson reads it. `Ok(None)` when absent;
    /// a failure to read or parse it is a rejection by `gate`. Repeated keys
    /// are warned about (the first few by path, then a count).
    pub fn json(&mut self, key: &str, gate: Gate) -> Result<Option<Doc>, Rejection> {
        let budget = Budget::for_stored(self.container.stored_bytes());
        match self.read_json(key, budget) {
            Ok(Some((doc, repeats))) => {
                self.warn_repeats(key, &repeats);
                Ok(Some(doc))
            }
            Ok(None) => Ok(None),
            Err(e) => Err(e.rejection(gate, key)),
        }
    }

    /// A member parsed as JSON without warnings; failures are returned.
    /// Kept bytes are parsed in place, others streamed from a second read of
    /// the source (never held whole).
    pub fn read_json(
        &mut self,
        key: &str,
        budget: Budget,
    ) -> Result<Option<(Doc, Duplicates)>, JsonError> {
        let container: &'a Container = self.container;
        let Some(member) = self.member(key) else {
            return Ok(None);
        };
        let unreadable = |reason: String| JsonError::Read {
            size: member.size,
            reason,
        };
        // Kept bytes cost their length; others the stream up to their end.
        let cost = match member.data {
            Some(_) => member.size,
            None => member.header_offset.saturating_add(member.size),
        }
        .max(READ_MIN);
        let tar = container.tar_size.unwrap_or_default();
        let max = READ_MAX.saturating_add(tar.saturating_mul(READ_PER_TAR_BYTE));
        let read = self.load.read.get().saturating_add(cost);
        if read > max {
            return Err(unreadable(format!(
                "reading it would take the bytes read to parse manifests in this load to {read}, more than this verifier reads ({max}: {READ_MAX} plus {READ_PER_TAR_BYTE} times the {tar}-byte tar stream)"
            )));
        }
        self.load.read.set(read);
        if let Some(data) = member.data {
            return json::parse(data, budget)
                .map(Some)
                .map_err(JsonError::Parse);
        }
        if member.size > MANIFEST_MAX {
            return Err(unreadable(format!(
                "member {} is {} bytes, more than this verifier parses ({MANIFEST_MAX})",
                display_name(key.as_bytes()),
                member.size
            )));
        }
        let Some(source) = self.source.as_mut() else {
            return Err(unreadable("the NEFF source is no longer available".into()));
        };
        let data_size = container.header.data_size();
        let parse = |data: &mut dyn Read| json::parse_reader(data, budget);
        match reread_member(&mut **source, data_size, member.header_offset, parse) {
            Ok(Some(Ok(parsed))) => Ok(Some(parsed)),
            Ok(Some(Err(e))) if e.error.is_io() && !e.limit => Err(unreadable(e.to_string())),
            Ok(Some(Err(e))) => Err(JsonError::Parse(e)),
            Ok(None) => Err(unreadable(
                "a second read of the NEFF did not find the member where the first one did".into(),
            )),
            Err(e) => Err(unreadable(e.to_string())),
        }
    }

    /// The warnings for a manifest's repeated keys: the first ones by path,
    /// then one line with the count of the rest.
    fn warn_repeats(&mut self, key: &str, repeats: &Duplicates) {
        for path in &repeats.shown {
            self.warnings.push(format!(
                "{key}: key {path} appears more than once; the runtime reads the first"
            ));
        }
        if repeats.more > 0 {
            self.warnings.push(format!(
                "{key}: {} more keys appear more than once (not listed); the runtime reads the first of each",
                repeats.more
            ));
        }
    }

    /// Fills in the members no manifest referred to (the first
    /// [`UNREFERENCED_LISTED_MAX`]; a warning counts the rest).
    pub fn finish_references(&mut self) {
        let referenced = &self.referenced;
        let mut unreferenced = self
            .container
            .members
            .keys()
            .filter(|k| !referenced.contains(*k));
        self.model.unreferenced_members = unreferenced
            .by_ref()
            .take(UNREFERENCED_LISTED_MAX)
            .map(display_name)
            .collect();
        let more = unreferenced.count();
        if more > 0 {
            self.warnings.push(format!(
                "{more} more members no manifest refers to are not listed (the summary lists {UNREFERENCED_LISTED_MAX})"
            ));
        }
    }
}

/// Why a manifest could not be had.
#[derive(Debug)]
pub enum JsonError {
    /// Its bytes could not be read (too large, or the source failed).
    Read {
        /// The member's size.
        size: u64,
        /// What failed.
        reason: String,
    },
    /// It is not valid JSON, or larger than the parser's limits.
    Parse(ParseError),
}

impl JsonError {
    /// The refusal by `gate` of the manifest `key`.
    pub fn rejection(&self, gate: Gate, key: &str) -> Rejection {
        match self {
            JsonError::Read { size, reason } => Rejection::new(
                gate,
                format!(
                    "fail to allocate memory({size}) for file {}",
                    display_name(key.as_bytes())
                ),
            )
            .detail(reason.clone()),
            JsonError::Parse(e) if e.limit => {
                Rejection::new(gate, format!("Failed to parse {key}: {e}"))
                    .detail(format!("{key} is larger than this verifier parses: {e}"))
            }
            JsonError::Parse(e) => Rejection::new(gate, format!("Failed to parse {key}: {e}"))
                .detail(format!("{key} is not valid JSON: {e}")),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::{WARNINGS_MAX, WARNING_TEXT_MAX};

    #[test]
    fn warnings_and_summary_items_past_their_caps_are_counted() {
        let mut w = Warnings::default();
        for i in 0..WARNINGS_MAX + 5 {
            w.push(format!("w{i}"));
        }
        let all = w.into_vec();
        assert_eq!(all.len(), WARNINGS_MAX + 1);
        assert_eq!(all[WARNINGS_MAX], "… and 5 more warnings");
        let mut w = Warnings::default();
        w.push("x".repeat(WARNING_TEXT_MAX));
        w.push("y".into());
        assert_eq!(w.into_vec().last().unwrap(), "… and 1 more warnings");
        let load = Load::default();
        let mut list = Vec::new();
        for i in 0..LISTED_MAX + 3 {
            load.list(&mut list, i);
        }
        assert_eq!(list.len(), LISTED_MAX);
        assert!(load
            .unlisted_warning()
            .unwrap()
            .starts_with("3 more summary items"));
    }
}
