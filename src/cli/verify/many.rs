//! `neff verify` over several inputs or a folder: one line (or JSON entry)
//! per file in input order, checked in parallel, then a summary.

use std::collections::BTreeMap;
use std::num::NonZeroUsize;
use std::path::PathBuf;

use neff::loader::{Error, ErrorKind, Gate, Limits, RuntimeProfile};

use super::{arch_names, check, input, VerifyArgs};
use crate::cli::{print_json, EXIT_ERROR, EXIT_OK, EXIT_REJECTED};
use neff::loader::inputs::{self, Input};

/// What `neff verify --json` prints for several inputs or a folder.
#[derive(serde::Serialize, schemars::JsonSchema)]
pub struct ManyReport {
    /// One entry per input, in input order (a folder's files sorted by path).
    files: Vec<FileOutcome>,
    /// The counts over every input.
    summary: Summary,
}

/// One input's entry: its verdict, or why it could not be read.
#[derive(serde::Serialize, schemars::JsonSchema)]
#[serde(untagged)]
enum FileOutcome {
    /// The verdict, the object `neff verify --json` prints for one file.
    Checked(Box<neff::loader::Checked>),
    /// The input could not be read (exit status 2).
    Failed {
        /// The input's path.
        file: String,
        /// What failed.
        error: FileError,
    },
}

/// Why an input could not be read.
#[derive(serde::Serialize, schemars::JsonSchema)]
struct FileError {
    /// The kind of failure (`read`, `gzip`, `tar`, `limit`, ...).
    kind: String,
    /// What failed and where.
    message: String,
}

/// The counts over every input.
#[derive(Default, serde::Serialize, schemars::JsonSchema)]
struct Summary {
    /// Inputs checked.
    files: usize,
    /// Inputs accepted.
    accepted: usize,
    /// Inputs a gate refused.
    refused: usize,
    /// Inputs that could not be read.
    errors: usize,
    /// Refusals by the gate that refused.
    by_gate: BTreeMap<Gate, usize>,
}

impl Summary {
    fn add(&mut self, outcome: &FileOutcome) {
        self.files += 1;
        match outcome {
            FileOutcome::Checked(c) if c.report.accepted => self.accepted += 1,
            FileOutcome::Checked(c) => {
                self.refused += 1;
                if let Some(gate) = c.report.gate {
                    *self.by_gate.entry(gate).or_default() += 1;
                }
            }
            FileOutcome::Failed { .. } => self.errors += 1,
        }
    }

    /// `N accepted, M refused (by gate: G9 2, G17 1), K errors`.
    fn line(&self) -> String {
        let gates: Vec<String> = self
            .by_gate
            .iter()
            .map(|(gate, n)| format!("{} {n}", gate.id()))
            .collect();
        let by_gate = if gates.is_empty() {
            String::new()
        } else {
            format!(" (by gate: {})", gates.join(", "))
        };
        let s = if self.errors == 1 { "" } else { "s" };
        format!(
            "{} accepted, {} refused{by_gate}, {} error{s}",
            self.accepted, self.refused, self.errors
        )
    }

    /// 2 if any input could not be read, else 1 if any was refused, else 0.
    fn exit_code(&self) -> u8 {
        if self.errors > 0 {
            EXIT_ERROR
        } else if self.refused > 0 {
            EXIT_REJECTED
        } else {
            EXIT_OK
        }
    }
}

/// Checks every input `files` name, `--threads` at a time.
pub fn run(
    args: &VerifyArgs,
    files: &[PathBuf],
    profile: &RuntimeProfile,
) -> Result<u8, Box<dyn std::error::Error>> {
    let inputs = inputs::expand(files);
    if inputs.is_empty() {
        let named: Vec<String> = files.iter().map(|f| f.display().to_string()).collect();
        eprintln!(
            "neff: error: no *.neff, *.hlo or *.neuron file in {}: nothing was checked",
            named.join(", ")
        );
        return Ok(EXIT_ERROR);
    }
    let threads = args.threads.map_or_else(
        || std::thread::available_parallelism().map_or(1, NonZeroUsize::get),
        NonZeroUsize::get,
    );
    let single = args.instance_arch.arch();
    let mut summary = Summary::default();
    let mut entries = Vec::new();
    neff::loader::inputs::in_order(
        &inputs,
        threads,
        |input| outcomes(input, single, profile),
        |outcomes| {
            for outcome in outcomes {
                summary.add(&outcome);
                if args.json {
                    entries.push(outcome);
                } else if !args.quiet {
                    println!("{}", line(&outcome));
                } else if !matches!(&outcome, FileOutcome::Checked(c) if c.report.accepted) {
                    eprintln!("neff: {}", line(&outcome));
                }
            }
        },
    );
    let code = summary.exit_code();
    if args.json {
        print_json(&ManyReport {
            files: entries,
            summary,
        })?;
    } else if !args.quiet {
        println!("{}", summary.line());
    }
    Ok(code)
}

/// Checks one input, or each NEFF it carries; a failure to read it is its
/// outcome, not an error.
fn outcomes(
    item: &Input,
    single: Option<neff::schema::Arch>,
    profile: &RuntimeProfile,
) -> Vec<FileOutcome> {
    let failed = |name: String, e: Error| FileOutcome::Failed {
        file: name,
        error: FileError {
            kind: kind_name(e.kind()),
            message: e.to_string(),
        },
    };
    let path = match item {
        Input::Path(path) => path,
        Input::Unreadable(_, e) => {
            let e = Error::new(ErrorKind::Read, format!("cannot read: {e}"));
            return vec![failed(input::name(item.path()), e)];
        }
    };
    let neffs = match input::each_neff(path) {
        Ok(neffs) => neffs,
        Err(e) => return vec![failed(input::name(path), e)],
    };
    neffs
        .into_iter()
        .map(|neff| {
            let limits = Limits::for_verdict();
            let checked = input::read_as(path, neff, true)
                .and_then(|neff| check(&neff.path, &neff.name, single, profile, &limits));
            match checked {
                Ok(checked) => FileOutcome::Checked(Box::new(checked)),
                Err(e) => failed(input::name(path), e),
            }
        })
        .collect()
}

/// `read`, `gzip`, `tar`, ...: the kind without its detail, lower case.
fn kind_name(kind: ErrorKind) -> String {
    let debug = format!("{kind:?}");
    let name = debug.split('(').next().unwrap_or(&debug);
    name.to_ascii_lowercase()
}

/// One input's line: `PATH: ACCEPTED (targets ...)`, `PATH: REJECTED by
/// ...` or `PATH: ERROR: ...`.
fn line(outcome: &FileOutcome) -> String {
    match outcome {
        FileOutcome::Checked(c) => {
            let file = c.report.file.as_deref().unwrap_or_default();
            match (&c.targeted_arches, c.report.accepted) {
                (Some(targeted), true) => {
                    format!("{file}: ACCEPTED (targets {})", arch_names(targeted))
                }
                _ => format!("{file}: {}", c.report.summary()),
            }
        }
        FileOutcome::Failed { file, error } => format!("{file}: ERROR: {}", error.message),
    }
}
