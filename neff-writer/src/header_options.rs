//! Header defaults and overrides for the packager.

pub use neff_schema::header::HeaderPatch;
use neff_schema::header::{Blob, Text};
use neff_schema::{Framing, HeaderFields, NeffHeader, PkgVersion, Uuid, HEADER_LEN};

/// The default `neff_build_version`: this tool's name and version, in the
/// producer's `"<version>%<origin>"` shape, e.g. `"0.1.0%neff-rs"`.
pub const DEFAULT_BUILD_VERSION: &str = concat!(env!("CARGO_PKG_VERSION"), "%neff-rs");

/// How the header UUID is chosen.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum UuidChoice {
    /// Derived from the payload: its SHA-256 with the v4 bits set. Builds stay
    /// reproducible and different payloads get different UUIDs.
    #[default]
    FromContent,
    /// This exact UUID.
    Explicit(Uuid),
    /// The UUID a lifted or unpacked NEFF carried, kept while the payload
    /// still hashes to the header `hash` it had
    /// ([`PackOptions::source_hash`](crate::PackOptions::source_hash)); once
    /// the payload changes, or with no source hash, a new one is derived
    /// from the content (as [`UuidChoice::FromContent`]) and the outcome
    /// says so.
    Recorded(Uuid),
    /// A fresh random v4 UUID (the build is then not reproducible).
    Random,
}

/// What `neff unpack --header-out` writes and `neff pack --header` reads: the
/// header fields (every key optional, as in [`HeaderPatch`]) plus, under
/// `"framing"`, how the payload was framed, and under `"not_reproduced"`,
/// what a repack cannot give back byte for byte.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct HeaderFile {
    /// The header fields.
    pub header: HeaderPatch,
    /// The payload's framing, when recorded.
    pub framing: Option<Framing>,
    /// What a repack will not reproduce (said again by `pack`).
    pub not_reproduced: Vec<String>,
    /// The header `hash` of the NEFF this was recorded from: its `uuid` is
    /// reused only while the payload is unchanged ([`UuidChoice::Recorded`]),
    /// and the outcome says whether the payload is that NEFF's.
    pub source_hash: Option<Blob<32>>,
}

/// The keys of a header file that are not header fields.
const FRAMING_KEY: &str = "framing";
const NOT_REPRODUCED_KEY: &str = "not_reproduced";
const SOURCE_HASH_KEY: &str = "source_hash";

/// The header file `neff unpack` records in the tree it writes (the NEFF's
/// header fields and framing, as `--header-out` writes them), which `neff
/// pack` of that tree reads when given no `--header` and never packs. Its
/// name is in neff's temp namespace, so no member can have it.
pub const RECORDED_HEADER: &str = ".neff-unpack.header.json";

impl HeaderFile {
    /// The header file `neff unpack` recorded in `dir` ([`RECORDED_HEADER`]),
    /// with its path; `None` when there is none.
    pub fn recorded_in(
        dir: &std::path::Path,
    ) -> Result<Option<(std::path::PathBuf, HeaderFile)>, String> {
        let path = dir.join(RECORDED_HEADER);
        match std::fs::symlink_metadata(&path) {
            Ok(meta) if meta.is_file() => Ok(Some((path.clone(), HeaderFile::from_path(&path)?))),
            _ => Ok(None),
        }
    }

    /// Reads and parses the header file at `path` (`--header HEADER.json`);
    /// the error names the file.
    pub fn from_path(path: &std::path::Path) -> Result<HeaderFile, String> {
        let bytes =
            crate::small_file::read_small_file(path, crate::small_file::SMALL_MAX, "header file")
                .map_err(|e| e.to_string())?;
        let text =
            String::from_utf8(bytes).map_err(|e| format!("{}: not UTF-8: {e}", path.display()))?;
        HeaderFile::parse(&text)
            .map_err(|e| format!("{}: invalid header JSON: {e}", path.display()))
    }

    /// Parses a header file. Unknown keys are refused, naming the key.
    pub fn parse(text: &str) -> Result<HeaderFile, String> {
        let mut value: serde_json::Value =
            serde_json::from_str(text).map_err(|e| format!("invalid JSON: {e}"))?;
        let object = value
            .as_object_mut()
            .ok_or_else(|| "a header file is a JSON object".to_string())?;
        let framing = match object.remove(FRAMING_KEY) {
            Some(v) => Some(
                serde_json::from_value::<Framing>(v)
                    .map_err(|e| format!("key \"{FRAMING_KEY}\": {e}"))?,
            ),
            None => None,
        };
        let not_reproduced = match object.remove(NOT_REPRODUCED_KEY) {
            Some(v) => serde_json::from_value(v)
                .map_err(|e| format!("key \"{NOT_REPRODUCED_KEY}\": {e}"))?,
            None => Vec::new(),
        };
        let source_hash = match object.remove(SOURCE_HASH_KEY) {
            Some(v) => Some(
                serde_json::from_value(v).map_err(|e| format!("key \"{SOURCE_HASH_KEY}\": {e}"))?,
            ),
            None => None,
        };
        let header = serde_json::from_value(value).map_err(|e| e.to_string())?;
        Ok(HeaderFile {
            header,
            framing,
            not_reproduced,
            source_hash,
        })
    }

