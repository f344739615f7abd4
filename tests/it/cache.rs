//! `neff cache ls` and `neff cache verify` on caches built in each layout:
//! every entry state, orphans, the totals, the exit status and `--list`.

use std::fs;
use std::path::Path;
use std::time::{Duration, SystemTime};

use serde_json::Value;

use crate::common::*;

/// A libneuronxla cache under `root` with one entry per state, its NEFFs
/// built from the examples (`good` accepted, a cut copy refused).
fn libneuronxla_cache(root: &Path, good: &Path) {
    let version = root.join("neuronxcc-2.21.18209.0+043b1bf7");
    let entry = |key: &str, files: &[(&str, &[u8])]| {
        let dir = version.join(format!("MODULE_{key}"));
        fs::create_dir_all(&dir).unwrap();
        for (name, bytes) in files {
            fs::write(dir.join(name), bytes).unwrap();
        }
        dir
    };
    let neff = fs::read(good).unwrap();
    fn with<'a>(more: &[(&'a str, &'a [u8])]) -> Vec<(&'a str, &'a [u8])> {
        let inputs: [(&str, &[u8]); 2] = [
            ("model.hlo_module.pb", b"hlo"),
            ("compile_flags.json", b"[]"),
        ];
        [&inputs[..], more].concat()
    }
    entry(
        "1111+aaaa",
        &with(&[("model.neff", &neff), ("model.done", b"")]),
    );
    entry(
        "2222+aaaa",
        &with(&[("model.log", b"error: out of memory")]),
    );
    entry("3333+aaaa", &with(&[("model.neff", &neff)]));
    entry("4444+aaaa", &with(&[("model.hlo_module.pb.lock", b"")]));
    let stale = entry("5555+aaaa", &with(&[("model.hlo_module.pb.lock", b"")]));
    let old = SystemTime::now() - Duration::from_secs(7200);
    let lock = fs::File::options()
        .write(true)
        .open(stale.join("model.hlo_module.pb.lock"))
        .unwrap();
    lock.set_modified(old).unwrap();
    entry("6666+aaaa", &[]);
    entry(
        "7777+aaaa",
        &with(&[
            ("model.neff", &neff[..neff.len() - 100]),
            ("model.done", b""),
        ]),
    );
    fs::write(root.join("stray.txt"), b"x").unwrap();
}

/// The allreduce example built into `dir/good.neff` and a libneuronxla
/// cache of it at `dir/cache`; the cache's root.
fn built_cache(dir: &Path) -> std::path::PathBuf {
    let root = dir.join("cache");
    let spec = Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/allreduce.json");
    let good = dir.join("good.neff");
    assert_eq!(code(&neff(&["build", s(&spec), "-o", s(&good), "-q"])), 0);
    libneuronxla_cache(&root, &good);
    root
}

fn listing(args: &[&str]) -> (i32, Value) {
    let out = neff(args);
    let value = serde_json::from_slice(&out.stdout).unwrap_or_else(|_| panic!("{}", stderr(&out)));
    (code(&out), value)
}

#[test]
fn ls_and_verify_tell_every_state_of_a_libneuronxla_cache() {
    let dir = tempfile::tempdir().unwrap();
    let root = built_cache(dir.path());
    let (code_ls, ls) = listing(&["cache", "ls", s(&root), "--json"]);
    assert_eq!(code_ls, 0);
    assert_eq!(ls["layout"], "libneuronxla");
    let states: Vec<(&str, &str)> = ls["entries"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| (e["module"].as_str().unwrap(), e["state"].as_str().unwrap()))
        .collect();
    assert_eq!(
        states,
        [
            ("1111", "ok"),
            ("2222", "failed"),
            ("3333", "incomplete"),
            ("4444", "locked"),
            ("5555", "stale_lock"),
            ("6666", "empty"),
            ("7777", "refused"),
        ]
    );
    let ok = &ls["entries"][0];
    assert_eq!(ok["compiler"], "2.21.18209.0+043b1bf7");
    assert_eq!(
        (ok["flags"].as_str(), ok["graphs"].as_u64()),
        (Some("aaaa"), Some(1))
    );
    assert!(ok["uuid"].as_str().is_some_and(|u| u.len() == 36));
    assert_eq!(ls["orphans"], serde_json::json!(["stray.txt"]));
    assert_eq!(ls["totals"]["2.21.18209.0+043b1bf7"]["ok"], 1);

    let (code_verify, _) = listing(&["cache", "verify", s(&root), "--json"]);
    assert_eq!(code_verify, 1, "a refused entry is exit 1, as verify");
    let out = neff(&["cache", "verify", s(&root), "--list", "ok"]);
    assert_eq!(
        stdout(&out).lines().collect::<Vec<_>>(),
        ["neuronxcc-2.21.18209.0+043b1bf7/MODULE_1111+aaaa"]
    );
    let text = stdout(&neff(&["cache", "ls", s(&root)]));
    assert!(
        text.contains("libneuronxla layout, 7 entries") && text.contains("orphan: stray.txt"),
        "{text}"
    );
}

