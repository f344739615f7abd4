//! Packager behaviour: round trips, determinism, header fields, atomic output.

use std::fs;
use std::io::{self, Read};

use neff_loader::{load_file, RuntimeProfile};
use neff_schema::{NeffHeader, PkgVersion, Uuid};
use neff_writer::{ErrorKind, HeaderPatch, PackOptions, Packager, UuidChoice};

/// The runtime's all-reduce fixture model (18 files, one folder) plus three
/// members no manifest refers to.
fn sample() -> Packager {
    let model = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../examples/allreduce");
    let mut p = Packager::from_dir(&model).unwrap();
    p.add_bytes("sg00/extra.bin", vec![0xC8; 64]).unwrap();
    p.add_bytes("sg00/empty.bin", Vec::new()).unwrap();
    p.add_bytes(&("deep/".repeat(30) + "long-name.json"), b"[]".to_vec())
        .unwrap();
    p
}

fn build(p: Packager, options: &PackOptions) -> (tempfile::TempDir, std::path::PathBuf, Vec<u8>) {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("out.neff");
    p.write_to_path(&path, options).unwrap();
    let bytes = fs::read(&path).unwrap();
    (dir, path, bytes)
}

#[test]
fn round_trip_through_the_loader() {
    for pkg in [PkgVersion::Md5Gzip, PkgVersion::Sha256Tar] {
        let options = PackOptions {
            pkg_version: pkg,
            ..PackOptions::default()
        };
        let (_dir, path, bytes) = build(sample(), &options);
        let loaded = load_file(&path, &RuntimeProfile::default()).unwrap();
        assert!(loaded.report.accepted, "{:?}", loaded.report);
        let c = loaded.container.unwrap();
        let names: Vec<String> = c
            .members
            .keys()
            .map(|k| String::from_utf8(k.to_vec()).unwrap())
            .collect();
        assert_eq!(names.len(), 21);
        assert_eq!(c.member(b"sg00/pe.bin").unwrap().size, 64);
        assert_eq!(c.member(b"sg00/empty.bin").unwrap().size, 0);
        let kelf = std::fs::read(
            std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
                .join("../examples/allreduce/kelf-a.json"),
        )
        .unwrap();
        assert_eq!(c.member(b"kelf-a.json").unwrap().data, Some(&kelf[..]));
        let h = NeffHeader::from_prefix(&bytes).unwrap();
        assert_eq!(h.pkg_version(), pkg.value());
        assert_eq!(h.data_size(), bytes.len() as u64 - 1024);
        // The loader measures the whole tar stream, padding included.
        let tar_size = c.tar_size.expect("the walk reached the end");
        assert_eq!(tar_size % 10240, 0);
        let dir2 = tempfile::tempdir().unwrap();
        let outcome = sample()
            .write_to_path(dir2.path().join("o.neff"), &options)
            .unwrap();
        assert_eq!(outcome.tar_size % 10240, 0);
        assert_eq!(outcome.tar_size, tar_size);
        assert_eq!((outcome.files, outcome.directories), (21, 31));
        // Directory entries exist for every parent, in sorted order.
        let dirs: Vec<&str> = c
            .entries
            .iter()
            .filter(|e| e.kind == neff_loader::EntryKind::Directory)
            .map(|e| e.name.as_str())
            .collect();
        assert_eq!(dirs.len(), 31);
        let order: Vec<&str> = c.entries.iter().map(|e| e.name.as_str()).collect();
        let mut sorted = order.clone();
        sorted.sort();
        assert_eq!(order, sorted);
    }
}

