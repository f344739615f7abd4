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
    /// How the header UUID of a new payload is derived.
    #[serde(default, skip_serializing_if = "UuidRule::is_default")]
    pub uuid: UuidRule,
}

impl Framing {
    /// A copy without the per-entry list ([`TarFraming::entries`], one item
    /// per tar entry), for writers that stream that list apart.
    pub fn without_entries(&self) -> Framing {
        let t = &self.tar;
        Framing {
            tar: TarFraming {
                format: t.format,
                numbers: t.numbers,
                directories: t.directories,
                order: t.order,
                defaults: t.defaults.clone(),
                end_blocks: t.end_blocks,
                record_size: t.record_size,
                entries: Vec::new(),
                long_name: t.long_name.clone(),
                file_type: t.file_type,
                dir_slash: t.dir_slash,
                ustar_split: t.ustar_split,
            },
            gzip: self.gzip.clone(),
            hash: self.hash,
            uuid: self.uuid,
        }
    }
}

/// How a packager derives the header UUID from the payload.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize, schemars::JsonSchema,
)]
#[serde(rename_all = "kebab-case")]
pub enum UuidRule {
    /// The payload's SHA-256, its first 16 bytes with the v4 bits set (this
    /// project's rule; neuronx-cc ≤ 2.24 UUIDs are random and are recorded).
    #[default]
    Sha256,
    /// The first 16 bytes of the header's hash field, as stored (neuronx-cc
    /// 2.27: the UUID equals the payload's MD5).
    Hash,
}

impl UuidRule {
    /// True for [`UuidRule::Sha256`] (left out of JSON).
    pub fn is_default(&self) -> bool {
        *self == UuidRule::Sha256
    }
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

/// How a tar header's numeric fields are written: one [`NumberForm`] per
/// field, read from a stored header as data (any width, terminator or
/// base-256 use a writer chooses), with three named values. JSON spells a
/// named value by its name (`"gnu"`, `"python"`, `"libarchive"`) and any other
/// as an object of forms.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(from = "NumbersJson", into = "NumbersJson")]
pub struct TarNumbers {
    /// `mode`.
    pub mode: NumberForm,
    /// `uid`.
    pub uid: NumberForm,
    /// `gid`.
    pub gid: NumberForm,
    /// `size`.
    pub size: NumberForm,
    /// `mtime`.
    pub mtime: NumberForm,
    /// `chksum` (written last, over the block with this field as spaces).
    pub checksum: NumberForm,
    /// `devmajor`.
    pub devmajor: NumberForm,
    /// `devminor`.
    pub devminor: NumberForm,
}

impl TarNumbers {
    /// GNU tar: digits then NUL in every field, devmajor/devminor left empty,
    /// checksum `"%06o\0 "`.
    pub const GNU: TarNumbers = TarNumbers {
        mode: NumberForm::octal(7, Terminator::NUL),
        uid: NumberForm::octal(7, Terminator::NUL),
        gid: NumberForm::octal(7, Terminator::NUL),
        size: NumberForm::octal(11, Terminator::NUL),
        mtime: NumberForm::octal(11, Terminator::NUL),
        checksum: NumberForm::octal(6, Terminator::NUL_SPACE),
        devmajor: NumberForm::Empty,
        devminor: NumberForm::Empty,
    };

    /// Python's `tarfile`: as [`TarNumbers::GNU`] with devmajor/devminor written.
    pub const PYTHON: TarNumbers = TarNumbers {
        devmajor: NumberForm::octal(7, Terminator::NUL),
        devminor: NumberForm::octal(7, Terminator::NUL),
        ..TarNumbers::GNU
    };

    /// libarchive (neuronx-cc's C++ packager): 8-byte fields `"%06o \0"`,
    /// 12-byte fields `"%011o "`.
    pub const LIBARCHIVE: TarNumbers = TarNumbers {
        mode: NumberForm::octal(6, Terminator::SPACE_NUL),
        uid: NumberForm::octal(6, Terminator::SPACE_NUL),
        gid: NumberForm::octal(6, Terminator::SPACE_NUL),
        size: NumberForm::octal(11, Terminator::SPACE),
        mtime: NumberForm::octal(11, Terminator::SPACE),
        checksum: NumberForm::octal(6, Terminator::NUL_SPACE),
        devmajor: NumberForm::octal(6, Terminator::SPACE_NUL),
        devminor: NumberForm::octal(6, Terminator::SPACE_NUL),
    };

