//! How a NEFF's payload is framed: everything its bytes depend on that the
//! member tree does not carry (spec §3, §11.1–§11.3).
//!
//! A [`Framing`] is pure data. The writer frames a payload by it; the reader
//! recovers one from a NEFF so a repack gives the same bytes. Three named
//! presets describe the framings this project writes for new NEFFs.

use serde::{Deserialize, Serialize};

use crate::header::Blob;

/// How a payload digest is laid out in the header's hash field (spec §11.1).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "kebab-case")]
pub enum HashLayout {
    /// The digest bytes as the hash function outputs them (neuronx-cc ≤ 2.16,
    /// neuron-cc, the runtime's embedded fixture).
    Standard,
    /// Each 4-byte word of the digest byte-reversed, i.e. the state words
    /// written big-endian (neuronx-cc 2.18 and later).
    WordReversed,
}

impl HashLayout {
    /// Both layouts, in the order a verifier tries them.
    pub const ALL: [HashLayout; 2] = [HashLayout::Standard, HashLayout::WordReversed];

    /// The layout's name as the CLI and JSON spell it.
    pub fn name(self) -> &'static str {
        match self {
            HashLayout::Standard => "standard",
            HashLayout::WordReversed => "word-reversed",
        }
    }

    /// Parses [`HashLayout::name`].
    pub fn parse(text: &str) -> Option<HashLayout> {
        HashLayout::ALL.into_iter().find(|l| l.name() == text)
    }

    /// The digest as stored under this layout. A trailing partial word (never
    /// the case for MD5 or SHA-256) is kept as is.
    pub fn apply(self, digest: &[u8]) -> Vec<u8> {
        let mut out = digest.to_vec();
        if self == HashLayout::WordReversed {
            for word in out.chunks_exact_mut(4) {
                word.reverse();
            }
        }
        out
    }
}

/// Which hash layouts a verifier accepts (`--hash-layout`).
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize, schemars::JsonSchema,
)]
#[serde(rename_all = "kebab-case")]
pub enum HashLayoutPolicy {
    /// Either layout (the default: real runtimes ran files of both).
    #[default]
    Any,
    /// Only [`HashLayout::Standard`].
    Standard,
    /// Only [`HashLayout::WordReversed`].
    WordReversed,
}

impl HashLayoutPolicy {
    /// Every policy.
    pub const ALL: [HashLayoutPolicy; 3] = [
        HashLayoutPolicy::Any,
        HashLayoutPolicy::Standard,
        HashLayoutPolicy::WordReversed,
    ];

    /// Parses [`HashLayoutPolicy::name`].
    pub fn parse(text: &str) -> Option<HashLayoutPolicy> {
        HashLayoutPolicy::ALL.into_iter().find(|p| p.name() == text)
    }

    /// The layouts this policy accepts, in the order they are tried.
    pub fn layouts(self) -> &'static [HashLayout] {
        match self {
            HashLayoutPolicy::Any => &HashLayout::ALL,
            HashLayoutPolicy::Standard => &[HashLayout::Standard],
            HashLayoutPolicy::WordReversed => &[HashLayout::WordReversed],
        }
    }

    /// The policy's name as the CLI and JSON spell it.
    pub fn name(self) -> &'static str {
        match self {
            HashLayoutPolicy::Any => "any",
            HashLayoutPolicy::Standard => "standard",
            HashLayoutPolicy::WordReversed => "word-reversed",
        }
    }
}

/// The whole framing of a payload.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Framing {
    /// The tar layer.
    pub tar: TarFraming,
    /// The gzip layer (pkg 2 only; ignored for a raw-tar pkg 1 payload).
    pub gzip: GzipFraming,
    /// How the digest is stored in the header.
    pub hash: HashFraming,
}

/// How the payload digest fills the header's 32-byte hash field.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct HashFraming {
    /// The digest's byte layout.
    pub layout: HashLayout,
    /// pkg 2: the 16 bytes after the MD5 (+0xBC..+0xCB), as hex with trailing
    /// zero bytes trimmed: `"30303030…"` (`'0'` × 16) or `""` (zeros).
    pub tail: Blob<16>,
}

