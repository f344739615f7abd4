//! `neff verify`: run the loader's gates on one NEFF, several, or every NEFF
//! under a folder.

mod many;

use std::num::NonZeroUsize;
use std::path::{Path, PathBuf};

use clap::builder::{PossibleValuesParser, TypedValueParser};
use clap::Args;
use neff::loader::{ArchScope, Checked, Error, Limits, Report, Runtime, RuntimeProfile};
use neff::schema::{Arch, HashLayoutPolicy};

use super::input;
use super::progress::Progress;
use super::{parse_features, parse_mask, print_json, EXIT_OK, EXIT_REJECTED};

pub use many::ManyReport;

/// Check NEFFs the way the Neuron runtime 2.31 loader does.
///
/// All gates G1-G31 run in the runtime's order: container, manifests (neff.json, the
/// KELF descriptor, the arch check), each graph's sections, then staging. A refusal
/// names the gate, the runtime's status code and its log line, plus where in the file
/// the problem is. By default every instance arch is simulated and the NEFF is accepted
/// when it loads on every arch it targets (`*` = all three, a named target = that one);
/// the text output shows each targeted arch and sums up the others in one line.
///
/// With several inputs or a folder, each file gets one line (`PATH: ACCEPTED (targets
/// ...)`, `PATH: REJECTED by Gxx ...` or `PATH: ERROR: ...`), then a summary line;
/// `--json` prints one object `{"files": [...], "summary": {...}}`. Files are checked
/// in parallel; the output keeps the input order. Exit status: 2 if any input could not
/// be read, else 1 if any was refused, else 0.
#[derive(Args, Debug)]
pub struct VerifyArgs {
    /// The NEFFs to check: files, `-` for stdin (a pipe is spooled to an unlinked temp
    /// file), or folders (every `*.neff` under them, and every NEFF the `*.hlo` and
    /// `*.neuron` files under them carry, sorted by path; symlinked folders are not
    /// followed; unreadable entries are reported, not fatal). A file that carries
    /// NEFFs (a compile-cache HLO module, a TorchScript zip) is read as the NEFFs
    /// inside it.
    #[arg(required = true, value_name = "FILE|DIR|-")]
    files: Vec<PathBuf>,
    /// Print exactly one JSON object on stdout.
    #[arg(long)]
    json: bool,
    /// Print each targeted arch's report in full, and what the hash layout
    /// does and does not tell (by default, reports that read alike are
    /// merged and each warning is printed once, naming its arches).
    #[arg(short, long, conflicts_with_all = ["json", "quiet"])]
    verbose: bool,
    /// Print nothing when a NEFF is accepted; a refusal (or, with several
    /// inputs, an unreadable one) is one line on stderr.
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
    /// Files checked at once when there are several (default: the number of cores).
    #[arg(long, value_name = "N")]
    threads: Option<NonZeroUsize>,
    /// When the one FILE carries several NEFFs (an HLO module, a TorchScript
    /// zip), check NEFF number N (from 0); several inputs check every NEFF.
    #[arg(long, value_name = "N")]
    index: Option<usize>,
}

pub fn run(args: VerifyArgs) -> Result<u8, Box<dyn std::error::Error>> {
    // The one place that maps verify's flags onto a runtime profile.
    let defaults = RuntimeProfile::default();
    let profile = RuntimeProfile {
        instance_arch: args.instance_arch.arch().unwrap_or(defaults.instance_arch),
        allow_legacy_neff: args.allow_legacy_neff,
        verify_hash: !args.no_verify_hash,
        hash_layout: args.hash_layout,
        supported_features: args
            .supported_features
            .unwrap_or(defaults.supported_features),
        evtaccel_offset: args.evtaccel_offset.unwrap_or(defaults.evtaccel_offset),
        check_var_ids: !args.no_check_var_ids,
        virtual_core_size: args.virtual_core_size,
        ucode_abi: args.ucode_abi.clone().unwrap_or(defaults.ucode_abi),
        ..defaults
    };
    match args.files.as_slice() {
        [one] if !one.is_dir() && !carries_several(one, args.index) => {
            run_one(&args, one, &profile)
        }
        files => many::run(&args, files, &profile),
    }
}

/// Whether `path` carries several NEFFs and none is picked: it is then
/// checked as several inputs.
fn carries_several(path: &Path, index: Option<usize>) -> bool {
    index.is_none()
        && !input::is_stdin(path)
        && neff::tools::carrier::carried(path).is_ok_and(|n| n.is_some_and(|n| n.len() > 1))
}

/// One input: the reports in full, or its JSON verdict.
fn run_one(
    args: &VerifyArgs,
    path: &Path,
    profile: &RuntimeProfile,
) -> Result<u8, Box<dyn std::error::Error>> {
    let input = input::resolve(path, args.index, args.quiet || args.json)?;
    let (path, name) = (input.path.as_path(), input.name.clone());
    let total = std::fs::metadata(path).map_or(0, |m| m.len());
    let progress = Progress::start(args.json, || total, "verifying");
    let limits = Limits {
        progress: progress.counter(),
        ..Limits::for_verdict()
    };
    let checked = check(path, &name, args.instance_arch.arch(), profile, &limits)
        .map_err(|e| e.at_path(&name))?;
    drop(progress);
    if args.json {
        print_json(&checked)?;
    } else if args.quiet {
        super::quiet_verdict(Path::new(&name), &checked.report);
    } else {
        print_checked(&name, &checked, args.verbose);
    }
    Ok(if checked.report.accepted {
        EXIT_OK
    } else {
        EXIT_REJECTED
    })
}

