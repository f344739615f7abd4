//! `neff cache`: the compile caches NEFFs live in.

use std::path::PathBuf;
use std::time::Duration;

use clap::{Args, Subcommand};
use neff::loader::{ArchScope, RuntimeProfile};
use neff::tools::cache::{explain, prune, scan, CacheListing, EntryState, PruneOptions, Side};

use super::units::human_bytes;
use super::{check_threads, print_json, EXIT_OK, EXIT_REJECTED};

/// See and check the compile caches NEFFs live in.
///
/// The layout is detected: neuronx-cc's persistent cache (libneuronxla,
/// `/var/tmp/neuron-compile-cache`: neuronxcc-<version>/MODULE_<hlo
/// hash>+<flags hash>/ entries holding model.neff and model.done on success,
/// model.log on failure, a *.lock while a compile holds it, wrapped_neff.hlo
/// in 2.21+), or any other folder, where every *.neff below it is an entry.
/// Every entry's NEFF goes through the loader's gates, in parallel.
#[derive(Args, Debug)]
pub struct CacheArgs {
    #[command(subcommand)]
    command: CacheCommand,
}

#[derive(Subcommand, Debug)]
enum CacheCommand {
    /// List the entries: state (ok, refused, failed, locked, stale_lock,
    /// incomplete, empty), compiler version, key, size, and for a NEFF its
    /// target, graphs, features and UUID; totals per compiler and state.
    ///
    ///   neff cache ls /var/tmp/neuron-compile-cache
    Ls(Common),
    /// Check every entry's NEFF with the gates (as `neff verify`, with its
    /// profile flags); exit 1 when the gates refuse one. --list STATE prints
    /// only the entries in that state (`--list ok`: the ones safe to share).
    ///
    ///   neff cache verify ~/.cache/neuron --instance-arch cayman --list ok
    Verify(VerifyArgs),
    /// Remove entries of a libneuronxla cache: --failed, --stale-locks,
    /// --refused, --compiler-below V, --older-than SECONDS, then --max-size
    /// BYTES (oldest first, by completion time); --dry-run says what would go.
    /// An entry a compile holds (a fresh lock, or a lock file another process
    /// has flocked) is left; each other goes by one rename into ROOT/.neff-prune
    /// and is deleted there, so a reader never sees half an entry. Symlinked
    /// entries are never removed.
    ///
    ///   neff cache prune /var/tmp/neuron-compile-cache --failed --stale-locks --dry-run
    Prune(PruneArgs),
    /// Why two libneuronxla entries (or an entry and an HLO module file with
    /// --flags-a/--flags-b) are different keys: the compiler versions, each flag
    /// one compile had and the other not, and the first structural difference
    /// of their HLO modules (computation, instruction, opcode, shape), or that
    /// only names, ids, metadata or paths differ. The modules are read as
    /// protobuf (the published schema), never by byte diff. Entries without a
    /// module (vLLM's) are compared by the files they hold.
    ///
    ///   neff cache explain neuronxcc-2.21.0/MODULE_1+a neuronxcc-2.21.0/MODULE_2+b
    Explain(ExplainArgs),
}

#[derive(Args, Debug)]
struct ExplainArgs {
    /// The first entry's folder, or an HLO module file.
    a: PathBuf,
    /// The second entry's folder, or an HLO module file.
    b: PathBuf,
    /// For an HLO module file given as A: the flags it was compiled with
    /// (`compile_flags.json`, or the text form).
    #[arg(long, value_name = "FILE")]
    flags_a: Option<PathBuf>,
    /// For an HLO module file given as B: its flags.
    #[arg(long, value_name = "FILE")]
    flags_b: Option<PathBuf>,
    /// Print one JSON object.
    #[arg(long)]
    json: bool,
}

#[derive(Args, Debug)]
struct PruneArgs {
    #[command(flatten)]
    common: Common,
    /// Entries whose compile failed.
    #[arg(long)]
    failed: bool,
    /// Entries holding a stale lock.
    #[arg(long)]
    stale_locks: bool,
    /// Entries whose NEFF the gates refuse.
    #[arg(long)]
    refused: bool,
    /// Entries of a compiler version below V (e.g. 2.21).
    #[arg(long, value_name = "V")]
    compiler_below: Option<String>,
    /// Entries completed longer ago than this many seconds.
    #[arg(long, value_name = "SECONDS")]
    older_than: Option<u64>,
    /// Then remove the oldest entries until the cache holds at most this many bytes.
    #[arg(long, value_name = "BYTES")]
    max_size: Option<u64>,
    /// Say what would be removed; remove nothing.
    #[arg(long)]
    dry_run: bool,
}

#[derive(Args, Debug)]
struct Common {
    /// The cache folder.
    root: PathBuf,
    /// Print one JSON object (`neff schema cache-listing`).
    #[arg(long)]
    json: bool,
    /// A lock older than this many seconds is stale (no holder is recorded
    /// in a libneuronxla lock, so its age decides).
    #[arg(long, value_name = "SECONDS", default_value_t = 3600)]
    stale_after: u64,
    /// Threads checking NEFFs (default: the available cores).
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u64).range(1..=256))]
    threads: Option<u64>,
}

