//! The framing recovery (`unpack --header-out`, lift) walks the payload with
//! the loader's readers, so it names and sizes every member as the runtime
//! reads them, whatever the tar dialect.

use std::path::{Path, PathBuf};

use crate::common::*;
use neff::loader::{RuntimeProfile, TarReader};
use neff::schema::framing::{Deflate, DeflateEngine};
use neff::schema::{tar, FramingPreset, PkgVersion};
use neff::tools::{extract_recovering, ExtractLimits};
use neff::writer::{recover_framing, DeflateProof, PackOptions, Packager, Recovered};

/// The model's tar with `sg00/def.json` stored as a ustar prefix ending in
/// `/` (libarchive adds no second one), its size field led by a tab and
/// ended by junk (libarchive skips blanks and stops at the first non-digit),
/// and a pax `x` header in front of `neff.json` whose `path` names it.
fn dialect_tar() -> Vec<u8> {
    let mut out = Vec::new();
    for (name, data) in model_files(&[]) {
        if name == "sg00/def.json" {
            let mut h = tar_header(b"def.json", b'0', b"\t");
            let size = format!("{:o}x", data.len());
            h[tar::SIZE.at + 1..tar::SIZE.at + 1 + size.len()].copy_from_slice(size.as_bytes());
            h[tar::MAGIC_VERSION.range()].copy_from_slice(tar::USTAR_MAGIC);
            h[tar::PREFIX.at..tar::PREFIX.at + 5].copy_from_slice(b"sg00/");
            fix_checksum(&mut h);
            out.extend_from_slice(&h);
        } else if name == "neff.json" {
            let record = b"18 path=neff.json\n";
            let mut pax = tar_header(b"PaxHeaders/x", b'x', &size_field(record.len() as u64));
            pax[tar::MAGIC_VERSION.range()].copy_from_slice(tar::USTAR_MAGIC);
            fix_checksum(&mut pax);
            out.extend_from_slice(&pax);
            push_padded(&mut out, record);
            let h = tar_header(b"not-the-name", b'0', &size_field(data.len() as u64));
            out.extend_from_slice(&h);
        } else {
            out.extend_from_slice(&tar_header(
                name.as_bytes(),
                b'0',
                &size_field(data.len() as u64),
            ));
        }
        push_padded(&mut out, &data);
    }
    finish_tar(out)
}

#[test]
fn the_recovery_reads_each_dialect_as_the_loader_does() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("dialect.neff");
    let payload = dialect_tar();
    std::fs::write(&path, neff_with_payload(2, &gzip(&payload))).unwrap();
    exit_ok(&neff(&["verify", s(&path)]));

    let mut walk = TarReader::new(payload.as_slice());
    let mut loader_names = Vec::new();
    while let Some(entry) = walk.next_entry().unwrap() {
        loader_names.push(String::from_utf8(entry.name).unwrap());
    }
    assert!(loader_names.contains(&"sg00/def.json".to_string()));
    assert!(loader_names.contains(&"neff.json".to_string()));

    let recovered =
        neff::writer::recover_framing(&path, neff::writer::DeflateProof::Whole).unwrap();
    let framing = recovered.file.framing.unwrap();
    let mut recovered_names: Vec<String> =
        framing.tar.entries.iter().map(|e| e.name.clone()).collect();
    let mut expected = loader_names.clone();
    recovered_names.sort();
    expected.sort();
    assert_eq!(recovered_names, expected);
    // The header the writer cannot write that way is named, by its offset.
    assert!(!recovered.exact);
    let notes = recovered.file.not_reproduced.join("\n");
    assert!(notes.contains("(sg00/def.json)"), "{notes}");
}

fn exit_ok(out: &std::process::Output) {
    assert_eq!(code(out), 0, "{}", stderr(out));
}

#[test]
fn a_payload_of_two_gzip_members_is_walked_through_both() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("two.neff");
    let tar = model_tar(&[]);
    let (head, tail) = tar.split_at(2048);
    let payload = [gzip(head), gzip(tail)].concat();
    std::fs::write(&path, neff_with_payload(2, &payload)).unwrap();
    exit_ok(&neff(&["verify", s(&path)]));
    let recovered =
        neff::writer::recover_framing(&path, neff::writer::DeflateProof::Whole).unwrap();
    let framing = recovered.file.framing.unwrap();
    assert_eq!(framing.tar.entries.len(), model_files(&[]).len());
    let notes = recovered.file.not_reproduced.join("\n");
    assert!(notes.contains("2 gzip members"), "{notes}");
}