/// Runs the gates on the input `path` (`-` = stdin) on `single` arch, or on
/// every arch when `None`; every report names the input `shown`.
fn check(
    path: &Path,
    shown: &str,
    single: Option<Arch>,
    profile: &RuntimeProfile,
    limits: &Limits,
) -> Result<Checked, Error> {
    let runtime = Runtime {
        scope: single.map_or(ArchScope::All, ArchScope::Arch),
        profile: profile.clone(),
    };
    runtime.check(input::open(path)?, limits, Some(shown.to_string()))
}

/// One input's text output: the targeted arches' reports, those that read
/// alike on one line; the hash layout once; each distinct warning once,
/// naming the arches it applies to when not all; one line for the arches it
/// does not target; then the verdict. `verbose` prints each targeted arch's
/// report in full instead, with the hash-layout caveat.
fn print_checked(name: &str, checked: &Checked, verbose: bool) {
    let (Some(targeted), Some(per_arch)) = (&checked.targeted_arches, &checked.per_arch) else {
        print_human(name, &checked.report, verbose);
        return;
    };
    let reports = Arch::ALL.iter().filter_map(|a| per_arch.get(a.name()));
    let (on, off): (Vec<&Report>, Vec<&Report>) = reports.partition(|r| {
        targeted
            .iter()
            .any(|&a| r.instance_arch == ArchScope::Arch(a))
    });
    if verbose {
        on.iter().for_each(|r| print_human(name, r, true));
    } else {
        print_merged(name, &on);
    }
    if !off.is_empty() {
        println!("  {}", not_targeted(&off));
    }
    let verdict = if checked.report.accepted {
        "ACCEPTED"
    } else {
        "REJECTED"
    };
    println!("{name}: {verdict} (targets {})", arch_names(targeted));
}

/// The targeted arches' reports, merged: one summary per distinct outcome
/// (with its arches), the hash layout once, each warning once.
fn print_merged(name: &str, reports: &[&Report]) {
    let outcome = |r: &Report| {
        (
            r.gate,
            r.message.clone(),
            r.detail.clone(),
            r.error_cause.clone(),
            r.tiers_run.clone(),
        )
    };
    let mut groups: Vec<(Vec<&str>, &Report)> = Vec::new();
    for r in reports {
        match groups
            .iter_mut()
            .find(|(_, first)| outcome(first) == outcome(r))
        {
            Some((arches, _)) => arches.push(r.instance_arch.name()),
            None => groups.push((vec![r.instance_arch.name()], r)),
        }
    }
    for (arches, r) in &groups {
        let line = match r.gate {
            Some(_) => format!("{} (on {})", r.summary(), arches.join(", ")),
            None => format!(
                "ACCEPTED on {} (tiers run: {})",
                arches.join(", "),
                neff::loader::tier_names(&r.tiers_run)
            ),
        };
        println!("{name}: {line}");
        if let Some(detail) = &r.detail {
            println!("  detail: {detail}");
        }
        if let Some(cause) = &r.error_cause {
            println!("  error cause: {cause}");
        }
    }
    let layouts: Vec<&str> = reports
        .iter()
        .filter_map(|r| r.hash_layout)
        .map(|l| l.name())
        .collect();
    if let Some(first) = layouts.first() {
        println!("  hash_layout: {first}");
    }
    let mut warnings: Vec<(&str, Vec<&str>)> = Vec::new();
    for r in reports {
        for w in &r.warnings {
            match warnings.iter_mut().find(|(text, _)| text == w) {
                Some((_, arches)) => arches.push(r.instance_arch.name()),
                None => warnings.push((w, vec![r.instance_arch.name()])),
            }
        }
    }
    for (text, arches) in warnings {
        match arches.len() == reports.len() {
            true => println!("  warning: {text}"),
            false => println!("  warning ({}): {text}", arches.join(", ")),
        }
    }
}

/// `sunda, mariana`.
fn arch_names(arches: &[Arch]) -> String {
    let names: Vec<&str> = arches.iter().map(|a| a.name()).collect();
    names.join(", ")
}

/// The one line for the arches a NEFF does not target: each arch with how
/// it fares, grouped when they all fare alike.
fn not_targeted(reports: &[&Report]) -> String {
    let outcome = |r: &Report| {
        r.gate_id()
            .map_or_else(|| "accepted".to_string(), |g| format!("refused by {g}"))
    };
    let outcomes: Vec<String> = reports.iter().map(|r| outcome(r)).collect();
    let names = reports.iter().map(|r| r.instance_arch.name());
    let listed: Vec<String> = match outcomes.split_first() {
        Some((first, rest)) if rest.iter().all(|o| o == first) => {
            vec![format!(
                "{} ({first})",
                names.collect::<Vec<_>>().join(", ")
            )]
        }
        _ => names
            .zip(&outcomes)
            .map(|(name, o)| format!("{name} ({o})"))
            .collect(),
    };
    let listed = listed.join(", ");
    format!("not targeted: {listed}; --instance-arch ARCH shows one in full")
}

fn print_human(name: &str, r: &Report, verbose: bool) {
    println!("{name}: {}", r.summary());
    if let Some(detail) = &r.detail {
        println!("  detail: {detail}");
    }
    if let Some(cause) = &r.error_cause {
        println!("  error cause: {cause}");
    }
    match (verbose, r.hash_layout) {
        (true, _) => hash_line(r)
            .into_iter()
            .for_each(|line| println!("  {line}")),
        (false, Some(layout)) => println!("  hash_layout: {}", layout.name()),
        (false, None) => {}
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