    /// The file's JSON text (pretty, with a final newline).
    pub fn to_json(&self) -> String {
        let mut value = serde_json::to_value(&self.header).unwrap_or_default();
        if let Some(object) = value.as_object_mut() {
            object.retain(|_, v| !v.is_null());
            if let Some(f) = &self.framing {
                object.insert(
                    FRAMING_KEY.into(),
                    serde_json::to_value(f.without_entries()).unwrap_or_default(),
                );
            }
            if let Some(hash) = &self.source_hash {
                object.insert(
                    SOURCE_HASH_KEY.into(),
                    serde_json::to_value(hash).unwrap_or_default(),
                );
            }
            if !self.not_reproduced.is_empty() {
                object.insert(
                    NOT_REPRODUCED_KEY.into(),
                    serde_json::to_value(&self.not_reproduced).unwrap_or_default(),
                );
            }
        }
        let entries = self
            .framing
            .as_ref()
            .map_or(&[][..], |f| &f.tar.entries[..]);
        let lists = [crate::pretty_json::Streamed::of(
            "/framing/tar",
            "entries",
            entries,
            true,
        )];
        crate::pretty_json::to_pretty(value, &lists).unwrap_or_default() + "\n"
    }
}

/// The header a build starts from, before payload-derived fields are filled
/// in: header_size 0x400, major 2, minor 0, unused_0 1, requested_tpb_count 1,
/// vnc_size 1, build_version [`DEFAULT_BUILD_VERSION`], everything else zero.
pub fn default_fields(pkg: PkgVersion) -> HeaderFields {
    let mut h = NeffHeader::default().fields();
    h.pkg_version = pkg.value();
    h.header_size = HEADER_LEN as u64;
    h.neff_version_major = 2;
    h.neff_version_minor = 0;
    h.unused_0 = 1;
    h.requested_tpb_count = 1;
    h.vnc_size = 1;
    h.build_version = Text::new(DEFAULT_BUILD_VERSION).unwrap_or_default();
    h
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults() {
        let h = default_fields(PkgVersion::Md5Gzip);
        let raw = NeffHeader::from_fields(&h);
        assert_eq!(raw.pkg_version(), 2);
        assert_eq!(raw.header_size(), 0x400);
        assert_eq!(raw.major(), 2);
        assert_eq!(raw.unused_0(), 1);
        assert_eq!(raw.requested_tpb_count(), 1);
        assert_eq!(raw.vnc_size(), 1);
        assert_eq!(h.build_version.as_clean_str(), Some(DEFAULT_BUILD_VERSION));
        assert!(DEFAULT_BUILD_VERSION.ends_with("%neff-rs"));
    }

    #[test]
    fn patch_from_json_overrides_only_what_it_names() {
        let patch: HeaderPatch = serde_json::from_str(
            r#"{"name": "m", "feature_bits": 4, "uuid": "561826fb-125f-4bb8-991c-29e085c8949a"}"#,
        )
        .unwrap();
        let mut h = default_fields(PkgVersion::Md5Gzip);
        patch.apply(&mut h);
        assert_eq!(h.name.as_clean_str(), Some("m"));
        assert_eq!(h.feature_bits, 4);
        for text in [
            r#"{"feature_bits": "vnc,custom_ops"}"#,
            r#"{"feature_bits": "0x404"}"#,
        ] {
            let file = HeaderFile::parse(text).unwrap();
            assert_eq!(file.header.feature_bits, Some(0x404), "{text}");
        }
        let err = HeaderFile::parse(r#"{"feature_bits": "vnc,nope"}"#).unwrap_err();
        assert!(err.contains("neff_feature_vnc"), "{err}");
        assert_eq!(h.uuid.to_string(), "561826fb-125f-4bb8-991c-29e085c8949a");
        assert_eq!(h.neff_version_major, 2);
        assert!(serde_json::from_str::<HeaderPatch>(r#"{"nmae": "m"}"#).is_err());
    }
}
