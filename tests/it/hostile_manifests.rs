//! Hostile manifests in small NEFFs (findings F1–F5): `neff verify`,
//! `inspect` and `unpack`, run as a child process, stay within 256 MiB of
//! peak RSS and a time bound, give the right verdict, and print a capped
//! number of warnings. Each NEFF (at most 1 MiB on disk) is built here: the
//! minimal model with one manifest replaced by highly compressible JSON.
//! Peak RSS is the child's own (`VmHWM`, which it reports as it exits).
//!
//! With `NEFF_WRITE_SEEDS=DIR` set, each NEFF is also written to
//! `DIR/hostile-F<n>.neff`: that is how `fuzz/seeds/read_verify/hostile-F*.neff`
//! were made.

use std::io::Write;
use std::path::Path;
use std::process::Stdio;
use std::time::{Duration, Instant};

use crate::common::*;
use neff::writer::{ZlibGzipWriter, GZIP_HEADER};

const MIB: usize = 1 << 20;
/// Peak RSS allowed to one command.
const RSS_MAX_KIB: u64 = 256 * 1024;
/// Wall time allowed to one command of the (unoptimised) test build; the
/// release build takes well under 10 s on each.
/// (The test build takes about 3 s on the slowest: 10× that.)
const SECONDS_MAX: f64 = 30.0;

/// The minimal model's neff.json without its opening brace, to put after
/// members of one's own.
fn neff_json_rest() -> String {
    format!(", {}", &NEFF_JSON[1..])
}

/// The minimal model with `member` replaced by `head`, `unit` `count` times,
/// then `tail`: streamed through gzip level 9, never held whole.
fn neff_with(member: &str, head: &[u8], unit: &[u8], count: usize, tail: &[u8]) -> Vec<u8> {
    neff_with_also(&[], member, head, unit, count, tail)
}

/// [`neff_with`], with small members replaced as well.
fn neff_with_also(
    replace: &[(&str, &[u8])],
    member: &str,
    head: &[u8],
    unit: &[u8],
    count: usize,
    tail: &[u8],
) -> Vec<u8> {
    let size = head.len() + unit.len() * count + tail.len();
    let mut gz = ZlibGzipWriter::new(Vec::new(), &GZIP_HEADER, 9, 9).unwrap();
    for (name, data) in model_files_without(replace, &[member]) {
        gz.write_all(&tar_header(
            name.as_bytes(),
            b'0',
            &size_field(data.len() as u64),
        ))
        .unwrap();
        let mut block = data.clone();
        block.resize(data.len().div_ceil(512) * 512, 0);
        gz.write_all(&block).unwrap();
    }
    gz.write_all(&tar_header(
        member.as_bytes(),
        b'0',
        &size_field(size as u64),
    ))
    .unwrap();
    gz.write_all(head).unwrap();
    let per_chunk = (MIB / unit.len()).max(1);
    let chunk = unit.repeat(per_chunk);
    let mut left = count;
    while left > 0 {
        let n = left.min(per_chunk);
        gz.write_all(&chunk[..n * unit.len()]).unwrap();
        left -= n;
    }
    gz.write_all(tail).unwrap();
    gz.write_all(&vec![0u8; (512 - size % 512) % 512 + 1024])
        .unwrap();
    let neff = neff_with_payload(2, &gz.finish().unwrap());
    assert!(neff.len() <= MIB, "{} bytes on disk", neff.len());
    neff
}

/// One command's outcome.
struct Run {
    code: Option<i32>,
    stdout: String,
}

