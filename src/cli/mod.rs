//! Command-line interface: argument definitions and dispatch.

mod barrier;
mod build;
mod corpus;
mod fixtures;
mod inspect;
mod pack;
mod progress;
mod schema;
mod unpack;
mod verify;

use std::process::ExitCode;

use clap::{Parser, Subcommand};

/// Exit status: success, or the NEFF was accepted.
pub const EXIT_OK: u8 = 0;
/// Exit status: a loader gate refused the NEFF.
pub const EXIT_REJECTED: u8 = 1;
/// Exit status: bad usage or an I/O error.
pub const EXIT_ERROR: u8 = 2;

/// Write NEFF files and check them against the Neuron runtime loader's gates.
#[derive(Parser, Debug)]
#[command(
    name = "neff",
    version,
    about,
    long_about = None,
    after_help = "Exit status: 0 success or accepted, 1 refused by a loader gate, 2 usage or I/O error.\nRun `neff <COMMAND> --help` for each command's flags."
)]
pub struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand, Debug)]
enum Command {
    Pack(pack::PackArgs),
    Unpack(unpack::UnpackArgs),
    Inspect(inspect::InspectArgs),
    Verify(verify::VerifyArgs),
    Build(build::BuildArgs),
    Schema(schema::SchemaArgs),
    Barrier(barrier::BarrierArgs),
    Corpus(corpus::CorpusArgs),
    Fixtures(fixtures::FixturesArgs),
}

/// Runs a parsed command line.
pub fn run(cli: Cli) -> Result<ExitCode, Box<dyn std::error::Error>> {
    let code = match cli.command {
        Command::Pack(args) => pack::run(args)?,
        Command::Unpack(args) => unpack::run(args)?,
        Command::Inspect(args) => inspect::run(args)?,
        Command::Verify(args) => verify::run(args)?,
        Command::Build(args) => build::run(args)?,
        Command::Schema(args) => schema::run(args)?,
        Command::Barrier(args) => barrier::run(args)?,
        Command::Corpus(args) => corpus::run(args)?,
        Command::Fixtures(args) => fixtures::run(args)?,
    };
    Ok(ExitCode::from(code))
}

/// Parses a 64-bit mask given as `0x…` hex, `0b…` binary or decimal.
pub fn parse_mask(text: &str) -> Result<u64, String> {
    let t = text.trim().replace('_', "");
    let parsed = if let Some(hex) = t.strip_prefix("0x").or_else(|| t.strip_prefix("0X")) {
        u64::from_str_radix(hex, 16)
    } else if let Some(bin) = t.strip_prefix("0b") {
        u64::from_str_radix(bin, 2)
    } else {
        t.parse()
    };
    parsed
        .map_err(|_| format!("{text:?} is not a 64-bit number (use decimal, 0x hex or 0b binary)"))
}

/// Prints a value as pretty JSON on stdout.
pub fn print_json<T: serde::Serialize>(value: &T) -> Result<(), Box<dyn std::error::Error>> {
    println!("{}", serde_json::to_string_pretty(value)?);
    Ok(())
}
