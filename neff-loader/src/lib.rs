//! Reads a NEFF the way the Neuron runtime (`libnrt` 2.31) does and runs its
//! acceptance gates in the runtime's order.
//!
//! Every gate of [`Gate::ALL`] (G1–G31 of spec §5, corrected by §11.5 for
//! what real compiler output holds) is implemented; each refusal carries the
//! runtime's status code and log line. The walk streams the payload: memory
//! stays bounded whatever the input (see [`Limits`]).
//!
//! * [`Loader`]: the loader under a [`RuntimeProfile`] (the simulated
//!   runtime) and [`Limits`]: `load` (one arch, a [`Loaded`] with its
//!   [`Report`]), `load_arches`, `verify` (every arch, a [`Verdict`]: accepted
//!   when the NEFF loads on every arch it targets), on any seekable source;
//! * [`load_file`], [`verify_file`] and [`load_buffer`]: the same on a file
//!   or bytes in memory, with the default limits;
//! * [`Runtime`]: `neff verify FILE`'s check ([`Checked`]), on one arch or on all;
//!   the [`RuntimeProfile`] is data (serde), with defaults.
//!
//! ```
//! use neff_loader::{load_file, verify_file, RuntimeProfile};
//! # use neff_schema::manifest::Dtype;
//! # use neff_writer::{builder::Tensor, NeffBuilder};
//! # let dir = tempfile::tempdir()?;
//! # let path = dir.path().join("model.neff");
//! # NeffBuilder::new()
//! #     .subgraph("sg00", |sg| sg.output("y", Tensor::new(Dtype::Float32, [4])))
//! #     .write_to_path(&path)?;
//! // `path` is a NEFF written by neff-writer's `NeffBuilder`.
//! let loaded = load_file(&path, &RuntimeProfile::default())?;
//! println!("{}", loaded.report.summary());
//! assert!(loaded.report.accepted);
//! assert!(verify_file(&path, &RuntimeProfile::default())?.accepted);
//!
//! // An empty file is refused by the size check, G2.
//! std::fs::write(&path, b"")?;
//! let loaded = load_file(&path, &RuntimeProfile::default())?;
//! assert_eq!(loaded.report.gate, Some(neff_loader::Gate::G2));
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
#![deny(missing_docs)]
#![deny(missing_debug_implementations)]

mod access;
mod block_pool;
mod container;
mod digest;
mod error;
mod filter_chain;
mod gate;
mod gzip_reader;
pub mod inputs;
mod json;
mod manifests;
mod members;
mod model;
mod profile;
mod report;
mod sections;
mod staging;
mod stream_check;
mod tar_reader;

use std::collections::BTreeMap;
use std::fs::File;
use std::io::{self, Cursor, Read, Seek};
use std::path::Path;

use neff_schema::{Arch, Target};
use serde::Serialize;

pub use access::{MANIFEST_MAX, READ_MAX, READ_PER_TAR_BYTE};

/// The stack a thread that loads a NEFF should have: manifests are read
/// nested up to 1024 deep, as the runtime's simdjson reads them (the main
/// thread's 8 MiB is plenty; a spawned thread's default 2 MiB is not, in
/// every build).
pub const LOAD_STACK: usize = 16 << 20;
pub use container::{
    payload_stream, Compression, Container, EntryFate, EntryRecord, Limits, PayloadPadding,
};
pub use error::{Error, ErrorKind, GzipErrorKind, TarErrorKind};
pub use gate::{Gate, NrtStatus, Rejection};
pub use members::{MemberRef, MemberTable};
pub use model::{
    BuilderMember, DmaSummary, EngineSummary, GraphSummary, IoVar, MissingReference, ModelIo,
    ModelSummary, NnTensor, QueueSummary, ScratchpadSummary, SignatureTensor, UcodeLibSummary,
    VarSummary, WeightSummary, BARRIER_CONFIG_MEMBER,
};
pub use neff_schema::features::{parse_features, parse_mask};
pub use profile::{RuntimeProfile, EVTACCEL_OFFSET, RUNTIME_VERSION, UCODE_ABI_2_31};
pub use report::{tier_names, ArchScope, Report, Tier};
pub use stream_check::{StreamCheck, StreamedDigests};
pub use tar_reader::{Dialect, Entry, EntryKind, TarReader};