    /// The named values, with their names.
    pub const NAMED: [(&'static str, TarNumbers); 3] = [
        ("gnu", TarNumbers::GNU),
        ("python", TarNumbers::PYTHON),
        ("libarchive", TarNumbers::LIBARCHIVE),
    ];

    /// The name of this value, when it is a named one.
    pub fn name(&self) -> Option<&'static str> {
        TarNumbers::NAMED
            .iter()
            .find(|(_, n)| n == self)
            .map(|(name, _)| *name)
    }
}

/// [`TarNumbers`] as JSON: a name or the forms.
#[derive(Serialize, Deserialize, schemars::JsonSchema)]
#[serde(untagged)]
enum NumbersJson {
    /// `"gnu"`, `"python"` or `"libarchive"`.
    Named(NamedNumbers),
    /// One form per field.
    Forms(NumberForms),
}

/// The named [`TarNumbers`] values.
#[derive(Clone, Copy, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "kebab-case")]
enum NamedNumbers {
    /// [`TarNumbers::GNU`].
    Gnu,
    /// [`TarNumbers::PYTHON`].
    Python,
    /// [`TarNumbers::LIBARCHIVE`].
    Libarchive,
}

/// [`TarNumbers`] spelt out.
#[derive(Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
struct NumberForms {
    mode: NumberForm,
    uid: NumberForm,
    gid: NumberForm,
    size: NumberForm,
    mtime: NumberForm,
    checksum: NumberForm,
    devmajor: NumberForm,
    devminor: NumberForm,
}

impl From<NumbersJson> for TarNumbers {
    fn from(json: NumbersJson) -> TarNumbers {
        match json {
            NumbersJson::Named(NamedNumbers::Gnu) => TarNumbers::GNU,
            NumbersJson::Named(NamedNumbers::Python) => TarNumbers::PYTHON,
            NumbersJson::Named(NamedNumbers::Libarchive) => TarNumbers::LIBARCHIVE,
            NumbersJson::Forms(f) => TarNumbers {
                mode: f.mode,
                uid: f.uid,
                gid: f.gid,
                size: f.size,
                mtime: f.mtime,
                checksum: f.checksum,
                devmajor: f.devmajor,
                devminor: f.devminor,
            },
        }
    }
}

impl From<TarNumbers> for NumbersJson {
    fn from(n: TarNumbers) -> NumbersJson {
        match n.name() {
            Some("gnu") => NumbersJson::Named(NamedNumbers::Gnu),
            Some("python") => NumbersJson::Named(NamedNumbers::Python),
            Some(_) => NumbersJson::Named(NamedNumbers::Libarchive),
            None => NumbersJson::Forms(NumberForms {
                mode: n.mode,
                uid: n.uid,
                gid: n.gid,
                size: n.size,
                mtime: n.mtime,
                checksum: n.checksum,
                devmajor: n.devmajor,
                devminor: n.devminor,
            }),
        }
    }
}

impl schemars::JsonSchema for TarNumbers {
    fn schema_name() -> std::borrow::Cow<'static, str> {
        "TarNumbers".into()
    }

    fn json_schema(generator: &mut schemars::SchemaGenerator) -> schemars::Schema {
        NumbersJson::json_schema(generator)
    }
}

/// The bytes after a number's digits: up to 12, each NUL or space.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Terminator {
    len: u8,
    /// Bit `i` set: byte `i` is a space (else NUL).
    spaces: u16,
}

