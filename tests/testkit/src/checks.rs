//! The invariants the fuzz targets check, free of any fuzzing dependency: the
//! root package's `tests/it/fuzz_regressions.rs` replays saved inputs
//! through exactly the same code.
//!
//! Every function panics when an invariant breaks; a refused NEFF is never a
//! failure in itself.

use std::collections::{BTreeMap, BTreeSet};
use std::io::Cursor;
use std::path::{Path, PathBuf};

use neff_loader::{load_buffer, Loaded, Loader, RuntimeProfile, Verdict};
use neff_loader::{payload_stream, EntryFate};
use neff_loader::{EntryKind, TarReader};
use neff_schema::{Arch, NeffHeader, PkgVersion, HEADER_LEN};
use neff_tools::{extract, extract_recovering, ExtractLimits, InspectReport};
use neff_writer::build_spec::BuildSpec;
use neff_writer::{recover_framing, DeflateProof};
use neff_writer::{HeaderPatch, MemberName, PackOptions, Packager};

/// `read_verify`: any bytes, loaded on every arch with the default profile,
/// then with hash verification off when the hash (G9) refused them (a
/// mutated payload almost always fails its hash, which would hide the
/// manifest tiers from the fuzzer). Each time the all-arch verdict and the
/// inspect report are built too, and must agree with the per-arch loads.
pub fn read_verify(data: &[u8]) {
    let strict = RuntimeProfile::default();
    if load_everywhere(data, &strict) == Some("G9") {
        let lenient = RuntimeProfile {
            verify_hash: false,
            ..strict
        };
        load_everywhere(data, &lenient);
    }
}

/// Loads `data` under `base` on every arch (`load_buffer`), then all at once
/// (`Loader::verify`, `InspectReport`). Returns the gate that refused the
/// first load, if any.
fn load_everywhere(data: &[u8], base: &RuntimeProfile) -> Option<&'static str> {
    let loads: Vec<Loaded> = Arch::ALL
        .iter()
        .map(|&arch| {
            let profile = RuntimeProfile {
                instance_arch: arch,
                ..base.clone()
            };
            let loaded = load_buffer(Some(data), &profile);
            check_loaded(&loaded, arch);
            loaded
        })
        .collect();
    // Tier 1 does not depend on the arch.
    let tier1 = loads[0].model.is_some();
    for loaded in &loads {
        assert_eq!(loaded.model.is_some(), tier1, "tier 1 depends on the arch");
    }
    let verdict = Loader::new(base)
        .verify(Some(Cursor::new(data)))
        .expect("reading from memory cannot fail");
    assert_eq!(verdict.per_arch.len(), loads.len());
    for (one, all) in loads.iter().zip(&verdict.per_arch) {
        assert_eq!(
            one.report, all.report,
            "load_buffer and Loader::verify disagree"
        );
    }
    check_verdict(&verdict);
    let inspect = InspectReport::new("fuzz-input", &verdict);
    assert_eq!(inspect.verdict.accepted, verdict.accepted);
    serde_json::to_string(&inspect).expect("an inspect report serializes");
    if tier1 && base.verify_hash {
        extract_contained(data);
    }
    match loads[0].report.gate_id() {
        Some("G9") => Some("G9"),
        Some(_) => Some("other"),
        None => None,
    }
}

