//! `neff coverage`: which shapes of reference NEFFs a corpus holds.

use std::path::PathBuf;

use clap::Args;
use neff::smith::coverage::{coverage, Shapes, Share};

use super::documents::CoverageReport;
use super::EXIT_OK;
use neff::loader::inputs::{expand, Input};

/// How many missing shapes of each kind the text report lists.
const MISSING_SHOWN: usize = 40;

/// Show which shapes of reference NEFFs a corpus holds.
///
/// Every NEFF of the corpus and of the reference (files, or folders searched
/// for *.neff) is lifted into the typed model, and their shapes are compared:
/// the normalized manifest key paths (map keys `*`, array items `[]`:
/// `def-json:var.*.size`), those of them the runtime reads, the enum values
/// (`def-json:var.*.type=virtual`) and the member-name patterns (digits `N`,
/// weights `*.npy`: `sgN/def.json`). Prints each share and what the corpus
/// lacks; --json prints the whole report.
#[derive(Args, Debug)]
pub struct CoverageArgs {
    /// The corpus: NEFF files or folders.
    #[arg(required = true, value_name = "CORPUS")]
    corpus: Vec<PathBuf>,
    /// The reference NEFFs (for example ../shared/real-neffs): files or folders.
    #[arg(long, required = true, num_args = 1.., value_name = "PATH")]
    reference: Vec<PathBuf>,
    /// Print the report as JSON (every missing shape listed).
    #[arg(long)]
    json: bool,
}

/// The shapes of every NEFF `paths` name; a NEFF that cannot be lifted is
/// named and skipped (a corpus holds refused files).
fn shapes_of(paths: &[PathBuf], skipped: &mut Vec<String>) -> Result<(Shapes, usize), String> {
    let mut shapes = Shapes::default();
    let mut files = 0;
    for input in expand(paths) {
        match input {
            // A carrier gives each NEFF it holds.
            Input::Path(path) => match super::input::each_neff(&path) {
                Ok(neffs) => {
                    for neff in neffs {
                        let read = super::input::read_as(&path, neff, true).and_then(|neff| {
                            shapes.add_file(&neff.path).map_err(|e| {
                                neff::loader::Error::new(
                                    neff::loader::ErrorKind::Read,
                                    format!("{}: {e}", neff.name),
                                )
                            })
                        });
                        match read {
                            Ok(()) => files += 1,
                            Err(e) => skipped.push(e.to_string()),
                        }
                    }
                }
                Err(e) => skipped.push(e.to_string()),
            },
            Input::Unreadable(path, e) => return Err(format!("{}: {e}", path.display())),
        }
    }
    if files == 0 {
        let names: Vec<String> = paths.iter().map(|p| p.display().to_string()).collect();
        return Err(format!("no NEFF could be read from {}", names.join(", ")));
    }
    Ok((shapes, files))
}

pub fn run(args: CoverageArgs) -> Result<u8, Box<dyn std::error::Error>> {
    let mut skipped = Vec::new();
    let (reference, reference_files) = shapes_of(&args.reference, &mut skipped)?;
    let (corpus, corpus_files) = shapes_of(&args.corpus, &mut skipped)?;
    let report = coverage(&reference, &corpus);
    if args.json {
        let doc = CoverageReport {
            corpus_files,
            reference_files,
            not_lifted: skipped,
            coverage: report,
        };
        println!("{}", serde_json::to_string_pretty(&doc)?);
        return Ok(EXIT_OK);
    }
    println!("corpus: {corpus_files} NEFFs; reference: {reference_files} NEFFs");
    let rows: [(&str, &Share); 5] = [
        ("manifest key paths", &report.key_paths),
        (
            "key paths the runtime reads",
            &report.runtime_read_key_paths,
        ),
        ("enum values", &report.enum_values),
        ("member-name patterns", &report.members),
        (
            "key paths the typed model declares",
            &report.model_key_paths,
        ),
    ];
    for (what, share) in rows {
        println!(
            "{what}: {}/{} ({:.1}%)",
            share.covered,
            share.total,
            100.0 * share.ratio()
        );
    }
    for (what, share) in rows {
        if share.missing.is_empty() {
            continue;
        }
        println!("\nmissing {what}:");
        for shape in share.missing.iter().take(MISSING_SHOWN) {
            println!("  {shape}");
        }
        if share.missing.len() > MISSING_SHOWN {
            println!(
                "  … and {} more (--json lists all)",
                share.missing.len() - MISSING_SHOWN
            );
        }
    }
    if !skipped.is_empty() {
        eprintln!(
            "{} NEFFs could not be lifted, for example {}",
            skipped.len(),
            skipped[0]
        );
    }
    Ok(EXIT_OK)
}