/// The payload walk as the runtime's libarchive reads it, with what tools
/// that reproduce the stored bytes need besides (the writer's framing
/// recovery drives these, so it can never read a payload another way).
pub mod walk {
    pub use crate::container::{
        reread_member, run_into as walk_entries, EntrySink, NoSink, Tier1, INDEX_PER_STORED_BYTE,
    };
    pub use crate::digest::{matching_layout, Digester, Tap};
    pub use crate::filter_chain::{gzip_layers, MAX_FILTERS};
    pub use crate::gzip_reader::{
        looks_like_gzip, FirstMember, GzipMemberHeader, GzipReader, MAX_RECORDED_TEXT,
    };
    pub use crate::json::{parse, parse_reader, Budget, Doc, Json};
    pub use crate::sections::in_dir;
    pub use crate::tar_reader::{
        escape_name, header_field, padding, pax_records, StoredHeader, TarReader, BLOCK,
        MAX_SPECIAL_HEADER,
    };
}

use access::{Ctx, Effects, Load, Source};
use staging::GraphStaging;

/// A NEFF as loaded under one profile.
#[derive(Debug)]
pub struct Loaded {
    /// The verdict.
    pub report: Report,
    /// The first refusal, if any.
    pub rejection: Option<Rejection>,
    /// What was read; absent when the header itself could not be read.
    pub container: Option<Container>,
    /// What the manifest tiers learned, up to their first refusal. Absent when
    /// Tier 1 refused before its tar walk was complete. When Tier 1 refused
    /// only after a complete walk (G9, the hash), the manifest tiers still run
    /// to fill this in for display: see [`Loaded::model_past_refusal`].
    pub model: Option<ModelSummary>,
    /// Set when [`Loaded::model`] was read for display only, past a Tier-1
    /// refusal at which the runtime stops. It plays no part in the verdict.
    pub model_past_refusal: Option<PastRefusal>,
}

/// How far the manifest tiers got when they ran for display past a Tier-1
/// refusal.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PastRefusal {
    /// The Tier-1 gate that refused (the verdict).
    pub past: Gate,
    /// The first refusal of the manifest tiers themselves, if any (not part
    /// of the verdict: the runtime never gets there).
    pub then: Option<Rejection>,
}

/// The loader under one runtime profile and memory limits: reads a NEFF as
/// the runtime does and runs the gates in its order.
///
/// `None` as a source stands for a NULL buffer (refused by G1). `Err` means
/// the source could not be read (an I/O failure, [`ErrorKind::Read`]), never
/// that the NEFF is bad: refusals are in the reports.
///
/// ```
/// use neff_loader::{Limits, Loader, RuntimeProfile};
/// let profile = RuntimeProfile::default();
/// let bytes: &[u8] = b"not a NEFF";
/// let verdict = Loader::new(&profile)
///     .limits(Limits::for_verdict())
///     .verify(Some(std::io::Cursor::new(bytes)))?;
/// assert!(!verdict.accepted);
/// # Ok::<(), neff_loader::Error>(())
/// ```
#[derive(Debug, Clone)]
pub struct Loader<'p> {
    profile: &'p RuntimeProfile,
    limits: Limits,
}

impl<'p> Loader<'p> {
    /// The loader of `profile`, with [`Limits::default`].
    pub fn new(profile: &'p RuntimeProfile) -> Loader<'p> {
        Loader {
            profile,
            limits: Limits::default(),
        }
    }

    /// The same loader with other memory limits (and progress counter).
    pub fn limits(mut self, limits: Limits) -> Loader<'p> {
        self.limits = limits;
        self
    }

    /// Loads a NEFF on the profile's instance arch.
    pub fn load<R: Read + Seek>(&self, source: Option<R>) -> Result<Loaded, Error> {
        let arch = [self.profile.instance_arch];
        only(self.load_arches(source, &arch)?)
    }

    /// [`Loader::load`] on the file at `path`; the report's `file` is `path`.
    pub fn load_path(&self, path: impl AsRef<Path>) -> Result<Loaded, Error> {
        let arch = [self.profile.instance_arch];
        only(self.load_path_arches(path, &arch)?)
    }