/// Unpacks `data` with [`extract_recovering`] into a fresh folder, recording
/// its framing on the way: whatever the outcome, nothing appears beside the
/// destination; when it succeeds, every file the walk stored is there with
/// its size (unless another entry maps to the same path, e.g. `a//b` and
/// `a/b`), and the framing recorded on the unpack's walk is what the
/// recovery's own walk finds.
fn extract_contained(data: &[u8]) {
    let input = tempfile::NamedTempFile::new().expect("a temp file");
    std::fs::write(input.path(), data).expect("writing the temp file");
    let root = tempfile::tempdir().expect("a temp folder");
    let dest = root.path().join("out");
    let proof = DeflateProof::DEFAULT;
    let result = extract_recovering(
        input.path(),
        &dest,
        &RuntimeProfile::default(),
        false,
        &ExtractLimits::default(),
        false,
        proof,
    );
    if let Ok(unpacked) = &result {
        let own = recover_framing(input.path(), proof);
        match (&unpacked.recovered, own) {
            (Ok(recorded), Ok(own)) => {
                assert_eq!(
                    recorded.file.to_json(),
                    own.file.to_json(),
                    "recorded framing"
                );
                assert_eq!((recorded.exact, recorded.deflate), (own.exact, own.deflate));
            }
            (Err(recorded), Err(own)) => assert_eq!(recorded.to_string(), own.to_string()),
            (recorded, own) => panic!(
                "the recorded framing is {:?}, the recovery's own walk gives {:?}",
                recorded.as_ref().map(|r| r.exact),
                own.map(|r| r.exact)
            ),
        }
    }
    let beside: Vec<_> = std::fs::read_dir(root.path())
        .expect("listing the temp folder")
        .map(|e| e.expect("a folder entry").file_name())
        .filter(|n| n != "out")
        .collect();
    assert!(
        beside.is_empty(),
        "unpacking wrote {beside:?} outside its destination"
    );
    let Some(container) = result.ok().and_then(|unpacked| unpacked.tier1.container) else {
        return;
    };
    let mut seen: BTreeMap<PathBuf, usize> = BTreeMap::new();
    let path_of = |raw: &[u8]| {
        raw.split(|&b| b == b'/')
            .filter(|c| !c.is_empty() && *c != b".")
            .map(|c| String::from_utf8_lossy(c).into_owned())
            .collect::<PathBuf>()
    };
    for entry in &container.entries {
        *seen.entry(path_of(&entry.raw_name)).or_default() += 1;
    }
    for entry in &container.entries {
        let rel = path_of(&entry.raw_name);
        if entry.kind != EntryKind::File
            || entry.fate != EntryFate::Stored
            || seen[&rel] != 1
            || std::str::from_utf8(&entry.raw_name).is_err()
        {
            continue;
        }
        let meta = std::fs::symlink_metadata(dest.join(&rel))
            .unwrap_or_else(|e| panic!("member {} was not unpacked: {e}", entry.name));
        assert!(meta.is_file(), "member {} is not a file", entry.name);
        assert_eq!(meta.len(), entry.size, "member {} size", entry.name);
    }
}

fn check_loaded(loaded: &Loaded, arch: Arch) {
    let report = &loaded.report;
    assert_eq!(report.accepted, loaded.rejection.is_none());
    assert_eq!(
        report.gate_id(),
        loaded.rejection.as_ref().map(|r| r.gate.id())
    );
    assert_eq!(report.accepted, report.status.code() == 0);
    assert_eq!(report.instance_arch.arch(), Some(arch));
    if report.accepted {
        assert_eq!(report.tiers_run.len(), 4, "accepted without every tier");
        assert!(loaded.model.is_some());
    }
    report.summary();
    serde_json::to_string(report).expect("a report serializes");
}

fn check_verdict(verdict: &Verdict) {
    assert!(!verdict.targeted.is_empty());
    let lead = verdict.report();
    for load in &verdict.per_arch {
        let targeted = verdict
            .targeted
            .iter()
            .any(|&a| load.report.instance_arch.arch() == Some(a));
        if targeted && !load.report.accepted {
            assert!(!verdict.accepted, "a targeted arch refused it");
            assert!(!lead.accepted, "the lead load is not a refusal");
        }
    }
    if verdict.accepted {
        assert!(lead.accepted);
    }
}

