//! Hostile containers: memory stays bounded and every refusal is clean.

use std::io::Write;

use crate::common::*;
use neff::loader::{load_buffer, RuntimeProfile};
use neff::writer::{ZlibGzipWriter, GZIP_HEADER};

#[test]
fn a_payload_inflating_to_gibibytes_streams_without_being_held() {
    // A 2 GiB member of zeros compresses to about 10 MiB at level 1.
    const SIZE: u64 = 2 << 30;
    let mut gz = ZlibGzipWriter::new(Vec::new(), &GZIP_HEADER, 1, 8).unwrap();
    gz.write_all(&model_entries(&[])).unwrap();
    gz.write_all(&tar_header(b"sg00/huge.bin", b'0', &size_field(SIZE)))
        .unwrap();
    let zeros = vec![0u8; 1 << 20];
    for _ in 0..SIZE >> 20 {
        gz.write_all(&zeros).unwrap();
    }
    gz.write_all(&tar_header(b"after.json", b'0', &size_field(2)))
        .unwrap();
    let mut tail = b"{}".to_vec();
    tail.resize(512 + 1024, 0);
    gz.write_all(&tail).unwrap();
    let payload = gz.finish().unwrap();
    assert!(payload.len() < 16 << 20, "{} bytes", payload.len());
    let loaded = load_buffer(
        Some(&neff_with_payload(2, &payload)),
        &RuntimeProfile::default(),
    );
    assert!(loaded.report.accepted, "{:?}", loaded.report);
    let c = loaded.container.unwrap();
    let huge = c.member(b"sg00/huge.bin").unwrap();
    assert_eq!(huge.size, SIZE);
    assert!(
        huge.data.is_none(),
        "a 2 GiB member must not be held in memory"
    );
    assert_eq!(c.member(b"after.json").unwrap().data, Some(&b"{}"[..]));
}

#[test]
fn absurd_declared_sizes_are_refused_cleanly() {
    // data_size far beyond the file.
    let mut n = valid_neff();
    set_u64(&mut n, 0x10, u64::MAX);
    let r = load_buffer(Some(&n), &RuntimeProfile::default()).report;
    assert_eq!(r.gate_id(), Some("G6"));
    // header_size u64::MAX.
    let mut n = valid_neff();
    set_u64(&mut n, 0x08, u64::MAX);
    assert_eq!(
        load_buffer(Some(&n), &RuntimeProfile::default())
            .report
            .gate_id(),
        Some("G3")
    );
    // A member claiming 64 GiB (largest octal size) with 10 bytes behind it.
    let mut tar = tar_header(b"big.bin", b'0', b"77777777777\0").to_vec();
    tar.extend_from_slice(&[0u8; 10]);
    let r = load_buffer(
        Some(&neff_with_payload(1, &tar)),
        &RuntimeProfile::default(),
    )
    .report;
    assert_eq!(r.gate_id(), Some("G12"), "{r:?}");
    // A base-256 size of 2^62: libarchive 3.8 fails the header ("Tar entry
    // size overflow", at 2^60 and above); 2^59 is a short read (G12).
    for (shift, gate) in [(0x40u8, "G11"), (0x08, "G12")] {
        let mut size = [0u8; 12];
        size[0] = 0x80;
        size[4] = shift;
        let tar = finish_tar(tar_header(b"huge.bin", b'0', &size).to_vec());
        let r = load_buffer(
            Some(&neff_with_payload(2, &gzip(&tar))),
            &RuntimeProfile::default(),
        )
        .report;
        assert_eq!(r.gate_id(), Some(gate), "{r:?}");
    }
    // A GNU long-name record larger than 1 MiB: libarchive skips its body
    // and warns (the runtime fails the load) when the entry it names comes.
    let mut tar = tar_header(b"././@LongLink", b'L', &size_field((1 << 20) + 1)).to_vec();
    push_padded(&mut tar, &vec![b'a'; (1 << 20) + 1]);
    tar.extend_from_slice(&tar_header(b"x", b'0', &size_field(0)));
    let r = load_buffer(
        Some(&neff_with_payload(2, &gzip(&finish_tar(tar)))),
        &RuntimeProfile::default(),
    )
    .report;
    assert_eq!(r.gate_id(), Some("G11"), "{r:?}");
    assert!(
        r.message
            .as_deref()
            .unwrap_or_default()
            .contains("Special header too large"),
        "{r:?}"
    );
    // Without its body the stream simply ends inside it.
    let tar = finish_tar(tar_header(b"././@LongLink", b'L', &size_field((1 << 20) + 1)).to_vec());
    let r = load_buffer(
        Some(&neff_with_payload(2, &gzip(&tar))),
        &RuntimeProfile::default(),
    )
    .report;
    assert_eq!(r.gate_id(), Some("G11"), "{r:?}");
}