/// Runs `neff <args>` (stdout to a file), killing it past the time bound,
/// and checks its own peak RSS ([`report_peak_rss`]) and time.
fn run(args: &[&std::ffi::OsStr], what: &str) -> Run {
    let dir = tempfile::tempdir().unwrap();
    let stdout = dir.path().join("stdout");
    let mut command = neff_command();
    let report = report_peak_rss(&mut command);
    #[allow(clippy::zombie_processes)] // reaped by waitpid below
    let mut child = command
        .args(args)
        .stdout(std::fs::File::create(&stdout).unwrap())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let start = Instant::now();
    let pid = child.id() as libc::pid_t;
    let status = loop {
        let mut status = 0;
        // SAFETY: a plain out-parameter for waitpid.
        let got = unsafe { libc::waitpid(pid, &mut status, libc::WNOHANG) };
        assert!(got >= 0, "{what}: waitpid failed");
        if got == pid {
            break status;
        }
        if start.elapsed().as_secs_f64() > SECONDS_MAX {
            let _ = child.kill();
            let _ = child.wait();
            panic!("{what}: still running after {SECONDS_MAX} s");
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    let (rss, seconds) = (read_peak_rss(&report), start.elapsed().as_secs_f64());
    eprintln!("{what}: peak RSS {rss} KiB, {seconds:.2} s");
    assert!(rss <= RSS_MAX_KIB, "{what}: peak RSS {rss} KiB");
    Run {
        code: libc::WIFEXITED(status).then(|| libc::WEXITSTATUS(status)),
        stdout: std::fs::read_to_string(&stdout).unwrap(),
    }
}

/// `verify --json`, `inspect --json` and `unpack` on `neff`, each bounded;
/// returns verify's report (the all-arch verdict) and its warnings.
fn check_all(name: &str, neff: &[u8]) -> serde_json::Value {
    if let Some(seeds) = std::env::var_os("NEFF_WRITE_SEEDS") {
        std::fs::write(Path::new(&seeds).join(format!("{name}.neff")), neff).unwrap();
    }
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join(format!("{name}.neff"));
    std::fs::write(&path, neff).unwrap();
    let verify = run(
        &["verify".as_ref(), "--json".as_ref(), path.as_os_str()],
        &format!("{name} verify"),
    );
    let report: serde_json::Value = serde_json::from_str(&verify.stdout)
        .unwrap_or_else(|e| panic!("{name}: {e}: {:.2000}", verify.stdout));
    let inspect = run(
        &["inspect".as_ref(), "--json".as_ref(), path.as_os_str()],
        &format!("{name} inspect"),
    );
    assert!(
        inspect.stdout.len() < 4 * MIB,
        "{name}: inspect printed {} bytes",
        inspect.stdout.len()
    );
    let out = dir.path().join("out");
    let unpack = run(
        &[
            "unpack".as_ref(),
            "-o".as_ref(),
            out.as_os_str(),
            path.as_os_str(),
        ],
        &format!("{name} unpack"),
    );
    assert_eq!(unpack.code, Some(0), "{name}: unpack {}", unpack.stdout);
    every_other_command(name, &path, dir.path());
    report
}

/// The commands besides `verify`, `inspect` and `unpack` on the NEFF at
/// `path`, each bounded the same way: lift (`unpack --spec`) and `build` of
/// the lifted spec (both `--keep-refused`, so a refused NEFF is read through),
/// `cat`, `diff` against itself, `corpus --from` and `coverage`.
fn every_other_command(name: &str, path: &Path, dir: &Path) {
    let (lifted, spec) = (dir.join("lifted"), dir.join("lifted.json"));
    let lift = run(
        &[
            "unpack".as_ref(),
            "--keep-refused".as_ref(),
            "--spec".as_ref(),
            spec.as_os_str(),
            "-o".as_ref(),
            lifted.as_os_str(),
            path.as_os_str(),
        ],
        &format!("{name} unpack --spec"),
    );
    assert_eq!(lift.code, Some(0), "{name}: unpack --spec");
    let rebuilt = dir.join("rebuilt.neff");
    let build = run(
        &[
            "build".as_ref(),
            "--keep-refused".as_ref(),
            spec.as_os_str(),
            "-o".as_ref(),
            rebuilt.as_os_str(),
        ],
        &format!("{name} build of the lifted spec"),
    );
    assert_eq!(build.code, Some(0), "{name}: build");
    assert_eq!(
        std::fs::read(&rebuilt).unwrap(),
        std::fs::read(path).unwrap(),
        "{name}: the lifted spec rebuilds other bytes"
    );
    for member in ["neff.json", "sg00/def.json"] {
        run(
            &[
                "cat".as_ref(),
                "--force".as_ref(),
                path.as_os_str(),
                member.as_ref(),
            ],
            &format!("{name} cat {member}"),
        );
    }
    let diff = run(
        &["diff".as_ref(), path.as_os_str(), path.as_os_str()],
        &format!("{name} diff"),
    );
    assert_eq!(diff.code, Some(0), "{name}: diff of a file with itself");
    let corpus = dir.join("corpus");
    run(
        &[
            "corpus".as_ref(),
            "--from".as_ref(),
            path.as_os_str(),
            "--count".as_ref(),
            "2".as_ref(),
            "-o".as_ref(),
            corpus.as_os_str(),
        ],
        &format!("{name} corpus --from"),
    );
    run(
        &[
            "coverage".as_ref(),
            path.as_os_str(),
            "--reference".as_ref(),
            path.as_os_str(),
        ],
        &format!("{name} coverage"),
    );
}

/// The warnings of every per-arch report in `verify --json` output.
fn warnings(report: &serde_json::Value) -> Vec<String> {
    let mut out = Vec::new();
    collect_warnings(report, &mut out);
    out
}

fn collect_warnings(v: &serde_json::Value, out: &mut Vec<String>) {
    match v {
        serde_json::Value::Object(map) => {
            for (k, v) in map {
                match (k.as_str(), v) {
                    ("warnings", serde_json::Value::Array(ws)) => {
                        out.extend(ws.iter().filter_map(|w| w.as_str()).map(str::to_string))
                    }
                    _ => collect_warnings(v, out),
                }
            }
        }
        serde_json::Value::Array(items) => items.iter().for_each(|v| collect_warnings(v, out)),
        _ => {}
    }
}

fn accepted(report: &serde_json::Value) -> bool {
    report.to_string().contains("\"accepted\":true")
        && !report.to_string().contains("\"accepted\":false")
}

/// The repeated-key warnings: at most 16 listed and one count line, per
/// arch report, each short.
fn assert_capped_repeats(name: &str, report: &serde_json::Value, repeats: usize) {
    let all = warnings(report);
    let listed = all
        .iter()
        .filter(|w| w.contains("appears more than once"))
        .count();
    let counted: Vec<&String> = all
        .iter()
        .filter(|w| w.contains("more keys appear more than once"))
        .collect();
    assert!(!counted.is_empty(), "{name}: no count line in {all:?}");
    assert!(
        listed <= 16 * counted.len(),
        "{name}: {listed} repeats listed for {} reports",
        counted.len()
    );
    let more = format!("neff.json: {} more keys", repeats - 16);
    assert!(
        counted.iter().all(|w| w.starts_with(&more)),
        "{name}: {counted:?}"
    );
    assert!(all.iter().all(|w| w.len() < 400), "{name}: a long warning");
}

#[test]
fn f1_one_key_repeated_over_15_mib_is_read_once_and_warned_about_16_times() {
    let repeats = 15 * MIB / 8;
    let neff = neff_with(
        "neff.json",
        br#"{"a": 0"#,
        br#", "a": 0"#,
        repeats,
        neff_json_rest().as_bytes(),
    );
    let report = check_all("hostile-F1", &neff);
    assert!(accepted(&report), "{:.3000}", report.to_string());
    assert_capped_repeats("F1", &report, repeats);
}

#[test]
fn f6_an_unread_array_of_two_million_strings_in_def_json_is_lifted_as_bytes() {
    // def.json with a key no reader knows, holding 2 Mi strings: the runtime
    // and the loader skip it; the lift keeps the manifest as bytes instead
    // of typing a 2-million-value tree.
    let def = DEF_JSON.trim_end();
    let neff = neff_with(
        "sg00/def.json",
        format!(r#"{}, "unread": ["a""#, &def[..def.len() - 1]).as_bytes(),
        br#", "a""#,
        2 << 20,
        b"]}",
    );
    let report = check_all("hostile-F6", &neff);
    assert!(accepted(&report), "{:.3000}", report.to_string());
}

#[test]
fn f2_repeats_under_a_4_mib_key_are_warned_about_with_the_key_cut_short() {
    let key = "k".repeat(4 * MIB);
    let repeats = 100_000;
    let neff = neff_with(
        "neff.json",
        format!(r#"{{"{key}": {{"b": 0"#).as_bytes(),
        br#", "b": 0"#,
        repeats,
        format!("}}{}", neff_json_rest()).as_bytes(),
    );
    let report = check_all("hostile-F2", &neff);
    assert!(accepted(&report), "{:.3000}", report.to_string());
    assert_capped_repeats("F2", &report, repeats);
    assert!(
        warnings(&report)
            .iter()
            .any(|w| w.contains(&format!("… ({} bytes).b appears", 4 * MIB))),
        "{:?}",
        warnings(&report).first()
    );
}

#[test]
fn f3_a_3_5_m_element_array_under_an_8_mib_key_is_linear() {
    let key = "k".repeat(8 * MIB);
    let neff = neff_with(
        "neff.json",
        format!(r#"{{"{key}": [0"#).as_bytes(),
        b",0",
        3_500_000,
        format!("]{}", neff_json_rest()).as_bytes(),
    );
    let report = check_all("hostile-F3", &neff);
    assert!(accepted(&report), "{:.3000}", report.to_string());
    assert!(warnings(&report).is_empty(), "{:?}", warnings(&report));
}

#[test]
fn f4_two_million_small_objects_are_refused_by_the_value_limit() {
    let neff = neff_with("neff.json", b"[", br#"{"a":0},"#, 15 * MIB / 8, b"0]");
    let report = check_all("hostile-F4", &neff);
    let text = report.to_string();
    assert!(!accepted(&report));
    assert!(text.contains("\"gate\":\"G14\""), "{text:.3000}");
    assert!(
        text.contains("Failed to parse neff.json: more than 4194304 JSON values"),
        "{text:.3000}"
    );
}

#[test]
fn f5_a_90_mib_manifest_read_again_is_refused_by_the_value_limit() {
    // (F5 had 120 MiB; 90 keeps the NEFF under 100 KB, a fuzz seed.)
    let neff = neff_with("neff.json", b"[", b"0,", 45 * MIB, b"0]");
    let report = check_all("hostile-F5", &neff);
    let text = report.to_string();
    assert!(!accepted(&report));
    assert!(text.contains("\"gate\":\"G14\""), "{text:.3000}");
    assert!(
        text.contains("Failed to parse neff.json: more than 4194304 JSON values"),
        "{text:.3000}"
    );
}

#[test]
fn graphs_sharing_one_15_mib_def_json_are_refused_by_the_read_limit() {
    // 100 graphs would have it parsed 100 times: 1.5 GiB.
    let graphs: Vec<String> = (0..100)
        .map(|i| format!(r#"{{"definition": "sg00/def.json", "name": "g{i}"}}"#))
        .collect();
    let kelf = format!(
        r#"{{"graphs": [{}], "version": "0.5", "target": "*"}}"#,
        graphs.join(", ")
    );
    let neff = neff_with_also(
        &[("kelf-0.json", kelf.as_bytes())],
        "sg00/def.json",
        DEF_JSON.as_bytes(),
        b" ",
        15 * MIB,
        b"",
    );
    let report = check_all("shared-def", &neff);
    let text = report.to_string();
    assert!(!accepted(&report));
    assert!(text.contains("\"gate\":\"G19\""), "{text:.3000}");
    assert!(
        text.contains("fail to allocate memory(15728")
            && text.contains("more than this verifier reads"),
        "{text:.3000}"
    );
}

#[test]
fn a_million_inputs_named_by_one_1_mib_node_name_are_checked_but_listed_within_bounds() {
    let (before, after) = NEFF_JSON.split_once(r#""arg_nodes": [0"#).unwrap();
    let name = "x".repeat(MIB);
    let head = format!(
        r#"{}"arg_nodes": [0"#,
        before.replacen(r#""name": "x""#, &format!(r#""name": "{name}""#), 1)
    );
    let neff = neff_with(
        "neff.json",
        head.as_bytes(),
        b",0",
        1_000_000,
        after.as_bytes(),
    );
    let report = check_all("many-inputs", &neff);
    assert!(accepted(&report), "{:.3000}", report.to_string());
    assert!(
        warnings(&report)
            .iter()
            .any(|w| w.contains("more input and output tensors are checked but not listed")),
        "{:?}",
        warnings(&report)
    );
}