/// `repack`: packs a member set (names the packager refuses are skipped),
/// first with `keep_refused`, then without, and checks:
/// * the packager's own output always passes the container tier;
/// * its read-back verdict is the loader's verdict on the same bytes, and
///   each targeted arch's `load_buffer` agrees with it;
/// * the checked pack succeeds exactly when the loader accepts, with the
///   same bytes;
/// * unpacking the tar and packing it again with the header's fields gives
///   the same bytes.
pub fn repack(members: &[(String, Vec<u8>)], pkg: PkgVersion, level: u32) {
    let kept = packable(members);
    let options = PackOptions {
        pkg_version: pkg,
        framing: framing_at(level),
        keep_refused: true,
        ..PackOptions::default()
    };
    let mut bytes = Vec::new();
    let outcome = packager_of(&kept)
        .write_to(&mut bytes, &options)
        .unwrap_or_else(|e| panic!("packing {} members failed: {e}", kept.len()));
    let verdict = Loader::new(&RuntimeProfile::default())
        .verify(Some(Cursor::new(&bytes)))
        .expect("reading from memory cannot fail");
    let first = &verdict.per_arch[0];
    assert!(
        first.model.is_some(),
        "the container tier refuses the packager's own output: {}",
        first.report.summary()
    );
    assert_eq!(outcome.report.accepted, verdict.accepted);
    check_verdict(&verdict);
    for (i, &arch) in Arch::ALL.iter().enumerate() {
        let loaded = load_buffer(Some(&bytes), &RuntimeProfile::for_arch(arch));
        check_loaded(&loaded, arch);
        assert_eq!(loaded.report, verdict.per_arch[i].report);
    }

    let checked = PackOptions {
        keep_refused: false,
        ..options
    };
    let mut again = Vec::new();
    match packager_of(&kept).write_to(&mut again, &checked) {
        Ok(_) => {
            assert!(verdict.accepted, "the checked pack passed a refused NEFF");
            assert!(again == bytes, "the checked pack wrote different bytes");
        }
        Err(e) if e.report().is_some() => {
            let report = e.report().expect("a refusal's report");
            assert!(
                !verdict.accepted,
                "the checked pack refused an accepted NEFF: {}",
                report.summary()
            );
        }
        Err(e) => panic!("the checked pack failed: {e}"),
    }

    let repacked =
        repack_bytes(&bytes, framing_at(level)).unwrap_or_else(|e| panic!("repack: {e}"));
    assert!(repacked == bytes, "unpack + pack changed the bytes");
}

/// The members the packager takes, in order: valid names, no duplicates,
/// no name that is also a folder of another.
pub fn packable(members: &[(String, Vec<u8>)]) -> Vec<(String, Vec<u8>)> {
    let mut files = BTreeSet::new();
    let mut dirs = BTreeSet::new();
    let mut kept = Vec::new();
    for (name, data) in members {
        let Ok(member) = MemberName::new(name) else {
            continue;
        };
        let parents: Vec<String> = member.parents().map(str::to_string).collect();
        if files.contains(name) || dirs.contains(name) || parents.iter().any(|p| files.contains(p))
        {
            continue;
        }
        files.insert(name.clone());
        dirs.extend(parents);
        kept.push((name.clone(), data.clone()));
    }
    kept
}

fn packager_of(members: &[(String, Vec<u8>)]) -> Packager {
    let mut packager = Packager::new();
    for (name, data) in members {
        packager
            .add_bytes(name, data.clone())
            .unwrap_or_else(|e| panic!("a packable name was refused: {e}"));
    }
    packager
}

