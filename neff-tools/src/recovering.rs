//! An unpack that also recovers how the NEFF is framed (`neff unpack
//! --header-out` / `--spec`, Python's `neff.unpack(header_out=…)` and
//! `neff.lift`), stated once for all of them.

use std::path::Path;

use neff_loader::walk::Tier1;
use neff_loader::{Error, Loader, Report, RuntimeProfile};
use neff_writer::{recover_framing, DeflateProof, FramingRecorder, Recovered};

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
