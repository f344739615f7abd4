//! Everything `neff inspect` shows, as one serializable report.

use neff_schema::barrier::json::{from_json, BarrierConfigsJson};
use neff_schema::{features, HeaderFields};

use crate::container::Container;
use serde::Serialize;

use crate::container::{Compression, EntryRecord};
use crate::model::ModelSummary;
use crate::report::Report;
use crate::Verdict;

/// The header, the member table, the model the manifests describe, and the verdict.
#[derive(Debug, Clone, Serialize, schemars::JsonSchema)]
pub struct InspectReport {
    /// The file inspected.
    pub file: String,
    /// Its size in bytes.
    pub file_size: Option<u64>,
    /// Every header field (absent when the file is shorter than a header).
    pub header: Option<HeaderFields>,
    /// The names of the header's feature bits (unknown bits as `0x…`).
    pub feature_names: Vec<String>,
    /// How the payload is stored.
    pub compression: Option<Compression>,
    /// Length of the tar stream up to its end marker.
    pub tar_size: Option<u64>,
    /// Every tar entry, in archive order.
    pub members: Vec<EntryRecord>,
    /// What the manifests describe (absent when the container tier refused).
    pub model: Option<ModelSummary>,
    /// A barrier config attached as `barrier_config.json` (which the runtime
    /// never reads), decoded and re-encoded in the logger's shape; or why it
    /// does not decode.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub barrier_config: Option<Result<BarrierConfigsJson, String>>,
    /// The verdict over every targeted arch (as `neff verify` gives it).
    pub verdict: Report,
}

impl InspectReport {
    /// Builds the report from an all-arch verdict on `file`.
    pub fn new(file: &str, verdict: &Verdict) -> InspectReport {
        let container = verdict.loads.first().and_then(|l| l.container.as_ref());
        let header = container.map(|c| c.header.fields());
        let mut report = verdict.report().clone();
        report.accepted = verdict.accepted;
        report.instance_arch = "all".to_string();
        InspectReport {
            file: file.to_string(),
            file_size: container.map(|c| c.file_size),
            feature_names: header
                .as_ref()
                .map(|h| features::names(h.feature_bits))
                .unwrap_or_default(),
            header,
            compression: container.and_then(|c| c.compression),
            tar_size: container.map(|c| c.tar_size),
            members: container.map(|c| c.entries.clone()).unwrap_or_default(),
            model: verdict.loads[verdict.lead].model.clone(),
            barrier_config: container.and_then(attached_barrier_config),
            verdict: report,
        }
    }
}

/// The member a builder attaches a barrier config under.
pub const BARRIER_CONFIG_MEMBER: &str = "barrier_config.json";

fn attached_barrier_config(c: &Container) -> Option<Result<BarrierConfigsJson, String>> {
    let member = c.members.get(BARRIER_CONFIG_MEMBER.as_bytes())?;
    let Some(bytes) = &member.data else {
        return Some(Err(format!(
            "{BARRIER_CONFIG_MEMBER} is too large to decode ({} bytes)",
            member.size
        )));
    };
    Some(
        from_json(bytes)
            .map(|configs| BarrierConfigsJson::from(&configs))
            .map_err(|e| format!("{BARRIER_CONFIG_MEMBER}: {e}")),
    )
}