    /// Loads a NEFF once and runs the arch-dependent tiers for each of
    /// `arches` (Tier 1 does not depend on the arch and runs once). One
    /// [`Loaded`] per arch, in order; only the first carries the container.
    pub fn load_arches<R: Read + Seek>(
        &self,
        source: Option<R>,
        arches: &[Arch],
    ) -> Result<Vec<Loaded>, Error> {
        let mut source = source;
        let tier1 = container::run(source.as_mut(), self.profile, &self.limits)?;
        after_tier1(tier1, source, self.profile, arches)
    }

    /// Loads a NEFF on every architecture and decides whether it loads
    /// wherever it targets.
    pub fn verify<R: Read + Seek>(&self, source: Option<R>) -> Result<Verdict, Error> {
        Ok(Verdict::from_loads(self.load_arches(source, &Arch::ALL)?))
    }

    /// [`Loader::load_arches`] on the file at `path`; every report's `file`
    /// is `path`.
    pub fn load_path_arches(
        &self,
        path: impl AsRef<Path>,
        arches: &[Arch],
    ) -> Result<Vec<Loaded>, Error> {
        let path = path.as_ref();
        let source = Some(open_path(path)?);
        let mut all = self
            .load_arches(source, arches)
            .map_err(|e| e.at_path(path))?;
        name_file(&mut all, path);
        Ok(all)
    }

    /// [`Loader::verify_path`] going on from a container check of the file
    /// at `path` that already ran under this loader's profile (an unpack's
    /// walk, [`walk::walk_entries`]): the manifest and section tiers on
    /// every arch, reading the file again only for what the walk did not
    /// keep.
    pub fn verify_walked(
        &self,
        tier1: walk::Tier1,
        path: impl AsRef<Path>,
    ) -> Result<Verdict, Error> {
        let path = path.as_ref();
        let source = Some(open_path(path)?);
        let mut all =
            after_tier1(tier1, source, self.profile, &Arch::ALL).map_err(|e| e.at_path(path))?;
        name_file(&mut all, path);
        Ok(Verdict::from_loads(all))
    }

    /// [`Loader::verify`] on the file at `path`.
    pub fn verify_path(&self, path: impl AsRef<Path>) -> Result<Verdict, Error> {
        Ok(Verdict::from_loads(
            self.load_path_arches(path, &Arch::ALL)?,
        ))
    }
}

/// The file at `path`, buffered for the walk.
fn open_path(path: &Path) -> Result<io::BufReader<File>, Error> {
    let file = File::open(path).map_err(|e| Error::io(ErrorKind::Read, "cannot open", path, e))?;
    Ok(io::BufReader::with_capacity(1 << 20, file))
}

/// Names `path` as every report's `file`.
fn name_file(all: &mut [Loaded], path: &Path) {
    for loaded in all {
        loaded.report.file = Some(path.display().to_string());
    }
}

/// What follows Tier 1, whichever way it ran (over a seekable source or
/// streamed, [`StreamCheck`]): the padding measured from `source`, then the
/// arch-dependent tiers once per arch of `arches`.
fn after_tier1<R: Read + Seek>(
    mut tier1: container::Tier1,
    mut source: Option<R>,
    profile: &RuntimeProfile,
    arches: &[Arch],
) -> Result<Vec<Loaded>, Error> {
    if let (Some(src), Some(c)) = (source.as_mut(), tier1.container.as_mut()) {
        c.measure_padding(src)?;
    }
    let mut out = arch_loads(&tier1, &mut source, profile, arches);
    if let Some(first) = out.first_mut() {
        first.container = tier1.container;
    }
    Ok(out)
}