/// `'0'` × 16: what the runtime's fixture and the Python packager store after the MD5.
pub const ASCII_ZERO_TAIL: [u8; 16] = [b'0'; 16];

/// The tar header magic and version (spec §3.3).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "kebab-case")]
pub enum TarFormat {
    /// GNU: `"ustar "` + `" \0"`; names over 100 bytes get an `L` record.
    Gnu,
    /// POSIX ustar: `"ustar\0"` + `"00"`; long names are split into prefix and name.
    Ustar,
}

/// How a tar header's numeric fields are written (all octal, zero-filled).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "kebab-case")]
pub enum TarNumbers {
    /// Digits then NUL in every field; devmajor/devminor left empty (this
    /// project's GNU framing).
    Gnu,
    /// Digits then NUL in every field, devmajor/devminor included (Python's
    /// `tarfile`).
    Python,
    /// libarchive: 8-byte fields `"%06o \0"`, 12-byte fields `"%011o "`
    /// (neuronx-cc's C++ packager).
    Libarchive,
}

/// The order members are written in.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "kebab-case")]
pub enum MemberOrder {
    /// Byte-sorted by path.
    Sorted,
    /// Byte-sorted, with `neff.json` moved to the end (neuronx-cc 2.21+).
    NeffJsonLast,
    /// The order of [`TarFraming::entries`]; members not listed follow, sorted.
    Listed,
}

/// The owner, mode and time fields of one tar header.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct EntryFields {
    /// Permission bits of regular files.
    pub mode: u32,
    /// Permission bits of directory entries.
    pub dir_mode: u32,
    /// Owner id.
    pub uid: u64,
    /// Group id.
    pub gid: u64,
    /// Owner name (at most 32 bytes).
    pub uname: String,
    /// Group name (at most 32 bytes).
    pub gname: String,
    /// Modification time, seconds since the epoch.
    pub mtime: u64,
}

/// The tar layer.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct TarFraming {
    /// Header magic and version.
    pub format: TarFormat,
    /// Numeric field encoding.
    pub numbers: TarNumbers,
    /// Write a directory entry for every folder (GNU `tar` style).
    pub directories: bool,
    /// Member order.
    pub order: MemberOrder,
    /// Fields of every header, unless an entry overrides them.
    pub defaults: EntryFields,
    /// Zero blocks after the last entry (2 in every known writer).
    pub end_blocks: u32,
    /// The tar stream is zero-padded to a multiple of this many bytes (10240
    /// for GNU tar and Python; 512, i.e. no padding, for libarchive).
    pub record_size: u64,
    /// Per-entry overrides, and with [`MemberOrder::Listed`] the order.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub entries: Vec<EntryFraming>,
}

/// One entry's overrides of [`TarFraming::defaults`].
#[serde_with::skip_serializing_none]
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct EntryFraming {
    /// The member path (directories end in `/`).
    pub name: String,
    /// Permission bits.
    pub mode: Option<u32>,
    /// Owner id.
    pub uid: Option<u64>,
    /// Group id.
    pub gid: Option<u64>,
    /// Owner name.
    pub uname: Option<String>,
    /// Group name.
    pub gname: Option<String>,
    /// Modification time.
    pub mtime: Option<u64>,
    /// A pax extended header written just before the entry.
    pub pax: Option<PaxFraming>,
}

/// A pax `x` header: its own header fields and its records.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct PaxFraming {
    /// The `x` header's name (`././@PaxHeader` for Python, `dir/PaxHeader/base`
    /// for libarchive).
    pub name: String,
    /// Its header fields.
    pub fields: EntryFields,
    /// The records, in order, as `[key, value]`.
    pub records: Vec<(String, String)>,
}

/// The deflate engine.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "kebab-case")]
pub enum DeflateEngine {
    /// This project's parallel deflate: one member made of 1 MiB chunks
    /// joined by sync flushes; the same bytes for any thread count (fast).
    Parallel,
    /// Classic zlib, one stream (window 15, default strategy): the compilers'
    /// exact bytes.
    Zlib,
}