#[test]
fn builds_are_deterministic_and_uuid_follows_content() {
    let (_d1, _, a) = build(sample(), &PackOptions::default());
    let (_d2, _, b) = build(sample(), &PackOptions::default());
    assert_eq!(a, b);
    let mut other = sample();
    other.add_bytes("extra", b"x".to_vec()).unwrap();
    let (_d3, _, c) = build(other, &PackOptions::default());
    let (ha, hc) = (
        NeffHeader::from_prefix(&a).unwrap(),
        NeffHeader::from_prefix(&c).unwrap(),
    );
    assert_ne!(ha.uuid(), hc.uuid());
    assert_eq!(ha.uuid().0[6] >> 4, 4, "v4");
    assert_eq!(ha.uuid().0[8] >> 6, 2, "RFC-4122 variant");
    // pkg 2 hash layout: MD5 of the compressed payload, then sixteen '0'.
    use md5::{Digest, Md5};
    assert_eq!(ha.hash()[..16], Md5::digest(&a[1024..])[..]);
    assert_eq!(&ha.hash()[16..], b"0000000000000000");
}

#[test]
fn header_defaults_and_overrides() {
    let (_d, _, bytes) = build(sample(), &PackOptions::default());
    let h = NeffHeader::from_prefix(&bytes).unwrap();
    assert_eq!(
        (h.header_size(), h.major(), h.minor(), h.unused_0()),
        (0x400, 2, 0, 1)
    );
    assert_eq!(
        (h.vnc_size(), h.requested_tpb_count(), h.feature_bits()),
        (1, 1, 0)
    );
    assert!(h
        .fields()
        .build_version
        .as_clean_str()
        .unwrap()
        .contains("neff-rs"));

    let patch: HeaderPatch = serde_json::from_str(
        r#"{"name": "model-x", "neff_version_major": 1, "neff_version_minor": 7, "feature_bits": 36,
            "vnc_size": 2, "requested_tpb_count": 4, "build_version": "custom", "unused_0": 8, "tpb_per_node": "0102"}"#,
    )
    .unwrap();
    let uuid: Uuid = "561826fb-125f-4bb8-991c-29e085c8949a".parse().unwrap();
    let options = PackOptions {
        header: patch,
        uuid: UuidChoice::Explicit(uuid),
        ..PackOptions::default()
    };
    let (_d, _, bytes) = build(sample(), &options);
    let h = NeffHeader::from_prefix(&bytes).unwrap();
    assert_eq!(h.fields().name.as_clean_str(), Some("model-x"));
    assert_eq!(
        (h.major(), h.minor(), h.feature_bits(), h.vnc_size()),
        (1, 7, 36, 2)
    );
    assert_eq!((h.requested_tpb_count(), h.unused_0()), (4, 8));
    assert_eq!(&h.tpb_per_node()[..3], &[1, 2, 0]);
    assert_eq!(h.fields().build_version.as_clean_str(), Some("custom"));
    assert_eq!(h.uuid(), uuid);

    let random = PackOptions {
        uuid: UuidChoice::Random,
        ..PackOptions::default()
    };
    let (_d, _, r1) = build(sample(), &random);
    let (_d, _, r2) = build(sample(), &random);
    assert_ne!(
        NeffHeader::from_prefix(&r1).unwrap().uuid(),
        NeffHeader::from_prefix(&r2).unwrap().uuid()
    );
}

#[test]
fn refused_outputs_need_keep_refused() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("bad.neff");
    let patch = HeaderPatch {
        neff_version_major: Some(3),
        ..HeaderPatch::default()
    };
    let options = PackOptions {
        header: patch,
        ..PackOptions::default()
    };
    match sample().write_to_path(&path, &options) {
        Err(e) if e.kind() == ErrorKind::Refused => {
            let report = e.report().unwrap();
            assert_eq!(report.gate_id(), Some("G4"));
            assert_eq!(report.status.code(), 10);
        }
        other => panic!("expected a refusal, got {other:?}"),
    }
    assert!(!path.exists());
    assert_eq!(
        fs::read_dir(dir.path()).unwrap().count(),
        0,
        "temp file removed"
    );
    let options = PackOptions {
        keep_refused: true,
        ..options
    };
    let outcome = sample().write_to_path(&path, &options).unwrap();
    assert!(!outcome.report.accepted);
    assert!(path.exists());
}

/// A reader that fails after `good` bytes, like a disk error mid-build.
struct FailingReader {
    good: usize,
}