#[test]
fn long_and_non_utf8_names_are_read() {
    let long = "n".repeat(300);
    let mut tar = model_entries(&[]);
    tar.extend_from_slice(&tar_header(
        b"././@LongLink",
        b'L',
        &size_field(long.len() as u64 + 1),
    ));
    push_padded(&mut tar, format!("{long}\0").as_bytes());
    tar.extend_from_slice(&tar_header(&long.as_bytes()[..100], b'0', &size_field(0)));
    tar.extend_from_slice(&tar_header(b"bad\xffname", b'0', &size_field(0)));
    let loaded = load_buffer(
        Some(&neff_with_payload(2, &gzip(&finish_tar(tar)))),
        &RuntimeProfile::default(),
    );
    assert!(loaded.report.accepted, "{:?}", loaded.report);
    let c = loaded.container.unwrap();
    assert!(c.members.contains_key(long.as_bytes()));
    assert!(c.members.contains_key(&b"bad\xffname"[..]));
    assert!(c.entries.iter().any(|e| e.name == "bad\\xffname"));
}

fn many_members(names: impl Iterator<Item = String>) -> Vec<u8> {
    let mut tar = model_entries(&[]);
    for name in names {
        tar.extend_from_slice(&tar_header(name.as_bytes(), b'0', &size_field(0)));
    }
    neff_with_payload(2, &gzip(&finish_tar(tar)))
}

fn load_with(bytes: &[u8], limits: &neff::loader::Limits) -> neff::loader::Loaded {
    neff::loader::Loader::new(&RuntimeProfile::default())
        .limits(limits.clone())
        .load(Some(std::io::Cursor::new(bytes)))
        .unwrap()
}

#[test]
fn the_member_map_budget_grows_with_the_stored_bytes() {
    // 200 members cost some 9 KiB of member map: past a 1 KiB floor, but
    // within 32 bytes per stored byte, so this valid NEFF is accepted.
    let n = many_members((0..200).map(|i| format!("member-{i:04}")));
    let limits = neff::loader::Limits {
        index_max: 1 << 10,
        ..Default::default()
    };
    let r = load_with(&n, &limits).report;
    assert!(r.accepted, "{r:?}");
}

/// A tar of `count` `.npy` entries with 100-byte names (distinct unless
/// `same_name`), each with a block of zeros, gzip'd at level 9.
fn npy_entries(count: u32, same_name: bool) -> Vec<u8> {
    let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::best());
    gz.write_all(&model_entries(&[])).unwrap();
    let mut name = format!("{}.npy", "w".repeat(96)).into_bytes();
    for i in 0..count {
        if !same_name {
            name[88..96].copy_from_slice(format!("{i:08x}").as_bytes());
        }
        gz.write_all(&tar_header(&name, b'0', &size_field(256)))
            .unwrap();
        gz.write_all(&[0u8; 512]).unwrap();
    }
    gz.write_all(&[0u8; 1024]).unwrap();
    neff_with_payload(2, &gz.finish().unwrap())
}

