//! `neff verify`: run the loader's gates.

use std::collections::BTreeMap;
use std::path::PathBuf;

use clap::builder::{PossibleValuesParser, TypedValueParser};
use clap::Args;
use neff::loader::{
    load_file, verify_file_with, ArchScope, Limits, ProfileSettings, Report, RuntimeProfile,
};
use neff::schema::{Arch, HashLayoutPolicy};

use super::progress::Progress;
use super::{parse_features, parse_mask, print_json, EXIT_OK, EXIT_REJECTED};

/// Check a NEFF the way the Neuron runtime 2.31 loader does.
///
/// All gates G1-G31 run in the runtime's order: container, manifests (neff.json, the
/// KELF descriptor, the arch check), each graph's sections, then staging. A refusal
/// names the gate, the runtime's status code and its log line, plus where in the file
/// the problem is. By default every instance arch is simulated and the NEFF is accepted
/// when it loads on every arch it targets (`*` = all three, a named target = that one).
#[derive(Args, Debug)]
pub struct VerifyArgs {
    /// The NEFF to check.
    file: PathBuf,
    /// Print exactly one JSON object on stdout.
    #[arg(long)]
    json: bool,
    /// Print nothing when the NEFF is accepted; a refusal is one line on stderr.
    #[arg(short, long)]
    quiet: bool,
    /// The instance the runtime runs on; `all` evaluates each and requires every
    /// targeted one to load.
    #[arg(long, default_value = "all", value_parser = PossibleValuesParser::new(["sunda", "cayman", "mariana", "all"])
        .map(|s| ArchScope::parse(&s).unwrap_or(ArchScope::All)))]
    instance_arch: ArchScope,
    /// Simulate NEURON_RT_ALLOW_LEGACY_NEFF=1 (relaxes the arch check and Cayman's
    /// state-buffer reservation check to warnings).
    #[arg(long)]
    allow_legacy_neff: bool,
    /// Skip the payload hash check (the runtime's per-load verify flag off).
    #[arg(long)]
    no_verify_hash: bool,
    /// Which layouts of the payload digest the hash check accepts. Real compilers
    /// store MD5 either as is (standard: neuron-cc, neuronx-cc <= 2.16) or with each
    /// 4-byte word byte-reversed (neuronx-cc 2.18+); which one a runtime started with
    /// NEURON_RT_VALIDATE_HASH=true computes is not known, so `any` is the default.
    #[arg(long, default_value = "any", value_name = "LAYOUT",
        value_parser = PossibleValuesParser::new(HashLayoutPolicy::ALL.map(HashLayoutPolicy::name))
            .map(|s| HashLayoutPolicy::parse(&s).unwrap_or_default()))]
    hash_layout: HashLayoutPolicy,
    /// Feature bits the runtime supports (default 0x7FFFFFF, runtime 2.31):
    /// comma-separated numbers and feature names (`0x400,custom_ops`), as
    /// `pack --feature-bits` takes them.
    #[arg(long, value_name = "MASK|NAMES", value_parser = parse_features)]
    supported_features: Option<u64>,
    /// The offset an EVTACCEL carveout must have on Cayman (default 0x37FF8, INFERRED).
    #[arg(long, value_name = "OFFSET", value_parser = parse_mask)]
    evtaccel_offset: Option<u64>,
    /// Do not require dense var_ids (the spec cannot tell whether the runtime always checks).
    #[arg(long)]
    no_check_var_ids: bool,
    /// The runtime's virtual core size (NEURON_RT_VIRTUAL_CORE_SIZE), used when the
    /// header has feature bit 0x400; otherwise the header's vnc_size is used.
    #[arg(long, value_name = "N")]
    virtual_core_size: Option<u32>,
    /// The runtime's GPSIMD ucode ABI version (default 1.21.1.0).
    #[arg(long, value_name = "VERSION")]
    ucode_abi: Option<String>,
}

/// The JSON verdict: the deciding report (the first refusal on a targeted
/// arch, else the accepted outcome), plus every arch's report under `all`.
#[derive(serde::Serialize)]
struct Combined {
    #[serde(flatten)]
    report: Report,
    #[serde(skip_serializing_if = "Option::is_none")]
    targeted_arches: Option<Vec<Arch>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    per_arch: Option<BTreeMap<String, Report>>,
}

pub fn run(args: VerifyArgs) -> Result<u8, Box<dyn std::error::Error>> {
    let single = args.instance_arch.arch();
    // The flags map onto the loader's profile settings, the one place that
    // turns verify options into a runtime profile.
    let profile = ProfileSettings {
        instance_arch: single,
        allow_legacy_neff: args.allow_legacy_neff,
        no_verify_hash: args.no_verify_hash,
        hash_layout: Some(args.hash_layout),
        supported_features: args.supported_features,
        evtaccel_offset: args.evtaccel_offset,
        no_check_var_ids: args.no_check_var_ids,
        virtual_core_size: args.virtual_core_size,
        ucode_abi: args.ucode_abi.clone(),
    }
    .profile();
    let (accepted, combined, reports) = match single {
        Some(arch) => {
            let profile = RuntimeProfile {
                instance_arch: arch,
                ..profile
            };
            let report = load_file(&args.file, &profile)?.report;
            let combined = Combined {
                report: report.clone(),
                targeted_arches: None,
                per_arch: None,
            };
            (report.accepted, combined, vec![report])
        }
        None => {
            let total = std::fs::metadata(&args.file).map_or(0, |m| m.len());
            let progress = Progress::start(args.json, total, "verifying");
            let limits = Limits {
                progress: progress.counter(),
                ..Limits::default()
            };
            let verdict = verify_file_with(&args.file, &profile, &limits)?;
            drop(progress);
            let report = verdict.combined_report();
            let reports: Vec<Report> = verdict.loads.iter().map(|l| l.report.clone()).collect();
            let combined = Combined {
                report,
                targeted_arches: Some(verdict.targeted.clone()),
                per_arch: Some(
                    reports
                        .iter()
                        .map(|r| (r.instance_arch.name().to_string(), r.clone()))
                        .collect(),
                ),
            };
            (verdict.accepted, combined, reports)
        }
    };
    if args.json {
        print_json(&combined)?;
    } else if args.quiet {
        super::quiet_verdict(&args.file, &combined.report);
    } else {
        for report in &reports {
            print_human(&args.file, report);
        }
        if single.is_none() {
            let targeted: Vec<&str> = combined
                .targeted_arches
                .iter()
                .flatten()
                .map(|a| a.name())
                .collect();
            println!(
                "{}: {} (targets {})",
                args.file.display(),
                if accepted { "ACCEPTED" } else { "REJECTED" },
                targeted.join(", ")
            );
        }
    }
    Ok(if accepted { EXIT_OK } else { EXIT_REJECTED })
}

fn print_human(file: &std::path::Path, r: &Report) {
    println!("{}: {}", file.display(), r.summary());
    if let Some(detail) = &r.detail {
        println!("  detail: {detail}");
    }
    if let Some(cause) = &r.error_cause {
        println!("  error cause: {cause}");
    }
    if let Some(line) = hash_line(r) {
        println!("  {line}");
    }
    for w in &r.warnings {
        println!("  warning: {w}");
    }
}

/// The hash check's outcome, worded so it does not overclaim (spec §11.1).
pub fn hash_line(r: &Report) -> Option<String> {
    let layout = r.hash_layout?;
    Some(format!(
        "hash_layout: {} (the payload digest matched in this layout; a runtime with NEURON_RT_VALIDATE_HASH=true may compute only one layout, and which is not known)",
        layout.name()
    ))
}
