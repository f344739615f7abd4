//! The streamed check (`neff_loader::StreamCheck`, what `pack` and `build`
//! run instead of reading their output back) gives exactly the verdict a
//! read-back through `Loader::verify` gives: over every fixture (each gate
//! G3–G31 a file can reach, under its own profile), over corpus seeds valid
//! and mutated, and over the real NEFFs repacked with their own framing.

use std::io::{Cursor, Write};
use std::path::Path;

use md5::Digest as _;
use neff::loader::{
    verify_file, Limits, Loader, RuntimeProfile, StreamCheck, StreamedDigests, Verdict,
};
use neff::schema::{NeffHeader, HEADER_LEN};
use neff::smith::corpus::seed_file;
use neff::smith::generate::GenConfig;
use neff::tools::{extract, ExtractLimits};
use neff::writer::{recover_framing, PackSettings, Packager};

use crate::common;

/// Everything a verdict says, per arch: the deciding load and every report
/// (gate, status, message, detail, warnings, target, hash layout…).
fn facts(verdict: &Verdict) -> serde_json::Value {
    let reports: Vec<_> = verdict.per_arch.iter().map(|l| &l.report).collect();
    serde_json::json!({
        "accepted": verdict.accepted,
        "deciding": verdict.deciding.name(),
        "targeted": format!("{:?}", verdict.targeted),
        "reports": reports,
    })
}

/// The streamed verdict on a NEFF held in `bytes`, its payload fed in
/// uneven writes as a writer would; `None` when the header frames more bytes
/// than the file holds (the writer then reads back).
fn streamed(bytes: &[u8], profile: &RuntimeProfile) -> Option<Verdict> {
    let header = NeffHeader::from_prefix(bytes).expect("a header");
    let rest = &bytes[HEADER_LEN..];
    let payload = &rest[..rest.len().min(header.data_size() as usize)];
    let mut check = StreamCheck::new(profile, &Limits::default());
    for (i, piece) in payload.chunks(4093).enumerate() {
        // Uneven writes: whole pieces, halves, single bytes.
        match i % 3 {
            0 => check.write_all(piece).unwrap(),
            1 => piece
                .chunks(piece.len() / 2 + 1)
                .for_each(|p| check.write_all(p).unwrap()),
            _ => piece.iter().for_each(|b| check.write_all(&[*b]).unwrap()),
        }
    }
    let digests = StreamedDigests {
        md5: Some(md5::Md5::digest(payload).into()),
        sha256: Some(sha2::Sha256::digest(payload).into()),
    };
    check
        .finish(&header, Cursor::new(bytes), &digests)
        .expect("the streamed check runs")
}

/// Asserts the streamed verdict on `bytes` is the read-back's; returns the
/// read-back's gate (`None`: accepted).
fn same_verdict(name: &str, bytes: &[u8], profile: &RuntimeProfile) -> Option<String> {
    let read_back = Loader::new(profile)
        .verify(Some(Cursor::new(bytes)))
        .unwrap();
    let gate = read_back.combined_report().gate_id().map(str::to_string);
    if bytes.len() < HEADER_LEN {
        return gate; // G2: a writer always writes the header.
    }
    match streamed(bytes, profile) {
        Some(verdict) => assert_eq!(facts(&verdict), facts(&read_back), "{name}"),
        None => assert_eq!(
            gate.as_deref(),
            Some("G6"),
            "{name}: only G6 frames unstreamed bytes"
        ),
    }
    gate
}

#[test]
fn the_streamed_verdict_is_the_read_backs_on_every_fixture() {
    let dir = tempfile::tempdir().unwrap();
    let manifest = neff::smith::fixtures::generate(dir.path()).unwrap();
    let mut gates = std::collections::BTreeSet::new();
    for fixture in &manifest.fixtures {
        let bytes = std::fs::read(dir.path().join(&fixture.file)).unwrap();
        let mut profile: RuntimeProfile =
            serde_json::from_value(serde_json::Value::Object(fixture.profile.clone())).unwrap();
        if let Some(arch) = fixture.instance_arch.arch() {
            profile.instance_arch = arch;
        }
        let name = format!(
            "{} {} {:?}",
            fixture.file,
            fixture.instance_arch.name(),
            fixture.profile
        );
        gates.extend(same_verdict(&name, &bytes, &profile));
    }
    for gate in ["G3", "G9", "G10", "G11", "G12", "G13", "G20a", "G31"] {
        assert!(
            gates.contains(gate),
            "no fixture refused by {gate}: {gates:?}"
        );
    }
}