/// The deflate stream's parameters.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Deflate {
    /// The engine.
    pub engine: DeflateEngine,
    /// Compression level, 1–9.
    pub level: u32,
    /// zlib's memLevel, 1–9 (8 is zlib's default; [`DeflateEngine::Zlib`] only).
    pub mem_level: u32,
}

/// The gzip layer (spec §3.2, §11.2).
#[serde_with::skip_serializing_none]
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct GzipFraming {
    /// MTIME.
    pub mtime: u32,
    /// XFL (2 = best compression, 4 = fastest).
    pub xfl: u8,
    /// OS (3 = Unix, 255 = unknown).
    pub os: u8,
    /// FNAME, when present (without its NUL).
    pub fname: Option<String>,
    /// FEXTRA's bytes as hex (without XLEN), when present. Copied verbatim.
    pub fextra: Option<String>,
    /// The deflate stream.
    pub deflate: Deflate,
    /// Zero bytes after the member, counted in data_size and in the hash.
    pub padding: Padding,
}

/// Zero padding after the gzip member.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "kebab-case")]
pub enum Padding {
    /// None.
    None,
    /// Up to the next multiple of this many bytes (libarchive's 10240-byte
    /// blocks on the compressed output).
    ToMultiple(u64),
    /// Exactly this many zero bytes.
    Exact(u64),
}

impl Padding {
    /// How many zero bytes follow a member of `len` bytes.
    pub fn after(self, len: u64) -> u64 {
        match self {
            Padding::None => 0,
            Padding::ToMultiple(0) => 0,
            Padding::ToMultiple(m) => (m - len % m) % m,
            Padding::Exact(n) => n,
        }
    }
}

/// The named framings for new NEFFs (`--framing NAME`).
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize, schemars::JsonSchema,
)]
#[serde(rename_all = "kebab-case")]
pub enum FramingPreset {
    /// This project's default: deterministic GNU tar with directory entries,
    /// mode 0644/0755, uid/gid 0, owner `nobody`, mtime 0, padded to 10240;
    /// gzip MTIME 0, XFL 0, OS 3, parallel deflate; standard MD5 then `'0'` × 16.
    /// The framing of the runtime's own embedded fixture.
    #[default]
    Gnu,
    /// Exactly as neuronx-cc 2.21+ writes, except gzip MTIME 0: POSIX ustar in
    /// libarchive's encodings, mode 0664, uid/gid 1000, owner `nobody`, mtime 0,
    /// no directory entries, `neff.json` last, two end blocks; gzip XFL 4, OS 3,
    /// classic zlib level 1, zero-padded to a multiple of 10240; MD5
    /// word-reversed, then 16 zero bytes.
    NeuronxCc,
    /// As [`FramingPreset::NeuronxCc`] but as neuronx-cc 2.16 wrote: standard
    /// MD5 layout and `neff.json` in its sorted place.
    NeuronxCc216,
}

impl FramingPreset {
    /// Every preset.
    pub const ALL: [FramingPreset; 3] = [
        FramingPreset::Gnu,
        FramingPreset::NeuronxCc,
        FramingPreset::NeuronxCc216,
    ];