impl Terminator {
    /// No terminator: the digits fill the field.
    pub const NONE: Terminator = Terminator { len: 0, spaces: 0 };
    /// One NUL.
    pub const NUL: Terminator = Terminator { len: 1, spaces: 0 };
    /// One space.
    pub const SPACE: Terminator = Terminator { len: 1, spaces: 1 };
    /// A space, then a NUL (libarchive's 8-byte fields).
    pub const SPACE_NUL: Terminator = Terminator { len: 2, spaces: 1 };
    /// A NUL, then a space (every common checksum).
    pub const NUL_SPACE: Terminator = Terminator { len: 2, spaces: 2 };
    /// Two NULs (neuronx-cc 2.27's checksum).
    pub const NUL_NUL: Terminator = Terminator { len: 2, spaces: 0 };

    /// The terminator of these bytes, when each is a NUL or a space.
    pub fn of(bytes: &[u8]) -> Option<Terminator> {
        if bytes.len() > 12 {
            return None;
        }
        let mut spaces = 0u16;
        for (i, &b) in bytes.iter().enumerate() {
            match b {
                0 => {}
                b' ' => spaces |= 1 << i,
                _ => return None,
            }
        }
        Some(Terminator {
            len: bytes.len() as u8,
            spaces,
        })
    }

    /// Its length in bytes.
    pub fn len(self) -> usize {
        usize::from(self.len)
    }

    /// True when it has no bytes.
    pub fn is_empty(self) -> bool {
        self.len == 0
    }

    /// Its bytes.
    pub fn bytes(self) -> impl Iterator<Item = u8> {
        (0..self.len).map(move |i| if self.spaces & (1 << i) != 0 { b' ' } else { 0 })
    }
}

/// How one numeric tar header field is written. JSON: `"empty"`,
/// `"base256"`, or `+`-joined parts: leading `space`s, the number of octal
/// digits (zero-filled), then the terminator's `nul`s and `space`s, e.g.
/// `"7+nul"` (`"0000644\0"`), `"6+space+nul"` (`"000644 \0"`),
/// `"11+space"`, `"6+nul+nul"`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum NumberForm {
    /// Every byte NUL (read as 0; GNU tar's devmajor/devminor).
    Empty,
    /// GNU base-256: byte 0x80, then the value big-endian in the other bytes.
    Base256,
    /// Octal digits, zero-filled.
    Octal {
        /// Spaces before the digits.
        lead: u8,
        /// How many digits.
        digits: u8,
        /// The bytes after the digits, to the field's end.
        end: Terminator,
    },
}

impl NumberForm {
    /// `digits` zero-filled octal digits, then `end`.
    pub const fn octal(digits: u8, end: Terminator) -> NumberForm {
        NumberForm::Octal {
            lead: 0,
            digits,
            end,
        }
    }

    /// The form of a stored field holding `value` (as libarchive read it),
    /// when it is one this type can write back byte for byte.
    pub fn of(field: &[u8], value: u64) -> Option<NumberForm> {
        if field.iter().all(|&b| b == 0) {
            return (value == 0).then_some(NumberForm::Empty);
        }
        if field.first().is_some_and(|&b| b == 0x80) {
            let mut be = 0u128;
            for &b in &field[1..] {
                be = (be << 8) | u128::from(b);
            }
            return (be == u128::from(value)).then_some(NumberForm::Base256);
        }
        let lead = field.iter().take_while(|&&b| b == b' ').count();
        let digits = field[lead..]
            .iter()
            .take_while(|b| (b'0'..=b'7').contains(b))
            .count();
        let form = NumberForm::Octal {
            lead: u8::try_from(lead).ok()?,
            digits: u8::try_from(digits).ok()?,
            end: Terminator::of(&field[lead + digits..])?,
        };
        // Tar number fields are at most 12 bytes: no allocation per field.
        let mut buf = [0u8; 12];
        let again = buf.get_mut(..field.len())?;
        (form.write(again, value) && again == field).then_some(form)
    }

