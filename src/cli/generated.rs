//! `neff completions` and `neff man`: shell completions and man pages,
//! generated from the clap definitions so they cannot drift from `--help`.

use std::path::PathBuf;

use clap::{Args, CommandFactory};
use clap_complete::Shell;

use super::{prepare_output_dir, Cli, FsyncArgs, EXIT_OK};

/// Print a shell completion script on stdout.
///
/// Install it where the shell looks, e.g. `neff completions bash >
/// /etc/bash_completion.d/neff`, `neff completions zsh > "${fpath[1]}/_neff"` or
/// `neff completions fish > ~/.config/fish/completions/neff.fish`.
#[derive(Args, Debug)]
pub struct CompletionsArgs {
    /// The shell: bash, zsh, fish, elvish or powershell.
    #[arg(value_enum)]
    shell: Shell,
}

/// Print the man page (roff) on stdout, or write one page per command.
///
/// Without -o, prints neff(1), the top-level page; `neff man | man -l -` shows it.
/// With -o DIR, writes neff.1 and one page per subcommand (neff-pack.1,
/// neff-barrier-decode.1, …) into DIR.
#[derive(Args, Debug)]
pub struct ManArgs {
    /// Write every page into this folder instead of printing neff(1).
    #[arg(short, long, value_name = "DIR")]
    output: Option<PathBuf>,
    /// Write into a non-empty DIR, replacing pages of the same name.
    #[arg(long, requires = "output")]
    force: bool,
    #[command(flatten)]
    fsync: FsyncArgs,
    /// Print nothing on success.
    #[arg(short, long)]
    quiet: bool,
}

/// The pages' source line: `neff VERSION`, on the subcommands' pages too.
static MAN_SOURCE: std::sync::LazyLock<String> =
    std::sync::LazyLock::new(|| format!("neff {}", super::VERSION.as_str()));

/// `neff completions SHELL`.
pub fn completions(args: CompletionsArgs) -> Result<u8, Box<dyn std::error::Error>> {
    let mut command = Cli::command();
    clap_complete::generate(args.shell, &mut command, "neff", &mut std::io::stdout());
    Ok(EXIT_OK)
}

/// `neff man [-o DIR]`.
pub fn man(args: ManArgs) -> Result<u8, Box<dyn std::error::Error>> {
    let mut command = Cli::command();
    command.build();
    let Some(dir) = args.output else {
        clap_mangen::Man::new(command).render(&mut std::io::stdout())?;
        return Ok(EXIT_OK);
    };
    prepare_output_dir(&dir, args.force)?;
    let mut pages = Vec::new();
    collect_pages(&command, &mut pages);
    for (name, page) in &pages {
        let mut roff = Vec::new();
        clap_mangen::Man::new(page.clone())
            .source(MAN_SOURCE.as_str())
            .render(&mut roff)?;
        neff::writer::fs::write_atomic_with(&dir.join(format!("{name}.1")), &roff, false)?;
    }
    args.fsync.sync_folder(&dir)?;
    if !args.quiet {
        eprintln!("wrote {} man pages into {}", pages.len(), dir.display());
    }
    Ok(EXIT_OK)
}

/// `command` and its subcommands (but `help`), each with its page name: its
/// display name (`neff-barrier-decode`), set by `Command::build`.
fn collect_pages(command: &clap::Command, out: &mut Vec<(String, clap::Command)>) {
    let name = command.get_display_name().unwrap_or(command.get_name());
    out.push((name.to_string(), command.clone()));
    for sub in command.get_subcommands().filter(|s| s.get_name() != "help") {
        collect_pages(sub, out);
    }
}
