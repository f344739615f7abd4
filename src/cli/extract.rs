//! `neff extract`: writes out the NEFF a file carries.

use std::path::PathBuf;

use clap::Args;
use neff::tools::carrier;
use neff::writer::fs::{write_atomic_from, OutputGuard};

use super::{print_json, FsyncArgs, EXIT_OK};

/// Write out a NEFF that another file carries (an HLO module, a TorchScript zip)
///
/// The carrier is a compile-cache HLO module (`wrapped_neff.hlo`, neuronx-cc 2.21+: the NEFF is the `backend_config` of
/// its `AwsNeuronNeff` custom call) or a torch-neuron(x) traced model
/// (`model.neuron`, a TorchScript zip: the NEFF is a pickled string in its
/// `data.pkl`). The carrier is parsed (protobuf, zip, pickle opcodes), never
/// scanned for bytes; the NEFF is copied as it is stored, byte for byte. Every
/// other command reads such a file as its NEFF directly; this one keeps it.
#[derive(Args, Debug)]
pub struct ExtractArgs {
    /// The file that carries the NEFF.
    file: PathBuf,
    /// Where to write the NEFF (written to a temp file beside it, renamed
    /// into place; an existing file is replaced whole).
    #[arg(short, long, value_name = "OUT.neff", required_unless_present = "list")]
    output: Option<PathBuf>,
    /// When FILE carries several NEFFs, write NEFF number N (from 0); without
    /// it, a FILE with several lists them and writes nothing.
    #[arg(long, value_name = "N")]
    index: Option<usize>,
    /// List the NEFFs FILE carries (where each lies) and write nothing.
    #[arg(long, conflicts_with = "index")]
    list: bool,
    #[command(flatten)]
    fsync: FsyncArgs,
    /// Print a JSON object on stdout (`neff schema extract-report`): the file
    /// written and its NEFF, or with --list every NEFF (`carrier`, `index`,
    /// `count`, `offset`, `len`, `location`).
    #[arg(long)]
    json: bool,
    /// Print nothing on success.
    #[arg(short, long)]
    quiet: bool,
}

/// What `neff extract --json` prints.
#[derive(serde::Serialize, schemars::JsonSchema)]
pub struct ExtractReport {
    /// The file written (absent with `--list`).
    #[serde(skip_serializing_if = "Option::is_none")]
    written: Option<String>,
    /// The NEFF written, or with `--list` every NEFF the carrier holds.
    neffs: Vec<carrier::Embedded>,
}

pub fn run(args: ExtractArgs) -> Result<u8, Box<dyn std::error::Error>> {
    let neffs = carrier::carried(&args.file)?.ok_or_else(|| {
        format!(
            "{}: not a file that carries NEFFs (an HLO module with an AwsNeuronNeff custom call, or a TorchScript zip)",
            args.file.display()
        )
    })?;
    if args.list {
        if args.json {
            print_json(&ExtractReport {
                written: None,
                neffs,
            })?;
        } else {
            for neff in &neffs {
                println!("{}: {neff}", args.file.display());
            }
        }
        return Ok(EXIT_OK);
    }
    let neff = carrier::pick(&args.file, neffs, args.index)?;
    let Some(output) = &args.output else {
        return Err("--output is required".into());
    };
    OutputGuard::new(output).check(&args.file)?;
    // Errors name the carrier (reading) or the output (writing).
    write_atomic_from(output, args.fsync.fsync(), |out| {
        carrier::copy_out(&args.file, &neff, out).map(drop)
    })?;
    if args.json {
        print_json(&ExtractReport {
            written: Some(output.display().to_string()),
            neffs: vec![neff],
        })?;
    } else if !args.quiet {
        println!("wrote {}: {} bytes, {neff}", output.display(), neff.len);
    }
    Ok(EXIT_OK)
}