/// Unpacks a NEFF in memory (the tar walked with `payload_stream` and
/// `TarReader`) and packs its members again with the same header fields
/// (all but `data_size` and `hash`, which are computed) at gzip `level`
/// (not recorded in the file).
pub fn repack_bytes(neff: &[u8], framing: neff_schema::Framing) -> Result<Vec<u8>, String> {
    let raw: [u8; HEADER_LEN] = neff
        .get(..HEADER_LEN)
        .and_then(|h| h.try_into().ok())
        .ok_or("shorter than a header")?;
    let fields = NeffHeader::from_bytes(raw).fields();
    let pkg = PkgVersion::from_value(fields.pkg_version).ok_or("bad pkg_version")?;
    let end = usize::try_from(fields.data_size)
        .ok()
        .and_then(|n| n.checked_add(HEADER_LEN))
        .filter(|&end| end <= neff.len())
        .ok_or("data_size is past the end")?;
    let (_, stream) = payload_stream(&neff[HEADER_LEN..end]).map_err(|e| e.to_string())?;
    let mut tar = TarReader::new(stream);
    let mut packager = Packager::new();
    while let Some(entry) = tar.next_entry().map_err(|e| e.to_string())? {
        let name = String::from_utf8(entry.name).map_err(|_| "a name is not UTF-8")?;
        match entry.kind {
            EntryKind::Directory => {
                packager
                    .add_dir(name.trim_end_matches('/'))
                    .map_err(|e| e.to_string())?;
            }
            EntryKind::File => {
                let mut data = Vec::new();
                tar.copy_data(&mut data).map_err(|e| e.to_string())?;
                packager.add_bytes(&name, data).map_err(|e| e.to_string())?;
            }
            other => return Err(format!("{name}: a {} entry", other.name())),
        }
    }
    let mut header = HeaderPatch::from_fields(&fields);
    header.data_size = None;
    header.hash = None;
    let options = PackOptions {
        pkg_version: pkg,
        framing,
        header,
        keep_refused: true,
        ..PackOptions::default()
    };
    let mut out = Vec::new();
    packager
        .write_to(&mut out, &options)
        .map_err(|e| e.to_string())?;
    Ok(out)
}

/// `roundtrip`: a valid build spec (as JSON, what `neff build` reads) is
/// built twice into memory, and
/// * both builds give the same bytes;
/// * the loader accepts them on every arch the NEFF targets;
/// * unpacking the tar in memory and packing it again with the header's
///   fields and the spec's gzip level gives the same bytes.
pub fn roundtrip(spec: &serde_json::Value) {
    let build = || {
        let spec: BuildSpec =
            serde_json::from_value(spec.clone()).expect("a generated spec parses");
        // The spec's framing preset at its level: what a repack must follow.
        let preset = match &spec.framing {
            Some(neff_writer::build_spec::FramingSpec::Preset(name)) => {
                neff_schema::FramingPreset::parse(name).unwrap_or_default()
            }
            _ => neff_schema::FramingPreset::default(),
        };
        let mut framing = preset.framing();
        framing.gzip.deflate = framing.gzip.deflate.with_level(spec.level.unwrap_or(1));
        let builder = spec
            .into_builder(std::path::Path::new("."))
            .unwrap_or_else(|e| panic!("a generated spec is refused: {e}"));
        let mut bytes = Vec::new();
        builder
            .write_to(&mut bytes)
            .unwrap_or_else(|e| panic!("a generated spec does not build: {e}"));
        (bytes, framing)
    };
    let (bytes, framing) = build();
    let (again, _) = build();
    assert!(again == bytes, "building the same spec twice differs");
    let verdict = Loader::new(&RuntimeProfile::default())
        .verify(Some(Cursor::new(&bytes)))
        .expect("reading from memory cannot fail");
    assert!(
        verdict.accepted,
        "a generated NEFF is refused: {}",
        verdict.report().summary()
    );
    check_verdict(&verdict);
    let repacked = repack_bytes(&bytes, framing.clone()).unwrap_or_else(|e| panic!("repack: {e}"));
    assert!(repacked == bytes, "unpack + pack changed the bytes");
    let unpacked = repack_via_files(&bytes, framing);
    assert!(
        unpacked == bytes,
        "neff unpack + neff pack --header changed the bytes"
    );
}