    /// Writes `value` into `field` in this form; false when the form does
    /// not fill the field exactly or the value does not fit it.
    pub fn write(self, field: &mut [u8], value: u64) -> bool {
        match self {
            NumberForm::Empty => {
                field.fill(0);
                value == 0
            }
            NumberForm::Base256 => {
                let Some((first, rest)) = field.split_first_mut() else {
                    return false;
                };
                *first = 0x80;
                let mut v = u128::from(value);
                for b in rest.iter_mut().rev() {
                    *b = (v & 0xff) as u8;
                    v >>= 8;
                }
                v == 0
            }
            NumberForm::Octal { lead, digits, end } => {
                let (lead, digits) = (usize::from(lead), usize::from(digits));
                if lead + digits + end.len() != field.len() {
                    return false;
                }
                field[..lead].fill(b' ');
                let mut v = value;
                for d in field[lead..lead + digits].iter_mut().rev() {
                    *d = b'0' + (v & 7) as u8;
                    v >>= 3;
                }
                for (slot, b) in field[lead + digits..].iter_mut().zip(end.bytes()) {
                    *slot = b;
                }
                v == 0
            }
        }
    }
}

impl std::fmt::Display for NumberForm {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match *self {
            NumberForm::Empty => f.write_str("empty"),
            NumberForm::Base256 => f.write_str("base256"),
            NumberForm::Octal { lead, digits, end } => {
                let mut parts: Vec<String> = vec!["space".into(); usize::from(lead)];
                parts.push(digits.to_string());
                parts.extend(
                    end.bytes()
                        .map(|b| if b == 0 { "nul" } else { "space" }.into()),
                );
                f.write_str(&parts.join("+"))
            }
        }
    }
}

impl std::str::FromStr for NumberForm {
    type Err = String;

    fn from_str(text: &str) -> Result<NumberForm, String> {
        match text {
            "empty" => return Ok(NumberForm::Empty),
            "base256" => return Ok(NumberForm::Base256),
            _ => {}
        }
        let bad =
            || format!("{text:?} is not a number form (\"empty\", \"base256\" or e.g. \"7+nul\")");
        let parts: Vec<&str> = text.split('+').collect();
        let at = parts
            .iter()
            .position(|p| p.bytes().all(|b| b.is_ascii_digit()) && !p.is_empty())
            .ok_or_else(bad)?;
        let digits: u8 = parts[at].parse().map_err(|_| bad())?;
        if parts[..at].iter().any(|&p| p != "space") || at > 12 || digits > 12 {
            return Err(bad());
        }
        let mut end = Vec::new();
        for part in &parts[at + 1..] {
            end.push(match *part {
                "nul" => 0,
                "space" => b' ',
                _ => return Err(bad()),
            });
        }
        Ok(NumberForm::Octal {
            lead: at as u8,
            digits,
            end: Terminator::of(&end).ok_or_else(bad)?,
        })
    }
}

impl Serialize for NumberForm {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}

impl<'de> Deserialize<'de> for NumberForm {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<NumberForm, D::Error> {
        let text = String::deserialize(d)?;
        text.parse().map_err(serde::de::Error::custom)
    }
}

impl schemars::JsonSchema for NumberForm {
    fn schema_name() -> std::borrow::Cow<'static, str> {
        "NumberForm".into()
    }

    fn json_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
        schemars::json_schema!({
            "type": "string",
            "description": "How one numeric tar field is written: \"empty\" (all NUL), \"base256\", or leading `space`s, the octal digit count and the terminator's `nul`s and `space`s joined by `+` (\"7+nul\", \"6+space+nul\", \"11+space\").",
            "pattern": "^(empty|base256|(space\\+)*[0-9]+(\\+(nul|space))*)$"
        })
    }
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
    /// The GNU long-name (`L`) header before a name over 100 bytes: its own
    /// name and fields (Python's `tarfile` writes zeros and no owner); absent,
    /// it takes the entry's fields and the name `././@LongLink`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub long_name: Option<LongNameFraming>,
    /// The type flag of regular files, unless an entry says otherwise.
    #[serde(default, skip_serializing_if = "FileType::is_default")]
    pub file_type: FileType,
    /// Whether directory entries' names end in `/` (every common writer's).
    #[serde(default = "yes", skip_serializing_if = "is_yes")]
    pub dir_slash: bool,
    /// Where a POSIX ustar name over 100 bytes is split into prefix and name.
    #[serde(default, skip_serializing_if = "UstarSplit::is_default")]
    pub ustar_split: UstarSplit,
}

fn yes() -> bool {
    true
}