/// The arch-dependent tiers after Tier 1, once per arch of `arches`.
fn arch_loads<R: Read + Seek>(
    tier1: &container::Tier1,
    source: &mut Option<R>,
    profile: &RuntimeProfile,
    arches: &[Arch],
) -> Vec<Loaded> {
    let src: Option<&mut dyn Source> = source.as_mut().map(|s| s as &mut dyn Source);
    let mut manifests = match &tier1.container {
        Some(container) if tier1.rejection.is_none() || container.walk_complete => {
            manifest_tiers(container, src, profile, arches)
        }
        _ => Vec::new(),
    }
    .into_iter();
    let mut out = Vec::new();
    for &arch in arches {
        let profile = RuntimeProfile {
            instance_arch: arch,
            ..profile.clone()
        };
        let mut warnings = tier1.warnings.clone();
        let mut past_refusal = None;
        let (rejection, model, tiers) = match (&tier1.rejection, manifests.next()) {
            (None, Some(m)) => {
                warnings.extend(m.warnings);
                (m.rejection, Some(m.model), m.tiers)
            }
            // The walk was complete and only a later Tier-1 check refused:
            // the manifests were read for display; the verdict stays the refusal.
            (Some(refusal), Some(m)) => {
                past_refusal = Some(PastRefusal {
                    past: refusal.gate,
                    then: m.rejection,
                });
                (Some(refusal.clone()), Some(m.model), vec![Tier::Container])
            }
            (rejection, None) => (rejection.clone(), None, vec![Tier::Container]),
        };
        let mut report = Report::new(&profile, rejection.as_ref(), warnings, &tiers);
        if past_refusal.is_none() {
            report.target = model
                .as_ref()
                .and_then(|m| m.target.as_deref())
                .and_then(Target::parse_runtime);
        }
        report.hash_layout = tier1.container.as_ref().and_then(|c| c.hash_layout);
        report.digest = tier1
            .container
            .as_ref()
            .and_then(|c| c.digest.as_deref())
            .map(neff_schema::hex::encode);
        out.push(Loaded {
            report,
            rejection,
            container: None,
            model,
            model_past_refusal: past_refusal,
        });
    }
    out
}

/// The source for one more run of checks.
fn reborrow<'s>(source: &'s mut Option<&mut dyn Source>) -> Option<&'s mut dyn Source> {
    match source {
        Some(s) => Some(&mut **s),
        None => None,
    }
}

/// What the manifest tiers concluded on one arch.
struct ManifestOutcome {
    rejection: Option<Rejection>,
    model: ModelSummary,
    tiers: Vec<Tier>,
    warnings: Vec<String>,
}

/// Tiers 2, 3 and 3b over a container whose walk is complete, on each arch
/// of `arches`. Each manifest is read once: what does not depend on the
/// arch runs once (Tier 2 up to the arch check; the section checks, again
/// only for an arch on the other side of Cayman when a check there depended
/// on it) and is carried over to every arch.
fn manifest_tiers(
    container: &Container,
    mut source: Option<&mut dyn Source>,
    profile: &RuntimeProfile,
    arches: &[Arch],
) -> Vec<ManifestOutcome> {
    let load = Load::default();
    let mut ctx = Ctx::new(container, reborrow(&mut source), &load, profile);
    let descriptor = manifests::descriptor(&mut ctx);
    let tier2 = ctx.effects();
    // Section runs: (resolved to Cayman, what they left, their outcome).
    let mut runs: Vec<(bool, Effects, Result<Vec<GraphStaging>, Rejection>)> = Vec::new();
    let mut arch_dependent = false;
    let mut out = Vec::new();
    for &arch in arches {
        let profile = RuntimeProfile {
            instance_arch: arch,
            ..profile.clone()
        };
        let mut ctx = Ctx::resume(container, None, &load, &profile, tier2.clone());
        let mut tiers = vec![Tier::Container, Tier::Manifests];
        let result = descriptor.clone().and_then(|d| {
            let kelf = manifests::arch_check(&mut ctx, &d)?;
            tiers.push(Tier::Sections);
            let cayman = kelf.resolved == Arch::Cayman;
            let run = match runs.iter().position(|r| !arch_dependent || r.0 == cayman) {
                Some(i) => &runs[i],
                None => {
                    let mut run = Ctx::new(container, reborrow(&mut source), &load, &profile);
                    let staging = sections::run(&mut run, &kelf);
                    arch_dependent |= run.arch_dependent;
                    runs.push((cayman, run.effects(), staging));
                    &runs[runs.len() - 1]
                }
            };
            ctx.append(&run.1);
            let staging = run.2.clone()?;
            tiers.push(Tier::Staging);
            staging::run(&mut ctx, &staging)
        });
        ctx.finish_references();
        ctx.model.join_io();
        if let Some(warning) = load.unlisted_warning() {
            ctx.warnings.push(warning);
        }
        out.push(ManifestOutcome {
            rejection: result.err(),
            tiers,
            warnings: std::mem::take(&mut ctx.warnings).into_vec(),
            model: ctx.model,
        });
    }
    out
}