    /// The preset's name as the CLI spells it.
    pub fn name(self) -> &'static str {
        match self {
            FramingPreset::Gnu => "gnu",
            FramingPreset::NeuronxCc => "neuronx-cc",
            FramingPreset::NeuronxCc216 => "neuronx-cc-2.16",
        }
    }

    /// Parses [`FramingPreset::name`].
    pub fn parse(text: &str) -> Option<FramingPreset> {
        FramingPreset::ALL.into_iter().find(|p| p.name() == text)
    }

    /// True for the presets that imitate the compiler (header and `info.json`
    /// conventions follow neuronx-cc too).
    pub fn is_compiler_like(self) -> bool {
        self != FramingPreset::Gnu
    }

    /// The preset's framing.
    pub fn framing(self) -> Framing {
        match self {
            FramingPreset::Gnu => Framing {
                tar: TarFraming {
                    format: TarFormat::Gnu,
                    numbers: TarNumbers::Gnu,
                    directories: true,
                    order: MemberOrder::Sorted,
                    defaults: EntryFields {
                        mode: 0o644,
                        dir_mode: 0o755,
                        uid: 0,
                        gid: 0,
                        uname: "nobody".into(),
                        gname: "nobody".into(),
                        mtime: 0,
                    },
                    end_blocks: 2,
                    record_size: 10240,
                    entries: Vec::new(),
                },
                gzip: GzipFraming {
                    mtime: 0,
                    xfl: 0,
                    os: 3,
                    fname: None,
                    fextra: None,
                    deflate: Deflate {
                        engine: DeflateEngine::Parallel,
                        level: 1,
                        mem_level: 8,
                    },
                    padding: Padding::None,
                },
                hash: HashFraming {
                    layout: HashLayout::Standard,
                    tail: Blob(ASCII_ZERO_TAIL),
                },
            },
            FramingPreset::NeuronxCc | FramingPreset::NeuronxCc216 => {
                let last = self == FramingPreset::NeuronxCc;
                Framing {
                    tar: TarFraming {
                        format: TarFormat::Ustar,
                        numbers: TarNumbers::Libarchive,
                        directories: false,
                        order: if last {
                            MemberOrder::NeffJsonLast
                        } else {
                            MemberOrder::Sorted
                        },
                        defaults: EntryFields {
                            mode: 0o664,
                            dir_mode: 0o775,
                            uid: 1000,
                            gid: 1000,
                            uname: "nobody".into(),
                            gname: "nobody".into(),
                            mtime: 0,
                        },
                        end_blocks: 2,
                        record_size: 512,
                        entries: Vec::new(),
                    },
                    gzip: GzipFraming {
                        mtime: 0,
                        xfl: 4,
                        os: 3,
                        fname: None,
                        fextra: None,
                        deflate: Deflate {
                            engine: DeflateEngine::Zlib,
                            level: 1,
                            mem_level: 8,
                        },
                        padding: Padding::ToMultiple(10240),
                    },
                    hash: HashFraming {
                        layout: if last {
                            HashLayout::WordReversed
                        } else {
                            HashLayout::Standard
                        },
                        tail: Blob([0; 16]),
                    },
                }
            }
        }
    }
}

impl Default for Framing {
    fn default() -> Self {
        FramingPreset::Gnu.framing()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn word_reversal_matches_the_spec_example() {
        // spec §11.1: ncc2.18_waahm7_stream_256k_fd1k.neff
        let md5 = crate::hex::decode("450c45cdca09dd83f25a848d128f2490").unwrap();
        let stored = HashLayout::WordReversed.apply(&md5);
        assert_eq!(
            crate::hex::encode(&stored),
            "cd450c4583dd09ca8d845af290248f12"
        );
        assert_eq!(HashLayout::Standard.apply(&md5), md5);
        assert_eq!(HashLayout::WordReversed.apply(&stored), md5);
    }

    #[test]
    fn names_round_trip() {
        for l in HashLayout::ALL {
            assert_eq!(HashLayout::parse(l.name()), Some(l));
        }
        for p in FramingPreset::ALL {
            assert_eq!(FramingPreset::parse(p.name()), Some(p));
            let json = serde_json::to_string(&p.framing()).unwrap();
            let back: Framing = serde_json::from_str(&json).unwrap();
            assert_eq!(back, p.framing());
        }
        assert_eq!(HashLayoutPolicy::Any.layouts().len(), 2);
        assert_eq!(
            HashLayoutPolicy::WordReversed.layouts(),
            &[HashLayout::WordReversed]
        );
    }

    #[test]
    fn padding_rounds_up() {
        assert_eq!(Padding::ToMultiple(10240).after(8927), 1313);
        assert_eq!(Padding::ToMultiple(10240).after(10240), 0);
        assert_eq!(Padding::None.after(5), 0);
        assert_eq!(Padding::Exact(7).after(5), 7);
    }
}