#[test]
fn the_streamed_verdict_is_the_read_backs_on_corpus_seeds() {
    let config = GenConfig {
        max_blob: 4096,
        ..GenConfig::default()
    };
    let profile = RuntimeProfile::default();
    let (mut accepted, mut refused) = (0, 0);
    for i in 0..40 {
        let Some(seed) = seed_file(14, i, 0.5, &config) else {
            continue;
        };
        // The same bytes with the hash broken: G9 on the streamed digest
        // (unless a header gate before it refuses).
        let mut broken = seed.bytes.clone();
        broken[0xAC] ^= 0x01;
        let broken = same_verdict(&format!("seed {i}, hash broken"), &broken, &profile);
        match same_verdict(&format!("seed {i}"), &seed.bytes, &profile) {
            None => {
                assert_eq!(broken.as_deref(), Some("G9"), "seed {i}");
                accepted += 1;
            }
            Some(_) => refused += 1,
        }
    }
    assert!(
        accepted >= 5 && refused >= 5,
        "{accepted} accepted, {refused} refused"
    );
}

/// Unpacks `neff` and packs it again with its recovered framing through the
/// writer (streamed check), returning the repacked file.
fn repack(neff: &Path, work: &Path) -> std::path::PathBuf {
    let tree = work.join("tree");
    extract(
        neff,
        &tree,
        &RuntimeProfile::default(),
        false,
        &ExtractLimits::default(),
    )
    .unwrap();
    let recovered = recover_framing(neff, neff::writer::DeflateProof::Whole).unwrap();
    let options = PackSettings {
        keep_refused: true,
        ..PackSettings::default()
    }
    .options(recovered.file)
    .unwrap();
    let out = work.join("out.neff");
    let outcome = Packager::from_dir(&tree)
        .unwrap()
        .write_to_path(&out, &options)
        .unwrap();
    let mut read_back = verify_file(&out, &options.profile)
        .unwrap()
        .combined_report();
    read_back.file = None;
    assert_eq!(outcome.report, read_back, "{}", neff.display());
    out
}

#[test]
#[cfg_attr(
    not(neff_real_neffs),
    ignore = "real NEFFs missing: set NEFF_REAL_NEFFS (default ../shared/real-neffs), see tests/real-neffs.md"
)]
fn the_streamed_verdict_is_the_read_backs_on_real_neffs_repacked() {
    let Some(dir) = common::real_neff_dir() else {
        return;
    };
    let mut seen = 0;
    for item in std::fs::read_dir(dir).unwrap() {
        let path = item.unwrap().path();
        if path.extension().and_then(|e| e.to_str()) != Some("neff") {
            continue;
        }
        let bytes = std::fs::read(&path).unwrap();
        same_verdict(
            &path.display().to_string(),
            &bytes,
            &RuntimeProfile::default(),
        );
        let work = tempfile::tempdir().unwrap();
        let out = repack(&path, work.path());
        let again = std::fs::read(&out).unwrap();
        same_verdict(
            &out.display().to_string(),
            &again,
            &RuntimeProfile::default(),
        );
        seen += 1;
    }
    assert!(seen >= 5, "{seen} real NEFFs");
}

#[test]
fn pack_and_build_write_the_same_bytes_with_and_without_the_paranoid_read_back() {
    let work = tempfile::tempdir().unwrap();
    let tree = work.path().join("tree");
    common::write_model_tree(&tree);
    let mut outputs = Vec::new();
    for extra in [&[][..], &["--paranoid-readback"][..]] {
        let out = work.path().join(format!("m{}.neff", extra.len()));
        let r = crate::common::neff_command()
            .args([
                "pack".as_ref(),
                tree.as_os_str(),
                "-o".as_ref(),
                out.as_os_str(),
                "-q".as_ref(),
            ])
            .args(extra)
            .output()
            .unwrap();
        assert!(r.status.success(), "{}", String::from_utf8_lossy(&r.stderr));
        assert!(
            verify_file(&out, &RuntimeProfile::default())
                .unwrap()
                .accepted
        );
        outputs.push(std::fs::read(&out).unwrap());
    }
    assert_eq!(outputs[0], outputs[1]);
}
