//! Everything `neff inspect` shows, as one serializable report.

use neff_schema::barrier::json::{from_json, BarrierConfigsJson};
use neff_schema::{features, HeaderFields};

use neff_loader::Container;
use serde::Serialize;

use neff_loader::{
    Compression, EntryRecord, ModelSummary, PayloadPadding, Report, Verdict, BARRIER_CONFIG_MEMBER,
};

/// The header, the member table, the model the manifests describe, and the verdict.
#[derive(Debug, Clone, Serialize, schemars::JsonSchema)]
pub struct InspectReport {
    /// The file inspected.
    pub file: String,
    /// Where the NEFF lay when `file` carries it (an HLO module, a
    /// TorchScript zip); the other fields describe that NEFF.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub carried: Option<crate::carrier::Embedded>,
    /// Its size in bytes.
    pub file_size: Option<u64>,
    /// Every header field (absent when the file is shorter than a header).
    pub header: Option<HeaderFields>,
    /// The names of the header's feature bits (unknown bits as `0x…`).
    pub feature_names: Vec<String>,
    /// How the payload is stored.
    pub compression: Option<Compression>,
    /// Length of the whole decompressed tar stream, end-of-archive blocks and
    /// any padding after them included (absent when not read to its end).
    pub tar_size: Option<u64>,
    /// Offset in the tar stream of the end-of-archive marker (its first zero
    /// block), where the last entry ends.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tar_end_offset: Option<u64>,
    /// gzip payloads: how many complete gzip members the payload holds.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub gzip_members: Option<u64>,
    /// gzip payloads: the compressed length of the gzip data (payload start
    /// to the end of the last member's trailer).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub gzip_member_size: Option<u64>,
    /// gzip payloads: the bytes inside `data_size` after the gzip data
    /// (neuronx-cc zero-pads to a multiple of 10240).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub payload_padding: Option<PayloadPadding>,
    /// Every tar entry, in archive order.
    pub members: Vec<EntryRecord>,
    /// What the manifests describe, as far as they could be read: absent
    /// when the container tier refused before its walk was complete; up to
    /// the first refusal of a manifest tier otherwise.
    pub model: Option<ModelSummary>,
    /// Set when `model` was read for display only, past a Tier-1 refusal
    /// (the runtime stops there and the verdict is that refusal).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub model_read_past: Option<ModelReadPast>,
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
        let container = verdict.container.as_ref();
        let header = container.map(|c| c.header.fields());
        let shown = verdict.display_load();
        let report = verdict.combined_report();
        InspectReport {
            file: file.to_string(),
            carried: None,
            file_size: container.map(|c| c.file_size),
            feature_names: header
                .as_ref()
                .map(|h| features::names(h.feature_bits))
                .unwrap_or_default(),
            header,
            compression: container.and_then(|c| c.compression),
            tar_size: container.and_then(|c| c.tar_size),
            tar_end_offset: container.and_then(|c| c.tar_end_offset),
            gzip_members: container.and_then(|c| c.gzip_members),
            gzip_member_size: container.and_then(|c| c.gzip_member_size),
            payload_padding: container.and_then(|c| c.payload_padding),
            members: container.map(|c| c.entries.clone()).unwrap_or_default(),
            model: shown.model.clone().map(|mut m| {
                m.mark_builder_members();
                m
            }),
            model_read_past: shown.model_past_refusal.as_ref().map(|p| ModelReadPast {
                gate: p.past.id().to_string(),
                then: p
                    .then
                    .as_ref()
                    .map(|r| format!("{}: {}", r.gate.id(), r.message)),
            }),
            barrier_config: container.and_then(attached_barrier_config),
            verdict: report,
        }
    }
}

/// How the model shown was read past a Tier-1 refusal.
#[derive(Debug, Clone, Serialize, schemars::JsonSchema)]
pub struct ModelReadPast {
    /// The Tier-1 gate that refused (the verdict), e.g. `G9`.
    pub gate: String,
    /// Where the manifest tiers, run for display, refused in turn (`<gate>:
    /// <message>`); absent when they got through.
    pub then: Option<String>,
}

fn attached_barrier_config(c: &Container) -> Option<Result<BarrierConfigsJson, String>> {
    let member = c.member(BARRIER_CONFIG_MEMBER.as_bytes())?;
    let Some(bytes) = member.data else {
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
