//! The `neff` command-line tool.

mod cli;

use std::process::ExitCode;

use clap::Parser;

fn main() -> ExitCode {
    restore_sigpipe();
    let args = cli::Cli::parse();
    match cli::run(args) {
        Ok(code) => code,
        Err(e) => {
            eprintln!("neff: error: {e}");
            ExitCode::from(cli::EXIT_ERROR)
        }
    }
}

/// Restores the default SIGPIPE action, so `neff … | head` ends quietly
/// instead of panicking on a closed pipe (Rust ignores SIGPIPE by default).
#[cfg(unix)]
fn restore_sigpipe() {
    const SIGPIPE: i32 = 13;
    const SIG_DFL: usize = 0;
    extern "C" {
        fn signal(signum: i32, handler: usize) -> usize;
    }
    // SAFETY: `signal` with SIG_DFL only resets the disposition of SIGPIPE; it
    // runs before any other thread exists.
    unsafe {
        signal(SIGPIPE, SIG_DFL);
    }
}

#[cfg(not(unix))]
fn restore_sigpipe() {}