#[test]
fn a_payload_past_the_member_map_budget_is_refused() {
    // 65536 entries cost 25 MiB of member map (a name and a 256-byte prefix
    // each), from some 470 KiB: past a 1 MiB floor and 8 bytes per stored byte.
    let n = npy_entries(1 << 16, false);
    let limits = neff::loader::Limits {
        index_max: 1 << 20,
        index_per_stored_byte: 8,
        ..Default::default()
    };
    let r = load_with(&n, &limits).report;
    assert_eq!(r.gate_id(), Some("G12"), "{r:?}");
    let message = r.message.as_deref().unwrap_or_default();
    assert!(
        message.starts_with("fail to allocate memory(256) for file wwww"),
        "{r:?}"
    );
    let detail = r.detail.as_deref().unwrap_or_default();
    assert!(
        detail.contains("more than the larger of 1 MiB and 8 bytes per stored payload byte read"),
        "{detail}"
    );
    assert!(load_with(&n, &Default::default()).report.accepted);
}

#[test]
fn entries_repeating_a_name_cost_the_member_map_nothing() {
    // 65536 identical entries (64 MiB of tar, 60 MiB of map if all were
    // kept) stored in 300 KiB: the replaced ones are dropped as the walk goes.
    let n = npy_entries(1 << 16, true);
    let limits = neff::loader::Limits {
        index_max: 1 << 20,
        index_per_stored_byte: 8,
        ..Default::default()
    };
    let loaded = load_with(&n, &limits);
    assert!(loaded.report.accepted, "{:?}", loaded.report);
    let w = &loaded.report.warnings;
    assert!(w[0].starts_with("duplicate member wwww"), "{w:?}");
    assert!(w.iter().any(|w| w.contains("more warnings")), "{w:?}");
    let c = loaded.container.unwrap();
    let last = c.members.iter().find(|m| m.key.ends_with(b".npy")).unwrap();
    assert_eq!(last.header_offset, c.tar_end_offset.unwrap() - 1024);
}

#[test]
fn the_entry_table_and_warnings_are_capped_but_the_walk_goes_on() {
    let n = many_members((0..300).map(|i| format!("d{i:03}/x.wavegraph-bin.json")));
    let limits = neff::loader::Limits {
        table_max: 50 * 200,
        warnings_max: 20,
        ..Default::default()
    };
    let loaded = load_with(&n, &limits);
    assert!(loaded.report.accepted, "{:?}", loaded.report);
    let w = &loaded.report.warnings;
    assert_eq!(w.len(), 21, "{w:?}");
    assert!(w[20].contains("more warnings"), "{w:?}");
    let entries = loaded.container.unwrap().entries;
    assert!(
        entries.len() < 300 && !entries.is_empty(),
        "{}",
        entries.len()
    );
}

#[test]
fn messages_cut_very_long_names_short() {
    let long = "n".repeat(5000);
    let mut tar = tar_header(b"././@LongLink", b'L', &size_field(long.len() as u64 + 1)).to_vec();
    push_padded(&mut tar, format!("{long}\0").as_bytes());
    // 4096 bytes declared, none present: G12 names the member.
    tar.extend_from_slice(&tar_header(b"x", b'0', &size_field(4096)));
    let r = load_buffer(
        Some(&neff_with_payload(2, &gzip(&tar))),
        &RuntimeProfile::default(),
    )
    .report;
    assert_eq!(r.gate_id(), Some("G12"));
    let message = r.message.unwrap();
    assert!(
        message.len() < 400 && message.contains("(5000 bytes)"),
        "{message}"
    );
}

