//! `neff diff`: compare two NEFFs.

use std::path::{Path, PathBuf};

use clap::builder::PossibleValuesParser;
use clap::Args;
use neff::tools::diff::{diff, DiffOptions, DiffReport, FieldDiff, Program, Snapshot};

use super::{print_json, EXIT_OK, EXIT_REJECTED};

/// Compare two NEFFs: header fields, members and manifest keys.
///
/// Reports the header fields that differ (by name), the members added, removed and
/// changed (type, size, SHA-256 of the bytes, mtime; directories, member order, owner
/// and mode are not compared) and, for each changed member named *.json that parses,
/// its differences by key path (at most 100 per member, then a count). No gate runs:
/// a NEFF the loader refuses compares too, as far as its tar walk goes (the `walk`
/// field says where it stopped). The header's hash and data_size describe the stored
/// payload, so they differ whenever any member, mtime or the compression does:
/// `--ignore mtime` alone still reports them; for a reproducibility check use
/// `--ignore uuid,name,mtime,framing`.
///
/// Exit status: 0 equal, 1 different, 2 a file cannot be read.
#[derive(Args, Debug)]
pub struct DiffArgs {
    /// The first NEFF (A; `-` reads stdin), or a file that carries one
    /// (`wrapped_neff.hlo`, `model.neuron`).
    a: PathBuf,
    /// The second NEFF (B; `-` reads stdin, when A is not `-`).
    b: PathBuf,
    /// Do not compare these (comma list, repeatable): a header field by name; `mtime`
    /// (the members' mtimes and the gzip MTIME); `framing` (data_size, hash,
    /// compression, gzip_mtime: how the same members are stored); `compression`;
    /// `gzip_mtime`.
    #[arg(long, value_name = "NAMES", value_delimiter = ',',
        value_parser = PossibleValuesParser::new(DiffOptions::ignorable()))]
    ignore: Vec<String>,
    /// Compare only the engines' programs: which subgraphs and engines each def.json
    /// names, and the bytes of the instruction member (`instr`) of each engine's JSON.
    /// Equal when those match, whatever the weights, header or other members.
    #[arg(long)]
    programs: bool,
    /// Print exactly one JSON object on stdout (`neff schema diff-report`).
    #[arg(long)]
    json: bool,
    /// Print nothing: the exit status tells.
    #[arg(short, long)]
    quiet: bool,
    /// When A or B carries several NEFFs (an HLO module, a TorchScript zip),
    /// compare its NEFF number N (from 0).
    #[arg(long, value_name = "N")]
    index: Option<usize>,
}

pub fn run(args: DiffArgs) -> Result<u8, Box<dyn std::error::Error>> {
    let mut options = DiffOptions::default();
    options.programs = args.programs;
    for name in &args.ignore {
        options.ignore(name)?;
    }
    if super::input::is_stdin(&args.a) && super::input::is_stdin(&args.b) {
        return Err("only one of A and B can be `-` (stdin)".into());
    }
    let (a, b) = (
        snapshot(&args.a, args.index, args.quiet)?,
        snapshot(&args.b, args.index, args.quiet)?,
    );
    let report = diff(&a, &b, &options);
    if args.json {
        print_json(&report)?;
    } else if !args.quiet {
        print!("{}", text(&report, &args.a, &args.b));
    }
    Ok(if report.equal { EXIT_OK } else { EXIT_REJECTED })
}

/// Reads one NEFF (or the NEFF number `index` a carrier holds), naming it
/// in the error.
fn snapshot(
    path: &Path,
    index: Option<usize>,
    quiet: bool,
) -> Result<Snapshot, neff::loader::Error> {
    let resolved = super::input::resolve_carrier(path, index, quiet)?;
    let named = |e: neff::loader::Error| e.at_path(&resolved.name);
    let source = super::input::open(&resolved.path).map_err(named)?;
    let size = source
        .get_ref()
        .metadata()
        .map_err(|e| named(e.into()))?
        .len();
    Snapshot::read(source, size).map_err(named)
}

/// A member name for a line of text: cut short past 256 characters.
fn shown(name: &str) -> String {
    match name.char_indices().nth(256) {
        Some((cut, _)) => format!("{}…({} bytes)", &name[..cut], name.len()),
        None => name.to_string(),
    }
}

/// The report as text, one difference a line, sorted by name.
fn text(report: &DiffReport, a: &Path, b: &Path) -> String {
    let mut out = String::new();
    let mut section = |title: &str, lines: Vec<String>| {
        if !lines.is_empty() {
            out.push_str(&format!("{title}:\n"));
            lines.iter().for_each(|l| out.push_str(&format!("  {l}\n")));
        }
    };
    section("header", report.header.iter().map(field).collect());
    let m = &report.members;
    let facts =
        |m: &neff::tools::diff::MemberFacts| format!("{} ({} bytes)", shown(&m.name), m.size);
    let members = (m.added.iter().map(|f| format!("added {}", facts(f))))
        .chain(m.removed.iter().map(|f| format!("removed {}", facts(f))))
        .chain(m.changed.iter().map(|c| {
            let fields: Vec<String> = c.fields.iter().map(field).collect();
            format!("changed {}: {}", shown(&c.name), fields.join(", "))
        }));
    section("members", members.collect());
    let mut manifests = Vec::new();
    for d in &report.manifests {
        for k in &d.differences {
            let change = match (&k.a, &k.b) {
                (Some(a), Some(b)) => format!("{a} -> {b}"),
                (None, Some(b)) => format!("added {b}"),
                (Some(a), None) => format!("removed {a}"),
                (None, None) => String::new(),
            };
            manifests.push(format!("{}: {}: {change}", shown(&d.member), k.path));
        }
        if d.more > 0 {
            manifests.push(format!("{}: … {} more", d.member, d.more));
        }
    }
    section("manifests", manifests);
    let programs = report
        .programs
        .iter()
        .flatten()
        .map(|p| format!("{}: {} -> {}", p.program, program(&p.a), program(&p.b)));
    section("programs", programs.collect());
    let verdict = if report.equal { "equal" } else { "different" };
    out.push_str(&format!("{} and {}: {verdict}\n", a.display(), b.display()));
    out
}

fn field(d: &FieldDiff) -> String {
    match d.field.as_str() {
        "sha256" => format!("sha256: {} -> {}", short(&d.a), short(&d.b)),
        _ => format!("{}: {} -> {}", d.field, d.a, d.b),
    }
}

/// A member's SHA-256 cut to 16 hex digits (the JSON report has it whole).
fn short(sha256: &str) -> &str {
    sha256.get(..16).unwrap_or(sha256)
}

fn program(p: &Option<Program>) -> String {
    match p {
        None => "(no such engine)".into(),
        Some(Program {
            instr: Some(instr),
            size: Some(size),
            sha256: Some(sha),
            ..
        }) => format!("{instr} ({size} bytes, sha256 {})", short(sha)),
        Some(Program { json, instr, .. }) => match instr {
            Some(instr) => format!("{instr} (not in the NEFF)"),
            None => format!("{json} (no instr member)"),
        },
    }
}
