//! The `neff` command-line tool.

mod cli;

use std::process::ExitCode;

use cli::documents::ErrorDocument;

fn main() -> ExitCode {
    let code = run();
    report_peak_rss();
    code
}

/// Test hook: with `NEFF_TEST_PEAK_RSS=<path>` set, the process's own peak
/// RSS (`VmHWM` of /proc/self/status, in KiB) is written to `<path>` as it
/// exits. A child's `ru_maxrss` also counts its parent's peak at `exec`, so
/// tests that share a process with large buffers read this instead.
fn report_peak_rss() {
    let Some(path) = std::env::var_os("NEFF_TEST_PEAK_RSS") else {
        return;
    };
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    let peak = status
        .lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))
        .map(|v| v.trim().trim_end_matches("kB").trim().to_string());
    if let Some(kib) = peak {
        let _ = std::fs::write(path, kib);
    }
}

fn run() -> ExitCode {
    cli::signals::install();
    neff::writer::fs::report_stale_temp_files(|path| {
        eprintln!(
            "neff: note: removed {}, a temp file left by a killed run",
            path.display()
        )
    });
    let (args, json) = match cli::parse() {
        Ok(parsed) => parsed,
        Err(e) => return usage_error(e),
    };
    let result = cli::run(args);
    cli::signals::settle();
    match result {
        Ok(code) => code,
        Err(e) => {
            eprintln!("neff: error: {e}");
            if json {
                print_error(&ErrorDocument::of(e.as_ref()));
            }
            ExitCode::from(cli::EXIT_ERROR)
        }
    }
}

/// A command line clap refuses (or `--help`, `--version`): clap's text, and
/// with `--json` among the arguments also the error document on stdout.
fn usage_error(e: clap::Error) -> ExitCode {
    use clap::error::ErrorKind;
    if matches!(
        e.kind(),
        ErrorKind::DisplayHelp
            | ErrorKind::DisplayVersion
            | ErrorKind::DisplayHelpOnMissingArgumentOrSubcommand
    ) {
        e.exit();
    }
    let _ = e.print();
    if std::env::args_os().any(|a| a == "--json") {
        let text = e.render().to_string();
        let first = text.lines().next().unwrap_or_default();
        let message = first.strip_prefix("error: ").unwrap_or(first);
        print_error(&ErrorDocument::plain("usage", message.to_string()));
    }
    ExitCode::from(cli::EXIT_ERROR)
}

fn print_error(document: &ErrorDocument) {
    if let Err(e) = cli::print_json(document) {
        eprintln!("neff: error: cannot print the JSON error: {e}");
    }
}