/// The verdict over every architecture: a NEFF is accepted when it loads on
/// every arch it targets (`*` = all three, a named target = that one; all
/// three when the target could not be read).
#[derive(Debug)]
pub struct Verdict {
    /// Whether it loads on every targeted arch.
    pub accepted: bool,
    /// The architectures the NEFF targets.
    pub targeted: Vec<Arch>,
    /// The container, read once (Tier 1 does not depend on the arch); `None`
    /// when the header or framing was refused before it.
    pub container: Option<Container>,
    /// One load per arch, in [`Arch::ALL`] order (none holds the container).
    pub per_arch: Vec<Loaded>,
    /// The arch whose load decides: the first targeted one that failed, else
    /// the first targeted one.
    pub deciding: Arch,
}

impl Verdict {
    /// The deciding load.
    pub fn deciding_load(&self) -> &Loaded {
        self.on(self.deciding).unwrap_or(&self.per_arch[0])
    }

    /// The load on `arch`.
    pub fn on(&self, arch: Arch) -> Option<&Loaded> {
        self.per_arch
            .iter()
            .find(|l| l.report.instance_arch == ArchScope::Arch(arch))
    }

    /// The deciding report.
    pub fn report(&self) -> &Report {
        &self.deciding_load().report
    }

    /// The load whose model is worth showing: the deciding one, except when
    /// the model was only read for display past a Tier-1 refusal (which every
    /// arch shares); then the one on the arch the model's own target names.
    pub fn display_load(&self) -> &Loaded {
        let lead = self.deciding_load();
        if lead.model_past_refusal.is_none() {
            return lead;
        }
        let arches = lead
            .model
            .as_ref()
            .and_then(|m| m.target.as_deref())
            .and_then(neff_schema::Target::parse_runtime)
            .map(|t| t.arches())
            .unwrap_or_default();
        arches.iter().find_map(|&a| self.on(a)).unwrap_or(lead)
    }

    /// The all-arch report: the deciding report with `accepted` the verdict's
    /// and `instance_arch` [`ArchScope::All`]. The one place it is built.
    pub fn combined_report(&self) -> Report {
        let mut report = self.report().clone();
        report.accepted = self.accepted;
        report.instance_arch = ArchScope::All;
        report
    }

    fn from_loads(mut per_arch: Vec<Loaded>) -> Verdict {
        let container = per_arch.first_mut().and_then(|l| l.container.take());
        let target = per_arch.iter().find_map(|l| l.report.target);
        let targeted = target.map_or_else(|| Arch::ALL.to_vec(), |t| t.arches());
        let arch_of = |l: &Loaded| l.report.instance_arch.arch();
        let is_targeted = |l: &&Loaded| arch_of(l).is_some_and(|a| targeted.contains(&a));
        let failing = per_arch
            .iter()
            .filter(is_targeted)
            .find(|l| !l.report.accepted);
        let deciding = failing
            .or_else(|| per_arch.iter().find(is_targeted))
            .or(per_arch.first())
            .and_then(arch_of)
            .unwrap_or(Arch::Cayman);
        Verdict {
            accepted: failing.is_none(),
            targeted,
            container,
            per_arch,
            deciding,
        }
    }
}

/// [`Loader::verify`] on a file, under [`Limits::for_verdict`] (no entry
/// table: a verdict does not need one).
pub fn verify_file(path: impl AsRef<Path>, profile: &RuntimeProfile) -> Result<Verdict, Error> {
    Loader::new(profile)
        .limits(Limits::for_verdict())
        .verify_path(path)
}

/// Loads a NEFF held in memory (`None` = a NULL buffer, refused by G1).
pub fn load_buffer(buffer: Option<&[u8]>, profile: &RuntimeProfile) -> Loaded {
    match Loader::new(profile).load(buffer.map(Cursor::new)) {
        Ok(loaded) => loaded,
        // Reading from memory cannot fail; keep the signature total anyway.
        Err(e) => {
            let rejection = Rejection::new(Gate::G1, "Invalid NEFF buffer").detail(e.to_string());
            Loaded {
                report: Report::new(profile, Some(&rejection), Vec::new(), &[Tier::Container]),
                rejection: Some(rejection),
                container: None,
                model: None,
                model_past_refusal: None,
            }
        }
    }
}

/// Loads a NEFF file on the profile's arch. The report's `file` field is
/// set to `path`.
pub fn load_file(path: impl AsRef<Path>, profile: &RuntimeProfile) -> Result<Loaded, Error> {
    Loader::new(profile).load_path(path)
}