/// The recovery riding on an unpack's walk (`FramingRecorder`).
fn riding(path: &Path, proof: DeflateProof) -> Recovered {
    let tmp = tempfile::tempdir().unwrap();
    let (tree, profile) = (tmp.path().join("tree"), RuntimeProfile::default());
    let limits = ExtractLimits::default();
    extract_recovering(path, &tree, &profile, false, &limits, false, proof)
        .unwrap()
        .recovered
        .unwrap()
}

/// The riding recovery gives what the recovery's own walk gives.
fn same_either_way(path: &Path, proof: DeflateProof) {
    let own = recover_framing(path, proof).unwrap();
    let ridden = riding(path, proof);
    let name = path.display();
    assert_eq!(ridden.file.to_json(), own.file.to_json(), "{name}");
    assert_eq!(ridden.exact, own.exact, "{name}");
    assert_eq!(ridden.deflate, own.deflate, "{name}");
}

#[test]
fn the_recovery_riding_on_an_unpack_gives_what_its_own_walk_gives() {
    let dir = tempfile::tempdir().unwrap();
    let mut files = Vec::new();
    // Packs in every preset, both pkg versions, a zlib level, and a
    // multi-chunk stream proven over a prefix (the proof beside the walk).
    let tree = dir.path().join("tree");
    write_model_tree(&tree);
    let big: Vec<u8> = (0..1_500_000u32).map(|i| (i * 7 % 251) as u8).collect();
    std::fs::write(tree.join("sg00/weights.bin"), &big).unwrap();
    for (i, preset) in FramingPreset::ALL.into_iter().enumerate() {
        for pkg in [PkgVersion::Md5Gzip, PkgVersion::Sha256Tar] {
            let path = dir.path().join(format!("p{i}-{}.neff", pkg.value()));
            let options = PackOptions {
                pkg_version: pkg,
                fsync: false,
                keep_refused: true,
                ..PackOptions::with_preset(preset)
            };
            Packager::from_dir(&tree)
                .unwrap()
                .write_to_path(&path, &options)
                .unwrap();
            files.push(path);
        }
    }
    let zlib = dir.path().join("zlib.neff");
    let mut options = PackOptions {
        fsync: false,
        keep_refused: true,
        ..PackOptions::with_preset(FramingPreset::NeuronxCc)
    };
    options.framing.gzip.deflate = Deflate {
        engine: DeflateEngine::Zlib,
        level: 6,
        mem_level: 8,
    };
    Packager::from_dir(&tree)
        .unwrap()
        .write_to_path(&zlib, &options)
        .unwrap();
    files.push(zlib);
    // Hand-made: a tar dialect the writer does not reproduce, two gzip
    // members (the riding recovery falls back to its own walk), bytes after
    // the payload.
    let dialect = dir.path().join("dialect.neff");
    std::fs::write(&dialect, neff_with_payload(2, &gzip(&dialect_tar()))).unwrap();
    let two = dir.path().join("two.neff");
    let tar = model_tar(&[]);
    let (head, tail) = tar.split_at(2048);
    std::fs::write(
        &two,
        neff_with_payload(2, &[gzip(head), gzip(tail)].concat()),
    )
    .unwrap();
    let trailing = dir.path().join("trailing.neff");
    let mut bytes = valid_neff();
    bytes.extend_from_slice(b"junk");
    std::fs::write(&trailing, bytes).unwrap();
    files.extend([dialect, two, trailing]);
    files.extend(real_neff_dir().into_iter().flat_map(|d| {
        let mut all: Vec<PathBuf> = std::fs::read_dir(d)
            .unwrap()
            .map(|e| e.unwrap().path())
            .filter(|p| p.extension().is_some_and(|x| x == "neff"))
            .collect();
        all.sort();
        all
    }));
    for path in &files {
        for proof in [
            DeflateProof::DEFAULT,
            DeflateProof::Whole,
            DeflateProof::Prefix(1000),
        ] {
            same_either_way(path, proof);
        }
    }
}
