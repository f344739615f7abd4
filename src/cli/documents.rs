//! The typed JSON documents the commands print with `--json` (and that
//! `neff schema` describes): what `pack`/`build` wrote, what `unpack` wrote,
//! and the error document every `--json` command prints when it fails.

use neff::loader::Report;
use neff::schema::{HeaderFields, Location};
use schemars::JsonSchema;
use serde::Serialize;

/// What `neff pack --json` and `neff build --json` print: the NEFF written,
/// or, when the loader's gates refuse it, the refusal (`written` false).
#[serde_with::skip_serializing_none]
#[derive(Debug, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct WrittenReport {
    /// The output file.
    pub file: String,
    /// Whether the NEFF was written; false when the gates refuse it (see `verdict`).
    pub written: bool,
    /// The header written (absent when refused).
    pub header: Option<HeaderFields>,
    /// Length of the tar stream (absent when refused).
    pub tar_size: Option<u64>,
    /// Number of file members (absent when refused).
    pub files: Option<usize>,
    /// Number of directory entries (absent when refused).
    pub directories: Option<usize>,
    /// The loader's verdict on the output (the refusal when refused).
    pub verdict: Report,
    /// Choices made for the caller, e.g. a recorded UUID replaced because
    /// the payload changed (absent when there are none).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub notes: Vec<String>,
    /// With a header file or spec that records a `source_hash`: whether the
    /// payload written is, byte for byte, that of the NEFF it was lifted from.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub payload_matches_source: Option<bool>,
}

impl WrittenReport {
    /// The report of a NEFF the gates refused: nothing was written.
    pub fn refused(file: String, verdict: Report) -> Self {
        WrittenReport {
            file,
            written: false,
            header: None,
            tar_size: None,
            files: None,
            directories: None,
            verdict,
            notes: Vec::new(),
            payload_matches_source: None,
        }
    }

    /// The report of a NEFF written.
    pub fn written(file: String, outcome: neff::writer::PackOutcome) -> Self {
        WrittenReport {
            file,
            written: true,
            header: Some(outcome.header),
            tar_size: Some(outcome.tar_size),
            files: Some(outcome.files),
            directories: Some(outcome.directories),
            verdict: outcome.report,
            notes: outcome.notes,
            payload_matches_source: outcome.payload_matches_source,
        }
    }
}

/// What every `--json` command prints on stdout when it fails with an error
/// (exit 2): one object with one key, `error`.
#[derive(Debug, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ErrorDocument {
    /// The error.
    pub error: ErrorObject,
}

/// An error: its kind, message and where it is.
#[serde_with::skip_serializing_none]
#[derive(Debug, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ErrorObject {
    /// The error's kind in snake_case, one vocabulary for every command:
    /// `io` whenever the operating system refused (opening, reading or
    /// writing a file; `io_kind` says how), else a loader or writer error
    /// kind (`spec`, `tar`, `gzip`, `limit`, `not_empty`, …), a data model
    /// kind (`bad_uuid`, …), `usage` for a bad command line, `other` for
    /// anything else.
    pub kind: String,
    /// For `io`: the operating system's error kind in snake_case
    /// (`not_found`, `permission_denied`, `is_a_directory`, …).
    pub io_kind: Option<String>,
    /// What went wrong (without the location, given in the other keys).
    pub message: String,
    /// The file on disk.
    pub path: Option<String>,
    /// The member of the NEFF's archive.
    pub member: Option<String>,
    /// A JSON key path or a struct field.
    pub key: Option<String>,
    /// A byte offset (the message says of what).
    pub offset: Option<u64>,
}

impl ErrorDocument {
    /// The document of any error: the crates' errors give their kind and
    /// location; others are `other` with their text.
    pub fn of(e: &(dyn std::error::Error + 'static)) -> Self {
        let (kind, message, location, io) = if let Some(e) = e.downcast_ref::<neff::loader::Error>()
        {
            (
                format!("{:?}", e.kind()),
                e.message(),
                e.location(),
                e.io_kind(),
            )
        } else if let Some(e) = e.downcast_ref::<neff::writer::Error>() {
            (
                format!("{:?}", e.kind()),
                e.message(),
                e.location(),
                e.io_kind(),
            )
        } else if let Some(e) = e.downcast_ref::<neff::schema::Error>() {
            (
                format!("{:?}", e.kind()),
                e.message(),
                e.location(),
                e.io_kind(),
            )
        } else if let Some(io) = e.downcast_ref::<std::io::Error>() {
            let mut doc = ErrorDocument::plain("io", e.to_string());
            doc.error.io_kind = Some(snake_case(&format!("{:?}", io.kind())));
            return doc;
        } else {
            return ErrorDocument::plain("other", e.to_string());
        };
        let mut doc = match io {
            Some(_) => ErrorDocument::of_location("io", message.to_string(), location),
            None => ErrorDocument::of_location(&snake_case(&kind), message.to_string(), location),
        };
        doc.error.io_kind = io.map(|k| snake_case(&format!("{k:?}")));
        doc
    }

    /// An error with only a kind and a message.
    pub fn plain(kind: &str, message: String) -> Self {
        ErrorDocument::of_location(kind, message, &Location::default())
    }

    fn of_location(kind: &str, message: String, location: &Location) -> Self {
        ErrorDocument {
            error: ErrorObject {
                kind: kind.to_string(),
                io_kind: None,
                message,
                path: location.path.as_ref().map(|p| p.display().to_string()),
                member: location.member.clone(),
                key: location.key.clone(),
                offset: location.offset,
            },
        }
    }
}

/// `ReadBack(Read)` → `read_back`: the outer variant of a kind's Debug text.
fn snake_case(debug: &str) -> String {
    let outer = debug.split('(').next().unwrap_or(debug);
    let mut out = String::new();
    for (i, c) in outer.chars().enumerate() {
        if c.is_ascii_uppercase() && i > 0 {
            out.push('_');
        }
        out.push(c.to_ascii_lowercase());
    }
    out
}

/// `corpus.json`, the listing `neff corpus` writes beside its seeds.
#[derive(Debug, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct CorpusManifest {
    /// The `--seed` the corpus is a function of.
    pub seed: u64,
    /// The `--invalid-ratio`: the share of mutated files asked for (unused
    /// with `--from`).
    pub invalid_ratio: f64,
    /// The NEFFs `--from` lifted, in the order seeds draw them from (empty
    /// for generated seeds).
    pub from: Vec<String>,
    /// Every file written, in order.
    pub files: Vec<CorpusEntry>,
}

/// One seed file of `corpus.json`.
#[derive(Debug, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct CorpusEntry {
    /// The file name, inside the corpus folder.
    pub file: String,
    /// Whether the loader accepts it (`verdict.accepted`; the file name says
    /// `valid` or `invalid` to match).
    pub valid: bool,
    /// The loader's verdict under `neff verify`'s defaults.
    pub verdict: neff::smith::corpus::SeedVerdict,
    /// The draw it came from.
    pub draw: u64,
    /// What was changed: for a generated seed, the mutation of an invalid
    /// one (null for a valid one); with `--from`, the source file and its
    /// one change (`model.neff: sg00/def.json var "x": size set to 0`).
    pub mutation: Option<String>,
}

/// What `neff coverage --json` prints.
#[derive(Debug, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct CoverageReport {
    /// NEFFs of the corpus lifted.
    pub corpus_files: usize,
    /// NEFFs of the reference lifted.
    pub reference_files: usize,
    /// The NEFFs that could not be lifted, and why (a corpus holds refused ones).
    pub not_lifted: Vec<String>,
    /// The shares.
    pub coverage: neff::smith::coverage::Coverage,
}
