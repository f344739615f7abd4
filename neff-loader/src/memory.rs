//! The gates over a model still in memory: its members and the header it will
//! be written with, before any byte of a NEFF exists. This is how a writer
//! asks the loader instead of keeping its own copy of the rules.
//!
//! The payload does not exist yet, so what depends on it is left to a check of
//! the written file: G1–G3, G6 and G8–G12 (sizes, compression, the tar walk,
//! the hash). The header gates on fields alone (G4, G5, G7) and every manifest
//! tier run as in [`crate::Loader::verify`].

use std::io;

use neff_schema::{Arch, NeffHeader};

use crate::access::MANIFEST_MAX;
use crate::container::{prefix_len, Container, EntryFate, EntryRecord, WAVEGRAPH_SUFFIX};
use crate::members::MemberMeta;
use crate::tar_reader::{display_name, escape_name, EntryKind};
use crate::{arch_loads, container, RuntimeProfile, Verdict};

/// One member of an in-memory model, as [`check_members`] reads it.
#[derive(Debug, Clone, Copy)]
pub enum MemberData<'a> {
    /// Every byte.
    Bytes(&'a [u8]),
    /// Only the size and the first bytes (at least 16 when it has them, enough
    /// for the magic checks), for large members that are not manifests.
    Sized {
        /// Size in bytes.
        size: u64,
        /// The first bytes.
        prefix: &'a [u8],
    },
}

/// Runs the gates over an in-memory model on every architecture, as
/// [`crate::Loader::verify`] would over the NEFF holding these members (stored
/// under these names, `./` already stripped) and `header` (its payload-derived
/// fields, `data_size` and `hash`, are not read). A member named like a
/// manifest (`.json`) must be given as [`MemberData::Bytes`] to be parsed;
/// one longer than [`crate::MANIFEST_MAX`] is refused as the read-back of
/// the written file would refuse it.
pub fn check_members<'a>(
    members: impl IntoIterator<Item = (&'a str, MemberData<'a>)>,
    header: &NeffHeader,
    profile: &RuntimeProfile,
) -> Verdict {
    let mut container = Container {
        header: header.clone(),
        walk_complete: true,
        entries_complete: true,
        ..Container::default()
    };
    let mut warnings = Vec::new();
    let mut total = 0u64;
    for (name, data) in members {
        let key = name.strip_prefix("./").unwrap_or(name);
        let (size, whole, prefix) = match data {
            MemberData::Bytes(b) => (b.len() as u64, Some(b), b),
            MemberData::Sized { size, prefix } => (size, None, prefix),
        };
        let skipped = key.as_bytes().ends_with(WAVEGRAPH_SUFFIX);
        total += size;
        container.entries.push(EntryRecord {
            name: escape_name(name.as_bytes()),
            raw_name: name.as_bytes().to_vec(),
            key: escape_name(key.as_bytes()),
            size,
            kind: EntryKind::File,
            header_offset: 0,
            fate: if skipped {
                EntryFate::Wavegraph
            } else {
                EntryFate::Stored
            },
        });
        // Manifests are kept as the walk keeps them; the rest by prefix.
        let data = whole.filter(|_| key.ends_with(".json") && size <= MANIFEST_MAX);
        let body = data.unwrap_or(&prefix[..prefix.len().min(prefix_len(key.as_bytes()))]);
        let meta = MemberMeta {
            size,
            kind: EntryKind::File,
            header_offset: 0,
            whole: data.is_some(),
        };
        let table = if skipped {
            &mut container.skipped
        } else {
            &mut container.members
        };
        table.push(key.as_bytes(), body, meta);
    }
    container.skipped.compact(|_, _, _| {});
    container.members.compact(|key, _, _| {
        let key = display_name(key);
        warnings.push(format!("duplicate member {key}: the later one replaces it"));
    });
    // The manifest budgets scale with the stored payload, not written yet: the
    // members' total stands for it (the file will hold at most about that).
    container.tar_size = Some(total);
    let rejection = container::header_gates(header, None, profile, &mut warnings);
    let tier1 = container::Tier1 {
        container: Some(container),
        rejection,
        warnings,
    };
    let loads = arch_loads(&tier1, &mut Some(NotKept), profile, &Arch::ALL);
    Verdict::from_loads(loads)
}

/// The source the manifest tiers re-read a member not kept from: there is
/// none in memory, so reading fails with the reason.
struct NotKept;

impl NotKept {
    fn error() -> io::Error {
        io::Error::new(
            io::ErrorKind::OutOfMemory,
            format!(
                "this verifier parses only manifests given in full of at most {MANIFEST_MAX} bytes"
            ),
        )
    }
}

impl io::Read for NotKept {
    fn read(&mut self, _: &mut [u8]) -> io::Result<usize> {
        Err(NotKept::error())
    }
}

impl io::Seek for NotKept {
    fn seek(&mut self, _: io::SeekFrom) -> io::Result<u64> {
        Err(NotKept::error())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Gate;

    #[test]
    fn a_manifest_longer_than_the_verifier_parses_is_refused_as_on_read_back() {
        let big = vec![b' '; MANIFEST_MAX as usize + 1];
        let members = [("neff.json", MemberData::Bytes(&big))];
        let mut header = NeffHeader::default();
        header.set_pkg_version(2);
        header.set_header_size(0x400);
        let verdict = check_members(members, &header, &RuntimeProfile::default());
        assert!(!verdict.accepted);
        let report = verdict.combined_report();
        assert_eq!(report.gate, Some(Gate::G14), "{}", report.summary());
        let message = report.message.unwrap_or_default();
        let wanted = format!("fail to allocate memory({}) for file neff.json", big.len());
        assert_eq!(message, wanted);
        let detail = report.detail.unwrap_or_default();
        assert!(
            detail.contains("more than this verifier parses (134217728)"),
            "{detail}"
        );
    }
}