fn is_yes(value: &bool) -> bool {
    *value
}

/// The type flag a tar header gives a regular file.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, Hash, Default, Serialize, Deserialize, schemars::JsonSchema,
)]
#[serde(rename_all = "kebab-case")]
pub enum FileType {
    /// `'0'` (POSIX, GNU, Python, libarchive).
    #[default]
    Zero,
    /// NUL, the old (pre-POSIX) flag.
    Nul,
}

impl FileType {
    /// The flag's byte.
    pub fn flag(self) -> u8 {
        match self {
            FileType::Zero => b'0',
            FileType::Nul => 0,
        }
    }

    /// The type of the flag `byte`, when it is a regular file's.
    pub fn of(byte: u8) -> Option<FileType> {
        match byte {
            b'0' => Some(FileType::Zero),
            0 => Some(FileType::Nul),
            _ => None,
        }
    }

    /// True for [`FileType::Zero`] (left out of JSON).
    pub fn is_default(&self) -> bool {
        *self == FileType::Zero
    }
}

/// Where a ustar name over 100 bytes is split: at a `/`, the part before it
/// in the 155-byte `prefix`, the part after in the 100-byte `name`.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, Hash, Default, Serialize, Deserialize, schemars::JsonSchema,
)]
#[serde(rename_all = "kebab-case")]
pub enum UstarSplit {
    /// At the first `/` that leaves at most 100 bytes after it: the longest
    /// name (libarchive, Python's `tarfile`).
    #[default]
    LongestName,
    /// At the last `/` that leaves at most 155 bytes before it: the longest
    /// prefix.
    LongestPrefix,
}

impl UstarSplit {
    /// Both rules.
    pub const ALL: [UstarSplit; 2] = [UstarSplit::LongestName, UstarSplit::LongestPrefix];

    /// True for [`UstarSplit::LongestName`] (left out of JSON).
    pub fn is_default(&self) -> bool {
        *self == UstarSplit::LongestName
    }

    /// `name` split into (prefix, name) by this rule; `None` when no `/`
    /// gives parts that fit. A name of at most 100 bytes is not split.
    pub fn split(self, name: &[u8]) -> Option<(&[u8], &[u8])> {
        if name.len() <= 100 {
            return Some((&[], name));
        }
        let fits = |i: usize| i > 0 && i <= 155 && name.len() - i - 1 <= 100;
        let mut slashes = (0..name.len()).filter(|&i| name[i] == b'/');
        let at = match self {
            UstarSplit::LongestName => slashes.find(|&i| fits(i)),
            UstarSplit::LongestPrefix => slashes.rev().find(|&i| fits(i)),
        }?;
        Some((&name[..at], &name[at + 1..]))
    }
}

/// How a GNU long-name (`L`) header is written.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct LongNameFraming {
    /// The header's name (`././@LongLink`).
    pub name: String,
    /// Its mode, owner and time fields (`dir_mode` unused).
    pub fields: EntryFields,
    /// How its numbers are written, when not as [`TarFraming::numbers`] says.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub numbers: Option<TarNumbers>,
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
    pub pax: Option<Box<PaxFraming>>,
    /// How this entry's header numbers are written, when not as
    /// [`TarFraming::numbers`] says.
    pub numbers: Option<TarNumbers>,
    /// This regular file's type flag, when not [`TarFraming::file_type`].
    pub file_type: Option<FileType>,
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
    /// How its numbers are written, when not as [`TarFraming::numbers`] says.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub numbers: Option<TarNumbers>,
}

/// The deflate engine.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "kebab-case")]
pub enum DeflateEngine {
    /// This project's parallel deflate: one member made of chunks (256 KiB
    /// at level 1, 1 MiB above) deflated by zlib-rs and joined by sync
    /// flushes; the same bytes for any thread count. Level 1 runs as zlib-rs
    /// level 2.
    Parallel,
    /// This project's level-1 engine (the default): one member made of 256
    /// KiB chunks, each deflated as 32 KiB pieces by libdeflate 1.26's level
    /// 1 and joined by empty stored blocks; the same bytes for any thread
    /// count, about twice as fast as the `parallel` engine. Level 1 only:
    /// setting another level switches to `parallel`.
    ParallelLibdeflate,
    /// Classic zlib, one stream (window 15, default strategy): the compilers'
    /// exact bytes.
    Zlib,
}

