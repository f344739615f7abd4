//! The README's quick start runs as written: every `cargo run --release -- …`
//! command of its first shell block, with this build's `neff` in place of
//! `cargo run --release --`, in a folder where `examples/` is the
//! repository's.

use std::path::Path;

#[test]
fn the_quick_start_commands_run_as_written() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let readme = std::fs::read_to_string(root.join("README.md")).unwrap();
    let start = readme
        .find("## Quick start")
        .expect("a Quick start section");
    let block = &readme[start..];
    let open = block.find("```sh\n").expect("a shell block") + 6;
    let close = open + block[open..].find("```").unwrap();
    let commands: Vec<&str> = block[open..close]
        .lines()
        .filter(|l| l.starts_with("cargo run --release -- "))
        .flat_map(|l| l.split("&&"))
        .map(str::trim)
        .collect();
    assert!(commands.len() >= 2, "{commands:?}");
    let dir = tempfile::tempdir().unwrap();
    std::os::unix::fs::symlink(root.join("examples"), dir.path().join("examples")).unwrap();
    for command in commands {
        let args: Vec<&str> = command
            .strip_prefix("cargo run --release -- ")
            .unwrap_or_else(|| panic!("{command}"))
            .split_whitespace()
            .collect();
        let out = crate::common::neff_command()
            .args(&args)
            .current_dir(dir.path())
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{command}: {}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
    }
    assert!(dir.path().join("allreduce.neff").is_file());
}

/// The README is a front page: at most 400 lines.
#[test]
fn the_readme_fits_on_a_front_page() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let lines = std::fs::read_to_string(root.join("README.md"))
        .unwrap()
        .lines()
        .count();
    assert!(lines <= 400, "README.md has {lines} lines (at most 400)");
}

/// The CHANGELOG is Keep a Changelog: versions, then only its kinds of
/// change, and no notes on how the work was done (issues, sessions, the
/// machine it was measured on).
#[test]
fn the_changelog_lists_changes_by_version_and_kind_only() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let text = std::fs::read_to_string(root.join("CHANGELOG.md")).unwrap();
    let kinds = [
        "Added",
        "Changed",
        "Deprecated",
        "Removed",
        "Fixed",
        "Security",
    ];
    let mut bad = Vec::new();
    for (i, line) in text.lines().enumerate() {
        if let Some(kind) = line.strip_prefix("### ") {
            if !kinds.contains(&kind) {
                bad.push(format!(
                    "{}: heading {kind:?} is not a Keep a Changelog kind",
                    i + 1
                ));
            }
        }
        if let Some(version) = line.strip_prefix("## ") {
            if !version.starts_with('[') {
                bad.push(format!("{}: version heading {version:?}", i + 1));
            }
        }
        let lower = line.to_lowercase();
        let words: Vec<&str> = lower.split(|c: char| !c.is_ascii_alphanumeric()).collect();
        for word in [
            "issue", "issues", "session", "sessions", "machine", "vm", "here",
        ] {
            if words.contains(&word) {
                bad.push(format!("{}: {word:?} in {line:?}", i + 1));
            }
        }
    }
    assert!(bad.is_empty(), "CHANGELOG.md:\n{}", bad.join("\n"));
}

/// The README's Python set-up makes `.venv/` in the clone: git ignores it.
#[test]
fn git_ignores_the_readmes_virtual_environment() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let readme = std::fs::read_to_string(root.join("README.md")).unwrap();
    assert!(
        readme.contains("python3 -m venv .venv"),
        "the README's venv moved"
    );
    let ignore = std::fs::read_to_string(root.join(".gitignore")).unwrap();
    for venv in [".venv/", "venv/"] {
        assert!(
            ignore.lines().any(|l| l.trim() == venv),
            ".gitignore lacks {venv}"
        );
    }
}

/// The `neff …` commands of the README's shell examples (after "Examples,
/// one per kind of user"), each `&&`-separated part, with the comments cut.
fn example_commands() -> Vec<String> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let readme = std::fs::read_to_string(root.join("README.md")).unwrap();
    let start = readme
        .find("## Examples, one per kind of user")
        .expect("the examples section");
    let mut commands = Vec::new();
    for block in readme[start..].split("```sh\n").skip(1) {
        let block = &block[..block.find("```").unwrap()];
        for line in block.lines() {
            let line = line.split(" #").next().unwrap_or_default().trim();
            commands.extend(
                line.split("&&")
                    .map(str::trim)
                    .filter(|c| c.starts_with("neff "))
                    .map(str::to_string),
            );
        }
    }
    commands
}

