//! The choices of `neff pack` as plain values, and the one mapping from them
//! (over a `--header` file) to [`PackOptions`]: the CLI and the Python
//! package both build their options here, so they cannot drift apart.

use neff_schema::features::FeatureMask;
use neff_schema::header::Text;
use neff_schema::{FramingPreset, PkgVersion};
use serde::de::{Deserialize, Deserializer, Error as _};

use crate::build_spec::parse_uuid;
use crate::error::{Error, ErrorKind};
use crate::{HeaderFile, HeaderPatch, PackOptions, UuidChoice};

/// What `neff pack` can be told, each optional. A value given here wins over
/// the header file's, which wins over the default. Its serde form (a
/// package version number, a preset name, a [`FeatureMask`]) is how Python's
/// `neff.pack` passes it.
#[derive(Debug, Clone, Default, serde::Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct PackSettings {
    /// Packaging version (default 2).
    #[serde(deserialize_with = "pkg_version")]
    pub pkg_version: Option<PkgVersion>,
    /// Framing preset (default `gnu`; a header file's recorded framing wins
    /// over the default preset, not over a given one's level).
    #[serde(deserialize_with = "framing")]
    pub framing: Option<FramingPreset>,
    /// Deflate level 1–9.
    pub level: Option<u32>,
    /// A UUID, or `random`; default: derived from the payload.
    pub uuid: Option<String>,
    /// The header's model name.
    pub name: Option<String>,
    /// The header's build version text.
    pub build_version: Option<String>,
    /// The header's feature bits.
    #[serde(deserialize_with = "FeatureMask::optional_bits")]
    pub feature_bits: Option<u64>,
    /// The header's NEFF major version.
    pub major: Option<u64>,
    /// The header's NEFF minor version.
    pub minor: Option<u64>,
    /// The header's vnc_size.
    pub vnc_size: Option<u32>,
    /// The header's requested_tpb_count.
    pub requested_tpb_count: Option<u32>,
    /// Compression threads (default: the available cores).
    pub threads: Option<usize>,
    /// Keep (write) the NEFF even when the loader's gates refuse it.
    pub keep_refused: bool,
    /// Read the whole output back through the loader
    /// ([`PackOptions::paranoid_readback`]).
    pub paranoid_readback: bool,
    /// Skip the fsync of the file and its folder ([`PackOptions::fsync`]).
    pub no_fsync: bool,
}

/// A package version number (1 or 2).
fn pkg_version<'de, D: Deserializer<'de>>(d: D) -> Result<Option<PkgVersion>, D::Error> {
    let number = Option::<u64>::deserialize(d)?;
    let pkg = |v: u64| PkgVersion::from_value(v).ok_or(format!("pkg_version {v} is not 1 or 2"));
    number.map(pkg).transpose().map_err(D::Error::custom)
}

/// A framing preset's name.
fn framing<'de, D: Deserializer<'de>>(d: D) -> Result<Option<FramingPreset>, D::Error> {
    let preset = |name: String| {
        FramingPreset::parse(&name).ok_or_else(|| {
            let known: Vec<&str> = FramingPreset::ALL.iter().map(|p| p.name()).collect();
            format!("framing {name:?} is not one of {}", known.join(", "))
        })
    };
    let name = Option::<String>::deserialize(d)?;
    name.map(preset).transpose().map_err(D::Error::custom)
}

fn bad(message: String) -> Error {
    Error::new(ErrorKind::BadOption, message)
}

/// For packing the tree at `dir`: with no vnc_size from a flag or a header
/// file, a tree whose KELF descriptor lists N > 1 graphs gets vnc_size N and,
/// unless feature bits were given, the `neff_feature_vnc` bit, as the builder
/// sets them. Returns a note saying so, when it did.
pub fn infer_virtual_core(dir: &std::path::Path, options: &mut PackOptions) -> Option<String> {
    if options.header.vnc_size.is_some() {
        return None;
    }
    let graphs = graphs_in_tree(dir).filter(|&n| n > 1)?;
    options.header.vnc_size = u32::try_from(graphs).ok();
    let bit = options.header.feature_bits.is_none();
    if bit {
        options.header.feature_bits = Some(neff_schema::features::VNC);
    }
    Some(format!(
        "the KELF descriptor lists {graphs} graphs: vnc_size {graphs}{} (--vnc-size and --feature-bits choose otherwise)",
        if bit { " and feature bit neff_feature_vnc" } else { "" }
    ))
}

