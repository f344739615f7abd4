//! Member access for the manifest tiers: kept bytes first, a second read of
//! the source for manifests too large to keep, and a record of every member
//! a manifest refers to.

use std::borrow::Cow;
use std::collections::BTreeSet;
use std::io::{Read, Seek};

use serde_json::Value;

use crate::container::{fetch_member, Container, EntryFate};
use crate::gate::{Gate, Rejection};
use crate::json;
use crate::model::{MissingReference, ModelSummary};
use crate::profile::RuntimeProfile;
use crate::tar_reader::display_name;

/// Largest manifest the manifest tiers parse (re-read from the source when it
/// was too large to keep during the walk).
pub const MANIFEST_MAX: u64 = 128 << 20;

/// A readable, seekable NEFF source.
pub trait Source: Read + Seek {}
impl<T: Read + Seek> Source for T {}

/// What the manifest tiers share while they run.
pub struct Ctx<'a> {
    /// The container read by Tier 1.
    pub container: &'a Container,
    source: Option<&'a mut dyn Source>,
    /// The simulated runtime.
    pub profile: &'a RuntimeProfile,
    /// Warnings, appended in load order.
    pub warnings: Vec<String>,
    /// Everything learned about the model.
    pub model: ModelSummary,
    referenced: BTreeSet<Vec<u8>>,
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

impl<'a> Ctx<'a> {
    /// A context over a container; `source` allows re-reading large manifests.
    pub fn new(
        container: &'a Container,
        source: Option<&'a mut dyn Source>,
        profile: &'a RuntimeProfile,
    ) -> Self {
        Ctx {
            container,
            source,
            profile,
            warnings: Vec::new(),
            model: ModelSummary::default(),
            referenced: BTreeSet::new(),
        }
    }

    /// The model name from the header (what the runtime prints as the NEFF's name).
    pub fn neff_name(&self) -> String {
        self.container.header.fields().name.to_lossy_string()
    }

    /// True when the member is stored; records the reference.
    pub fn exists(&mut self, key: &str) -> bool {
        self.referenced.insert(key.as_bytes().to_vec());
        self.container.members.contains_key(key.as_bytes())
    }

    /// A stored member's size; records the reference.
    pub fn size(&mut self, key: &str) -> Option<u64> {
        self.referenced.insert(key.as_bytes().to_vec());
        self.container.members.get(key.as_bytes()).map(|m| m.size)
    }

    /// The first bytes of a stored member (its `prefix`), if stored.
    pub fn prefix(&mut self, key: &str) -> Option<&'a [u8]> {
        self.referenced.insert(key.as_bytes().to_vec());
        self.container
            .members
            .get(key.as_bytes())
            .map(|m| m.prefix.as_slice())
    }

    /// True when the archive holds an entry stored under `key` that the
    /// runtime's walk skipped (a `wavegraph-bin.json`): it is in the NEFF
    /// even though the runtime never keeps it.
    pub fn skipped_in_archive(&self, key: &str) -> bool {
        self.container.entries.iter().any(|e| {
            e.fate == EntryFate::Wavegraph
                && e.raw_name.strip_prefix(b"./").unwrap_or(&e.raw_name) == key.as_bytes()
        })
    }

    /// Notes a reference to a member the runtime never opens; warns when it
    /// is not in the archive at all (one the walk skipped is in the archive).
    pub fn tolerated_reference(&mut self, from: &str, key: &str, member: &str) {
        if !self.exists(member) && !self.skipped_in_archive(member) {
            self.warnings.push(format!(
                "{from}: {key} refers to {member}, which is not in the NEFF (the runtime never opens it)"
            ));
            self.model.missing_references.push(MissingReference {
                from: from.to_string(),
                key: key.to_string(),
                member: member.to_string(),
            });
        }
    }

    /// A member's bytes: kept ones directly, others read again from the source.
    /// `Ok(None)` when the member is absent. Failures become a rejection by `gate`.
    pub fn bytes(&mut self, key: &str, gate: Gate) -> Result<Option<Cow<'a, [u8]>>, Rejection> {
        self.referenced.insert(key.as_bytes().to_vec());
        let container: &'a Container = self.container;
        let Some(member) = container.members.get(key.as_bytes()) else {
            return Ok(None);
        };
        if let Some(data) = &member.data {
            return Ok(Some(Cow::Borrowed(data.as_slice())));
        }
        let data_size = container.header.data_size();
        let fetched = match self.source.as_mut() {
            Some(source) => fetch_member(&mut **source, data_size, key.as_bytes(), MANIFEST_MAX),
            None => Err(crate::Error::new(
                crate::ErrorKind::Read,
                "the NEFF source is no longer available",
            )),
        };
        match fetched {
            Ok(Some(data)) => Ok(Some(Cow::Owned(data))),
            Ok(None) => Ok(None),
            Err(e) => Err(Rejection::new(
                gate,
                format!(
                    "fail to allocate memory({}) for file {}",
                    member.size,
                    display_name(key.as_bytes())
                ),
            )
            .detail(e.to_string())),
        }
    }

    /// A member parsed as JSON the way simdjson reads it. `Ok(None)` when absent;
    /// a parse failure is a rejection by `gate`. Repeated keys are warned about.
    pub fn json(&mut self, key: &str, gate: Gate) -> Result<Option<Value>, Rejection> {
        let Some(bytes) = self.bytes(key, gate)? else {
            return Ok(None);
        };
        match json::parse(&bytes) {
            Ok((value, duplicates)) => {
                for path in duplicates {
                    self.warnings.push(format!(
                        "{key}: key {path} appears more than once; the runtime reads the first"
                    ));
                }
                Ok(Some(value))
            }
            Err(e) => Err(Rejection::new(gate, format!("Failed to parse {key}: {e}"))
                .detail(format!("{key} is not valid JSON: {e}"))),
        }
    }

    /// Fills in the members no manifest referred to.
    pub fn finish_references(&mut self) {
        self.model.unreferenced_members = self
            .container
            .members
            .keys()
            .filter(|k| !self.referenced.contains(*k))
            .map(|k| display_name(k))
            .collect();
    }
}
