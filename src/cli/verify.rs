//! `neff verify`: run the loader's gates.

use std::path::PathBuf;

use clap::{Args, ValueEnum};
use neff::loader::{load_file, Report, RuntimeProfile};
use neff::schema::features::SUPPORTED_FEATURES_2_31;
use neff::schema::Arch;

use super::{parse_mask, print_json, EXIT_OK, EXIT_REJECTED};

/// Check a NEFF the way the Neuron runtime 2.31 loader does.
///
/// Gates run in the runtime's order; a refusal names the gate, the runtime's status
/// code and its log line, plus where in the file the problem is. Implemented: the
/// container tier (G1-G12); the report lists the tiers not implemented yet.
#[derive(Args, Debug)]
pub struct VerifyArgs {
    /// The NEFF to check.
    file: PathBuf,
    /// Print exactly one JSON object on stdout.
    #[arg(long)]
    json: bool,
    /// The instance the runtime runs on; `all` checks each and accepts only if all do.
    #[arg(long, value_enum, default_value = "cayman")]
    instance_arch: ArchArg,
    /// Simulate NEURON_RT_ALLOW_LEGACY_NEFF=1.
    #[arg(long)]
    allow_legacy_neff: bool,
    /// Skip the payload hash check (the runtime's per-load verify flag off).
    #[arg(long)]
    no_verify_hash: bool,
    /// Feature bits the runtime supports (default 0x7FFFFFF, runtime 2.31).
    #[arg(long, value_name = "MASK", value_parser = parse_mask)]
    supported_features: Option<u64>,
}

#[derive(Clone, Copy, Debug, ValueEnum)]
enum ArchArg {
    Sunda,
    Cayman,
    Mariana,
    All,
}

pub fn run(args: VerifyArgs) -> Result<u8, Box<dyn std::error::Error>> {
    let arches: Vec<Arch> = match args.instance_arch {
        ArchArg::Sunda => vec![Arch::Sunda],
        ArchArg::Cayman => vec![Arch::Cayman],
        ArchArg::Mariana => vec![Arch::Mariana],
        ArchArg::All => Arch::ALL.to_vec(),
    };
    let mut reports = Vec::new();
    for arch in &arches {
        let profile = RuntimeProfile {
            instance_arch: *arch,
            allow_legacy_neff: args.allow_legacy_neff,
            verify_hash: !args.no_verify_hash,
            supported_features: args.supported_features.unwrap_or(SUPPORTED_FEATURES_2_31),
            ..RuntimeProfile::default()
        };
        reports.push(load_file(&args.file, &profile)?.report);
    }
    let accepted = reports.iter().all(|r| r.accepted);
    let lead = reports.iter().find(|r| !r.accepted).unwrap_or(&reports[0]);
    if args.json {
        let mut combined = Combined {
            report: lead.clone(),
            by_arch: None,
        };
        if arches.len() > 1 {
            combined.report.accepted = accepted;
            combined.report.instance_arch = "all".into();
            combined.by_arch = Some(
                reports
                    .iter()
                    .map(|r| (r.instance_arch.clone(), r.clone()))
                    .collect(),
            );
        }
        print_json(&combined)?;
    } else {
        for report in &reports {
            print_human(&args.file, report);
        }
    }
    Ok(if accepted { EXIT_OK } else { EXIT_REJECTED })
}

/// The JSON verdict: the deciding report (the first refusal, else the first
/// arch's), plus every arch's own report under `--instance-arch all`.
#[derive(serde::Serialize)]
struct Combined {
    #[serde(flatten)]
    report: Report,
    #[serde(skip_serializing_if = "Option::is_none")]
    by_arch: Option<std::collections::BTreeMap<String, Report>>,
}

fn print_human(file: &std::path::Path, r: &Report) {
    println!("{}: {}", file.display(), r.summary());
    if let Some(detail) = &r.detail {
        println!("  detail: {detail}");
    }
    for w in &r.warnings {
        println!("  warning: {w}");
    }
    if !r.tiers_not_implemented.is_empty() {
        println!(
            "  not yet checked: {} tiers",
            r.tiers_not_implemented.join(", ")
        );
    }
}