#[derive(Args, Debug)]
struct VerifyArgs {
    #[command(flatten)]
    common: Common,
    #[command(flatten)]
    runtime: super::RuntimeArgs,
    /// Print only the entries in this state.
    #[arg(long, value_name = "STATE",
          value_parser = ["ok", "refused", "failed", "locked", "stale_lock", "incomplete", "empty"])]
    list: Option<String>,
}

pub fn run(args: CacheArgs) -> Result<u8, Box<dyn std::error::Error>> {
    if let CacheCommand::Explain(e) = &args.command {
        let a = Side {
            path: e.a.as_path(),
            flags: e.flags_a.as_deref(),
        };
        let b = Side {
            path: e.b.as_path(),
            flags: e.flags_b.as_deref(),
        };
        let why = explain(a, b)?;
        if e.json {
            print_json(&why)?;
            return Ok(EXIT_OK);
        }
        if let Some((a, b)) = &why.compiler {
            println!("compiler: {a} against {b}");
        }
        for flag in &why.flags_only_first {
            println!("flag only in the first: {flag}");
        }
        for flag in &why.flags_only_second {
            println!("flag only in the second: {flag}");
        }
        println!("HLO: {}", why.hlo);
        return Ok(EXIT_OK);
    }
    let (common, profile, scope, list) = match &args.command {
        CacheCommand::Ls(c) => (c, RuntimeProfile::default(), ArchScope::All, None),
        CacheCommand::Prune(p) => (&p.common, RuntimeProfile::default(), ArchScope::All, None),
        CacheCommand::Explain(_) => return Ok(EXIT_OK),
        CacheCommand::Verify(v) => {
            let runtime = v.runtime.runtime();
            (&v.common, runtime.profile, runtime.scope, v.list.clone())
        }
    };
    let listing = scan(
        &common.root,
        &profile,
        scope,
        check_threads(common.threads),
        Duration::from_secs(common.stale_after),
    )
    .map_err(|e| format!("{}: {e}", common.root.display()))?;
    if let CacheCommand::Prune(p) = &args.command {
        let options = PruneOptions {
            failed: p.failed,
            stale_locks: p.stale_locks,
            refused: p.refused,
            compiler_below: p.compiler_below.clone(),
            older_than: p.older_than.map(Duration::from_secs),
            max_size: p.max_size,
            dry_run: p.dry_run,
        };
        let pruned = prune(&common.root, &listing, &options)
            .map_err(|e| format!("{}: {e}", common.root.display()))?;
        if common.json {
            print_json(&pruned)?;
            return Ok(EXIT_OK);
        }
        let verb = if p.dry_run { "would remove" } else { "removed" };
        for path in &pruned.removed {
            println!("{verb} {path}");
        }
        for (path, why) in &pruned.kept {
            println!("kept {path}: {why}");
        }
        println!(
            "{verb} {} entries, {}",
            pruned.removed.len(),
            human_bytes(pruned.freed)
        );
        return Ok(EXIT_OK);
    }
    let refused = listing
        .entries
        .iter()
        .any(|e| e.state == EntryState::Refused);
    if common.json {
        print_json(&listing)?;
    } else {
        print_listing(&listing, list.as_deref());
    }
    let verifying = matches!(args.command, CacheCommand::Verify(_));
    Ok(if verifying && refused {
        EXIT_REJECTED
    } else {
        EXIT_OK
    })
}

fn print_listing(listing: &CacheListing, only: Option<&str>) {
    let state_name = |s: EntryState| {
        serde_json::to_value(s)
            .ok()
            .and_then(|v| v.as_str().map(str::to_string))
            .unwrap_or_default()
    };
    if only.is_none() {
        let layout = serde_json::to_value(listing.layout)
            .ok()
            .and_then(|v| v.as_str().map(str::to_string));
        println!(
            "{}: {} layout, {} entries",
            listing.root,
            layout.unwrap_or_default(),
            listing.entries.len()
        );
    }
    for e in &listing.entries {
        let state = state_name(e.state);
        if only.is_some_and(|o| o != state) {
            continue;
        }
        if only.is_some() {
            println!("{}", e.path);
            continue;
        }
        let neff = match (&e.target, e.graphs, &e.uuid) {
            (target, Some(graphs), Some(uuid)) => format!(
                "  target {} graphs {graphs} uuid {uuid}",
                target.as_deref().unwrap_or("-")
            ),
            _ => String::new(),
        };
        println!("  {state:<10} {:>9}  {}{neff}", human_bytes(e.size), e.path);
        if let Some(why) = &e.refusal {
            println!("             {why}");
        }
    }
    if only.is_some() {
        return;
    }
    for (compiler, states) in &listing.totals {
        let counts: Vec<String> = states.iter().map(|(s, n)| format!("{n} {s}")).collect();
        let compiler = if compiler.is_empty() {
            "(no compiler folder)"
        } else {
            compiler
        };
        println!("{compiler}: {}", counts.join(", "));
    }
    for orphan in &listing.orphans {
        println!("orphan: {orphan}");
    }
}
