//! The verdict of a load: which gate refused, with the runtime's code and line.

use neff_schema::{Arch, HashLayout, Target};
use serde::Serialize;

use crate::gate::{Gate, NrtStatus, Rejection};
use crate::profile::RuntimeProfile;

/// A loader tier: a group of gates the runtime runs together, in load order.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, schemars::JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum Tier {
    /// The header, the payload's framing and the member table (G1–G12).
    Container,
    /// neff.json, the KELF descriptor and def.json.
    Manifests,
    /// The def.json sections: vars, queues, engines, ucode libraries.
    Sections,
    /// What is staged for the device.
    Staging,
}

impl Tier {
    /// Every tier, in load order.
    pub const ALL: [Tier; 4] = [
        Tier::Container,
        Tier::Manifests,
        Tier::Sections,
        Tier::Staging,
    ];

    /// The name reports use (`"container"`).
    pub fn name(self) -> &'static str {
        match self {
            Tier::Container => "container",
            Tier::Manifests => "manifests",
            Tier::Sections => "sections",
            Tier::Staging => "staging",
        }
    }
}

/// The names of tiers, comma-separated.
pub fn tier_names(tiers: &[Tier]) -> String {
    tiers
        .iter()
        .map(|t| t.name())
        .collect::<Vec<_>>()
        .join(", ")
}

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

    /// Parses `"all"` or an arch name.
    pub fn parse(text: &str) -> Option<ArchScope> {
        match text {
            "all" => Some(ArchScope::All),
            arch => arch.parse().ok().map(ArchScope::Arch),
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

impl<'de> serde::Deserialize<'de> for ArchScope {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let text = String::deserialize(d)?;
        ArchScope::parse(&text).ok_or_else(|| {
            serde::de::Error::custom(format!("{text:?} is not all or an instance arch"))
        })
    }
}

/// What a load under one [`RuntimeProfile`] concluded. In JSON the status is
/// two keys, `status` (the code) and `status_name`, and the gate its id.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, schemars::JsonSchema)]
pub struct Report {
    /// The file checked, when there was one.
    pub file: Option<String>,
    /// Whether every implemented gate passed.
    pub accepted: bool,
    /// The runtime's status (success when accepted).
    #[serde(flatten)]
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
    /// The simulated instance arch, or `all` (every targeted arch).
    #[schemars(with = "String")]
    pub instance_arch: ArchScope,
    /// The layout in which the header stores the payload digest, when G9 ran
    /// and matched. Which layout a runtime that validates hashes computes is
    /// not known (spec §11.1), so this says what matched, not what a runtime
    /// would accept.
    pub hash_layout: Option<HashLayout>,
    /// The payload's digest as hex in the standard layout (MD5 for pkg 2,
    /// SHA-256 for pkg 1: what `hashlib.md5(payload).hexdigest()` prints),
    /// when G9 computed it, matched or not.
    pub digest: Option<String>,
    /// The KELF descriptor's target, once read and understood.
    pub target: Option<Target>,
    /// The full runtime profile.
    pub profile: RuntimeProfile,
    /// Tiers whose gates ran (a refusal stops the load inside the last one).
    pub tiers_run: Vec<Tier>,
}

impl Report {
    /// Builds a report from the outcome of the tiers that ran.
    pub fn new(
        profile: &RuntimeProfile,
        rejection: Option<&Rejection>,
        warnings: Vec<String>,
        tiers_run: &[Tier],
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
            digest: None,
            target: None,
            profile: profile.clone(),
            tiers_run: tiers_run.to_vec(),
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
                tier_names(&self.tiers_run)
            ),
            _ => format!(
                "ACCEPTED on {} (tiers run: {})",
                self.instance_arch.name(),
                tier_names(&self.tiers_run)
            ),
        }
    }
}

/// Most warnings the manifest tiers list; the rest are counted.
pub const WARNINGS_MAX: usize = 1000;
/// Most bytes of warnings they list.
pub const WARNING_TEXT_MAX: usize = 1 << 20;

/// Warnings in load order: the first [`WARNINGS_MAX`] (Tier 1:
/// [`Limits::warnings_max`](crate::Limits::warnings_max)), and at most
/// [`WARNING_TEXT_MAX`] bytes of them, kept; the rest counted.
#[derive(Debug, Clone)]
pub struct Warnings {
    kept: Vec<String>,
    text: usize,
    more: usize,
    max: usize,
}

impl Default for Warnings {
    fn default() -> Self {
        Warnings::capped(WARNINGS_MAX)
    }
}

impl Warnings {
    /// Keeps the first `max` warnings (and [`WARNING_TEXT_MAX`] bytes).
    pub fn capped(max: usize) -> Warnings {
        Warnings {
            kept: Vec::new(),
            text: 0,
            more: 0,
            max,
        }
    }

    /// Adds a warning.
    pub fn push(&mut self, text: String) {
        if self.kept.len() < self.max && self.text + text.len() <= WARNING_TEXT_MAX {
            self.text += text.len();
            self.kept.push(text);
        } else {
            self.more += 1;
        }
    }

    /// Where the list stands now, for [`Warnings::rewind`].
    pub(crate) fn mark(&self) -> (usize, usize, usize) {
        (self.kept.len(), self.text, self.more)
    }

    /// Drops every warning added since `mark` (what a read for display only
    /// found must not change the verdict's warnings).
    pub(crate) fn rewind(&mut self, mark: (usize, usize, usize)) {
        self.kept.truncate(mark.0);
        (self.text, self.more) = (mark.1, mark.2);
    }

    /// Adds another run's warnings after these.
    pub(crate) fn append(&mut self, later: &Warnings) {
        for text in &later.kept {
            self.push(text.clone());
        }
        self.more += later.more;
    }

    /// The warnings, with a last line counting those not kept.
    pub fn into_vec(self) -> Vec<String> {
        let mut all = self.kept;
        if self.more > 0 {
            all.push(format!("… and {} more warnings", self.more));
        }
        all
    }
}