/// The one load of a single-arch run.
fn only(mut loads: Vec<Loaded>) -> Result<Loaded, Error> {
    loads
        .pop()
        .ok_or_else(|| Error::new(ErrorKind::Pipeline, "no load ran"))
}

/// The runtime a NEFF is checked under: on one arch, or on every arch it
/// targets, with a profile. `neff verify`, Python's `neff.verify` and the
/// fixture manifest state this one pair.
#[derive(Debug, Clone, PartialEq)]
pub struct Runtime {
    /// One arch (which replaces the profile's), or every targeted arch.
    pub scope: ArchScope,
    /// The simulated runtime's configuration.
    pub profile: RuntimeProfile,
}

impl Runtime {
    /// The default runtime on `arch`.
    pub fn on(arch: Arch) -> Runtime {
        Runtime {
            scope: ArchScope::Arch(arch),
            profile: RuntimeProfile::for_arch(arch),
        }
    }

    /// The default runtime on every targeted arch.
    pub fn all() -> Runtime {
        Runtime {
            scope: ArchScope::All,
            profile: RuntimeProfile::default(),
        }
    }

    /// The same runtime, its profile changed by `change`.
    pub fn with(mut self, change: impl FnOnce(&mut RuntimeProfile)) -> Runtime {
        change(&mut self.profile);
        self
    }

    /// Checks the NEFF `source` as `neff verify` does, each report naming
    /// `file`: on one arch, that arch's report; on every targeted arch, the
    /// deciding report (with `accepted` the all-arch verdict and
    /// `instance_arch` `"all"`), the targeted arches and every arch's report.
    pub fn check<R: Read + Seek>(
        &self,
        source: R,
        limits: &Limits,
        file: Option<String>,
    ) -> Result<Checked, crate::Error> {
        Ok(match self.scope {
            ArchScope::Arch(arch) => {
                let profile = RuntimeProfile {
                    instance_arch: arch,
                    ..self.profile.clone()
                };
                let mut report = Loader::new(&profile)
                    .limits(limits.clone())
                    .load(Some(source))?
                    .report;
                report.file = file;
                Checked {
                    report,
                    targeted_arches: None,
                    per_arch: None,
                }
            }
            ArchScope::All => {
                let mut verdict = Loader::new(&self.profile)
                    .limits(limits.clone())
                    .verify(Some(source))?;
                for load in &mut verdict.per_arch {
                    load.report.file = file.clone();
                }
                Checked::from(&verdict)
            }
        })
    }

    /// [`Runtime::check`] of the file at `path`, with the verdict's limits.
    pub fn check_path(&self, path: impl AsRef<Path>) -> Result<Checked, crate::Error> {
        let path = path.as_ref();
        let file = File::open(path)
            .map_err(|e| crate::Error::io(crate::ErrorKind::Read, "cannot open", path, e))?;
        self.check(
            file,
            &Limits::for_verdict(),
            Some(path.display().to_string()),
        )
    }
}

/// The JSON verdict of one file: the deciding report (the first refusal on
/// a targeted arch, else the accepted outcome), plus every arch's report and
/// the targeted arches under `--instance-arch all`.
#[serde_with::skip_serializing_none]
#[derive(Debug, Clone, Serialize, schemars::JsonSchema)]
pub struct Checked {
    /// The deciding report; on one arch, that arch's.
    #[serde(flatten)]
    pub report: Report,
    /// The arches the NEFF targets (under `--instance-arch all`).
    #[schemars(with = "Option<Vec<String>>")]
    pub targeted_arches: Option<Vec<Arch>>,
    /// Each arch's full report, by arch name (under `--instance-arch all`).
    pub per_arch: Option<BTreeMap<String, Report>>,
}

impl From<&Verdict> for Checked {
    /// The verdict on every targeted arch as `neff verify --json` prints it.
    fn from(verdict: &Verdict) -> Checked {
        let per_arch = verdict
            .per_arch
            .iter()
            .map(|l| (l.report.instance_arch.name().to_string(), l.report.clone()))
            .collect();
        Checked {
            report: verdict.combined_report(),
            targeted_arches: Some(verdict.targeted.clone()),
            per_arch: Some(per_arch),
        }
    }
}
