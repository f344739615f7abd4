//! The verdict of a load: which gate refused, with the runtime's code and line.

use neff_schema::{Arch, HashLayout, Target};
use serde::Serialize;

use crate::gate::{Gate, NrtStatus, Rejection};
use crate::profile::RuntimeProfile;

/// Loader tiers, in load order.
pub const TIERS: [&str; 4] = ["container", "manifests", "sections", "staging"];

/// Tiers this version implements.
pub const TIERS_IMPLEMENTED: [&str; 4] = TIERS;

/// Which instance a report speaks for: one arch, or every arch the NEFF
/// targets (the all-arch verdict). Serializes as `"all"` or the arch name.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ArchScope {
    /// Every targeted arch.
    All,
    /// One instance arch.
    Arch(Arch),
}

impl ArchScope {
    /// `"all"` or the arch's name.
    pub fn name(self) -> &'static str {
        match self {
            ArchScope::All => "all",
            ArchScope::Arch(a) => a.name(),
        }
    }

    /// The arch, unless this is the all-arch scope.
    pub fn arch(self) -> Option<Arch> {
        match self {
            ArchScope::All => None,
            ArchScope::Arch(a) => Some(a),
        }
    }
}

impl Serialize for ArchScope {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.name())
    }
}

impl schemars::JsonSchema for ArchScope {
    fn schema_name() -> std::borrow::Cow<'static, str> {
        "ArchScope".into()
    }

    fn json_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
        schemars::json_schema!({
            "description": "`all` (every targeted arch) or one instance arch.",
            "type": "string",
            "enum": ["all", "sunda", "cayman", "mariana"]
        })
    }
}

/// What a load under one [`RuntimeProfile`] concluded.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Report {
    /// The file checked, when there was one.
    pub file: Option<String>,
    /// Whether every implemented gate passed.
    pub accepted: bool,
    /// The runtime's status (success when accepted).
    pub status: NrtStatus,
    /// The refusing gate.
    pub gate: Option<Gate>,
    /// The runtime's log line for the refusal, arguments filled in.
    pub message: Option<String>,
    /// This tool's explanation of the refusal: what and where.
    pub detail: Option<String>,
    /// The runtime's error cause, e.g. `NEFF_ARCH_INCOMPAT`.
    pub error_cause: Option<String>,
    /// Warnings: the runtime's WARN lines and this tool's notes.
    pub warnings: Vec<String>,
    /// The simulated instance arch, or all targeted ones.
    pub instance_arch: ArchScope,
    /// The layout in which the header stores the payload digest, when G9 ran
    /// and matched. Which layout a runtime that validates hashes computes is
    /// not known (spec §11.1), so this says what matched, not what a runtime
    /// would accept.
    pub hash_layout: Option<HashLayout>,
    /// The KELF descriptor's target, once read and understood.
    pub target: Option<Target>,
    /// The full runtime profile.
    pub profile: RuntimeProfile,
    /// Tiers whose gates ran (a refusal stops the load inside the last one).
    pub tiers_run: Vec<String>,
    /// Tiers this version of the verifier does not implement yet.
    pub tiers_not_implemented: Vec<String>,
}

/// The JSON shape of a [`Report`] (`neff verify --json`): the status as its
/// code and name, the gate as its id.
#[derive(Serialize, schemars::JsonSchema)]
#[schemars(rename = "Report")]
struct ReportJson<'a> {
    /// The file checked, when there was one.
    file: &'a Option<String>,
    /// Whether every implemented gate passed.
    accepted: bool,
    /// The runtime's status code (0 when accepted).
    status: i64,
    /// The status code's name, e.g. `NRT_INVALID`.
    status_name: &'static str,
    /// The refusing gate, e.g. `"G9"`.
    gate: Option<Gate>,
    /// The runtime's log line for the refusal, arguments filled in.
    message: &'a Option<String>,
    /// This tool's explanation of the refusal: what and where.
    detail: &'a Option<String>,
    /// The runtime's error cause, e.g. `NEFF_ARCH_INCOMPAT`.
    error_cause: &'a Option<String>,
    /// Warnings: the runtime's WARN lines and this tool's notes.
    warnings: &'a [String],
    /// The simulated instance arch, or `all`.
    instance_arch: ArchScope,
    /// The layout in which the stored digest matched (G9), when checked.
    hash_layout: Option<HashLayout>,
    /// The KELF descriptor's target, once read.
    target: Option<Target>,
    /// The full runtime profile.
    profile: &'a RuntimeProfile,
    /// Tiers whose gates ran.
    tiers_run: &'a [String],
    /// Tiers this version of the verifier does not implement yet.
    tiers_not_implemented: &'a [String],
}

impl Report {
    fn json(&self) -> ReportJson<'_> {
        ReportJson {
            file: &self.file,
            accepted: self.accepted,
            status: self.status.code(),
            status_name: self.status.name(),
            gate: self.gate,
            message: &self.message,
            detail: &self.detail,
            error_cause: &self.error_cause,
            warnings: &self.warnings,
            instance_arch: self.instance_arch,
            hash_layout: self.hash_layout,
            target: self.target,
            profile: &self.profile,
            tiers_run: &self.tiers_run,
            tiers_not_implemented: &self.tiers_not_implemented,
        }
    }
}

impl Serialize for Report {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        self.json().serialize(s)
    }
}

impl schemars::JsonSchema for Report {
    fn schema_name() -> std::borrow::Cow<'static, str> {
        "Report".into()
    }

    fn json_schema(generator: &mut schemars::SchemaGenerator) -> schemars::Schema {
        ReportJson::json_schema(generator)
    }
}

impl Report {
    /// Builds a report from the outcome of the tiers that ran.
    pub fn new(
        profile: &RuntimeProfile,
        rejection: Option<&Rejection>,
        warnings: Vec<String>,
        tiers_run: &[&str],
    ) -> Report {
        Report {
            file: None,
            accepted: rejection.is_none(),
            status: rejection.map_or(NrtStatus::Success, |r| r.gate.status()),
            gate: rejection.map(|r| r.gate),
            message: rejection.map(|r| r.message.clone()),
            detail: rejection.and_then(|r| r.detail.clone()),
            error_cause: rejection.and_then(|r| r.error_cause.clone()),
            warnings,
            instance_arch: ArchScope::Arch(profile.instance_arch),
            hash_layout: None,
            target: None,
            profile: profile.clone(),
            tiers_run: tiers_run.iter().map(|t| t.to_string()).collect(),
            tiers_not_implemented: TIERS
                .iter()
                .filter(|t| !TIERS_IMPLEMENTED.contains(t))
                .map(|t| t.to_string())
                .collect(),
        }
    }

    /// The refusing gate's id, e.g. `"G9"`.
    pub fn gate_id(&self) -> Option<&'static str> {
        self.gate.map(Gate::id)
    }

    /// A one-line human summary.
    pub fn summary(&self) -> String {
        match (self.gate, &self.message) {
            (Some(gate), Some(message)) => format!(
                "REJECTED by {} ({} {}): {message}",
                gate.id(),
                self.status.code(),
                self.status.name()
            ),
            _ if self.instance_arch == ArchScope::All => format!(
                "ACCEPTED on every targeted arch (tiers run: {})",
                self.tiers_run.join(", ")
            ),
            _ => format!(
                "ACCEPTED on {} (tiers run: {})",
                self.instance_arch.name(),
                self.tiers_run.join(", ")
            ),
        }
    }
}