impl Read for FailingReader {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        if self.good == 0 {
            return Err(io::Error::other("injected failure"));
        }
        let n = buf.len().min(self.good);
        buf[..n].fill(7);
        self.good -= n;
        Ok(n)
    }
}

#[test]
fn a_failed_build_leaves_the_previous_output_intact() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("model.neff");
    sample()
        .write_to_path(&path, &PackOptions::default())
        .unwrap();
    let before = fs::read(&path).unwrap();

    let mut p = sample();
    p.add_reader("sg00/weights.bin", FailingReader { good: 3 << 20 }, 8 << 20)
        .unwrap();
    let err = p.write_to_path(&path, &PackOptions::default()).unwrap_err();
    assert!(err.to_string().contains("injected failure"), "{err}");
    assert!(err.to_string().contains("sg00/weights.bin"), "{err}");
    assert_eq!(fs::read(&path).unwrap(), before);
    let names: Vec<_> = fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    assert_eq!(
        names,
        vec![std::ffi::OsString::from("model.neff")],
        "no temp file left"
    );
}

#[test]
fn conflicts_and_bad_options_are_refused() {
    let mut p = Packager::new();
    p.add_bytes("a", b"x".to_vec()).unwrap();
    assert!(p.add_bytes("a", b"y".to_vec()).is_err());
    p.add_bytes("a/b", b"y".to_vec()).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let err = p
        .write_to_path(dir.path().join("o.neff"), &PackOptions::default())
        .unwrap_err();
    assert!(
        err.to_string().contains("both a member and a folder"),
        "{err}"
    );
    let err = sample()
        .write_to_path(dir.path().join("o.neff"), &{
            let mut o = PackOptions::default();
            o.set_level(0);
            o
        })
        .unwrap_err();
    assert!(err.to_string().contains("level 0"), "{err}");
    assert!(Packager::new().add_bytes("../x", b"".to_vec()).is_err());
}

/// A tree packed from a folder, walked once as it is written: a member
/// added over a tree file, a folder over a file (either way), and a symlink
/// in the tree are refused, and nothing is written; a tree changed after
/// `from_dir` is packed as it is when written.
#[test]
fn tree_conflicts_are_refused_and_the_tree_is_packed_as_written() {
    let dir = tempfile::tempdir().unwrap();
    let tree = dir.path().join("tree");
    let model = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../examples/allreduce");
    for sub in ["", "sg00"] {
        fs::create_dir_all(tree.join(sub)).unwrap();
        for item in fs::read_dir(model.join(sub)).unwrap() {
            let path = item.unwrap().path();
            if path.is_file() {
                fs::copy(&path, tree.join(sub).join(path.file_name().unwrap())).unwrap();
            }
        }
    }
    fs::create_dir(tree.join("a")).unwrap();
    fs::write(tree.join("a/x.bin"), b"x").unwrap();
    fs::write(tree.join("b.bin"), b"b").unwrap();
    let out = dir.path().join("o.neff");
    let write = |p: Packager| p.write_to_path(&out, &PackOptions::default());
    let mut p = Packager::from_dir(&tree).unwrap();
    let err = p.add_bytes("b.bin", b"y".to_vec()).unwrap_err();
    assert!(err.to_string().contains("b.bin is added twice"), "{err}");
    for (name, clash) in [("a", "a"), ("b.bin/c", "b.bin")] {
        let mut p = Packager::from_dir(&tree).unwrap();
        p.add_bytes(name, b"y".to_vec()).unwrap();
        let err = write(p).unwrap_err().to_string();
        assert!(
            err.contains(&format!("{clash} is both a member and a folder")),
            "{err}"
        );
    }
    let mut p = Packager::from_dir(&tree).unwrap();
    p.add_dir("b.bin").unwrap();
    let err = write(p).unwrap_err().to_string();
    assert!(err.contains("b.bin is both a member and a folder"), "{err}");
    #[cfg(unix)]
    {
        let p = Packager::from_dir(&tree).unwrap();
        std::os::unix::fs::symlink(tree.join("b.bin"), tree.join("a/link")).unwrap();
        let err = write(p).unwrap_err().to_string();
        assert!(err.contains("a/link: symlinks are not packed"), "{err}");
        assert!(!out.exists());
        fs::remove_file(tree.join("a/link")).unwrap();
    }
    let p = Packager::from_dir(&tree).unwrap();
    fs::write(tree.join("a/new.bin"), b"new").unwrap();
    let outcome = write(p).unwrap();
    // 18 model files, a/new.bin, a/x.bin and b.bin; one entry for a/ and sg00/.
    assert_eq!((outcome.files, outcome.directories), (21, 2));
    fs::remove_file(tree.join("a/new.bin")).unwrap();
    let mut p = Packager::from_dir(&tree).unwrap();
    p.add_bytes("a/y.bin", b"y".to_vec()).unwrap();
    p.add_dir("a").unwrap();
    let outcome = write(p).unwrap();
    assert_eq!((outcome.files, outcome.directories), (21, 2));
}