#[test]
fn malformed_json_in_manifests_is_refused_cleanly() {
    let deep = format!("{}{}", "[".repeat(50_000), "]".repeat(50_000));
    let r = load_buffer(
        Some(&model_neff(&[("neff.json", deep.as_bytes())])),
        &RuntimeProfile::default(),
    )
    .report;
    assert_eq!(r.gate_id(), Some("G14"), "{r:?}");
    assert!(r.message.unwrap().starts_with("Failed to parse neff.json"));
    // Huge numbers and wrong types are refused by the gate that reads them.
    let def = DEF_JSON.replace(
        "\"var_id\": 1",
        "\"var_id\": 123456789012345678901234567890",
    );
    let r = load_buffer(
        Some(&model_neff(&[("sg00/def.json", def.as_bytes())])),
        &RuntimeProfile::default(),
    )
    .report;
    assert_eq!(r.gate_id(), Some("G19"), "{r:?}");
    let def = DEF_JSON.replace("\"size\": 16}, \"y\"", "\"size\": \"16\"}, \"y\"");
    let r = load_buffer(
        Some(&model_neff(&[("sg00/def.json", def.as_bytes())])),
        &RuntimeProfile::default(),
    )
    .report;
    assert_eq!(
        r.message.as_deref(),
        Some("Failed to parse, key: size"),
        "{r:?}"
    );
    // A repeated key: the runtime's simdjson reads the first one.
    let kelf = KELF_JSON.replace(
        "\"target\": \"*\"",
        "\"target\": \"cayman\", \"target\": \"*\"",
    );
    let n = model_neff(&[("kelf-0.json", kelf.as_bytes())]);
    let r = load_buffer(
        Some(&n),
        &RuntimeProfile::for_arch(neff::schema::Arch::Sunda),
    )
    .report;
    assert_eq!(
        r.gate_id(),
        Some("G17"),
        "the first target (cayman) wins: {r:?}"
    );
    assert!(
        r.warnings
            .iter()
            .any(|w| w.contains("appears more than once")),
        "{r:?}"
    );
}

#[test]
fn names_over_100_and_255_bytes_and_duplicates() {
    for len in [101, 255, 256, 4000] {
        let name = format!("sg00/{}", "n".repeat(len - 5));
        let mut tar = model_entries(&[]);
        tar.extend_from_slice(&tar_header(
            b"././@LongLink",
            b'L',
            &size_field(name.len() as u64 + 1),
        ));
        push_padded(&mut tar, format!("{name}\0").as_bytes());
        tar.extend_from_slice(&tar_header(&name.as_bytes()[..100], b'0', &size_field(1)));
        push_padded(&mut tar, b"x");
        let loaded = load_buffer(
            Some(&neff_with_payload(2, &gzip(&finish_tar(tar)))),
            &RuntimeProfile::default(),
        );
        assert!(loaded.report.accepted, "{len}: {:?}", loaded.report);
        assert_eq!(
            loaded
                .container
                .unwrap()
                .member(name.as_bytes())
                .unwrap()
                .size,
            1
        );
    }
}

/// `neff verify` on a NEFF whose payload inflates to 4 GiB: a bounded pass,
/// peak RSS measured with /usr/bin/time (Debian package `time`).
#[test]
#[cfg_attr(
    not(neff_gnu_time),
    ignore = "GNU time (/usr/bin/time) is missing: apt-get install -y time"
)]
fn verify_of_a_4_gib_inflate_stays_under_256_mib() {
    const SIZE: u64 = 4 << 30;
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("bomb.neff");
    let mut gz = ZlibGzipWriter::new(Vec::new(), &GZIP_HEADER, 1, 8).unwrap();
    gz.write_all(&model_entries(&[])).unwrap();
    gz.write_all(&tar_header(b"sg00/bomb.bin", b'0', &size_field(SIZE)))
        .unwrap();
    let zeros = vec![0u8; 1 << 20];
    for _ in 0..SIZE >> 20 {
        gz.write_all(&zeros).unwrap();
    }
    gz.write_all(&[0u8; 1024]).unwrap();
    let payload = gz.finish().unwrap();
    assert!(payload.len() < 32 << 20);
    std::fs::write(&path, neff_with_payload(2, &payload)).unwrap();
    let time = std::path::Path::new("/usr/bin/time");
    assert!(
        time.exists(),
        "/usr/bin/time is missing: apt-get install -y time"
    );
    let out = std::process::Command::new(time)
        .args(["-f", "%M"])
        .arg(env!("CARGO_BIN_EXE_neff"))
        .args(["verify", "--instance-arch", "cayman"])
        .arg(&path)
        .output()
        .unwrap();
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stdout)
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    let kib: u64 = stderr
        .lines()
        .last()
        .and_then(|l| l.trim().parse().ok())
        .unwrap_or_else(|| panic!("no RSS in {stderr}"));
    assert!(kib < 256 * 1024, "peak RSS {kib} KiB");
    eprintln!("neff verify of a 4 GiB inflate: peak RSS {kib} KiB");
}

