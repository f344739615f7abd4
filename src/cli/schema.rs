//! `neff schema`: the JSON Schemas of the build spec, the reports and the manifests.

use clap::Args;
use neff::schema::manifest::{
    ActInfo, DefJson, EngineJson, KelfDescriptor, NeffJson, UcodeLibJson,
};
use neff::writer::build_spec::BuildSpec;

use super::{documents, print_json, EXIT_OK};

/// Print a JSON Schema: the build spec, a report, or a manifest.
///
/// Schemas follow JSON Schema draft 2020-12: `build-spec` is what `neff build`
/// reads, `verify-report` what `neff verify --json` prints for one file, `verify-many` for
/// several files or a folder, `inspect-report` what `neff inspect --json` prints,
/// `diff-report` what `neff diff --json` prints, `pack-report` what `pack`/`build --json`
/// print, `unpack-report` what `unpack --json` prints, `memory-report` what
/// `neff inspect --memory --json` prints (`shared-memory-report` for several files), `error` what any `--json` command prints on an
/// error, `corpus-manifest` the corpus.json of `neff corpus`, `coverage-report` what
/// `neff coverage --json` prints, and the
/// manifest schemas describe neff.json, the KELF descriptor, def.json, engine
/// JSON and ucode_lib.json. Without NAME, lists the schemas. Manifest schemas describe the JSON
/// shapes (keys the runtime reads, with their types); unknown keys are allowed,
/// as the runtime ignores them.
#[derive(Args, Debug)]
pub struct SchemaArgs {
    /// The schema to print (omit to list them).
    name: Option<String>,
    /// Print nothing: only check that NAME is a known schema.
    #[arg(short, long)]
    quiet: bool,
}

/// (name, description, schema).
type Entry = (&'static str, &'static str, fn() -> schemars::Schema);

/// Every schema `neff schema` knows, in listing order.
const SCHEMAS: &[Entry] = &[
    (
        "build-spec",
        "the JSON build spec `neff build` reads",
        || schemars::schema_for!(BuildSpec),
    ),
    (
        "verify-report",
        "what `neff verify --json` prints for one file (with `per_arch` reports)",
        || schemars::schema_for!(neff::loader::Checked),
    ),
    (
        "verify-many",
        "what `neff verify --json` prints for several files or a folder",
        || schemars::schema_for!(super::verify::ManyReport),
    ),
    (
        "inspect-report",
        "what `neff inspect --json` prints",
        || schemars::schema_for!(neff::tools::InspectReport),
    ),
    (
        "extract-report",
        "what `neff extract --json` prints",
        || schemars::schema_for!(super::extract::ExtractReport),
    ),
    ("diff-report", "what `neff diff --json` prints", || {
        schemars::schema_for!(neff::tools::diff::DiffReport)
    }),
    (
        "pack-report",
        "what `neff pack --json` and `neff build --json` print",
        || schemars::schema_for!(documents::WrittenReport),
    ),
    ("unpack-report", "what `neff unpack --json` prints", || {
        schemars::schema_for!(neff::tools::UnpackReport)
    }),
    (
        "error",
        "what every `--json` command prints on an error (exit 2)",
        || schemars::schema_for!(documents::ErrorDocument),
    ),
    (
        "corpus-manifest",
        "corpus.json of `neff corpus`: each seed file",
        || schemars::schema_for!(documents::CorpusManifest),
    ),
    (
        "coverage-report",
        "what `neff coverage --json` prints",
        || schemars::schema_for!(documents::CoverageReport),
    ),
    (
        "memory-report",
        "what `neff inspect --memory --json` prints",
        || schemars::schema_for!(neff::tools::MemoryReport),
    ),
    (
        "cache-listing",
        "what `neff cache ls --json` and `neff cache verify --json` print",
        || schemars::schema_for!(neff::tools::cache::CacheListing),
    ),
    (
        "shared-memory-report",
        "what `neff inspect --memory --json A B …` prints (NEFFs loaded together)",
        || schemars::schema_for!(neff::tools::SharedMemoryReport),
    ),
    (
        "neff-json",
        "neff.json: the graph with the __kelf node (docs/format.md §4.1)",
        || schemars::schema_for!(NeffJson),
    ),
    (
        "kelf",
        "kelf-<i>.json: the KELF descriptor (docs/format.md §4.2)",
        || schemars::schema_for!(KelfDescriptor),
    ),
    (
        "def-json",
        "sgNN/def.json: one subgraph (docs/format.md §4.3)",
        || schemars::schema_for!(DefJson),
    ),
    (
        "engine",
        "sgNN/<eng>.json: one engine's program (docs/format.md §4.4)",
        || schemars::schema_for!(EngineJson),
    ),
    (
        "act-info",
        "sgNN/act_info.json: the activation table sets an ACT manifest names",
        || schemars::schema_for!(ActInfo),
    ),
    (
        "ucode-lib",
        "sgNN/ucode_lib.json: GPSIMD ucode libraries (docs/format.md §4.3)",
        || schemars::schema_for!(UcodeLibJson),
    ),
    (
        "barrier",
        "a barrier config in the firmware logger's shape (docs/format.md §8)",
        || schemars::schema_for!(neff::schema::barrier::json::BarrierConfigsJson),
    ),
    (
        "barrier-compose",
        "the inputs of `neff barrier compose --spec`",
        || schemars::schema_for!(neff::writer::barrier::ComposeInputs),
    ),
    (
        "fixtures-manifest",
        "manifest.json of `neff fixtures`: each fixture and its expected verdict",
        || schemars::schema_for!(neff::smith::fixtures::FixtureManifest),
    ),
];

/// The names `neff schema` accepts, in listing order.
pub fn names() -> impl Iterator<Item = &'static str> {
    SCHEMAS.iter().map(|(name, _, _)| *name)
}

pub fn run(args: SchemaArgs) -> Result<u8, Box<dyn std::error::Error>> {
    let Some(name) = args.name else {
        if args.quiet {
            return Ok(EXIT_OK);
        }
        for (name, what, _) in SCHEMAS {
            println!("{name:<15} {what}");
        }
        return Ok(EXIT_OK);
    };
    let Some((_, _, schema)) = SCHEMAS.iter().find(|(n, _, _)| *n == name) else {
        let known: Vec<&str> = names().collect();
        return Err(format!("unknown schema {name:?}: use one of {}", known.join(", ")).into());
    };
    if !args.quiet {
        print_json(&schema())?;
    }
    Ok(EXIT_OK)
}