impl DeflateEngine {
    /// Every engine.
    pub const ALL: [DeflateEngine; 3] = [
        DeflateEngine::ParallelLibdeflate,
        DeflateEngine::Parallel,
        DeflateEngine::Zlib,
    ];

    /// The engine's name as the CLI and JSON spell it.
    pub fn name(self) -> &'static str {
        match self {
            DeflateEngine::Parallel => "parallel",
            DeflateEngine::ParallelLibdeflate => "parallel-libdeflate",
            DeflateEngine::Zlib => "zlib",
        }
    }

    /// Parses [`DeflateEngine::name`].
    pub fn parse(name: &str) -> Option<DeflateEngine> {
        DeflateEngine::ALL.into_iter().find(|e| e.name() == name)
    }
}

/// The deflate stream's parameters.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Deflate {
    /// The engine.
    pub engine: DeflateEngine,
    /// Compression level, 1–9.
    pub level: u32,
    /// zlib's memLevel, 1–9 (8 is zlib's default; [`DeflateEngine::Zlib`] only).
    pub mem_level: u32,
}

impl Deflate {
    /// This stream's parameters at `level`: a
    /// [`DeflateEngine::ParallelLibdeflate`] stream becomes a
    /// [`DeflateEngine::Parallel`] one at any level but 1.
    pub fn with_level(self, level: u32) -> Deflate {
        let engine = match self.engine {
            DeflateEngine::ParallelLibdeflate if level != 1 => DeflateEngine::Parallel,
            engine => engine,
        };
        Deflate {
            engine,
            level,
            ..self
        }
    }
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
    /// gzip MTIME 0, XFL 0, OS 3, the parallel-libdeflate engine at level 1;
    /// standard MD5 then `'0'` × 16.
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
    /// As neuronx-cc 2.27 writes (its new packager): POSIX ustar with GNU
    /// tar's numbers but checksums ending in two NULs and devmajor/devminor
    /// empty, mode 0644, uid/gid 0, no owner names, mtime 0, no directory
    /// entries, members sorted (the compiler lists them in its own write
    /// order), two end blocks, no record padding; gzip MTIME 0, XFL 0, OS 3,
    /// classic zlib level 1, no padding (`data_size` is the gzip length);
    /// standard MD5, 16 zero bytes, and the UUID equal to the MD5.
    NeuronxCc227,
}

impl FramingPreset {
    /// Every preset.
    pub const ALL: [FramingPreset; 4] = [
        FramingPreset::Gnu,
        FramingPreset::NeuronxCc,
        FramingPreset::NeuronxCc216,
        FramingPreset::NeuronxCc227,
    ];

