//! The gates over a model still in memory: its members and the header it will
//! be written with, before any byte of a NEFF exists. This is how a writer
//! asks the loader instead of keeping its own copy of the rules.
//!
//! The payload does not exist yet, so what depends on it is left to a check of
//! the written file: G1–G3, G6 and G8–G12 (sizes, compression, the tar walk,
//! the hash). The header gates on fields alone (G4, G5, G7) and every manifest
//! tier run as in [`crate::verify_reader`].

use neff_schema::{Arch, NeffHeader};

use crate::container::{
    Container, EntryFate, EntryRecord, StoredMember, PREFIX_LEN, WAVEGRAPH_SUFFIX,
};
use crate::tar_reader::{escape_name, EntryKind};
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
/// [`crate::verify_reader`] would over the NEFF holding these members (stored
/// under these names, `./` already stripped) and `header` (its payload-derived
/// fields, `data_size` and `hash`, are not read). A member named like a
/// manifest (`.json`) must be given as [`MemberData::Bytes`] to be parsed.
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
    for (name, data) in members {
        let key = name.strip_prefix("./").unwrap_or(name);
        let (size, kept, prefix) = match data {
            MemberData::Bytes(b) => (b.len() as u64, Some(b.to_vec()), b),
            MemberData::Sized { size, prefix } => (size, None, prefix),
        };
        let skipped = key.as_bytes().ends_with(WAVEGRAPH_SUFFIX);
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
        if skipped {
            continue;
        }
        let stored = StoredMember {
            size,
            kind: EntryKind::File,
            header_offset: 0,
            data: kept.filter(|_| key.ends_with(".json")),
            prefix: prefix[..prefix.len().min(PREFIX_LEN)].to_vec(),
        };
        if container
            .members
            .insert(key.as_bytes().to_vec(), stored)
            .is_some()
        {
            warnings.push(format!("duplicate member {key}: the later one replaces it"));
        }
    }
    let rejection = container::header_gates(header, None, profile, &mut warnings);
    let tier1 = container::Tier1 {
        container: Some(container),
        rejection,
        warnings,
    };
    let loads = arch_loads(&tier1, &mut None::<std::io::Empty>, profile, &Arch::ALL);
    Verdict::from_loads(loads)
}