/// What `neff unpack FILE -o DIR` then `neff pack DIR --header H.json` do:
/// [`extract`] into a temp folder, [`Packager::from_dir`], and the header's
/// fields (but `data_size` and `hash`) as the patch.
pub fn repack_via_files(neff: &[u8], framing: neff_schema::Framing) -> Vec<u8> {
    let input = tempfile::NamedTempFile::new().expect("a temp file");
    std::fs::write(input.path(), neff).expect("writing the temp file");
    let root = tempfile::tempdir().expect("a temp folder");
    let dest = root.path().join("out");
    let (_, tier1) = extract(
        input.path(),
        &dest,
        &RuntimeProfile::default(),
        false,
        &ExtractLimits::default(),
    )
    .unwrap_or_else(|e| panic!("unpack: {e}"));
    let container = tier1.container.expect("an accepted unpack has a container");
    let fields = container.header.fields();
    let mut header = HeaderPatch::from_fields(&fields);
    header.data_size = None;
    header.hash = None;
    let options = PackOptions {
        pkg_version: PkgVersion::from_value(fields.pkg_version).expect("pkg 1 or 2"),
        framing,
        header,
        ..PackOptions::default()
    };
    let mut out = Vec::new();
    Packager::from_dir(Path::new(&dest))
        .and_then(|p| p.write_to(&mut out, &options))
        .unwrap_or_else(|e| panic!("pack: {e}"));
    out
}

/// A `repack` case as JSON, for `tests/regressions/repack-<n>.json`:
/// `{"pkg_version": 1|2, "level": n, "members": [{"name": …, "base64": …}]}`.
pub fn repack_case_to_json(
    members: &[(String, Vec<u8>)],
    pkg: PkgVersion,
    level: u32,
) -> serde_json::Value {
    serde_json::json!({
        "pkg_version": pkg.value(),
        "level": level,
        "members": members
            .iter()
            .map(|(name, data)| serde_json::json!({
                "name": name,
                "base64": neff_writer::base64::encode(data),
            }))
            .collect::<Vec<_>>(),
    })
}

/// Reads a case written by [`repack_case_to_json`].
pub fn repack_case_from_json(
    case: &serde_json::Value,
) -> (Vec<(String, Vec<u8>)>, PkgVersion, u32) {
    let pkg = case["pkg_version"]
        .as_u64()
        .and_then(PkgVersion::from_value)
        .expect("pkg_version 1 or 2");
    let level = case["level"].as_u64().expect("level") as u32;
    let members = case["members"]
        .as_array()
        .expect("members")
        .iter()
        .map(|m| {
            let name = m["name"].as_str().expect("name").to_string();
            let data = neff_writer::base64::decode(m["base64"].as_str().expect("base64"))
                .expect("valid base64");
            (name, data)
        })
        .collect();
    (members, pkg, level)
}

/// The default framing at deflate `level`.
fn framing_at(level: u32) -> neff_schema::Framing {
    let mut framing = neff_schema::Framing::default();
    framing.gzip.deflate = framing.gzip.deflate.with_level(level);
    framing
}

/// `carrier`: any bytes, as a file named like a compile-cache HLO module and
/// like a TorchScript zip. Finding the NEFFs it carries never panics; each
/// one found lies inside the file where it says, copies out at its length,
/// and opens as the loader reads it.
pub fn carrier(data: &[u8]) {
    let dir = tempfile::tempdir().expect("temp folder");
    for name in ["wrapped_neff.hlo", "model.neuron"] {
        let path = dir.path().join(name);
        std::fs::write(&path, data).expect("write the input");
        let Ok(Some(neffs)) = neff_tools::carrier::carried(&path) else {
            continue;
        };
        assert!(!neffs.is_empty(), "a carrier with no NEFF is an error");
        for (i, neff) in neffs.iter().enumerate() {
            assert_eq!((neff.index, neff.count), (i, neffs.len()));
            if let Some(at) = neff.offset {
                assert!(at + neff.len <= data.len() as u64, "{neff}");
            }
            let mut out = Vec::new();
            if neff_tools::carrier::copy_out(&path, neff, &mut out).is_ok() {
                assert_eq!(out.len() as u64, neff.len, "{neff}");
                if let Some(at) = neff.offset {
                    assert_eq!(&data[at as usize..][..out.len()], &out[..], "{neff}");
                }
            }
            let _ = neff_tools::carrier::open_neff(&path, Some(i));
        }
    }
}