#[test]
fn write_to_a_pipe_spools_and_matches_the_file_output() {
    let (_d, _, file_bytes) = build(sample(), &PackOptions::default());
    let mut piped = Vec::new();
    sample()
        .write_to(&mut piped, &PackOptions::default())
        .unwrap();
    assert_eq!(piped, file_bytes);
}

/// A member reader that records the progress counter each time it is read.
struct Sampler {
    left: u64,
    progress: std::sync::Arc<neff_writer::Progress>,
    seen: std::sync::Arc<std::sync::Mutex<Vec<(neff_writer::Phase, u64)>>>,
}

impl Read for Sampler {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let p = &self.progress;
        if let Ok(mut seen) = self.seen.lock() {
            seen.push((p.phase(), p.bytes()));
        }
        let n = buf
            .len()
            .min(usize::try_from(self.left).unwrap_or(usize::MAX));
        buf[..n].fill(0x5A);
        self.left -= n as u64;
        Ok(n)
    }
}

#[test]
fn progress_counts_member_bytes_as_they_stream_then_a_paranoid_read_back() {
    use neff_writer::{Phase, Progress};
    const BIG: u64 = 64 << 20;
    let progress = Progress::new();
    let seen = std::sync::Arc::default();
    let mut p = sample();
    let reader = Sampler {
        left: BIG,
        progress: std::sync::Arc::clone(&progress),
        seen: std::sync::Arc::clone(&seen),
    };
    p.add_reader("big.bin", reader, BIG).unwrap();
    let total = p.input_bytes();
    let options = PackOptions {
        progress: Some(std::sync::Arc::clone(&progress)),
        ..PackOptions::default()
    };
    build(p, &options);
    let seen = seen.lock().unwrap();
    assert!(seen.iter().all(|(phase, _)| *phase == Phase::Writing));
    let mid: Vec<u64> = seen.iter().map(|(_, b)| *b).collect();
    // Sampled while the 64 MiB member streams: the counter moves in steps far
    // smaller than the member, not once per member.
    assert!(mid.len() > 16, "{} reads", mid.len());
    assert!(mid
        .windows(2)
        .all(|w| w[1] >= w[0] && w[1] - w[0] <= 1 << 20));
    assert!(
        mid.iter().any(|&b| b > BIG / 4 && b < total - BIG / 4),
        "{mid:?}"
    );
    // The streamed check reads nothing back: the phase stays the writing.
    assert_eq!(progress.phase(), Phase::Writing);
    // A paranoid read-back is labelled as its own phase, over the payload.
    let mut p = sample();
    p.add_bytes("big.bin", vec![7u8; 1 << 20]).unwrap();
    let options = PackOptions {
        paranoid_readback: true,
        ..options
    };
    let (_dir, _path, bytes) = build(p, &options);
    assert_eq!(progress.phase(), Phase::ReadingBack);
    let header = NeffHeader::from_prefix(&bytes).unwrap();
    assert_eq!(progress.total(), header.fields().data_size);
    assert!(progress.bytes() > 0 && progress.bytes() <= progress.total());
}