#[test]
fn any_other_folder_lists_each_neff_as_an_entry() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("compiled");
    fs::create_dir_all(root.join("sub")).unwrap();
    let spec = Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/weights.json");
    let neff_file = root.join("sub/a.neff");
    assert_eq!(
        code(&neff(&["build", s(&spec), "-o", s(&neff_file), "-q"])),
        0
    );
    let (code_ls, ls) = listing(&["cache", "ls", s(&root), "--json"]);
    assert_eq!(code_ls, 0);
    assert_eq!(ls["layout"], "files");
    assert_eq!(ls["entries"][0]["path"], "sub/a.neff");
    assert_eq!(ls["entries"][0]["state"], "ok");
}

#[test]
#[cfg_attr(
    not(neff_real_neffs),
    ignore = "real NEFFs missing: set NEFF_REAL_NEFFS (default ../shared/real-neffs), see tests/real-neffs.md"
)]
fn a_wrapped_neff_hlo_entry_is_read_as_its_neff() {
    let dir = tempfile::tempdir().unwrap();
    let entry = dir
        .path()
        .join("neuronxcc-2.24.5133.0+58f8de22/MODULE_55513e7947a621aed127+6af34228");
    fs::create_dir_all(&entry).unwrap();
    fs::copy(
        real_neffs().join("ncc2.24_nki-moe-megakernel_wrapped_neff.hlo"),
        entry.join("wrapped_neff.hlo"),
    )
    .unwrap();
    fs::write(entry.join("model.done"), b"").unwrap();
    let (_, ls) = listing(&["cache", "ls", s(dir.path()), "--json"]);
    let e = &ls["entries"][0];
    assert_eq!(
        (
            e["state"].as_str(),
            e["target"].as_str(),
            e["graphs"].as_u64()
        ),
        (Some("ok"), Some("mariana"), Some(2))
    );
}

#[test]
fn prune_removes_what_it_is_told_and_nothing_a_compile_holds() {
    let dir = tempfile::tempdir().unwrap();
    let root = built_cache(dir.path());
    let version = root.join("neuronxcc-2.21.18209.0+043b1bf7");
    let entries = || {
        let mut names: Vec<String> = fs::read_dir(&version)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        names.sort();
        names
    };
    let all = entries();
    let r = neff(&[
        "cache",
        "prune",
        s(&root),
        "--failed",
        "--refused",
        "--dry-run",
    ]);
    assert_eq!(code(&r), 0, "{}", stderr(&r));
    assert!(
        stdout(&r).contains("would remove 2 entries"),
        "{}",
        stdout(&r)
    );
    assert_eq!(entries(), all, "a dry run removes nothing");

    // A compile holds the stale-looking lock (flock) and keeps writing.
    let held = version.join("MODULE_5555+aaaa");
    let lock = fs::File::open(held.join("model.hlo_module.pb.lock")).unwrap();
    #[cfg(unix)]
    {
        use std::os::fd::AsRawFd;
        // SAFETY: flock on a file this test owns.
        assert_eq!(unsafe { libc::flock(lock.as_raw_fd(), libc::LOCK_EX) }, 0);
    }
    let writing = std::thread::spawn({
        let held = held.clone();
        move || {
            for i in 0..50 {
                fs::write(held.join(format!("part-{i}")), vec![i as u8; 4096]).unwrap();
            }
        }
    });
    let r = neff(&[
        "cache",
        "prune",
        s(&root),
        "--failed",
        "--refused",
        "--stale-locks",
    ]);
    writing.join().unwrap();
    assert_eq!(code(&r), 0, "{}", stderr(&r));
    assert!(
        stdout(&r).contains(
            "kept neuronxcc-2.21.18209.0+043b1bf7/MODULE_5555+aaaa: a compile holds its lock"
        ),
        "{}",
        stdout(&r)
    );
    let left = entries();
    assert!(
        !left.contains(&"MODULE_2222+aaaa".to_string())
            && !left.contains(&"MODULE_7777+aaaa".to_string()),
        "{left:?}"
    );
    assert!(
        left.contains(&"MODULE_5555+aaaa".to_string())
            && left.contains(&"MODULE_1111+aaaa".to_string())
    );
    assert_eq!(
        fs::read_dir(&held).unwrap().count(),
        2 + 1 + 50,
        "the held entry is whole"
    );
    assert!(!root.join(".neff-prune").exists(), "the trash is gone");
    drop(lock);
    // Released, the stale lock's entry goes; a compiler-version cut takes the rest.
    let r = neff(&[
        "cache",
        "prune",
        s(&root),
        "--stale-locks",
        "--compiler-below",
        "2.22",
    ]);
    assert_eq!(code(&r), 0, "{}", stderr(&r));
    assert_eq!(
        entries(),
        ["MODULE_4444+aaaa"],
        "only the entry a fresh lock holds is left"
    );
}

