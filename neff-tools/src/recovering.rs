//! An unpack that also recovers how the NEFF is framed (`neff unpack
//! --header-out` / `--spec`, Python's `neff.unpack(header_out=…)` and
//! `neff.lift`), stated once for all of them.

use std::path::Path;

use neff_loader::walk::Tier1;
use neff_loader::{Error, Loader, Report, RuntimeProfile};
use neff_writer::{recover_framing, DeflateProof, DeflateProven, FramingRecorder, Recovered};
use schemars::JsonSchema;
use serde::Serialize;

use crate::extract::{extract_observed, extract_refused, ExtractLimits, ExtractSummary};

/// What [`extract_recovering`] gives.
#[derive(Debug)]
pub struct Recovering {
    /// What the unpack wrote.
    pub summary: ExtractSummary,
    /// The container gates' outcome the unpack read (accepted).
    pub tier1: Tier1,
    /// The header refusal unpacked past (`keep_refused` only).
    pub refused: Option<Report>,
    /// How the NEFF is framed, or why that could not be read.
    pub recovered: Result<Recovered, neff_writer::Error>,
}

/// [`crate::extract`] (with `keep_refused`, [`extract_refused`]) that also
/// recovers the framing, proving the deflate stream as far as `proof` says.
/// The recovery rides on the unpack's own walk ([`FramingRecorder`]), so the
/// payload is inflated and hashed once; with `keep_refused`, which may walk
/// twice, it reads the file in a pass of its own beside the unpack.
pub fn extract_recovering(
    neff: &Path,
    dest: &Path,
    profile: &RuntimeProfile,
    force: bool,
    limits: &ExtractLimits,
    keep_refused: bool,
    proof: DeflateProof,
) -> Result<Recovering, Error> {
    if !keep_refused {
        let mut recorder = FramingRecorder::start(neff, proof);
        let (summary, tier1) = extract_observed(neff, dest, profile, force, limits, &mut recorder)?;
        let recovered = match &tier1.container {
            Some(container) => recorder.finish(container),
            None => recover_framing(neff, proof),
        };
        return Ok(Recovering {
            summary,
            tier1,
            refused: None,
            recovered,
        });
    }
    std::thread::scope(|scope| {
        let recovering = scope.spawn(|| recover_framing(neff, proof));
        let unpacked = extract_refused(neff, dest, profile, force, limits);
        let recovered = recovering.join().unwrap_or_else(|_| {
            Err(neff_writer::Error::new(
                neff_writer::ErrorKind::Pipeline,
                "the framing recovery thread panicked",
            ))
        });
        let (summary, tier1, refused) = unpacked?;
        Ok(Recovering {
            summary,
            tier1,
            refused,
            recovered,
        })
    })
}

/// A NEFF lifted for an edit ([`crate::weights`], [`crate::redact`]): its
/// typed model, what the loader read of it, and the folder it is unpacked in.
pub(crate) struct Lifted {
    pub model: neff_writer::lift::Model,
    pub summary: neff_loader::ModelSummary,
    pub tree: std::path::PathBuf,
}

/// Lifts the NEFF at `neff` into `scratch/tree` (a header refusal unpacked
/// past with `keep_refused`), its member blobs resolving against `scratch`.
pub(crate) fn lift_for_edit(
    neff: &Path,
    scratch: &Path,
    keep_refused: bool,
) -> Result<Lifted, neff_writer::Error> {
    let profile = RuntimeProfile::default();
    let tree = scratch.join("tree");
    let limits = ExtractLimits::default();
    let lifted = extract_recovering(
        neff,
        &tree,
        &profile,
        false,
        &limits,
        keep_refused,
        DeflateProof::DEFAULT,
    )?;
    let verdict = Loader::new(&profile).verify_path(neff)?;
    let summary = verdict.display_load().model.clone().unwrap_or_default();
    let (model, _) =
        neff_writer::lift::Model::from_tree(&tree, lifted.recovered?.file, Some(scratch))?;
    Ok(Lifted {
        model,
        summary,
        tree,
    })
}

/// The gates' refusal of a NEFF an unpack read: `refused` (a header refusal
/// it unpacked past), else the verdict of the manifest and section gates on
/// every arch, going on from the unpack's container check `tier1`.
pub fn refusal_after_unpack(
    neff: &Path,
    profile: &RuntimeProfile,
    tier1: Tier1,
    refused: Option<Report>,
) -> Result<Option<Report>, Error> {
    if refused.is_some() {
        return Ok(refused);
    }
    let verdict = Loader::new(profile).verify_walked(tier1, neff)?;
    Ok((!verdict.accepted).then(|| verdict.combined_report()))
}

/// What `neff unpack --json` prints.
#[serde_with::skip_serializing_none]
#[derive(Debug, Default, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct UnpackReport {
    /// Files written (absent when refused).
    pub files: Option<usize>,
    /// Folders created for directory entries (absent when refused).
    pub directories: Option<usize>,
    /// Bytes of member data written (absent when refused).
    pub bytes: Option<u64>,
    /// File entries not written because a later entry has the same path
    /// (absent when refused).
    pub replaced: Option<usize>,
    /// The `--header-out` file written, if asked for.
    pub header_out: Option<String>,
    /// The header and framing recorded in the tree
    /// (`DIR/.neff-unpack.header.json`, which `neff pack DIR` reads), unless
    /// `--no-recorded-header`.
    pub recorded_header: Option<String>,
    /// The `--spec` file written (the typed model as a build spec), if asked for.
    pub spec: Option<String>,
    /// With `--spec`: how many members are typed manifests.
    pub typed_members: Option<usize>,
    /// With `--spec`: manifests a reference names but that stay bytes, and why.
    pub lift_notes: Option<Vec<String>>,
    /// With `--header-out` or `--spec`: whether `neff pack DIR --header
    /// HEADER.json` (or `neff build SPEC.json`) rebuilds the NEFF byte for
    /// byte; for the deflate stream, as far as `deflate_proof` says.
    pub byte_identical_repack: Option<bool>,
    /// With `--header-out` or `--spec`, for a gzip payload whose deflate
    /// engine was found: how much of the stored stream was re-deflated and
    /// compared (all of it with `--prove-deflate`).
    pub deflate_proof: Option<DeflateProven>,
    /// With `--header-out`: what a repack cannot reproduce.
    pub not_reproduced: Option<Vec<String>>,
    /// The container gates' refusal: nothing was unpacked.
    pub verdict: Option<Report>,
    /// The gates refuse this NEFF, which was unpacked all the same: a header
    /// refusal under `--keep-refused`, or, with `--spec`, a refusal by the
    /// manifest or section gates (the lifted spec builds it with
    /// `--keep-refused`).
    pub refused: Option<Report>,
}

impl UnpackReport {
    /// What was unpacked.
    pub fn unpacked(summary: &ExtractSummary) -> Self {
        UnpackReport {
            files: Some(summary.files),
            directories: Some(summary.directories),
            bytes: Some(summary.bytes),
            replaced: Some(summary.replaced),
            ..UnpackReport::default()
        }
    }

    /// With what a framing recovery found: whether a repack is byte for
    /// byte, how much of the deflate stream was proven, what is not
    /// reproduced.
    pub fn recovered(&mut self, r: &Recovered) {
        self.byte_identical_repack = Some(r.exact);
        self.deflate_proof = r.deflate;
        self.not_reproduced = Some(r.file.not_reproduced.clone());
    }

    /// The gates refused the NEFF (`verdict` is their report).
    pub fn refused(verdict: Report) -> Self {
        UnpackReport {
            verdict: Some(verdict),
            ..UnpackReport::default()
        }
    }
}
