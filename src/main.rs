//! The `neff` command-line tool.

mod cli;

use std::process::ExitCode;

use clap::Parser;

fn main() -> ExitCode {
    cli::signals::install();
    neff::writer::report_stale_temp_files(|path| {
        eprintln!(
            "neff: note: removed {}, a temp file left by a killed run",
            path.display()
        )
    });
    let args = cli::Cli::parse();
    match cli::run(args) {
        Ok(code) => code,
        Err(e) => {
            eprintln!("neff: error: {e}");
            ExitCode::from(cli::EXIT_ERROR)
        }
    }
}