/// Runs `command` (`neff ARGS…`) in `dir`, `~/.cache/neuron/` standing for
/// `cache/`; returns its exit code and output.
fn run_example(dir: &Path, command: &str) -> (i32, String) {
    let args: Vec<String> = command
        .split_whitespace()
        .skip(1)
        .map(|a| a.replace("~/.cache/neuron/", "cache/"))
        .collect();
    let out = crate::common::neff_command()
        .args(&args)
        .current_dir(dir)
        .output()
        .unwrap();
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    (out.status.code().unwrap_or(-1), text)
}

/// A folder holding what the examples name: `examples/`, and built NEFFs as
/// `real.neff`, in `real-neffs/` and in `cache/`.
fn example_folder() -> tempfile::TempDir {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    std::os::unix::fs::symlink(root.join("examples"), d.join("examples")).unwrap();
    let built = d.join("real.neff");
    let (code, text) = run_example(d, "neff build examples/weights.json -o real.neff -q");
    assert_eq!(code, 0, "{text}");
    for folder in ["real-neffs", "cache"] {
        std::fs::create_dir(d.join(folder)).unwrap();
        std::fs::copy(&built, d.join(folder).join("m.neff")).unwrap();
    }
    dir
}

/// Every shell example runs as written, on built NEFFs; those naming a file
/// that carries a NEFF (`model.neuron`, `wrapped_neff.hlo`) on the real ones.
#[test]
fn every_shell_example_of_the_readme_runs() {
    let commands = example_commands();
    assert!(commands.len() >= 8, "{commands:?}");
    let dir = example_folder();
    for command in commands
        .iter()
        .filter(|c| !c.contains(".neuron") && !c.contains(".hlo"))
    {
        let (code, text) = run_example(dir.path(), command);
        // `diff` of two different NEFFs says so with exit 1.
        let ok = code == 0 || (command.starts_with("neff diff") && code == 1);
        assert!(ok, "{command}: exit {code}\n{text}");
    }
}

#[test]
#[cfg_attr(
    not(neff_real_neffs),
    ignore = "real NEFFs missing: set NEFF_REAL_NEFFS (default ../shared/real-neffs), see tests/real-neffs.md"
)]
fn the_readme_examples_on_carrier_files_run_on_the_real_ones() {
    let dir = example_folder();
    let real = crate::common::real_neffs();
    for (carrier, name) in [
        ("ncc2.6_optimum-neuron_neuronx_model.neuron", "model.neuron"),
        (
            "ncc2.24_nki-moe-megakernel_wrapped_neff.hlo",
            "wrapped_neff.hlo",
        ),
    ] {
        std::fs::copy(real.join(carrier), dir.path().join(name)).unwrap();
    }
    let commands = example_commands();
    let carried: Vec<&String> = commands
        .iter()
        .filter(|c| c.contains(".neuron") || c.contains(".hlo"))
        .collect();
    assert!(!carried.is_empty());
    for command in carried {
        let (code, text) = run_example(dir.path(), command);
        assert_eq!(code, 0, "{command}\n{text}");
    }
}

/// The README and the documentation describe the tool as it is: no notes on
/// how the work was done (issue numbers, sessions, rounds).
#[test]
fn the_docs_hold_no_history_of_the_work() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut files = vec![root.join("README.md"), root.join("python/README.md")];
    for entry in std::fs::read_dir(root.join("docs")).unwrap() {
        files.push(entry.unwrap().path());
    }
    let mut bad = Vec::new();
    for file in files {
        let text = std::fs::read_to_string(&file).unwrap();
        for (i, line) in text.lines().enumerate() {
            let lower = line.to_lowercase();
            let words: Vec<&str> = lower.split(|c: char| !c.is_ascii_alphanumeric()).collect();
            let issue = words
                .windows(2)
                .any(|w| w[0] == "issue" && w[1].parse::<u32>().is_ok());
            let session = words.iter().any(|w| *w == "session" || *w == "sessions");
            if issue || session || lower.contains("this round") {
                bad.push(format!("{}:{}: {line}", file.display(), i + 1));
            }
        }
    }
    assert!(bad.is_empty(), "{}", bad.join("\n"));
}
