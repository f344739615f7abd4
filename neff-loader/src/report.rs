//! The verdict of a load: which gate refused, with the runtime's code and line.

use neff_schema::HashLayout;
use serde::Serialize;

use crate::gate::{NrtStatus, Rejection};
use crate::profile::RuntimeProfile;

/// Loader tiers, in load order.
pub const TIERS: [&str; 4] = ["container", "manifests", "sections", "staging"];

/// Tiers this version implements.
pub const TIERS_IMPLEMENTED: [&str; 4] = TIERS;

/// What a load under one [`RuntimeProfile`] concluded.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, schemars::JsonSchema)]
pub struct Report {
    /// The file checked, when there was one.
    pub file: Option<String>,
    /// Whether every implemented gate passed.
    pub accepted: bool,
    /// The runtime's status code (0 when accepted).
    pub status: i64,
    /// The status code's name, e.g. `NRT_INVALID`.
    pub status_name: String,
    /// The refusing gate, e.g. `"G9"`.
    pub gate: Option<String>,
    /// The runtime's log line for the refusal, arguments filled in.
    pub message: Option<String>,
    /// This tool's explanation of the refusal: what and where.
    pub detail: Option<String>,
    /// The runtime's error cause, e.g. `NEFF_ARCH_INCOMPAT`.
    pub error_cause: Option<String>,
    /// Warnings: the runtime's WARN lines and this tool's notes.
    pub warnings: Vec<String>,
    /// The simulated instance arch.
    pub instance_arch: String,
    /// The layout in which the header stores the payload digest, when G9 ran
    /// and matched. Which layout a runtime that validates hashes computes is
    /// not known (spec §11.1), so this says what matched, not what a runtime
    /// would accept.
    pub hash_layout: Option<HashLayout>,
    /// The KELF descriptor's target string, once read.
    pub target: Option<String>,
    /// The full runtime profile.
    pub profile: RuntimeProfile,
    /// Tiers whose gates ran (a refusal stops the load inside the last one).
    pub tiers_run: Vec<String>,
    /// Tiers this version of the verifier does not implement yet.
    pub tiers_not_implemented: Vec<String>,
}

impl Report {
    /// Builds a report from the outcome of the tiers that ran.
    pub fn new(
        profile: &RuntimeProfile,
        rejection: Option<&Rejection>,
        warnings: Vec<String>,
        tiers_run: &[&str],
    ) -> Report {
        let status = rejection.map_or(NrtStatus::Success, |r| r.gate.status());
        Report {
            file: None,
            accepted: rejection.is_none(),
            status: status.code(),
            status_name: status.name().to_string(),
            gate: rejection.map(|r| r.gate.id().to_string()),
            message: rejection.map(|r| r.message.clone()),
            detail: rejection.and_then(|r| r.detail.clone()),
            error_cause: rejection.and_then(|r| r.error_cause.clone()),
            warnings,
            instance_arch: profile.instance_arch.name().to_string(),
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

    /// A one-line human summary.
    pub fn summary(&self) -> String {
        match (&self.gate, &self.message) {
            (Some(gate), Some(message)) => format!(
                "REJECTED by {gate} ({} {}): {message}",
                self.status, self.status_name
            ),
            _ if self.instance_arch == "all" => format!(
                "ACCEPTED on every targeted arch (tiers run: {})",
                self.tiers_run.join(", ")
            ),
            _ => format!(
                "ACCEPTED on {} (tiers run: {})",
                self.instance_arch,
                self.tiers_run.join(", ")
            ),
        }
    }
}