/// How many graphs the tree's KELF descriptor lists (`neff.json`'s `__kelf`
/// node names it), when both can be read: regular files within the
/// loader's manifest cap, the KELF named by a valid member name (never a
/// path out of `dir`).
fn graphs_in_tree(dir: &std::path::Path) -> Option<usize> {
    use neff_schema::manifest::{KelfDescriptor, NeffJson};
    let read = |name: &str| {
        crate::small_file::read_small_file(&dir.join(name), neff_loader::MANIFEST_MAX, name).ok()
    };
    let neff_json: NeffJson = serde_json::from_slice(&read("neff.json")?).ok()?;
    let node = neff_json.nodes.get(neff_json.kelf_node()?)?;
    let member = node.attrs.as_ref()?.kelf.clone()?;
    crate::MemberName::new(&member).ok()?;
    let kelf: KelfDescriptor = serde_json::from_slice(&read(&member)?).ok()?;
    Some(kelf.graphs.len())
}

impl PackSettings {
    /// The writer's options: these settings over `file` (a `--header` file,
    /// or `HeaderFile::default()`). A text too long for its header field,
    /// a bad UUID or level is a `BadOption` error naming it.
    pub fn options(&self, file: HeaderFile) -> Result<PackOptions, Error> {
        let mut patch = file.header;
        // A recorded pkg_version the packagers know selects the packaging
        // (unless one is given); one they do not know stays a header field,
        // written as it is, which the loader's G7 refuses (a negative fixture).
        let recorded_pkg = patch.pkg_version.and_then(PkgVersion::from_value);
        if recorded_pkg.is_some() {
            patch.pkg_version = None;
        }
        let pkg_version = self
            .pkg_version
            .or(recorded_pkg)
            .unwrap_or(PkgVersion::Md5Gzip);
        let text =
            |key: &str, value: &str, e: neff_schema::Error| bad(format!("{key} {value:?}: {e}"));
        if let Some(name) = &self.name {
            patch.name = Some(Text::new(name).map_err(|e| text("name", name, e))?);
        }
        if let Some(v) = &self.build_version {
            patch.build_version = Some(Text::new(v).map_err(|e| text("build_version", v, e))?);
        }
        let uuid = uuid_choice(self.uuid.as_deref(), &mut patch, file.source_hash)?;
        patch.feature_bits = self.feature_bits.or(patch.feature_bits);
        patch.neff_version_major = self.major.or(patch.neff_version_major);
        patch.neff_version_minor = self.minor.or(patch.neff_version_minor);
        patch.vnc_size = self.vnc_size.or(patch.vnc_size);
        patch.requested_tpb_count = self.requested_tpb_count.or(patch.requested_tpb_count);
        let preset = self.framing.unwrap_or_default();
        let mut framing = file.framing.unwrap_or_else(|| preset.framing());
        if let Some(level) = self.level {
            if !(1..=9).contains(&level) {
                return Err(bad(format!("level {level} is not 1 to 9")));
            }
            framing.gzip.deflate = framing.gzip.deflate.with_level(level);
        }
        let defaults = PackOptions::default();
        Ok(PackOptions {
            pkg_version,
            framing,
            compiler_header: preset.is_compiler_like(),
            uuid,
            source_hash: file.source_hash,
            header: patch,
            keep_refused: self.keep_refused,
            paranoid_readback: self.paranoid_readback,
            threads: self.threads.unwrap_or(defaults.threads),
            fsync: !self.no_fsync,
            ..defaults
        })
    }
}