/// A protobuf field: `tag` with wire type 2 (bytes) holding `body`.
fn field(tag: u8, body: &[u8]) -> Vec<u8> {
    let mut out = vec![(tag << 3) | 2];
    let mut len = body.len();
    loop {
        let byte = (len & 0x7f) as u8;
        len >>= 7;
        out.push(if len > 0 { byte | 0x80 } else { byte });
        if len == 0 {
            break;
        }
    }
    out.extend_from_slice(body);
    out
}

/// An `xla.HloModuleProto` of one computation `main`, each instruction a
/// (name, opcode, dims) of element type 11 (F32).
fn hlo_module(instructions: &[(&str, &str, &[u8])]) -> Vec<u8> {
    let mut computation = field(1, b"main");
    for (name, opcode, dims) in instructions {
        let shape = [vec![0x10, 11], field(3, dims)].concat();
        let instruction = [
            field(1, name.as_bytes()),
            field(2, opcode.as_bytes()),
            field(3, &shape),
        ]
        .concat();
        computation.extend(field(2, &instruction));
    }
    [field(1, b"module"), field(3, &computation)].concat()
}

#[test]
fn explain_names_the_compiler_the_flags_and_the_first_structural_difference() {
    let dir = tempfile::tempdir().unwrap();
    let entry = |version: &str, key: &str, flags: &str, hlo: Vec<u8>| {
        let path = dir.path().join(format!("neuronxcc-{version}/MODULE_{key}"));
        fs::create_dir_all(&path).unwrap();
        fs::write(path.join("compile_flags.json"), flags).unwrap();
        fs::write(path.join("model.hlo_module.pb"), hlo).unwrap();
        path
    };
    let a = entry(
        "2.21.0+1",
        "1+a",
        r#"["--model-type=transformer", "-O1"]"#,
        hlo_module(&[("p0", "parameter", &[4]), ("sum", "add", &[4])]),
    );
    let renamed = entry(
        "2.22.0+2",
        "2+b",
        r#"["--model-type=transformer", "-O2"]"#,
        hlo_module(&[("x", "parameter", &[4]), ("y", "add", &[4])]),
    );
    let other = entry(
        "2.21.0+1",
        "3+a",
        r#"["--model-type=transformer", "-O1"]"#,
        hlo_module(&[("p0", "parameter", &[4]), ("sum", "multiply", &[4])]),
    );
    let out = neff(&["cache", "explain", s(&a), s(&renamed), "--json"]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let why: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(why["compiler"], serde_json::json!(["2.21.0+1", "2.22.0+2"]));
    assert_eq!(
        (
            why["flags_only_first"][0].as_str(),
            why["flags_only_second"][0].as_str()
        ),
        (Some("-O1"), Some("-O2"))
    );
    assert_eq!(why["hlo"], "only names, ids, metadata or paths differ");
    let text = stdout(&neff(&["cache", "explain", s(&a), s(&other)]));
    assert!(
        text.contains(
            "HLO: computation \"main\", instruction \"sum\": add t11[4] against multiply t11[4]"
        ),
        "{text}"
    );
    assert!(
        !text.contains("compiler:") && !text.contains("flag only"),
        "{text}"
    );
}

#[test]
fn a_vllm_cache_and_an_optimum_registry_are_read_and_pruned() {
    let dir = tempfile::tempdir().unwrap();
    let spec = Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/allreduce.json");
    let good = dir.path().join("good.neff");
    assert_eq!(code(&neff(&["build", s(&spec), "-o", s(&good), "-q"])), 0);
    let vllm = dir.path().join("compile_cache");
    let key = |k: char| vllm.join(std::iter::repeat_n(k, 32).collect::<String>());
    fs::create_dir_all(key('a').join("sub")).unwrap();
    fs::copy(&good, key('a').join("sub/model.neff")).unwrap();
    fs::write(key('a').join(".compilation_complete"), b"").unwrap();
    fs::create_dir_all(key('b')).unwrap();
    fs::copy(&good, key('b').join("model.neff")).unwrap();
    let (_, ls) = listing(&["cache", "ls", s(&vllm), "--json"]);
    assert_eq!(ls["layout"], "vllm");
    let states: Vec<&str> = ls["entries"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["state"].as_str().unwrap())
        .collect();
    assert_eq!(states, ["ok", "incomplete"]);
    assert_eq!(ls["entries"][0]["graphs"], 1);
    let r = neff(&["cache", "prune", s(&vllm), "--older-than", "0", "--dry-run"]);
    assert!(
        stdout(&r).contains("would remove 2 entries"),
        "{}",
        stdout(&r)
    );

    // optimum-neuron's registry beside libneuronxla entries: listed, not orphans.
    let hub = dir.path().join("hub");
    let version = hub.join("neuronxcc-2.21.0+abc");
    fs::create_dir_all(version.join("MODULE_1+a")).unwrap();
    fs::copy(&good, version.join("MODULE_1+a/model.neff")).unwrap();
    fs::write(version.join("MODULE_1+a/model.done"), b"").unwrap();
    let lookup = version.join("0_REGISTRY/0.0.28/llama/meta-llama/Llama-2-7b-hf");
    fs::create_dir_all(&lookup).unwrap();
    fs::write(lookup.join("0123abcd.json"), b"{}").unwrap();
    let (_, ls) = listing(&["cache", "ls", s(&hub), "--json"]);
    assert_eq!(ls["orphans"], serde_json::json!([]));
    assert_eq!(ls["registry"].as_array().unwrap().len(), 1);
    assert_eq!(ls["entries"][0]["state"], "ok");
}

#[test]
fn explain_takes_a_module_file_with_its_flags_and_compares_vllm_entries_by_their_files() {
    let dir = tempfile::tempdir().unwrap();
    let entry = dir.path().join("neuronxcc-2.21.0+1/MODULE_1+a");
    fs::create_dir_all(&entry).unwrap();
    fs::write(entry.join("compile_flags.json"), r#"["-O1"]"#).unwrap();
    fs::write(
        entry.join("model.hlo_module.pb"),
        hlo_module(&[("p", "parameter", &[2])]),
    )
    .unwrap();
    let module = dir.path().join("mine.pb");
    fs::write(&module, hlo_module(&[("q", "parameter", &[3])])).unwrap();
    let flags = dir.path().join("flags.txt");
    fs::write(&flags, "-O2 --fast").unwrap();
    let out = neff(&[
        "cache",
        "explain",
        s(&entry),
        s(&module),
        "--flags-b",
        s(&flags),
        "--json",
    ]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let why: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(why["flags_only_first"], serde_json::json!(["-O1"]));
    assert_eq!(
        why["flags_only_second"],
        serde_json::json!(["-O2", "--fast"])
    );
    assert!(
        why["hlo"]
            .as_str()
            .unwrap()
            .contains("parameter t11[2] against parameter t11[3]"),
        "{why}"
    );
    // vLLM entries hold no module: what they hold is compared.
    let (a, b) = (dir.path().join("a"), dir.path().join("b"));
    for (d, neff_bytes) in [(&a, &b"one"[..]), (&b, &b"two"[..])] {
        fs::create_dir_all(d).unwrap();
        fs::write(d.join("model.neff"), neff_bytes).unwrap();
        fs::write(d.join(".compilation_complete"), b"").unwrap();
    }
    fs::write(b.join("extra.txt"), b"x").unwrap();
    let text = stdout(&neff(&["cache", "explain", s(&a), s(&b)]));
    assert!(
        text.contains("model.neff differs") && text.contains("extra.txt only in the second"),
        "{text}"
    );
}

#[test]
fn a_symlink_loop_inside_a_cache_is_not_followed() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("compiled");
    fs::create_dir_all(root.join("a")).unwrap();
    std::os::unix::fs::symlink(&root, root.join("a/loop")).unwrap();
    let vllm = dir.path().join("vllm");
    let key = vllm.join("0".repeat(32));
    fs::create_dir_all(&key).unwrap();
    std::os::unix::fs::symlink(&key, key.join("loop")).unwrap();
    for cache in [&root, &vllm] {
        let (code_ls, ls) = listing(&["cache", "ls", s(cache), "--json"]);
        assert_eq!(code_ls, 0, "{ls}");
    }
}