/// Runs neff with `args`, killing it after `secs`: its output, or `None`
/// when it had to be killed (it blocked).
fn neff_within(args: &[&str], secs: u64) -> Option<std::process::Output> {
    let mut child = crate::common::neff_command()
        .args(args)
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let start = std::time::Instant::now();
    while start.elapsed().as_secs() < secs {
        if child.try_wait().unwrap().is_some() {
            return Some(child.wait_with_output().unwrap());
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    child.kill().unwrap();
    child.wait().unwrap();
    None
}

#[cfg(unix)]
fn mkfifo(path: &std::path::Path) {
    let c = std::ffi::CString::new(path.to_str().unwrap()).unwrap();
    // SAFETY: mkfifo with a valid C string.
    assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
}

#[test]
#[cfg(unix)]
fn inputs_read_whole_are_regular_files_and_never_block() {
    let dir = tempfile::tempdir().unwrap();
    let fifo = dir.path().join("in.json");
    mkfifo(&fifo);
    let out = dir.path().join("o.neff");
    let model = dir.path().join("model.bin");
    std::fs::write(&model, model_neff(&[])).unwrap();
    let (fifo_s, out_s) = (fifo.to_str().unwrap(), out.to_str().unwrap());
    let cases: [(&[&str], &str); 6] = [
        (
            &["build", "/dev/zero", "-o", out_s],
            "build spec /dev/zero is a FIFO, socket or device",
        ),
        (
            &["build", fifo_s, "-o", out_s],
            "is a FIFO, socket or device",
        ),
        (
            &[
                "pack",
                dir.path().to_str().unwrap(),
                "-o",
                out_s,
                "--header",
                fifo_s,
            ],
            "header file",
        ),
        (
            &["barrier", "encode", "/dev/zero", "-o", out_s],
            "barrier input",
        ),
        (&["barrier", "decode", fifo_s], "barrier input"),
        (
            &["inspect", model.to_str().unwrap(), "--ntff", "/dev/zero"],
            "NTFF profile /dev/zero is a FIFO, socket or device",
        ),
    ];
    for (args, expected) in cases {
        let r = neff_within(args, 20).unwrap_or_else(|| panic!("{args:?} blocked"));
        assert_ne!(r.status.code(), Some(0), "{args:?}");
        let err = String::from_utf8_lossy(&r.stderr);
        assert!(err.contains(expected), "{args:?}: {err}");
    }
    assert!(!out.exists());
}

#[test]
#[cfg(unix)]
fn verify_of_a_folder_reports_a_fifo_and_goes_on() {
    let dir = tempfile::tempdir().unwrap();
    mkfifo(&dir.path().join("blocked.neff"));
    std::fs::write(dir.path().join("model.neff"), model_neff(&[])).unwrap();
    let r = neff_within(&["verify", dir.path().to_str().unwrap()], 20)
        .expect("verify DIR blocked on a FIFO");
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&r.stdout),
        String::from_utf8_lossy(&r.stderr)
    );
    assert!(
        text.contains("blocked.neff") && text.contains("not a regular file"),
        "{text}"
    );
    assert!(text.contains("model.neff"), "{text}");
}