/// The UUID rule shared by `pack` and `build`: a `given` UUID (or `random`)
/// wins; `keep` keeps the recorded one whatever the payload; otherwise a
/// UUID recorded from a NEFF whose hash is known (`source_hash`) is kept
/// only while the payload is unchanged ([`UuidChoice::Recorded`]). Moves
/// the UUID out of `patch` when the choice is not a fixed one.
pub(crate) fn uuid_choice(
    given: Option<&str>,
    patch: &mut HeaderPatch,
    source_hash: Option<neff_schema::header::Blob<32>>,
) -> Result<UuidChoice, Error> {
    match given {
        Some("keep") => Ok(UuidChoice::FromContent),
        Some(given) => match parse_uuid(given).map_err(|e| bad(format!("uuid: {e}")))? {
            UuidChoice::Explicit(u) => {
                patch.uuid = Some(u);
                Ok(UuidChoice::FromContent)
            }
            choice => {
                patch.uuid = None;
                Ok(choice)
            }
        },
        None => Ok(match (patch.uuid.take(), source_hash) {
            (Some(uuid), Some(_)) => UuidChoice::Recorded(uuid),
            (uuid, _) => {
                patch.uuid = uuid;
                UuidChoice::FromContent
            }
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::HeaderPatch;

    #[test]
    fn a_given_value_wins_over_the_header_file_which_wins_over_the_default() {
        let file = HeaderFile {
            header: HeaderPatch {
                pkg_version: Some(1),
                vnc_size: Some(2),
                ..HeaderPatch::default()
            },
            ..HeaderFile::default()
        };
        let from_file = PackSettings::default().options(file.clone()).unwrap();
        assert_eq!(from_file.pkg_version, PkgVersion::Sha256Tar);
        assert_eq!(from_file.header.vnc_size, Some(2));
        let given = PackSettings {
            pkg_version: Some(PkgVersion::Md5Gzip),
            vnc_size: Some(4),
            ..PackSettings::default()
        };
        let options = given.options(file).unwrap();
        assert_eq!(options.pkg_version, PkgVersion::Md5Gzip);
        assert_eq!(options.header.vnc_size, Some(4));
        assert_eq!(
            PackSettings::default()
                .options(HeaderFile::default())
                .unwrap()
                .pkg_version,
            PkgVersion::Md5Gzip
        );
    }

    #[test]
    fn bad_values_are_named() {
        let fail = |s: PackSettings| s.options(HeaderFile::default()).unwrap_err();
        let e = fail(PackSettings {
            level: Some(10),
            ..PackSettings::default()
        });
        assert_eq!(e.kind(), ErrorKind::BadOption);
        assert!(e.to_string().contains("level 10"), "{e}");
        let e = fail(PackSettings {
            uuid: Some("nope".into()),
            ..PackSettings::default()
        });
        assert!(e.to_string().starts_with("uuid: "), "{e}");
        let e = fail(PackSettings {
            name: Some("x".repeat(300)),
            ..PackSettings::default()
        });
        assert!(e.to_string().starts_with("name \"xxx"), "{e}");
        let random = PackSettings {
            uuid: Some("random".into()),
            ..PackSettings::default()
        };
        assert_eq!(
            random.options(HeaderFile::default()).unwrap().uuid,
            UuidChoice::Random
        );
    }

    #[test]
    fn the_serde_form_reads_numbers_names_and_masks() {
        let read =
            |json: &str| serde_json::from_str::<PackSettings>(json).map_err(|e| e.to_string());
        let s = read(r#"{"pkg_version": 1, "framing": "neuronx-cc", "feature_bits": ["vnc", 2]}"#)
            .unwrap();
        assert_eq!(s.pkg_version, Some(PkgVersion::Sha256Tar));
        assert_eq!(s.framing, FramingPreset::parse("neuronx-cc"));
        assert_eq!(s.feature_bits, Some(0x402));
        assert!(read(r#"{"pkg_version": 3}"#)
            .unwrap_err()
            .contains("pkg_version 3 is not 1 or 2"));
        assert!(read(r#"{"framing": "nope"}"#)
            .unwrap_err()
            .contains("is not one of gnu"));
        assert!(read(r#"{"fsync": true}"#)
            .unwrap_err()
            .contains("unknown field `fsync`"));
    }
}