    /// The preset's name as the CLI spells it.
    pub fn name(self) -> &'static str {
        match self {
            FramingPreset::Gnu => "gnu",
            FramingPreset::NeuronxCc => "neuronx-cc",
            FramingPreset::NeuronxCc216 => "neuronx-cc-2.16",
            FramingPreset::NeuronxCc227 => "neuronx-cc-2.27",
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
                    numbers: TarNumbers::GNU,
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
                    long_name: None,
                    file_type: FileType::Zero,
                    dir_slash: true,
                    ustar_split: UstarSplit::LongestName,
                },
                gzip: GzipFraming {
                    mtime: 0,
                    xfl: 0,
                    os: 3,
                    fname: None,
                    fextra: None,
                    deflate: Deflate {
                        engine: DeflateEngine::ParallelLibdeflate,
                        level: 1,
                        mem_level: 8,
                    },
                    padding: Padding::None,
                },
                hash: HashFraming {
                    layout: HashLayout::Standard,
                    tail: Blob(ASCII_ZERO_TAIL),
                },
                uuid: UuidRule::Sha256,
            },
            // GNU tar's numbers and gzip header, the rest as 2.27 writes.
            FramingPreset::NeuronxCc227 => {
                let gnu = FramingPreset::Gnu.framing();
                Framing {
                    tar: TarFraming {
                        format: TarFormat::Ustar,
                        numbers: TarNumbers {
                            checksum: NumberForm::octal(6, Terminator::NUL_NUL),
                            ..TarNumbers::GNU
                        },
                        directories: false,
                        defaults: EntryFields {
                            uname: String::new(),
                            gname: String::new(),
                            ..gnu.tar.defaults
                        },
                        record_size: 512,
                        ..gnu.tar
                    },
                    gzip: GzipFraming {
                        deflate: Deflate {
                            engine: DeflateEngine::Zlib,
                            level: 1,
                            mem_level: 8,
                        },
                        ..gnu.gzip
                    },
                    hash: HashFraming {
                        layout: HashLayout::Standard,
                        tail: Blob([0; 16]),
                    },
                    uuid: UuidRule::Hash,
                }
            }
            FramingPreset::NeuronxCc | FramingPreset::NeuronxCc216 => {
                let last = self == FramingPreset::NeuronxCc;
                Framing {
                    tar: TarFraming {
                        format: TarFormat::Ustar,
                        numbers: TarNumbers::LIBARCHIVE,
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
                        long_name: None,
                        file_type: FileType::Zero,
                        dir_slash: true,
                        ustar_split: UstarSplit::LongestName,
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
                    uuid: UuidRule::Sha256,
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
        let md5 = hex::decode("450c45cdca09dd83f25a848d128f2490").unwrap();
        let stored = HashLayout::WordReversed.apply(&md5);
        assert_eq!(hex::encode(&stored), "cd450c4583dd09ca8d845af290248f12");
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
    fn ustar_splits_take_the_longest_name_or_the_longest_prefix() {
        let name = format!(
            "{}/{}/{}/file",
            "a".repeat(40),
            "b".repeat(40),
            "c".repeat(40)
        );
        let (p, n) = UstarSplit::LongestName.split(name.as_bytes()).unwrap();
        assert_eq!((p.len(), n.len()), (40, 40 + 1 + 40 + 1 + 4));
        let (p, n) = UstarSplit::LongestPrefix.split(name.as_bytes()).unwrap();
        assert_eq!((p.len(), n.len()), (40 + 1 + 40 + 1 + 40, 4));
        assert_eq!(
            UstarSplit::LongestName.split(b"short"),
            Some((&b""[..], &b"short"[..]))
        );
        assert_eq!(
            UstarSplit::LongestName.split("x".repeat(101).as_bytes()),
            None
        );
    }

    #[test]
    fn number_forms_read_back_what_they_write() {
        for (field, value, form) in [
            (&b"0000644\0"[..], 0o644, "7+nul"),
            (b"000644 \0", 0o644, "6+space+nul"),
            (b"007714\0\0", 0o7714, "6+nul+nul"),
            (b"00000000152 ", 0o152, "11+space"),
            (b"  644 \0\0", 0o644, "space+space+3+space+nul+nul"),
            (b"\0\0\0\0\0\0\0\0", 0, "empty"),
            (b"\x80\0\0\0\xb2\xd0\x5e\0", 3_000_000_000, "base256"),
        ] {
            let found = NumberForm::of(field, value).unwrap();
            assert_eq!(found.to_string(), form);
            assert_eq!(form.parse::<NumberForm>().unwrap(), found);
            let mut again = vec![0u8; field.len()];
            assert!(found.write(&mut again, value));
            assert_eq!(again, field, "{form}");
        }
        // A field the value does not read back from is no form.
        assert_eq!(NumberForm::of(b"0000645\0", 0o644), None);
        assert_eq!(NumberForm::of(b"00006x4\0", 0o6), None);
        assert!("7+tab".parse::<NumberForm>().is_err());
    }

    #[test]
    fn padding_rounds_up() {
        assert_eq!(Padding::ToMultiple(10240).after(8927), 1313);
        assert_eq!(Padding::ToMultiple(10240).after(10240), 0);
        assert_eq!(Padding::None.after(5), 0);
        assert_eq!(Padding::Exact(7).after(5), 7);
    }
}
