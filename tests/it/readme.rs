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
